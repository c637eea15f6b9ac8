//! The facade's parent-chain fallback: a block whose child's committee is not in the store is
//! verified by walking parent roots back from a verified block.
//!
//! Real data arranged so that the fallback is needed: four consecutive mainnet blocks (slots
//! 12890484 to 12890487, from the precompile cases), a chain spec with one-slot epochs and
//! two-epoch periods so that a period starts at slot 12890486, and a store finalized at block
//! 12890486 (its light-client header built from the block and checked by the execution
//! branch) holding the real committee. Block 12890484's child (12890485) is then signed in the
//! period before the store's, and 12890484 can only be reached through 12890486's parents.

mod common;

use alloy_primitives::B256;
use sha2::{Digest, Sha256};
use ssz_types::FixedVector;
use sszgate_light::anchor::anchor_from_lc_header;
use sszgate_light::block::{AnyBlock, ElectraBeaconBlockBody};
use sszgate_light::spec::ChainSpec;
use sszgate_light::store::{LightClientStore, TrustedHeader};
use sszgate_light::types::{Bootstrap, ExecutionPayloadHeader, LightClientHeader};
use sszgate_light::{BlockRef, LightClient, LightError, RecordedBeaconApi, Trust};
use tree_hash::TreeHash;

/// Mainnet with one-slot epochs and two-epoch periods; Fulu and Gloas unscheduled so every
/// slot here signs with Electra's version, as the real blocks did.
fn short_period_spec() -> ChainSpec {
    let mut spec = ChainSpec::mainnet();
    spec.slots_per_epoch = 1;
    spec.epochs_per_period = 2;
    spec.forks[5].1 = u64::MAX;
    spec.forks[6].1 = u64::MAX;
    spec
}

/// The 16 leaves of an Electra body (13 fields, padded).
fn body_leaves(body: &ElectraBeaconBlockBody) -> Vec<B256> {
    let mut leaves = vec![
        body.randao_reveal.tree_hash_root(),
        body.eth1_data.tree_hash_root(),
        body.graffiti.tree_hash_root(),
        body.proposer_slashings.tree_hash_root(),
        body.attester_slashings.tree_hash_root(),
        body.attestations.tree_hash_root(),
        body.deposits.tree_hash_root(),
        body.voluntary_exits.tree_hash_root(),
        body.sync_aggregate.tree_hash_root(),
        body.execution_payload.tree_hash_root(),
        body.bls_to_execution_changes.tree_hash_root(),
        body.blob_kzg_commitments.tree_hash_root(),
        body.execution_requests.tree_hash_root(),
    ];
    leaves.resize(16, B256::ZERO);
    leaves
}

fn hash(a: B256, b: B256) -> B256 {
    B256::from_slice(&Sha256::digest([a.as_slice(), b.as_slice()].concat()))
}

/// The branch of leaf `index` in a 16-leaf tree, leaf level first.
fn branch(mut level: Vec<B256>, mut index: usize) -> Vec<B256> {
    let mut out = Vec::new();
    while level.len() > 1 {
        out.push(level[index ^ 1]);
        level = level.chunks(2).map(|p| hash(p[0], p[1])).collect();
        index /= 2;
    }
    out
}

/// The light-client header of an Electra block, built from the block.
fn lc_header(block: &AnyBlock) -> LightClientHeader {
    let AnyBlock::Electra(signed) = block else {
        panic!("an Electra block")
    };
    let body = &signed.message.body;
    let p = &body.execution_payload;
    let execution = ExecutionPayloadHeader {
        parent_hash: p.parent_hash,
        fee_recipient: p.fee_recipient,
        state_root: p.state_root,
        receipts_root: p.receipts_root,
        logs_bloom: p.logs_bloom,
        prev_randao: p.prev_randao,
        block_number: p.block_number,
        gas_limit: p.gas_limit,
        gas_used: p.gas_used,
        timestamp: p.timestamp,
        extra_data: p.extra_data.clone(),
        base_fee_per_gas: p.base_fee_per_gas,
        block_hash: p.block_hash,
        transactions_root: p.transactions.tree_hash_root(),
        withdrawals_root: p.withdrawals.tree_hash_root(),
        blob_gas_used: p.blob_gas_used,
        excess_blob_gas: p.excess_blob_gas,
    };
    LightClientHeader {
        beacon: block.summary().header,
        execution,
        execution_branch: FixedVector::new(branch(body_leaves(body), 9)).unwrap(),
    }
}

