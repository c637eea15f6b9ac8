//! Anchors on recorded mainnet data: a block signed by its child's sync aggregate anchors its
//! execution number and hash, which match the recorded expected results; parents chain back.

mod common;

use alloy_primitives::B256;
use sszgate_light::ParticipationPolicy;
use sszgate_light::anchor::{
    anchor_block, anchor_from_lc_header, verify_parent, verify_signed_by_child,
};
use sszgate_light::block::{AnyBlock, BlockSummary};
use sszgate_light::spec::ChainSpec;
use sszgate_light::store::LightClientStore;
use sszgate_light::types::{Bootstrap, Update, split_update_stream};
use sszgate_light::{LightError, Trust};

const NOW_SLOT: u64 = u64::MAX / 2;

/// The case's bootstrap and every update of the case from the bootstrap's period on.
fn synced_store(case: &str) -> LightClientStore {
    let spec = ChainSpec::mainnet();
    let b = Bootstrap::from_ssz(
        &spec,
        &common::read_prefixed(case, "eth_v1_beacon_light_client_bootstrap_"),
    )
    .unwrap();
    let mut store = LightClientStore::bootstrap(spec.clone(), b.header.beacon.root(), &b).unwrap();
    for (_, _, bytes) in common::files_matching("eth_v1_beacon_light_client_updates_")
        .into_iter()
        .filter(|(c, _, _)| c == case)
    {
        for item in split_update_stream(&bytes, 128).unwrap() {
            let update = Update::from_ssz(&spec, item).unwrap();
            if spec.period(update.attested_header.beacon.slot) >= store.finalized_period() {
                store.process_update(&update, NOW_SLOT).unwrap();
            }
        }
    }
    store
}

fn block(case: &str, name: &str) -> BlockSummary {
    AnyBlock::from_ssz(&ChainSpec::mainnet(), &common::read(case, name))
        .unwrap()
        .summary()
}

fn b256(hex: &str) -> B256 {
    hex.parse().unwrap()
}

/// eth_blockNumber_electra expects 0x1566aae: the head block's aggregate signs its parent,
/// whose payload is block 0x1566aae (committee of period 1423, learned from the 1422 update).
#[test]
fn eth_block_number_electra_anchors_the_expected_number() {
    let case = "eth_blockNumber_electra";
    let store = synced_store(case);
    let head = block(case, "eth_v2_beacon_blocks_head.ssz");
    let parent = block(
        case,
        "eth_v2_beacon_blocks_0x6e2ab0816426801b78fcd5846b94fd5ad7ca24b21edf93b9bc8238ba0604817a.ssz",
    );
    let verified =
        verify_signed_by_child(&store, ParticipationPolicy::default(), &parent, &head).unwrap();
    let anchor = anchor_block(&verified, &parent).unwrap();
    assert_eq!(anchor.number, 0x1566aae);
    assert_eq!(anchor.slot, 11658782);
    assert_eq!(anchor.trust, Trust::Supermajority);
    assert_eq!(
        anchor.beacon_root,
        b256("0x6e2ab0816426801b78fcd5846b94fd5ad7ca24b21edf93b9bc8238ba0604817a")
    );
}

