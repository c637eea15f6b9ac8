//! The facade over recorded Beacon API answers (`RecordedBeaconApi` on a case directory):
//! bootstrap, sync to the recording's period, and anchors by tag and number, as a beacon
//! node would have answered them.

mod common;

use alloy_primitives::B256;
use sszgate_light::ParticipationPolicy;
use sszgate_light::anchor::verify_signed_by_child;
use sszgate_light::block::AnyBlock;
use sszgate_light::client::fetch_finalized_checkpoint;
use sszgate_light::spec::ChainSpec;
use sszgate_light::{BlockRef, LightClient, LightError, RecordedBeaconApi, Trust};

fn api(case: &str) -> RecordedBeaconApi {
    RecordedBeaconApi::new(common::data_dir().join(case))
}

/// Unix time of a mainnet slot.
const fn at_slot(slot: u64) -> u64 {
    1606824023 + slot * 12
}

/// The bootstrap recorded in `case`.
fn recorded_bootstrap(case: &str) -> sszgate_light::types::Bootstrap {
    let bytes = common::read_prefixed(case, "eth_v1_beacon_light_client_bootstrap_");
    sszgate_light::types::Bootstrap::from_ssz(&ChainSpec::mainnet(), &bytes).unwrap()
}

fn b256(hex: &str) -> B256 {
    hex.parse().unwrap()
}

/// eth_blockNumber_electra: bootstrap from the recorded finalized checkpoint, one update
/// (period 1422 brings 1423's committee), and `latest` is the head's parent, 0x1566aae.
#[tokio::test]
async fn eth_block_number_electra_through_the_facade() {
    let case = "eth_blockNumber_electra";
    let checkpoint = fetch_finalized_checkpoint(&api(case)).await.unwrap();
    assert_eq!(
        checkpoint,
        b256("0xb8758d4bd976e1b33e62937ed31a709dba0a855869641581bef3d2a48b527690")
    );
    let client = LightClient::bootstrap(api(case), ChainSpec::mainnet(), checkpoint)
        .await
        .unwrap()
        .with_clock(|| at_slot(11658783));
    let report = client.sync().await.unwrap();
    assert_eq!(report.updates_applied, 1);
    assert!(
        !report.finality_applied && !report.optimistic_applied,
        "not recorded"
    );
    let latest = client.anchor(BlockRef::Latest).await.unwrap();
    assert_eq!(latest.number, 0x1566aae);
    assert_eq!(latest.trust, Trust::Supermajority);
    assert_eq!(
        client.anchor(BlockRef::Number(0x1566aae)).await.unwrap(),
        latest
    );
    assert_eq!(
        client.anchor(BlockRef::Hash(latest.hash)).await.unwrap(),
        latest
    );
    let finalized = client.anchor(BlockRef::Finalized).await.unwrap();
    assert_eq!(finalized.trust, Trust::Finalized);
    assert_eq!(finalized.slot, client.status().finalized_slot);
    assert!(finalized.number < latest.number);
    // A newer block than the signed head cannot be connected, and says so.
    let err = client
        .anchor(BlockRef::Number(0x1566aae + 5))
        .await
        .unwrap_err();
    assert!(matches!(err, LightError::NotConnected { .. }), "{err}");
    // A hash the client has never verified: it says how to anchor it.
    let err = client
        .anchor(BlockRef::Hash(B256::repeat_byte(7)))
        .await
        .unwrap_err();
    assert!(matches!(err, LightError::NotConnected { .. }), "{err}");
}

