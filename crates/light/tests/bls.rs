//! The participants' key computed by subtraction (all keys plus the absent members' negated
//! keys) equals the direct sum, on a real mainnet committee.

mod common;

use blst::min_pk::{AggregatePublicKey, PublicKey};
use ssz_types::BitVector;
use ssz_types::typenum::U512;
use sszgate_light::bls::CommitteeKeys;
use sszgate_light::spec::ChainSpec;
use sszgate_light::types::Bootstrap;

#[test]
fn participants_key_by_subtraction_equals_the_direct_sum() {
    let bytes = common::read_prefixed(
        "eth_blockNumber_electra",
        "eth_v1_beacon_light_client_bootstrap_",
    );
    let committee = Bootstrap::from_ssz(&ChainSpec::mainnet(), &bytes)
        .unwrap()
        .current_sync_committee;
    let keys = CommitteeKeys::new(&committee, 1422).unwrap();
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
