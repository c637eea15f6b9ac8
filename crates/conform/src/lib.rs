//! `sszgate conform`: a REST-SSZ Engine API conformance suite, both sides of the link.
//!
//! - [`el`]: the checks of an execution client's REST-SSZ server — discovery, a real chain
//!   step and every resource in every claimed fork, the fork header, the error contract,
//!   authentication, the same calls over JSON-RPC, and the transports;
//! - [`cl`]: a checking bridge between a consensus client and a working EL, judging every
//!   request the CL sends;
//! - [`catalogue`]: every check with the spec sentence it enforces; [`report`]: verdicts
//!   and their Markdown and JSON forms;
//! - [`exact`]: bytes against the spec's container (the first differing byte and its field
//!   path), answers of two transports field by field; [`probe`]: requests a check can break
//!   in one place, answers kept whole.
//!
//! Not here: the containers, codecs and the error table (`sszgate-engine`), the JWT and the
//! request builder (`sszgate-client`), chain steps (`sszgate-drive`), the CLI (`bin/sszgate`).

pub mod catalogue;
pub mod cl;
pub mod el;
pub mod exact;
pub mod probe;
pub mod report;

pub use el::{ElConfig, run as run_el};
pub use report::{Report, Verdict};
