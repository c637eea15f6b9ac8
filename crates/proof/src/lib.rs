//! colibri.stateless SSZ proofs (`shared/specs/colibri-proofs.md`): the `C4Request` a prover
//! sends, decoded into typed values and encoded back byte for byte, and a verifier that checks
//! one against the sync-committee keys it trusts and answers with the JSON-RPC result.
//!
//! Modules: `ssz` (the container and union macros), `types` (the wire format).
//!
//! Where sszgate deliberately differs from colibri (the spec's §15) is said in the module that
//! makes the difference.

pub mod ssz;
pub mod types;

pub use types::C4Request;
