//! `eth_call` executed locally with revm over proven state only: every account and storage
//! slot the call reads comes from an EIP-1186 proof checked against the verified state root,
//! every contract's code from any source as long as it hashes to the proven code hash. A read
//! of state not yet proven stops the run; the verifier fetches its proof and runs again.
//!
//! The caller and the block's fee recipient are loaded by the EVM's transaction bookkeeping
//! before any code runs; they stay unproven ("provisional", empty) unless an opcode reads
//! their state (BALANCE, EXTCODE*, a CALL to them, a SELFDESTRUCT paying them) or a proven
//! account's EIP-7702 delegation points to them, which an inspector and the state watch for.
//! Fees and the nonce check are off (as in `eth_call`); a call with a value proves its caller,
//! whose balance must cover the value (geth's `buyGas` check, the fee being zero).
//! `BLOCKHASH` is not proven, nor `BLOBBASEFEE` without the chain's blob schedule: either makes
//! the call unprovable.
//!
//! Shared with the proof verifier (`sszgate-proof`'s `call`): the call object
//! ([`CallRequest`]: every field used as geth uses it or refused by name), its gas
//! ([`call_gas`]: geth's 50M RPC cap, no EIP-7825 cap, as geth's eth_call), the transaction
//! ([`tx_env`]), the EVM configuration ([`eth_call_cfg`]) and the watched reads
//! ([`account_read`], [`delegate_of`]).
//!
//! Not here: fetching proofs and code (`verifier`); the fork table (`blobs`); geth's gas
//! estimator (`estimate`).

mod estimate;

pub use estimate::estimate_cap;
pub(crate) use estimate::{Runs, estimate, plain_transfer};

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use alloy_consensus::Header;
use alloy_eips::{eip2930::AccessList, eip7840::BlobParams};
use alloy_primitives::{Address, B256, Bytes, TxKind, U256};
use revm::{
    Context, Database, InspectEvm, Inspector, MainBuilder, MainContext,
    bytecode::Bytecode,
    context::{
        BlockEnv, TxEnv,
        result::{EVMError, ExecutionResult, InvalidTransaction},
    },
    context_interface::block::BlobExcessGasAndPrice,
    database_interface::DBErrorMarker,
    interpreter::{Interpreter, interpreter::EthInterpreter, interpreter_types::Jumps},
    primitives::hardfork::SpecId,
    state::AccountInfo,
};
use serde_json::Value;

use crate::{blobs::ForkSchedule, error::RpcError};

/// The update fraction filled in when the blob schedule is not known (Cancun's).
const UNKNOWN_SCHEDULE_FRACTION: u64 = 3_338_477;

/// The gas of a call that names none, and the most a call may use: geth's default RPC gas cap
/// (`--rpc.gascap`). Like geth's eth_call, the EIP-7825 per-transaction cap does not apply.
pub const RPC_GAS_CAP: u64 = 50_000_000;

/// The EIP-7825 transaction gas cap from Osaka: the most eth_estimateGas answers there, as
/// geth's estimator caps its upper bound.
pub const OSAKA_TX_GAS_CAP: u64 = 1 << 24;

/// Call-object fields accepted with a zero value only: a non-zero fee would be charged to
/// the caller, whose balance is not proven (geth charges it).
const ZERO_ONLY: [&str; 4] = [
    "gasPrice",
    "maxFeePerGas",
    "maxPriorityFeePerGas",
    "maxFeePerBlobGas",
];

/// Call-object fields refused with their name: what they change is not proven here.
const REFUSED: [(&str, &str); 5] = [
    (
        "authorizationList",
        "EIP-7702 authorizations in a call are not verified",
    ),
    (
        "blobVersionedHashes",
        "blob transactions in a call are not verified",
    ),
    ("blobs", "blob sidecars in a call are not verified"),
    ("commitments", "blob sidecars in a call are not verified"),
    ("proofs", "blob sidecars in a call are not verified"),
];

/// Fields a call object may have (geth's `TransactionArgs`, and `type`).
const KNOWN: [&str; 10] = [
    "from",
    "to",
    "gas",
    "value",
    "nonce",
    "data",
    "input",
    "accessList",
    "chainId",
    "type",
];

