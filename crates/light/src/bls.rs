//! The sync committee's BLS check: `FastAggregateVerify` of a sync aggregate over a signing
//! root, with the committee's public keys decompressed once per period and kept.
//!
//! Most aggregates are signed by nearly the whole committee, so the participants' key is
//! computed as the sum of all 512 keys plus the negated keys of the few absent members
//! (negation is free in compressed form: the sign bit of `y`) rather than as a sum of ~500.
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
use ssz_types::BitVector;
use ssz_types::typenum::U512;

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
    /// `-keys[i]`, for removing absent members from `all`.
    negated: Vec<PublicKey>,
    /// The sum of all 512 keys.
    all: PublicKey,
}

/// Bit of the compressed G1 encoding that selects the larger `y`: flipping it negates the point.
const SIGN_BIT: u8 = 0x20;
/// Bytes of an uncompressed G1 point (`x || y`, big-endian).
const UNCOMPRESSED: usize = 96;
/// The BLS12-381 base field modulus `p`, big-endian.
const MODULUS: [u8; 48] = alloy_primitives::hex!(
    "1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab"
);

/// `-P` of an uncompressed point `x || y`: `x || p - y` (the point at infinity has no
/// uncompressed committee key, so `y` is never zero here).
fn negate_uncompressed(point: &[u8; UNCOMPRESSED]) -> [u8; UNCOMPRESSED] {
    let mut out = *point;
    let mut borrow = 0i16;
    for i in (0..48).rev() {
        let d = i16::from(MODULUS[i]) - i16::from(point[48 + i]) - borrow;
        borrow = i16::from(d < 0);
        out[48 + i] = d.rem_euclid(256) as u8;
    }
    out
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
        let invalid = |index| LightError::InvalidPublicKey { index, period };
        let mut keys = Vec::with_capacity(SYNC_COMMITTEE_SIZE);
        let mut negated = Vec::with_capacity(SYNC_COMMITTEE_SIZE);
        for (index, key) in committee.pubkeys.iter().enumerate() {
            keys.push(PublicKey::key_validate(key.as_slice()).map_err(|_| invalid(index))?);
            // -P is in the subgroup when P is: decompressing it needs no second check.
            let mut flipped = key.0;
            flipped[0] ^= SIGN_BIT;
            negated.push(PublicKey::uncompress(&flipped).map_err(|_| invalid(index))?);
        }
        Self::with_keys(committee, period, keys, negated)
    }

    /// The keys uncompressed (512 × 96 bytes), for saving: [`CommitteeKeys::from_uncompressed`]
    /// takes them back without a square root or subgroup check per key.
    pub fn to_uncompressed(&self) -> Vec<u8> {
        self.keys.iter().flat_map(|k| k.serialize()).collect()
    }

    /// Rebuilds the keys of `committee` from [`CommitteeKeys::to_uncompressed`]'s bytes. Each
    /// key is checked to be on the curve and to compress to the committee's key at its index,
    /// so the bytes can only name the committee's own keys, which were subgroup-checked when
    /// the committee was first learned ([`CommitteeKeys::new`]). Measured: ~40× faster than
    /// decompressing (docs/benchmarks.md, verified RPC), which is what a restart pays.
    pub fn from_uncompressed(
        committee: &SyncCommittee,
        period: u64,
        bytes: &[u8],
    ) -> Result<Self, LightError> {
        let invalid = |index| LightError::InvalidPublicKey { index, period };
        if bytes.len() != SYNC_COMMITTEE_SIZE * UNCOMPRESSED {
            return Err(invalid(bytes.len() / UNCOMPRESSED));
        }
        let mut keys = Vec::with_capacity(SYNC_COMMITTEE_SIZE);
        let mut negated = Vec::with_capacity(SYNC_COMMITTEE_SIZE);
        for (index, (point, expected)) in bytes
            .chunks_exact(UNCOMPRESSED)
            .zip(committee.pubkeys.iter())
            .enumerate()
        {
            let point: &[u8; UNCOMPRESSED] = point.try_into().map_err(|_| invalid(index))?;
            let key = PublicKey::deserialize(point).map_err(|_| invalid(index))?;
            if key.compress() != expected.0 {
                return Err(invalid(index));
            }
            keys.push(key);
            negated.push(
                PublicKey::deserialize(&negate_uncompressed(point)).map_err(|_| invalid(index))?,
            );
        }
        Self::with_keys(committee, period, keys, negated)
    }

    fn with_keys(
        committee: &SyncCommittee,
        period: u64,
        keys: Vec<PublicKey>,
        negated: Vec<PublicKey>,
    ) -> Result<Self, LightError> {
        let refs: Vec<&PublicKey> = keys.iter().collect();
        let all = AggregatePublicKey::aggregate(&refs, false)
            .map_err(|_| LightError::InvalidPublicKey { index: 0, period })?
            .to_public_key();
        Ok(CommitteeKeys {
            period,
            root: committee.tree_hash_root(),
            keys,
            negated,
            all,
        })
    }

    /// The sum of the keys whose bit is set: from the full sum minus the absent members when
    /// most signed, else summed directly. `None` when no bit is set.
    pub fn participants_key(&self, bits: &BitVector<U512>) -> Option<PublicKey> {
        let present: Vec<usize> = (0..SYNC_COMMITTEE_SIZE)
            .filter(|i| bits.get(*i).unwrap_or(false))
            .collect();
        if present.is_empty() {
            return None;
        }
        if present.len() * 2 >= SYNC_COMMITTEE_SIZE {
            let mut sum = AggregatePublicKey::from_public_key(&self.all);
            let absent = (0..SYNC_COMMITTEE_SIZE).filter(|i| !bits.get(*i).unwrap_or(false));
            for i in absent {
                sum.add_public_key(&self.negated[i], false).ok()?;
            }
            Some(sum.to_public_key())
        } else {
            let refs: Vec<&PublicKey> = present.iter().map(|i| &self.keys[*i]).collect();
            AggregatePublicKey::aggregate(&refs, false)
                .ok()
                .map(|a| a.to_public_key())
        }
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
        let participants = aggregate.participants();
        if participants < MIN_SYNC_COMMITTEE_PARTICIPANTS {
            return Err(LightError::Participation {
                participants,
                required: MIN_SYNC_COMMITTEE_PARTICIPANTS,
                field: "sync_committee_bits",
            });
        }
        // Keys were validated at decompression; the signature is group-checked here.
        let signature =
            Signature::sig_validate(aggregate.sync_committee_signature.as_slice(), true)
                .map_err(|e| fail(format!("signature does not decode: {e:?}")))?;
        let aggregate_key = self
            .participants_key(&aggregate.sync_committee_bits)
            .ok_or_else(|| fail("participants' keys do not aggregate".into()))?;
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
