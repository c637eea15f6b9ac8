//! sszgate as a drop-in for rpc-snooper (ethPandaOps' Engine API snooping proxy): its
//! command line (`cli`), its management API on the proxy port and on `--api-port` (`api`),
//! its WebSocket module protocol (`modules`) and its per-call log lines (`log`), all over
//! sszgate's own relay, recorder and pause (the gateway's [`sszgate_gateway::Front`]).
//!
//! Not here: relaying, recording, verifying (`sszgate-gateway`, `sszgate-record`); starting
//! the process (the binary's `snooper` command).

pub mod api;
pub mod cli;
pub mod front;
pub mod jq;
pub mod log;
pub mod modules;
pub mod pretty;
#[cfg(test)]
mod testing;
pub mod xatu;

pub use cli::{Action, ApiSettings, CliError, LogSettings, SnooperCli, parse};
pub use front::{SnooperFront, serve_api};
