//! The blob load of a devnet whose blocks a real consensus client proposes: at every new head
//! the proposer's EL pool is topped up with real mainnet blobs (the data set's, with their
//! cell proofs, as [`crate::load`] builds them) until it holds a chosen number of blobs, so
//! the next block the CL has built can carry them all. Every transaction goes to each EL of
//! the devnet, so a follower's EL answers `engine_getBlobsV2` from its own pool.
//!
//! geth checks each transaction's 768 cell proofs as it takes it: on a loaded machine a few
//! seconds a transaction, so sent freely a load of 48 blobs spreads over many blocks of 6 to
//! 18. With a proxy on the proposer's link the feed therefore waits until its last
//! transactions are in a block, then holds blocks back (a rule failing `getPayloadV5` on the
//! proxy, ending by itself after [`HOLD_CAP`]) while the pool fills, and two slots more so the
//! next payload is built with all of them.
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

/// The longest a hold lasts, even when the feed dies in it (the proxy ends the rule).
pub const HOLD_CAP: Duration = Duration::from_secs(120);

/// Blocks held back on the proposer's proxy while the pool fills.
#[derive(Clone, Debug)]
pub struct Hold {
    /// The proxy's metrics and control address (`http://127.0.0.1:PORT`).
    pub control_url: String,
    /// The chain's slot time.
    pub slot: Duration,
}

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
    hold: Option<Hold>,
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
            hold: None,
        };
        feed.base = feed.nonce("pending").await?;
        Ok(feed)
    }

    /// Holds blocks back on the proposer's proxy while each load enters the pool: one block
    /// of the whole load at a time.
    pub fn holding(mut self, hold: Hold) -> BlobFeed {
        self.hold = Some(hold);
        self
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
        let wanted = match (&self.hold, pending) {
            (Some(_), 0) => self.target_txs,
            (Some(_), _) => 0,
            (None, _) => self.target_txs.saturating_sub(pending),
        };
        let txs: Vec<String> = (0..wanted)
            .map(|_| {
                let tx = self.load.next_block().pop();
                tx.expect("a shape of one transaction").raw.to_string()
            })
            .collect();
        if !txs.is_empty() {
            match self.hold.clone() {
                Some(hold) => self.send_held(&hold, &txs).await?,
                None => self.send(&txs).await?,
            }
        }
        Ok(Some(TopUp {
            head,
            head_blobs: blob_gas / BLOB_GAS_PER_BLOB,
            pending,
            sent: wanted,
        }))
    }

    /// Sends `txs` to the proposer's EL, which must take each (a gap would hold back every
    /// later nonce), then to the others, which may have them already by gossip.
    async fn send(&mut self, txs: &[String]) -> Result<(), DriveError> {
        for raw in txs {
            let params = json!([raw]);
            self.els[0]
                .call("eth_sendRawTransaction", params.clone())
                .await?;
            self.sent += 1;
        }
        for el in &self.els[1..] {
            for raw in txs {
                let _ = el.call("eth_sendRawTransaction", json!([raw])).await;
            }
        }
        Ok(())
    }

    /// [`BlobFeed::send`] with blocks held back on the proxy until the pool holds every one
    /// of `txs`, and two slots more.
    async fn send_held(&mut self, hold: &Hold, txs: &[String]) -> Result<(), DriveError> {
        use crate::devnet::http_json;
        let rules = format!("{}/_sszgate/rules", hold.control_url);
        let rule = json!({
            "method": "engine_getPayloadV5",
            "action": {"kind": "rpc_error", "code": -32000, "message": "sszgate-devnet-feed-filling-the-blob-pool"},
            "seconds": HOLD_CAP.as_secs(),
        });
        let control = |e: String| DriveError::Devnet(format!("blob feed, {rules}: {e}"));
        let added = http_json(http::Method::POST, &rules, Some(&rule))
            .await
            .map_err(control)?;
        let sent = self.send(txs).await;
        if sent.is_ok() {
            tokio::time::sleep(2 * hold.slot).await;
        }
        let id = added["id"].as_u64().unwrap_or_default();
        let removed = http_json(http::Method::DELETE, &format!("{rules}/{id}"), None).await;
        sent?;
        removed.map(|_| ()).map_err(control)
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
                    let hold = self.hold.take();
                    self = BlobFeed::new(&urls, blobs, self.blobs_per_block).await?;
                    self.hold = hold;
                }
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
