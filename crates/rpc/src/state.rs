//! EIP-1186 proofs (`eth_getProof` answers) checked against a verified state root with
//! `sszgate-exec`'s Patricia walk (the one the proof verifier uses): the account (or its
//! absence) under `keccak256(address)`, each storage slot (or its absence, value 0) under
//! `keccak256(slot)` in the proven storage root, the node's values compared with the proven
//! ones, and that the proof is for the address and slots asked for. A proof that stops
//! before the key is resolved fails.
//!
//! Not here: fetching the proof or the header (`verifier`).

use alloy_primitives::{Address, B256};
use alloy_rpc_types_eth::EIP1186AccountProofResponse;
use alloy_trie::{EMPTY_ROOT_HASH, KECCAK_EMPTY, TrieAccount};
use sszgate_exec::account::{prove_account, prove_slot};

use crate::error::{Check, RpcError, mismatch};

/// Checks `proof` for `address` and `keys` against `state_root`; returns the account as the
/// state holds it (an absent account as the empty account, whatever hashes the node wrote
/// for it: geth from 1.17 answers zero hashes for an account that does not exist).
pub(crate) fn check_account_proof(
    proof: &EIP1186AccountProofResponse,
    state_root: B256,
    address: Address,
    keys: &[B256],
) -> Result<TrieAccount, RpcError> {
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
    let claimed = TrieAccount {
        nonce: proof.nonce,
        balance: proof.balance,
        storage_root: proof.storage_hash,
        code_hash: proof.code_hash,
    };
    let proven = match prove_account(state_root, address, &slices(&proof.account_proof)) {
        Ok(proven) => proven,
        Err(e) => {
            return mismatch(
                Check::AccountProof,
                "accountProof",
                format!("the account is not proven by the state root {state_root}: {e}"),
            );
        }
    };
    // An empty account is usually absent from the trie (EIP-161); either proof gives the same
    // answer. Absent, the node may write its hashes as the empty ones or as zero (geth).
    let empty = claimed.nonce == 0
        && claimed.balance.is_zero()
        && [EMPTY_ROOT_HASH, B256::ZERO].contains(&claimed.storage_root)
        && [KECCAK_EMPTY, B256::ZERO].contains(&claimed.code_hash);
    if proven != claimed && !(empty && proven == TrieAccount::default()) {
        return mismatch(
            Check::AccountProof,
            "accountProof",
            format!(
                "the account (nonce, balance, storageHash, codeHash) differs from the one the state root {state_root} proves"
            ),
        );
    }
    check_storage(proof, proven.storage_root, keys)?;
    Ok(proven)
}

/// The nodes of a proof as byte slices, the form the Patricia walk takes.
fn slices(nodes: &[alloy_primitives::Bytes]) -> Vec<&[u8]> {
    nodes.iter().map(|n| &n[..]).collect()
}

/// Checks each storage proof of `proof` against `storage_root` (the proven account's).
fn check_storage(
    proof: &EIP1186AccountProofResponse,
    storage_root: B256,
    keys: &[B256],
) -> Result<(), RpcError> {
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
        let value = prove_slot(storage_root, *key, &slices(&slot.proof));
        if value.as_ref() != Ok(&slot.value) {
            let why = value.map_or_else(|e| e, |v| format!("the proven value is {v}"));
            return mismatch(
                Check::StorageProof,
                format!("storageProof[{i}]"),
                format!(
                    "value {} of slot {key} is not proven by the storage root {storage_root}: {why}",
                    slot.value
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use alloy_primitives::U256;

    use super::*;

    /// geth's `eth_getProof` of an account that does not exist (zero hashes, an empty storage
    /// proof), with the state root of its block.
    fn absent_account() -> (EIP1186AccountProofResponse, B256) {
        let text = include_str!("../testdata/geth-absent-account.json");
        let doc: serde_json::Value = serde_json::from_str(text).unwrap();
        let proof = serde_json::from_value(doc["proof"].clone()).unwrap();
        (proof, doc["stateRoot"].as_str().unwrap().parse().unwrap())
    }

    #[test]
    fn an_absent_account_as_geth_proves_it_is_the_empty_account() {
        let (proof, root) = absent_account();
        let keys = [B256::ZERO];
        let account = check_account_proof(&proof, root, proof.address, &keys).unwrap();
        assert_eq!(account, TrieAccount::default());
        assert_eq!(account.code_hash, KECCAK_EMPTY);
    }

    #[test]
    fn an_absence_proof_does_not_prove_a_balance_nonce_or_storage_value() {
        let (proof, root) = absent_account();
        let keys = [B256::ZERO];
        let mut rich = proof.clone();
        rich.balance = U256::from(1);
        let e = check_account_proof(&rich, root, proof.address, &keys).unwrap_err();
        assert!(e.to_string().contains("account_proof"), "{e}");
        let mut used = proof.clone();
        used.nonce = 1;
        assert!(check_account_proof(&used, root, proof.address, &keys).is_err());
        let mut stored = proof.clone();
        stored.storage_proof[0].value = U256::from(7);
        let e = check_account_proof(&stored, root, proof.address, &keys).unwrap_err();
        assert!(e.to_string().contains("storage_proof"), "{e}");
        let mut other_root = root.0;
        other_root[0] ^= 1;
        assert!(check_account_proof(&proof, other_root.into(), proof.address, &keys).is_err());
    }
}
