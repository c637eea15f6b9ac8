//! eth_getTransactionReceipt over a `ReceiptProof` (spec §4.4, §9.4) and eth_getLogs over a
//! `LogsProof` (§4.5, §9.5): receipts proven by Patricia proofs to a receipts root, the root
//! and the transactions proven to the header, the prover's data compared with them.
//!
//! Stricter than colibri (§15 item 9): the receipt's `type`, `removed`, every log's position
//! fields, and — for eth_getLogs — the filter's address, topics and block range are checked,
//! and every log of a proven receipt that matches the filter must be returned. Fields this
//! proof format cannot bind are not returned ([`UNBOUND_RECEIPT_FIELDS`],
//! [`UNBOUND_LOG_FIELDS`]): colibri returns the prover's values unchecked.
//!
//! A `LogsProof` cannot show that no block of the range was left out; `verify` takes it only
//! with `TrustedState::accept_incomplete_logs`. sszgate's own `LogsRangeProof` (`logs`) can.

use alloy_consensus::{ReceiptEnvelope, Transaction as _, TxReceipt};
use alloy_eips::eip2718::{Decodable2718, Typed2718};
use alloy_primitives::{B256, keccak256};
use serde_json::{Value, json};

use crate::error::{Check, ProofError, ensure, fail};
use crate::filter::{Blocks, Filter};
use crate::header::verify_header;
use crate::multiproof::{self, BLOCK_HASH, BLOCK_NUMBER, RECEIPTS_ROOT, u64_leaf};
use crate::params;
use crate::patricia;
use crate::render::{bytes, qty};
use crate::tags::{ProvenBlock, check_from, check_to};
use crate::trust::TrustedState;
use crate::txs::{Tx, decode_tx, tx_leaf, tx_leaves};
use crate::types::{BigBytes, EthReceiptData, Log, LogsBlock, LogsTx, ReceiptProof};

/// Receipt fields the proof does not bind (they depend on the other receipts of the block,
/// on the base fee or on the excess blob gas, which a `ReceiptProof` does not prove): not
/// returned. `gasUsed` is
/// returned for the first transaction of a block (it equals `cumulativeGasUsed`) and
/// `effectiveGasPrice` for transactions whose gas price is fixed (legacy, EIP-2930).
pub const UNBOUND_RECEIPT_FIELDS: [&str; 3] = ["gasUsed", "effectiveGasPrice", "blobGasPrice"];
/// Log fields a `ReceiptProof` or `LogsProof` does not bind (the position among all logs of
/// the block; a `LogsRangeProof` binds it).
pub const UNBOUND_LOG_FIELDS: [&str; 1] = ["logIndex"];

/// The key of receipt `index` in the receipts trie: `rlp(index)`.
fn receipt_key(index: u32) -> Vec<u8> {
    alloy_rlp::encode(index)
}

/// Walks a receipt's Patricia proof: (receipts root, decoded receipt).
fn proven_receipt(
    proof: &[BigBytes],
    index: u32,
    what: &str,
) -> Result<(B256, ReceiptEnvelope), ProofError> {
    let bad = |detail: String| ProofError::Check {
        check: Check::ReceiptProof,
        detail: format!("{what}: {detail}"),
    };
    let root = keccak256(proof.first().map(|n| &n[..]).unwrap_or_default());
    let value = patricia::walk(root, &receipt_key(index), proof)
        .map_err(bad)?
        .ok_or_else(|| bad(format!("proves that there is no receipt {index}")))?;
    let receipt = ReceiptEnvelope::decode_2718(&mut value.as_slice())
        .map_err(|e| bad(format!("receipt {index} does not decode: {e}")))?;
    Ok((root, receipt))
}

/// One log of the prover's data against a proven log at the proven position.
fn check_log(
    log: &Log,
    proven: &alloy_primitives::Log,
    tx: &Tx,
    block: (B256, u64),
    index: u32,
    what: &str,
) -> Result<(), ProofError> {
    let same = log.address == proven.address
        && log.topics[..] == proven.topics()[..]
        && log.data[..] == proven.data.data[..]
        && log.block_hash == block.0
        && log.block_number == block.1
        && log.transaction_hash == tx.hash
        && log.transaction_index == index
        && !log.removed;
    ensure(same, Check::ReceiptData, || {
        format!("{what}: differs from the proven log or its position")
    })
}

