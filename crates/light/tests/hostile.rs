//! Malformed input from a peer: truncations of real recorded objects, and a stream whose
//! length prefixes lie, are decode errors (or, where a cut falls inside a trailing
//! variable-length field, a different object), never panics.

mod common;

use sszgate_light::LightError;
use sszgate_light::block::AnyBlock;
use sszgate_light::spec::ChainSpec;
use sszgate_light::types::{Bootstrap, Update, split_update_stream};

#[test]
fn truncated_objects_are_decode_errors() {
    let spec = ChainSpec::mainnet();
    let case = "eth_blockNumber_electra";
    let bootstrap = common::read_prefixed(case, "eth_v1_beacon_light_client_bootstrap_");
    let stream = common::read(
        case,
        "eth_v1_beacon_light_client_updates_start_period_1422_count_1.ssz",
    );
    let update = split_update_stream(&stream, 1).unwrap()[0].to_vec();
    let block = common::read(case, "eth_v2_beacon_blocks_head.ssz");
    let whole_bootstrap = Bootstrap::from_ssz(&spec, &bootstrap).unwrap();
    for cut in (0..bootstrap.len()).step_by(37) {
        let decoded = Bootstrap::from_ssz(&spec, &bootstrap[..cut]);
        assert!(decoded.is_err(), "bootstrap cut at {cut}");
    }
    let whole_update = Update::from_ssz(&spec, &update).unwrap();
    for cut in (0..update.len()).step_by(37) {
        // A cut inside the finalized header's `extra_data` (the last field) still decodes.
        match Update::from_ssz(&spec, &update[..cut]) {
            Ok(decoded) => assert_ne!(decoded, whole_update, "update cut at {cut}"),
            Err(e) => assert!(matches!(e, LightError::Decode { .. }), "{e}"),
        }
        let _ = Update::from_finality_ssz(&spec, &update[..cut]);
        let _ = Update::from_optimistic_ssz(&spec, &update[..cut]);
    }
    let whole_block = AnyBlock::from_ssz(&spec, &block).unwrap();
    for cut in (0..block.len()).step_by(509) {
        match AnyBlock::from_ssz(&spec, &block[..cut]) {
            Ok(decoded) => assert_ne!(decoded, whole_block, "block cut at {cut}"),
            Err(e) => assert!(matches!(e, LightError::Decode { .. }), "{e}"),
        }
    }
    assert_eq!(whole_bootstrap.header.beacon.slot, 11649056);
}

#[test]
fn lying_stream_lengths_are_decode_errors() {
    let stream = common::read(
        "eth_blockNumber_electra",
        "eth_v1_beacon_light_client_updates_start_period_1422_count_1.ssz",
    );
    // The prefix claims more than is there, less than the digest, or a huge size.
    for claimed in [stream.len() as u64, 3, u64::MAX] {
        let mut lying = stream.clone();
        lying[..8].copy_from_slice(&claimed.to_le_bytes());
        let err = split_update_stream(&lying, 4).unwrap_err();
        assert!(matches!(err, LightError::Decode { .. }), "{err}");
    }
    // More items than asked for.
    let twice = [stream.clone(), stream].concat();
    assert!(matches!(
        split_update_stream(&twice, 1),
        Err(LightError::Decode { .. })
    ));
    assert_eq!(split_update_stream(&twice, 2).unwrap().len(), 2);
}

#[test]
fn header_offset_out_of_range_is_a_decode_error() {
    let spec = ChainSpec::mainnet();
    let mut bytes = common::read_prefixed(
        "eth_blockNumber_electra",
        "eth_v1_beacon_light_client_bootstrap_",
    );
    bytes[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        Bootstrap::from_ssz(&spec, &bytes),
        Err(LightError::Decode { .. })
    ));
    // A slot before Deneb: the fork is named as unsupported.
    let mut block = common::read("eth_blockNumber_electra", "eth_v2_beacon_blocks_head.ssz");
    block[100..108].copy_from_slice(&5u64.to_le_bytes());
    assert!(matches!(
        AnyBlock::from_ssz(&spec, &block),
        Err(LightError::UnsupportedFork { slot: 5, .. })
    ));
}
