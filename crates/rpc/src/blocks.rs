//! Execution blocks checked against an anchor: a header rebuilt from the execution RPC's JSON
//! (every fork field, hashed with alloy-consensus) or a whole block from the beacon block's
//! execution payload (SSZ from the Beacon API), each accepted only when its hash is the
//! anchored hash, its transactions rebuild the transactions root and its withdrawals the
//! withdrawals root; a beacon block also only when its recomputed root is the anchor's beacon
//! root. Transaction hashes are recomputed from the transactions' bytes.
//!
//! The beacon block is fetched with sszgate-light's Beacon API client (`HttpBeaconApi`) and
//! decoded with its typed containers (`block::AnyBlock::from_ssz`, the fork chosen by the
//! slot from the chain's `ChainSpec`); this crate has no beacon-block decoder or Beacon API
//! client of its own (both moved there).
//!
//! Not here: finding the anchor (`verifier`), receipts (`receipts`), rendering (`render`).

use std::time::Duration;

use alloy_consensus::{Header, TxEnvelope, proofs};
use alloy_eips::{
    eip2718::{Decodable2718, Encodable2718},
    eip4895::Withdrawals,
    eip7685::Requests,
};
use alloy_primitives::{B256, Bloom, Bytes, keccak256};
use alloy_rpc_types_engine::{ExecutionPayloadV1, ExecutionPayloadV2, ExecutionPayloadV3};
use serde_json::Value;
use ssz::Encode;
use sszgate_light::{
    Anchor, BeaconApi, ChainSpec, HttpBeaconApi, LightError,
    block::{AnyBlock, ExecutionPayload, ExecutionRequests},
};

use crate::{
    error::{Check, RpcError, UpstreamError, mismatch},
    server::BeaconSource,
};

/// A transaction of a verified block, with the hash recomputed from its bytes.
#[derive(Debug, Clone)]
pub(crate) struct VerifiedTx {
    /// The transaction.
    pub envelope: TxEnvelope,
    /// `keccak256` of its EIP-2718 encoding.
    pub hash: B256,
}

/// A block whose header hashes to an anchored hash.
#[derive(Debug, Clone)]
pub(crate) struct VerifiedBlock {
    /// The anchor it was checked against.
    pub anchor: Anchor,
    /// The header.
    pub header: Header,
    /// The transactions, when the source carried them (checked against the transactions root).
    pub txs: Option<Vec<VerifiedTx>>,
    /// The withdrawals, when the source carried them (checked against the withdrawals root).
    pub withdrawals: Option<Withdrawals>,
}

/// Checks that `header` is the anchored block.
fn check_hash(header: &Header, anchor: &Anchor, field: &str) -> Result<(), RpcError> {
    let computed = header.hash_slow();
    if computed != anchor.hash {
        return mismatch(
            Check::BlockHash,
            field,
            format!(
                "the header of block {} hashes to {computed}, the anchored hash is {}",
                anchor.number, anchor.hash
            ),
        );
    }
    Ok(())
}

fn decode_txs(raw: &[Bytes], field: &str) -> Result<Vec<VerifiedTx>, RpcError> {
    raw.iter()
        .enumerate()
        .map(|(i, bytes)| {
            let envelope = TxEnvelope::decode_2718_exact(bytes).map_err(|e| {
                RpcError::Upstream(UpstreamError::Malformed {
                    what: format!("{field}[{i}]"),
                    detail: format!("not a transaction: {e}"),
                })
            })?;
            Ok(VerifiedTx {
                envelope,
                hash: keccak256(bytes),
            })
        })
        .collect()
}

fn check_txs(header: &Header, txs: &[VerifiedTx]) -> Result<(), RpcError> {
    let root = proofs::ordered_trie_root_with_encoder(txs, |tx, buf| tx.envelope.encode_2718(buf));
    if root != header.transactions_root {
        return mismatch(
            Check::TransactionsRoot,
            "transactions",
            format!(
                "{} transactions rebuild root {root}, the header has {}",
                txs.len(),
                header.transactions_root
            ),
        );
    }
    Ok(())
}

fn check_withdrawals(header: &Header, withdrawals: Option<&Withdrawals>) -> Result<(), RpcError> {
    if let (Some(w), Some(want)) = (withdrawals, header.withdrawals_root) {
        let root = proofs::calculate_withdrawals_root(w);
        if root != want {
            return mismatch(
                Check::WithdrawalsRoot,
                "withdrawals",
                format!(
                    "{} withdrawals rebuild root {root}, the header has {want}",
                    w.len()
                ),
            );
        }
    }
    Ok(())
}

