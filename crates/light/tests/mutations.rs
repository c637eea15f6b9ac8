//! Mutations of recorded mainnet light-client data and blocks, one at a time: each is refused
//! with the error variant (and check) that names what was wrong. The unmutated data verifies
//! in each test first, so a refusal comes from the mutation.

mod common;

use alloy_primitives::B256;
use sszgate_light::LightError;
use sszgate_light::ParticipationPolicy;
use sszgate_light::anchor::verify_signed_by_child;
use sszgate_light::block::{AnyBlock, BlockSummary};
use sszgate_light::spec::ChainSpec;
use sszgate_light::store::LightClientStore;
use sszgate_light::types::{Bootstrap, Update, split_update_stream};

const NOW_SLOT: u64 = u64::MAX / 2;
const CASE: &str = "eth_blockNumber_electra";
const UPDATE: &str = "eth_v1_beacon_light_client_updates_start_period_1422_count_1.ssz";

fn bootstrap_parts(spec: &ChainSpec) -> (Bootstrap, B256) {
    let b = Bootstrap::from_ssz(
        spec,
        &common::read_prefixed(CASE, "eth_v1_beacon_light_client_bootstrap_"),
    )
    .unwrap();
    let root = b.header.beacon.root();
    (b, root)
}

/// The Electra store at its bootstrap and the period's recorded update (which verifies).
fn store_and_update() -> (LightClientStore, Update) {
    store_and_update_of(CASE, UPDATE)
}

/// The same for a Deneb case (period 1392).
fn deneb_store_and_update() -> (LightClientStore, Update) {
    store_and_update_of(
        "eth_getBlockByNumber1",
        "eth_v1_beacon_light_client_updates_start_period_1392_count_1.ssz",
    )
}

/// Both forks' store and update.
fn both_forks() -> [(LightClientStore, Update); 2] {
    [store_and_update(), deneb_store_and_update()]
}

fn store_and_update_of(case: &str, name: &str) -> (LightClientStore, Update) {
    let spec = ChainSpec::mainnet();
    let b = Bootstrap::from_ssz(
        &spec,
        &common::read_prefixed(case, "eth_v1_beacon_light_client_bootstrap_"),
    )
    .unwrap();
    let store = LightClientStore::bootstrap(spec.clone(), b.header.beacon.root(), &b).unwrap();
    let bytes = common::read(case, name);
    let update = Update::from_ssz(&spec, split_update_stream(&bytes, 1).unwrap()[0]).unwrap();
    store.validate_update(&update, NOW_SLOT).unwrap();
    (store, update)
}

fn refused(store: &LightClientStore, update: &Update) -> LightError {
    store
        .validate_update(update, NOW_SLOT)
        .expect_err("mutation accepted")
}

fn flip(node: &mut B256) {
    node.0[7] ^= 0x10;
}

#[test]
fn flipped_signature_bit_is_refused() {
    let (store, mut update) = store_and_update();
    update.sync_aggregate.sync_committee_signature.0[40] ^= 0x01;
    assert!(matches!(
        refused(&store, &update),
        LightError::Signature { .. }
    ));
}

#[test]
fn flipped_participation_bit_is_refused() {
    let (store, mut update) = store_and_update();
    let bits = &mut update.sync_aggregate.sync_committee_bits;
    let first = bits.get(3).unwrap();
    bits.set(3, !first).unwrap();
    assert!(matches!(
        refused(&store, &update),
        LightError::Signature { .. }
    ));
}

#[test]
fn empty_participation_is_refused() {
    let (store, mut update) = store_and_update();
    for i in 0..512 {
        update
            .sync_aggregate
            .sync_committee_bits
            .set(i, false)
            .unwrap();
    }
    assert!(matches!(
        refused(&store, &update),
        LightError::Participation {
            participants: 0,
            ..
        }
    ));
}

