//! The blob load of the end-to-end bench: blob transactions of real mainnet blobs (the drive
//! crate's `Load`, six blobs each, from the second dev key), a batch of one of the chosen
//! counts after each new head, in turn, once the previous batch is in a block; sent to both
//! ELs so the follower's pool holds the blobs its CL asks for.
//!
//! Not here: which block got how many blobs (read from the beacon blocks afterwards).

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use serde_json::json;
use sszgate_drive::{EthRpc, Load, LoadShape, Senders, load::MAX_BLOBS_PER_TX};
use sszgate_fixtures::BlobItem;

/// Where the load goes and what it carries.
pub(crate) struct BlobLoad {
    /// The proposer's EL (public JSON-RPC).
    pub(crate) el: String,
    /// The follower's EL, sent the same transactions when given.
    pub(crate) el2: Option<String>,
    /// The beacon API, whose head paces the batches.
    pub(crate) beacon: String,
    /// Blobs per batch, in turn (multiples of six; 0 leaves a block without).
    pub(crate) counts: Vec<usize>,
    /// The real blobs the transactions carry.
    pub(crate) blobs: Vec<BlobItem>,
}

/// How long a batch may wait for its block before the next is sent anyway.
const INCLUSION_LIMIT: Duration = Duration::from_secs(60);

impl BlobLoad {
    /// Sends batches until `stop` is set; the number of batches sent, or the first error.
    pub(crate) async fn run(self, stop: Arc<AtomicBool>) -> Result<usize, String> {
        let (eth, eth2) = (EthRpc::new(&self.el), self.el2.as_deref().map(EthRpc::new));
        let mut sent = 0;
        for count in self.counts.iter().cycle() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            self.next_head(&stop).await;
            if *count == 0 {
                continue;
            }
            let shape = LoadShape {
                transfers: 0,
                blob_txs: count.div_ceil(MAX_BLOBS_PER_TX),
                blobs_per_tx: MAX_BLOBS_PER_TX,
            };
            let mut load = Load::new(
                &eth,
                sszgate_engine::Fork::Osaka,
                shape,
                self.blobs.clone(),
                Senders::dev(),
            )
            .await
            .map_err(|e| format!("the blob load: {e}"))?;
            let txs = load.next_block();
            for tx in &txs {
                eth.call("eth_sendRawTransaction", json!([tx.raw]))
                    .await
                    .map_err(|e| format!("sending blob transaction {}: {e}", tx.hash))?;
            }
            if let Some(eth2) = &eth2 {
                for tx in &txs {
                    // It may have it by gossip already.
                    let _ = eth2.call("eth_sendRawTransaction", json!([tx.raw])).await;
                }
            }
            sent += 1;
            included(&eth, Senders::dev().addresses().1, &stop).await;
        }
        Ok(sent)
    }

    /// Returns once the beacon head moves past where it is now (or `stop` is set).
    async fn next_head(&self, stop: &AtomicBool) {
        let start = super::head_slot(&self.beacon).await;
        while !stop.load(Ordering::Relaxed) && super::head_slot(&self.beacon).await <= start {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// Returns once `sender` has nothing pending (its batch is in a block), `stop` is set, or
/// [`INCLUSION_LIMIT`] has passed.
async fn included(eth: &EthRpc, sender: alloy_primitives::Address, stop: &AtomicBool) {
    let started = std::time::Instant::now();
    while !stop.load(Ordering::Relaxed) && started.elapsed() < INCLUSION_LIMIT {
        let nonce =
            |tag: &'static str| eth.quantity("eth_getTransactionCount", json!([sender, tag]));
        if let (Ok(pending), Ok(latest)) = (nonce("pending").await, nonce("latest").await)
            && pending == latest
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
