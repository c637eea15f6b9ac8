//! The participation rule against an attacker who holds some sync-committee keys and serves
//! the Beacon API: a committee of 512 keys made here from fixed seeds signs blocks with as
//! many members as each case needs, and only aggregates the rule admits anchor a block — a
//! child's aggregate, the head's parent, the store's optimistic header, numbers and `latest`.

mod common;

use std::collections::HashMap;
use std::sync::OnceLock;

use alloy_primitives::B256;
use blst::min_pk::{AggregateSignature, SecretKey};
use sha2::{Digest, Sha256};
use ssz::Encode;
use ssz_types::{BitVector, FixedVector};
use sszgate_light::anchor::{anchor_block, verify_signed_by_child};
use sszgate_light::block::{AnyBlock, BlockSummary};
use sszgate_light::bls::BLS_DST;
use sszgate_light::spec::{ChainSpec, signing_root};
use sszgate_light::store::{EXECUTION_PAYLOAD_GINDEX, LightClientStore, TrustedHeader};
use sszgate_light::types::{
    BeaconBlockHeader, BlsPublicKey, BlsSignature, LightClientHeader, SyncAggregate, SyncCommittee,
};
use sszgate_light::{BeaconApi, BlockRef, LightClient, LightError, ParticipationPolicy, Trust};
use tree_hash::TreeHash;

/// Slot of the store's finalized header: in mainnet period 1423 (Electra), 64 slots in.
const FINALIZED_SLOT: u64 = 1423 * 8192 + 64;
/// Execution number of the finalized header's payload.
const FINALIZED_NUMBER: u64 = 22_000_000;

/// The committee's secret keys (from fixed seeds) and the committee itself.
struct Committee {
    secrets: Vec<SecretKey>,
    committee: SyncCommittee,
}

fn committee() -> &'static Committee {
    static COMMITTEE: OnceLock<Committee> = OnceLock::new();
    COMMITTEE.get_or_init(|| {
        let secrets: Vec<SecretKey> = (0..512u32)
            .map(|i| {
                let mut seed = [7u8; 32];
                seed[..4].copy_from_slice(&i.to_le_bytes());
                SecretKey::key_gen(&seed, &[]).expect("key_gen from 32 bytes")
            })
            .collect();
        let pubkeys: Vec<BlsPublicKey> = secrets
            .iter()
            .map(|sk| BlsPublicKey::from(sk.sk_to_pk().compress()))
            .collect();
        Committee {
            secrets,
            committee: SyncCommittee {
                pubkeys: FixedVector::new(pubkeys).unwrap(),
                aggregate_pubkey: BlsPublicKey::ZERO,
            },
        }
    })
}

/// The aggregate of the first `signers` members over `object_root`, included at `slot`
/// (none: no bits set, with one member's signature left in).
fn sign(object_root: B256, slot: u64, signers: usize) -> SyncAggregate {
    if signers == 0 {
        return SyncAggregate {
            sync_committee_bits: BitVector::new(),
            ..sign(object_root, slot, 1)
        };
    }
    let spec = ChainSpec::mainnet();
    let root = signing_root(object_root, spec.domain_for_signature_slot(slot));
    let signatures: Vec<_> = committee().secrets[..signers]
        .iter()
        .map(|sk| sk.sign(root.as_slice(), BLS_DST, &[]))
        .collect();
    let refs: Vec<_> = signatures.iter().collect();
    let signature = AggregateSignature::aggregate(&refs, false).unwrap();
    let mut bits = BitVector::new();
    for i in 0..signers {
        bits.set(i, true).unwrap();
    }
    SyncAggregate {
        sync_committee_bits: bits,
        sync_committee_signature: BlsSignature::from(signature.to_signature().compress()),
    }
}

