//! The benchmarks of sszgate and their measurement harness.
//!
//! - [`harness`]: an interleaving measurement harness (medians and spread, side by side).
//! - [`proxy`]: the proxy benchmark (a fake EL serving real-data answers, called directly and
//!   through the relay, interleaved).
//!
//! The codec benchmark is `benches/codec.rs`. Messages come from `sszgate-fixtures`.

pub mod harness;
pub mod proxy;
