//! The participants' key computed by subtraction (all keys plus the absent members' negated
//! keys) equals the direct sum, on a real mainnet committee; keys saved uncompressed load back
//! to the same keys, and only to the committee's own.

mod common;

use blst::min_pk::{AggregatePublicKey, PublicKey};
use ssz_types::BitVector;
use ssz_types::typenum::U512;
use sszgate_light::bls::CommitteeKeys;
use sszgate_light::spec::ChainSpec;
use sszgate_light::types::{Bootstrap, SyncCommittee};

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
    for keys in [decompressed_keys, loaded] {
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
