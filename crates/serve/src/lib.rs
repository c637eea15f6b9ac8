//! Serving HTTP under limits, one implementation for every server of sszgate (the gateway's
//! relay and control endpoints, the verified JSON-RPC server, the prover endpoint):
//! `accept` (accept loops that back off from transient errors and end on any other), `conn`
//! (the limits, the hyper builder with a timer and a header timeout, the in-flight cap, a
//! head's bytes), `body` (a body refused by its length, or read bounded in size and time),
//! `budget` (a request's upstream budget of fetches and bytes), `pool` (answering on a
//! bounded set of blocking threads, off the async workers).
//!
//! Not here: what a request is answered with, or how a refusal is shaped for its caller.

mod accept;
mod body;
mod budget;
mod conn;
mod pool;

pub use accept::{AcceptErrorCounter, Acceptor, transient_kind};
pub use body::{BodyError, check_declared, declared_length, read_body, read_bounded};
pub use budget::{Budget, BudgetLimits, BudgetSpent};
pub use conn::{
    HARD_HEAD_FACTOR, InFlight, Limits, MIN_H2_HEADER_LIST, MIN_HTTP1_BUFFER, head_bytes,
};
pub use pool::{DEFAULT_OFFLOAD_THREADS, Offload, OffloadError};
