//! `eth_call` run in revm over proven state only — the one EVM integration of both verifiers.
//! Every account and slot the call reads must be in the [`ProvenState`]; a read of anything
//! else stops the run and is reported as [`Needs`]: the local verifier proves it and runs
//! again, the proof verifier (whose proof is all it has) refuses the call naming it.
//!
//! The caller and the block's fee recipient are loaded by the EVM's transaction bookkeeping
//! before any code runs; they stay "provisional" (empty) unless an opcode reads their state
//! (BALANCE, EXTCODE*, a CALL to them, a SELFDESTRUCT paying them) or a proven account's
//! EIP-7702 delegation points to them, which the guard and the state watch for. Fees and the
//! nonce check are off (as in `eth_call`); a call with a value needs its caller proven, whose
//! balance must cover the value (geth's `buyGas` check, the fee being zero). `BLOCKHASH` is
//! not proven, nor `BLOBBASEFEE` without the chain's blob schedule. When no header is proven
//! ([`BlockContext::unbound`], the proof format's calls), every opcode that reads the block
//! context makes the call unprovable instead of running it with zeros. A run given a deadline
//! ([`run_until`]) stops at it: a loop that burns 50M gas is not allowed to hold a server's
//! thread for as long as the interpreter takes.
//!
//! Not here: the call object and the EVM configuration (`call`); fetching proofs or code.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    time::Instant,
};

use alloy_consensus::Header;
use alloy_eips::eip7840::BlobParams;
use alloy_primitives::{Address, B256, U256};
use revm::{
    Context, Database, InspectEvm, Inspector, MainBuilder, MainContext,
    bytecode::Bytecode,
    context::{
        BlockEnv,
        result::{EVMError, ExecutionResult, InvalidTransaction},
    },
    context_interface::block::BlobExcessGasAndPrice,
    database_interface::DBErrorMarker,
    interpreter::{
        InstructionResult, Interpreter, interpreter::EthInterpreter, interpreter_types::Jumps,
    },
    primitives::hardfork::SpecId,
    state::AccountInfo,
};

use crate::call::{CallRequest, account_read, call_gas, delegate_of, eth_call_cfg, tx_env};
use crate::forks::ForkSchedule;

/// The update fraction filled in when the blob schedule is not known (Cancun's).
const UNKNOWN_SCHEDULE_FRACTION: u64 = 3_338_477;

/// A proven account: its fields, code, and the storage slots proven so far.
#[derive(Debug, Clone)]
pub struct ProvenAccount {
    /// Balance, nonce, code hash and code (`None` when the code is not known).
    pub info: AccountInfo,
    /// Proven slots (absent slots proven as zero are present with zero).
    pub storage: HashMap<B256, U256>,
}

/// The state a call may read: proven accounts, and the accounts loaded empty.
#[derive(Debug, Default)]
pub struct ProvenState {
    /// Accounts proven against the state root.
    pub accounts: HashMap<Address, ProvenAccount>,
    /// Accounts loaded empty unless an opcode reads them (caller, fee recipient); a proven
    /// account is never provisional.
    pub provisional: HashSet<Address>,
}

/// What one run needs before it can finish.
#[derive(Debug, Default)]
pub struct Needs {
    /// Accounts to prove, with the slots each needs.
    pub slots: BTreeMap<Address, BTreeSet<B256>>,
    /// Provisional accounts whose state an opcode read.
    pub touched: BTreeSet<Address>,
    /// Why the call cannot be proven at all.
    pub unprovable: Option<String>,
    /// The first need, in words (for a verifier that cannot fetch it).
    pub first: Option<String>,
}

impl Needs {
    fn is_empty(&self) -> bool {
        self.slots.is_empty() && self.touched.is_empty() && self.unprovable.is_none()
    }

    fn note(&mut self, what: impl FnOnce() -> String) {
        if self.first.is_none() {
            self.first = Some(what());
        }
    }

    /// Why the run could not finish, for a verifier that has no way to prove more.
    pub fn reason(&self) -> String {
        self.unprovable
            .clone()
            .or_else(|| self.first.clone())
            .unwrap_or_else(|| "the call reads state that is not proven".into())
    }
}

