//! `eth_call` executed locally with revm over proven state only: every account and storage
//! slot the call reads comes from an EIP-1186 proof checked against the verified state root,
//! every contract's code from any source as long as it hashes to the proven code hash. A read
//! of state not yet proven stops the run; the verifier fetches its proof and runs again.
//!
//! The caller and the block's fee recipient are loaded by the EVM's transaction bookkeeping
//! before any code runs; they stay unproven ("provisional", empty) unless an opcode reads
//! their state (BALANCE, EXTCODE*, a CALL to them), which an inspector watches for. Fees,
//! nonce and balance checks are off (as in `eth_call`). `BLOCKHASH` is not proven, nor
//! `BLOBBASEFEE` without the chain's blob schedule: either makes the call unprovable.
//!
//! Not here: fetching proofs and code (`verifier`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use alloy_consensus::Header;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, Bytes, TxKind, U256};
use revm::{
    Context, Database, InspectEvm, Inspector, MainBuilder, MainContext,
    bytecode::Bytecode,
    context::{BlockEnv, TxEnv, result::ExecutionResult},
    context_interface::block::BlobExcessGasAndPrice,
    database_interface::DBErrorMarker,
    interpreter::{Interpreter, interpreter::EthInterpreter, interpreter_types::Jumps},
    primitives::hardfork::SpecId,
    state::AccountInfo,
};
use serde_json::Value;

use crate::{blobs::BlobSchedule, error::RpcError};

/// Mainnet's Osaka activation time (not visible in header fields).
const MAINNET_OSAKA_TIME: u64 = 1_764_798_551;

/// The update fraction filled in when the blob schedule is not known (Cancun's).
const UNKNOWN_SCHEDULE_FRACTION: u64 = 3_338_477;

/// An `eth_call` request: a call (contract creation is not supported).
#[derive(Debug, Clone)]
pub(crate) struct CallRequest {
    /// `from`, zero when absent.
    pub from: Address,
    /// `to`.
    pub to: Address,
    /// `data` or `input`.
    pub data: Bytes,
    /// `value`.
    pub value: U256,
    /// `gas`, the block gas limit when absent.
    pub gas: Option<u64>,
}

