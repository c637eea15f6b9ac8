//! eth_blockNumber over a `BlockNumberProof` (spec §4.1) and eth_getBlockBy* over a
//! `BlockProof` (§4.2, rendered per §5.4).
//!
//! Difference from colibri (§15 item 10): `withdrawalsRoot` is the execution layer's Patricia
//! root of the withdrawals, the value in the block header, not the SSZ root of the list.
//! `requestsHash` is not rendered (the payload does not carry the requests). What does not
//! live here: transactions (`txs`).

use std::collections::BTreeMap;

use alloy_eips::eip4895::Withdrawal as ElWithdrawal;
use alloy_primitives::{B256, keccak256};
use alloy_trie::root::ordered_trie_root_with_encoder;
use serde_json::{Value, json};
use sszgate_light::block::ExecutionPayload;
use tree_hash::TreeHash;

use crate::error::ProofError;
use crate::header::verify_header;
use crate::multiproof::{self, BLOCK_NUMBER, TIMESTAMP, u64_leaf};
use crate::params;
use crate::render::{bytes, qty, qty256};
use crate::trust::TrustedState;
use crate::txs::{Position, check_block_arg, decode_tx, render_tx};
use crate::types::{BlockNumberProof, BlockProof, ExecutionPayloadUnion};

/// Body gindex of the execution payload.
const EXECUTION_PAYLOAD: u64 = 25;
/// `keccak256(rlp([]))`: the hash of an empty uncle list.
const EMPTY_UNCLES: B256 =
    alloy_primitives::b256!("1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347");

/// eth_blockNumber: number and timestamp proven to the header, the header to a signature.
pub fn verify_block_number(
    trust: &TrustedState,
    p: &BlockNumberProof,
) -> Result<Value, ProofError> {
    let leaves = BTreeMap::from([
        (BLOCK_NUMBER, u64_leaf(p.block_number)),
        (TIMESTAMP, u64_leaf(p.timestamp)),
    ]);
    multiproof::verify(
        &leaves,
        &p.proof,
        p.header.body_root,
        "BlockNumberProof.proof",
    )?;
    verify_header(trust, &p.header, &p.header_proof, "BlockNumberProof")?;
    Ok(qty(p.block_number))
}

/// eth_getBlockByNumber / eth_getBlockByHash: the whole payload proven to the header.
pub fn verify_block(
    trust: &TrustedState,
    p: &BlockProof,
    params: &Value,
) -> Result<Value, ProofError> {
    let ExecutionPayloadUnion::Deneb(payload) = &p.execution_payload;
    let leaves = BTreeMap::from([(EXECUTION_PAYLOAD, payload.tree_hash_root())]);
    multiproof::verify(&leaves, &p.proof, p.header.body_root, "BlockProof.proof")?;
    check_block_arg(
        &params::block(params, 0)?,
        payload.block_hash,
        payload.block_number,
    )?;
    verify_header(trust, &p.header, &p.header_proof, "BlockProof")?;
    let full = params.get(1).and_then(Value::as_bool).unwrap_or(false);
    render_block(payload, p.header.parent_root, full)
}

fn withdrawals_root(payload: &ExecutionPayload) -> B256 {
    let el: Vec<ElWithdrawal> = payload
        .withdrawals
        .iter()
        .map(|w| ElWithdrawal {
            index: w.index,
            validator_index: w.validator_index,
            address: w.address,
            amount: w.amount,
        })
        .collect();
    alloy_consensus::proofs::calculate_withdrawals_root(&el)
}

fn transactions(payload: &ExecutionPayload, full: bool) -> Result<Vec<Value>, ProofError> {
    let base_fee = u64::try_from(payload.base_fee_per_gas).unwrap_or(u64::MAX);
    let mut out = Vec::with_capacity(payload.transactions.len());
    for (i, raw) in payload.transactions.iter().enumerate() {
        if !full {
            out.push(bytes(keccak256(&raw[..])));
            continue;
        }
        let tx = decode_tx(raw, &format!("executionPayload.transactions[{i}]"))?;
        let at = Position {
            block_hash: payload.block_hash,
            block_number: payload.block_number,
            index: i as u32,
        };
        out.push(render_tx(&tx, at, base_fee));
    }
    Ok(out)
}

/// Renders a proven payload as colibri's `EthBlockData` (§5.4), with the derived fields
/// computed here.
fn render_block(
    payload: &ExecutionPayload,
    parent_beacon_root: B256,
    full: bool,
) -> Result<Value, ProofError> {
    let p = payload;
    let txs_root =
        ordered_trie_root_with_encoder(&p.transactions, |tx, buf| buf.extend_from_slice(tx));
    let withdrawals: Vec<Value> = p
        .withdrawals
        .iter()
        .map(|w| json!({"index": qty(w.index), "validatorIndex": qty(w.validator_index), "address": bytes(w.address), "amount": qty(w.amount)}))
        .collect();
    Ok(json!({
        "number": qty(p.block_number), "hash": bytes(p.block_hash),
        "transactions": transactions(p, full)?, "logsBloom": bytes(p.logs_bloom),
        "receiptsRoot": bytes(p.receipts_root), "extraData": bytes(&p.extra_data[..]),
        "withdrawalsRoot": bytes(withdrawals_root(p)), "baseFeePerGas": qty256(p.base_fee_per_gas),
        "nonce": bytes([0u8; 8]), "miner": bytes(p.fee_recipient), "withdrawals": withdrawals,
        "excessBlobGas": qty(p.excess_blob_gas), "difficulty": qty(0u8), "gasLimit": qty(p.gas_limit),
        "gasUsed": qty(p.gas_used), "timestamp": qty(p.timestamp), "mixHash": bytes(p.prev_randao),
        "parentHash": bytes(p.parent_hash), "uncles": [], "parentBeaconBlockRoot": bytes(parent_beacon_root),
        "sha3Uncles": bytes(EMPTY_UNCLES), "transactionsRoot": bytes(txs_root),
        "stateRoot": bytes(p.state_root), "blobGasUsed": qty(p.blob_gas_used),
    }))
}
