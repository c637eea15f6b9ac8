//! The Engine API model of sszgate.
//!
//! Everything that knows what an Engine API message *is* lives here, and nothing that moves
//! bytes over a network:
//!
//! - [`Fork`]: the forks and their `Eth-Execution-Version` names;
//! - [`method`]: the one table mapping each JSON-RPC `engine_*Vn` method to its REST-SSZ
//!   resource, forks and messages ([`METHODS`]), and REST route parsing;
//! - [`Message`]: typed messages with their JSON-RPC codec (alloy's serde types) and their
//!   REST-SSZ codec (alloy's `ssz_engine_types`, guarded by the schema walk of [`ssz`]);
//! - [`translate`]: JSON-RPC request/result/error ⇄ REST request/response/problem;
//! - [`coding`]: HTTP content codings, every decode bounded in its decoded size;
//! - [`Problem`]: the spec's error table, the only place JSON-RPC codes meet problem types;
//! - [`blob_answer`]: a blob-carrying answer read once, its blobs decoded, validated or
//!   skipped as a [`blob_answer::BlobMode`] says.
//!
//! Specs followed: ethereum/execution-apis `src/engine/refactor.md` and `refactor-ssz.md` at
//! d39e9a27 (REST-SSZ, PR #793), and the JSON-RPC Engine API `src/engine/{paris..amsterdam}.md`.
//!
//! ```
//! use sszgate_engine::{Fork, Message, MessageKind, method};
//!
//! let m = method::by_name("engine_forkchoiceUpdatedV3").unwrap();
//! let params = br#"[{"headBlockHash":"0x0101010101010101010101010101010101010101010101010101010101010101",
//!   "safeBlockHash":"0x0202020202020202020202020202020202020202020202020202020202020202",
//!   "finalizedBlockHash":"0x0303030303030303030303030303030303030303030303030303030303030303"}, null]"#;
//! let msg = Message::from_json(m, Fork::Cancun, MessageKind::Forkchoice, params).unwrap();
//! let ssz = msg.to_ssz(Fork::Cancun).unwrap();
//! assert_eq!(ssz.len(), 96 + 4); // ForkchoiceState + offset of the absent attributes
//! ```

pub mod blob_answer;
mod bulk;
pub mod capabilities;
pub mod coding;
pub mod error;
mod fixed_json;
pub mod fork;
pub mod json;
pub mod message;
pub mod method;
pub mod scan;
pub mod ssz;
pub mod translate;
pub mod txs;

pub use capabilities::CapabilitiesDocument;
pub use error::{Error, Problem, Result};
pub use fork::Fork;
pub use message::Message;
pub use method::{METHODS, MessageKind, MethodSpec, Resource};

// Re-exported so users of the model name the same types.
pub use alloy_rpc_types_engine as alloy_engine;