/// A log as nodes render it; `logIndex` only where the proof binds it (`with_index`).
pub(crate) fn render_log(log: &Log, with_index: bool) -> Value {
    let mut out = json!({"blockHash": bytes(log.block_hash), "blockNumber": qty(log.block_number),
           "transactionHash": bytes(log.transaction_hash), "transactionIndex": qty(log.transaction_index),
           "address": bytes(log.address), "removed": log.removed,
           "topics": log.topics.iter().map(bytes).collect::<Vec<_>>(), "data": bytes(&log.data[..])});
    if with_index && let Some(o) = out.as_object_mut() {
        o.insert("logIndex".into(), qty(log.log_index));
    }
    out
}

/// The prover's receipt against the proven receipt and transaction (§9.4, all of it).
fn check_receipt_data(
    d: &EthReceiptData,
    r: &ReceiptEnvelope,
    tx: &Tx,
    p: &ReceiptProof,
) -> Result<(), ProofError> {
    let to = tx.envelope.to().map(|a| a.to_vec()).unwrap_or_default();
    let fields = [
        ("transactionHash", d.transaction_hash == tx.hash),
        ("blockHash", d.block_hash == p.block_hash),
        ("blockNumber", d.block_number == p.block_number),
        (
            "transactionIndex",
            d.transaction_index == p.transaction_index,
        ),
        (
            "type",
            d.tx_type == tx.envelope.ty() && r.ty() == tx.envelope.ty(),
        ),
        ("from", d.from == tx.from),
        ("to", d.to[..] == to[..]),
        ("status", u64::from(d.status) == u64::from(r.status())),
        (
            "cumulativeGasUsed",
            u128::from(d.cumulative_gas_used) == u128::from(r.cumulative_gas_used()),
        ),
        ("logsBloom", d.logs_bloom.as_slice() == r.bloom().as_slice()),
        ("logs", d.logs.len() == r.logs().len()),
        (
            "gasUsed",
            p.transaction_index != 0 || d.gas_used == d.cumulative_gas_used,
        ),
        (
            "effectiveGasPrice",
            tx.envelope
                .gas_price()
                .is_none_or(|g| g == u128::from(d.effective_gas_price)),
        ),
        (
            "depositNonce",
            d.deposit_nonce == 0 && d.deposit_receipt_version == 0,
        ),
    ];
    if let Some((name, _)) = fields.iter().find(|(_, ok)| !ok) {
        return fail(
            Check::ReceiptData,
            format!("EthReceiptData.{name} differs from the proven receipt or transaction"),
        );
    }
    for (i, (log, proven)) in d.logs.iter().zip(r.logs()).enumerate() {
        check_log(
            log,
            proven,
            tx,
            (p.block_hash, p.block_number),
            p.transaction_index,
            &format!("EthReceiptData.logs[{i}]"),
        )?;
    }
    Ok(())
}

/// The bound part of the receipt as JSON.
fn render_receipt(d: &EthReceiptData, tx: &Tx) -> Value {
    let mut out = json!({
        "blockHash": bytes(d.block_hash), "blockNumber": qty(d.block_number),
        "transactionHash": bytes(d.transaction_hash), "transactionIndex": qty(d.transaction_index),
        "type": qty(d.tx_type), "from": bytes(d.from),
        "to": if d.to.is_empty() { Value::Null } else { bytes(&d.to[..]) },
        "cumulativeGasUsed": qty(d.cumulative_gas_used), "logs": d.logs.iter().map(|l| render_log(l, false)).collect::<Vec<_>>(),
        "logsBloom": bytes(d.logs_bloom), "status": qty(d.status),
    });
    let o = out.as_object_mut().expect("an object");
    // A creation's address follows from its proven sender and nonce.
    let created =
        d.to.is_empty()
            .then(|| bytes(tx.from.create(tx.envelope.nonce())));
    o.insert("contractAddress".into(), created.unwrap_or(Value::Null));
    if d.transaction_index == 0 {
        o.insert("gasUsed".into(), qty(d.cumulative_gas_used));
    }
    if let Some(price) = tx.envelope.gas_price() {
        o.insert("effectiveGasPrice".into(), qty(price));
    }
    // A blob transaction's blob gas follows from its proven blob count; its price needs the
    // block's excess blob gas, which a receipt proof does not carry (`UNBOUND_RECEIPT_FIELDS`).
    if let Some(used) = tx.envelope.blob_gas_used() {
        o.insert("blobGasUsed".into(), qty(used));
    }
    out
}

