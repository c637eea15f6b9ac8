//! A block's receipts (`eth_getBlockReceipts` answer) checked against its verified header: one
//! receipt per transaction, of that transaction's type, the receipts trie rebuilt from their
//! consensus encoding (status, cumulative gas, bloom, logs) to the header's receipts root.
//! Logs matching a filter are then taken from these receipts only, so none can be added or
//! dropped; a block whose verified bloom rules the filter out is skipped.
//!
//! Not here: fetching (`verifier`), the JSON shapes (`render`).

use alloy_consensus::{ReceiptEnvelope, Typed2718, proofs};
use alloy_eips::eip2718::Encodable2718;
use alloy_primitives::Log;
use serde_json::Value;

use crate::{
    blocks::VerifiedBlock,
    error::{Check, RpcError, UpstreamError, mismatch},
};

/// Checks the receipts in `answer` against `block` (which must carry its transactions).
pub(crate) fn check_receipts(
    answer: Value,
    block: &VerifiedBlock,
    what: &str,
) -> Result<Vec<ReceiptEnvelope<Log>>, RpcError> {
    let receipts: Vec<alloy_rpc_types_eth::TransactionReceipt> = serde_json::from_value(answer)
        .map_err(|e| {
            RpcError::Upstream(UpstreamError::Malformed {
                what: what.to_string(),
                detail: e.to_string(),
            })
        })?;
    let receipts: Vec<ReceiptEnvelope<Log>> = receipts
        .into_iter()
        .map(|r| r.inner.into_primitives_receipt())
        .collect();
    let txs = block.txs.as_deref().unwrap_or_default();
    if receipts.len() != txs.len() {
        return mismatch(
            Check::ReceiptCount,
            "receipts",
            format!("{} receipts for {} transactions", receipts.len(), txs.len()),
        );
    }
    for (i, (receipt, tx)) in receipts.iter().zip(txs).enumerate() {
        if receipt.ty() != tx.envelope.ty() {
            return mismatch(
                Check::ReceiptType,
                format!("receipts[{i}].type"),
                format!(
                    "receipt type {} for a transaction of type {}",
                    receipt.ty(),
                    tx.envelope.ty()
                ),
            );
        }
    }
    let root = proofs::ordered_trie_root_with_encoder(&receipts, |r, buf| r.encode_2718(buf));
    if root != block.header.receipts_root {
        return mismatch(
            Check::ReceiptsRoot,
            "receipts",
            format!(
                "{} receipts rebuild root {root}, block {} has {}",
                receipts.len(),
                block.anchor.number,
                block.header.receipts_root
            ),
        );
    }
    Ok(receipts)
}

/// Gas used by receipt `i`: its cumulative gas less the previous one's.
pub(crate) fn gas_used(receipts: &[ReceiptEnvelope<Log>], i: usize) -> u64 {
    let before = i
        .checked_sub(1)
        .map(|p| receipts[p].cumulative_gas_used())
        .unwrap_or(0);
    receipts[i].cumulative_gas_used().saturating_sub(before)
}
