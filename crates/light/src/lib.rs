//! A beacon-chain light client (the consensus specs' sync protocol): what a verified beacon
//! header is, and which execution blocks it anchors.
//!
//! The one type other crates build on is [`Anchor`]: an execution block whose number and hash
//! were proven from a beacon header signed by the sync committee. `sszgate-rpc` checks every
//! execution answer against an anchor; it never trusts a block hash from anywhere else.
//!
//! Modules: `spec` (chain parameters), `types` and `block` (SSZ containers), `json` (the
//! Beacon API's JSON forms of the light-client containers), `merkle`, `bls` (the committee's
//! signature), `participation` (which aggregates may anchor), `store` (the sync protocol),
//! `persist` (the store on disk), `anchor` (execution blocks from verified headers), `api`
//! (the Beacon API), `client` (the facade that ties them together), `resolve` (block
//! references to anchors). `api`, `client` and `resolve` fetch: they are the `http` feature
//! (on by default); without it the crate is the verification core of the embeddable verifiers,
//! free of tokio and hyper.
//!
//! ```no_run
//! # async fn run() -> Result<(), sszgate_light::LightError> {
//! use std::time::Duration;
//! use sszgate_light::client::fetch_chain_spec;
//! use sszgate_light::{BlockRef, HttpBeaconApi, LightClient};
//!
//! let api = HttpBeaconApi::new("http://127.0.0.1:5052", Duration::from_secs(10))?;
//! let spec = fetch_chain_spec(&api).await?;
//! let checkpoint = "0xb8758d4bd976e1b33e62937ed31a709dba0a855869641581bef3d2a48b527690".parse().unwrap();
//! let mut client = LightClient::open(api, spec, "light-client.json".into(), checkpoint).await?;
//! client.sync().await?;
//! let anchor = client.anchor(BlockRef::Latest).await?;
//! println!("block {} is {} ({:?})", anchor.number, anchor.hash, anchor.trust);
//! # Ok(())
//! # }
//! ```

pub mod anchor;
#[cfg(feature = "http")]
pub mod api;
pub mod block;
pub mod bls;
#[cfg(feature = "http")]
pub mod client;
pub mod error;
pub mod json;
pub mod merkle;
pub mod participation;
pub mod persist;
#[cfg(feature = "http")]
pub mod resolve;
pub mod spec;
pub mod store;
pub mod types;

use alloy_primitives::B256;
#[cfg(feature = "http")]
pub use api::{BeaconApi, HttpBeaconApi, LcAnswer, RecordedBeaconApi};
#[cfg(feature = "http")]
pub use client::LightClient;
pub use error::LightError;
pub use participation::ParticipationPolicy;
pub use spec::ChainSpec;

/// An execution block proven from a verified beacon header: its number and hash came out of
/// the header's `ExecutionPayload` through a checked Merkle branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    /// Slot of the beacon block carrying the execution payload.
    pub slot: u64,
    /// Root of that beacon block (`hash_tree_root(BeaconBlockHeader)`).
    pub beacon_root: B256,
    /// Execution block number.
    pub number: u64,
    /// Execution block hash.
    pub hash: B256,
    /// How the beacon header was verified.
    pub trust: Trust,
}

/// How a beacon header came to be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// Finalized, per a verified finality update (or the checkpoint itself).
    Finalized,
    /// Signed by at least 2/3 of the sync committee (an attested header or a child's aggregate).
    Supermajority,
    /// Signed by the sync committee with less than 2/3 participation, admitted only by a
    /// lowered [`ParticipationPolicy`].
    Signed,
}

/// Which execution block a caller asks to anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockRef {
    /// The newest block the light client has a signed header for.
    Latest,
    /// The newest block with a supermajority-signed header.
    Safe,
    /// The newest finalized block.
    Finalized,
    /// An execution block number.
    Number(u64),
    /// An execution block hash.
    Hash(B256),
}
