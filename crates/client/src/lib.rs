//! The Engine API client of sszgate: everything it takes to *call* an execution client's
//! Engine API, over JSON-RPC or REST-SSZ, in one place for the bridge's upstream side and for
//! `sszgate drive`.
//!
//! - [`jwt`]: the shared-secret JWT, signed per call and checked for callers;
//! - [`request`]: the HTTP request of a call in either transport, with the headers the spec
//!   asks for and the caller's identity;
//! - [`answer`]: an answer read whole but bounded, and without its content coding;
//! - [`identity`]: sszgate's own `ClientVersionV1`, and reading an EL's;
//! - [`EngineClient`]: typed calls (`forkchoice_updated`, `get_payload`, `new_payload`,
//!   `get_blobs`, or any [`sszgate_engine::Message`]) over either transport, each exchange
//!   timed and handed to an optional observer.
//!
//! Not here: serving the Engine API (`sszgate-gateway`), recording (`sszgate-record`: a
//! caller records what its observer is handed), what a message is and how a call translates
//! between transports (`sszgate-engine`).

pub mod answer;
mod engine;
pub mod identity;
pub mod jwt;
pub mod request;

pub use answer::DEFAULT_MAX_ANSWER_BYTES;
pub use engine::{ClientError, EngineClient, EngineTransport, Exchange, Observer, Reply};
pub use jwt::JwtSecret;
