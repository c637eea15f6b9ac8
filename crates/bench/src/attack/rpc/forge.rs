//! The forged head: F, the head's parent with its execution payload's state root replaced by an
//! older block's (and its block hash recomputed over the execution header so changed), and C,
//! the head re-parented on F with a sync aggregate of `k` seats signing `root(F)`. Also the
//! forged execution header an execution relay serves for F's block.
//!
//! Not here: the seats' keys (`interop`), serving the forgery (`relay`), the verdicts.

use alloy_consensus::Header;
use alloy_primitives::B256;
use serde_json::Value;
use ssz::Encode;
use sszgate_light::{
    ChainSpec,
    block::{AnyBlock, ElectraBeaconBlockBody, SignedBeaconBlock},
    spec::signing_root,
};
use tree_hash::TreeHash;

use super::interop::Seats;

type FuluBlock = SignedBeaconBlock<ElectraBeaconBlockBody>;

/// The execution header of F's block as the execution relay serves it.
#[derive(Clone, Debug)]
pub(crate) struct ForgedHeader {
    /// The block's number.
    pub(crate) number: u64,
    /// Its real hash (geth's).
    pub(crate) real_hash: B256,
    /// Its hash with the state root changed.
    pub(crate) forged_hash: B256,
    /// The older block whose state root F carries.
    pub(crate) older_number: u64,
    /// Its hash: its state is asked for by hash, so a reorganisation that replaces the block
    /// at that number cannot swap another state in.
    pub(crate) older_hash: B256,
    /// That state root.
    pub(crate) older_state_root: B256,
}

/// The older block O whose state F carries.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Older {
    /// O's number.
    pub(crate) number: u64,
    /// O's hash.
    pub(crate) hash: B256,
    /// O's state root.
    pub(crate) state_root: B256,
}

/// Rebuilds geth's `eth_getBlockByNumber` answer `block` as a header, checks it hashes to
/// geth's hash, and hashes it again with `older`'s state root.
pub(crate) fn forge_header(block: &Value, older: Older) -> Result<ForgedHeader, String> {
    let mut header: Header = serde_json::from_value(block.clone())
        .map_err(|e| format!("geth's block is not a header: {e}"))?;
    let real_hash: B256 = serde_json::from_value(block["hash"].clone())
        .map_err(|e| format!("geth's block has no hash: {e}"))?;
    if header.hash_slow() != real_hash {
        return Err(format!(
            "block {} rebuilt from geth's fields hashes to {}, geth says {real_hash}",
            header.number,
            header.hash_slow()
        ));
    }
    header.state_root = older.state_root;
    Ok(ForgedHeader {
        number: header.number,
        real_hash,
        forged_hash: header.hash_slow(),
        older_number: older.number,
        older_hash: older.hash,
        older_state_root: older.state_root,
    })
}

/// F and its root, made from the head's parent.
#[derive(Clone)]
pub(crate) struct ForgedParent {
    block: FuluBlock,
    /// `hash_tree_root(F.message)`.
    pub(crate) root: B256,
    /// F's slot.
    pub(crate) slot: u64,
}

impl ForgedParent {
    /// F's SSZ.
    pub(crate) fn ssz(&self) -> Vec<u8> {
        self.block.as_ssz_bytes()
    }
}

/// A Fulu block from its SSZ (an earlier fork's block is an error).
pub(crate) fn fulu_block(spec: &ChainSpec, bytes: &[u8]) -> Result<FuluBlock, String> {
    match AnyBlock::from_ssz(spec, bytes).map_err(|e| e.to_string())? {
        AnyBlock::Electra(block) => Ok(*block),
        AnyBlock::Deneb(_) => Err("a Deneb block where a Fulu one was expected".into()),
    }
}

/// F: `parent` with the forged header's state root and hash in its payload, after checking
/// that the payload is that block's.
pub(crate) fn forge_parent(
    mut parent: FuluBlock,
    header: &ForgedHeader,
) -> Result<ForgedParent, String> {
    let payload = &mut parent.message.body.execution_payload;
    if payload.block_number != header.number || payload.block_hash != header.real_hash {
        return Err(format!(
            "the parent's payload is block {} {}, the header is {} {}",
            payload.block_number, payload.block_hash, header.number, header.real_hash
        ));
    }
    payload.state_root = header.older_state_root;
    payload.block_hash = header.forged_hash;
    let root = parent.message.tree_hash_root();
    let slot = parent.message.slot;
    Ok(ForgedParent {
        block: parent,
        root,
        slot,
    })
}

/// C: `head` with `parent_root = root(F)` and the first `k` seats signing `root(F)` (the
/// domain of the fork of `epoch(C.slot - 1)`); its SSZ and root.
pub(crate) fn forge_child(
    spec: &ChainSpec,
    mut head: FuluBlock,
    parent: &ForgedParent,
    seats: &Seats,
    k: usize,
) -> (Vec<u8>, B256) {
    let domain = spec.domain_for_signature_slot(head.message.slot);
    head.message.parent_root = parent.root;
    head.message.body.sync_aggregate = seats.sign(k, signing_root(parent.root, domain));
    (head.as_ssz_bytes(), head.message.tree_hash_root())
}