/// A read of state not (yet) proven; stops the run.
#[derive(Debug, thiserror::Error)]
#[error("state not proven")]
struct NotProven;

impl DBErrorMarker for NotProven {}

struct ProvenDb<'a> {
    state: &'a ProvenState,
    needs: &'a mut Needs,
}

impl Database for ProvenDb<'_> {
    type Error = NotProven;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, NotProven> {
        let state = self.state;
        if let Some(a) = state.accounts.get(&address) {
            // Running `address` runs its delegate's code, which must be proven too.
            if let Some(to) = delegate_of(&a.info)
                && !state.accounts.contains_key(&to)
            {
                self.needs
                    .note(|| format!("{address} delegates to {to}, whose account is not proven"));
                if state.provisional.contains(&to) {
                    self.needs.touched.insert(to);
                } else {
                    self.needs.slots.entry(to).or_default();
                }
            }
            return Ok(Some(a.info.clone()));
        }
        if state.provisional.contains(&address) {
            return Ok(None);
        }
        self.needs
            .note(|| format!("the account {address} is not proven"));
        self.needs.slots.entry(address).or_default();
        Err(NotProven)
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, NotProven> {
        let known = self.state.accounts.values();
        let code = known
            .filter(|a| a.info.code_hash == code_hash)
            .find_map(|a| a.info.code.clone());
        code.ok_or_else(|| {
            self.needs.unprovable = Some(format!("code {code_hash} is not known"));
            NotProven
        })
    }

    fn storage(&mut self, address: Address, index: U256) -> Result<U256, NotProven> {
        let key = B256::from(index);
        let account = self.state.accounts.get(&address);
        if let Some(v) = account.and_then(|a| a.storage.get(&key)) {
            return Ok(*v);
        }
        if self.state.provisional.contains(&address) {
            self.needs.touched.insert(address);
            return Ok(U256::ZERO);
        }
        self.needs
            .note(|| format!("storage slot {key} of {address} is not proven"));
        self.needs.slots.entry(address).or_default().insert(key);
        Err(NotProven)
    }

    fn block_hash(&mut self, number: u64) -> Result<B256, NotProven> {
        self.needs.unprovable = Some(format!("BLOCKHASH({number}) is not proven"));
        Err(NotProven)
    }
}

/// The name of an opcode that reads the block context, if `opcode` is one.
fn block_context_read(opcode: u8) -> Option<&'static str> {
    Some(match opcode {
        0x41 => "COINBASE",
        0x42 => "TIMESTAMP",
        0x43 => "NUMBER",
        0x44 => "PREVRANDAO",
        0x45 => "GASLIMIT",
        0x48 => "BASEFEE",
        0x4a => "BLOBBASEFEE",
        _ => return None,
    })
}

/// Watches opcodes that read another account's state (for provisional accounts) and, where
/// it is not proven, the block context.
struct Guard<'a> {
    provisional: &'a HashSet<Address>,
    touched: BTreeSet<Address>,
    unprovable: Option<String>,
    /// The block context is a proven header's.
    context_bound: bool,
    /// The blob base fee follows from a known blob schedule.
    blob_fee_known: bool,
    /// When the run must stop, if ever.
    deadline: Option<Instant>,
    /// Steps since the clock was last read.
    steps: u32,
    /// The deadline passed: every frame halts at its next step.
    timed_out: bool,
}

/// Steps between two readings of the clock (a reading costs about as much as a few hundred
/// cheap opcodes).
const STEPS_PER_CLOCK_READ: u32 = 4096;

impl Guard<'_> {
    /// Whether the run is past its deadline (the clock read every [`STEPS_PER_CLOCK_READ`]
    /// steps).
    fn past_deadline(&mut self) -> bool {
        if self.timed_out {
            return true;
        }
        let Some(deadline) = self.deadline else {
            return false;
        };
        self.steps += 1;
        if self.steps >= STEPS_PER_CLOCK_READ {
            self.steps = 0;
            self.timed_out = Instant::now() >= deadline;
        }
        self.timed_out
    }
}

