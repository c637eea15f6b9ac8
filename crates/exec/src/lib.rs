//! Execution-layer evidence checked without I/O, shared by the local verifier (`sszgate-rpc`)
//! and the proof verifier (`sszgate-proof`): the one Merkle-Patricia walk (`patricia`),
//! accounts and slots proven by it (`account`), the chain's fork table by timestamp
//! (`forks`), the `eth_call` request and EVM configuration (`call`), and the call run in revm
//! over proven state only (`evm`); `parallel` splits per-transaction work over the cores.
//!
//! `call` and `evm` are the `evm` feature (on by default).
//!
//! Not here: anything that fetches (proofs, code, headers), anything asynchronous, and the
//! consensus side (headers and signatures live in `sszgate-light`).

pub mod account;
#[cfg(feature = "evm")]
pub mod call;
#[cfg(feature = "evm")]
pub mod evm;
pub mod forks;
pub mod parallel;
pub mod patricia;

#[cfg(feature = "evm")]
pub use call::{
    CallRequest, InvalidCall, OSAKA_TX_GAS_CAP, RPC_GAS_CAP, account_read, call_gas, delegate_of,
    eth_call_cfg, tx_env,
};
#[cfg(feature = "evm")]
pub use evm::{
    Attempt, BlockContext, Invalid, Needs, ProvenAccount, ProvenState, Run, run, run_until, spec_of,
};
pub use forks::{BpoForks, ForkSchedule, parse_bpo};
pub use parallel::map_on_cores;
