//! SSZ multiproofs (spec §1.3): the helper nodes of a set of leaves, sorted by generalized
//! index descending, folded up to the root. A single leaf's multiproof is its Merkle branch.
//!
//! Also the generalized indices of the execution payload fields inside a beacon block body
//! (§6). What does not live here: hashing containers (`tree_hash`), branches of a fixed depth
//! (`sszgate_light::merkle`).

use std::collections::{BTreeSet, BinaryHeap};

use alloy_primitives::B256;

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
    helpers_of(leaves.iter().copied())
}

/// [`helper_indices`] without sets: a parent's gindex is smaller than its children's, so taking
/// the greatest pending node each time yields the path in descending order, each node once, and
/// the helpers (siblings off the path) come out descending too: two path nodes that are not
/// siblings keep their order when both flip their last bit. Memory stays within the path and
/// the pending frontier whatever the leaves.
fn helpers_of(leaves: impl IntoIterator<Item = u64>) -> Vec<u64> {
    let mut pending: BinaryHeap<u64> = leaves.into_iter().filter(|g| *g > 1).collect();
    let mut path: Vec<u64> = Vec::new();
    while let Some(g) = pending.pop() {
        if path.last() == Some(&g) {
            continue;
        }
        path.push(g);
        if g / 2 > 1 {
            pending.push(g / 2);
        }
    }
    let on_path = |g: &u64| path.binary_search_by(|p| g.cmp(p)).is_ok();
    path.iter().map(|g| g ^ 1).filter(|s| !on_path(s)).collect()
}

/// A multiproof's leaves: nodes by generalized index, kept sorted (a few per proof; a vector
/// links less code than a map).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leaves(Vec<(u64, B256)>);

impl Leaves {
    /// Sets the leaf at `gindex`, returning the node it replaces.
    pub fn insert(&mut self, gindex: u64, node: B256) -> Option<B256> {
        match self.0.binary_search_by_key(&gindex, |(g, _)| *g) {
            Ok(at) => Some(std::mem::replace(&mut self.0[at].1, node)),
            Err(at) => {
                self.0.insert(at, (gindex, node));
                None
            }
        }
    }

    /// The generalized indices, ascending.
    pub fn gindices(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().map(|(g, _)| *g)
    }
}

impl<const N: usize> From<[(u64, B256); N]> for Leaves {
    fn from(leaves: [(u64, B256); N]) -> Leaves {
        let mut all = Leaves::default();
        for (g, node) in leaves {
            all.insert(g, node);
        }
        all
    }
}

fn hash_pair(left: &B256, right: &B256) -> B256 {
    B256::from(sszgate_light::merkle::hash_pair(left, right))
}