/// An `eth_call` request: a call (contract creation is not supported).
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// `from`, zero when absent.
    pub from: Address,
    /// `to`.
    pub to: Address,
    /// `data` or `input`.
    pub data: Bytes,
    /// `value`.
    pub value: U256,
    /// `gas`, [`RPC_GAS_CAP`] when absent.
    pub gas: Option<u64>,
    /// `accessList` (warms its accounts and slots, as in a transaction).
    pub access_list: AccessList,
}

impl CallRequest {
    /// Reads the call object of `eth_call` on chain `chain_id`: every field used as geth uses
    /// it, or refused with its name.
    pub fn parse(v: Option<&Value>, chain_id: u64) -> Result<CallRequest, RpcError> {
        let bad = |what: &str| RpcError::InvalidParams(format!("param 0: {what}"));
        let o = v
            .and_then(Value::as_object)
            .ok_or_else(|| bad("not a call object"))?;
        check_fields(o, chain_id)?;
        let field = |k: &str| o.get(k).filter(|v| !v.is_null()).cloned();
        fn read<T: serde::de::DeserializeOwned + Default>(
            v: Option<Value>,
            k: &str,
        ) -> Result<T, RpcError> {
            v.map_or(Ok(T::default()), |v| {
                serde_json::from_value(v)
                    .map_err(|e| RpcError::InvalidParams(format!("param 0: {k}: {e}")))
            })
        }
        let to: Address = read(
            Some(field("to").ok_or_else(|| bad("no `to` (contract creation is not verified)"))?),
            "to",
        )?;
        let (input, data): (Bytes, Bytes) =
            (read(field("input"), "input")?, read(field("data"), "data")?);
        if field("input").is_some() && field("data").is_some() && input != data {
            return Err(bad("both input and data set and not equal"));
        }
        let gas = field("gas")
            .map(|g| read::<alloy_primitives::U64>(Some(g), "gas").map(|g| g.to::<u64>()))
            .transpose()?;
        Ok(CallRequest {
            from: read(field("from"), "from")?,
            to,
            data: if field("input").is_some() {
                input
            } else {
                data
            },
            value: read(field("value"), "value")?,
            gas,
            access_list: read(field("accessList"), "accessList")?,
        })
    }

    /// The call object as JSON text, `to` and `data` first (the order clients send).
    pub(crate) fn to_json_text(&self) -> String {
        let mut text = format!("{{\"to\":\"{}\",\"data\":\"{}\"", self.to, self.data);
        if !self.from.is_zero() {
            text += &format!(",\"from\":\"{}\"", self.from);
        }
        if !self.value.is_zero() {
            text += &format!(",\"value\":\"{:#x}\"", self.value);
        }
        if let Some(gas) = self.gas {
            text += &format!(",\"gas\":\"{gas:#x}\"");
        }
        text + "}"
    }
}

/// Refuses call-object fields this verifier cannot use as geth does, naming them.
fn check_fields(o: &serde_json::Map<String, Value>, chain_id: u64) -> Result<(), RpcError> {
    let bad = |k: &str, why: String| RpcError::InvalidParams(format!("param 0: {k}: {why}"));
    let quantity = |k: &str| {
        o.get(k)
            .filter(|v| !v.is_null())
            .map(|v| serde_json::from_value::<U256>(v.clone()).map_err(|e| bad(k, e.to_string())))
    };
    for (k, v) in o {
        if let Some((_, why)) = REFUSED.iter().find(|(name, _)| name == k) {
            if !v.is_null() {
                return Err(bad(k, (*why).to_string()));
            }
        } else if !KNOWN.contains(&k.as_str()) && !ZERO_ONLY.contains(&k.as_str()) {
            return Err(bad(k, "not a call field".into()));
        }
    }
    for k in ZERO_ONLY {
        if quantity(k).transpose()?.is_some_and(|n| !n.is_zero()) {
            return Err(bad(
                k,
                "a non-zero fee needs the caller's balance, which is not proven".into(),
            ));
        }
    }
    if o.get("gasPrice").is_some_and(|v| !v.is_null())
        && ["maxFeePerGas", "maxPriorityFeePerGas"]
            .iter()
            .any(|k| o.get(*k).is_some_and(|v| !v.is_null()))
    {
        return Err(bad(
            "gasPrice",
            "both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified".into(),
        ));
    }
    if let Some(id) = quantity("chainId").transpose()?
        && id != U256::from(chain_id)
    {
        let why = format!("{id} is not this chain's id {chain_id}");
        return Err(bad("chainId", why));
    }
    if let Some(ty) = quantity("type").transpose()?
        && ty > U256::from(2)
    {
        let why = format!("{ty}: only calls of type 0, 1 or 2 are verified");
        return Err(bad("type", why));
    }
    quantity("nonce").transpose()?;
    Ok(())
}

