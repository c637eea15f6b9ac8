//! The slot loop: what a consensus client asks of its execution client to build and import
//! one block, and what every answer must say.
//!
//! Per block: send the block's load to the EL's pool; `forkchoiceUpdated` on the head with
//! payload attributes; wait for the build; `getPayload`; `getBlobs` for the new blobs (as a CL
//! does when a block arrives with blobs); `newPayload` with the versioned hashes and requests;
//! `forkchoiceUpdated` to the new head. The built payload goes through the verifier's checks
//! (`sszgate-verify`: block hash, transactions, bundle commitments). Any answer that is wrong
//! stops the run with an error naming the call. Attributes are deterministic (timestamps step from the parent's, not from
//! the wall clock), so the same EL, genesis and load build the same chain every run.

use std::time::{Duration, Instant};

use alloy_eips::eip4895::Withdrawal;
use alloy_primitives::{Address, B256, keccak256};
use serde_json::{Value, json};
use sszgate_client::Reply;
use sszgate_engine::{
    Fork,
    alloy_engine::{ForkchoiceState, PayloadAttributes, PayloadStatus, PayloadStatusEnum},
    message::{Blobs, Forkchoice},
    method::{self, MethodSpec},
    txs::blob_versioned_hashes,
};

use crate::{
    DriveError,
    client::EngineClient,
    load::{EthRpc, Load, PreparedTx, submit},
};

/// How the driver paces and shapes the chain.
#[derive(Clone, Debug)]
pub struct DriveConfig {
    /// The fork the chain is at (picks the method versions).
    pub fork: Fork,
    /// The time given the EL to build, between `forkchoiceUpdated` and `getPayload`.
    pub build_time: Duration,
    /// Wall time per slot; blocks come no faster than this (zero: as fast as the EL goes).
    pub slot_time: Duration,
    /// Seconds between block timestamps.
    pub timestamp_step: u64,
    /// Ask `getBlobs` for the blobs of every new block.
    pub get_blobs: bool,
}

impl Default for DriveConfig {
    fn default() -> DriveConfig {
        DriveConfig {
            fork: Fork::Osaka,
            build_time: Duration::from_millis(500),
            slot_time: Duration::ZERO,
            timestamp_step: 12,
            get_blobs: true,
        }
    }
}

/// The chain head as the driver knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// Block hash.
    pub hash: B256,
    /// Block number.
    pub number: u64,
    /// Block timestamp.
    pub timestamp: u64,
}

/// One call of a block, as the driver saw it.
#[derive(Clone, Debug)]
pub struct CallTiming {
    /// The JSON-RPC method (or the one the REST resource stands for).
    pub method: &'static str,
    /// End-to-end time at the driver.
    pub elapsed: Duration,
}

/// What one block came out as.
#[derive(Clone, Debug)]
pub struct BlockReport {
    /// Block number.
    pub number: u64,
    /// Block hash.
    pub hash: B256,
    /// Parent hash.
    pub parent_hash: B256,
    /// The hashes of its transactions, in order.
    pub tx_hashes: Vec<B256>,
    /// Blobs it carries.
    pub blob_count: usize,
    /// Transactions the load sent for it that it left out.
    pub left_out: usize,
    /// Every Engine API call made for it, in order.
    pub calls: Vec<CallTiming>,
}

/// The getBlobs method a CL of `fork` calls: V2 from Osaka on (all blobs or none), V1 before.
/// (The other methods' versions follow the fork, in the client.)
fn get_blobs_method(fork: Fork) -> Result<&'static MethodSpec, DriveError> {
    if !fork.has_blobs() {
        return Err(DriveError::Config(format!(
            "the driver runs Cancun and later forks, not {fork}"
        )));
    }
    let name = if fork.has_cell_proofs() {
        "engine_getBlobsV2"
    } else {
        "engine_getBlobsV1"
    };
    Ok(method::by_name(name).expect("in the table"))
}

/// Drives one EL block after block.
pub struct Driver {
    engine: EngineClient,
    eth: EthRpc,
    load: Option<Load>,
    config: DriveConfig,
    get_blobs: &'static MethodSpec,
    head: Head,
    last_slot: Option<Instant>,
    /// Whether the EL shows pending transactions (see [`submit`]).
    pool_visible: bool,
}

impl Driver {
    /// A driver for `engine`, reading the head from `eth` and sending `load` (if any).
    pub async fn start(
        engine: EngineClient,
        eth: EthRpc,
        load: Option<Load>,
        config: DriveConfig,
    ) -> Result<Driver, DriveError> {
        let get_blobs = get_blobs_method(config.fork)?;
        let head = read_head(&eth).await?;
        Ok(Driver {
            engine,
            eth,
            load,
            config,
            get_blobs,
            head,
            last_slot: None,
            pool_visible: true,
        })
    }

