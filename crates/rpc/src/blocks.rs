//! Execution blocks checked against an anchor: a header rebuilt from the execution RPC's JSON
//! (every fork field, hashed with alloy-consensus) or a whole block from the beacon block's
//! execution payload (SSZ from the Beacon API), each accepted only when its hash is the
//! anchored hash, its transactions rebuild the transactions root and its withdrawals the
//! withdrawals root. Transaction hashes are recomputed from the transactions' bytes.
//!
//! Not here: finding the anchor (`verifier`), receipts (`receipts`), rendering (`render`).

use alloy_consensus::{Header, TxEnvelope, proofs};
use alloy_eips::{
    eip2718::{Decodable2718, Encodable2718},
    eip4895::Withdrawals,
    eip7685::Requests,
};
use alloy_primitives::{B256, Bytes, keccak256};
use alloy_rpc_types_engine::ExecutionPayloadV3;
use serde_json::Value;
use ssz::Decode;
use sszgate_engine::ssz::{Field, Ty, fields};
use sszgate_light::Anchor;

use crate::error::{Check, RpcError, UpstreamError, mismatch};

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

const OPAQUE: Ty = Ty::Bytes(usize::MAX);
const fn f(name: &'static str, ty: &'static Ty) -> Field {
    Field { name, ty }
}
macro_rules! body {
    ($name:literal $(, $extra:expr)*) => {
        Ty::Container($name, &[
            f("randao_reveal", &Ty::Fixed(96)),
            f("eth1_data", &Ty::Fixed(72)),
            f("graffiti", &Ty::Fixed(32)),
            f("proposer_slashings", &OPAQUE),
            f("attester_slashings", &OPAQUE),
            f("attestations", &OPAQUE),
            f("deposits", &OPAQUE),
            f("voluntary_exits", &OPAQUE),
            f("sync_aggregate", &Ty::Fixed(160)),
            f("execution_payload", &OPAQUE),
            f("bls_to_execution_changes", &OPAQUE),
            f("blob_kzg_commitments", &Ty::List(&Ty::Fixed(48), 4096))
            $(, $extra)*
        ])
    };
}
static BODY_DENEB: Ty = body!("BeaconBlockBodyDeneb");
static BODY_ELECTRA: Ty = body!("BeaconBlockBodyElectra", f("execution_requests", &OPAQUE));
static BLOCK: Ty = Ty::Container(
    "BeaconBlock",
    &[
        f("slot", &Ty::Fixed(8)),
        f("proposer_index", &Ty::Fixed(8)),
        f("parent_root", &Ty::Fixed(32)),
        f("state_root", &Ty::Fixed(32)),
        f("body", &OPAQUE),
    ],
);
static SIGNED_BLOCK: Ty = Ty::Container(
    "SignedBeaconBlock",
    &[f("message", &OPAQUE), f("signature", &Ty::Fixed(96))],
);
/// Electra `ExecutionRequests`: deposits (192-byte), withdrawals (76), consolidations (116).
static EXECUTION_REQUESTS: Ty = Ty::Container(
    "ExecutionRequests",
    &[
        f("deposits", &Ty::List(&Ty::Fixed(192), 8192)),
        f("withdrawals", &Ty::List(&Ty::Fixed(76), 16)),
        f("consolidations", &Ty::List(&Ty::Fixed(116), 2)),
    ],
);

/// A block from a `SignedBeaconBlock` (Deneb or Electra/Fulu body, told apart by the body's
/// layout), fetched from the untrusted Beacon API: the execution payload rebuilt into a header
/// whose hash must be the anchored hash.
pub(crate) fn from_beacon_ssz(bytes: &[u8], anchor: &Anchor) -> Result<VerifiedBlock, RpcError> {
    let what = format!("beacon block {}", anchor.beacon_root);
    let bad = |detail: String| {
        RpcError::Upstream(UpstreamError::Malformed {
            what: what.clone(),
            detail,
        })
    };
    let ssz = |e: sszgate_engine::ssz::SszError| bad(e.to_string());
    let message = fields(&SIGNED_BLOCK, bytes).map_err(ssz)?[0];
    let block = fields(&BLOCK, message).map_err(ssz)?;
    let parent_root = B256::from_slice(block[2]);
    let (body, requests) = match fields(&BODY_ELECTRA, block[4]) {
        Ok(body) => {
            let requests = execution_requests(body[12]).map_err(ssz)?;
            (body, Some(requests))
        }
        Err(_) => (fields(&BODY_DENEB, block[4]).map_err(ssz)?, None),
    };
    let payload = ExecutionPayloadV3::from_ssz_bytes(body[9])
        .map_err(|e| bad(format!("execution payload: {e:?}")))?;
    let raw = payload
        .into_block_raw()
        .map_err(|e| bad(format!("execution payload: {e}")))?;
    let mut header = raw.header;
    header.parent_beacon_block_root = Some(parent_root);
    header.requests_hash = requests.as_ref().map(Requests::requests_hash);
    check_hash(&header, anchor, "execution_payload")?;
    let txs = decode_txs(&raw.body.transactions, "execution_payload.transactions")?;
    Ok(VerifiedBlock {
        anchor: *anchor,
        header,
        txs: Some(txs),
        withdrawals: raw.body.withdrawals,
    })
}

/// EIP-7685 requests from the SSZ `ExecutionRequests`: `type || ssz(list)` per non-empty list.
fn execution_requests(bytes: &[u8]) -> Result<Requests, sszgate_engine::ssz::SszError> {
    let lists = fields(&EXECUTION_REQUESTS, bytes)?;
    Ok(lists
        .iter()
        .enumerate()
        .filter(|(_, list)| !list.is_empty())
        .map(|(ty, list)| {
            let mut request = vec![ty as u8];
            request.extend_from_slice(list);
            Bytes::from(request)
        })
        .collect::<Vec<_>>()
        .into())
}
