//! The store saved and loaded back: the same headers and committees, and the loaded store
//! verifies the next period's block without syncing again.

mod common;

use sszgate_light::LightError;
use sszgate_light::ParticipationPolicy;
use sszgate_light::anchor::{anchor_block, verify_signed_by_child};
use sszgate_light::block::AnyBlock;
use sszgate_light::persist::{load, save};
use sszgate_light::spec::ChainSpec;
use sszgate_light::store::LightClientStore;
use sszgate_light::types::{Bootstrap, Update, split_update_stream};

const CASE: &str = "eth_blockNumber_electra";

fn synced() -> LightClientStore {
    let spec = ChainSpec::mainnet();
    let b = Bootstrap::from_ssz(
        &spec,
        &common::read_prefixed(CASE, "eth_v1_beacon_light_client_bootstrap_"),
    )
    .unwrap();
    let mut store = LightClientStore::bootstrap(spec.clone(), b.header.beacon.root(), &b).unwrap();
    let bytes = common::read(
        CASE,
        "eth_v1_beacon_light_client_updates_start_period_1422_count_1.ssz",
    );
    let update = Update::from_ssz(&spec, split_update_stream(&bytes, 1).unwrap()[0]).unwrap();
    store.process_update(&update, u64::MAX / 2).unwrap();
    store
}

#[test]
fn store_round_trip_resumes_without_resync() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("light.json");
    let spec = ChainSpec::mainnet();
    assert!(load(&spec, &path).unwrap().is_none());
    let store = synced();
    save(&store, &path).unwrap();
    let loaded = load(&spec, &path).unwrap().expect("saved store");
    assert_eq!(loaded.finalized_header, store.finalized_header);
    assert_eq!(
        loaded.current_sync_committee(),
        store.current_sync_committee()
    );
    assert_eq!(loaded.next_sync_committee(), store.next_sync_committee());
    assert_eq!(loaded.optimistic, store.optimistic);
    assert_eq!(loaded.safe, store.safe);
    assert_eq!(loaded.safety_threshold(), store.safety_threshold());
    assert!(
        store.safety_threshold() > 200,
        "the update's participation counted"
    );
    // The period-1423 committee came back: the head block's signature verifies.
    let head = AnyBlock::from_ssz(&spec, &common::read(CASE, "eth_v2_beacon_blocks_head.ssz"))
        .unwrap()
        .summary();
    let parent = AnyBlock::from_ssz(
        &spec,
        &common::read_prefixed(CASE, "eth_v2_beacon_blocks_0x"),
    )
    .unwrap()
    .summary();
    let anchor = anchor_block(
        &verify_signed_by_child(&loaded, ParticipationPolicy::default(), &parent, &head).unwrap(),
        &parent,
    )
    .unwrap();
    assert_eq!(anchor.number, 0x1566aae);
    // The keys were saved uncompressed and came back as the same keys.
    assert_eq!(loaded.uncompressed_keys(), store.uncompressed_keys());
    assert!(
        store.uncompressed_keys().1.is_some(),
        "the next committee too"
    );
    // Keys that do not match the committee are not taken: decompressed again instead.
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let keys = file["current_keys"].as_str().unwrap().to_string();
    file["current_keys"] = format!("{}{}", &keys[..200], &keys[202..]).into();
    std::fs::write(&path, file.to_string()).unwrap();
    let reloaded = load(&spec, &path).unwrap().expect("saved store");
    assert_eq!(reloaded.uncompressed_keys(), store.uncompressed_keys());
}

#[test]
fn store_of_another_chain_or_corrupt_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("light.json");
    save(&synced(), &path).unwrap();
    let err = load(&ChainSpec::sepolia(), &path).unwrap_err();
    assert!(matches!(err, LightError::Persist { .. }), "{err}");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace(
            "\"current_sync_committee\": \"0x",
            "\"current_sync_committee\": \"0xzz",
        ),
    )
    .unwrap();
    let err = load(&ChainSpec::mainnet(), &path).unwrap_err();
    assert!(matches!(err, LightError::Persist { .. }), "{err}");
}