    /// The current head.
    pub fn head(&self) -> Head {
        self.head
    }

    /// Builds, checks and imports the next block.
    pub async fn step(&mut self) -> Result<BlockReport, DriveError> {
        if let Some(last) = self.last_slot {
            let next = last + self.config.slot_time;
            tokio::time::sleep_until(next.into()).await;
        }
        self.last_slot = Some(Instant::now());
        let fork = self.config.fork;
        let head = self.head;
        let number = head.number + 1;
        let timestamp = head.timestamp + self.config.timestamp_step;
        let mut calls = Vec::new();

        let sent: Vec<PreparedTx> = match &mut self.load {
            Some(load) => load.next_block(),
            None => Vec::new(),
        };
        submit(&self.eth, &sent, &mut self.pool_visible).await?;

        let (attributes, beacon_root) = attributes(fork, number, timestamp);
        let fcu = self
            .engine
            .forkchoice_updated(fork, forkchoice(head.hash, Some(attributes)))
            .await?;
        let fcu = timed(fcu, &mut calls);
        expect_valid(calls_last(&calls), &fcu.payload_status)?;
        let payload_id = fcu.payload_id.ok_or_else(|| DriveError::Answer {
            method: calls_last(&calls).to_string(),
            problem: format!("no payload id for a call with attributes: {fcu:?}"),
        })?;

        tokio::time::sleep(self.config.build_time).await;
        let built = timed(self.engine.get_payload(fork, payload_id).await?, &mut calls);
        let get_payload = calls_last(&calls);
        let wrong = |problem: String| DriveError::Answer {
            method: get_payload.to_string(),
            problem,
        };
        // The verifier's checks of a built payload: block hash (with the root the attributes
        // carried), transactions, limits, and the bundle's commitments against the payload's
        // blob transactions.
        sszgate_verify::payload::check_built(&built, Some(beacon_root))
            .and_then(|_| sszgate_verify::blobs::check_bundle(None, &built))
            .map_err(|failure| wrong(failure.to_string()))?;
        let payload = built.payload_v1();
        let (parent_hash, block_hash) = (payload.parent_hash, payload.block_hash);
        if parent_hash != head.hash {
            return Err(wrong(format!(
                "the payload builds on {parent_hash}, not on the head {}",
                head.hash
            )));
        }
        if (payload.block_number, payload.timestamp) != (number, timestamp) {
            return Err(wrong(format!(
                "block number {} at time {}, expected {number} at {timestamp}",
                payload.block_number, payload.timestamp
            )));
        }
        let tx_hashes: Vec<B256> = payload.transactions.iter().map(keccak256).collect();
        let versioned_hashes = blob_versioned_hashes(&payload.transactions)
            .map_err(|e| wrong(format!("a transaction of the payload: {e}")))?;
        let left_out = sent.iter().filter(|t| !tx_hashes.contains(&t.hash)).count();

        if self.config.get_blobs && !versioned_hashes.is_empty() {
            let asked = versioned_hashes.len();
            let blobs = self
                .engine
                .get_blobs(self.get_blobs, fork, versioned_hashes.clone())
                .await?;
            let blobs = timed(blobs, &mut calls);
            check_blobs(self.get_blobs, &blobs, asked)?;
        }

        let blob_count = versioned_hashes.len();
        let import = built
            .to_new_payload(versioned_hashes, Some(beacon_root))
            .ok_or_else(|| wrong("a payload with no newPayload form".into()))?;
        let status = timed(self.engine.new_payload(fork, import).await?, &mut calls);
        expect_valid(calls_last(&calls), &status)?;

        let fcu = self
            .engine
            .forkchoice_updated(fork, forkchoice(block_hash, None))
            .await?;
        let fcu = timed(fcu, &mut calls);
        expect_valid(calls_last(&calls), &fcu.payload_status)?;

        self.head = Head {
            hash: block_hash,
            number,
            timestamp,
        };
        Ok(BlockReport {
            number,
            hash: block_hash,
            parent_hash,
            tx_hashes,
            blob_count,
            left_out,
            calls,
        })
    }
}

/// The head as the EL's public JSON-RPC reports it.
pub async fn read_head(eth: &EthRpc) -> Result<Head, DriveError> {
    let block = eth
        .call("eth_getBlockByNumber", json!(["latest", false]))
        .await?;
    let wrong = |problem: String| DriveError::Answer {
        method: "eth_getBlockByNumber".into(),
        problem,
    };
    Ok(Head {
        hash: hash_field(&block, "hash").map_err(&wrong)?,
        number: quantity(&block["number"]).ok_or_else(|| wrong(format!("no number: {block}")))?,
        timestamp: quantity(&block["timestamp"])
            .ok_or_else(|| wrong(format!("no timestamp: {block}")))?,
    })
}

