//! The consensus-client side of sszgate: drive an execution client's Engine API as a CL
//! would, over JSON-RPC or REST-SSZ, with real transaction load, and run the local devnet it
//! drives.
//!
//! - [`client`]: sszgate's Engine API client (`sszgate-client`) with every exchange recorded
//!   (source `driver`);
//! - [`driver`]: the slot loop and the checks of every answer;
//! - [`load`]: transfers and blob transactions (real mainnet blobs) from funded dev keys;
//! - [`devnet`]: a geth on a fresh post-merge chain with sszgate's proxy in front, in one
//!   directory, started and stopped by process id; driven by the built-in driver or by a real
//!   consensus client ([`lodestar`]) and its followers, with [`blob_feed`] keeping real blobs
//!   in the pools.
//!
//! The HTTP relay itself lives in `sszgate-gateway`; the message codecs in `sszgate-engine`.

pub mod blob_feed;
pub mod client;
pub mod devnet;
pub mod driver;
pub mod load;
pub mod lodestar;

pub use client::{EngineClient, EngineTransport, engine_client};
pub use driver::{BlockReport, DriveConfig, Driver, Head};
pub use load::{EthRpc, Load, LoadShape, Senders};

/// What can stop a drive or a devnet command; every variant names the call or the step.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// No answer: refused, reset or timed out.
    #[error("{method} to {url}: {problem}")]
    Unreachable {
        /// The call.
        method: String,
        /// Where it went.
        url: String,
        /// What happened.
        problem: String,
    },
    /// An HTTP status where an answer was expected.
    #[error("{method}: HTTP {status}: {body}")]
    Http {
        /// The call.
        method: String,
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// A JSON-RPC error (or a REST problem, as its JSON-RPC code).
    #[error("{method}: error {code}: {message}")]
    Rpc {
        /// The call.
        method: String,
        /// The JSON-RPC code.
        code: i64,
        /// The message.
        message: String,
    },
    /// An answer that arrived but says something wrong.
    #[error("{method}: {problem}")]
    Answer {
        /// The call.
        method: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The load could not be placed in the EL's pool.
    #[error("load: {0}")]
    Load(String),
    /// A setting that cannot work.
    #[error("{0}")]
    Config(String),
    /// A devnet step failed.
    #[error("devnet: {0}")]
    Devnet(String),
}
