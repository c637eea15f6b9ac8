//! Transactions: a raw transaction decoded (alloy), its sender recovered and rendered as
//! colibri renders `EthTransactionData` (spec §5.1, §11); and the eth_getTransactionBy*
//! methods over a `TransactionProof` (§4.3).
//!
//! What does not live here: the header's signature (`header`), receipts (`receipts`).

use alloy_consensus::transaction::SignerRecoverable;
use alloy_consensus::{Transaction as _, TxEnvelope};
use alloy_eips::eip2718::{Decodable2718, Typed2718};
use alloy_primitives::{Address, B256, keccak256};
use serde_json::{Value, json};
use tree_hash::TreeHash;

use crate::error::{Check, ProofError, ensure};
use crate::header::verify_header;
use crate::multiproof::{self, BASE_FEE, BLOCK_HASH, BLOCK_NUMBER, u64_leaf};
use crate::params::{self, BlockArg};
use crate::render::{bytes, qty, qty256};
use crate::tags::{ProvenBlock, check_block};
use crate::trust::TrustedState;
use crate::types::{BigBytes, TransactionProof};

/// A decoded transaction with what the verifier derives from it.
#[derive(Debug, Clone)]
pub struct Tx {
    /// The transaction.
    pub envelope: TxEnvelope,
    /// `keccak256(raw)`.
    pub hash: B256,
    /// The recovered sender.
    pub from: Address,
}

/// Decodes a raw EIP-2718 transaction and recovers its sender; `what` names it in errors.
pub fn decode_tx(raw: &[u8], what: &str) -> Result<Tx, ProofError> {
    let bad = |detail: String| ProofError::Check {
        check: Check::Transaction,
        detail: format!("{what}: {detail}"),
    };
    let mut buf = raw;
    let envelope =
        TxEnvelope::decode_2718(&mut buf).map_err(|e| bad(format!("does not decode: {e}")))?;
    if !buf.is_empty() {
        return Err(bad(format!("{} bytes after the transaction", buf.len())));
    }
    let from = envelope
        .recover_signer()
        .map_err(|e| bad(format!("no sender recovers from the signature: {e}")))?;
    Ok(Tx {
        envelope,
        hash: keccak256(raw),
        from,
    })
}

/// The multiproof leaf of a transaction: `hash_tree_root(BigBytes(raw))`.
pub fn tx_leaf(raw: &BigBytes) -> B256 {
    raw.tree_hash_root()
}

/// The multiproof leaves of a block's number and hash and its transaction `index`.
pub fn tx_leaves(number: u64, hash: B256, index: u32, raw: &BigBytes) -> multiproof::Leaves {
    multiproof::Leaves::from([
        (BLOCK_NUMBER, u64_leaf(number)),
        (BLOCK_HASH, hash),
        (multiproof::transaction_gindex(index), tx_leaf(raw)),
    ])
}

/// Where a transaction sits: block hash, number and index.
#[derive(Debug, Clone, Copy)]
pub struct Position {
    /// Block hash.
    pub block_hash: B256,
    /// Block number.
    pub block_number: u64,
    /// Index in the block.
    pub index: u32,
}

fn access_list(tx: &TxEnvelope) -> Value {
    let entries = tx.access_list().map(|l| l.0.as_slice()).unwrap_or_default();
    entries
        .iter()
        .map(|e| json!({"address": bytes(e.address), "storageKeys": e.storage_keys.iter().map(bytes).collect::<Vec<_>>()}))
        .collect()
}

fn authorization_list(tx: &TxEnvelope) -> Value {
    let entries = tx.authorization_list().unwrap_or_default();
    entries
        .iter()
        .map(|a| {
            json!({"address": bytes(a.address), "chainId": qty256(a.chain_id), "nonce": qty(a.nonce),
                   "r": qty256(a.r()), "s": qty256(a.s()),
                   "yParity": qty(a.y_parity())})
        })
        .collect()
}

