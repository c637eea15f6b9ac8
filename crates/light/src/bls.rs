//! The sync committee's BLS check: `FastAggregateVerify` of a sync aggregate over a signing
//! root, with the committee's public keys decompressed once per period and kept.
//!
//! Most aggregates are signed by nearly the whole committee, so the participants' key is
//! computed as the sum of all 512 keys plus the negated keys of the few absent members
//! (negation is a subtraction: `y` becomes `p - y`) rather than as a sum of ~500. Keys can be
//! saved and taken back three ways: decompressed and subgroup-checked (`new`), uncompressed and
//! checked against the committee (`from_uncompressed`), or in blst's own form with no check
//! (`from_raw`, for a state trusted as a whole). Signatures that verified are remembered, once
//! per process, by the exact keys they verified under (a digest of the points, below).
//!
//! What does not live here: which committee and domain a signature needs (see `store`,
//! `spec`).

use std::collections::VecDeque;
use std::sync::Mutex;

use alloy_primitives::B256;
use blst::min_pk::{AggregatePublicKey, PublicKey, Signature};
use blst::{BLST_ERROR, blst_p1_affine};

use crate::error::LightError;
use crate::merkle::sha256;
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
    keys: Vec<PublicKey>,
    /// The sum of all 512 keys.
    all: PublicKey,
    /// SHA-256 of the keys and their sum in blst's own form ([`CommitteeKeys::to_raw`]'s
    /// bytes): names these exact points in the record of verified signatures.
    identity: [u8; 32],
}

/// Bytes of an uncompressed G1 point (`x || y`, big-endian).
const UNCOMPRESSED: usize = 96;
/// Bytes of a point in blst's own form: `x` and `y` as Montgomery-form 64-bit limbs,
/// little-endian ([`CommitteeKeys::to_raw`]).
const RAW: usize = 96;
/// The BLS12-381 base field modulus `p` as blst's little-endian 64-bit limbs.
const MODULUS_LIMBS: [u64; 6] = [
    0xb9fe_ffff_ffff_aaab,
    0x1eab_fffe_b153_ffff,
    0x6730_d2a0_f6b0_f624,
    0x6477_4b84_f385_12bf,
    0x4b1b_a7b6_434b_acd7,
    0x1a01_11ea_397f_e69a,
];

/// `-P`: `y` becomes `p - y`, which holds in Montgomery form too (`p - yR ≡ -y·R mod p`);
/// a subtraction, where decompressing `-P` would cost a square root. A committee key is never
/// the point at infinity, so `y` is never zero here.
fn negate(key: &PublicKey) -> PublicKey {
    let mut point = *<&blst_p1_affine>::from(key);
    let mut borrow = false;
    for (limb, p) in point.y.l.iter_mut().zip(MODULUS_LIMBS) {
        let (d, b1) = p.overflowing_sub(*limb);
        let (d, b2) = d.overflowing_sub(u64::from(borrow));
        *limb = d;
        borrow = b1 | b2;
    }
    point.into()
}

/// Appends `key` in blst's own form (see [`RAW`]).
fn push_raw(key: &PublicKey, out: &mut Vec<u8>) {
    let point = <&blst_p1_affine>::from(key);
    for limb in point.x.l.iter().chain(&point.y.l) {
        out.extend_from_slice(&limb.to_le_bytes());
    }
}

/// `keys` then their sum `all`, each in blst's own form ([`CommitteeKeys::to_raw`]).
fn raw_bytes(keys: &[PublicKey], all: &PublicKey) -> Vec<u8> {
    let mut out = Vec::with_capacity((keys.len() + 1) * RAW);
    for key in keys.iter().chain([all]) {
        push_raw(key, &mut out);
    }
    out
}

/// The key [`push_raw`] wrote: no field operation and no check at all.
fn from_raw_point(bytes: &[u8; RAW]) -> PublicKey {
    let mut point = blst_p1_affine::default();
    let limbs = point.x.l.iter_mut().chain(point.y.l.iter_mut());
    for (limb, chunk) in limbs.zip(bytes.chunks_exact(8)) {
        let mut le = [0u8; 8];
        le.copy_from_slice(chunk);
        *limb = u64::from_le_bytes(le);
    }
    point.into()
}