#[test]
fn flipped_branch_nodes_are_refused() {
    for (store, update) in both_forks() {
        let last = update.finality_branch.len() - 1;
        let mut u = update.clone();
        flip(&mut u.next_sync_committee_branch[2]);
        assert!(matches!(
            refused(&store, &u),
            LightError::InvalidBranch {
                check: "next_sync_committee_branch",
                ..
            }
        ));
        let mut u = update.clone();
        flip(&mut u.finality_branch[last]);
        assert!(matches!(
            refused(&store, &u),
            LightError::InvalidBranch {
                check: "finality_branch",
                ..
            }
        ));
        let mut u = update.clone();
        flip(&mut u.attested_header.execution_branch[0]);
        assert!(matches!(
            refused(&store, &u),
            LightError::InvalidBranch {
                check: "execution_branch",
                field: "attested_header.execution",
                ..
            }
        ));
        let mut u = update;
        flip(&mut u.finalized_header.execution_branch[3]);
        assert!(matches!(
            refused(&store, &u),
            LightError::InvalidBranch {
                check: "execution_branch",
                field: "finalized_header.execution",
                ..
            }
        ));
    }
}

/// A Deneb-depth branch where the fork needs Electra's (one node short) is refused.
#[test]
fn branch_of_the_wrong_depth_is_refused() {
    let (store, mut update) = store_and_update();
    update.finality_branch.pop();
    assert!(matches!(
        refused(&store, &update),
        LightError::InvalidBranch {
            check: "finality_branch",
            ..
        }
    ));
}

#[test]
fn changed_header_fields_are_refused() {
    let (store, update) = store_and_update();
    // A field only the signature covers.
    let mut u = update.clone();
    u.attested_header.beacon.proposer_index += 1;
    assert!(matches!(refused(&store, &u), LightError::Signature { .. }));
    // The state root every branch of the update hangs off.
    let mut u = update.clone();
    flip(&mut u.attested_header.beacon.state_root);
    assert!(matches!(
        refused(&store, &u),
        LightError::InvalidBranch { .. }
    ));
    // An execution field, bound by the execution branch.
    let mut u = update.clone();
    u.attested_header.execution.block_number += 1;
    assert!(matches!(
        refused(&store, &u),
        LightError::InvalidBranch {
            check: "execution_branch",
            ..
        }
    ));
    let mut u = update.clone();
    flip(&mut u.finalized_header.execution.block_hash);
    assert!(matches!(
        refused(&store, &u),
        LightError::InvalidBranch {
            check: "execution_branch",
            ..
        }
    ));
    // The finalized header's slot, bound by the finality branch.
    let mut u = update;
    u.finalized_header.beacon.slot += 1;
    assert!(matches!(
        refused(&store, &u),
        LightError::InvalidBranch {
            check: "finality_branch",
            ..
        }
    ));
}

