//! The SSZ hash tree root of an execution payload, with its transactions merkleized here.
//!
//! Why not `tree_hash`'s derived root: a block proof hashes the whole payload, and in WASM that
//! was ~70 % of verifying eth_getBlockByHash1 (10 ms of 10.2 in Node; `--cpu-prof`): every
//! 64-byte node goes through ring's streaming `Context` (new, update, finalize with padding)
//! and `tree_hash`'s `MerkleHasher` with its `SmallVec`s, and a transaction's list has 2^25
//! chunks, so each transaction costs 25+ node hashes. Here a node is
//! `sszgate_light::merkle::hash_pair` (two SHA-256 compressions called directly, the padding
//! block's schedule precomputed). The other fields keep `tree_hash`'s roots; the result is
//! tested equal to the derived root.

use alloy_primitives::B256;
use sszgate_light::block::ExecutionPayload;
use sszgate_light::merkle::{hash_pair as node, merkleize};
use tree_hash::TreeHash;

/// Depth of a transaction's byte list (2^30 bytes: 2^25 chunks).
const TX_DEPTH: usize = 25;
/// Depth of the transaction list (2^20 transactions).
const TXS_DEPTH: usize = 20;

/// `root` with a list's length mixed in.
fn mix_in_length(root: &[u8; 32], len: usize) -> [u8; 32] {
    let mut length = [0u8; 32];
    length[..8].copy_from_slice(&(len as u64).to_le_bytes());
    node(root, &length)
}

/// The root of the payload's `transactions` (`List[ByteList[2^30], 2^20]`).
fn transactions_root(txs: &[&[u8]]) -> [u8; 32] {
    let mut chunks = Vec::new();
    let mut roots = Vec::with_capacity(txs.len() + 1);
    for tx in txs {
        chunks.clear();
        chunks.extend(tx.chunks(32).map(|c| {
            let mut chunk = [0u8; 32];
            chunk[..c.len()].copy_from_slice(c);
            chunk
        }));
        let root = merkleize(&mut chunks, TX_DEPTH);
        roots.push(mix_in_length(&root, tx.len()));
    }
    let root = merkleize(&mut roots, TXS_DEPTH);
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
    B256::from(merkleize(&mut fields, 5))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};
    use ssz_types::VariableList;

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
