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

use alloy_primitives::{Address, B256, Bytes, keccak256};
use serde_json::{Value, json};
use sszgate_engine::{
    Fork, Message, MessageKind,
    method::{self, Family, MethodSpec},
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

/// The methods a CL of one fork calls.
#[derive(Clone, Copy, Debug)]
struct Methods {
    forkchoice: &'static MethodSpec,
    get_payload: &'static MethodSpec,
    new_payload: &'static MethodSpec,
    get_blobs: &'static MethodSpec,
}

impl Methods {
    fn for_fork(fork: Fork) -> Result<Methods, DriveError> {
        let pick = |family| {
            method::for_fork(family, fork)
                .ok_or_else(|| DriveError::Config(format!("no {family:?} method serves {fork}")))
        };
        if !fork.has_blobs() {
            return Err(DriveError::Config(format!(
                "the driver runs Cancun and later forks, not {fork}"
            )));
        }
        // A CL asks getBlobsV2 from Osaka on (all blobs or none), V1 before.
        let blobs = if fork.has_cell_proofs() {
            "engine_getBlobsV2"
        } else {
            "engine_getBlobsV1"
        };
        Ok(Methods {
            forkchoice: pick(Family::ForkchoiceUpdated)?,
            get_payload: pick(Family::GetPayload)?,
            new_payload: pick(Family::NewPayload)?,
            get_blobs: method::by_name(blobs).expect("in the table"),
        })
    }
}

/// Drives one EL block after block.
pub struct Driver {
    engine: EngineClient,
    eth: EthRpc,
    load: Option<Load>,
    config: DriveConfig,
    methods: Methods,
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
        let methods = Methods::for_fork(config.fork)?;
        let head = read_head(&eth).await?;
        Ok(Driver {
            engine,
            eth,
            load,
            config,
            methods,
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
        let state = forkchoice_state(head.hash);
        let fcu = self
            .call(
                self.methods.forkchoice,
                json!([state, attributes]),
                &mut calls,
            )
            .await?;
        expect_valid(self.methods.forkchoice, &fcu["payloadStatus"])?;
        let payload_id = fcu["payloadId"]
            .as_str()
            .ok_or_else(|| DriveError::Answer {
                method: self.methods.forkchoice.name.to_string(),
                problem: format!("no payload id for a call with attributes: {fcu}"),
            })?;
        let payload_id = payload_id.to_string();

        tokio::time::sleep(self.config.build_time).await;
        let mut built = self
            .call(self.methods.get_payload, json!([payload_id]), &mut calls)
            .await?;
        let get_payload = self.methods.get_payload.name;
        let wrong = |problem: String| DriveError::Answer {
            method: get_payload.to_string(),
            problem,
        };
        // The verifier's checks of a built payload: block hash (with the root the attributes
        // carried), transactions, limits, and the bundle's commitments against the payload's
        // blob transactions.
        let spec = self.methods.get_payload;
        let decoded = serde_json::to_vec(&built)
            .map_err(|e| e.to_string())
            .and_then(|json| {
                Message::from_json(spec, fork, MessageKind::BuiltPayload, &json)
                    .map_err(|e| e.to_string())
            })
            .map_err(&wrong)?;
        let Message::BuiltPayload(decoded) = decoded else {
            unreachable!("a BuiltPayload kind decodes to a BuiltPayload")
        };
        sszgate_verify::payload::check_built(&decoded, Some(beacon_root))
            .and_then(|_| sszgate_verify::blobs::check_bundle(None, &decoded))
            .map_err(|failure| wrong(failure.to_string()))?;
        let payload = built["executionPayload"].take();
        let parent_hash = hash_field(&payload, "parentHash").map_err(&wrong)?;
        let block_hash = hash_field(&payload, "blockHash").map_err(&wrong)?;
        if parent_hash != head.hash {
            return Err(wrong(format!(
                "the payload builds on {parent_hash}, not on the head {}",
                head.hash
            )));
        }
        let (got_number, got_time) = (
            quantity(&payload["blockNumber"]),
            quantity(&payload["timestamp"]),
        );
        if (got_number, got_time) != (Some(number), Some(timestamp)) {
            return Err(wrong(format!(
                "block number {got_number:?} at time {got_time:?}, expected {number} at {timestamp}"
            )));
        }
        let transactions: Vec<Bytes> = serde_json::from_value(payload["transactions"].clone())
            .map_err(|e| wrong(format!("transactions: {e}")))?;
        let tx_hashes: Vec<B256> = transactions.iter().map(keccak256).collect();
        let versioned_hashes = blob_versioned_hashes(&transactions)
            .map_err(|e| wrong(format!("a transaction of the payload: {e}")))?;
        let left_out = sent.iter().filter(|t| !tx_hashes.contains(&t.hash)).count();

        if self.config.get_blobs && !versioned_hashes.is_empty() {
            let blobs = self
                .call(
                    self.methods.get_blobs,
                    json!([versioned_hashes]),
                    &mut calls,
                )
                .await?;
            check_blobs(self.methods.get_blobs, &blobs, versioned_hashes.len())?;
        }

        let mut params = vec![payload, json!(versioned_hashes), json!(beacon_root)];
        if fork.has_requests() {
            params.push(built["executionRequests"].take());
        }
        let status = self
            .call(self.methods.new_payload, Value::Array(params), &mut calls)
            .await?;
        expect_valid(self.methods.new_payload, &status)?;

        let fcu = self
            .call(
                self.methods.forkchoice,
                json!([forkchoice_state(block_hash), null]),
                &mut calls,
            )
            .await?;
        expect_valid(self.methods.forkchoice, &fcu["payloadStatus"])?;

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
            blob_count: versioned_hashes.len(),
            left_out,
            calls,
        })
    }

    async fn call(
        &self,
        method: &'static MethodSpec,
        params: Value,
        calls: &mut Vec<CallTiming>,
    ) -> Result<Value, DriveError> {
        let reply = self
            .engine
            .call(method.name, &params, self.config.fork)
            .await?;
        calls.push(CallTiming {
            method: method.name,
            elapsed: reply.elapsed,
        });
        Ok(reply.result)
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
fn attributes(fork: Fork, number: u64, timestamp: u64) -> (Value, B256) {
    let beacon_root = keccak256(format!("sszgate beacon root {number}"));
    let mut fields = json!({
        "timestamp": format!("0x{timestamp:x}"),
        "prevRandao": keccak256(format!("sszgate randao {number}")),
        "suggestedFeeRecipient": Address::repeat_byte(0xfe),
        "withdrawals": [{
            "index": format!("0x{:x}", number - 1),
            "validatorIndex": format!("0x{:x}", number % 64),
            "address": Address::repeat_byte(0x77),
            "amount": "0x3b9aca00",
        }],
    });
    if fork.has_blobs() {
        fields["parentBeaconBlockRoot"] = json!(beacon_root);
    }
    (fields, beacon_root)
}

fn forkchoice_state(head: B256) -> Value {
    json!({"headBlockHash": head, "safeBlockHash": head, "finalizedBlockHash": head})
}

fn expect_valid(method: &MethodSpec, status: &Value) -> Result<(), DriveError> {
    match status["status"].as_str() {
        Some("VALID") => Ok(()),
        _ => Err(DriveError::Answer {
            method: method.name.to_string(),
            problem: format!("status is not VALID: {status}"),
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
fn check_blobs(method: &MethodSpec, blobs: &Value, asked: usize) -> Result<(), DriveError> {
    let wrong = |problem: String| DriveError::Answer {
        method: method.name.to_string(),
        problem,
    };
    let items = blobs
        .as_array()
        .ok_or_else(|| wrong(format!("no blobs for {asked} hashes of a block it built")))?;
    let missing = items.iter().filter(|b| b.is_null()).count();
    if items.len() != asked || missing > 0 {
        return Err(wrong(format!(
            "{} answers ({missing} missing) for {asked} hashes",
            items.len()
        )));
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
        .call(
            "engine_exchangeCapabilities",
            &json!([["engine_getPayloadV5", "engine_getPayloadV4"]]),
            Fork::Osaka,
        )
        .await?;
    let has_v5 = offered
        .result
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m == "engine_getPayloadV5"));
    Ok(if has_v5 { Fork::Osaka } else { Fork::Prague })
}
