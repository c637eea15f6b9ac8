//! The light-client SSZ containers of the consensus specs (Deneb and Electra; Fulu uses
//! Electra's), their roots, and a fork-independent form the sync protocol works on.
//!
//! Beacon blocks live in `block`; the checks on these containers live in `store`.

use alloy_primitives::{Address, B256, FixedBytes, U256};
use ssz::{Decode, DecodeError};
use ssz_derive::{Decode, Encode};
use ssz_types::typenum::{U4, U5, U6, U7, U32, U512, Unsigned};
use ssz_types::{BitVector, FixedVector, VariableList};
use tree_hash_derive::TreeHash;

use crate::error::LightError;
use crate::spec::{ChainSpec, LcFork};

/// A BLS public key, compressed (48 bytes).
pub type BlsPublicKey = FixedBytes<48>;
/// A BLS signature, compressed (96 bytes).
pub type BlsSignature = FixedBytes<96>;

/// `BeaconBlockHeader`: 112 bytes, the object a sync committee signs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct BeaconBlockHeader {
    /// Slot of the block.
    pub slot: u64,
    /// Index of the proposer.
    pub proposer_index: u64,
    /// Root of the parent block.
    pub parent_root: B256,
    /// Root of the post-state.
    pub state_root: B256,
    /// Root of the block body.
    pub body_root: B256,
}

impl BeaconBlockHeader {
    /// `hash_tree_root(header)`: the block root, equal to `tree_hash_root()`. Its five fields
    /// are folded with `merkle::merkleize` (`hash_pair`), not through `tree_hash`'s streaming
    /// hasher: every proof hashes at least one header, and the derived root was 8 % of a warm
    /// block-number proof in WASM (`--cpu-prof`).
    pub fn root(&self) -> B256 {
        let word = |n: u64| {
            let mut chunk = [0u8; 32];
            chunk[..8].copy_from_slice(&n.to_le_bytes());
            chunk
        };
        let mut fields = vec![
            word(self.slot),
            word(self.proposer_index),
            self.parent_root.0,
            self.state_root.0,
            self.body_root.0,
        ];
        // Five fields: a tree of eight leaves.
        B256::from(crate::merkle::merkleize(&mut fields, 3))
    }
}

/// `SyncCommittee`: 512 public keys and their aggregate.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct SyncCommittee {
    /// The members' keys, in committee order.
    pub pubkeys: FixedVector<BlsPublicKey, U512>,
    /// The aggregate of all 512 keys.
    pub aggregate_pubkey: BlsPublicKey,
}

impl Default for SyncCommittee {
    fn default() -> Self {
        SyncCommittee {
            pubkeys: FixedVector::from_elem(BlsPublicKey::ZERO),
            aggregate_pubkey: BlsPublicKey::ZERO,
        }
    }
}

/// `SyncAggregate`: which members signed, and their aggregate signature.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct SyncAggregate {
    /// Bit `i` set when committee member `i` signed.
    pub sync_committee_bits: BitVector<U512>,
    /// Aggregate signature of the participants.
    pub sync_committee_signature: BlsSignature,
}

impl SyncAggregate {
    /// Number of members that signed.
    pub fn participants(&self) -> usize {
        self.sync_committee_bits.num_set_bits()
    }
}

/// `ExecutionPayloadHeader` (Deneb; unchanged in Electra and Fulu).
#[derive(Debug, Clone, Default, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct ExecutionPayloadHeader {
    /// Parent execution block hash.
    pub parent_hash: B256,
    /// Fee recipient.
    pub fee_recipient: Address,
    /// Execution state root.
    pub state_root: B256,
    /// Receipts root.
    pub receipts_root: B256,
    /// Logs bloom.
    pub logs_bloom: FixedBytes<256>,
    /// `prev_randao`.
    pub prev_randao: B256,
    /// Execution block number.
    pub block_number: u64,
    /// Gas limit.
    pub gas_limit: u64,
    /// Gas used.
    pub gas_used: u64,
    /// Timestamp.
    pub timestamp: u64,
    /// Extra data (at most 32 bytes).
    pub extra_data: VariableList<u8, U32>,
    /// Base fee per gas.
    pub base_fee_per_gas: U256,
    /// Execution block hash.
    pub block_hash: B256,
    /// Root of the transactions list.
    pub transactions_root: B256,
    /// Root of the withdrawals list.
    pub withdrawals_root: B256,
    /// Blob gas used.
    pub blob_gas_used: u64,
    /// Excess blob gas.
    pub excess_blob_gas: u64,
}