/// eth_getBalance1: bootstrap at period 1347 and the recorded 46 updates in one request,
/// then `latest` is the head's parent; the blocks of period 1347 recorded in the same case
/// are refused with the period named, because the synced store no longer holds that committee.
#[tokio::test]
async fn forty_six_periods_in_one_sync() {
    let case = "eth_getBalance1";
    let spec = ChainSpec::mainnet();
    let checkpoint = recorded_bootstrap(case).header.beacon.root();
    let client = LightClient::bootstrap(api(case), spec.clone(), checkpoint)
        .await
        .unwrap()
        .with_clock(|| at_slot(11412812));
    let report = client.sync().await.unwrap();
    assert_eq!(report.updates_applied, 46);
    assert_eq!(client.status().period, 1392);
    let latest = client.anchor(BlockRef::Latest).await.unwrap();
    assert_eq!((latest.slot, latest.number), (11412811, 22196223));
    assert_eq!(
        latest.beacon_root,
        b256("0xbbc16d42478b2053bf9cc743521a02f655a7a4f2b5e065621b899c90176f2601")
    );
    let old = AnyBlock::from_ssz(
        &spec,
        &common::read(case, "eth_v2_beacon_blocks_11038724.ssz"),
    )
    .unwrap()
    .summary();
    let old_child = AnyBlock::from_ssz(
        &spec,
        &common::read(case, "eth_v2_beacon_blocks_11038725.ssz"),
    )
    .unwrap()
    .summary();
    let err = client
        .with_store(|s| verify_signed_by_child(s, ParticipationPolicy::default(), &old, &old_child))
        .unwrap_err();
    assert!(
        matches!(err, LightError::UnknownCommittee { period: 1347, .. }),
        "{err}"
    );
}

/// trusted_block1: bootstrap from the test's trusted block root; the next period's update is
/// not recorded (not required in the checkpoint's own period). The checkpoint (slot 11526688)
/// is newer than the recorded head (11526675), so `latest` is the checkpoint's own execution
/// block, finalized; the head's parent 0x1546ab1 is anchored in the `anchor` tests.
#[tokio::test]
async fn trusted_block_case_bootstraps_from_its_trusted_root() {
    let case = "trusted_block1";
    let trusted = b256("0xfc728271f234a95e04a101d2dc01717cd8e88edbc694f8a5377e396b08ff2591");
    let client = LightClient::bootstrap(api(case), ChainSpec::mainnet(), trusted)
        .await
        .unwrap()
        .with_clock(|| at_slot(11526675));
    let report = client.sync().await.unwrap();
    assert_eq!(report.updates_applied, 0);
    let latest = client.anchor(BlockRef::Latest).await.unwrap();
    assert_eq!(
        (latest.slot, latest.number, latest.trust),
        (11526688, 22309567, Trust::Finalized)
    );
    assert_eq!(latest.beacon_root, trusted);
    assert_eq!(client.anchor(BlockRef::Safe).await.unwrap(), latest);
}

/// A bootstrap the node does not have (eth_getTransactionByHash_electra recorded a 404).
#[tokio::test]
async fn missing_bootstrap_is_reported() {
    let root = b256("0xd9717ecc253684291f828688f311ba74d05af74c31654f6e14077669fca62f6a");
    let err = LightClient::bootstrap(
        api("eth_getTransactionByHash_electra"),
        ChainSpec::mainnet(),
        root,
    )
    .await
    .err()
    .unwrap();
    assert!(matches!(err, LightError::NotFound { .. }), "{err}");
}

/// The store saved by `sync` resumes: a second client opened on the file needs no bootstrap.
#[tokio::test]
async fn open_resumes_from_the_saved_store() {
    let case = "eth_blockNumber_electra";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("light.json");
    let checkpoint = fetch_finalized_checkpoint(&api(case)).await.unwrap();
    let first = LightClient::open(api(case), ChainSpec::mainnet(), path.clone(), checkpoint)
        .await
        .unwrap()
        .with_clock(|| at_slot(11658783));
    first.sync().await.unwrap();
    // The second client reads no bootstrap: an empty directory as its API.
    let empty = tempfile::tempdir().unwrap();
    let second = LightClient::open(
        RecordedBeaconApi::new(empty.path()),
        ChainSpec::mainnet(),
        path,
        B256::ZERO,
    )
    .await
    .unwrap()
    .with_clock(|| at_slot(11658783));
    assert_eq!(
        second.with_store(|s| s.next_sync_committee().cloned()),
        first.with_store(|s| s.next_sync_committee().cloned())
    );
    assert_eq!(second.status(), first.status());
}