/// A proven account: its fields, code, and the storage slots proven so far.
#[derive(Debug, Clone)]
pub(crate) struct ProvenAccount {
    /// Balance, nonce, code hash and code.
    pub info: AccountInfo,
    /// Proven slots (absent slots proven as zero are present with zero).
    pub storage: HashMap<B256, U256>,
}

/// The state a call may read: proven accounts, and what a run found missing.
#[derive(Debug, Default)]
pub(crate) struct ProvenState {
    /// Accounts proven against the state root.
    pub accounts: HashMap<Address, ProvenAccount>,
    /// Accounts loaded empty unless an opcode reads them (caller, fee recipient).
    pub provisional: HashSet<Address>,
}

/// What one run needs before it can finish.
#[derive(Debug, Default)]
pub(crate) struct Needs {
    /// Accounts to prove, with the slots each needs.
    pub slots: BTreeMap<Address, BTreeSet<B256>>,
    /// Provisional accounts whose state an opcode read.
    pub touched: BTreeSet<Address>,
    /// Why the call cannot be proven at all.
    pub unprovable: Option<String>,
}

impl Needs {
    fn is_empty(&self) -> bool {
        self.slots.is_empty() && self.touched.is_empty() && self.unprovable.is_none()
    }
}

/// A read of state not (yet) proven; stops the run.
#[derive(Debug, thiserror::Error)]
#[error("state not proven")]
pub(crate) struct NotProven;

impl DBErrorMarker for NotProven {}

struct ProvenDb<'a> {
    state: &'a ProvenState,
    needs: &'a mut Needs,
}

impl Database for ProvenDb<'_> {
    type Error = NotProven;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, NotProven> {
        if let Some(a) = self.state.accounts.get(&address) {
            // A delegation to a provisional account runs that account's code: prove it.
            if let Some(delegate) = delegate_of(&a.info)
                && self.state.provisional.contains(&delegate)
            {
                self.needs.touched.insert(delegate);
            }
            return Ok(Some(a.info.clone()));
        }
        if self.state.provisional.contains(&address) {
            return Ok(None);
        }
        self.needs.slots.entry(address).or_default();
        Err(NotProven)
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, NotProven> {
        self.state
            .accounts
            .values()
            .find(|a| a.info.code_hash == code_hash)
            .and_then(|a| a.info.code.clone())
            .ok_or(NotProven)
    }

    fn storage(&mut self, address: Address, index: U256) -> Result<U256, NotProven> {
        let key = B256::from(index);
        if let Some(v) = self
            .state
            .accounts
            .get(&address)
            .and_then(|a| a.storage.get(&key))
        {
            return Ok(*v);
        }
        if self.state.provisional.contains(&address) {
            self.needs.touched.insert(address);
            return Ok(U256::ZERO);
        }
        self.needs.slots.entry(address).or_default().insert(key);
        Err(NotProven)
    }

    fn block_hash(&mut self, number: u64) -> Result<B256, NotProven> {
        self.needs.unprovable = Some(format!("BLOCKHASH({number}) is not proven"));
        Err(NotProven)
    }
}

/// Watches opcodes that read another account's state, for provisional accounts.
struct Guard<'a> {
    provisional: &'a HashSet<Address>,
    touched: BTreeSet<Address>,
    unprovable: Option<String>,
    blob_fee_known: bool,
}

