//! The account methods over an `AccountProof` (spec §4.6, §9.3): eth_getBalance,
//! eth_getTransactionCount, eth_getStorageAt, eth_getCode and eth_getProof; and the
//! `StateProof` (§3.3) every state proof ends in.
//!
//! Differences from colibri: a truncated Patricia proof is an error (§15 item 2, see
//! `patricia`); a block-hash argument must equal the proven hash (§15 item 8: colibri's
//! comparison is inverted); storage keys must be exactly the ones asked for.

use alloy_primitives::{Address, B256, U256, keccak256};
use alloy_trie::TrieAccount;
use serde_json::{Value, json};
use sszgate_exec::account;

use crate::error::{Check, ProofError, ensure, fail};
use crate::header::verify_header;
use crate::multiproof::{self, BLOCK_HASH, BLOCK_NUMBER, STATE_ROOT, u64_leaf};
use crate::params::{self, BlockArg};
use crate::render::{bytes, qty, qty256};
use crate::tags::{ProvenBlock, check_tag};
use crate::trust::TrustedState;
use crate::types::{AccountProof, BigBytes, DataUnion, StateBlockUnion, StateProof, StorageProof};

/// An account as proven: its fields (empty when absent) and its slots' values.
#[derive(Debug, Clone)]
pub struct ProvenAccount {
    /// The state root the proof starts at.
    pub state_root: B256,
    /// Nonce, balance, storage root and code hash.
    pub account: TrieAccount,
    /// Values of the proven slots, in proof order.
    pub storage: Vec<(B256, U256)>,
}

/// Walks an account's Patricia proofs (`sszgate-exec`'s, as the local mode): the account under
/// `keccak256(address)` (empty when absent), each slot under `keccak256(key)` in its storage
/// root (zero when absent). `what` names the proof in errors.
pub fn prove_account(
    nodes: &[BigBytes],
    address: Address,
    slots: &[StorageProof],
    what: &str,
) -> Result<ProvenAccount, ProofError> {
    let state_root = keccak256(nodes.first().map(|n| &n[..]).unwrap_or_default());
    let bad = |check, detail: String| ProofError::Check {
        check,
        detail: format!("{what}: {detail}"),
    };
    let account = account::prove_account(state_root, address, nodes)
        .map_err(|e| bad(Check::AccountProof, e))?;
    let mut storage = Vec::with_capacity(slots.len());
    for (i, slot) in slots.iter().enumerate() {
        let value = account::prove_slot(account.storage_root, slot.key, &slot.proof)
            .map_err(|e| bad(Check::StorageProof, format!("storage_proof[{i}]: {e}")))?;
        storage.push((slot.key, value));
    }
    Ok(ProvenAccount {
        state_root,
        account,
        storage,
    })
}

/// Checks a `StateProof`: `state_root` (and the block hash or number it names) proven to the
/// header, the header to a signature, and the block argument against what was proven (a tag
/// by `tags`' rules).
pub fn verify_state_proof(
    trust: &TrustedState,
    sp: &StateProof,
    state_root: B256,
    block: &BlockArg,
) -> Result<(), ProofError> {
    let mut leaves = multiproof::Leaves::from([(STATE_ROOT, state_root)]);
    let matches = match (&sp.block, block) {
        (StateBlockUnion::None, BlockArg::Tag(tag)) => {
            let at = ProvenBlock {
                slot: sp.header.slot,
                number: None,
            };
            check_tag(trust, tag, at)?;
            true
        }
        (StateBlockUnion::Hash(h), BlockArg::Hash(asked)) => {
            leaves.insert(BLOCK_HASH, *h);
            h == asked
        }
        (StateBlockUnion::Number(n), BlockArg::Number(asked)) => {
            leaves.insert(BLOCK_NUMBER, u64_leaf(*n));
            n == asked
        }
        _ => false,
    };
    ensure(matches, Check::Request, || {
        format!(
            "StateProof.block is {:?}, the request's block is {block:?}",
            sp.block
        )
    })?;
    multiproof::verify(&leaves, &sp.proof, sp.header.body_root, "StateProof.proof")?;
    verify_header(trust, &sp.header, &sp.header_proof, "StateProof")
}

/// The storage keys a method asks for.
fn asked_keys(method: &str, params: &Value) -> Result<Vec<B256>, ProofError> {
    let key = |v: &Value| {
        params::u256_of(v)
            .map(B256::from)
            .ok_or_else(|| ProofError::Params("param 1: not a storage key".into()))
    };
    match method {
        "eth_getStorageAt" => Ok(vec![key(params::param(params, 1)?)?]),
        "eth_getProof" => params::param(params, 1)?
            .as_array()
            .ok_or_else(|| ProofError::Params("param 1: not a list of keys".into()))?
            .iter()
            .map(key)
            .collect(),
        _ => Ok(Vec::new()),
    }
}

/// An account method: the proofs walked, the state root proven, the request matched.
pub fn verify_account(
    trust: &TrustedState,
    p: &AccountProof,
    data: &DataUnion,
    method: &str,
    params: &Value,
) -> Result<Value, ProofError> {
    let asked = params::address(params, 0)?;
    ensure(asked == p.address, Check::Request, || {
        format!(
            "address: the proof is for {}, {asked} was asked for",
            p.address
        )
    })?;
    let keys = asked_keys(method, params)?;
    let proven_keys: Vec<B256> = p.storage_proof.iter().map(|s| s.key).collect();
    ensure(proven_keys == keys, Check::Request, || {
        format!("storage keys: the proof is for {proven_keys:?}, {keys:?} were asked for")
    })?;
    let block_index = params
        .as_array()
        .map_or(0, |a| a.len().saturating_sub(1))
        .max(1);
    let block = params::block(params, block_index)?;
    let a = prove_account(
        &p.account_proof,
        p.address,
        &p.storage_proof,
        "AccountProof",
    )?;
    verify_state_proof(trust, &p.state_proof, a.state_root, &block)?;
    let acc = &a.account;
    match method {
        "eth_getBalance" => Ok(qty256(acc.balance)),
        "eth_getTransactionCount" => Ok(qty(acc.nonce)),
        "eth_getStorageAt" => Ok(bytes(B256::from(a.storage[0].1))),
        "eth_getCode" => match data {
            DataUnion::Bytes(code) if keccak256(&code[..]) == acc.code_hash => Ok(bytes(&code[..])),
            DataUnion::Bytes(_) => fail(
                Check::Code,
                "the code does not hash to the proven code hash",
            ),
            _ => fail(
                Check::ProofKind,
                "eth_getCode needs the code as data (bytes)",
            ),
        },
        _ => Ok(render_proof(p, &a)),
    }
}

/// eth_getProof's answer as EIP-1186 has it and geth answers (colibri leaves out `address`
/// and writes storage values as 32-byte words).
fn render_proof(p: &AccountProof, a: &ProvenAccount) -> Value {
    let storage: Vec<Value> = p
        .storage_proof
        .iter()
        .zip(&a.storage)
        .map(|(s, (key, value))| json!({"key": bytes(key), "value": qty256(*value), "proof": s.proof.iter().map(|n| bytes(&n[..])).collect::<Vec<_>>()}))
        .collect();
    json!({
        "address": bytes(p.address),
        "balance": qty256(a.account.balance), "codeHash": bytes(a.account.code_hash),
        "nonce": qty(a.account.nonce), "storageHash": bytes(a.account.storage_root),
        "accountProof": p.account_proof.iter().map(|n| bytes(&n[..])).collect::<Vec<_>>(),
        "storageProof": storage,
    })
}