/// eth_getTransactionReceipt.
pub fn verify_receipt(
    trust: &TrustedState,
    p: &ReceiptProof,
    data: Option<&EthReceiptData>,
    params: &Value,
) -> Result<Value, ProofError> {
    let tx = decode_tx(&p.transaction, "ReceiptProof.transaction")?;
    let asked = params::hash(params, 0)?;
    ensure(asked == tx.hash, Check::Request, || {
        format!(
            "transaction: the proof is for {}, {asked} was asked for",
            tx.hash
        )
    })?;
    let (root, receipt) = proven_receipt(
        &p.receipt_proof,
        p.transaction_index,
        "ReceiptProof.receipt_proof",
    )?;
    let mut leaves = tx_leaves(
        p.block_number,
        p.block_hash,
        p.transaction_index,
        &p.transaction,
    );
    leaves.insert(RECEIPTS_ROOT, root);
    multiproof::verify(
        &leaves,
        &p.block_proof,
        p.header.body_root,
        "ReceiptProof.block_proof",
    )?;
    verify_header(trust, &p.header, &p.header_proof, "ReceiptProof")?;
    let Some(d) = data else {
        return fail(
            Check::ProofKind,
            "a ReceiptProof needs the receipt as data (EthReceiptData)",
        );
    };
    check_receipt_data(d, &receipt, &tx, p)?;
    Ok(render_receipt(d, &tx))
}

/// Checks that a proven block of a `LogsProof` is one the filter names.
fn check_block(
    filter: &Filter,
    trust: &TrustedState,
    b: &LogsBlock,
    bi: usize,
) -> Result<(), ProofError> {
    let at = ProvenBlock {
        slot: b.header.slot,
        number: Some(b.block_number),
    };
    let outside = |e: ProofError| match e {
        ProofError::Check { check, detail } => ProofError::Check {
            check,
            detail: format!("LogsProof[{bi}] (block {}): {detail}", b.block_number),
        },
        other => other,
    };
    match &filter.blocks {
        Blocks::Hash(h) => ensure(*h == b.block_hash, Check::Request, || {
            format!(
                "LogsProof[{bi}]: block {} ({}) is not the blockHash {h} asked for",
                b.block_number, b.block_hash
            )
        }),
        Blocks::Range { from, to } => check_from(trust, from, at)
            .and_then(|()| check_to(trust, to, at))
            .map_err(outside),
    }
}

/// One LogsBlock: receipts, root, transactions and header proven; returns the proven
/// receipts, in the proof's order, each transaction index once.
fn verify_logs_block(
    trust: &TrustedState,
    b: &LogsBlock,
    bi: usize,
) -> Result<Vec<ProvenReceipt>, ProofError> {
    let what = format!("LogsProof[{bi}]");
    let mut leaves = multiproof::Leaves::from([
        (BLOCK_NUMBER, u64_leaf(b.block_number)),
        (BLOCK_HASH, b.block_hash),
    ]);
    let mut receipts: Vec<ProvenReceipt> = Vec::with_capacity(b.txs.len());
    for (ti, t) in b.txs.iter().enumerate() {
        let LogsTx {
            transaction,
            transaction_index,
            proof,
        } = t;
        let tx = decode_tx(transaction, &format!("{what}.txs[{ti}].transaction"))?;
        let (root, receipt) = proven_receipt(
            proof,
            *transaction_index,
            &format!("{what}.txs[{ti}].proof"),
        )?;
        let prior = leaves.insert(RECEIPTS_ROOT, root);
        ensure(prior.is_none_or(|r| r == root), Check::ReceiptProof, || {
            format!("{what}.txs[{ti}]: a different receipts root than the block's other receipts")
        })?;
        leaves.insert(
            multiproof::transaction_gindex(*transaction_index),
            tx_leaf(transaction),
        );
        // At most 256 transactions per block: a scan finds a repeat.
        ensure(
            receipts.iter().all(|r| r.index != *transaction_index),
            Check::ReceiptProof,
            || format!("{what}.txs[{ti}]: transaction {transaction_index} twice"),
        )?;
        receipts.push(ProvenReceipt {
            block: b.block_number,
            block_hash: b.block_hash,
            index: *transaction_index,
            returned: vec![false; receipt.logs().len()],
            tx,
            receipt,
        });
    }
    multiproof::verify(
        &leaves,
        &b.proof,
        b.header.body_root,
        &format!("{what}.proof"),
    )?;
    verify_header(trust, &b.header, &b.header_proof, &what)?;
    Ok(receipts)
}