/// A block from the execution RPC's `eth_getBlockBy*` JSON (`full`: with transaction objects).
pub(crate) fn from_json(
    value: Value,
    anchor: &Anchor,
    what: &str,
) -> Result<VerifiedBlock, RpcError> {
    let block: alloy_rpc_types_eth::Block = serde_json::from_value(value).map_err(|e| {
        RpcError::Upstream(UpstreamError::Malformed {
            what: what.to_string(),
            detail: e.to_string(),
        })
    })?;
    let header = block.header.inner;
    check_hash(&header, anchor, "header")?;
    let txs = match block.transactions {
        alloy_rpc_types_eth::BlockTransactions::Full(txs) => {
            let txs: Vec<VerifiedTx> = txs
                .into_iter()
                .map(|tx| {
                    let envelope = tx.inner.into_inner();
                    let hash = keccak256(envelope.encoded_2718());
                    VerifiedTx { envelope, hash }
                })
                .collect();
            Some(txs)
        }
        _ => None,
    };
    if let Some(txs) = &txs {
        check_txs(&header, txs)?;
    }
    check_withdrawals(&header, block.withdrawals.as_ref())?;
    Ok(VerifiedBlock {
        anchor: *anchor,
        header,
        txs,
        withdrawals: block.withdrawals,
    })
}

/// The untrusted Beacon API a verifier reads beacon blocks from (sszgate-light's client:
/// bounded reads, the media type checked, the request's budget spent), and the chain whose
/// fork schedule tells a block's layout by its slot.
#[derive(Debug, Clone)]
pub(crate) struct BeaconBlocks {
    api: HttpBeaconApi,
    spec: ChainSpec,
    max_answer: usize,
}

impl BeaconBlocks {
    /// A client of `source`; `timeout` bounds each fetch, `max_answer` each block's bytes.
    pub(crate) fn new(
        source: &BeaconSource,
        timeout: Duration,
        max_answer: usize,
    ) -> Result<BeaconBlocks, String> {
        let api = HttpBeaconApi::new(&source.url, timeout)
            .map_err(|e| format!("beacon URL {:?}: {e}", source.url))?;
        Ok(BeaconBlocks {
            api,
            spec: source.spec.clone(),
            max_answer,
        })
    }

    /// The block of `anchor` from its beacon block (`/eth/v2/beacon/blocks/{root}`); `None`
    /// when that beacon block carries no execution payload (see [`from_beacon_ssz`]).
    pub(crate) async fn block(&self, anchor: &Anchor) -> Result<Option<VerifiedBlock>, RpcError> {
        let path = format!("/eth/v2/beacon/blocks/{}", anchor.beacon_root);
        let bytes = self
            .api
            .get_ssz(&path, self.max_answer)
            .await
            .map_err(|e| beacon_error(&path, e))?;
        from_beacon_ssz(&self.spec, &bytes, anchor)
    }
}

/// The Beacon API's failure as an upstream failure: a spent budget stays one (its data is
/// answered to the client), anything else names the request.
fn beacon_error(path: &str, e: LightError) -> RpcError {
    let what = format!("GET {path}");
    RpcError::Upstream(match e {
        LightError::Budget { spent, .. } => UpstreamError::Budget { what, spent },
        LightError::NotFound { .. } => UpstreamError::Status { what, status: 404 },
        LightError::Api { detail, .. } => UpstreamError::Transport { what, detail },
        e => UpstreamError::Transport {
            what,
            detail: e.to_string(),
        },
    })
}

