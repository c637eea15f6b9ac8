//! SSZ multiproofs (spec §1.3): the helper nodes of a set of leaves, sorted by generalized
//! index descending, folded up to the root. A single leaf's multiproof is its Merkle branch.
//!
//! Also the generalized indices of the execution payload fields inside a beacon block body
//! (§6). What does not live here: hashing containers (`tree_hash`), branches of a fixed depth
//! (`sszgate_light::merkle`).

use std::collections::{BTreeMap, BTreeSet};

use alloy_primitives::B256;
use sha2::{Digest, Sha256};

use crate::error::{Check, ProofError, ensure, fail};

/// `executionPayload.parentHash` in the body.
pub const PARENT_HASH: u64 = 800;
/// `executionPayload.stateRoot` in the body.
pub const STATE_ROOT: u64 = 802;
/// `executionPayload.receiptsRoot`.
pub const RECEIPTS_ROOT: u64 = 803;
/// `executionPayload.logsBloom`.
pub const LOGS_BLOOM: u64 = 804;
/// `executionPayload.blockNumber`.
pub const BLOCK_NUMBER: u64 = 806;
/// `executionPayload.timestamp`.
pub const TIMESTAMP: u64 = 809;
/// `executionPayload.baseFeePerGas`.
pub const BASE_FEE: u64 = 811;
/// `executionPayload.blockHash`.
pub const BLOCK_HASH: u64 = 812;
/// `executionPayload.transactions[0]`: list node 813, data subtree 1626, limit 2^20.
pub const TRANSACTION_0: u64 = 1626 << 20;
/// The greatest generalized index a multiproof leaf may have (depth 62: nodes stay `u64`).
const MAX_GINDEX: u64 = 1 << 62;

/// A `uint64` leaf: little-endian, zero-padded to 32 bytes.
pub fn u64_leaf(value: u64) -> B256 {
    let mut leaf = [0u8; 32];
    leaf[..8].copy_from_slice(&value.to_le_bytes());
    B256::from(leaf)
}

/// The generalized index of `transactions[index]` in the body.
pub fn transaction_gindex(index: u32) -> u64 {
    TRANSACTION_0 + u64::from(index)
}

/// `get_helper_indices`: the siblings of every node on the leaves' paths that are not on a
/// path themselves, in descending order.
pub fn helper_indices(leaves: &BTreeSet<u64>) -> Vec<u64> {
    let mut path = BTreeSet::new();
    for &leaf in leaves {
        let mut g = leaf;
        while g > 1 {
            path.insert(g);
            g /= 2;
        }
    }
    let helpers: BTreeSet<u64> = path
        .iter()
        .map(|g| g ^ 1)
        .filter(|s| !path.contains(s))
        .collect();
    helpers.into_iter().rev().collect()
}

fn hash_pair(left: &B256, right: &B256) -> B256 {
    let mut h = Sha256::new();
    h.update(left);
    h.update(right);
    B256::from_slice(&h.finalize())
}

/// Folds `leaves` (gindex → node) with `proof` (the helper nodes, descending) to the root,
/// and compares it with `root`. `what` names the proof in errors.
pub fn verify(
    leaves: &BTreeMap<u64, B256>,
    proof: &[B256],
    root: B256,
    what: &str,
) -> Result<(), ProofError> {
    if let Some(g) = leaves.keys().find(|g| **g < 2 || **g >= MAX_GINDEX) {
        return fail(
            Check::BodyRoot,
            format!("{what}: leaf gindex {g} out of range"),
        );
    }
    let indices: BTreeSet<u64> = leaves.keys().copied().collect();
    let helpers = helper_indices(&indices);
    ensure(helpers.len() == proof.len(), Check::BodyRoot, || {
        format!(
            "{what}: {} proof nodes, the leaves {:?} need {}",
            proof.len(),
            indices,
            helpers.len()
        )
    })?;
    let mut nodes: BTreeMap<u64, B256> = leaves.clone();
    nodes.extend(helpers.iter().copied().zip(proof.iter().copied()));
    // Deepest first: a node's parent is computed once both children are known.
    while let Some((&g, _)) = nodes.iter().next_back().filter(|(g, _)| **g > 1) {
        let (left, right) = (nodes.remove(&(g & !1)), nodes.remove(&(g | 1)));
        let (Some(left), Some(right)) = (left, right) else {
            return fail(Check::BodyRoot, format!("{what}: node {g} has no sibling"));
        };
        if nodes.insert(g / 2, hash_pair(&left, &right)).is_some() {
            return fail(
                Check::BodyRoot,
                format!("{what}: node {} given twice", g / 2),
            );
        }
    }
    let got = nodes.get(&1).copied().unwrap_or_default();
    ensure(got == root, Check::BodyRoot, || {
        format!("{what}: the proof leads to {got}, the header's body root is {root}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_leaf_helpers_are_its_branch() {
        let leaves = BTreeSet::from([25]);
        assert_eq!(helper_indices(&leaves), vec![24, 13, 7, 2]);
    }

    #[test]
    fn two_leaves_share_their_path() {
        // 806 and 809: siblings of both paths, minus the shared part (§4.1: 11 nodes).
        assert_eq!(helper_indices(&BTreeSet::from([806, 809])).len(), 11);
    }

    #[test]
    fn a_four_leaf_tree_folds_to_its_root() {
        let leaf = |i: u8| B256::repeat_byte(i);
        let root = hash_pair(
            &hash_pair(&leaf(4), &leaf(5)),
            &hash_pair(&leaf(6), &leaf(7)),
        );
        let leaves = BTreeMap::from([(4, leaf(4)), (7, leaf(7))]);
        let proof = [leaf(6), leaf(5)];
        assert!(verify(&leaves, &proof, root, "t").is_ok());
        let wrong = [leaf(5), leaf(6)];
        assert!(verify(&leaves, &wrong, root, "t").is_err());
        assert!(verify(&leaves, &proof[..1], root, "t").is_err());
    }
}