/// eth_getLogs.
pub fn verify_logs(
    trust: &TrustedState,
    blocks: &[LogsBlock],
    logs: &[Log],
    params: &Value,
) -> Result<Value, ProofError> {
    let filter = Filter::parse(params)?;
    let mut proven: Vec<ProvenReceipt> = Vec::new();
    for (bi, b) in blocks.iter().enumerate() {
        check_block(&filter, trust, b, bi)?;
        let receipts = verify_logs_block(trust, b, bi)?;
        // At most 256 blocks: a scan finds a repeat.
        ensure(
            blocks[..bi]
                .iter()
                .all(|o| o.block_number != b.block_number),
            Check::ProofKind,
            || format!("LogsProof[{bi}]: block {} twice", b.block_number),
        )?;
        proven.extend(receipts);
    }
    // Every returned log: a matching, unused log of a proven receipt.
    for (i, log) in logs.iter().enumerate() {
        let what = format!("EthLogs[{i}]");
        match_log(&mut proven, log, &what)?;
        ensure(
            filter.matches(&log.address, &log.topics),
            Check::Request,
            || format!("{what}: does not match the filter"),
        )?;
    }
    check_complete(&proven, &filter)?;
    Ok(Value::Array(
        logs.iter().map(|l| render_log(l, false)).collect(),
    ))
}

/// A receipt a LogsProof proves, and which of its logs the answer returned. The receipts of
/// a proof (at most 256 blocks of 256) stay in the proof's order and are found by a scan: a
/// map of them linked more code than the scan costs time.
struct ProvenReceipt {
    block: u64,
    block_hash: B256,
    index: u32,
    tx: Tx,
    receipt: ReceiptEnvelope,
    returned: Vec<bool>,
}

/// Marks the proven log `log` equals (one not returned before), or fails.
fn match_log(proven: &mut [ProvenReceipt], log: &Log, what: &str) -> Result<(), ProofError> {
    let (block, index) = (log.block_number, log.transaction_index);
    let Some(p) = proven
        .iter_mut()
        .find(|p| p.block == block && p.index == index)
    else {
        return fail(
            Check::ReceiptData,
            format!("{what}: no proven receipt for block {block} transaction {index}"),
        );
    };
    let at = (p.block_hash, block);
    let found = p
        .receipt
        .logs()
        .iter()
        .enumerate()
        .position(|(j, l)| !p.returned[j] && check_log(log, l, &p.tx, at, index, what).is_ok());
    let Some(j) = found else {
        return fail(
            Check::ReceiptData,
            format!("{what}: equals no (unreturned) log of the proven receipt"),
        );
    };
    p.returned[j] = true;
    Ok(())
}

/// Every log of a proven receipt that matches the filter was returned.
fn check_complete(proven: &[ProvenReceipt], filter: &Filter) -> Result<(), ProofError> {
    for p in proven {
        for (j, l) in p.receipt.logs().iter().enumerate() {
            let returned = p.returned.get(j).copied().unwrap_or(false);
            ensure(
                returned || !filter.matches(&l.address, l.topics()),
                Check::ReceiptData,
                || {
                    format!(
                        "block {} transaction {}: its log {j} matches the filter but was not returned",
                        p.block, p.index
                    )
                },
            )?;
        }
    }
    Ok(())
}