/// The chain's parameters from the node's config: a mainnet node reproduces the built-in
/// mainnet, and a node whose Electra epoch differs from the built-in one is refused.
#[tokio::test]
async fn chain_spec_from_the_node_is_checked_against_the_built_in() {
    let dir = tempfile::tempdir().unwrap();
    let names = ["ALTAIR", "BELLATRIX", "CAPELLA", "DENEB", "ELECTRA", "FULU"];
    let epochs = ["74240", "144896", "194048", "269568", "364032", "411392"];
    let mut config = serde_json::json!({"SECONDS_PER_SLOT": "12", "SLOTS_PER_EPOCH": "32",
        "EPOCHS_PER_SYNC_COMMITTEE_PERIOD": "256", "GENESIS_FORK_VERSION": "0x00000000"});
    for (i, name) in names.iter().enumerate() {
        config[format!("{name}_FORK_VERSION")] = format!("0x0{}000000", i + 1).into();
        config[format!("{name}_FORK_EPOCH")] = epochs[i].into();
    }
    let genesis = serde_json::json!({"data": {"genesis_time": "1606824023",
        "genesis_validators_root": "0x4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95"}});
    let write = |config: &serde_json::Value| {
        std::fs::write(
            dir.path().join("eth_v1_config_spec.json"),
            serde_json::json!({ "data": config }).to_string(),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("eth_v1_beacon_genesis.json"),
            genesis.to_string(),
        )
        .unwrap();
    };
    write(&config);
    let api = RecordedBeaconApi::new(dir.path());
    let spec = sszgate_light::client::fetch_chain_spec(&api).await.unwrap();
    let mainnet = ChainSpec::mainnet();
    assert_eq!(spec.name, "mainnet");
    assert_eq!(spec.forks[..6], mainnet.forks[..6]);
    assert_eq!(
        spec.forks[6].1,
        u64::MAX,
        "Gloas not in this config: unscheduled"
    );
    assert_eq!(
        (spec.genesis_time, spec.genesis_validators_root),
        (mainnet.genesis_time, mainnet.genesis_validators_root)
    );
    config["ELECTRA_FORK_EPOCH"] = "364033".into();
    write(&config);
    let err = sszgate_light::client::fetch_chain_spec(&api)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            LightError::FieldMismatch {
                check: "chain_spec",
                ..
            }
        ),
        "{err}"
    );
}

/// A copy of eth_blockNumber_electra with its two blocks also served by slot, the child
/// optionally tampered with (a flipped bit in its sync aggregate signature).
fn electra_case_by_slot(tamper_child: bool) -> tempfile::TempDir {
    use ssz::Encode;
    let case = "eth_blockNumber_electra";
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(common::data_dir().join(case))
        .unwrap()
        .flatten()
    {
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    let parent = common::read_prefixed(case, "eth_v2_beacon_blocks_0x");
    std::fs::write(dir.path().join("eth_v2_beacon_blocks_11658782.ssz"), parent).unwrap();
    let mut child = common::read(case, "eth_v2_beacon_blocks_head.ssz");
    if tamper_child {
        let AnyBlock::Electra(mut block) =
            AnyBlock::from_ssz(&ChainSpec::mainnet(), &child).unwrap()
        else {
            panic!("an Electra block");
        };
        block.message.body.sync_aggregate.sync_committee_signature.0[10] ^= 0x04;
        child = block.as_ssz_bytes();
    }
    std::fs::write(dir.path().join("eth_v2_beacon_blocks_11658783.ssz"), child).unwrap();
    dir
}

async fn synced_client(dir: &std::path::Path) -> LightClient<RecordedBeaconApi> {
    let api = RecordedBeaconApi::new(dir);
    let checkpoint = fetch_finalized_checkpoint(&api).await.unwrap();
    let client = LightClient::bootstrap(api, ChainSpec::mainnet(), checkpoint)
        .await
        .unwrap()
        .with_clock(|| at_slot(11658783));
    client.sync().await.unwrap();
    client
}

/// By number: the block is found by slot and verified through the next slot's block.
#[tokio::test]
async fn anchor_by_number_finds_the_block_by_slot_and_its_signing_child() {
    let dir = electra_case_by_slot(false);
    let client = synced_client(dir.path()).await;
    let anchor = client.anchor(BlockRef::Number(0x1566aae)).await.unwrap();
    assert_eq!((anchor.slot, anchor.number), (11658782, 0x1566aae));
    assert_eq!(
        anchor.beacon_root,
        b256("0x6e2ab0816426801b78fcd5846b94fd5ad7ca24b21edf93b9bc8238ba0604817a")
    );
    // The hash path with the number as hint, and with a wrong hash.
    assert_eq!(
        client
            .anchor_hash(anchor.hash, Some(0x1566aae))
            .await
            .unwrap(),
        anchor
    );
    let err = client
        .anchor_hash(B256::repeat_byte(1), Some(0x1566aae))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            LightError::FieldMismatch {
                check: "block_hash",
                ..
            }
        ),
        "{err}"
    );
}