impl<CTX> Inspector<CTX, EthInterpreter> for Guard<'_> {
    fn step(&mut self, interp: &mut Interpreter<EthInterpreter>, _context: &mut CTX) {
        if interp.bytecode.opcode() == 0x4a && !self.blob_fee_known {
            self.unprovable = Some("BLOBBASEFEE: the chain's blob schedule is not known".into());
            return;
        }
        if let Some(address) = account_read(interp)
            && self.provisional.contains(&address)
        {
            self.touched.insert(address);
        }
    }
}

/// The EVM revision of a block: the chain's fork table by its timestamp, else (a chain
/// without a table, or before its first entry) the header's fork fields.
pub(crate) fn spec_of(header: &Header, forks: &ForkSchedule) -> SpecId {
    if let Some(spec) = forks.revision_at(header.timestamp) {
        return spec;
    }
    if header.requests_hash.is_some() {
        SpecId::PRAGUE
    } else if header.parent_beacon_block_root.is_some() {
        SpecId::CANCUN
    } else if header.withdrawals_root.is_some() {
        SpecId::SHANGHAI
    } else {
        SpecId::MERGE
    }
}

/// The outcome of one run: finished, or what it needs first.
pub(crate) enum Run {
    /// Finished over proven state only.
    Done(ExecutionResult),
    /// Stopped or tainted: prove these and run again.
    Needs(Needs),
    /// Not a valid transaction (e.g. gas below the intrinsic cost).
    Invalid(Invalid),
}

/// Why a call is not a valid transaction; it did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    /// The reason, as the error says it.
    pub why: String,
    /// The gas limit is the reason (below the intrinsic cost, above a cap): geth's estimator
    /// counts such a run as a failure to raise or lower the gas from, not as an error.
    pub for_gas: bool,
}

impl Invalid {
    /// The EVM's refusal of a transaction.
    fn of(e: &InvalidTransaction) -> Invalid {
        let for_gas = matches!(
            e,
            InvalidTransaction::CallGasCostMoreThanGasLimit { .. }
                | InvalidTransaction::TxGasLimitGreaterThanCap { .. }
        );
        Invalid {
            why: e.to_string(),
            for_gas,
        }
    }
}

/// One run of a call at a gas limit over proven state: its result, or why it did not run.
pub(crate) type Attempt = Result<ExecutionResult, Invalid>;

/// The output of a run that succeeded; the error answered for one that reverted or halted.
pub(crate) fn call_output(result: ExecutionResult) -> Result<Bytes, RpcError> {
    match result {
        ExecutionResult::Success { output, .. } => Ok(output.into_data()),
        ExecutionResult::Revert { output, .. } => Err(RpcError::Reverted(output)),
        ExecutionResult::Halt { reason, .. } => Err(RpcError::Halted(format!("{reason:?}"))),
    }
}

/// geth's balance check before a call runs (`buyGas`, the fee being zero): the caller's
/// balance covers the value. A call with a value thus reads its caller, which is proven
/// first; revm's own check is off with the fee charge, and a provisional (empty) caller
/// would halt the transfer with `OutOfFunds`.
fn check_value(state: &ProvenState, call: &CallRequest) -> Option<Run> {
    if call.value.is_zero() {
        return None;
    }
    if state.provisional.contains(&call.from) {
        let mut needs = Needs::default();
        needs.touched.insert(call.from);
        return Some(Run::Needs(needs));
    }
    // An account neither proven nor provisional is asked for by the EVM's first read.
    let balance = state.accounts.get(&call.from)?.info.balance;
    (balance < call.value).then(|| {
        Run::Invalid(Invalid {
            why: format!(
                "insufficient funds for gas * price + value: address {} have {balance} want {}",
                call.from, call.value
            ),
            for_gas: false,
        })
    })
}