impl CallRequest {
    /// Reads the call object of `eth_call`.
    pub(crate) fn parse(v: Option<&Value>) -> Result<CallRequest, RpcError> {
        let bad = |what: &str| RpcError::InvalidParams(format!("param 0: {what}"));
        let o = v
            .and_then(Value::as_object)
            .ok_or_else(|| bad("not a call object"))?;
        let field = |k: &str| o.get(k).filter(|v| !v.is_null());
        let parse = |k: &str| -> Result<Option<Value>, RpcError> { Ok(field(k).cloned()) };
        let to: Address = serde_json::from_value(
            parse("to")?.ok_or_else(|| bad("no `to` (contract creation is not verified)"))?,
        )
        .map_err(|e| bad(&format!("to: {e}")))?;
        let data: Bytes = match parse("input")?.or(parse("data")?) {
            Some(d) => serde_json::from_value(d).map_err(|e| bad(&format!("data: {e}")))?,
            None => Bytes::new(),
        };
        let from: Address = match parse("from")? {
            Some(f) => serde_json::from_value(f).map_err(|e| bad(&format!("from: {e}")))?,
            None => Address::ZERO,
        };
        let value: U256 = match parse("value")? {
            Some(v) => serde_json::from_value(v).map_err(|e| bad(&format!("value: {e}")))?,
            None => U256::ZERO,
        };
        let gas = match parse("gas")? {
            Some(g) => Some(
                serde_json::from_value::<alloy_primitives::U64>(g)
                    .map_err(|e| bad(&format!("gas: {e}")))?
                    .to::<u64>(),
            ),
            None => None,
        };
        Ok(CallRequest {
            from,
            to,
            data,
            value,
            gas,
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
        let depth = match interp.bytecode.opcode() {
            // BALANCE, EXTCODESIZE, EXTCODECOPY, EXTCODEHASH: the address on top.
            0x31 | 0x3b | 0x3c | 0x3f => 0,
            // CALL, CALLCODE, DELEGATECALL, STATICCALL: the address under the gas.
            0xf1 | 0xf2 | 0xf4 | 0xfa => 1,
            0x4a if !self.blob_fee_known => {
                self.unprovable =
                    Some("BLOBBASEFEE: the chain's blob schedule is not known".into());
                return;
            }
            _ => return,
        };
        if let Ok(word) = interp.stack.peek(depth) {
            let address = Address::from_word(B256::from(word));
            if self.provisional.contains(&address) {
                self.touched.insert(address);
            }
        }
    }
}

/// The EVM revision of a block: from the header's fork fields (Osaka by time on mainnet).
pub(crate) fn spec_of(header: &Header, chain_id: u64) -> SpecId {
    if chain_id == 1 && header.timestamp >= MAINNET_OSAKA_TIME {
        SpecId::OSAKA
    } else if header.requests_hash.is_some() {
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
    Invalid(String),
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

/// The transaction of `call`: no gas price, at most the block's gas limit.
fn tx_env(call: &CallRequest, header: &Header, chain_id: u64) -> TxEnv {
    TxEnv {
        caller: call.from,
        gas_limit: call.gas.unwrap_or(header.gas_limit).min(header.gas_limit),
        gas_price: 0,
        kind: TxKind::Call(call.to),
        value: call.value,
        data: call.data.clone(),
        nonce: 0,
        chain_id: Some(chain_id),
        ..Default::default()
    }
}

/// The EVM configuration of an `eth_call`: revision `spec` on chain `chain_id`, with the
/// nonce, balance, base-fee, fee, block-gas-limit and EIP-3607 checks off.
pub fn eth_call_cfg(cfg: &mut revm::context::CfgEnv, spec: SpecId, chain_id: u64) {
    cfg.spec = spec;
    cfg.chain_id = chain_id;
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
    chain: (u64, &BlobSchedule),
    call: &CallRequest,
) -> Result<Run, RpcError> {
    let (chain_id, blobs) = chain;
    let blob_params = blobs.at(header.timestamp);
    let spec = spec_of(header, chain_id);
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
        evm.inspect_one_tx(tx_env(call, header, chain_id))
    };
    needs.touched.extend(guard.touched);
    if needs.unprovable.is_none() {
        needs.unprovable = guard.unprovable;
    }
    match result {
        Ok(done) if needs.is_empty() => Ok(Run::Done(done)),
        Ok(_) => Ok(Run::Needs(needs)),
        Err(revm::context::result::EVMError::Database(NotProven)) => Ok(Run::Needs(needs)),
        Err(revm::context::result::EVMError::Transaction(e)) => Ok(Run::Invalid(e.to_string())),
        Err(e) => Err(RpcError::Unprovable(format!("the call cannot be run: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::{address, keccak256};

    const CONTRACT: Address = address!("0x00000000000000000000000000000000000c0de0");
    const CALLER: Address = address!("0x00000000000000000000000000000000000ca11e");

    /// A state with one contract running `code`, the caller provisional.
    fn state_with(code: &[u8]) -> (ProvenState, Header, CallRequest) {
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
        };
        (state, header, call)
    }

    fn needs(code: &[u8]) -> Needs {
        let (state, header, call) = state_with(code);
        match run(&state, &header, (1, &BlobSchedule::default()), &call).unwrap() {
            Run::Needs(needs) => needs,
            Run::Done(done) => panic!("ran over unproven state: {done:?}"),
            Run::Invalid(why) => panic!("not run: {why}"),
        }
    }

    #[test]
    fn returns_what_the_code_returns() {
        // PUSH1 0x2a PUSH0 MSTORE PUSH1 32 PUSH0 RETURN
        let (state, header, call) = state_with(&[0x60, 0x2a, 0x5f, 0x52, 0x60, 0x20, 0x5f, 0xf3]);
        let Run::Done(ExecutionResult::Success { output, .. }) =
            run(&state, &header, (1, &BlobSchedule::default()), &call).unwrap()
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
        let schedule = BlobSchedule::mainnet();
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
        assert!(matches!(
            run(&state, &header, (1, &BlobSchedule::default()), &call).unwrap(),
            Run::Invalid(_)
        ));
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
