//! Merkle branches of the consensus specs: `is_valid_merkle_branch` over a generalized index.
//!
//! What does not live here: the roots of containers (derived with `tree_hash`).

use alloy_primitives::B256;
use sha2::{Digest, Sha256};

/// Depth of a generalized index (`floor(log2(gindex))`).
pub fn gindex_depth(gindex: u64) -> usize {
    (63 - gindex.max(1).leading_zeros()) as usize
}

/// Folds `leaf` up `branch` (leaf level first) along `gindex` and compares with `root`.
/// The branch must have exactly the depth of `gindex`.
pub fn is_valid_merkle_branch(leaf: B256, branch: &[B256], gindex: u64, root: B256) -> bool {
    if branch.len() != gindex_depth(gindex) {
        return false;
    }
    let mut node = leaf;
    let mut hasher = Sha256::new();
    for (level, sibling) in branch.iter().enumerate() {
        // Bit `level` of the index below the root says whether the node is a right child.
        if (gindex >> level) & 1 == 1 {
            hasher.update(sibling);
            hasher.update(node);
        } else {
            hasher.update(node);
            hasher.update(sibling);
        }
        node = B256::from_slice(&hasher.finalize_reset());
    }
    node == root
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_of_light_client_indices() {
        assert_eq!(gindex_depth(25), 4);
        assert_eq!(gindex_depth(54), 5);
        assert_eq!(gindex_depth(87), 6);
        assert_eq!(gindex_depth(169), 7);
    }

    #[test]
    fn two_leaf_tree() {
        let (a, b) = (B256::repeat_byte(1), B256::repeat_byte(2));
        let root = B256::from_slice(&Sha256::digest([a.as_slice(), b.as_slice()].concat()));
        assert!(is_valid_merkle_branch(a, &[b], 2, root));
        assert!(is_valid_merkle_branch(b, &[a], 3, root));
        assert!(!is_valid_merkle_branch(a, &[b], 3, root));
        assert!(!is_valid_merkle_branch(a, &[b, b], 2, root));
    }
}