/// A node serving a child block with a tampered aggregate: the block by number is refused
/// with the signature check named.
#[tokio::test]
async fn tampered_child_is_refused_by_number() {
    let dir = electra_case_by_slot(true);
    let client = synced_client(dir.path()).await;
    let err = client
        .anchor(BlockRef::Number(0x1566aae))
        .await
        .unwrap_err();
    assert!(matches!(err, LightError::Signature { .. }), "{err}");
}

/// The client can be shared between tasks: it is `Send + Sync`, and so are its futures.
#[test]
fn client_and_its_futures_are_send_and_sync() {
    fn shareable<T: Send + Sync>(_: &T) {}
    fn sendable<T: Send>(_: T) {}
    let api =
        sszgate_light::HttpBeaconApi::new("http://127.0.0.1:1", std::time::Duration::from_secs(1))
            .unwrap();
    let spec = ChainSpec::mainnet();
    let b = sszgate_light::types::Bootstrap::from_ssz(
        &spec,
        &common::read_prefixed(
            "eth_blockNumber_electra",
            "eth_v1_beacon_light_client_bootstrap_",
        ),
    )
    .unwrap();
    let store = sszgate_light::store::LightClientStore::bootstrap(spec, b.header.beacon.root(), &b)
        .unwrap();
    let client = LightClient::from_store(api, store);
    shareable(&client);
    sendable(client.anchor(BlockRef::Latest));
    sendable(client.sync());
}

/// A signature one slot ahead of the local clock is accepted (clock disparity); two slots
/// ahead, the update is refused by the slot-order check.
#[tokio::test]
async fn signature_ahead_of_the_clock() {
    let case = "eth_blockNumber_electra";
    let spec = ChainSpec::mainnet();
    let bytes = common::read(
        case,
        "eth_v1_beacon_light_client_updates_start_period_1422_count_1.ssz",
    );
    let item = sszgate_light::types::split_update_stream(&bytes, 1).unwrap()[0];
    let signature_slot = sszgate_light::types::Update::from_ssz(&spec, item)
        .unwrap()
        .signature_slot;
    assert_eq!(signature_slot, 11651079);
    let checkpoint = fetch_finalized_checkpoint(&api(case)).await.unwrap();
    // One slot before the signature's: accepted.
    let client = LightClient::bootstrap(api(case), spec.clone(), checkpoint)
        .await
        .unwrap()
        .with_clock(|| at_slot(11651078));
    assert_eq!(client.sync().await.unwrap().updates_applied, 1);
    // Two slots before: refused.
    let client = LightClient::bootstrap(api(case), spec, checkpoint)
        .await
        .unwrap()
        .with_clock(|| at_slot(11651077));
    let err = client.sync().await.unwrap_err();
    assert!(matches!(err, LightError::SlotOrder { .. }), "{err}");
}