/// A light-client header at `slot` whose payload is block `number`, with a valid execution
/// branch (zero siblings folded up to the body root).
fn lc_header(slot: u64, number: u64) -> LightClientHeader {
    let mut header = LightClientHeader::default();
    header.execution.block_number = number;
    header.execution.block_hash = B256::repeat_byte(number as u8);
    let mut node = header.execution.tree_hash_root();
    for level in 0..4 {
        let pair = if (EXECUTION_PAYLOAD_GINDEX >> level) & 1 == 1 {
            [B256::ZERO, node]
        } else {
            [node, B256::ZERO]
        };
        node = B256::from_slice(&Sha256::digest(pair.concat()));
    }
    header.beacon.slot = slot;
    header.beacon.body_root = node;
    header
}

/// A store of the test committee, finalized at [`FINALIZED_SLOT`], whose optimistic header
/// is `optimistic` (header, participants) when given.
fn store(optimistic: Option<(LightClientHeader, usize)>) -> LightClientStore {
    let finalized = lc_header(FINALIZED_SLOT, FINALIZED_NUMBER);
    let checkpoint = TrustedHeader {
        header: finalized.clone(),
        participants: 512,
    };
    let optimistic =
        optimistic.map_or(checkpoint.clone(), |(header, participants)| TrustedHeader {
            header,
            participants,
        });
    LightClientStore::from_parts(
        ChainSpec::mainnet(),
        finalized,
        committee().committee.clone(),
        None,
        optimistic,
        checkpoint,
        [None, None],
    )
    .unwrap()
}

/// A parent block at `slot` and its child one slot later whose aggregate has `signers`.
fn parent_and_child(slot: u64, signers: usize) -> (BlockSummary, BlockSummary) {
    let header = BeaconBlockHeader {
        slot,
        proposer_index: 3,
        parent_root: B256::repeat_byte(1),
        state_root: B256::repeat_byte(2),
        body_root: B256::repeat_byte(3),
    };
    let parent = BlockSummary {
        header,
        root: header.root(),
        sync_aggregate: sign(B256::ZERO, slot, 1),
        execution_number: FINALIZED_NUMBER + 10,
        execution_hash: B256::repeat_byte(0xf0),
    };
    let child_header = BeaconBlockHeader {
        slot: slot + 1,
        parent_root: parent.root,
        ..header
    };
    let child = BlockSummary {
        header: child_header,
        root: child_header.root(),
        sync_aggregate: sign(parent.root, slot + 1, signers),
        execution_number: FINALIZED_NUMBER + 11,
        execution_hash: B256::repeat_byte(0xf1),
    };
    (parent, child)
}

fn assert_participation(err: LightError, participants: usize, required: usize) {
    assert!(
        matches!(
            err,
            LightError::Participation { participants: p, required: r, field: "child.sync_aggregate" }
                if p == participants && r == required
        ),
        "{participants} signers: {err}"
    );
}

/// 1, 100, 300 and 341 signers are refused by the participation check (their signatures are
/// valid: the lowered rule below accepts the same aggregate), also once that aggregate was
/// verified and remembered; 342 anchor with supermajority.
#[test]
fn a_child_aggregate_needs_two_thirds_by_default() {
    let store = store(None);
    let policy = ParticipationPolicy::default();
    for signers in [1, 100, 300, 341] {
        let (parent, child) = parent_and_child(FINALIZED_SLOT + 10, signers);
        let err = verify_signed_by_child(&store, policy, &parent, &child).unwrap_err();
        assert_participation(err, signers, 342);
        let lowered = ParticipationPolicy::new(signers).unwrap();
        let verified = verify_signed_by_child(&store, lowered, &parent, &child).unwrap();
        assert_eq!(verified.trust, Trust::Signed);
        // Now remembered as verified in this process: the default rule still refuses it (the
        // record of verified signatures skips the pairing, never the participation check).
        let err = verify_signed_by_child(&store, policy, &parent, &child).unwrap_err();
        assert_participation(err, signers, 342);
    }
    let (parent, child) = parent_and_child(FINALIZED_SLOT + 10, 342);
    let verified = verify_signed_by_child(&store, policy, &parent, &child).unwrap();
    let anchor = anchor_block(&verified, &parent).unwrap();
    assert_eq!(anchor.trust, Trust::Supermajority);
    assert_eq!(anchor.number, FINALIZED_NUMBER + 10);
}