#[test]
fn changed_committees_are_refused() {
    let spec = ChainSpec::mainnet();
    let (store, update) = store_and_update();
    let mut u = update;
    u.next_sync_committee.pubkeys[10] = u.next_sync_committee.pubkeys[11];
    assert!(matches!(
        refused(&store, &u),
        LightError::InvalidBranch {
            check: "next_sync_committee_branch",
            ..
        }
    ));
    let (mut b, root) = bootstrap_parts(&spec);
    b.current_sync_committee.pubkeys[0] = b.current_sync_committee.pubkeys[1];
    let err = LightClientStore::bootstrap(spec, root, &b).unwrap_err();
    assert!(
        matches!(
            err,
            LightError::InvalidBranch {
                check: "current_sync_committee_branch",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn bootstrap_from_another_root_is_refused() {
    let spec = ChainSpec::mainnet();
    let (b, mut root) = bootstrap_parts(&spec);
    flip(&mut root);
    let err = LightClientStore::bootstrap(spec, root, &b).unwrap_err();
    assert!(
        matches!(
            err,
            LightError::RootMismatch {
                check: "bootstrap_root",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn wrong_fork_version_is_refused() {
    let (store, update) = store_and_update();
    let mut spec = ChainSpec::mainnet();
    // Electra's version changed: the signing domain of every Electra signature changes.
    spec.forks[4].0 = [5, 0, 0, 1];
    let mut wrong = store.clone();
    wrong.spec = spec;
    assert!(matches!(
        refused(&wrong, &update),
        LightError::Signature { .. }
    ));
}

/// The fork version is the one scheduled at the signature's epoch: with Fulu moved to this
/// update's signature epoch the recorded signature fails, with Fulu one epoch later it passes.
/// (The `signature_slot - 1` rule at an epoch's first slot is a unit test in `spec`.)
#[test]
fn fork_version_follows_the_slot_before_the_signature() {
    let (store, update) = store_and_update();
    let spec = ChainSpec::mainnet();
    let signature_epoch = spec.epoch(update.signature_slot);
    let previous_epoch = spec.epoch(update.signature_slot - 1);
    assert_eq!(
        signature_epoch, previous_epoch,
        "the recorded signature is mid-epoch"
    );
    // Fulu scheduled at the signature's epoch: its version would be used, and it fails.
    let mut fulu_now = store.clone();
    fulu_now.spec.forks[5].1 = signature_epoch;
    assert!(matches!(
        refused(&fulu_now, &update),
        LightError::Signature { .. }
    ));
    // Fulu scheduled one epoch later: Electra's version is used, and it passes.
    let mut fulu_later = store;
    fulu_later.spec.forks[5].1 = signature_epoch + 1;
    fulu_later.validate_update(&update, NOW_SLOT).unwrap();
}

#[test]
fn unknown_period_is_refused() {
    let (store, mut update) = store_and_update();
    update.signature_slot += 3 * 8192;
    assert!(matches!(
        refused(&store, &update),
        LightError::UnknownCommittee { .. }
    ));
}

fn blocks() -> (LightClientStore, BlockSummary, BlockSummary) {
    let (mut store, update) = store_and_update();
    store.process_update(&update, NOW_SLOT).unwrap();
    let spec = ChainSpec::mainnet();
    let head = AnyBlock::from_ssz(&spec, &common::read(CASE, "eth_v2_beacon_blocks_head.ssz"))
        .unwrap()
        .summary();
    let parent = AnyBlock::from_ssz(
        &spec,
        &common::read_prefixed(CASE, "eth_v2_beacon_blocks_0x"),
    )
    .unwrap()
    .summary();
    verify_signed_by_child(&store, ParticipationPolicy::default(), &parent, &head).unwrap();
    (store, parent, head)
}

#[test]
fn child_signature_mutations_are_refused() {
    let (store, parent, head) = blocks();
    let mut child = head.clone();
    child.sync_aggregate.sync_committee_signature.0[95] ^= 0x80;
    assert!(matches!(
        verify_signed_by_child(&store, ParticipationPolicy::default(), &parent, &child)
            .unwrap_err(),
        LightError::Signature { .. }
    ));
    let mut child = head.clone();
    child
        .sync_aggregate
        .sync_committee_bits
        .set(
            100,
            !child.sync_aggregate.sync_committee_bits.get(100).unwrap(),
        )
        .unwrap();
    assert!(matches!(
        verify_signed_by_child(&store, ParticipationPolicy::default(), &parent, &child)
            .unwrap_err(),
        LightError::Signature { .. }
    ));
    // A changed header field changes the block root, and so the message the committee signed.
    let mut forged = parent.clone();
    forged.header.proposer_index += 1;
    forged.root = forged.header.root();
    let mut child = head;
    child.header.parent_root = forged.root;
    assert!(matches!(
        verify_signed_by_child(&store, ParticipationPolicy::default(), &forged, &child)
            .unwrap_err(),
        LightError::Signature { .. }
    ));
}

#[test]
fn child_of_another_block_is_refused() {
    let (store, parent, head) = blocks();
    let mut other = parent;
    other.root = B256::repeat_byte(9);
    let err =
        verify_signed_by_child(&store, ParticipationPolicy::default(), &other, &head).unwrap_err();
    assert!(
        matches!(
            err,
            LightError::RootMismatch {
                check: "child_parent_root",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn changed_payload_changes_the_block_root() {
    let spec = ChainSpec::mainnet();
    let bytes = common::read_prefixed(CASE, "eth_v2_beacon_blocks_0x");
    let original = AnyBlock::from_ssz(&spec, &bytes).unwrap();
    let mut block = original.clone();
    match &mut block {
        AnyBlock::Electra(b) => b.message.body.execution_payload.block_number += 1,
        AnyBlock::Deneb(_) => panic!("an Electra block"),
    }
    assert_ne!(block.summary().root, original.summary().root);
    assert_eq!(block.summary().execution_number, 0x1566aae + 1);
}
