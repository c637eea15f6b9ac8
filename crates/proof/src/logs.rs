//! eth_getLogs over sszgate's own `LogsRangeProof` (not colibri's; `crates/proof/README.md`):
//! every execution block of the filter's range, so that no matching log can be left out.
//!
//! Each block proves its number, hash, parent hash and logs bloom to its beacon header's body
//! root; consecutive blocks are linked by number, parent hash and beacon parent root, the
//! first and last must be the range's bounds (`tags::check_range_start`, `check_range_end`),
//! and the newest header is tied to a signature (`header`). A block whose proven bloom may
//! match the filter ships all its receipts, whose trie root must be the proven receiptsRoot,
//! and the transactions of the receipts with matching logs (for `transactionHash`). The
//! verifier then computes the answer itself — every matching log, in order, with its
//! `logIndex` (its position among all logs of the block, bound here) — and takes no log from
//! the prover.
//!
//! What does not live here: the filter (`filter`), colibri's `LogsProof` (`receipts`).

use alloy_consensus::ReceiptEnvelope;
use alloy_eips::eip2718::Decodable2718;
use alloy_primitives::{B256, Bloom, keccak256};
use alloy_trie::root::ordered_trie_root_encoded;
use serde_json::Value;
use ssz_types::VariableList;
use tree_hash::TreeHash;

use crate::error::{Check, ProofError, ensure, fail};
use crate::filter::{Blocks, Filter};
use crate::header::verify_header;
use crate::multiproof::{
    self, BLOCK_HASH, BLOCK_NUMBER, LOGS_BLOOM, PARENT_HASH, RECEIPTS_ROOT, transaction_gindex,
    u64_leaf,
};
use crate::receipts::render_log;
use crate::tags::{ProvenBlock, check_range_end, check_range_start};
use crate::trust::TrustedState;
use crate::txs::tx_leaf;
use crate::types::{BigBytes, Log, LogsRangeBlock, LogsRangeProof};

/// eth_getLogs: the range's blocks checked, the answer computed from their proven receipts.
pub fn verify_logs_range(
    trust: &TrustedState,
    p: &LogsRangeProof,
    params: &Value,
) -> Result<Value, ProofError> {
    let filter = Filter::parse(params)?;
    let blocks = &p.blocks[..];
    let (Some(first), Some(last)) = (blocks.first(), blocks.last()) else {
        return fail(
            Check::Completeness,
            "LogsRangeProof: no block (an empty answer needs the range's blocks too)",
        );
    };
    check_bounds(trust, &filter, first, last, blocks.len())?;
    let mut logs = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let what = format!("LogsRangeProof.blocks[{i}] (block {})", b.block_number);
        if let Some(prev) = i.checked_sub(1).map(|j| &blocks[j]) {
            check_link(prev, b, &what)?;
        }
        logs.extend(verify_block(&filter, b, &what)?);
    }
    verify_header(trust, &last.header, &p.header_proof, "LogsRangeProof")?;
    Ok(Value::Array(
        logs.iter().map(|l| render_log(l, true)).collect(),
    ))
}

/// The first and last block are the filter's bounds (one block, the `blockHash`, for a hash).
fn check_bounds(
    trust: &TrustedState,
    filter: &Filter,
    first: &LogsRangeBlock,
    last: &LogsRangeBlock,
    count: usize,
) -> Result<(), ProofError> {
    let at = |b: &LogsRangeBlock| ProvenBlock {
        slot: b.header.slot,
        number: Some(b.block_number),
    };
    match &filter.blocks {
        Blocks::Hash(h) => ensure(count == 1 && first.block_hash == *h, Check::Request, || {
            format!(
                "LogsRangeProof: {count} blocks from {} ({}); blockHash {h} names one block",
                first.block_number, first.block_hash
            )
        }),
        Blocks::Range { from, to } => check_range_start(trust, from, at(first), count == 1)
            .and_then(|()| check_range_end(trust, to, at(last)))
            .map_err(|e| match e {
                ProofError::Check { check, detail } => ProofError::Check {
                    check,
                    detail: format!(
                        "LogsRangeProof (blocks {}..={}): {detail}",
                        first.block_number, last.block_number
                    ),
                },
                other => other,
            }),
    }
}

/// `b` is the child of `prev`: the next number, `prev`'s hash as its parent hash, `prev`'s
/// beacon header as its parent root (so the signature on the newest header covers it).
fn check_link(prev: &LogsRangeBlock, b: &LogsRangeBlock, what: &str) -> Result<(), ProofError> {
    let next = prev.block_number.checked_add(1) == Some(b.block_number);
    ensure(
        next && b.parent_hash == prev.block_hash,
        Check::Completeness,
        || {
            format!(
                "{what}: does not follow block {} ({}): a block of the range left out or added (its parent hash is {})",
                prev.block_number, prev.block_hash, b.parent_hash
            )
        },
    )?;
    let parent = prev.header.tree_hash_root();
    ensure(b.header.parent_root == parent, Check::HeaderChain, || {
        format!(
            "{what}: its beacon parent root {} is not the previous block's header root {parent}",
            b.header.parent_root
        )
    })
}

