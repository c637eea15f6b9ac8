//! The participants' key computed by subtraction (all keys plus the absent members' negated
//! keys) equals the direct sum, on a real mainnet committee; keys saved uncompressed or in
//! blst's own form load back to the same keys, and only to the committee's own; a signature
//! remembered as verified under one committee's keys does not pass under another's.

mod common;

use alloy_primitives::B256;
use blst::min_pk::{AggregatePublicKey, AggregateSignature, PublicKey, SecretKey};
use ssz_types::typenum::U512;
use ssz_types::{BitVector, FixedVector};
use sszgate_light::bls::{BLS_DST, CommitteeKeys};
use sszgate_light::spec::ChainSpec;
use sszgate_light::types::{BlsPublicKey, BlsSignature, Bootstrap, SyncAggregate, SyncCommittee};

fn committee_of(case: &str) -> SyncCommittee {
    let bytes = common::read_prefixed(case, "eth_v1_beacon_light_client_bootstrap_");
    Bootstrap::from_ssz(&ChainSpec::mainnet(), &bytes)
        .unwrap()
        .current_sync_committee
}

#[test]
fn participants_key_by_subtraction_equals_the_direct_sum() {
    let committee = committee_of("eth_blockNumber_electra");
    let decompressed_keys = CommitteeKeys::new(&committee, 1422).unwrap();
    // The same checks on keys loaded back from their uncompressed form.
    let saved = decompressed_keys.to_uncompressed();
    assert_eq!(saved.len(), 512 * 96);
    let loaded = CommitteeKeys::from_uncompressed(&committee, 1422, &saved).unwrap();
    let raw = decompressed_keys.to_raw();
    assert_eq!(raw.len(), 513 * 96);
    let from_raw = CommitteeKeys::from_raw(&committee, 1422, &raw).unwrap();
    assert_eq!(from_raw.to_uncompressed(), saved, "the same points");
    for keys in [decompressed_keys, loaded, from_raw] {
        check_participants_key(&committee, &keys);
    }
}

fn check_participants_key(committee: &SyncCommittee, keys: &CommitteeKeys) {
    let decompressed: Vec<PublicKey> = committee
        .pubkeys
        .iter()
        .map(|k| PublicKey::key_validate(k.as_slice()).unwrap())
        .collect();
    // Most members (the subtraction path), few (the direct path), and all of them (the
    // committee's own aggregate key).
    let patterns: [fn(usize) -> bool; 3] = [|i| i % 7 != 3, |i| i % 5 == 0, |_| true];
    for present in patterns {
        let mut bits = BitVector::<U512>::new();
        for i in (0..512).filter(|i| present(*i)) {
            bits.set(i, true).unwrap();
        }
        let refs: Vec<&PublicKey> = decompressed
            .iter()
            .enumerate()
            .filter(|(i, _)| present(*i))
            .map(|(_, k)| k)
            .collect();
        let direct = AggregatePublicKey::aggregate(&refs, false)
            .unwrap()
            .to_public_key();
        assert_eq!(
            keys.participants_key(&bits).unwrap().compress(),
            direct.compress()
        );
    }
    let mut all = BitVector::<U512>::new();
    (0..512).for_each(|i| all.set(i, true).unwrap());
    assert_eq!(
        keys.participants_key(&all).unwrap().compress(),
        committee.aggregate_pubkey.0
    );
    assert!(keys.participants_key(&BitVector::new()).is_none());
}

#[test]
fn uncompressed_keys_load_only_as_the_committees_own() {
    let committee = committee_of("eth_blockNumber_electra");
    let saved = CommitteeKeys::new(&committee, 1422)
        .unwrap()
        .to_uncompressed();
    let refused = |bytes: &[u8]| {
        CommitteeKeys::from_uncompressed(&committee, 1422, bytes)
            .err()
            .map(|e| e.to_string())
    };
    // Short, long, one byte of a key changed, two keys swapped, another committee's keys.
    assert!(refused(&saved[..saved.len() - 96]).is_some());
    assert!(refused(&[saved.as_slice(), &[0u8; 96]].concat()).is_some());
    let mut flipped = saved.clone();
    flipped[96 * 7 + 50] ^= 1;
    let why = refused(&flipped).expect("a changed key is refused");
    assert!(why.contains('7'), "names the key: {why}");
    let mut swapped = saved.clone();
    let (a, b) = swapped.split_at_mut(96);
    a.swap_with_slice(&mut b[..96]);
    assert!(refused(&swapped).is_some());
    let other = CommitteeKeys::new(&committee_of("eth_getBalance1"), 1393)
        .unwrap()
        .to_uncompressed();
    assert!(refused(&other).is_some());
}

#[test]
fn raw_keys_load_only_for_their_committee_and_length() {
    let committee = committee_of("eth_blockNumber_electra");
    let raw = CommitteeKeys::new(&committee, 1422).unwrap().to_raw();
    let refused = |committee: &SyncCommittee, bytes: &[u8]| {
        CommitteeKeys::from_raw(committee, 1422, bytes)
            .err()
            .map(|e| e.to_string())
    };
    assert!(refused(&committee, &raw[..raw.len() - 96]).is_some());
    assert!(refused(&committee, &[raw.as_slice(), &[0u8; 96]].concat()).is_some());
    let other = committee_of("eth_getBalance1");
    let why = refused(&other, &raw).expect("another committee's keys are refused");
    assert!(why.contains("1422"), "names the period: {why}");
    // A changed first or last key (another build's form of the points) is refused too.
    for at in [5, 511 * 96 + 5] {
        let mut changed = raw.clone();
        changed[at] ^= 1;
        assert!(refused(&committee, &changed).is_some(), "byte {at}");
    }
}