/// A lowered minimum of 100 admits 100 signers while the store has seen few participants,
/// but never below the specs' safety threshold: once 512 were seen (threshold 256), 100 and
/// 256 are refused, 257 admitted.
#[test]
fn a_lowered_minimum_never_falls_below_the_safety_threshold() {
    let mut store = store(None);
    let lowered = ParticipationPolicy::new(100).unwrap();
    let (parent, child) = parent_and_child(FINALIZED_SLOT + 10, 100);
    assert!(verify_signed_by_child(&store, lowered, &parent, &child).is_ok());
    store.current_max_active_participants = 512;
    assert_eq!(store.safety_threshold(), 256);
    assert_participation(
        verify_signed_by_child(&store, lowered, &parent, &child).unwrap_err(),
        100,
        257,
    );
    let (parent, child) = parent_and_child(FINALIZED_SLOT + 10, 256);
    assert_participation(
        verify_signed_by_child(&store, lowered, &parent, &child).unwrap_err(),
        256,
        257,
    );
    let (parent, child) = parent_and_child(FINALIZED_SLOT + 10, 257);
    assert!(verify_signed_by_child(&store, lowered, &parent, &child).is_ok());
}

/// A Beacon API serving SSZ blocks by id (`head`, slot, root); the rest is not found.
#[derive(Default)]
struct ServedBlocks(HashMap<String, Vec<u8>>);

impl BeaconApi for ServedBlocks {
    async fn get_json(&self, path: &str, _max: usize) -> Result<serde_json::Value, LightError> {
        Err(LightError::NotFound { path: path.into() })
    }

    async fn get_ssz(&self, path: &str, _max: usize) -> Result<Vec<u8>, LightError> {
        path.strip_prefix("/eth/v2/beacon/blocks/")
            .and_then(|id| self.0.get(id).cloned())
            .ok_or_else(|| LightError::NotFound { path: path.into() })
    }
}

/// A recorded Electra block rewritten to `slot`, `parent_root`, `aggregate` and payload
/// `number`, served under its slot and root (and `head` when `head`); returns its root.
fn serve_block(
    api: &mut ServedBlocks,
    slot: u64,
    parent_root: B256,
    aggregate: SyncAggregate,
    number: u64,
    head: bool,
) -> B256 {
    let spec = ChainSpec::mainnet();
    let recorded = common::read("eth_blockNumber_electra", "eth_v2_beacon_blocks_head.ssz");
    let AnyBlock::Electra(mut block) = AnyBlock::from_ssz(&spec, &recorded).unwrap() else {
        panic!("the recorded head is an Electra block");
    };
    block.message.slot = slot;
    block.message.parent_root = parent_root;
    block.message.body.sync_aggregate = aggregate;
    block.message.body.execution_payload.block_number = number;
    block.message.body.execution_payload.block_hash = B256::repeat_byte(number as u8);
    let bytes = block.as_ssz_bytes();
    let root = AnyBlock::from_ssz(&spec, &bytes).unwrap().summary().root;
    for id in [slot.to_string(), root.to_string()] {
        api.0.insert(id, bytes.clone());
    }
    if head {
        api.0.insert("head".into(), bytes);
    }
    root
}

/// The forged block: slot `FINALIZED_SLOT + 10`, payload `FINALIZED_NUMBER + 10`.
const FORGED_SLOT: u64 = FINALIZED_SLOT + 10;
const FORGED_NUMBER: u64 = FINALIZED_NUMBER + 10;

/// Unix time of a mainnet slot.
fn at_slot(slot: u64) -> u64 {
    ChainSpec::mainnet().genesis_time + slot * 12
}

/// A client whose node serves a forged block and, as head, a child signing it with `signers`.
fn client_with_signed_head(signers: usize) -> LightClient<ServedBlocks> {
    let mut api = ServedBlocks::default();
    serve_forged_and_child(&mut api, signers, true);
    LightClient::from_store(api, store(None)).with_clock(|| at_slot(FORGED_SLOT + 2))
}

