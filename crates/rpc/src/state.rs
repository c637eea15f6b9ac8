//! EIP-1186 proofs (`eth_getProof` answers) checked with alloy-trie against a verified state
//! root: the account (or its absence) under `keccak256(address)`, each storage slot (or its
//! absence, value 0) under `keccak256(slot)` in the proven storage root, and that the proof is
//! for the address and slots asked for. A proof that stops before the key is resolved fails.
//!
//! Not here: fetching the proof or the header (`verifier`).

use alloy_primitives::{Address, B256, keccak256};
use alloy_rpc_types_eth::EIP1186AccountProofResponse;
use alloy_trie::{EMPTY_ROOT_HASH, KECCAK_EMPTY, Nibbles, TrieAccount, proof::verify_proof};

use crate::error::{Check, RpcError, mismatch};

/// Checks `proof` for `address` and `keys` against `state_root`.
pub(crate) fn check_account_proof(
    proof: &EIP1186AccountProofResponse,
    state_root: B256,
    address: Address,
    keys: &[B256],
) -> Result<(), RpcError> {
    if proof.address != address {
        return mismatch(
            Check::ProofSubject,
            "address",
            format!(
                "the proof is for {}, {address} was asked for",
                proof.address
            ),
        );
    }
    let account = TrieAccount {
        nonce: proof.nonce,
        balance: proof.balance,
        storage_root: proof.storage_hash,
        code_hash: proof.code_hash,
    };
    let key = Nibbles::unpack(keccak256(address));
    let present = verify_proof(
        state_root,
        key,
        Some(alloy_rlp::encode(account)),
        &proof.account_proof,
    );
    // An empty account is usually absent from the trie (EIP-161); either proof gives the same
    // answer, so either is accepted.
    let empty = account.nonce == 0
        && account.balance.is_zero()
        && account.storage_root == EMPTY_ROOT_HASH
        && account.code_hash == KECCAK_EMPTY;
    let outcome = match present {
        Err(_) if empty => verify_proof(state_root, key, None, &proof.account_proof),
        other => other,
    };
    if let Err(e) = outcome {
        return mismatch(
            Check::AccountProof,
            "accountProof",
            format!(
                "the account (nonce, balance, storageHash, codeHash) is not proven by the state root {state_root}: {e}"
            ),
        );
    }
    check_storage(proof, keys)
}

fn check_storage(proof: &EIP1186AccountProofResponse, keys: &[B256]) -> Result<(), RpcError> {
    if proof.storage_proof.len() != keys.len() {
        return mismatch(
            Check::ProofSubject,
            "storageProof",
            format!(
                "{} storage proofs for {} slots asked for",
                proof.storage_proof.len(),
                keys.len()
            ),
        );
    }
    for (i, (slot, key)) in proof.storage_proof.iter().zip(keys).enumerate() {
        if slot.key.as_b256() != *key {
            return mismatch(
                Check::ProofSubject,
                format!("storageProof[{i}].key"),
                format!(
                    "the proof is for slot {}, {key} was asked for",
                    slot.key.as_b256()
                ),
            );
        }
        let expected = (!slot.value.is_zero()).then(|| alloy_rlp::encode(slot.value));
        let path = Nibbles::unpack(keccak256(key));
        if let Err(e) = verify_proof(proof.storage_hash, path, expected, &slot.proof) {
            return mismatch(
                Check::StorageProof,
                format!("storageProof[{i}]"),
                format!(
                    "value {} of slot {key} is not proven by the storage root {}: {e}",
                    slot.value, proof.storage_hash
                ),
            );
        }
    }
    Ok(())
}