/// `LightClientHeader` (Deneb onwards): a beacon header and its execution payload header,
/// tied to `beacon.body_root` by `execution_branch`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Encode, Decode, TreeHash)]
pub struct LightClientHeader {
    /// The beacon block header.
    pub beacon: BeaconBlockHeader,
    /// The block's execution payload header.
    pub execution: ExecutionPayloadHeader,
    /// Branch of `execution` (body gindex 25) to `beacon.body_root`.
    pub execution_branch: FixedVector<B256, U4>,
}

/// `LightClientBootstrap`, generic over the committee branch length (Deneb 5, Electra 6).
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct LightClientBootstrapSsz<C: Unsigned> {
    /// The trusted header.
    pub header: LightClientHeader,
    /// The committee of the header's period.
    pub current_sync_committee: SyncCommittee,
    /// Branch of the committee to `header.beacon.state_root`.
    pub current_sync_committee_branch: FixedVector<B256, C>,
}

/// `LightClientUpdate`, generic over the committee (Deneb 5, Electra 6) and finality
/// (Deneb 6, Electra 7) branch lengths.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct LightClientUpdateSsz<C: Unsigned, F: Unsigned> {
    /// The header the committee signed.
    pub attested_header: LightClientHeader,
    /// The committee of the period after the attested header's.
    pub next_sync_committee: SyncCommittee,
    /// Branch of `next_sync_committee` to the attested state root (zeros when absent).
    pub next_sync_committee_branch: FixedVector<B256, C>,
    /// The header finalized by the attested state.
    pub finalized_header: LightClientHeader,
    /// Branch of the finalized root to the attested state root (zeros when absent).
    pub finality_branch: FixedVector<B256, F>,
    /// The signature over the attested header.
    pub sync_aggregate: SyncAggregate,
    /// Slot of the block that carried the signature.
    pub signature_slot: u64,
}

/// `LightClientFinalityUpdate`, generic over the finality branch length.
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct LightClientFinalityUpdateSsz<F: Unsigned> {
    /// The header the committee signed.
    pub attested_header: LightClientHeader,
    /// The header finalized by the attested state.
    pub finalized_header: LightClientHeader,
    /// Branch of the finalized root to the attested state root.
    pub finality_branch: FixedVector<B256, F>,
    /// The signature over the attested header.
    pub sync_aggregate: SyncAggregate,
    /// Slot of the block that carried the signature.
    pub signature_slot: u64,
}

/// `LightClientOptimisticUpdate` (the same in every fork from Deneb on).
#[derive(Debug, Clone, PartialEq, Eq, Encode, Decode)]
pub struct LightClientOptimisticUpdate {
    /// The header the committee signed.
    pub attested_header: LightClientHeader,
    /// The signature over the attested header.
    pub sync_aggregate: SyncAggregate,
    /// Slot of the block that carried the signature.
    pub signature_slot: u64,
}

/// Deneb `LightClientBootstrap`.
pub type DenebLightClientBootstrap = LightClientBootstrapSsz<U5>;
/// Electra `LightClientBootstrap`.
pub type ElectraLightClientBootstrap = LightClientBootstrapSsz<U6>;
/// Deneb `LightClientUpdate`.
pub type DenebLightClientUpdate = LightClientUpdateSsz<U5, U6>;
/// Electra `LightClientUpdate`.
pub type ElectraLightClientUpdate = LightClientUpdateSsz<U6, U7>;

/// A bootstrap in fork-independent form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bootstrap {
    /// The trusted header.
    pub header: LightClientHeader,
    /// The committee of the header's period.
    pub current_sync_committee: SyncCommittee,
    /// Branch of the committee to the header's state root.
    pub current_sync_committee_branch: Vec<B256>,
}