/// Payload attributes for block `number` at `timestamp`, and the parent beacon block root they
/// carry: prevRandao and the root are hashes of the number; one withdrawal per block.
pub fn attributes(fork: Fork, number: u64, timestamp: u64) -> (PayloadAttributes, B256) {
    let beacon_root = keccak256(format!("sszgate beacon root {number}"));
    let attributes = PayloadAttributes {
        timestamp,
        prev_randao: keccak256(format!("sszgate randao {number}")),
        suggested_fee_recipient: Address::repeat_byte(0xfe),
        withdrawals: Some(vec![Withdrawal {
            index: number - 1,
            validator_index: number % 64,
            address: Address::repeat_byte(0x77),
            amount: 1_000_000_000,
        }]),
        parent_beacon_block_root: fork.has_blobs().then_some(beacon_root),
        slot_number: None,
        target_gas_limit: None,
    };
    (attributes, beacon_root)
}

/// forkchoiceUpdated params: `head` as head, safe and finalized, and the attributes (if any).
pub fn forkchoice(head: B256, attributes: Option<PayloadAttributes>) -> Forkchoice {
    Forkchoice {
        state: ForkchoiceState {
            head_block_hash: head,
            safe_block_hash: head,
            finalized_block_hash: head,
        },
        attributes,
        custody_columns: None,
    }
}

/// The answer of a reply, its method and time noted in `calls`.
fn timed<T>(reply: Reply<T>, calls: &mut Vec<CallTiming>) -> T {
    calls.push(CallTiming {
        method: reply.method,
        elapsed: reply.elapsed,
    });
    reply.value
}

/// The method of the last call made.
fn calls_last(calls: &[CallTiming]) -> &'static str {
    calls.last().map_or("engine API", |c| c.method)
}

fn expect_valid(method: &str, status: &PayloadStatus) -> Result<(), DriveError> {
    match status.status {
        PayloadStatusEnum::Valid => Ok(()),
        _ => Err(DriveError::Answer {
            method: method.to_string(),
            problem: format!("status is not VALID: {status:?}"),
        }),
    }
}

fn hash_field(object: &Value, field: &str) -> Result<B256, String> {
    object[field]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no 32-byte {field} in the answer"))
}

fn quantity(value: &Value) -> Option<u64> {
    u64::from_str_radix(value.as_str()?.strip_prefix("0x")?, 16).ok()
}

/// A getBlobs answer must hold every blob asked for (the EL built the block that has them).
fn check_blobs(method: &MethodSpec, blobs: &Blobs, asked: usize) -> Result<(), DriveError> {
    let (answers, missing) = match blobs {
        Blobs::V1(items) => (items.len(), items.iter().filter(|b| b.is_none()).count()),
        Blobs::V2(items) => (items.as_ref().map_or(0, Vec::len), 0),
        Blobs::V3(items) => items.as_ref().map_or((0, 0), |items| {
            (items.len(), items.iter().filter(|b| b.is_none()).count())
        }),
        Blobs::V4(items) => items.as_ref().map_or((0, 0), |items| {
            (items.len(), items.iter().filter(|b| b.is_none()).count())
        }),
    };
    if answers != asked || missing > 0 {
        return Err(DriveError::Answer {
            method: method.name.to_string(),
            problem: format!("{answers} answers ({missing} missing) for {asked} hashes"),
        });
    }
    Ok(())
}

/// The fork of the chain behind `engine`: Cancun without a requests hash in the head, else
/// Osaka when the EL offers `engine_getPayloadV5`, else Prague. An EL that offers Osaka's
/// methods on a Prague chain is taken for Osaka: name the fork there.
pub async fn detect_fork(engine: &EngineClient, eth: &EthRpc) -> Result<Fork, DriveError> {
    let head = eth
        .call("eth_getBlockByNumber", json!(["latest", false]))
        .await?;
    if head.get("requestsHash").is_none_or(Value::is_null) {
        return Ok(Fork::Cancun);
    }
    let offered = engine
        .exchange_capabilities(vec![
            "engine_getPayloadV5".into(),
            "engine_getPayloadV4".into(),
        ])
        .await?;
    let has_v5 = offered.value.iter().any(|m| m == "engine_getPayloadV5");
    Ok(if has_v5 { Fork::Osaka } else { Fork::Prague })
}