/// Serves the forged block and, one slot later, a child signing it with `signers` (the head
/// when `head`); returns the child's root.
fn serve_forged_and_child(api: &mut ServedBlocks, signers: usize, head: bool) -> B256 {
    let forged = serve_block(
        api,
        FORGED_SLOT,
        B256::ZERO,
        sign(B256::ZERO, FORGED_SLOT, 1),
        FORGED_NUMBER,
        false,
    );
    serve_block(
        api,
        FORGED_SLOT + 1,
        forged,
        sign(forged, FORGED_SLOT + 1, signers),
        FORGED_NUMBER + 1,
        head,
    )
}

/// Why `client` refuses to anchor the forged block (it must be as not connected).
async fn forged_number_refusal(client: &LightClient<ServedBlocks>) -> String {
    match client.anchor(BlockRef::Number(FORGED_NUMBER)).await {
        Err(LightError::NotConnected { detail }) => detail,
        other => panic!("not refused as not connected: {other:?}"),
    }
}

/// A head whose aggregate has one participant does not anchor its parent: `latest` stays on
/// the store's finalized block and the forged number is refused with the check named; the
/// same head signed by 342 anchors it (the test can tell the two apart).
#[tokio::test]
async fn a_head_signed_by_one_member_anchors_nothing() {
    let client = client_with_signed_head(1);
    let latest = client.anchor(BlockRef::Latest).await.unwrap();
    assert_eq!(
        (latest.number, latest.trust),
        (FINALIZED_NUMBER, Trust::Finalized)
    );
    let detail = forged_number_refusal(&client).await;
    assert!(
        detail.contains("1 of 512 signed, 342 required") && detail.contains("no block within"),
        "{detail}"
    );
    assert_eq!(client.known(BlockRef::Number(FORGED_NUMBER)), None);

    let client = client_with_signed_head(342);
    let latest = client.anchor(BlockRef::Latest).await.unwrap();
    assert_eq!(
        (latest.number, latest.trust),
        (FORGED_NUMBER, Trust::Supermajority)
    );
    assert_eq!(client.anchor(BlockRef::Safe).await.unwrap(), latest);
}

/// With a lowered minimum of 100, a head signed by 100 anchors `latest` but not `safe`.
#[tokio::test]
async fn a_lowered_minimum_anchors_latest_but_not_safe() {
    let client =
        client_with_signed_head(100).with_participation(ParticipationPolicy::new(100).unwrap());
    let latest = client.anchor(BlockRef::Latest).await.unwrap();
    assert_eq!(
        (latest.number, latest.trust),
        (FORGED_NUMBER, Trust::Signed)
    );
    let safe = client.anchor(BlockRef::Safe).await.unwrap();
    assert_eq!(safe.number, FINALIZED_NUMBER);
}

/// An optimistic header in the store signed by fewer than the rule requires anchors neither
/// `latest` nor its number; one signed by 342 does.
#[tokio::test]
async fn an_optimistic_header_below_the_rule_does_not_anchor() {
    let optimistic = lc_header(FINALIZED_SLOT + 5, FINALIZED_NUMBER + 5);
    let weak = LightClient::from_store(
        ServedBlocks::default(),
        store(Some((optimistic.clone(), 1))),
    )
    .with_clock(|| at_slot(FINALIZED_SLOT + 6));
    let latest = weak.anchor(BlockRef::Latest).await.unwrap();
    assert_eq!(latest.number, FINALIZED_NUMBER);
    assert_eq!(
        weak.known(BlockRef::Latest).unwrap().number,
        FINALIZED_NUMBER
    );
    assert_eq!(weak.known(BlockRef::Number(FINALIZED_NUMBER + 5)), None);
    assert!(
        weak.anchor(BlockRef::Number(FINALIZED_NUMBER + 5))
            .await
            .is_err()
    );

    let strong = LightClient::from_store(ServedBlocks::default(), store(Some((optimistic, 342))))
        .with_clock(|| at_slot(FINALIZED_SLOT + 6));
    let latest = strong.anchor(BlockRef::Latest).await.unwrap();
    assert_eq!(
        (latest.number, latest.trust),
        (FINALIZED_NUMBER + 5, Trust::Supermajority)
    );
}