/// The four blocks served by slot and by root.
fn recording() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "precompile_sha256",
            "eth_v2_beacon_blocks_0x4226f44bac86ba4354c0c2d3c4c1d65f59380789c97118f4283777e3f92f0264.ssz",
        ),
        ("precompile_sha256", "eth_v2_beacon_blocks_head.ssz"),
        (
            "precompile_identity",
            "eth_v2_beacon_blocks_0xe90ff215fb0288d5e52f6693c9ac56cebd320916fc8abdc546bc980a97b196c4.ssz",
        ),
        ("precompile_identity", "eth_v2_beacon_blocks_head.ssz"),
    ];
    let spec = short_period_spec();
    for (i, (case, name)) in files.into_iter().enumerate() {
        let bytes = common::read(case, name);
        let summary = AnyBlock::from_ssz(&spec, &bytes).unwrap().summary();
        assert_eq!(summary.header.slot, 12890484 + i as u64);
        for id in [summary.header.slot.to_string(), summary.root.to_string()] {
            std::fs::write(
                dir.path().join(format!("eth_v2_beacon_blocks_{id}.ssz")),
                &bytes,
            )
            .unwrap();
        }
        if i == 3 {
            std::fs::write(dir.path().join("eth_v2_beacon_blocks_head.ssz"), &bytes).unwrap();
        }
    }
    dir
}

#[tokio::test]
async fn block_before_the_store_period_is_verified_through_parents() {
    let spec = short_period_spec();
    let dir = recording();
    let finalized_block = AnyBlock::from_ssz(
        &spec,
        &std::fs::read(dir.path().join("eth_v2_beacon_blocks_12890486.ssz")).unwrap(),
    )
    .unwrap();
    let header = lc_header(&finalized_block);
    // The built header passes the execution-branch check.
    assert_eq!(
        anchor_from_lc_header(&header, Trust::Finalized)
            .unwrap()
            .number,
        23663966
    );
    let committee = Bootstrap::from_ssz(
        &ChainSpec::mainnet(),
        &common::read_prefixed(
            "precompile_identity",
            "eth_v1_beacon_light_client_bootstrap_",
        ),
    )
    .unwrap()
    .current_sync_committee;
    let trusted = TrustedHeader {
        header: header.clone(),
        participants: 512,
    };
    let store = LightClientStore::from_parts(
        spec.clone(),
        header,
        committee,
        None,
        trusted.clone(),
        trusted,
        [None, None],
    )
    .unwrap();
    assert_eq!(
        (spec.period(12890485), store.finalized_period()),
        (6445242, 6445243)
    );
    let client = LightClient::from_store(RecordedBeaconApi::new(dir.path()), store)
        .with_clock(|| 1606824023 + 12890487 * 12);

    let anchor = client.anchor(BlockRef::Number(23663964)).await.unwrap();
    assert_eq!(
        (anchor.slot, anchor.number, anchor.trust),
        (12890484, 23663964, Trust::Finalized)
    );
    assert_eq!(
        anchor.beacon_root,
        "0x4226f44bac86ba4354c0c2d3c4c1d65f59380789c97118f4283777e3f92f0264"
            .parse::<B256>()
            .unwrap()
    );

    // Without the parents served, the block cannot be connected, and the error says why.
    std::fs::remove_file(dir.path().join("eth_v2_beacon_blocks_0x28cf9405e31d0888bddd907469c47065f3c82f4659cfaac697e059b549019e63.ssz")).unwrap();
    let client = LightClient::from_store(
        RecordedBeaconApi::new(dir.path()),
        client.with_store(|s| s.clone()),
    )
    .with_clock(|| 1606824023 + 12890487 * 12);
    let err = client.anchor(BlockRef::Number(23663964)).await.unwrap_err();
    assert!(
        matches!(&err, LightError::NotConnected { detail } if detail.contains("period 6445242")),
        "{err}"
    );
}
