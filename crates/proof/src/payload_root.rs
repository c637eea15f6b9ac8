//! The SSZ hash tree root of an execution payload, with its transactions merkleized here.
//!
//! Why not `tree_hash`'s derived root: a block proof hashes the whole payload, and in WASM that
//! was ~70 % of verifying eth_getBlockByHash1 (10 ms of 10.2 in Node; `--cpu-prof`): every
//! 64-byte node goes through ring's streaming `Context` (new, update, finalize with padding)
//! and `tree_hash`'s `MerkleHasher` with its `SmallVec`s, and a transaction's list has 2^25
//! chunks, so each transaction costs 25+ node hashes. Here a node is two SHA-256 compressions
//! done directly (neither ring nor sha2 0.10 offers a compression over a fixed block without
//! the streaming state; sha2's `compress256` is behind a feature and deprecated types), the
//! second over the constant padding block of a 64-byte message, whose message schedule is
//! computed once at compile time. The other fields
//! keep `tree_hash`'s roots; the result is tested equal to the derived root.

use alloy_primitives::B256;
use sszgate_light::block::ExecutionPayload;
use tree_hash::TreeHash;

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

/// SHA-256 of `left || right`: a Merkle node.
fn node(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    // The first block's `W[i] + K[i]`: the 16 words of the pair, then the schedule.
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
    let mut out = [0u8; 32];
    i = 0;
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

/// Depth of a transaction's byte list (2^30 bytes: 2^25 chunks).
const TX_DEPTH: usize = 25;
/// Depth of the transaction list (2^20 transactions).
const TXS_DEPTH: usize = 20;

/// The roots of all-zero subtrees, by depth.
fn zero_hashes() -> [[u8; 32]; TX_DEPTH + 1] {
    let mut z = [[0u8; 32]; TX_DEPTH + 1];
    for i in 0..TX_DEPTH {
        z[i + 1] = node(&z[i], &z[i]);
    }
    z
}

/// The root of `nodes` as the leaves of a tree of `depth` levels (at most `2^depth` of them,
/// as the SSZ types bound them), zero-padded; `nodes` is used as scratch space.
fn merkleize(nodes: &mut Vec<[u8; 32]>, depth: usize, zero: &[[u8; 32]]) -> [u8; 32] {
    if nodes.is_empty() {
        return zero[depth];
    }
    for z in &zero[..depth] {
        if nodes.len() % 2 == 1 {
            nodes.push(*z);
        }
        for i in 0..nodes.len() / 2 {
            nodes[i] = node(&nodes[2 * i], &nodes[2 * i + 1]);
        }
        nodes.truncate(nodes.len() / 2);
    }
    nodes[0]
}

/// `root` with a list's length mixed in.
fn mix_in_length(root: &[u8; 32], len: usize) -> [u8; 32] {
    let mut length = [0u8; 32];
    length[..8].copy_from_slice(&(len as u64).to_le_bytes());
    node(root, &length)
}

/// The root of the payload's `transactions` (`List[ByteList[2^30], 2^20]`).
fn transactions_root(txs: &[&[u8]]) -> [u8; 32] {
    let zero = zero_hashes();
    let mut chunks = Vec::new();
    let mut roots = Vec::with_capacity(txs.len() + 1);
    for tx in txs {
        chunks.clear();
        chunks.extend(tx.chunks(32).map(|c| {
            let mut chunk = [0u8; 32];
            chunk[..c.len()].copy_from_slice(c);
            chunk
        }));
        let root = merkleize(&mut chunks, TX_DEPTH, &zero);
        roots.push(mix_in_length(&root, tx.len()));
    }
    let root = merkleize(&mut roots, TXS_DEPTH, &zero);
    mix_in_length(&root, txs.len())
}

/// The payload's hash tree root, equal to `payload.tree_hash_root()`.
pub fn payload_root(p: &ExecutionPayload) -> B256 {
    let txs: Vec<&[u8]> = p.transactions.iter().map(|t| &t[..]).collect();
    let mut fields = vec![
        p.parent_hash.0,
        p.fee_recipient.tree_hash_root().0,
        p.state_root.0,
        p.receipts_root.0,
        p.logs_bloom.tree_hash_root().0,
        p.prev_randao.0,
        p.block_number.tree_hash_root().0,
        p.gas_limit.tree_hash_root().0,
        p.gas_used.tree_hash_root().0,
        p.timestamp.tree_hash_root().0,
        p.extra_data.tree_hash_root().0,
        p.base_fee_per_gas.tree_hash_root().0,
        p.block_hash.0,
        transactions_root(&txs),
        p.withdrawals.tree_hash_root().0,
        p.blob_gas_used.tree_hash_root().0,
        p.excess_blob_gas.tree_hash_root().0,
    ];
    // 17 fields: a tree of 32 leaves.
    B256::from(merkleize(&mut fields, 5, &zero_hashes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};
    use ssz_types::VariableList;

    #[test]
    fn node_is_sha256_of_the_pair() {
        for seed in 0..50u8 {
            let left = [seed; 32];
            let right: [u8; 32] =
                std::array::from_fn(|i| seed.wrapping_mul(31).wrapping_add(i as u8));
            let mut both = left.to_vec();
            both.extend_from_slice(&right);
            assert_eq!(node(&left, &right)[..], Sha256::digest(&both)[..]);
        }
    }

    /// A pseudo-random transaction of `len` bytes (SHA-256 in counter mode).
    fn tx(len: usize, seed: u64) -> VariableList<u8, ssz_types::typenum::U1073741824> {
        let bytes: Vec<u8> = (0..len.div_ceil(32) as u64)
            .flat_map(|i| Sha256::digest([seed.to_le_bytes(), i.to_le_bytes()].concat()))
            .take(len)
            .collect();
        VariableList::new(bytes).expect("within the bound")
    }

    #[test]
    fn transactions_root_matches_tree_hash() {
        // Lengths around chunk boundaries and powers of two, and lists of 0..=9 transactions.
        let lengths = [
            0, 1, 31, 32, 33, 63, 64, 65, 96, 127, 128, 129, 500, 1024, 1025, 4097,
        ];
        for count in 0..=9usize {
            for (k, _) in lengths.iter().enumerate() {
                let txs: Vec<_> = (0..count)
                    .map(|i| tx(lengths[(k + i * 7) % lengths.len()], (k * 10 + i) as u64))
                    .collect();
                let list: VariableList<_, ssz_types::typenum::U1048576> =
                    VariableList::new(txs.clone()).expect("within the bound");
                assert_eq!(
                    transactions_root(&txs.iter().map(|t| &t[..]).collect::<Vec<_>>()).to_vec(),
                    list.tree_hash_root().to_vec(),
                    "{count} transactions from length index {k}"
                );
            }
        }
    }

    #[cfg(feature = "blocks")]
    #[test]
    fn payload_root_matches_tree_hash_on_recorded_blocks() {
        use crate::types::{ExecutionPayloadUnion, ProofUnion};
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/colibri");
        for case in ["eth_getBlockByHash1", "eth_getBlockByNumber_electra"] {
            let bytes = std::fs::read(format!("{dir}/{case}/proof.ssz")).expect("recorded proof");
            let request = crate::decode(&bytes).expect("decodes");
            let ProofUnion::Block(proof) = request.proof else {
                panic!("{case}: a block proof expected");
            };
            let ExecutionPayloadUnion::Deneb(mut payload) = proof.execution_payload;
            assert!(payload.transactions.len() > 100, "{case}: a full block");
            assert_eq!(payload_root(&payload), payload.tree_hash_root(), "{case}");
            // A changed byte of one transaction changes both roots alike.
            let mut tx = payload.transactions[7].to_vec();
            tx[3] ^= 1;
            let before = payload_root(&payload);
            payload.transactions[7] = VariableList::new(tx).expect("same length");
            assert_ne!(payload_root(&payload), before, "{case}");
            assert_eq!(payload_root(&payload), payload.tree_hash_root(), "{case}");
        }
    }
}