/// The block environment of `header` (the blob price from `blob_params` when known).
fn block_env(header: &Header, blob_params: Option<&BlobParams>) -> BlockEnv {
    BlockEnv {
        number: U256::from(header.number),
        beneficiary: header.beneficiary,
        timestamp: U256::from(header.timestamp),
        gas_limit: header.gas_limit,
        basefee: header.base_fee_per_gas.unwrap_or_default(),
        difficulty: header.difficulty,
        prevrandao: Some(header.mix_hash),
        // revm needs a blob price from Cancun on; without the chain's schedule the value is a
        // placeholder that no opcode reads (the guard refuses BLOBBASEFEE).
        blob_excess_gas_and_price: header.excess_blob_gas.map(|e| {
            let fraction =
                blob_params.map_or(UNKNOWN_SCHEDULE_FRACTION, |p| p.update_fraction as u64);
            BlobExcessGasAndPrice::new(e, fraction)
        }),
        ..Default::default()
    }
}

/// The gas a call runs with: its `gas`, else [`RPC_GAS_CAP`], and at most that cap (geth's
/// `CallDefaults`).
pub fn call_gas(call: &CallRequest) -> u64 {
    call.gas.unwrap_or(RPC_GAS_CAP).min(RPC_GAS_CAP)
}

/// The transaction of `call` on chain `chain_id`: no gas price, [`call_gas`] gas, its access
/// list (type 1 when it has one).
pub fn tx_env(call: &CallRequest, chain_id: u64) -> TxEnv {
    let with_list = !call.access_list.is_empty();
    TxEnv {
        tx_type: u8::from(with_list),
        caller: call.from,
        gas_limit: call_gas(call),
        gas_price: 0,
        kind: TxKind::Call(call.to),
        value: call.value,
        data: call.data.clone(),
        nonce: 0,
        chain_id: Some(chain_id),
        access_list: call.access_list.clone(),
        ..Default::default()
    }
}

/// The address an opcode about to run reads another account's state of, if any: BALANCE,
/// EXTCODESIZE, EXTCODECOPY, EXTCODEHASH and SELFDESTRUCT (its beneficiary) on top of the
/// stack; CALL, CALLCODE, DELEGATECALL, STATICCALL under the gas. Both verifiers' guards
/// watch these.
pub fn account_read(interp: &Interpreter<EthInterpreter>) -> Option<Address> {
    let depth = match interp.bytecode.opcode() {
        0x31 | 0x3b | 0x3c | 0x3f | 0xff => 0,
        0xf1 | 0xf2 | 0xf4 | 0xfa => 1,
        _ => return None,
    };
    let word = interp.stack.peek(depth).ok()?;
    Some(Address::from_word(B256::from(word)))
}

/// The account an EIP-7702 delegation designator (`0xef0100 || address`) in `info`'s code
/// points to: running the account runs that one's code, so it must be proven too.
pub fn delegate_of(info: &AccountInfo) -> Option<Address> {
    info.code.as_ref().and_then(Bytecode::eip7702_address)
}

/// The EVM configuration of an `eth_call`: revision `spec` on chain `chain_id`, with the
/// nonce, balance, base-fee, fee, block-gas-limit, EIP-3607 and EIP-7825 checks off.
pub fn eth_call_cfg(cfg: &mut revm::context::CfgEnv, spec: SpecId, chain_id: u64) {
    cfg.spec = spec;
    cfg.chain_id = chain_id;
    // geth runs calls with its transaction checks skipped: no EIP-7825 cap (the gas is
    // bounded by `RPC_GAS_CAP` instead).
    cfg.tx_gas_limit_cap = Some(u64::MAX);
    cfg.disable_nonce_check = true;
    cfg.disable_balance_check = true;
    cfg.disable_base_fee = true;
    cfg.disable_fee_charge = true;
    cfg.disable_block_gas_limit = true;
    cfg.disable_eip3607 = true;
}