impl<CTX> Inspector<CTX, EthInterpreter> for Guard<'_> {
    fn step(&mut self, interp: &mut Interpreter<EthInterpreter>, _context: &mut CTX) {
        if self.past_deadline() {
            // An ordinary halt (revm treats a fatal one as a bug and panics); the run's
            // result is replaced by `Run::TimedOut` anyway.
            interp.halt(InstructionResult::OutOfGas);
            return;
        }
        if self.unprovable.is_some() {
            return;
        }
        let opcode = interp.bytecode.opcode();
        if let Some(name) = block_context_read(opcode) {
            if !self.context_bound {
                self.unprovable = Some(format!("the call reads {name}, which is not proven"));
            } else if opcode == 0x4a && !self.blob_fee_known {
                self.unprovable =
                    Some("BLOBBASEFEE: the chain's blob schedule is not known".into());
            }
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
pub fn spec_of(header: &Header, forks: &ForkSchedule) -> SpecId {
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

/// The block a call runs in: its EVM revision and, when its header is proven, its context.
#[derive(Debug, Clone)]
pub struct BlockContext {
    spec: SpecId,
    env: Option<BlockEnv>,
    blob_fee_known: bool,
}

impl BlockContext {
    /// A proven header, the revision and blob price from the chain's fork table.
    pub fn of_header(header: &Header, forks: &ForkSchedule) -> BlockContext {
        let blob_params = forks.at(header.timestamp);
        BlockContext {
            spec: spec_of(header, forks),
            env: Some(block_env(header, blob_params)),
            blob_fee_known: blob_params.is_some() && header.excess_blob_gas.is_some(),
        }
    }

    /// No proven header: revision `spec`, and any read of the block context is unprovable.
    pub fn unbound(spec: SpecId) -> BlockContext {
        BlockContext {
            spec,
            env: None,
            blob_fee_known: false,
        }
    }

    /// The EVM revision.
    pub fn spec(&self) -> SpecId {
        self.spec
    }
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

/// The outcome of one run: finished, or what it needs first.
#[derive(Debug)]
pub enum Run {
    /// Finished over proven state only.
    Done(ExecutionResult),
    /// Stopped or tainted: prove these and run again.
    Needs(Needs),
    /// Not a valid transaction (e.g. gas below the intrinsic cost).
    Invalid(Invalid),
    /// The EVM could not run the call for another reason (its message).
    Failed(String),
    /// Stopped at its deadline, unfinished.
    TimedOut,
}

/// Why a call is not a valid transaction; it did not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
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
pub type Attempt = Result<ExecutionResult, Invalid>;

/// geth's balance check before a call runs (`buyGas`, the fee being zero): the caller's
/// balance covers the value. A call with a value thus reads its caller, which is proven
/// first; revm's own check is off with the fee charge, and a provisional (empty) caller
/// would halt the transfer with `OutOfFunds`.
fn check_value(state: &ProvenState, call: &CallRequest) -> Option<Run> {
    if call.value.is_zero() {
        return None;
    }
    if !state.accounts.contains_key(&call.from) && state.provisional.contains(&call.from) {
        let mut needs = Needs::default();
        needs.touched.insert(call.from);
        needs.note(|| format!("a call with a value needs its caller {} proven", call.from));
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

/// Runs `call` in `block` on chain `chain_id` over what `state` proves, for as long as it takes.
pub fn run(state: &ProvenState, block: &BlockContext, chain_id: u64, call: &CallRequest) -> Run {
    run_until(state, block, chain_id, call, None)
}

/// [`run`], stopped with [`Run::TimedOut`] once `deadline` (if any) has passed.
pub fn run_until(
    state: &ProvenState,
    block: &BlockContext,
    chain_id: u64,
    call: &CallRequest,
    deadline: Option<Instant>,
) -> Run {
    if let Some(refused) = check_value(state, call) {
        return refused;
    }
    let mut needs = Needs::default();
    let mut guard = Guard {
        provisional: &state.provisional,
        touched: BTreeSet::new(),
        unprovable: None,
        context_bound: block.env.is_some(),
        blob_fee_known: block.blob_fee_known,
        deadline,
        steps: 0,
        timed_out: false,
    };
    let env = block.env.clone().unwrap_or_else(|| BlockEnv {
        gas_limit: call_gas(call),
        ..Default::default()
    });
    let result = {
        let db = ProvenDb {
            state,
            needs: &mut needs,
        };
        let ctx = Context::mainnet()
            .with_db(db)
            .with_block(env)
            .modify_cfg_chained(|cfg| eth_call_cfg(cfg, block.spec, chain_id));
        let mut evm = ctx.build_mainnet_with_inspector(&mut guard);
        evm.inspect_one_tx(tx_env(call, chain_id))
    };
    for address in &guard.touched {
        needs.note(|| format!("the call reads the unproven account {address}"));
    }
    if guard.timed_out {
        return Run::TimedOut;
    }
    needs.touched.extend(guard.touched);
    if needs.unprovable.is_none() {
        needs.unprovable = guard.unprovable;
    }
    match result {
        Ok(done) if needs.is_empty() => Run::Done(done),
        Ok(_) | Err(EVMError::Database(NotProven)) => Run::Needs(needs),
        Err(EVMError::Transaction(e)) => Run::Invalid(Invalid::of(&e)),
        Err(e) => Run::Failed(format!("the call cannot be run: {e}")),
    }
}

/// Fixtures for tests of code that runs calls (here and in `sszgate-rpc`): not part of the
/// verifier.
#[cfg(any(test, feature = "test-fixtures"))]
pub mod fixtures {
    use alloy_eips::eip2930::AccessList;
    use alloy_primitives::{Bytes, address, keccak256};

    use super::*;

    /// The contract of [`state_with`].
    pub const CONTRACT: Address = address!("0x00000000000000000000000000000000000c0de0");
    /// The (provisional) caller of [`state_with`].
    pub const CALLER: Address = address!("0x00000000000000000000000000000000000ca11e");

    /// A Prague block's state with one contract running `code`, the caller provisional, and
    /// a call from the caller to the contract.
    pub fn state_with(code: &[u8]) -> (ProvenState, Header, CallRequest) {
        let code = Bytes::copy_from_slice(code);
        let info = AccountInfo::new(U256::ZERO, 1, keccak256(&code), Bytecode::new_raw(code));
        let mut state = ProvenState::default();
        let storage = HashMap::new();
        state
            .accounts
            .insert(CONTRACT, ProvenAccount { info, storage });
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
}

#[cfg(test)]
mod tests {
    use alloy_primitives::{Bytes, address};

    use super::fixtures::{CALLER, CONTRACT, state_with};
    use super::*;
    use crate::call::RPC_GAS_CAP;

    fn needs(code: &[u8]) -> Needs {
        let (state, header, call) = state_with(code);
        match run(
            &state,
            &BlockContext::of_header(&header, &ForkSchedule::default()),
            1,
            &call,
        ) {
            Run::Needs(needs) => needs,
            Run::Done(done) => panic!("ran over unproven state: {done:?}"),
            other => panic!("not run: {other:?}"),
        }
    }

    #[test]
    fn returns_what_the_code_returns() {
        // PUSH1 0x2a PUSH0 MSTORE PUSH1 32 PUSH0 RETURN
        let (state, header, call) = state_with(&[0x60, 0x2a, 0x5f, 0x52, 0x60, 0x20, 0x5f, 0xf3]);
        let Run::Done(ExecutionResult::Success { output, .. }) = run(
            &state,
            &BlockContext::of_header(&header, &ForkSchedule::default()),
            1,
            &call,
        ) else {
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
        let Run::Done(ExecutionResult::Success { output, .. }) = run(
            &state,
            &BlockContext::of_header(&header, &schedule),
            1,
            &call,
        ) else {
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
        let Run::Invalid(invalid) = run(
            &state,
            &BlockContext::of_header(&header, &ForkSchedule::default()),
            1,
            &call,
        ) else {
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
            run(&state, &BlockContext::of_header(&header, &forks), 1, &call)
        else {
            panic!("the call did not succeed");
        };
        // geth's default: the 50M RPC gas cap, less the intrinsic 21000 and GAS's 2.
        let left = U256::from_be_slice(output.data());
        assert_eq!(left, U256::from(RPC_GAS_CAP - 21_000 - 2));
    }

    #[test]
    fn a_gas_burning_loop_stops_at_its_deadline_and_runs_out_of_gas_without_one() {
        // JUMPDEST PUSH1 0 JUMP: loops until its gas is spent.
        let (state, header, mut call) = state_with(&[0x5b, 0x60, 0x00, 0x56]);
        let block = BlockContext::of_header(&header, &ForkSchedule::default());
        let past = Instant::now();
        assert!(matches!(
            run_until(&state, &block, 1, &call, Some(past)),
            Run::TimedOut
        ));
        call.gas = Some(1_000_000);
        let far = Instant::now() + std::time::Duration::from_secs(3600);
        let Run::Done(done @ ExecutionResult::Halt { .. }) =
            run_until(&state, &block, 1, &call, Some(far))
        else {
            panic!("the loop did not run out of gas");
        };
        assert_eq!(done.tx_gas_used(), 1_000_000);
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
        let Run::Needs(needs) = run(&state, &BlockContext::of_header(&header, &forks), 1, &call)
        else {
            panic!("ran the delegate's unproven code");
        };
        assert!(needs.touched.contains(&CALLER), "{needs:?}");
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

    /// Runs a call to [`CONTRACT`] running `code` with no block header proven, under Prague.
    fn unbound(code: &[u8]) -> Run {
        let (state, _, call) = state_with(code);
        run(&state, &BlockContext::unbound(SpecId::PRAGUE), 1, &call)
    }

    #[test]
    fn without_a_proven_header_the_block_context_is_unprovable() {
        for (op, name) in [
            (0x41, "COINBASE"),
            (0x42, "TIMESTAMP"),
            (0x43, "NUMBER"),
            (0x48, "BASEFEE"),
            (0x4a, "BLOBBASEFEE"),
        ] {
            let Run::Needs(needs) = unbound(&[op, 0x5f, 0x52, 0x60, 32, 0x5f, 0xf3]) else {
                panic!("{name} ran without a proven header");
            };
            assert!(needs.reason().contains(name), "{name}: {}", needs.reason());
        }
        // With a proven header NUMBER runs and answers the header's number.
        let (state, header, call) = state_with(&[0x43, 0x5f, 0x52, 0x60, 32, 0x5f, 0xf3]);
        let Run::Done(ExecutionResult::Success { output, .. }) = run(
            &state,
            &BlockContext::of_header(&header, &ForkSchedule::default()),
            1,
            &call,
        ) else {
            panic!("NUMBER did not run over a proven header");
        };
        assert_eq!(
            U256::from_be_slice(output.data()),
            U256::from(header.number)
        );
    }

    #[test]
    fn the_first_need_is_named_for_a_verifier_that_cannot_fetch() {
        // PUSH1 5 SLOAD STOP
        let Run::Needs(needs) = unbound(&[0x60, 0x05, 0x54, 0x00]) else {
            panic!("read an unproven slot");
        };
        assert!(
            needs.reason().contains("slot") && needs.reason().contains(&CONTRACT.to_string()),
            "{}",
            needs.reason()
        );
        // A delegation to the provisional caller names the delegation.
        let mut code = vec![0xef, 0x01, 0x00];
        code.extend_from_slice(CALLER.as_slice());
        let Run::Needs(needs) = unbound(&code) else {
            panic!("ran the delegate's unproven code");
        };
        assert!(needs.reason().contains("delegates"), "{}", needs.reason());
    }

    #[test]
    fn a_value_from_a_provisional_caller_needs_its_proof_and_its_balance() {
        let (mut state, header, mut call) = state_with(&[0x00]);
        call.value = U256::from(5);
        let block = BlockContext::of_header(&header, &ForkSchedule::default());
        let Run::Needs(needs) = run(&state, &block, 1, &call) else {
            panic!("a value moved from an unproven caller");
        };
        assert!(needs.touched.contains(&CALLER), "{needs:?}");
        state.provisional.remove(&CALLER);
        let info = AccountInfo {
            balance: U256::from(4),
            ..Default::default()
        };
        state.accounts.insert(
            CALLER,
            ProvenAccount {
                info,
                storage: HashMap::new(),
            },
        );
        let Run::Invalid(invalid) = run(&state, &block, 1, &call) else {
            panic!("a value above the caller's balance moved");
        };
        assert!(invalid.why.contains("insufficient funds"), "{invalid:?}");
    }
}
