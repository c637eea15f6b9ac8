//! The sync-committee seats an attacker holds on the live chain: its validators use the public
//! interop keys (eth2.0-pm `interop/mocked_start/keygen.py`, Lodestar's `interopSecretKey`:
//! the secret key of validator `i` is `int.from_bytes(sha256(i as 32 bytes, little-endian),
//! 'little') % r`, r the BLS12-381 group order), so every seat's key is known. The seats are
//! matched to the committee a light-client bootstrap proves, and `k` of them sign a root as a
//! sync aggregate.
//!
//! Not here: what is signed (`forge`), the chain.

use alloy_primitives::{B256, U256};
use blst::min_pk::{AggregateSignature, SecretKey};
use sha2::{Digest, Sha256};
use ssz_types::{BitVector, typenum::U512};
use sszgate_light::{
    bls::BLS_DST,
    spec::SYNC_COMMITTEE_SIZE,
    types::{SyncAggregate, SyncCommittee},
};

/// The BLS12-381 group order r.
const GROUP_ORDER: U256 = U256::from_be_bytes([
    0x73, 0xed, 0xa7, 0x53, 0x29, 0x9d, 0x7d, 0x48, 0x33, 0x39, 0xd8, 0x08, 0x09, 0xa1, 0xd8, 0x05,
    0x53, 0xbd, 0xa4, 0x02, 0xff, 0xfe, 0x5b, 0xfe, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01,
]);

/// The interop secret key of validator `index`.
pub(crate) fn secret_key(index: u64) -> SecretKey {
    let mut preimage = [0u8; 32];
    preimage[..8].copy_from_slice(&index.to_le_bytes());
    let digest: [u8; 32] = Sha256::digest(preimage).into();
    let scalar = U256::from_le_bytes(digest) % GROUP_ORDER;
    SecretKey::from_bytes(&scalar.to_be_bytes::<32>())
        .expect("a scalar below the group order is a valid secret key")
}

/// The secret key of every seat of one sync committee.
pub(crate) struct Seats {
    keys: Vec<SecretKey>,
    /// How many seats each validator holds, by validator index.
    pub(crate) per_validator: Vec<usize>,
}

impl Seats {
    /// Matches each of `committee`'s 512 public keys to the interop key of one of the first
    /// `validators` validators; an error names the first seat no interop key matches (the
    /// chain does not use the interop keys, and the forgery would prove nothing).
    pub(crate) fn of(committee: &SyncCommittee, validators: u64) -> Result<Seats, String> {
        let known: Vec<(SecretKey, [u8; 48])> = (0..validators)
            .map(|i| {
                let key = secret_key(i);
                let public = key.sk_to_pk().compress();
                (key, public)
            })
            .collect();
        let mut keys = Vec::with_capacity(SYNC_COMMITTEE_SIZE);
        let mut per_validator = vec![0; known.len()];
        for (seat, pubkey) in committee.pubkeys.iter().enumerate() {
            let index = known
                .iter()
                .position(|(_, public)| public == pubkey.as_slice())
                .ok_or_else(|| {
                    format!("seat {seat}'s key {pubkey} is none of the {validators} interop keys")
                })?;
            per_validator[index] += 1;
            keys.push(known[index].0.clone());
        }
        Ok(Seats {
            keys,
            per_validator,
        })
    }

    /// A sync aggregate in which the first `k` seats sign `signing_root`.
    pub(crate) fn sign(&self, k: usize, signing_root: B256) -> SyncAggregate {
        let k = k.min(self.keys.len());
        let mut bits = BitVector::<U512>::new();
        let signatures: Vec<blst::min_pk::Signature> = self.keys[..k]
            .iter()
            .map(|key| key.sign(signing_root.as_slice(), BLS_DST, &[]))
            .collect();
        for seat in 0..k {
            bits.set(seat, true).expect("a seat below 512");
        }
        let refs: Vec<&blst::min_pk::Signature> = signatures.iter().collect();
        let signature = match AggregateSignature::aggregate(&refs, false) {
            Ok(aggregate) => aggregate.to_signature().compress(),
            // No signer: the point at infinity, as the specs write an empty aggregate.
            Err(_) => infinity(),
        };
        SyncAggregate {
            sync_committee_bits: bits,
            sync_committee_signature: signature.into(),
        }
    }
}

/// The compressed G2 point at infinity.
fn infinity() -> [u8; 96] {
    let mut bytes = [0u8; 96];
    bytes[0] = 0xc0;
    bytes
}

/// Whether `public` is the interop key of validator `index` (a check a test can make).
#[cfg(test)]
fn is_interop_key(index: u64, public: &blst::min_pk::PublicKey) -> bool {
    secret_key(index).sk_to_pk() == *public
}

#[cfg(test)]
mod tests {
    use super::*;
    use blst::min_pk::PublicKey;

    /// eth2.0-pm `interop/mocked_start/keygen_10_validators.yaml`, validators 0 and 1.
    const REFERENCE: [(u64, &str, &str); 2] = [
        (
            0,
            "25295f0d1d592a90b333e26e85149708208e9f8e8bc18f6c77bd62f8ad7a6866",
            "a99a76ed7796f7be22d5b7e85deeb7c5677e88e511e0b337618f8c4eb61349b4bf2d153f649f7b53359fe8b94a38e44c",
        ),
        (
            1,
            "51d0b65185db6989ab0b560d6deed19c7ead0e24b9b6372cbecb1f26bdfad000",
            "b89bebc699769726a318c8e9971bd3171297c61aea4a6578a7a4f94b547dcba5bac16a89108b6b6a1fe3695d1a874a0b",
        ),
    ];

    #[test]
    fn interop_keys_are_the_reference_keys() {
        for (index, secret, public) in REFERENCE {
            assert_eq!(
                const_hex::encode(secret_key(index).to_bytes()),
                secret,
                "validator {index}"
            );
            let public = PublicKey::from_bytes(&const_hex::decode(public).unwrap()).unwrap();
            assert!(is_interop_key(index, &public), "validator {index}");
        }
    }

    #[test]
    fn k_seats_sign_and_the_aggregate_verifies_with_their_keys() {
        let mut committee = SyncCommittee::default();
        for (seat, key) in committee.pubkeys.iter_mut().enumerate() {
            *key = secret_key(seat as u64 % 8).sk_to_pk().compress().into();
        }
        let seats = Seats::of(&committee, 8).unwrap();
        assert_eq!(seats.per_validator, vec![64; 8]);
        let root = B256::repeat_byte(7);
        let aggregate = seats.sign(100, root);
        assert_eq!(aggregate.participants(), 100);
        let keys: Vec<PublicKey> = (0..100).map(|s| secret_key(s % 8).sk_to_pk()).collect();
        let refs: Vec<&PublicKey> = keys.iter().collect();
        let signature =
            blst::min_pk::Signature::from_bytes(aggregate.sync_committee_signature.as_slice())
                .unwrap();
        let verdict = signature.fast_aggregate_verify(true, root.as_slice(), BLS_DST, &refs);
        assert_eq!(verdict, blst::BLST_ERROR::BLST_SUCCESS);
    }

    #[test]
    fn a_committee_of_other_keys_is_refused_naming_the_seat() {
        let mut committee = SyncCommittee::default();
        for key in committee.pubkeys.iter_mut() {
            *key = secret_key(3).sk_to_pk().compress().into();
        }
        committee.pubkeys[17] = secret_key(9).sk_to_pk().compress().into();
        let error = Seats::of(&committee, 8).err().unwrap();
        assert!(error.starts_with("seat 17's key"), "{error}");
    }
}