/// Runs `call` on `header`'s state as far as `state` proves it, on the chain with this id and
/// blob schedule.
pub(crate) fn run(
    state: &ProvenState,
    header: &Header,
    chain: (u64, &ForkSchedule),
    call: &CallRequest,
) -> Result<Run, RpcError> {
    if let Some(refused) = check_value(state, call) {
        return Ok(refused);
    }
    let (chain_id, blobs) = chain;
    let blob_params = blobs.at(header.timestamp);
    let spec = spec_of(header, blobs);
    let mut needs = Needs::default();
    let mut guard = Guard {
        provisional: &state.provisional,
        touched: BTreeSet::new(),
        unprovable: None,
        blob_fee_known: blob_params.is_some() && header.excess_blob_gas.is_some(),
    };
    let result = {
        let db = ProvenDb {
            state,
            needs: &mut needs,
        };
        let ctx = Context::mainnet()
            .with_db(db)
            .with_block(block_env(header, blob_params))
            .modify_cfg_chained(|cfg| eth_call_cfg(cfg, spec, chain_id));
        let mut evm = ctx.build_mainnet_with_inspector(&mut guard);
        evm.inspect_one_tx(tx_env(call, chain_id))
    };
    needs.touched.extend(guard.touched);
    if needs.unprovable.is_none() {
        needs.unprovable = guard.unprovable;
    }
    match result {
        Ok(done) if needs.is_empty() => Ok(Run::Done(done)),
        Ok(_) => Ok(Run::Needs(needs)),
        Err(EVMError::Database(NotProven)) => Ok(Run::Needs(needs)),
        Err(EVMError::Transaction(e)) => Ok(Run::Invalid(Invalid::of(&e))),
        Err(e) => Err(RpcError::Unprovable(format!("the call cannot be run: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{address, keccak256};

    pub(super) const CONTRACT: Address = address!("0x00000000000000000000000000000000000c0de0");
    pub(super) const CALLER: Address = address!("0x00000000000000000000000000000000000ca11e");

    /// A state with one contract running `code`, the caller provisional.
    pub(super) fn state_with(code: &[u8]) -> (ProvenState, Header, CallRequest) {
        let code = Bytes::copy_from_slice(code);
        let info = AccountInfo {
            code_hash: keccak256(&code),
            code: Some(Bytecode::new_raw(code)),
            nonce: 1,
            ..Default::default()
        };
        let mut state = ProvenState::default();
        state.accounts.insert(
            CONTRACT,
            ProvenAccount {
                info,
                storage: HashMap::new(),
            },
        );
        state.provisional.insert(CALLER);
        let header = Header {
            number: 1,
            gas_limit: 30_000_000,
            base_fee_per_gas: Some(7),
            withdrawals_root: Some(B256::ZERO),
            parent_beacon_block_root: Some(B256::ZERO),
            excess_blob_gas: Some(0),
            blob_gas_used: Some(0),
            requests_hash: Some(B256::ZERO),
            ..Default::default()
        };
        let call = CallRequest {
            from: CALLER,
            to: CONTRACT,
            data: Bytes::new(),
            value: U256::ZERO,
            gas: None,
            access_list: AccessList::default(),
        };
        (state, header, call)
    }

    fn needs(code: &[u8]) -> Needs {
        let (state, header, call) = state_with(code);
        match run(&state, &header, (1, &ForkSchedule::default()), &call).unwrap() {
            Run::Needs(needs) => needs,
            Run::Done(done) => panic!("ran over unproven state: {done:?}"),
            Run::Invalid(why) => panic!("not run: {why:?}"),
        }
    }

    #[test]
    fn returns_what_the_code_returns() {
        // PUSH1 0x2a PUSH0 MSTORE PUSH1 32 PUSH0 RETURN
        let (state, header, call) = state_with(&[0x60, 0x2a, 0x5f, 0x52, 0x60, 0x20, 0x5f, 0xf3]);
        let Run::Done(ExecutionResult::Success { output, .. }) =
            run(&state, &header, (1, &ForkSchedule::default()), &call).unwrap()
        else {
            panic!("the call did not succeed");
        };
        assert_eq!(
            output.into_data(),
            Bytes::from(B256::with_last_byte(0x2a).to_vec())
        );
    }

    #[test]
    fn reading_the_callers_balance_needs_its_proof() {
        // CALLER BALANCE PUSH0 MSTORE PUSH1 32 PUSH0 RETURN
        let needs = needs(&[0x33, 0x31, 0x5f, 0x52, 0x60, 0x20, 0x5f, 0xf3]);
        assert_eq!(needs.touched.into_iter().collect::<Vec<_>>(), vec![CALLER]);
    }

    #[test]
    fn an_unproven_slot_is_asked_for() {
        // PUSH1 5 SLOAD STOP
        let needs = needs(&[0x60, 0x05, 0x54, 0x00]);
        assert_eq!(
            needs.slots[&CONTRACT].iter().copied().collect::<Vec<_>>(),
            vec![B256::with_last_byte(5)]
        );
    }

    #[test]
    fn an_unproven_account_is_asked_for() {
        // PUSH20 <addr> EXTCODEHASH STOP
        let mut code = vec![0x73];
        code.extend_from_slice(address!("0x1111111111111111111111111111111111111111").as_slice());
        code.extend_from_slice(&[0x3f, 0x00]);
        let needs = needs(&code);
        assert!(
            needs
                .slots
                .contains_key(&address!("0x1111111111111111111111111111111111111111")),
            "{needs:?}"
        );
    }

    #[test]
    fn blobbasefee_from_the_blob_schedule() {
        // BLOBBASEFEE PUSH0 MSTORE PUSH1 32 PUSH0 RETURN, in a Prague block
        let (state, mut header, call) = state_with(&[0x4a, 0x5f, 0x52, 0x60, 0x20, 0x5f, 0xf3]);
        header.timestamp = 1_746_612_311;
        header.excess_blob_gas = Some(10_000_000);
        let schedule = ForkSchedule::mainnet();
        let Run::Done(ExecutionResult::Success { output, .. }) =
            run(&state, &header, (1, &schedule), &call).unwrap()
        else {
            panic!("the call did not succeed");
        };
        let fee = alloy_eips::eip7840::BlobParams::prague().calc_blob_fee(10_000_000);
        assert!(fee > 1);
        assert_eq!(U256::from_be_slice(output.data()), U256::from(fee));
    }

    #[test]
    fn gas_below_the_intrinsic_cost_is_invalid() {
        let (state, header, mut call) = state_with(&[0x00]);
        call.gas = Some(20_999);
        let Run::Invalid(invalid) =
            run(&state, &header, (1, &ForkSchedule::default()), &call).unwrap()
        else {
            panic!("ran below the intrinsic cost");
        };
        assert!(invalid.for_gas, "{invalid:?}");
    }

    #[test]
    fn a_call_without_gas_runs_on_an_osaka_block() {
        // GAS PUSH0 MSTORE PUSH1 32 PUSH0 RETURN: the gas left, in an Osaka block whose gas
        // limit (60M) is above the EIP-7825 cap.
        let (state, mut header, call) = state_with(&[0x5a, 0x5f, 0x52, 0x60, 0x20, 0x5f, 0xf3]);
        header.timestamp = 1_764_798_551;
        header.gas_limit = 60_000_000;
        let forks = ForkSchedule::mainnet();
        assert_eq!(spec_of(&header, &forks), SpecId::OSAKA);
        let Run::Done(ExecutionResult::Success { output, .. }) =
            run(&state, &header, (1, &forks), &call).unwrap()
        else {
            panic!("the call did not succeed");
        };
        // geth's default: the 50M RPC gas cap, less the intrinsic 21000 and GAS's 2.
        let left = U256::from_be_slice(output.data());
        assert_eq!(left, U256::from(RPC_GAS_CAP - 21_000 - 2));
        // eth_estimateGas searches below the EIP-7825 cap on Osaka, below the block's limit
        // before.
        assert_eq!(
            estimate_cap(&call, 60_000_000, SpecId::OSAKA),
            OSAKA_TX_GAS_CAP
        );
        assert_eq!(estimate_cap(&call, 60_000_000, SpecId::PRAGUE), 50_000_000);
        assert_eq!(estimate_cap(&call, 30_000_000, SpecId::PRAGUE), 30_000_000);
    }

    #[test]
    fn a_selfdestruct_to_the_caller_needs_its_proof() {
        // CALLER SELFDESTRUCT
        let needs = needs(&[0x33, 0xff]);
        assert_eq!(needs.touched.into_iter().collect::<Vec<_>>(), vec![CALLER]);
    }

    #[test]
    fn a_delegation_to_the_caller_needs_its_proof() {
        // The contract's code is a delegation designator to the (provisional) caller.
        let mut code = vec![0xef, 0x01, 0x00];
        code.extend_from_slice(CALLER.as_slice());
        let (state, mut header, call) = state_with(&code);
        header.timestamp = 1_746_612_311;
        assert_eq!(delegate_of(&state.accounts[&CONTRACT].info), Some(CALLER));
        let forks = ForkSchedule::mainnet();
        let Run::Needs(needs) = run(&state, &header, (1, &forks), &call).unwrap() else {
            panic!("ran the delegate's unproven code");
        };
        assert!(needs.touched.contains(&CALLER), "{needs:?}");
    }

    fn parse(call: serde_json::Value) -> Result<CallRequest, RpcError> {
        CallRequest::parse(Some(&call), 1)
    }

    #[test]
    fn every_call_field_is_used_or_refused_by_name() {
        let to = "0x00000000000000000000000000000000000c0de0";
        let ok = parse(
            serde_json::json!({"to": to, "gasPrice": "0x0", "nonce": "0x5",
            "chainId": "0x1", "type": "0x2", "maxFeePerBlobGas": "0x0", "input": "0x01", "data": "0x01",
            "accessList": [{"address": to, "storageKeys": [B256::ZERO]}]}),
        );
        let ok = ok.unwrap();
        assert_eq!(ok.data, Bytes::from(vec![1]));
        let tx = tx_env(&ok, 1);
        assert_eq!((tx.tx_type, tx.access_list.len()), (1, 1));
        assert_eq!(tx.gas_limit, RPC_GAS_CAP);
        let mut capped = ok.clone();
        capped.gas = Some(RPC_GAS_CAP * 2);
        assert_eq!(call_gas(&capped), RPC_GAS_CAP);
        for (extra, named) in [
            (serde_json::json!({"gasPrice": "0x1"}), "gasPrice"),
            (
                serde_json::json!({"maxFeePerGas": "0x3b9aca00"}),
                "maxFeePerGas",
            ),
            (
                serde_json::json!({"maxPriorityFeePerGas": "0x1"}),
                "maxPriorityFeePerGas",
            ),
            (
                serde_json::json!({"maxFeePerBlobGas": "0x1"}),
                "maxFeePerBlobGas",
            ),
            (
                serde_json::json!({"gasPrice": "0x0", "maxFeePerGas": "0x0"}),
                "both gasPrice",
            ),
            (
                serde_json::json!({"blobVersionedHashes": [B256::ZERO]}),
                "blobVersionedHashes",
            ),
            (
                serde_json::json!({"authorizationList": []}),
                "authorizationList",
            ),
            (serde_json::json!({"chainId": "0x5"}), "chainId"),
            (serde_json::json!({"type": "0x4"}), "type"),
            (
                serde_json::json!({"input": "0x01", "data": "0x02"}),
                "input and data",
            ),
            (serde_json::json!({"gasLimit": "0x1"}), "gasLimit"),
            (serde_json::json!({"accessList": 5}), "accessList"),
        ] {
            let mut call = serde_json::json!({"to": to});
            for (k, v) in extra.as_object().unwrap() {
                call[k] = v.clone();
            }
            let e = parse(call).unwrap_err().to_string();
            assert!(e.contains(named), "{named}: {e}");
        }
    }

    #[test]
    fn blockhash_and_blobbasefee_are_unprovable() {
        // PUSH0 BLOCKHASH STOP
        assert!(
            needs(&[0x5f, 0x40, 0x00])
                .unprovable
                .unwrap()
                .contains("BLOCKHASH")
        );
        // BLOBBASEFEE STOP
        assert!(
            needs(&[0x4a, 0x00])
                .unprovable
                .unwrap()
                .contains("BLOBBASEFEE")
        );
    }
}