/// A committee of 512 keys from `seed`, and their secret keys.
fn seeded_committee(seed: u8) -> (SyncCommittee, Vec<SecretKey>) {
    let secrets: Vec<SecretKey> = (0..512u16)
        .map(|i| {
            let mut ikm = [seed; 32];
            ikm[..2].copy_from_slice(&i.to_le_bytes());
            SecretKey::key_gen(&ikm, &[]).unwrap()
        })
        .collect();
    let pubkeys: Vec<BlsPublicKey> = secrets
        .iter()
        .map(|s| BlsPublicKey::from(s.sk_to_pk().compress()))
        .collect();
    let committee = SyncCommittee {
        pubkeys: FixedVector::new(pubkeys).unwrap(),
        aggregate_pubkey: BlsPublicKey::ZERO,
    };
    (committee, secrets)
}

/// The aggregate of the members `0..signers` of a committee over `root`.
fn sign(secrets: &[SecretKey], signers: usize, root: B256) -> SyncAggregate {
    sign_seats(secrets, 0..=signers - 1, root)
}

#[test]
fn a_signature_remembered_under_one_committees_keys_does_not_pass_under_anothers() {
    let (honest, secrets) = seeded_committee(1);
    let (other, _) = seeded_committee(2);
    let honest_keys = CommitteeKeys::new(&honest, 7).unwrap();
    let root = B256::repeat_byte(0x5a);
    let aggregate = sign(&secrets, 400, root);
    // Verified once, then again (from the process's record of verified signatures).
    honest_keys.verify(&aggregate, root, 1).unwrap();
    honest_keys.verify(&aggregate, root, 1).unwrap();
    // Keys loaded from a state without checks (as a state naming any committee would be)
    // find nothing remembered for them: the same aggregate fails under other keys.
    let other_keys =
        CommitteeKeys::from_raw(&other, 7, &CommitteeKeys::new(&other, 7).unwrap().to_raw())
            .unwrap();
    let err = other_keys.verify(&aggregate, root, 1).unwrap_err();
    assert!(err.to_string().contains("does not verify"), "{err}");
    // And the remembered signature is bound to its root and its participants too.
    assert!(
        honest_keys
            .verify(&aggregate, B256::repeat_byte(0x5b), 1)
            .is_err()
    );
    let mut fewer = aggregate.clone();
    fewer.sync_committee_bits.set(0, false).unwrap();
    assert!(honest_keys.verify(&fewer, root, 1).is_err());
}

#[test]
fn a_state_with_other_points_under_an_honest_committees_name_shares_no_remembered_signature() {
    let (honest, honest_secrets) = seeded_committee(3);
    let (other, other_secrets) = seeded_committee(4);
    // The attacker's points: its own keys at every seat but the first and the last, which
    // `from_raw` checks against the honest committee, and their true sum.
    let mut mixed = other.clone();
    mixed.pubkeys[0] = honest.pubkeys[0];
    mixed.pubkeys[511] = honest.pubkeys[511];
    let attacker_raw = CommitteeKeys::new(&mixed, 9).unwrap().to_raw();
    let attacker = CommitteeKeys::from_raw(&honest, 9, &attacker_raw).unwrap();
    let honest_keys = CommitteeKeys::from_raw(
        &honest,
        9,
        &CommitteeKeys::new(&honest, 9).unwrap().to_raw(),
    )
    .unwrap();
    let root = B256::repeat_byte(0x6b);
    // Seats 1..=400 signed with the attacker's secret keys: valid under its points only, and
    // remembered as verified under them; the honest keys must still refuse it.
    let forged = sign_seats(&other_secrets, 1..=400, root);
    attacker.verify(&forged, root, 1).unwrap();
    attacker.verify(&forged, root, 1).unwrap();
    let err = honest_keys.verify(&forged, root, 1).unwrap_err();
    assert!(err.to_string().contains("does not verify"), "{err}");
    // The other way: an honest aggregate remembered under the honest points does not pass
    // under the attacker's, nor under points whose stored sum alone was changed.
    let honest_aggregate = sign_seats(&honest_secrets, 1..=400, root);
    honest_keys.verify(&honest_aggregate, root, 1).unwrap();
    assert!(attacker.verify(&honest_aggregate, root, 1).is_err());
    let mut wrong_sum = CommitteeKeys::new(&honest, 9).unwrap().to_raw();
    let seat_5 = wrong_sum[5 * 96..6 * 96].to_vec();
    wrong_sum[512 * 96..].copy_from_slice(&seat_5);
    let wrong_sum = CommitteeKeys::from_raw(&honest, 9, &wrong_sum).unwrap();
    let err = wrong_sum.verify(&honest_aggregate, root, 1).unwrap_err();
    assert!(err.to_string().contains("does not verify"), "{err}");
}

/// The aggregate of the members at `seats` (their secret keys in `secrets`) over `root`.
fn sign_seats(
    secrets: &[SecretKey],
    seats: std::ops::RangeInclusive<usize>,
    root: B256,
) -> SyncAggregate {
    let mut bits = BitVector::<U512>::new();
    let signatures: Vec<_> = seats
        .map(|i| {
            bits.set(i, true).unwrap();
            secrets[i].sign(root.as_slice(), BLS_DST, &[])
        })
        .collect();
    let refs: Vec<_> = signatures.iter().collect();
    let signature = AggregateSignature::aggregate(&refs, true).unwrap();
    SyncAggregate {
        sync_committee_bits: bits,
        sync_committee_signature: BlsSignature::from(signature.to_signature().compress()),
    }
}