/// Child-signed blocks whose execution hash the recordings state (test.json of each case).
#[test]
fn child_signed_blocks_anchor_the_recorded_hashes() {
    let cases = [
        // (case, parent block, child block, expected number, expected hash)
        (
            "eth_getBlockByNumber_electra",
            "0x26f4f29e9e46f816a7a6032c524c2d0a6c96d700d2cd73d0ede4bc47bf9e5a9e",
            "head",
            0x15648ea,
            "0x75af99435c1b379f95be79bba4df80af7bc9107aa76b5f2165d67d85870be237",
        ),
        (
            "trusted_block1",
            "0x34d4174b9fe828b8ebab2eec9303d54c4ce3c235cc5155d5204cc233423133d2",
            "head",
            0x1546ab1,
            "0x9f633f72688a36fb3771bf92d4c416355c220a58721635e3ab9aab292fdb181c",
        ),
        (
            "eth_getBlockByNumber1",
            "0x16467363227c8ec0192e28b9b28827e197e6d7b37c22567a229e02d64b230240",
            "0x84ed5431c24d9586470c422de35ecb21d5157e51afe470e1b302d31efe622d8e",
            0x152c764,
            "0x6525df29f1dba877605ec653607b609ae21526d9a090673d2116fda4dd45b80b",
        ),
    ];
    for (case, parent, child, number, hash) in cases {
        let store = synced_store(case);
        let parent_block = AnyBlock::from_ssz(
            &ChainSpec::mainnet(),
            &common::read(case, &format!("eth_v2_beacon_blocks_{parent}.ssz")),
        )
        .unwrap();
        let parent = parent_block.summary();
        let child = block(case, &format!("eth_v2_beacon_blocks_{child}.ssz"));
        let verified =
            verify_signed_by_child(&store, ParticipationPolicy::default(), &parent, &child)
                .unwrap_or_else(|e| panic!("{case}: {e}"));
        let anchor = anchor_block(&verified, &parent).unwrap();
        assert_eq!(anchor.number, number, "{case}");
        assert_eq!(anchor.hash, b256(hash), "{case}");
        assert_eq!(
            anchor.hash,
            parent_block.execution_payload().block_hash,
            "{case}"
        );
        assert_eq!(
            anchor.number,
            parent_block.execution_payload().block_number,
            "{case}"
        );
    }
}

/// Four consecutive mainnet blocks recorded across two cases (period 1573): slot 12890487
/// (precompile_identity head) signs 12890486; 12890485 and 12890484 (precompile_sha256) are
/// verified as its parents, and 12890484's anchor equals the one its own child's signature gives.
#[test]
fn parents_chain_back_from_a_signed_block() {
    let store = synced_store("precompile_identity");
    let head = block("precompile_identity", "eth_v2_beacon_blocks_head.ssz");
    let signed = block(
        "precompile_identity",
        "eth_v2_beacon_blocks_0xe90ff215fb0288d5e52f6693c9ac56cebd320916fc8abdc546bc980a97b196c4.ssz",
    );
    let parent = block("precompile_sha256", "eth_v2_beacon_blocks_head.ssz");
    let grandparent = block(
        "precompile_sha256",
        "eth_v2_beacon_blocks_0x4226f44bac86ba4354c0c2d3c4c1d65f59380789c97118f4283777e3f92f0264.ssz",
    );
    let verified =
        verify_signed_by_child(&store, ParticipationPolicy::default(), &signed, &head).unwrap();
    let verified_parent = verify_parent(&verified, &parent).unwrap();
    let verified_grandparent = verify_parent(&verified_parent, &grandparent).unwrap();
    let chained = anchor_block(&verified_grandparent, &grandparent).unwrap();
    assert_eq!((chained.slot, chained.number), (12890484, 23663964));
    let direct = anchor_block(
        &verify_signed_by_child(
            &store,
            ParticipationPolicy::default(),
            &grandparent,
            &parent,
        )
        .unwrap(),
        &grandparent,
    )
    .unwrap();
    assert_eq!(chained, direct);
    // A block that is not the parent is refused, naming the check.
    let refused = verify_parent(&verified_parent, &signed).unwrap_err();
    assert!(
        matches!(
            refused,
            LightError::RootMismatch {
                check: "parent_chain",
                ..
            }
        ),
        "{refused}"
    );
}

/// The store's finalized header anchors its execution block through the execution branch.
#[test]
fn finalized_header_anchors_its_execution_block() {
    let store = synced_store("eth_blockNumber_electra");
    let anchor = anchor_from_lc_header(&store.finalized_header, Trust::Finalized).unwrap();
    assert_eq!(anchor.slot, store.finalized_header.beacon.slot);
    assert_eq!(anchor.number, store.finalized_header.execution.block_number);
    assert!(
        anchor.number > 22_400_000 && anchor.number < 0x1566aae,
        "{}",
        anchor.number
    );
}
