//! colibri.stateless SSZ proofs (`shared/specs/colibri-proofs.md`): the `C4Request` a prover
//! sends, decoded into typed values and encoded back byte for byte, and a verifier that checks
//! one against the sync-committee keys it trusts and answers with the JSON-RPC result.
//!
//! Modules: `ssz` (the container and union macros), `types` (the wire format), `error`,
//! `trust` (keys per period and the sync data that adds them), `header` (a data header tied to
//! a signature), `multiproof` (SSZ multiproofs), `payload_root` (an execution payload's SSZ
//! root, hashed directly), `params` (request parameters), `tags` (what a block tag may mean:
//! the clock, `latest`'s freshness, `finalized`), `render` (JSON), and one module per method
//! family: `blocks`, `txs`,
//! `receipts` (colibri's `LogsProof` too), `logs` (sszgate's `LogsRangeProof`, with `filter`),
//! `accounts`, `call`; `verify` dispatches. `prover` builds proofs from an
//! execution RPC and a Beacon API, and serves them (`prover::endpoint`);
//! `remote` verifies a prover's proofs as `sszgate rpc --prover` does. `prover` and `remote`
//! are the `net` feature (on by default); without it the crate is the verification core the
//! embeddable verifiers build: no I/O, no async runtime.
//!
//! Where sszgate deliberately differs from colibri (the spec's §15) is said in the module that
//! makes the difference. The execution side (Patricia walk, accounts, the fork table, the EVM
//! run) is `sszgate-exec`'s, shared with the local verifier.

pub mod accounts;
pub mod blocks;
#[cfg(feature = "call")]
pub mod call;
pub mod error;
pub mod filter;
pub mod header;
pub mod logs;
pub mod multiproof;
pub mod params;
pub mod payload_root;
#[cfg(feature = "net")]
pub mod prover;
pub mod receipts;
#[cfg(feature = "net")]
pub mod remote;
pub mod render;
pub mod ssz;
pub mod tags;
pub mod trust;
pub mod txs;
pub mod types;
pub mod verify;

pub use error::{Check, ProofError};
/// Patricia proofs: `sszgate-exec`'s walk, the one both verifiers use.
pub use sszgate_exec::patricia;
pub use trust::TrustedState;
pub use types::C4Request;
pub use verify::{decode, verify};
