//! Merkle branches of the consensus specs: `is_valid_merkle_branch` over a generalized index,
//! and the SHA-256 of a node (`hash_pair`) that the branch and the proof verifier's multiproofs
//! and payload roots fold with.
//!
//! Why a SHA-256 of our own for nodes in WASM: a node is always 64 bytes, so its second block
//! (the padding) is the same every time and its message schedule is a compile-time constant,
//! and the two compressions are called directly, without a streaming hasher's buffer. Neither
//! ring nor sha2 0.10 offers that (sha2's `compress256` is behind a feature and deprecated
//! types). Measured in WASM (Node, `--cpu-prof`): hashing a block proof's payload with it
//! instead of `tree_hash`'s ring-backed hasher took eth_getBlockByHash1 from 10.2 to 4.8 ms.
//! On other targets `hash_pair` is sha2's, which uses the CPU's SHA instructions where there
//! are some (SHA-NI on x86-64) and which no scalar code matches; the scalar one is still built
//! and tested there.
//!
//! Also the one merkleizer over `hash_pair` (`merkleize`, with the all-zero subtrees'
//! roots computed once) that the block header's root, the signing root and the proof
//! verifier's payload root use.
//!
//! What does not live here: the roots of other containers (derived with `tree_hash`).

use std::sync::LazyLock;

use alloy_primitives::B256;

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
    for (level, sibling) in branch.iter().enumerate() {
        // Bit `level` of the index below the root says whether the node is a right child.
        node = if (gindex >> level) & 1 == 1 {
            B256::from(hash_pair(sibling, &node))
        } else {
            B256::from(hash_pair(&node, sibling))
        };
    }
    node == root
}

/// The deepest tree [`merkleize`] folds: a transaction's byte list (2^25 chunks).
pub const MAX_DEPTH: usize = 25;

/// The roots of all-zero subtrees by depth, 0 to [`MAX_DEPTH`] (computed once).
pub fn zero_hashes() -> &'static [[u8; 32]; MAX_DEPTH + 1] {
    static ZERO: LazyLock<[[u8; 32]; MAX_DEPTH + 1]> = LazyLock::new(|| {
        let mut z = [[0u8; 32]; MAX_DEPTH + 1];
        for i in 0..MAX_DEPTH {
            z[i + 1] = hash_pair(&z[i], &z[i]);
        }
        z
    });
    &ZERO
}

/// The root of `nodes` as the leaves of a tree of `depth` levels (at most `2^depth` of them,
/// as the SSZ types bound them; `depth` at most [`MAX_DEPTH`]), zero-padded; `nodes` is used
/// as scratch space.
pub fn merkleize(nodes: &mut Vec<[u8; 32]>, depth: usize) -> [u8; 32] {
    let zero = zero_hashes();
    if nodes.is_empty() {
        return zero[depth];
    }
    for z in &zero[..depth] {
        if nodes.len() % 2 == 1 {
            nodes.push(*z);
        }
        for i in 0..nodes.len() / 2 {
            nodes[i] = hash_pair(&nodes[2 * i], &nodes[2 * i + 1]);
        }
        nodes.truncate(nodes.len() / 2);
    }
    nodes[0]
}

/// SHA-256's round constants.
const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// SHA-256's initial state.
const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// Fills `w[16..]` from `w[..16]` (SHA-256's message schedule) and adds `K`: the block's
/// `W[i] + K[i]`.
const fn expand(w: &mut [u32; 64]) {
    let mut i = 16;
    while i < 64 {
        let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
        let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16]
            .wrapping_add(s0)
            .wrapping_add(w[i - 7])
            .wrapping_add(s1);
        i += 1;
    }
    i = 0;
    while i < 64 {
        w[i] = w[i].wrapping_add(K[i]);
        i += 1;
    }
}

/// `W[i] + K[i]` of the second block of a 64-byte message (0x80, zeros, the length 512 in
/// bits): the same for every node, so its schedule is not recomputed.
const PAD_WK: [u32; 64] = {
    let mut w = [0u32; 64];
    w[0] = 0x8000_0000;
    w[15] = 512;
    expand(&mut w);
    w
};

// The loops below are indexed `while` loops, not iterators: at `opt-level = "z"` (the WASM
// profile) array iterators' `next` stayed calls, 14 % of a block proof's time.

/// The 64 rounds over a block whose `W[i] + K[i]` are given.
fn rounds(state: &mut [u32; 8], wk: &[u32; 64]) {
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    let mut i = 0;
    while i < 64 {
        let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
        let ch = (e & f) ^ (!e & g);
        let t1 = h.wrapping_add(s1).wrapping_add(ch).wrapping_add(wk[i]);
        let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let t2 = s0.wrapping_add(maj);
        h = g;
        g = f;
        f = e;
        e = d.wrapping_add(t1);
        d = c;
        c = b;
        b = a;
        a = t1.wrapping_add(t2);
        i += 1;
    }
    state[0] = state[0].wrapping_add(a);
    state[1] = state[1].wrapping_add(b);
    state[2] = state[2].wrapping_add(c);
    state[3] = state[3].wrapping_add(d);
    state[4] = state[4].wrapping_add(e);
    state[5] = state[5].wrapping_add(f);
    state[6] = state[6].wrapping_add(g);
    state[7] = state[7].wrapping_add(h);
}

