//! Verified `eth_*` JSON-RPC: each answer of an untrusted execution RPC checked against an
//! execution block anchored in a verified beacon header before it is returned.
//!
//! The trust comes from an [`AnchorSource`] (the light client, through an adapter; or
//! [`FixedAnchors`] in tests): it names the execution block number and hash of a block it
//! verified. Everything else — headers, proofs, transactions, receipts — comes from the
//! untrusted [`Upstream`] and is checked against an anchored hash before it is used
//! ([`Verifier`]). [`serve`] puts a JSON-RPC server in front of it.
//!
//! Modules: `anchors` (the trust input), `backend` (what the server asks for answers: the
//! [`Answerer`] trait, extra POST [`Route`]s), `blobs` (the chain's fork table: EVM revision and blob parameters by time), `upstream` (the untrusted execution client), `blocks` (headers
//! and bodies checked against an anchor; beacon blocks fetched and decoded with sszgate-light's
//! Beacon API client and typed blocks), `state` (EIP-1186 proofs), `receipts` (receipts and
//! logs), `render` (standard JSON-RPC shapes from verified data), `call` (`eth_call` in revm over
//! proven state), `verifier` (the methods),
//! `server` (HTTP, batches, metrics), `error`, `colibri` (comparing an answer with colibri's
//! rendering of it).

mod anchors;
mod backend;
mod blocks;
mod call;
pub mod colibri;
mod error;
mod params;
mod receipts;
mod render;
mod server;
mod state;
mod upstream;
mod verifier;

pub use anchors::{AnchorSource, FixedAnchors, LightAnchors};
pub use backend::{Answerer, BoxFuture, Route, RouteAnswer};
pub use call::{CallRequest, OSAKA_TX_GAS_CAP, RPC_GAS_CAP, estimate_cap};
pub use error::{AnchorError, Check, Mismatch, RpcError, UpstreamError};
pub use server::{
    BeaconSource, Config, Metrics, Routes, Server, local_verifier, serve, serve_with,
};
pub use sszgate_exec::{BpoForks, ForkSchedule, parse_bpo};
pub use sszgate_light::{Anchor, BlockRef, Trust};
pub use sszgate_serve::{Budget, BudgetLimits, BudgetSpent};
pub use upstream::Upstream;
pub use verifier::{Limits, METHODS, Verifier};