/// A block from a `SignedBeaconBlock` fetched from the untrusted Beacon API, decoded by
/// sszgate-light (`AnyBlock::from_ssz`: the fork by the block's slot under `spec`): its
/// execution payload rebuilt into a header (the block's parent root as the parent beacon block
/// root, an Electra/Fulu body's execution requests as the requests hash) whose hash must be the
/// anchored hash, and the block's recomputed root must be the anchor's beacon root. `None`
/// when the beacon block's payload is empty (a zero block hash): a chain's beacon genesis
/// block carries none, so the execution genesis, anchored through its child's parent hash
/// and parent beacon block root, is not in it and must come from the EL (checked by hash).
pub(crate) fn from_beacon_ssz(
    spec: &ChainSpec,
    bytes: &[u8],
    anchor: &Anchor,
) -> Result<Option<VerifiedBlock>, RpcError> {
    let bad = |detail: String| {
        RpcError::Upstream(UpstreamError::Malformed {
            what: format!("beacon block {}", anchor.beacon_root),
            detail,
        })
    };
    let block = AnyBlock::from_ssz(spec, bytes).map_err(|e| bad(e.to_string()))?;
    let root = block.summary().root;
    let parent_root = block.parent_root();
    let (payload, requests) = into_payload(block);
    if payload.payload_inner.payload_inner.block_hash.is_zero() {
        return Ok(None);
    }
    let raw = payload
        .into_block_raw()
        .map_err(|e| bad(format!("execution payload: {e}")))?;
    let mut header = raw.header;
    header.parent_beacon_block_root = Some(parent_root);
    header.requests_hash = requests.as_ref().map(Requests::requests_hash);
    check_hash(&header, anchor, "execution_payload")?;
    check_beacon_root(root, anchor)?;
    let txs = decode_txs(&raw.body.transactions, "execution_payload.transactions")?;
    Ok(Some(VerifiedBlock {
        anchor: *anchor,
        header,
        txs: Some(txs),
        withdrawals: raw.body.withdrawals,
    }))
}

/// Checks that the beacon block served is the anchor's: its recomputed root is the root the
/// anchor names.
fn check_beacon_root(root: B256, anchor: &Anchor) -> Result<(), RpcError> {
    if root != anchor.beacon_root {
        return mismatch(
            Check::BeaconRoot,
            "beacon_block",
            format!(
                "the beacon block served for block {} has root {root}, the anchored beacon root is {}",
                anchor.number, anchor.beacon_root
            ),
        );
    }
    Ok(())
}

/// The block's execution payload (moved out, not copied) and, from Electra on, its EIP-7685
/// execution requests.
fn into_payload(block: AnyBlock) -> (ExecutionPayloadV3, Option<Requests>) {
    match block {
        AnyBlock::Deneb(b) => (payload_v3(b.message.body.execution_payload), None),
        AnyBlock::Electra(b) => {
            let body = b.message.body;
            let requests = execution_requests(&body.execution_requests);
            (payload_v3(body.execution_payload), Some(requests))
        }
    }
}

/// The beacon chain's `ExecutionPayload` in alloy's form (the same fields).
fn payload_v3(p: ExecutionPayload) -> ExecutionPayloadV3 {
    let withdrawals = Vec::from(p.withdrawals)
        .into_iter()
        .map(|w| alloy_eips::eip4895::Withdrawal {
            index: w.index,
            validator_index: w.validator_index,
            address: w.address,
            amount: w.amount,
        })
        .collect();
    let transactions = Vec::from(p.transactions)
        .into_iter()
        .map(|tx| Bytes::from(Vec::from(tx)))
        .collect();
    ExecutionPayloadV3 {
        payload_inner: ExecutionPayloadV2 {
            payload_inner: ExecutionPayloadV1 {
                parent_hash: p.parent_hash,
                fee_recipient: p.fee_recipient,
                state_root: p.state_root,
                receipts_root: p.receipts_root,
                logs_bloom: Bloom::from(p.logs_bloom),
                prev_randao: p.prev_randao,
                block_number: p.block_number,
                gas_limit: p.gas_limit,
                gas_used: p.gas_used,
                timestamp: p.timestamp,
                extra_data: Bytes::from(Vec::from(p.extra_data)),
                base_fee_per_gas: p.base_fee_per_gas,
                block_hash: p.block_hash,
                transactions,
            },
            withdrawals,
        },
        blob_gas_used: p.blob_gas_used,
        excess_blob_gas: p.excess_blob_gas,
    }
}

/// EIP-7685 requests from the SSZ `ExecutionRequests`: `type || ssz(list)` per non-empty list.
fn execution_requests(requests: &ExecutionRequests) -> Requests {
    [
        requests.deposits.as_ssz_bytes(),
        requests.withdrawals.as_ssz_bytes(),
        requests.consolidations.as_ssz_bytes(),
    ]
    .into_iter()
    .zip(0u8..)
    .filter(|(list, _)| !list.is_empty())
    .map(|(list, ty)| {
        let mut request = vec![ty];
        request.extend_from_slice(&list);
        Bytes::from(request)
    })
    .collect::<Vec<_>>()
    .into()
}