/// Counts the requests made through a recorded API.
struct Counting {
    inner: RecordedBeaconApi,
    head_requests: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl sszgate_light::BeaconApi for Counting {
    async fn get_json(&self, path: &str, max: usize) -> Result<serde_json::Value, LightError> {
        self.inner.get_json(path, max).await
    }
    async fn get_ssz(&self, path: &str, max: usize) -> Result<Vec<u8>, LightError> {
        if path.ends_with("/blocks/head") {
            self.head_requests
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        self.inner.get_ssz(path, max).await
    }
}

/// `latest` and `safe` in the same slot ask the node for its head once.
#[tokio::test]
async fn head_is_asked_once_per_slot() {
    let case = "eth_blockNumber_electra";
    let head_requests = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let api = Counting {
        inner: api(case),
        head_requests: head_requests.clone(),
    };
    let checkpoint = fetch_finalized_checkpoint(&api).await.unwrap();
    let client = LightClient::bootstrap(api, ChainSpec::mainnet(), checkpoint)
        .await
        .unwrap()
        .with_clock(|| at_slot(11658783));
    client.sync().await.unwrap();
    let latest = client.anchor(BlockRef::Latest).await.unwrap();
    assert_eq!(client.anchor(BlockRef::Latest).await.unwrap(), latest);
    assert_eq!(client.anchor(BlockRef::Safe).await.unwrap(), latest);
    assert_eq!(latest.number, 0x1566aae);
    assert_eq!(head_requests.load(std::sync::atomic::Ordering::Relaxed), 1);
}

/// A recorded API whose `finality_update` waits for the test: a sync asking for it has
/// applied its updates to its copy of the store and not yet swapped the copy in.
struct GatedAtFinality {
    inner: RecordedBeaconApi,
    reached: std::sync::Arc<tokio::sync::Notify>,
    release: std::sync::Arc<tokio::sync::Notify>,
}

impl sszgate_light::BeaconApi for GatedAtFinality {
    async fn get_json(&self, path: &str, max: usize) -> Result<serde_json::Value, LightError> {
        self.inner.get_json(path, max).await
    }
    async fn get_ssz(&self, path: &str, max: usize) -> Result<Vec<u8>, LightError> {
        if path.ends_with("/light_client/finality_update") {
            self.reached.notify_one();
            self.release.notified().await;
        }
        self.inner.get_ssz(path, max).await
    }
}

/// While a sync is mid-way (46 updates applied to its copy, its finality stage held by the
/// node), anchors and the status are answered from the store as it was (period 1347, the
/// bootstrap's finalized block); once the sync ends, its store (period 1392) is swapped in.
#[tokio::test]
async fn anchors_are_answered_while_a_sync_applies_updates() {
    let case = "eth_getBalance1";
    let spec = ChainSpec::mainnet();
    let bootstrap = recorded_bootstrap(case);
    let (reached, release) = Default::default();
    let api = GatedAtFinality {
        inner: api(case),
        reached: std::sync::Arc::clone(&reached),
        release: std::sync::Arc::clone(&release),
    };
    let client = LightClient::bootstrap(api, spec, bootstrap.header.beacon.root())
        .await
        .unwrap()
        .with_clock(|| at_slot(11412812));
    let client = std::sync::Arc::new(client);
    let mut syncing = tokio::spawn({
        let client = client.clone();
        async move { client.sync().await }
    });
    tokio::select! {
        () = reached.notified() => {}
        ended = &mut syncing => panic!("the sync ended before its finality stage: {ended:?}"),
    }
    let during = client.anchor(BlockRef::Finalized).await.unwrap();
    assert_eq!(during.beacon_root, bootstrap.header.beacon.root());
    assert_eq!(client.status().period, 1347);
    release.notify_one();
    let report = syncing.await.unwrap().unwrap();
    assert_eq!(report.updates_applied, 46);
    assert_eq!(client.status().period, 1392);
    let after = client.anchor(BlockRef::Finalized).await.unwrap();
    assert!(after.slot > during.slot, "{after:?} after {during:?}");
}
