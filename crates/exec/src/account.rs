//! Accounts and storage slots proven by Merkle-Patricia proofs: the account under
//! `keccak256(address)` in a state root (an absent account is the empty account), a slot's
//! value under `keccak256(slot)` in the account's storage root (an absent slot is zero).
//! Both verifiers read accounts through these two functions, whatever their proofs' wire
//! form (EIP-1186 JSON, the SSZ proof format).
//!
//! Not here: the walk itself (`patricia`); what the caller compares the values with.

use alloy_primitives::{Address, B256, U256, keccak256};
use alloy_rlp::Decodable;
use alloy_trie::TrieAccount;

use crate::patricia;

/// The account `address` holds under `state_root`, as `nodes` prove it: the empty account
/// ([`TrieAccount::default`]: empty storage root and code hash) when proven absent.
pub fn prove_account<N: std::ops::Deref<Target = [u8]>>(
    state_root: B256,
    address: Address,
    nodes: &[N],
) -> Result<TrieAccount, String> {
    match patricia::walk(state_root, keccak256(address).as_slice(), nodes)? {
        None => Ok(TrieAccount::default()),
        Some(rlp) => TrieAccount::decode(&mut rlp.as_slice())
            .map_err(|e| format!("the account does not decode: {e}")),
    }
}

/// The value of slot `key` under `storage_root`, as `nodes` prove it: zero when absent.
pub fn prove_slot<N: std::ops::Deref<Target = [u8]>>(
    storage_root: B256,
    key: B256,
    nodes: &[N],
) -> Result<U256, String> {
    match patricia::walk(storage_root, keccak256(key).as_slice(), nodes)? {
        None => Ok(U256::ZERO),
        Some(rlp) => {
            U256::decode(&mut rlp.as_slice()).map_err(|e| format!("the value does not decode: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use alloy_trie::{EMPTY_ROOT_HASH, HashBuilder, KECCAK_EMPTY, Nibbles, proof::ProofRetainer};

    use super::*;

    #[test]
    fn present_and_absent_accounts_and_slots() {
        let present = Address::repeat_byte(1);
        let account = TrieAccount {
            nonce: 7,
            balance: U256::from(99),
            storage_root: EMPTY_ROOT_HASH,
            code_hash: KECCAK_EMPTY,
        };
        let key = Nibbles::unpack(keccak256(present));
        let absent = Address::repeat_byte(2);
        let mut hb = HashBuilder::default().with_proof_retainer(ProofRetainer::new(vec![
            key,
            Nibbles::unpack(keccak256(absent)),
        ]));
        hb.add_leaf(key, &alloy_rlp::encode(account));
        let root = hb.root();
        let nodes: Vec<Vec<u8>> = hb
            .take_proof_nodes()
            .into_nodes_sorted()
            .into_iter()
            .map(|(_, n)| n.to_vec())
            .collect();
        assert_eq!(prove_account(root, present, &nodes), Ok(account));
        assert_eq!(
            prove_account(root, absent, &nodes),
            Ok(TrieAccount::default())
        );
        let no_nodes: [Vec<u8>; 0] = [];
        assert_eq!(
            prove_slot(EMPTY_ROOT_HASH, B256::ZERO, &no_nodes),
            Ok(U256::ZERO)
        );
        let err = prove_slot(root, B256::ZERO, &no_nodes).unwrap_err();
        assert!(err.contains("no nodes"), "{err}");
        let err = prove_account(B256::ZERO, present, &nodes).unwrap_err();
        assert!(err.contains("does not hash to the root"), "{err}");
    }
}