/// Any light-client update (full, finality or optimistic) in fork-independent form; the
/// parts a finality or optimistic update lacks are defaults, as the specs' upgrade functions
/// make them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    /// The header the committee signed.
    pub attested_header: LightClientHeader,
    /// The next committee (default when absent).
    pub next_sync_committee: SyncCommittee,
    /// Its branch (all zeros when absent).
    pub next_sync_committee_branch: Vec<B256>,
    /// The finalized header (default when absent).
    pub finalized_header: LightClientHeader,
    /// Its branch (all zeros when absent).
    pub finality_branch: Vec<B256>,
    /// The signature over the attested header.
    pub sync_aggregate: SyncAggregate,
    /// Slot of the block that carried the signature.
    pub signature_slot: u64,
}

impl Update {
    /// `is_sync_committee_update`: the next-committee branch is not all zeros.
    pub fn has_next_sync_committee(&self) -> bool {
        self.next_sync_committee_branch.iter().any(|n| !n.is_zero())
    }
    /// `is_finality_update`: the finality branch is not all zeros.
    pub fn has_finality(&self) -> bool {
        self.finality_branch.iter().any(|n| !n.is_zero())
    }
}

/// Slot of the light-client header a variable-size container starts with: its first field is
/// an offset to that header, whose first 8 bytes are the beacon slot. Used to pick the fork.
pub fn leading_header_slot(bytes: &[u8], what: &'static str) -> Result<u64, LightError> {
    let offset = bytes
        .get(..4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .ok_or(LightError::Decode {
            what,
            detail: "shorter than one offset".into(),
        })?;
    let slot = offset
        .checked_add(8)
        .and_then(|end| bytes.get(offset..end))
        .ok_or(LightError::Decode {
            what,
            detail: format!("header offset {offset} out of range"),
        })?;
    Ok(u64::from_le_bytes(slot.try_into().unwrap_or_default()))
}

fn lc_fork(spec: &ChainSpec, slot: u64, what: &'static str) -> Result<LcFork, LightError> {
    spec.lc_fork(slot)
        .ok_or(LightError::UnsupportedFork { what, slot })
}

fn decode<T: Decode>(bytes: &[u8], what: &'static str) -> Result<T, LightError> {
    T::from_ssz_bytes(bytes).map_err(|e: DecodeError| LightError::Decode {
        what,
        detail: format!("{e:?}"),
    })
}

impl Bootstrap {
    /// Decodes an SSZ `LightClientBootstrap`, choosing the fork by the header's slot.
    pub fn from_ssz(spec: &ChainSpec, bytes: &[u8]) -> Result<Self, LightError> {
        const WHAT: &str = "LightClientBootstrap";
        let slot = leading_header_slot(bytes, WHAT)?;
        Ok(match lc_fork(spec, slot, WHAT)? {
            LcFork::Deneb => decode::<DenebLightClientBootstrap>(bytes, WHAT)?.into(),
            LcFork::Electra => decode::<ElectraLightClientBootstrap>(bytes, WHAT)?.into(),
        })
    }
}

impl<C: Unsigned> From<LightClientBootstrapSsz<C>> for Bootstrap {
    fn from(b: LightClientBootstrapSsz<C>) -> Self {
        Bootstrap {
            header: b.header,
            current_sync_committee: b.current_sync_committee,
            current_sync_committee_branch: b.current_sync_committee_branch.to_vec(),
        }
    }
}

impl Update {
    /// Decodes an SSZ `LightClientUpdate`, choosing the fork by the attested header's slot.
    pub fn from_ssz(spec: &ChainSpec, bytes: &[u8]) -> Result<Self, LightError> {
        const WHAT: &str = "LightClientUpdate";
        let slot = leading_header_slot(bytes, WHAT)?;
        Ok(match lc_fork(spec, slot, WHAT)? {
            LcFork::Deneb => decode::<DenebLightClientUpdate>(bytes, WHAT)?.into(),
            LcFork::Electra => decode::<ElectraLightClientUpdate>(bytes, WHAT)?.into(),
        })
    }

    /// Decodes an SSZ `LightClientFinalityUpdate`.
    pub fn from_finality_ssz(spec: &ChainSpec, bytes: &[u8]) -> Result<Self, LightError> {
        const WHAT: &str = "LightClientFinalityUpdate";
        let slot = leading_header_slot(bytes, WHAT)?;
        Ok(match lc_fork(spec, slot, WHAT)? {
            LcFork::Deneb => {
                from_finality(decode::<LightClientFinalityUpdateSsz<U6>>(bytes, WHAT)?, 5)
            }
            LcFork::Electra => {
                from_finality(decode::<LightClientFinalityUpdateSsz<U7>>(bytes, WHAT)?, 6)
            }
        })
    }

    /// Decodes an SSZ `LightClientOptimisticUpdate`.
    pub fn from_optimistic_ssz(spec: &ChainSpec, bytes: &[u8]) -> Result<Self, LightError> {
        const WHAT: &str = "LightClientOptimisticUpdate";
        let slot = leading_header_slot(bytes, WHAT)?;
        let depth = match lc_fork(spec, slot, WHAT)? {
            LcFork::Deneb => 5,
            LcFork::Electra => 6,
        };
        let o: LightClientOptimisticUpdate = decode(bytes, WHAT)?;
        Ok(Update {
            attested_header: o.attested_header,
            next_sync_committee: SyncCommittee::default(),
            next_sync_committee_branch: vec![B256::ZERO; depth],
            finalized_header: LightClientHeader::default(),
            finality_branch: vec![B256::ZERO; depth + 1],
            sync_aggregate: o.sync_aggregate,
            signature_slot: o.signature_slot,
        })
    }
}

/// A finality update as an update without a next committee (`committee_depth` zero nodes).
fn from_finality<F: Unsigned>(
    f: LightClientFinalityUpdateSsz<F>,
    committee_depth: usize,
) -> Update {
    Update {
        attested_header: f.attested_header,
        next_sync_committee: SyncCommittee::default(),
        next_sync_committee_branch: vec![B256::ZERO; committee_depth],
        finalized_header: f.finalized_header,
        finality_branch: f.finality_branch.to_vec(),
        sync_aggregate: f.sync_aggregate,
        signature_slot: f.signature_slot,
    }
}

impl<C: Unsigned, F: Unsigned> From<LightClientUpdateSsz<C, F>> for Update {
    fn from(u: LightClientUpdateSsz<C, F>) -> Self {
        Update {
            attested_header: u.attested_header,
            next_sync_committee: u.next_sync_committee,
            next_sync_committee_branch: u.next_sync_committee_branch.to_vec(),
            finalized_header: u.finalized_header,
            finality_branch: u.finality_branch.to_vec(),
            sync_aggregate: u.sync_aggregate,
            signature_slot: u.signature_slot,
        }
    }
}

/// Splits the Beacon API's octet-stream list of updates: each item is `u64 length (LE) |
/// 4-byte fork digest | SSZ update`, the length counting digest and update. At most
/// `max_items` items are accepted.
pub fn split_update_stream(bytes: &[u8], max_items: usize) -> Result<Vec<&[u8]>, LightError> {
    const WHAT: &str = "light-client updates stream";
    let mut items = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        if items.len() == max_items {
            return Err(LightError::Decode {
                what: WHAT,
                detail: format!("more than {max_items} items"),
            });
        }
        let (len, tail) = rest.split_first_chunk::<8>().ok_or(LightError::Decode {
            what: WHAT,
            detail: "truncated length prefix".into(),
        })?;
        let len = u64::from_le_bytes(*len);
        let len = usize::try_from(len)
            .ok()
            .filter(|l| *l >= 4 && *l <= tail.len())
            .ok_or(LightError::Decode {
                what: WHAT,
                detail: format!("item length {len} with {} bytes left", tail.len()),
            })?;
        items.push(&tail[4..len]);
        rest = &tail[len..];
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tree_hash::TreeHash;

    #[test]
    fn header_root_is_its_tree_hash_root() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            seed
        };
        for case in 0..200 {
            let root = |n: u64| B256::from(U256::from(n) * U256::from(0x0123_4567_89ab_cdef_u64));
            let header = BeaconBlockHeader {
                slot: if case == 0 { 0 } else { next() },
                proposer_index: if case == 1 {
                    u64::MAX
                } else {
                    next() >> (case % 64)
                },
                parent_root: root(next()),
                state_root: if case == 2 { B256::ZERO } else { root(next()) },
                body_root: root(next()),
            };
            assert_eq!(header.root(), header.tree_hash_root(), "{header:?}");
        }
    }
}
