//! Roots of every recorded beacon block and light-client header: the decoded containers hash
//! to the roots the recordings name.

mod common;

use alloy_primitives::B256;
use sszgate_light::block::AnyBlock;
use sszgate_light::spec::ChainSpec;
use sszgate_light::types::Bootstrap;

#[test]
fn every_recorded_block_hashes_to_its_file_name() {
    let spec = ChainSpec::mainnet();
    let mut checked = 0;
    for (case, name, bytes) in common::files_matching("eth_v2_beacon_blocks_") {
        let block =
            AnyBlock::from_ssz(&spec, &bytes).unwrap_or_else(|e| panic!("{case}/{name}: {e}"));
        let summary = block.summary();
        let id = name
            .trim_start_matches("eth_v2_beacon_blocks_")
            .trim_end_matches(".ssz");
        if let Some(hex) = id.strip_prefix("0x") {
            let expected: B256 = format!("0x{hex}").parse().unwrap();
            assert_eq!(summary.root, expected, "{case}/{name}");
            checked += 1;
        } else if let Ok(slot) = id.parse::<u64>() {
            assert_eq!(summary.header.slot, slot, "{case}/{name}");
        }
        println!(
            "{case}/{name}: slot {} root {} exec {}",
            summary.header.slot, summary.root, summary.execution_number
        );
    }
    assert!(checked >= 20, "only {checked} blocks named by root");
}

#[test]
fn every_recorded_bootstrap_header_matches_its_file_name() {
    let spec = ChainSpec::mainnet();
    let mut checked = 0;
    for (case, name, bytes) in common::files_matching("eth_v1_beacon_light_client_bootstrap_") {
        if bytes.starts_with(b"{") {
            continue; // a recorded 404 answer
        }
        let bootstrap =
            Bootstrap::from_ssz(&spec, &bytes).unwrap_or_else(|e| panic!("{case}/{name}: {e}"));
        let root = bootstrap.header.beacon.root();
        // File names are cut to 100 characters: the root's hex is a prefix.
        let prefix = name
            .trim_start_matches("eth_v1_beacon_light_client_bootstrap_")
            .trim_end_matches(".ssz");
        assert!(
            format!("{root}").starts_with(prefix),
            "{case}/{name}: root {root}"
        );
        println!(
            "{case}: bootstrap slot {} period {} root {root}",
            bootstrap.header.beacon.slot,
            spec.period(bootstrap.header.beacon.slot)
        );
        checked += 1;
    }
    assert!(checked >= 15);
}

fn json_u64(v: &serde_json::Value) -> u64 {
    v.as_str().unwrap().parse().unwrap()
}

fn json_b256(v: &serde_json::Value) -> B256 {
    v.as_str().unwrap().parse().unwrap()
}

#[test]
fn every_recorded_header_json_hashes_to_its_root() {
    use sszgate_light::types::BeaconBlockHeader;
    let mut checked = 0;
    for (case, name, bytes) in common::files_matching("eth_v1_beacon_headers_") {
        let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        // `headers/{id}` answers one header, `headers?parent_root=` a list of them.
        let items = match &doc["data"] {
            serde_json::Value::Array(items) => items.clone(),
            item => vec![item.clone()],
        };
        for item in items {
            let m = &item["header"]["message"];
            let header = BeaconBlockHeader {
                slot: json_u64(&m["slot"]),
                proposer_index: json_u64(&m["proposer_index"]),
                parent_root: json_b256(&m["parent_root"]),
                state_root: json_b256(&m["state_root"]),
                body_root: json_b256(&m["body_root"]),
            };
            assert_eq!(header.root(), json_b256(&item["root"]), "{case}/{name}");
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} headers");
}

#[test]
fn electra_head_block_matches_its_recorded_header() {
    let spec = ChainSpec::mainnet();
    let block = AnyBlock::from_ssz(
        &spec,
        &common::read("eth_blockNumber_electra", "eth_v2_beacon_blocks_head.ssz"),
    )
    .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&common::read(
        "eth_blockNumber_electra",
        "eth_v1_beacon_headers_head.json",
    ))
    .unwrap();
    let summary = block.summary();
    let m = &doc["data"]["header"]["message"];
    assert_eq!(summary.header.slot, 11658783);
    assert_eq!(summary.header.body_root, json_b256(&m["body_root"]));
    assert_eq!(summary.header.state_root, json_b256(&m["state_root"]));
    assert_eq!(summary.root, json_b256(&doc["data"]["root"]));
    assert!(matches!(block, AnyBlock::Electra(_)));
}
