//! `eth_estimateGas` as geth answers it: geth's estimator (`eth/gasestimator/gasestimator.go`,
//! `Estimate` and `execute`, go-ethereum v1.16.0 … v1.17.5, reached through
//! `internal/ethapi/api.go`'s `DoEstimateGas`) step by step, so that the verified answer is the
//! number geth gives. geth does not search for the exact lowest gas: it runs once at the cap,
//! tries an optimistic limit, then bisects until within 1.5 % of the lowest failing limit.
//!
//! Not here: running one call over proven state (`sszgate_exec::evm::run`, the verifier's
//! `run_proven`).

use alloy_primitives::KECCAK256_EMPTY;
use revm::{
    context::result::{ExecutionResult, HaltReason},
    primitives::hardfork::SpecId,
};

use super::{Attempt, CallRequest, OSAKA_TX_GAS_CAP, ProvenState, RPC_GAS_CAP, call_output};
use crate::error::RpcError;

/// geth's `params.TxGas`: the intrinsic gas of a plain transfer.
const TX_GAS: u64 = 21_000;

/// geth's `params.CallStipend`: the optimistic limit leaves room for it.
const CALL_STIPEND: u64 = 2_300;

/// geth's `estimateGasErrorRatio`: the search stops once the bounds are this close.
const ERROR_RATIO: f64 = 0.015;

/// The upper bound of eth_estimateGas (geth's `Estimate` with `DoEstimateGas`'s call): the
/// call's gas when it is at least 21000 (capped at [`RPC_GAS_CAP`] as geth's `CallDefaults`
/// caps it), else the block's gas limit; on Osaka (not from Amsterdam) at most
/// [`OSAKA_TX_GAS_CAP`] (EIP-7825); at most [`RPC_GAS_CAP`].
pub fn estimate_cap(call: &CallRequest, block_gas_limit: u64, spec: SpecId) -> u64 {
    let mut hi = match call.gas {
        Some(gas) if gas >= TX_GAS => gas.min(RPC_GAS_CAP),
        _ => block_gas_limit,
    };
    let osaka = spec.is_enabled_in(SpecId::OSAKA) && !spec.is_enabled_in(SpecId::AMSTERDAM);
    if hi > OSAKA_TX_GAS_CAP && osaka {
        hi = OSAKA_TX_GAS_CAP;
    }
    // geth lowers the bound to what the caller's balance can pay at its fee cap; the fee cap
    // is always zero here (non-zero fees are refused), where geth skips that step.
    hi.min(RPC_GAS_CAP)
}

/// Whether geth tries the call at 21000 gas first: no data, and a target without code (its
/// proven code hash is the empty code's).
pub(crate) fn plain_transfer(call: &CallRequest, state: &ProvenState) -> bool {
    call.data.is_empty()
        && state
            .accounts
            .get(&call.to)
            .is_some_and(|a| a.info.code_hash == KECCAK256_EMPTY)
}

/// Runs the estimated call at a given gas limit over proven state.
pub(crate) trait Runs {
    /// The call run with `gas`.
    fn at(&mut self, gas: u64) -> impl Future<Output = Result<Attempt, RpcError>> + Send;
}

/// One run at a gas limit, as geth's `execute` sees it: failed (for a reason more gas may
/// cure) or not, with the result when the call ran. A refusal not about gas is an error.
async fn execute(
    runs: &mut impl Runs,
    gas: u64,
) -> Result<(bool, Option<ExecutionResult>), RpcError> {
    match runs.at(gas).await? {
        Ok(result) => Ok((!result.is_success(), Some(result))),
        Err(invalid) if invalid.for_gas => Ok((true, None)),
        Err(invalid) => Err(RpcError::Halted(format!(
            "failed with {gas} gas: {}",
            invalid.why
        ))),
    }
}

/// geth's estimate for a call run by `runs`: `hi` from [`estimate_cap`], `plain` from
/// [`plain_transfer`].
pub(crate) async fn estimate(
    mut hi: u64,
    plain: bool,
    runs: &mut impl Runs,
) -> Result<u64, RpcError> {
    // geth ignores any error of this try: the run at the cap reports it.
    if plain && matches!(execute(runs, TX_GAS).await, Ok((false, _))) {
        return Ok(TX_GAS);
    }
    let first = match execute(runs, hi).await?.1 {
        Some(result) if !out_of_gas(&result) => result,
        _ => return Err(exceeds(hi)),
    };
    let gas = *first.gas();
    // A revert or another halt at the cap is the answer.
    call_output(first)?;
    // geth: `lo = UsedGas - 1` (after refunds, at least the EIP-7623 floor), and the
    // optimistic limit from `MaxUsedGas` (before refunds, at least the floor).
    let mut lo = gas.tx_gas_used().saturating_sub(1);
    let peak = gas.total_gas_spent().max(gas.floor_gas());
    let optimistic = (peak + CALL_STIPEND) * 64 / 63;
    if optimistic < hi {
        match execute(runs, optimistic).await?.0 {
            true => lo = optimistic,
            false => hi = optimistic,
        }
    }
    while lo + 1 < hi {
        if (hi - lo) as f64 / (hi as f64) < ERROR_RATIO {
            break;
        }
        // Bisection skewed to the low side, as geth's.
        let mid = (lo + (hi - lo) / 2).min(lo * 2);
        match execute(runs, mid).await?.0 {
            true => lo = mid,
            false => hi = mid,
        }
    }
    Ok(hi)
}