/// Folds `leaves` (gindex → node) with `proof` (the helper nodes, descending) to the root,
/// and compares it with `root`. `what` names the proof in errors.
pub fn verify(leaves: &Leaves, proof: &[B256], root: B256, what: &str) -> Result<(), ProofError> {
    if let Some(g) = leaves.gindices().find(|g| *g < 2 || *g >= MAX_GINDEX) {
        return fail(
            Check::BodyRoot,
            format!("{what}: leaf gindex {g} out of range"),
        );
    }
    let helpers = helpers_of(leaves.gindices());
    ensure(helpers.len() == proof.len(), Check::BodyRoot, || {
        let indices: Vec<u64> = leaves.gindices().collect();
        format!(
            "{what}: {} proof nodes, the leaves {indices:?} need {}",
            proof.len(),
            helpers.len()
        )
    })?;
    // Every node known so far, by ascending gindex: the leaves (ascending) merged with the
    // helpers (descending, so read backwards). They never share a gindex: the helpers are off
    // the leaves' paths.
    let mut nodes = Vec::with_capacity(leaves.0.len() + helpers.len());
    let mut helpers = helpers
        .iter()
        .copied()
        .zip(proof.iter().copied())
        .rev()
        .peekable();
    for &(g, leaf) in &leaves.0 {
        while let Some(helper) = helpers.next_if(|(h, _)| *h < g) {
            nodes.push(helper);
        }
        nodes.push((g, leaf));
    }
    nodes.extend(helpers);
    // Deepest first: the greatest gindex is a right child whose sibling is the next node.
    while let Some(&(g, right)) = nodes.last().filter(|(g, _)| *g > 1) {
        nodes.pop();
        let left = match nodes.last() {
            Some(&(l, left)) if g & 1 == 1 && l == g - 1 => left,
            _ => return fail(Check::BodyRoot, format!("{what}: node {g} has no sibling")),
        };
        nodes.pop();
        let parent = g / 2;
        match nodes.binary_search_by_key(&parent, |(g, _)| *g) {
            Ok(_) => {
                return fail(
                    Check::BodyRoot,
                    format!("{what}: node {parent} given twice"),
                );
            }
            Err(at) => nodes.insert(at, (parent, hash_pair(&left, &right))),
        }
    }
    let got = match nodes.as_slice() {
        [(1, root)] => *root,
        _ => B256::ZERO,
    };
    ensure(got == root, Check::BodyRoot, || {
        format!("{what}: the proof leads to {got}, the header's body root is {root}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

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
        let leaves = Leaves::from([(4, leaf(4)), (7, leaf(7))]);
        let proof = [leaf(6), leaf(5)];
        assert!(verify(&leaves, &proof, root, "t").is_ok());
        let wrong = [leaf(5), leaf(6)];
        assert!(verify(&leaves, &wrong, root, "t").is_err());
        assert!(verify(&leaves, &proof[..1], root, "t").is_err());
    }

    /// Leaves stay sorted by gindex whatever the order they come in; setting a leaf again
    /// replaces it and returns the old node (colibri's LogsProof relies on it to refuse a
    /// second receipts root).
    #[test]
    fn leaves_are_sorted_and_replaced() {
        let leaf = |i: u8| B256::repeat_byte(i);
        let mut leaves = Leaves::from([(9, leaf(9)), (4, leaf(4)), (7, leaf(7))]);
        assert_eq!(leaves.gindices().collect::<Vec<_>>(), [4, 7, 9]);
        assert_eq!(leaves.insert(7, leaf(1)), Some(leaf(7)));
        assert_eq!(leaves.insert(5, leaf(5)), None);
        assert_eq!(
            leaves.0,
            [(4, leaf(4)), (5, leaf(5)), (7, leaf(1)), (9, leaf(9))]
        );
        assert_eq!(Leaves::from([(3, leaf(1)), (3, leaf(2))]).0, [(3, leaf(2))]);
    }

    /// The helper indices as they were computed with sets: the reference for [`helpers_of`].
    fn reference_helpers(leaves: &BTreeSet<u64>) -> Vec<u64> {
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

    /// The fold as it was written over a `BTreeMap` (before it moved to a sorted vector, which
    /// links less code): the reference the vector fold must agree with.
    fn reference(leaves: &BTreeMap<u64, B256>, proof: &[B256], root: B256) -> Result<(), String> {
        if let Some(g) = leaves.keys().find(|g| **g < 2 || **g >= MAX_GINDEX) {
            return Err(format!("t: leaf gindex {g} out of range"));
        }
        let helpers = reference_helpers(&leaves.keys().copied().collect());
        if helpers.len() != proof.len() {
            return Err("count".into());
        }
        let mut nodes = leaves.clone();
        nodes.extend(helpers.iter().copied().zip(proof.iter().copied()));
        while let Some((&g, _)) = nodes.iter().next_back().filter(|(g, _)| **g > 1) {
            let (left, right) = (nodes.remove(&(g & !1)), nodes.remove(&(g | 1)));
            let (Some(left), Some(right)) = (left, right) else {
                return Err(format!("t: node {g} has no sibling"));
            };
            if nodes.insert(g / 2, hash_pair(&left, &right)).is_some() {
                return Err(format!("t: node {} given twice", g / 2));
            }
        }
        let got = nodes.get(&1).copied().unwrap_or_default();
        if got == root {
            Ok(())
        } else {
            Err(format!(
                "t: the proof leads to {got}, the header's body root is {root}"
            ))
        }
    }

    /// Random leaf sets of a depth-6 tree (any level, ancestors of each other included), with
    /// their true helper nodes, one changed, one missing or one extra: the helper indices are
    /// those the sets gave, and the vector fold takes and refuses exactly what the map fold
    /// did, with the same message.
    #[test]
    fn the_vector_fold_agrees_with_the_map_fold() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        // Every node of a full tree of depth 6 (gindex 1..128).
        let mut tree = vec![B256::ZERO; 128];
        for (g, node) in tree.iter_mut().enumerate().skip(64) {
            *node = B256::repeat_byte(g as u8);
        }
        for g in (1..64).rev() {
            tree[g] = hash_pair(&tree[2 * g], &tree[2 * g + 1]);
        }
        let (mut taken, mut refused) = (0, 0);
        for round in 0..3000 {
            let count = 1 + next() % 5;
            let leaves: BTreeMap<u64, B256> = (0..count)
                .map(|_| {
                    let g = 1 + next() % 127;
                    (g, tree[g as usize])
                })
                .collect();
            let set: BTreeSet<u64> = leaves.keys().copied().collect();
            let helpers = helper_indices(&set);
            assert_eq!(helpers, reference_helpers(&set), "{set:?}");
            let mut proof: Vec<B256> = helpers.iter().map(|g| tree[*g as usize]).collect();
            match round % 4 {
                1 if !proof.is_empty() => {
                    let at = (next() as usize) % proof.len();
                    proof[at] = B256::repeat_byte(0xee);
                }
                2 => {
                    proof.pop();
                }
                3 => proof.push(B256::ZERO),
                _ => {}
            }
            let as_leaves = Leaves(leaves.iter().map(|(g, n)| (*g, *n)).collect());
            let ours = verify(&as_leaves, &proof, tree[1], "t").map_err(|e| e.to_string());
            match reference(&leaves, &proof, tree[1]) {
                Ok(()) => {
                    assert!(ours.is_ok(), "{leaves:?}: {ours:?}");
                    taken += 1;
                }
                Err(why) => {
                    let ours = ours.expect_err("refused by the map fold");
                    assert!(why == "count" || ours.ends_with(&why), "{ours} / {why}");
                    refused += 1;
                }
            }
        }
        assert!(
            taken > 100 && refused > 100,
            "{taken} taken, {refused} refused"
        );
    }
}
