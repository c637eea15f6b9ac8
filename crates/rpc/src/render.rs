//! Standard JSON-RPC shapes (alloy-rpc-types-eth) built from verified data only: blocks with
//! transaction hashes or objects, transactions with the recovered sender, receipts with the
//! derived gas used, effective gas price, contract address and log positions, and logs.
//!
//! Not here: any check of the upstream (the data arrives verified).

use alloy_consensus::{ReceiptEnvelope, Transaction as _, transaction::SignerRecoverable};
use alloy_primitives::{Address, B256, Log, U256};
use alloy_rpc_types_eth::{Block, BlockTransactions, Header, Transaction, TransactionReceipt};
use serde_json::Value;
use sszgate_exec::map_on_cores;

use crate::{
    blocks::{VerifiedBlock, VerifiedTx},
    error::{Check, RpcError, mismatch},
    receipts::gas_used,
};

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|e| RpcError::Unprovable(format!("cannot render: {e}")))
}

/// The transactions of `block`; a block read without its bodies cannot answer for them.
pub(crate) fn txs(block: &VerifiedBlock) -> Result<&[VerifiedTx], RpcError> {
    block.txs.as_deref().ok_or_else(|| {
        RpcError::Unprovable(format!(
            "block {} was read without its transactions",
            block.anchor.number
        ))
    })
}

fn sender(tx: &VerifiedTx, index: usize) -> Result<Address, RpcError> {
    tx.envelope.recover_signer().or_else(|e| {
        mismatch(
            Check::Sender,
            format!("transactions[{index}]"),
            format!("no sender recovers from the signature of {}: {e}", tx.hash),
        )
    })
}

fn tx_object(block: &VerifiedBlock, index: usize) -> Result<Transaction, RpcError> {
    let tx = &txs(block)?[index];
    Ok(Transaction {
        inner: alloy_consensus::transaction::Recovered::new_unchecked(
            tx.envelope.clone(),
            sender(tx, index)?,
        ),
        block_hash: Some(block.anchor.hash),
        block_number: Some(block.anchor.number),
        transaction_index: Some(index as u64),
        effective_gas_price: Some(
            tx.envelope
                .effective_gas_price(block.header.base_fee_per_gas),
        ),
        block_timestamp: Some(block.header.timestamp),
    })
}

/// Transaction `index` of `block` (`eth_getTransactionBy*`).
pub(crate) fn transaction(block: &VerifiedBlock, index: usize) -> Result<Value, RpcError> {
    to_json(&tx_object(block, index)?)
}

/// Transactions below this many are rendered on the calling thread.
const PARALLEL_FROM: usize = 32;

/// The transaction objects of a full block. Sender recovery is most of the cost (~50 µs a
/// signature; 170 transactions took 9 ms on one core, docs/benchmarks.md), so the block is
/// split over the machine's cores.
fn tx_objects(block: &VerifiedBlock, count: usize) -> Result<Vec<Transaction>, RpcError> {
    map_on_cores(count, PARALLEL_FROM, |i| tx_object(block, i))
}

/// `block` as `eth_getBlockBy*` answers it (`full`: transaction objects).
pub(crate) fn block(block: &VerifiedBlock, full: bool) -> Result<Value, RpcError> {
    let all = txs(block)?;
    let transactions = if full {
        BlockTransactions::Full(tx_objects(block, all.len())?)
    } else {
        BlockTransactions::Hashes(all.iter().map(|t| t.hash).collect())
    };
    let rendered: Block<Transaction> = Block {
        header: Header {
            hash: block.anchor.hash,
            inner: block.header.clone(),
            total_difficulty: None,
            size: Some(U256::from(rlp_size(block, all))),
        },
        uncles: Vec::new(),
        transactions,
        withdrawals: block.withdrawals.clone(),
    };
    to_json(&rendered)
}

/// The length of the block's RLP encoding (header, transactions, no ommers, withdrawals).
fn rlp_size(block: &VerifiedBlock, txs: &[VerifiedTx]) -> usize {
    let whole = alloy_consensus::Block {
        header: block.header.clone(),
        body: alloy_consensus::BlockBody {
            transactions: txs.iter().map(|t| t.envelope.clone()).collect::<Vec<_>>(),
            ommers: Vec::new(),
            withdrawals: block.withdrawals.clone(),
        },
    };
    alloy_rlp::Encodable::length(&whole)
}

/// Logs of receipt `i`, positioned in the block.
fn logs_of(
    block: &VerifiedBlock,
    receipts: &[ReceiptEnvelope<Log>],
    i: usize,
    tx_hash: B256,
) -> ReceiptEnvelope<alloy_rpc_types_eth::Log> {
    let mut log_index: u64 = receipts[..i].iter().map(|r| r.logs().len() as u64).sum();
    receipts[i].clone().map_logs(|inner| {
        let log = alloy_rpc_types_eth::Log {
            inner,
            block_hash: Some(block.anchor.hash),
            block_number: Some(block.anchor.number),
            block_timestamp: Some(block.header.timestamp),
            transaction_hash: Some(tx_hash),
            transaction_index: Some(i as u64),
            log_index: Some(log_index),
            removed: false,
        };
        log_index += 1;
        log
    })
}

/// Receipt `i` of `block` (`eth_getTransactionReceipt`), from the verified receipts;
/// `blob_fee` is the block's blob base fee when the chain's blob schedule gives it.
pub(crate) fn receipt(
    block: &VerifiedBlock,
    receipts: &[ReceiptEnvelope<Log>],
    i: usize,
    blob_fee: Option<u128>,
) -> Result<Value, RpcError> {
    let tx = &txs(block)?[i];
    let from = sender(tx, i)?;
    let contract_address = tx
        .envelope
        .kind()
        .is_create()
        .then(|| from.create(tx.envelope.nonce()));
    let rendered = TransactionReceipt {
        inner: logs_of(block, receipts, i, tx.hash),
        transaction_hash: tx.hash,
        transaction_index: Some(i as u64),
        block_hash: Some(block.anchor.hash),
        block_number: Some(block.anchor.number),
        gas_used: gas_used(receipts, i),
        effective_gas_price: tx
            .envelope
            .effective_gas_price(block.header.base_fee_per_gas),
        blob_gas_used: tx.envelope.blob_gas_used(),
        blob_gas_price: tx.envelope.blob_gas_used().and(blob_fee),
        from,
        to: tx.envelope.to(),
        contract_address,
    };
    to_json(&rendered)
}

/// The logs of `block` that `keep` selects, positioned in the block.
pub(crate) fn logs(
    block: &VerifiedBlock,
    receipts: &[ReceiptEnvelope<Log>],
    keep: impl Fn(&Log) -> bool,
) -> Result<Vec<Value>, RpcError> {
    let all = txs(block)?;
    let mut out = Vec::new();
    for (i, tx) in all.iter().enumerate() {
        let positioned = logs_of(block, receipts, i, tx.hash);
        for log in positioned.logs() {
            if keep(&log.inner) {
                out.push(to_json(log)?);
            }
        }
    }
    Ok(out)
}