/// One block proven to its header; the matching logs of its receipts.
fn verify_block(filter: &Filter, b: &LogsRangeBlock, what: &str) -> Result<Vec<Log>, ProofError> {
    let mut leaves = multiproof::Leaves::from([
        (BLOCK_NUMBER, u64_leaf(b.block_number)),
        (BLOCK_HASH, b.block_hash),
        (PARENT_HASH, b.parent_hash),
        (LOGS_BLOOM, b.logs_bloom.tree_hash_root()),
    ]);
    let proof = format!("{what}.proof");
    if !filter.may_match(&Bloom::new(b.logs_bloom.0)) {
        ensure(
            b.receipts.is_empty() && b.txs.is_empty(),
            Check::ReceiptData,
            || format!("{what}: receipts or transactions of a block whose bloom cannot match"),
        )?;
        multiproof::verify(&leaves, &b.proof, b.header.body_root, &proof)?;
        return Ok(Vec::new());
    }
    // Every receipt: their trie's root must be the proven one, so none can be left out.
    let raw: Vec<&[u8]> = b.receipts.iter().map(|r| &r[..]).collect();
    leaves.insert(RECEIPTS_ROOT, ordered_trie_root_encoded(&raw));
    // By ascending index (checked), so looked up by binary search.
    let mut txs: Vec<(u32, B256)> = Vec::with_capacity(b.txs.len());
    for (ti, t) in b.txs.iter().enumerate() {
        let index = t.transaction_index;
        let ascending = txs.last().is_none_or(|(prior, _)| *prior < index);
        ensure(ascending, Check::Transaction, || {
            format!("{what}.txs[{ti}]: index {index} not after the one before")
        })?;
        leaves.insert(transaction_gindex(index), tx_leaf(&t.transaction));
        txs.push((index, keccak256(&t.transaction[..])));
    }
    let proof = format!(
        "{proof} (receiptsRoot of its {} receipts)",
        b.receipts.len()
    );
    multiproof::verify(&leaves, &b.proof, b.header.body_root, &proof)?;
    matching_logs(filter, b, &txs, what)
}

/// The logs of `b`'s receipts that match, each with its transaction's hash (from `txs`, by
/// ascending index, which must hold exactly the transactions of the receipts with matching
/// logs) and its position among all logs of the block.
fn matching_logs(
    filter: &Filter,
    b: &LogsRangeBlock,
    txs: &[(u32, B256)],
    what: &str,
) -> Result<Vec<Log>, ProofError> {
    // `needed` is filled in receipt order, so it is ascending too.
    let (mut out, mut needed, mut log_index) = (Vec::new(), Vec::new(), 0u32);
    for (j, raw) in b.receipts.iter().enumerate() {
        let receipt = decode_receipt(raw, &format!("{what}.receipts[{j}]"))?;
        let index = u32::try_from(j).unwrap_or(u32::MAX);
        for l in receipt.logs() {
            if filter.matches(&l.address, l.topics()) {
                let found = txs.binary_search_by_key(&index, |(i, _)| *i).ok();
                let Some((_, hash)) = found.and_then(|at| txs.get(at)) else {
                    return fail(
                        Check::Transaction,
                        format!(
                            "{what}: receipt {j} holds a matching log; its transaction is not in the proof"
                        ),
                    );
                };
                if needed.last() != Some(&index) {
                    needed.push(index);
                }
                out.push(log_of(b, l, *hash, index, log_index, what)?);
            }
            log_index = log_index.saturating_add(1);
        }
    }
    if let Some((extra, _)) = txs.iter().find(|(i, _)| needed.binary_search(i).is_err()) {
        return fail(
            Check::Transaction,
            format!("{what}: transaction {extra} is in the proof but holds no matching log"),
        );
    }
    Ok(out)
}

/// A raw receipt, decoded whole.
fn decode_receipt(raw: &BigBytes, what: &str) -> Result<ReceiptEnvelope, ProofError> {
    let mut rest = &raw[..];
    let receipt = ReceiptEnvelope::decode_2718(&mut rest).map_err(|e| ProofError::Check {
        check: Check::ReceiptData,
        detail: format!("{what}: does not decode: {e}"),
    })?;
    ensure(rest.is_empty(), Check::ReceiptData, || {
        format!("{what}: {} bytes after the receipt", rest.len())
    })?;
    Ok(receipt)
}

/// A proven log at its place.
fn log_of(
    b: &LogsRangeBlock,
    l: &alloy_primitives::Log,
    transaction_hash: B256,
    transaction_index: u32,
    log_index: u32,
    what: &str,
) -> Result<Log, ProofError> {
    let bad = |e: ssz_types::Error| ProofError::Check {
        check: Check::ReceiptData,
        detail: format!("{what}: log {log_index}: {e:?}"),
    };
    Ok(Log {
        block_hash: b.block_hash,
        block_number: b.block_number,
        transaction_hash,
        transaction_index,
        address: l.address,
        log_index,
        removed: false,
        topics: VariableList::new(l.topics().to_vec()).map_err(bad)?,
        data: BigBytes::new(l.data.data.to_vec()).map_err(bad)?,
    })
}
