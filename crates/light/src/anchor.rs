//! Execution blocks anchored in verified beacon headers: from a light-client header's
//! `execution` (checked through its branch to `body_root`), from a beacon block whose child's
//! sync aggregate signs it, and from a block whose root is the parent root of a verified one.
//!
//! A beacon block's body root is recomputed from the whole body (the execution payload
//! included), so a block whose root is verified binds its payload's number and hash without a
//! separate branch. What does not live here: fetching blocks (see `client`).

use alloy_primitives::B256;

use crate::block::BlockSummary;
use crate::error::LightError;
use crate::participation::ParticipationPolicy;
use crate::store::{LightClientStore, check_lc_header};
use crate::types::{BeaconBlockHeader, LightClientHeader};
use crate::{Anchor, Trust};

/// A beacon header the light client trusts, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerifiedHeader {
    /// The header.
    pub header: BeaconBlockHeader,
    /// Its root.
    pub root: B256,
    /// How it came to be trusted.
    pub trust: Trust,
}

/// The anchor of a light-client header the store verified (its signature or finality);
/// checks the execution branch again so that no unchecked execution header is anchored.
pub fn anchor_from_lc_header(
    header: &LightClientHeader,
    trust: Trust,
) -> Result<Anchor, LightError> {
    check_lc_header(header, "execution")?;
    Ok(Anchor {
        slot: header.beacon.slot,
        beacon_root: header.beacon.root(),
        number: header.execution.block_number,
        hash: header.execution.block_hash,
        trust,
    })
}

/// Verifies that `child`'s sync aggregate signs `parent` (the committee of the child's slot's
/// period, the fork version of `epoch(child slot - 1)`) with the participation `policy`
/// requires (checked before the signature), and returns the parent as verified.
pub fn verify_signed_by_child(
    store: &LightClientStore,
    policy: ParticipationPolicy,
    parent: &BlockSummary,
    child: &BlockSummary,
) -> Result<VerifiedHeader, LightError> {
    if child.header.parent_root != parent.root {
        return Err(LightError::RootMismatch {
            check: "child_parent_root",
            field: "child.parent_root",
            got: child.header.parent_root,
            expected: parent.root,
        });
    }
    if child.header.slot <= parent.header.slot {
        return Err(LightError::SlotOrder {
            detail: format!(
                "child slot {} not after parent slot {}",
                child.header.slot, parent.header.slot
            ),
        });
    }
    let trust = policy.check(
        child.sync_aggregate.participants(),
        store.safety_threshold(),
        "child.sync_aggregate",
    )?;
    store.verify_signature(parent.root, &child.sync_aggregate, child.header.slot)?;
    Ok(VerifiedHeader {
        header: parent.header,
        root: parent.root,
        trust,
    })
}

/// Verifies `parent` as the parent of an already verified header (its root equals the
/// verified header's `parent_root`); it inherits the child's trust.
pub fn verify_parent(
    child: &VerifiedHeader,
    parent: &BlockSummary,
) -> Result<VerifiedHeader, LightError> {
    if parent.root != child.header.parent_root {
        return Err(LightError::RootMismatch {
            check: "parent_chain",
            field: "block root",
            got: parent.root,
            expected: child.header.parent_root,
        });
    }
    Ok(VerifiedHeader {
        header: parent.header,
        root: parent.root,
        trust: child.trust,
    })
}

/// The anchor of `block`, whose root must be the verified header's.
pub fn anchor_block(verified: &VerifiedHeader, block: &BlockSummary) -> Result<Anchor, LightError> {
    if block.root != verified.root {
        return Err(LightError::RootMismatch {
            check: "block_root",
            field: "block root",
            got: block.root,
            expected: verified.root,
        });
    }
    if block.execution_hash.is_zero() {
        // The beacon genesis block (and a pre-merge one) has an empty payload: its number 0
        // and hash zero are no execution block's.
        return Err(LightError::NotConnected {
            detail: format!(
                "the beacon block at slot {} carries no execution payload (a genesis or pre-merge block): it anchors no execution block",
                block.header.slot
            ),
        });
    }
    Ok(Anchor {
        slot: block.header.slot,
        beacon_root: block.root,
        number: block.execution_number,
        hash: block.execution_hash,
        trust: verified.trust,
    })
}

impl VerifiedHeader {
    /// A header the store holds (finalized, supermajority or optimistic).
    pub fn from_lc_header(header: &LightClientHeader, trust: Trust) -> Self {
        VerifiedHeader {
            header: header.beacon,
            root: header.beacon.root(),
            trust,
        }
    }
}

#[cfg(test)]
mod tests {
    use ssz::Decode;
    use ssz_types::{BitVector, typenum::U512};

    use super::*;
    use crate::types::SyncAggregate;

    fn summary(slot: u64, execution_hash: B256) -> BlockSummary {
        let header = BeaconBlockHeader {
            slot,
            proposer_index: 0,
            parent_root: B256::ZERO,
            state_root: B256::repeat_byte(1),
            body_root: B256::repeat_byte(2),
        };
        BlockSummary {
            header,
            root: header.root(),
            sync_aggregate: SyncAggregate {
                sync_committee_bits: BitVector::<U512>::from_ssz_bytes(&[0; 64]).unwrap(),
                sync_committee_signature: Default::default(),
            },
            execution_number: 0,
            execution_hash,
        }
    }

    #[test]
    fn a_beacon_block_with_an_empty_payload_anchors_no_execution_block() {
        let genesis = summary(0, B256::ZERO);
        let e = anchor_block(&verified_of(&genesis), &genesis).unwrap_err();
        assert!(
            e.to_string()
                .contains("slot 0 carries no execution payload"),
            "{e}"
        );
        let merged = summary(0, B256::repeat_byte(7));
        let anchor = anchor_block(&verified_of(&merged), &merged).unwrap();
        assert_eq!((anchor.number, anchor.hash), (0, B256::repeat_byte(7)));
    }

    fn verified_of(block: &BlockSummary) -> VerifiedHeader {
        VerifiedHeader {
            header: block.header,
            root: block.root,
            trust: Trust::Finalized,
        }
    }
}