/// Renders `tx` at `at` as colibri's `EthTransactionData` with geth's number forms (`r`, `s`
/// as quantities, where colibri writes 32-byte words); `base_fee` gives the effective
/// `gasPrice` of fee-market transactions.
pub fn render_tx(tx: &Tx, at: Position, base_fee: u64) -> Value {
    let t = &tx.envelope;
    let sig = t.signature();
    let parity = u8::from(sig.v());
    let legacy = t.is_legacy();
    let v: u128 = match (legacy, t.chain_id()) {
        (true, Some(id)) => u128::from(id) * 2 + 35 + u128::from(parity),
        (true, None) => 27 + u128::from(parity),
        (false, _) => u128::from(parity),
    };
    let mut out = json!({
        "blockHash": bytes(at.block_hash), "blockNumber": qty(at.block_number), "hash": bytes(tx.hash),
        "transactionIndex": qty(at.index), "type": qty(t.ty()), "nonce": qty(t.nonce()),
        "input": bytes(t.input()), "r": qty256(sig.r()),
        "s": qty256(sig.s()), "v": qty(v), "gas": qty(t.gas_limit()),
        "from": bytes(tx.from), "to": t.to().map(bytes).unwrap_or(Value::Null),
        "value": qty256(t.value()), "gasPrice": qty(t.effective_gas_price(Some(base_fee))),
        "accessList": access_list(t), "authorizationList": authorization_list(t),
        "blobVersionedHashes": t.blob_versioned_hashes().unwrap_or_default().iter().map(bytes).collect::<Vec<_>>(),
    });
    let o = out.as_object_mut().expect("an object");
    if let Some(id) = t.chain_id() {
        o.insert("chainId".into(), qty(id));
    }
    if !legacy {
        o.insert("yParity".into(), qty(parity));
    }
    if let Some(priority) = t.max_priority_fee_per_gas() {
        o.insert("maxFeePerGas".into(), qty(t.max_fee_per_gas()));
        o.insert("maxPriorityFeePerGas".into(), qty(priority));
    }
    if let Some(blob_fee) = t.max_fee_per_blob_gas() {
        o.insert("maxFeePerBlobGas".into(), qty(blob_fee));
    }
    out
}

/// Checks the request's parameters against the proven transaction.
fn check_request(
    trust: &TrustedState,
    method: &str,
    params: &serde_json::Value,
    tx: &Tx,
    p: &TransactionProof,
) -> Result<(), ProofError> {
    let (index, block) = match method {
        "eth_getTransactionByHash" => {
            let asked = params::hash(params, 0)?;
            return ensure(asked == tx.hash, Check::Request, || {
                format!(
                    "transaction: the proof is for {}, {asked} was asked for",
                    tx.hash
                )
            });
        }
        "eth_getTransactionByBlockHashAndIndex" => (
            params::quantity(params, 1)?,
            BlockArg::Hash(params::hash(params, 0)?),
        ),
        _ => (params::quantity(params, 1)?, params::block(params, 0)?),
    };
    ensure(
        index == u64::from(p.transaction_index),
        Check::Request,
        || {
            format!(
                "transactionIndex: the proof is for {}, {index} was asked for",
                p.transaction_index
            )
        },
    )?;
    let at = ProvenBlock {
        slot: p.header.slot,
        number: Some(p.block_number),
    };
    check_block(trust, &block, at, Some(p.block_hash))
}

/// eth_getTransactionBy*: the transaction, number, hash and base fee proven to the header,
/// the header to a signature, the proof to the request.
pub fn verify_transaction(
    trust: &TrustedState,
    p: &TransactionProof,
    method: &str,
    params: &Value,
) -> Result<Value, ProofError> {
    let tx = decode_tx(&p.transaction, "TransactionProof.transaction")?;
    check_request(trust, method, params, &tx, p)?;
    let mut leaves = tx_leaves(
        p.block_number,
        p.block_hash,
        p.transaction_index,
        &p.transaction,
    );
    leaves.insert(BASE_FEE, u64_leaf(p.base_fee_per_gas));
    multiproof::verify(
        &leaves,
        &p.proof,
        p.header.body_root,
        "TransactionProof.proof",
    )?;
    verify_header(trust, &p.header, &p.header_proof, "TransactionProof")?;
    let at = Position {
        block_hash: p.block_hash,
        block_number: p.block_number,
        index: p.transaction_index,
    };
    Ok(render_tx(&tx, at, p.base_fee_per_gas))
}
