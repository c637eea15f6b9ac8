//! The Merkle tree of a beacon block body, as far as proofs of execution payload fields need
//! it: the 16 body field roots, the payload's 32 field roots, and the transactions list
//! (2^20 leaves, kept as layers so that any node is a lookup). Multiproofs are read from it
//! in the order the verifier expects (`multiproof::helper_indices`).
//!
//! What does not live here: which leaves a method proves (`prover`).

use std::collections::BTreeSet;

use alloy_primitives::B256;
use sha2::{Digest, Sha256};
use sszgate_light::block::{AnyBlock, ExecutionPayload};
use tree_hash::TreeHash;

use crate::multiproof::{TRANSACTION_0, helper_indices, u64_leaf};

/// Depth of the transactions list's data subtree (limit 2^20).
const TX_DEPTH: u32 = 20;
/// Body gindex of the payload; payload gindex of `transactions`.
const PAYLOAD: u64 = 25;
const TRANSACTIONS: u64 = 813;

fn hash_pair(a: B256, b: B256) -> B256 {
    B256::from_slice(&Sha256::new().chain_update(a).chain_update(b).finalize())
}

/// A body's tree.
pub struct BodyTree {
    body_fields: Vec<B256>,
    payload_fields: Vec<B256>,
    /// `tx_layers[k]`: the non-zero nodes `k` levels above the transaction leaves.
    tx_layers: Vec<Vec<B256>>,
    zero: Vec<B256>,
    tx_count: u64,
}

macro_rules! roots {
    ($body:expr, $($f:ident),+) => { vec![$($body.$f.tree_hash_root()),+] };
}

/// The roots of a body's fields (Deneb's twelve, then a later fork's `extra` ones), the
/// execution payload's given (`payload`: computed once, from the payload's field roots).
macro_rules! body_roots {
    ($body:expr, $payload:expr $(, $extra:ident)*) => {{
        let mut fields = roots!($body, randao_reveal, eth1_data, graffiti, proposer_slashings,
            attester_slashings, attestations, deposits, voluntary_exits, sync_aggregate);
        fields.push($payload);
        fields.extend(roots!($body, bls_to_execution_changes, blob_kzg_commitments $(, $extra)*));
        fields
    }};
}

/// The root of a power-of-two list of nodes.
fn merkle_root(mut layer: Vec<B256>) -> B256 {
    while layer.len() > 1 {
        layer = layer.chunks(2).map(|c| hash_pair(c[0], c[1])).collect();
    }
    layer.first().copied().unwrap_or_default()
}

/// The payload's 32 field roots (17 and zeros), `transactions` given (`transactions_root`:
/// from the layers already hashed, so no transaction is hashed twice).
fn payload_fields(p: &ExecutionPayload, transactions_root: B256) -> Vec<B256> {
    let mut fields = roots!(
        p,
        parent_hash,
        fee_recipient,
        state_root,
        receipts_root,
        logs_bloom,
        prev_randao,
        block_number,
        gas_limit,
        gas_used,
        timestamp,
        extra_data,
        base_fee_per_gas,
        block_hash
    );
    fields.push(transactions_root);
    fields.extend(roots!(p, withdrawals, blob_gas_used, excess_blob_gas));
    fields.resize(32, B256::ZERO);
    fields
}

impl BodyTree {
    /// The tree of `block`'s body; every part hashed once (the transactions were measured
    /// to be most of a prover's time when the payload and the body were hashed again).
    pub fn new(block: &AnyBlock) -> BodyTree {
        let payload = block.execution_payload();
        let mut zero = vec![B256::ZERO];
        for k in 0..TX_DEPTH as usize {
            zero.push(hash_pair(zero[k], zero[k]));
        }
        let mut layer: Vec<B256> = payload
            .transactions
            .iter()
            .map(|t| t.tree_hash_root())
            .collect();
        let mut tx_layers = vec![layer.clone()];
        for pad in &zero[..TX_DEPTH as usize] {
            layer = layer
                .chunks(2)
                .map(|c| hash_pair(c[0], c.get(1).copied().unwrap_or(*pad)))
                .collect();
            tx_layers.push(layer.clone());
        }
        let tx_count = payload.transactions.len() as u64;
        let data_root = tx_layers[TX_DEPTH as usize]
            .first()
            .copied()
            .unwrap_or(zero[TX_DEPTH as usize]);
        let payload_fields = payload_fields(payload, hash_pair(data_root, u64_leaf(tx_count)));
        let payload_root = merkle_root(payload_fields.clone());
        let mut body_fields = match block {
            AnyBlock::Deneb(b) => body_roots!(b.message.body, payload_root),
            AnyBlock::Electra(b) => body_roots!(b.message.body, payload_root, execution_requests),
        };
        body_fields.resize(16, B256::ZERO);
        BodyTree {
            body_fields,
            payload_fields,
            tx_layers,
            zero,
            tx_count,
        }
    }

    /// The body's root (`hash_tree_root(body)`).
    pub fn root(&self) -> B256 {
        self.node(1)
    }

    /// The node at body gindex `g` (only nodes on the way to payload fields and transactions).
    pub fn node(&self, g: u64) -> B256 {
        let depth = g.ilog2();
        match depth {
            0..4 => hash_pair(self.node(2 * g), self.node(2 * g + 1)),
            4 => self.body_fields[(g - 16) as usize],
            _ if g >> (depth - 4) != PAYLOAD => B256::ZERO,
            5..9 => hash_pair(self.node(2 * g), self.node(2 * g + 1)),
            9 => self.payload_fields[(g - 800) as usize],
            _ if g >> (depth - 9) != TRANSACTIONS => B256::ZERO,
            10 if g == 2 * TRANSACTIONS => self.tx_layers[TX_DEPTH as usize]
                .first()
                .copied()
                .unwrap_or(self.zero[TX_DEPTH as usize]),
            10 => u64_leaf(self.tx_count),
            _ => {
                // Below the transactions' data root: `k` levels above the leaves, index `i`.
                let below = depth - 10;
                let k = (TX_DEPTH - below) as usize;
                let i = (g - (TRANSACTION_0 >> k)) as usize;
                self.tx_layers[k].get(i).copied().unwrap_or(self.zero[k])
            }
        }
    }

    /// The multiproof of `leaves` (body gindices), helper nodes in descending order.
    pub fn multiproof(&self, leaves: &[u64]) -> Vec<B256> {
        let set: BTreeSet<u64> = leaves.iter().copied().collect();
        helper_indices(&set)
            .into_iter()
            .map(|g| self.node(g))
            .collect()
    }
}
