//! The sync committee's BLS check: `FastAggregateVerify` of a sync aggregate over a signing
//! root, with the committee's public keys decompressed once per period and kept.
//!
//! What does not live here: which committee and domain a signature needs (see `store`,
//! `spec`).

use alloy_primitives::B256;
use blst::BLST_ERROR;
use blst::min_pk::{AggregatePublicKey, PublicKey, Signature};
use tree_hash::TreeHash;

use crate::error::LightError;
use crate::spec::{MIN_SYNC_COMMITTEE_PARTICIPANTS, SYNC_COMMITTEE_SIZE};
use crate::types::{SyncAggregate, SyncCommittee};

/// The eth2 BLS ciphersuite (proof-of-possession scheme, signatures in G2).
pub const BLS_DST: &[u8] = b"BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_";

/// A sync committee with its keys decompressed and validated (subgroup-checked) once.
#[derive(Clone)]
pub struct CommitteeKeys {
    /// The period the committee signs for.
    pub period: u64,
    /// `hash_tree_root(SyncCommittee)`, to tell committees apart.
    pub root: B256,
    keys: Vec<PublicKey>,
}

impl std::fmt::Debug for CommitteeKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitteeKeys")
            .field("period", &self.period)
            .field("root", &self.root)
            .finish()
    }
}

impl CommitteeKeys {
    /// Decompresses and validates the committee's 512 keys (the costly step, done once).
    pub fn new(committee: &SyncCommittee, period: u64) -> Result<Self, LightError> {
        let keys = committee
            .pubkeys
            .iter()
            .enumerate()
            .map(|(index, key)| {
                PublicKey::key_validate(key.as_slice())
                    .map_err(|_| LightError::InvalidPublicKey { index, period })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(CommitteeKeys {
            period,
            root: committee.tree_hash_root(),
            keys,
        })
    }

    /// Checks `aggregate` over `signing_root`: at least one participant, and the aggregate
    /// signature of the participants' keys valid.
    pub fn verify(
        &self,
        aggregate: &SyncAggregate,
        signing_root: B256,
        signature_slot: u64,
    ) -> Result<(), LightError> {
        let fail = |detail: String| LightError::Signature {
            detail,
            signature_slot,
            period: self.period,
        };
        let participants: Vec<&PublicKey> = (0..SYNC_COMMITTEE_SIZE)
            .filter(|i| aggregate.sync_committee_bits.get(*i).unwrap_or(false))
            .filter_map(|i| self.keys.get(i))
            .collect();
        if participants.len() < MIN_SYNC_COMMITTEE_PARTICIPANTS {
            return Err(LightError::Participation {
                participants: participants.len(),
                required: MIN_SYNC_COMMITTEE_PARTICIPANTS,
                field: "sync_committee_bits",
            });
        }
        // Keys were validated at decompression; the signature is group-checked here.
        let signature =
            Signature::sig_validate(aggregate.sync_committee_signature.as_slice(), true)
                .map_err(|e| fail(format!("signature does not decode: {e:?}")))?;
        let aggregate_key = AggregatePublicKey::aggregate(&participants, false)
            .map_err(|e| fail(format!("keys do not aggregate: {e:?}")))?
            .to_public_key();
        match signature.verify(
            false,
            signing_root.as_slice(),
            BLS_DST,
            &[],
            &aggregate_key,
            false,
        ) {
            BLST_ERROR::BLST_SUCCESS => Ok(()),
            e => Err(fail(format!("aggregate signature does not verify: {e:?}"))),
        }
    }
}