/// SHA-256 of `left || right`: a Merkle node (the scalar compression in WASM, sha2 elsewhere).
pub fn hash_pair(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    #[cfg(target_arch = "wasm32")]
    return scalar_hash_pair(left, right);
    #[cfg(not(target_arch = "wasm32"))]
    {
        use sha2::{Digest, Sha256};
        Sha256::new()
            .chain_update(left)
            .chain_update(right)
            .finalize()
            .into()
    }
}

/// SHA-256 of `data`: sha2's natively; in WASM the scalar rounds above, over each block.
/// Why ours there: sha2's portable backend mirrors the SHA-NI instructions (two rounds at a
/// time, a separate message-schedule step), which compiles to slower WASM than these plain
/// loops; a saved state's digests and the committee keys' identity hash 74 kB and 49 kB.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    #[cfg(target_arch = "wasm32")]
    return scalar_sha256(data);
    #[cfg(not(target_arch = "wasm32"))]
    {
        use sha2::{Digest, Sha256};
        Sha256::digest(data).into()
    }
}

/// [`sha256`] with the compression written out: whole blocks, then the padding's one or two.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn scalar_sha256(data: &[u8]) -> [u8; 32] {
    let mut state = IV;
    let (blocks, rest) = data.as_chunks::<64>();
    let mut i = 0;
    while i < blocks.len() {
        compress(&mut state, &blocks[i]);
        i += 1;
    }
    // The rest, 0x80, zeros and the length in bits: one block if 8 bytes of length fit
    // after the 0x80, else two.
    let mut tail = [0u8; 128];
    tail[..rest.len()].copy_from_slice(rest);
    tail[rest.len()] = 0x80;
    let end = if rest.len() < 56 { 64 } else { 128 };
    let bits = (data.len() as u64).wrapping_mul(8);
    tail[end - 8..end].copy_from_slice(&bits.to_be_bytes());
    let (padding, _) = tail[..end].as_chunks::<64>();
    i = 0;
    while i < padding.len() {
        compress(&mut state, &padding[i]);
        i += 1;
    }
    big_endian(&state)
}

/// One block into `state`: its 16 words, the schedule, the 64 rounds.
fn compress(state: &mut [u32; 8], block: &[u8; 64]) {
    let mut w = [0u32; 64];
    let mut i = 0;
    while i < 16 {
        let j = 4 * i;
        w[i] = u32::from_be_bytes([block[j], block[j + 1], block[j + 2], block[j + 3]]);
        i += 1;
    }
    expand(&mut w);
    rounds(state, &w);
}

/// The digest's bytes: the state's words, big-endian.
fn big_endian(state: &[u32; 8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut i = 0;
    while i < 8 {
        let b = state[i].to_be_bytes();
        out[4 * i] = b[0];
        out[4 * i + 1] = b[1];
        out[4 * i + 2] = b[2];
        out[4 * i + 3] = b[3];
        i += 1;
    }
    out
}

/// [`hash_pair`] with the two compressions written out (see the module's header).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
fn scalar_hash_pair(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    // The first block's `W[i] + K[i]`: the 16 words of the pair, then the schedule. Read from
    // the two halves directly, not through `compress`: copying them into one block first made
    // a block proof 4 % slower in Node (eth_getBlockByHash1 warm, 4.15 → 4.31 ms median).
    let mut w = [0u32; 64];
    let mut i = 0;
    while i < 8 {
        let j = 4 * i;
        w[i] = u32::from_be_bytes([left[j], left[j + 1], left[j + 2], left[j + 3]]);
        w[i + 8] = u32::from_be_bytes([right[j], right[j + 1], right[j + 2], right[j + 3]]);
        i += 1;
    }
    expand(&mut w);
    let mut state = IV;
    rounds(&mut state, &w);
    rounds(&mut state, &PAD_WK);
    big_endian(&state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn hash_pair_is_sha256_of_the_pair() {
        for seed in 0..50u8 {
            let left = [seed; 32];
            let right: [u8; 32] =
                std::array::from_fn(|i| seed.wrapping_mul(31).wrapping_add(i as u8));
            let mut both = left.to_vec();
            both.extend_from_slice(&right);
            assert_eq!(
                scalar_hash_pair(&left, &right)[..],
                Sha256::digest(&both)[..]
            );
            assert_eq!(hash_pair(&left, &right)[..], Sha256::digest(&both)[..]);
        }
    }

    #[test]
    fn sha256_is_sha2s_at_every_padding_length() {
        let data: Vec<u8> = (0..74_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        // Every length around the one- and two-block paddings, and the saved state's sizes.
        let lengths = (0..=200).chain([1000, 49_248, 73_912, 74_000]);
        for len in lengths {
            let part = &data[..len];
            assert_eq!(scalar_sha256(part)[..], Sha256::digest(part)[..], "{len}");
            assert_eq!(sha256(part)[..], Sha256::digest(part)[..], "{len}");
        }
    }

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
