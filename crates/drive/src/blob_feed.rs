//! The blob load of a devnet whose blocks a real consensus client proposes: at every new head
//! the proposer's EL pool is topped up with real mainnet blobs (the data set's, with their
//! cell proofs, as [`crate::load`] builds them) until it holds a chosen number of blobs, so
//! the next block the CL has built can carry them all. Every transaction goes to each EL of
//! the devnet, so a follower's EL answers `engine_getBlobsV2` from its own pool.
//!
//! Not here: building and signing the transactions ([`crate::load`]), starting the process
//! that runs this loop ([`crate::devnet`]).

use std::time::Duration;

use serde_json::json;
use sszgate_engine::Fork;
use sszgate_fixtures::BlobItem;

use crate::{
    DriveError,
    load::{EthRpc, Load, LoadShape, MAX_BLOBS_PER_TX, Senders},
};

/// Blobs in one EIP-4844 blob's worth of blob gas.
const BLOB_GAS_PER_BLOB: u64 = 131_072;

/// How often the head is polled.
const POLL: Duration = Duration::from_millis(250);

/// What one top-up did, for the progress line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopUp {
    /// The head block number.
    pub head: u64,
    /// The blobs the head block carries.
    pub head_blobs: u64,
    /// Blob transactions of the load still pending before the top-up.
    pub pending: u64,
    /// Blob transactions sent now.
    pub sent: u64,
}

impl std::fmt::Display for TopUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "block {}: {} blobs; {} blob transactions pending, {} sent ({} blobs)",
            self.head,
            self.head_blobs,
            self.pending,
            self.sent,
            self.sent * MAX_BLOBS_PER_TX as u64
        )
    }
}

/// Keeps `blobs_per_block` blobs (in 6-blob transactions) waiting in the pool of the first EL
/// of `eth_urls`, sending each transaction to all of them.
pub struct BlobFeed {
    urls: Vec<String>,
    blobs_per_block: u32,
    els: Vec<EthRpc>,
    load: Load,
    blobs: Vec<BlobItem>,
    /// The blob sender's nonce when the load started: `base + sent` is the next one.
    base: u64,
    sent: u64,
    target_txs: u64,
    head: Option<u64>,
}

impl BlobFeed {
    /// A feed of `blobs_per_block` blobs a block (rounded up to whole 6-blob transactions)
    /// from the dev keys, on the chain of `eth_urls[0]`.
    pub async fn new(
        eth_urls: &[String],
        blobs: Vec<BlobItem>,
        blobs_per_block: u32,
    ) -> Result<BlobFeed, DriveError> {
        if eth_urls.is_empty() || blobs_per_block == 0 {
            return Err(DriveError::Config(
                "a blob feed needs an EL and at least one blob a block".into(),
            ));
        }
        let els: Vec<EthRpc> = eth_urls.iter().map(|url| EthRpc::new(url)).collect();
        let shape = LoadShape {
            transfers: 0,
            blob_txs: 1,
            blobs_per_tx: MAX_BLOBS_PER_TX,
        };
        let load = Load::new(&els[0], Fork::Osaka, shape, blobs.clone(), Senders::dev()).await?;
        let mut feed = BlobFeed {
            urls: eth_urls.to_vec(),
            blobs_per_block,
            els,
            load,
            blobs,
            base: 0,
            sent: 0,
            target_txs: u64::from(blobs_per_block).div_ceil(MAX_BLOBS_PER_TX as u64),
            head: None,
        };
        feed.base = feed.nonce("pending").await?;
        Ok(feed)
    }

    /// The blob sender's nonce at `tag` on the first EL.
    async fn nonce(&self, tag: &str) -> Result<u64, DriveError> {
        let (_, sender) = Senders::dev().addresses();
        self.els[0]
            .quantity("eth_getTransactionCount", json!([sender, tag]))
            .await
    }

    /// Tops the pool up when the head has moved since the last call (or on the first call);
    /// `None` when it has not.
    pub async fn top_up(&mut self) -> Result<Option<TopUp>, DriveError> {
        let head = self.els[0].quantity("eth_blockNumber", json!([])).await?;
        if self.head == Some(head) {
            return Ok(None);
        }
        self.head = Some(head);
        let block = self.els[0]
            .call("eth_getBlockByNumber", json!([format!("{head:#x}"), false]))
            .await?;
        let blob_gas = block["blobGasUsed"]
            .as_str()
            .and_then(|g| u64::from_str_radix(g.trim_start_matches("0x"), 16).ok())
            .unwrap_or(0);
        let included = self.nonce("latest").await?.saturating_sub(self.base);
        let pending = self.sent.saturating_sub(included);
        let wanted = self.target_txs.saturating_sub(pending);
        for _ in 0..wanted {
            let tx = self
                .load
                .next_block()
                .pop()
                .expect("a shape of one transaction");
            let raw = json!([tx.raw.to_string()]);
            // The proposer's EL must take it (a gap would hold back every later nonce);
            // another EL may have it already by gossip.
            self.els[0]
                .call("eth_sendRawTransaction", raw.clone())
                .await?;
            self.sent += 1;
            for el in &self.els[1..] {
                let _ = el.call("eth_sendRawTransaction", raw.clone()).await;
            }
        }
        Ok(Some(TopUp {
            head,
            head_blobs: blob_gas / BLOB_GAS_PER_BLOB,
            pending,
            sent: wanted,
        }))
    }

    /// Tops the pool up at every new head, for ever, writing a line per block to `progress`.
    /// A transaction the proposer's EL refuses is reported and the load starts again from the
    /// pool's nonce; an EL that stops answering ends it.
    pub async fn run(mut self, mut progress: impl FnMut(&str)) -> Result<(), DriveError> {
        loop {
            match self.top_up().await {
                Ok(Some(top_up)) => progress(&top_up.to_string()),
                Ok(None) => {}
                Err(error @ (DriveError::Unreachable { .. } | DriveError::Http { .. })) => {
                    return Err(error);
                }
                Err(error) => {
                    progress(&format!("{error}; starting again from the pool's nonce"));
                    let (urls, blobs) = (
                        std::mem::take(&mut self.urls),
                        std::mem::take(&mut self.blobs),
                    );
                    self = BlobFeed::new(&urls, blobs, self.blobs_per_block).await?;
                }
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