/// Whether a run stopped for lack of gas (geth's `vm.ErrOutOfGas`).
fn out_of_gas(result: &ExecutionResult) -> bool {
    matches!(
        result,
        ExecutionResult::Halt {
            reason: HaltReason::OutOfGas(_),
            ..
        }
    )
}

/// geth's error when the call fails even at the cap for lack of gas.
fn exceeds(hi: u64) -> RpcError {
    RpcError::Halted(format!("gas required exceeds allowance ({hi})"))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use alloy_consensus::Header;
    use alloy_primitives::{Address, B256, Bytes, U256, address};

    use sszgate_exec::evm::fixtures::{CALLER, CONTRACT, state_with};
    use sszgate_exec::{BlockContext, ForkSchedule};

    use super::*;
    use crate::call::{ProvenAccount, Run, run};

    /// An account that does not exist yet.
    const NEW: Address = address!("0x00000000000000000000000000000000005eed01");

    /// A call's runs over an in-memory state (a Prague block without a fork table); a run
    /// that needs an account proves it from `world`, as the verifier's `run_proven` does.
    struct InMemory<'a> {
        state: &'a mut ProvenState,
        world: &'a HashMap<Address, ProvenAccount>,
        header: &'a Header,
        call: CallRequest,
    }

    impl Runs for InMemory<'_> {
        fn at(&mut self, gas: u64) -> impl Future<Output = Result<Attempt, RpcError>> + Send {
            self.call.gas = Some(gas);
            std::future::ready(attempt(self.state, self.world, self.header, &self.call))
        }
    }

    /// geth's estimate of `call` over `state`, proving from `world`.
    async fn estimate_over(
        state: &mut ProvenState,
        world: &HashMap<Address, ProvenAccount>,
        header: &Header,
        call: CallRequest,
    ) -> Result<u64, RpcError> {
        let forks = ForkSchedule::default();
        let hi = estimate_cap(
            &call,
            header.gas_limit,
            crate::call::spec_of(header, &forks),
        );
        let plain = plain_transfer(&call, state);
        let mut runs = InMemory {
            state,
            world,
            header,
            call,
        };
        estimate(hi, plain, &mut runs).await
    }

    /// One run over `state`, proving from `world` what it needs until it finishes.
    fn attempt(
        state: &mut ProvenState,
        world: &HashMap<Address, ProvenAccount>,
        header: &Header,
        call: &CallRequest,
    ) -> Result<Attempt, RpcError> {
        loop {
            match run(
                state,
                &BlockContext::of_header(header, &ForkSchedule::default()),
                1,
                call,
            ) {
                Run::Done(result) => return Ok(Ok(result)),
                Run::Invalid(invalid) => return Ok(Err(invalid)),
                Run::Failed(why) => return Err(RpcError::Unprovable(why)),
                Run::TimedOut => unreachable!("no deadline is given"),
                Run::Needs(needs) => {
                    let wanted = needs.touched.iter().chain(needs.slots.keys());
                    for address in wanted.copied().collect::<Vec<_>>() {
                        state.provisional.remove(&address);
                        let account = world.get(&address).expect("an account of the world");
                        state.accounts.insert(address, account.clone());
                    }
                }
            }
        }
    }

    /// `PUSH0 CALLDATALOAD PUSH0 SSTORE STOP`: stores the call's first word in slot 0, which
    /// holds zero; the call's data is the word 1.
    fn store_a_word() -> (ProvenState, Header, CallRequest) {
        let (mut state, header, mut call) = state_with(&[0x5f, 0x35, 0x5f, 0x55, 0x00]);
        let contract = state.accounts.get_mut(&CONTRACT).unwrap();
        contract.storage.insert(B256::ZERO, U256::ZERO);
        call.data = Bytes::from(B256::with_last_byte(1).to_vec());
        (state, header, call)
    }

    #[tokio::test]
    async fn storing_a_word_is_estimated_as_geth_does() {
        let (mut state, header, call) = store_a_word();
        // The exact lowest gas: 21000 + calldata (31 zero bytes × 4 + 1 × 16 = 140) + PUSH0,
        // CALLDATALOAD, PUSH0 (7) + a cold SSTORE of a zero slot (2100 + 20000) = 43247.
        let mut at = |gas: u64| {
            let mut call = call.clone();
            call.gas = Some(gas);
            let result = attempt(&mut state, &HashMap::new(), &header, &call);
            result.unwrap().unwrap().is_success()
        };
        assert!(at(43_247));
        assert!(!at(43_246));
        // geth's steps: the run at the cap (the block's 30M) uses 43247 (no refund), so
        // lo = 43246; the optimistic limit (43247 + 2300) × 64 / 63 = 46269 succeeds: hi.
        // Then mid = lo + (hi − lo) / 2 while (hi − lo) / hi ≥ 0.015:
        // 3023/46269 → 44757 succeeds; 1511/44757 → 44001 succeeds; 755/44001 → 43623
        // succeeds; 377/43623 = 0.0086 < 0.015: the answer is 43623, not 43247.
        let gas = estimate_over(&mut state, &HashMap::new(), &header, call).await;
        assert_eq!(gas.unwrap(), 43_623);
    }

    /// A state where the caller (provisional, as the verifier starts) holds one ether and
    /// `NEW` is proven absent; the call sends `value` to `NEW` without data.
    fn transfer(
        value: U256,
    ) -> (
        ProvenState,
        HashMap<Address, ProvenAccount>,
        Header,
        CallRequest,
    ) {
        let (mut state, header, mut call) = state_with(&[0x00]);
        let mut caller = empty_account();
        caller.info.balance = U256::from(10u64).pow(U256::from(18));
        let world = HashMap::from([(CALLER, caller)]);
        state.accounts.insert(NEW, empty_account());
        (call.to, call.value) = (NEW, value);
        (state, world, header, call)
    }

    /// An empty account (as one proven absent is).
    fn empty_account() -> ProvenAccount {
        ProvenAccount {
            info: Default::default(),
            storage: HashMap::new(),
        }
    }

    #[tokio::test]
    async fn a_transfer_to_a_new_account_is_21000() {
        let (mut state, world, header, call) = transfer(U256::from(1));
        assert!(plain_transfer(&call, &state));
        let gas = estimate_over(&mut state, &world, &header, call).await;
        assert_eq!(gas.unwrap(), 21_000);
        // The caller's balance was read: it is proven now.
        assert!(!state.provisional.contains(&CALLER));
        assert!(state.accounts.contains_key(&CALLER));
    }

    #[tokio::test]
    async fn a_transfer_beyond_the_callers_balance_is_refused() {
        let (mut state, world, header, call) = transfer(U256::from(10u64).pow(U256::from(19)));
        let e = estimate_over(&mut state, &world, &header, call).await;
        let e = e.unwrap_err().to_string();
        assert!(
            e.contains("failed with 30000000 gas: insufficient funds"),
            "{e}"
        );
        assert!(e.contains("want 10000000000000000000"), "{e}");
    }

    #[tokio::test]
    async fn a_call_out_of_gas_at_the_cap_exceeds_the_allowance() {
        // JUMPDEST PUSH0 JUMP: loops until the gas runs out.
        let (mut state, header, mut call) = state_with(&[0x5b, 0x5f, 0x56]);
        call.gas = Some(100_000);
        let e = estimate_over(&mut state, &HashMap::new(), &header, call).await;
        let e = e.unwrap_err().to_string();
        assert!(e.contains("gas required exceeds allowance (100000)"), "{e}");
    }

    #[test]
    fn the_cap_follows_geths_estimator() {
        let (_, _, mut call) = store_a_word();
        // No gas, or less than 21000: the block's gas limit.
        assert_eq!(estimate_cap(&call, 30_000_000, SpecId::PRAGUE), 30_000_000);
        call.gas = Some(20_999);
        assert_eq!(estimate_cap(&call, 30_000_000, SpecId::PRAGUE), 30_000_000);
        call.gas = Some(21_000);
        assert_eq!(estimate_cap(&call, 30_000_000, SpecId::PRAGUE), 21_000);
        // Above the RPC gas cap: the cap; from Osaka, EIP-7825's.
        call.gas = Some(80_000_000);
        assert_eq!(estimate_cap(&call, 30_000_000, SpecId::PRAGUE), RPC_GAS_CAP);
        assert_eq!(
            estimate_cap(&call, 30_000_000, SpecId::OSAKA),
            OSAKA_TX_GAS_CAP
        );
        call.gas = None;
        assert_eq!(
            estimate_cap(&call, 60_000_000, SpecId::OSAKA),
            OSAKA_TX_GAS_CAP
        );
        assert_eq!(
            estimate_cap(&call, 60_000_000, SpecId::AMSTERDAM),
            RPC_GAS_CAP
        );
    }
}