/// A block newer than every signed header is anchored by its own child's aggregate (found
/// by slot), under the same rule; a child from the future is refused.
#[tokio::test]
async fn the_newest_blocks_are_anchored_by_their_child() {
    let client = client_with_signed_head(342);
    let anchor = client
        .anchor(BlockRef::Number(FORGED_NUMBER))
        .await
        .unwrap();
    assert_eq!(
        (anchor.slot, anchor.trust),
        (FORGED_SLOT, Trust::Supermajority)
    );

    // The same blocks with the clock one slot before the forged block: the head is two slots
    // ahead of the wall clock, beyond the one slot of disparity allowed.
    let mut api = ServedBlocks::default();
    serve_forged_and_child(&mut api, 512, true);
    let early = LightClient::from_store(api, store(None)).with_clock(|| at_slot(FORGED_SLOT - 1));
    let err = early
        .anchor(BlockRef::Number(FORGED_NUMBER))
        .await
        .unwrap_err();
    assert!(matches!(err, LightError::SlotOrder { .. }), "{err}");
    assert_eq!(
        early.anchor(BlockRef::Latest).await.unwrap().number,
        FINALIZED_NUMBER
    );
}

/// A node serving block `FORGED_NUMBER`, a child signing it with `child_signers`, and (as
/// head) a grandchild signing the child with `grandchild_signers`.
fn client_with_weak_child(
    child_signers: usize,
    grandchild_signers: usize,
) -> LightClient<ServedBlocks> {
    let mut api = ServedBlocks::default();
    let child = serve_forged_and_child(&mut api, child_signers, false);
    serve_block(
        &mut api,
        FORGED_SLOT + 3, // a missed slot before it
        child,
        sign(child, FORGED_SLOT + 3, grandchild_signers),
        FORGED_NUMBER + 2,
        true,
    );
    LightClient::from_store(api, store(None)).with_clock(|| at_slot(FORGED_SLOT + 4))
}

/// A block whose child is signed by 0 or by 100 members is anchored through the chain of
/// parent roots from its child, which the grandchild signs with 400: the trust is the
/// grandchild's aggregate's, never the weak one's.
#[tokio::test]
async fn a_block_whose_child_is_weak_is_anchored_through_a_later_signed_block() {
    for weak in [0, 100] {
        let client = client_with_weak_child(weak, 400);
        let anchor = client
            .anchor(BlockRef::Number(FORGED_NUMBER))
            .await
            .unwrap();
        assert_eq!(
            (anchor.slot, anchor.number, anchor.trust),
            (FORGED_SLOT, FORGED_NUMBER, Trust::Supermajority),
            "child signed by {weak}"
        );
        assert_eq!(anchor.hash, B256::repeat_byte(FORGED_NUMBER as u8));
    }
}

/// With no later block signed under the rule within the bound (the grandchild signs with
/// 100 and nothing follows), the block is refused, naming the weak aggregate and the search.
#[tokio::test]
async fn a_weak_child_without_a_qualifying_descendant_is_refused() {
    let client = client_with_weak_child(0, 100);
    let detail = forged_number_refusal(&client).await;
    assert!(
        detail.contains("0 of 512 signed, 342 required")
            && detail.contains("no later block within 64 slots")
            && detail.contains("no block within 32 slots after slot"),
        "{detail}"
    );
    assert_eq!(client.known(BlockRef::Number(FORGED_NUMBER)), None);
    // `latest` does not move onto the weakly signed blocks either.
    let latest = client.anchor(BlockRef::Latest).await.unwrap();
    assert_eq!(latest.number, FINALIZED_NUMBER);
}
