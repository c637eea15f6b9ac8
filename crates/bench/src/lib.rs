//! Engine API messages built from real mainnet data, and the benchmark tools of sszgate.
//!
//! - [`fixtures`]: readers of real beacon blocks and blob transactions (the repository's
//!   `testdata/`, or the larger shared data set) and builders that turn them into Engine API
//!   messages: newPayload per fork, getPayload results with 0..72 real blobs (cell proofs for
//!   Osaka), getBlobs results. Messages built here are "derived from mainnet data", not captures.
//! - [`harness`]: an interleaving measurement harness (medians and spread, side by side).
//!
//! The benchmarks themselves are in `benches/`; not here: any network code.

pub mod fixtures;
pub mod harness;
