//! eth_blockNumber over a `BlockNumberProof` (spec §4.1) and eth_getBlockBy* over a
//! `BlockProof` (§4.2, rendered per §5.4).
//!
//! Difference from colibri (§15 item 10): `withdrawalsRoot` is the execution layer's Patricia
//! root of the withdrawals, the value in the block header, not the SSZ root of the list.
//! `requestsHash` is not rendered (the payload does not carry the requests), but `size` is
//! (its length is fixed). What does not live here: transactions (`txs`).

use alloy_eips::eip4895::Withdrawal as ElWithdrawal;
use alloy_primitives::{B256, keccak256};
use alloy_trie::root::ordered_trie_root_with_encoder;
use serde_json::{Value, json};
use sszgate_light::block::ExecutionPayload;

use crate::error::ProofError;
use crate::header::verify_header;
use crate::multiproof::{self, BLOCK_NUMBER, TIMESTAMP, u64_leaf};
use crate::params;
use crate::payload_root::payload_root;
use crate::render::{bytes, qty, qty256};
use crate::tags::{ProvenBlock, check_block, check_tag};
use crate::trust::TrustedState;
use crate::txs::{Position, decode_tx, render_tx};
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
    let leaves = multiproof::Leaves::from([
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
    // The newest block number: the proven header must be fresh, as for `latest`.
    let at = ProvenBlock {
        slot: p.header.slot,
        number: Some(p.block_number),
    };
    check_tag(trust, "latest", at)?;
    Ok(qty(p.block_number))
}

/// eth_getBlockByNumber / eth_getBlockByHash: the whole payload proven to the header.
pub fn verify_block(
    trust: &TrustedState,
    p: &BlockProof,
    params: &Value,
) -> Result<Value, ProofError> {
    let ExecutionPayloadUnion::Deneb(payload) = &p.execution_payload;
    let leaves = multiproof::Leaves::from([(EXECUTION_PAYLOAD, payload_root(payload))]);
    multiproof::verify(&leaves, &p.proof, p.header.body_root, "BlockProof.proof")?;
    let at = ProvenBlock {
        slot: p.header.slot,
        number: Some(payload.block_number),
    };
    check_block(
        trust,
        &params::block(params, 0)?,
        at,
        Some(payload.block_hash),
    )?;
    verify_header(trust, &p.header, &p.header_proof, "BlockProof")?;
    let full = params.get(1).and_then(Value::as_bool).unwrap_or(false);
    let prague = trust.spec.lc_fork(p.header.slot) == Some(sszgate_light::spec::LcFork::Electra);
    let mut block = render_block(payload, p.header.parent_root, full)?;
    block["size"] = qty(rlp_size(payload, p.header.parent_root, prague) as u64);
    Ok(block)
}

/// The length of the block's RLP encoding (header, transactions, no ommers, withdrawals).
/// From Prague the header ends with `requestsHash`, which the payload does not carry: a
/// 32-byte word of fixed length, so a zero word stands in for it here.
fn rlp_size(p: &ExecutionPayload, parent_beacon_root: B256, prague: bool) -> usize {
    use alloy_rlp::{Encodable, Header as RlpHeader};
    let header = alloy_consensus::Header {
        parent_hash: p.parent_hash,
        ommers_hash: EMPTY_UNCLES,
        beneficiary: p.fee_recipient,
        state_root: p.state_root,
        transactions_root: B256::ZERO,
        receipts_root: p.receipts_root,
        logs_bloom: alloy_primitives::Bloom::from_slice(p.logs_bloom.as_slice()),
        difficulty: alloy_primitives::U256::ZERO,
        number: p.block_number,
        gas_limit: p.gas_limit,
        gas_used: p.gas_used,
        timestamp: p.timestamp,
        extra_data: p.extra_data.to_vec().into(),
        mix_hash: p.prev_randao,
        nonce: Default::default(),
        base_fee_per_gas: Some(u64::try_from(p.base_fee_per_gas).unwrap_or(u64::MAX)),
        withdrawals_root: Some(B256::ZERO),
        blob_gas_used: Some(p.blob_gas_used),
        excess_blob_gas: Some(p.excess_blob_gas),
        parent_beacon_block_root: Some(parent_beacon_root),
        requests_hash: prague.then_some(B256::ZERO),
        ..Default::default()
    };
    // A typed transaction is an RLP string of its bytes; a legacy one is its own RLP list.
    let txs: usize = p
        .transactions
        .iter()
        .map(|t| match t.first() {
            Some(b) if *b >= 0xc0 => t.len(),
            _ => t[..].length(),
        })
        .sum();
    let withdrawals: Vec<ElWithdrawal> = el_withdrawals(p);
    let list = |payload_length| {
        RlpHeader {
            list: true,
            payload_length,
        }
        .length()
            + payload_length
    };
    let body = header.length() + list(txs) + list(0) + withdrawals.length();
    list(body)
}

fn el_withdrawals(payload: &ExecutionPayload) -> Vec<ElWithdrawal> {
    payload
        .withdrawals
        .iter()
        .map(|w| ElWithdrawal {
            index: w.index,
            validator_index: w.validator_index,
            address: w.address,
            amount: w.amount,
        })
        .collect()
}

fn withdrawals_root(payload: &ExecutionPayload) -> B256 {
    alloy_consensus::proofs::calculate_withdrawals_root(&el_withdrawals(payload))
}

/// The block's transactions: hashes, or full objects (sender recovery, most of the cost,
/// spread over the cores as the local verifier does).
fn transactions(payload: &ExecutionPayload, full: bool) -> Result<Vec<Value>, ProofError> {
    let txs = &payload.transactions;
    if !full {
        return Ok(txs.iter().map(|raw| bytes(keccak256(&raw[..]))).collect());
    }
    let base_fee = u64::try_from(payload.base_fee_per_gas).unwrap_or(u64::MAX);
    sszgate_exec::map_on_cores(txs.len(), 32, |i| {
        let tx = decode_tx(&txs[i], &format!("executionPayload.transactions[{i}]"))?;
        let at = Position {
            block_hash: payload.block_hash,
            block_number: payload.block_number,
            index: i as u32,
        };
        let mut rendered = render_tx(&tx, at, base_fee);
        rendered["blockTimestamp"] = qty(payload.timestamp);
        Ok(rendered)
    })
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