impl std::fmt::Debug for CommitteeKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitteeKeys")
            .field("period", &self.period)
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
        Self::with_keys(period, keys)
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
        let keys = bytes
            .chunks_exact(UNCOMPRESSED)
            .zip(committee.pubkeys.iter())
            .enumerate()
            .map(|(index, (point, expected))| {
                let key = PublicKey::deserialize(point).map_err(|_| invalid(index))?;
                (key.compress() == expected.0)
                    .then_some(key)
                    .ok_or(invalid(index))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::with_keys(period, keys)
    }

    /// The keys and their sum in blst's own form (513 × 96 bytes), for a saved state that is
    /// trusted as a whole: [`CommitteeKeys::from_raw`] takes them back with no field operation.
    pub fn to_raw(&self) -> Vec<u8> {
        raw_bytes(&self.keys, &self.all)
    }

    /// Takes back [`CommitteeKeys::to_raw`]'s bytes as the keys of `committee`. The points are
    /// not checked: only for bytes as trusted as the committee itself (a state the caller
    /// saved, checked for corruption; whoever can write it could name any committee anyway).
    /// The first and the last key must compress to the committee's, which refuses the bytes
    /// of another committee and those of a build whose blst keeps points another way.
    pub fn from_raw(
        committee: &SyncCommittee,
        period: u64,
        bytes: &[u8],
    ) -> Result<Self, LightError> {
        let invalid = |index| LightError::InvalidPublicKey { index, period };
        if bytes.len() != (SYNC_COMMITTEE_SIZE + 1) * RAW {
            return Err(invalid(bytes.len() / RAW));
        }
        let mut points = bytes
            .chunks_exact(RAW)
            .map(|chunk| from_raw_point(chunk.try_into().unwrap_or(&[0; RAW])));
        let keys: Vec<PublicKey> = points.by_ref().take(SYNC_COMMITTEE_SIZE).collect();
        let all = points.next().ok_or(invalid(SYNC_COMMITTEE_SIZE))?;
        for index in [0, SYNC_COMMITTEE_SIZE - 1] {
            if keys[index].compress() != committee.pubkeys[index].0 {
                return Err(invalid(index));
            }
        }
        let identity = sha256(bytes);
        Ok(CommitteeKeys {
            period,
            keys,
            all,
            identity,
        })
    }

    fn with_keys(period: u64, keys: Vec<PublicKey>) -> Result<Self, LightError> {
        let refs: Vec<&PublicKey> = keys.iter().collect();
        let all = AggregatePublicKey::aggregate(&refs, false)
            .map_err(|_| LightError::InvalidPublicKey { index: 0, period })?
            .to_public_key();
        let identity = sha256(&raw_bytes(&keys, &all));
        Ok(CommitteeKeys {
            period,
            keys,
            all,
            identity,
        })
    }

    /// The sum of the keys whose bit is set: from the full sum minus the absent members when
    /// most signed, else summed directly. `None` when no bit is set.
    pub fn participants_key(&self, bits: &BitVector<U512>) -> Option<PublicKey> {
        // Bit `i` is bit `i % 8` of byte `i / 8` (SSZ's order). Read from the bytes: in WASM
        // `Bitfield::get` per bit, its bounds checks and the filters were ~9 % of an account
        // proof's first verify (Node, `--cpu-prof`).
        let bytes = bits.as_slice();
        let set = |i: usize| bytes.get(i / 8).is_some_and(|b| b >> (i % 8) & 1 == 1);
        let present: Vec<usize> = (0..SYNC_COMMITTEE_SIZE).filter(|i| set(*i)).collect();
        if present.is_empty() {
            return None;
        }
        if present.len() * 2 >= SYNC_COMMITTEE_SIZE {
            let mut sum = AggregatePublicKey::from_public_key(&self.all);
            for i in (0..SYNC_COMMITTEE_SIZE).filter(|i| !set(*i)) {
                sum.add_public_key(&negate(&self.keys[i]), false).ok()?;
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
        // Named by the exact points the participants' key is summed from, not by that key:
        // a header seen before then costs a hash, not the sum and its field inversion (half
        // of a warm account or block-number proof in WASM, `--cpu-prof`).
        let digest = sha256(
            &[
                &self.identity[..],
                aggregate.sync_committee_bits.as_slice(),
                signing_root.as_slice(),
                aggregate.sync_committee_signature.as_slice(),
            ]
            .concat(),
        );
        if VERIFIED.remembers(&digest) {
            return Ok(());
        }
        let aggregate_key = self
            .participants_key(&aggregate.sync_committee_bits)
            .ok_or_else(|| fail("participants' keys do not aggregate".into()))?;
        // Keys were validated at decompression; the signature is group-checked here.
        let signature =
            Signature::sig_validate(aggregate.sync_committee_signature.as_slice(), true)
                .map_err(|e| fail(format!("signature does not decode: {e:?}")))?;
        match signature.verify(
            false,
            signing_root.as_slice(),
            BLS_DST,
            &[],
            &aggregate_key,
            false,
        ) {
            BLST_ERROR::BLST_SUCCESS => {
                VERIFIED.remember(digest);
                Ok(())
            }
            e => Err(fail(format!("aggregate signature does not verify: {e:?}"))),
        }
    }
}

/// Signatures that verified, as digests of (the committee keys' identity, the participation
/// bits, signing root, signature), newest last: a repeated header costs a hash, not a pairing.
/// Shared by every committee and verifier in the process, which is safe because the identity
/// is the SHA-256 of the exact points (the 512 keys and their sum) that the participants' key
/// is computed from, so a digest names the exact key the signature verified under, a fact of
/// arithmetic, not a committee some verifier trusts: a verifier made from an attacker's state
/// (any points under an honest committee's name) can only add digests of the attacker's points.
struct VerifiedSignatures(Mutex<VecDeque<[u8; 32]>>);

/// Digests remembered at most.
const VERIFIED_SIGNATURES: usize = 64;

/// The process's one record of verified signatures.
static VERIFIED: VerifiedSignatures = VerifiedSignatures(Mutex::new(VecDeque::new()));

impl VerifiedSignatures {
    fn remembers(&self, digest: &[u8; 32]) -> bool {
        self.0.lock().is_ok_and(|v| v.contains(digest))
    }

    fn remember(&self, digest: [u8; 32]) {
        if let Ok(mut v) = self.0.lock() {
            if v.len() == VERIFIED_SIGNATURES {
                v.pop_front();
            }
            v.push_back(digest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::BlsPublicKey;
    use blst::min_pk::SecretKey;
    use ssz_types::FixedVector;

    /// A committee of 512 keys from `seed`.
    fn committee(seed: u8) -> SyncCommittee {
        let pubkeys: Vec<BlsPublicKey> = (0..512u16)
            .map(|i| {
                let mut ikm = [seed; 32];
                ikm[..2].copy_from_slice(&i.to_le_bytes());
                let secret = SecretKey::key_gen(&ikm, &[]).expect("32 bytes of key material");
                BlsPublicKey::from(secret.sk_to_pk().compress())
            })
            .collect();
        SyncCommittee {
            pubkeys: FixedVector::new(pubkeys).expect("512 keys"),
            aggregate_pubkey: BlsPublicKey::ZERO,
        }
    }

    /// The same points name themselves alike however they were made, so a verifier from
    /// saved state finds what a verifier that decompressed the keys verified; other points
    /// (another committee, or the same keys with another stored sum) do not.
    #[test]
    fn the_identity_is_the_points_whichever_way_they_were_made() {
        let honest = committee(7);
        let decompressed = CommitteeKeys::new(&honest, 3).expect("valid keys");
        let uncompressed =
            CommitteeKeys::from_uncompressed(&honest, 3, &decompressed.to_uncompressed())
                .expect("the committee's own keys");
        let raw = CommitteeKeys::from_raw(&honest, 3, &decompressed.to_raw()).expect("raw");
        assert_eq!(decompressed.identity, sha256(&decompressed.to_raw()));
        assert_eq!(uncompressed.identity, decompressed.identity);
        assert_eq!(raw.identity, decompressed.identity);
        let other = CommitteeKeys::new(&committee(8), 3).expect("valid keys");
        assert_ne!(other.identity, decompressed.identity);
        let mut other_sum = decompressed.to_raw();
        other_sum[512 * RAW] ^= 1;
        let other_sum = CommitteeKeys::from_raw(&honest, 3, &other_sum).expect("unchecked sum");
        assert_ne!(other_sum.identity, decompressed.identity);
    }
}
