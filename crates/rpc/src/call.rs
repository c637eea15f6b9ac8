//! `eth_call` and `eth_estimateGas` in the local verifier: the call object, the EVM run over
//! proven state and the fork table are `sszgate-exec`'s (shared with the proof verifier);
//! here the run's outcome becomes this server's answer or error, and geth's gas estimator
//! (`estimate`) drives runs whose missing state the verifier fetches between them.
//!
//! Not here: fetching proofs and code (`verifier`); the EVM run itself (`sszgate_exec::evm`).

mod estimate;

pub use estimate::estimate_cap;
pub(crate) use estimate::{Runs, estimate, plain_transfer};
pub use sszgate_exec::call::{CallRequest, OSAKA_TX_GAS_CAP, RPC_GAS_CAP};
#[cfg(test)]
pub(crate) use sszgate_exec::evm::run;
pub(crate) use sszgate_exec::evm::{
    Attempt, BlockContext, ProvenAccount, ProvenState, Run, run_until, spec_of,
};

use alloy_primitives::Bytes;
use revm::context::result::ExecutionResult;

use sszgate_exec::call::InvalidCall;

use crate::error::RpcError;

impl From<InvalidCall> for RpcError {
    fn from(e: InvalidCall) -> RpcError {
        RpcError::InvalidParams(e.0)
    }
}

/// The output of a run that succeeded; the error answered for one that reverted or halted.
pub(crate) fn call_output(result: ExecutionResult) -> Result<Bytes, RpcError> {
    match result {
        ExecutionResult::Success { output, .. } => Ok(output.into_data()),
        ExecutionResult::Revert { output, .. } => Err(RpcError::Reverted(output)),
        ExecutionResult::Halt { reason, .. } => Err(RpcError::Halted(format!("{reason:?}"))),
    }
}
