//! The Beacon API's JSON forms of the light-client objects, recorded from a live Lodestar
//! v1.38 node (mainnet preset, Fulu from genesis) in `tests/data/lodestar-fulu` together with
//! their SSZ forms: each JSON form decodes to the very bytes and values of its SSZ form; a
//! recorded case with only JSON files bootstraps and syncs a store equal to the SSZ one; and
//! malformed JSON is refused naming the endpoint and the field.
//!
//! The case was recorded from `shared/tools/lodestar-fulu/up.sh` (`PRESET=mainnet FORK=fulu`)
//! just after its first finality (epoch 2), each route fetched with `Accept:
//! application/json` and with `Accept: application/octet-stream`.

mod common;

use serde_json::{Value, json};
use sszgate_light::client::{fetch_chain_spec, fetch_finalized_checkpoint};
use sszgate_light::json::{LcObject, lc_object_ssz, updates_ssz};
use sszgate_light::types::{Bootstrap, Update, split_update_stream};
use sszgate_light::{ChainSpec, LightError, RecordedBeaconApi};

use common::{assert_same_store, lodestar_client, lodestar_client_synced, lodestar_dir};

const UPDATES: &str = "/eth/v1/beacon/light_client/updates?start_period=0&count=1";
const FINALITY: &str = "/eth/v1/beacon/light_client/finality_update";
const OPTIMISTIC: &str = "/eth/v1/beacon/light_client/optimistic_update";

fn recorded(path: &str, extension: &str) -> Vec<u8> {
    let file = lodestar_dir().join(format!(
        "{}.{extension}",
        RecordedBeaconApi::file_stem(path)
    ));
    std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

fn recorded_json(path: &str) -> Value {
    serde_json::from_slice(&recorded(path, "json")).unwrap()
}

async fn spec_and_bootstrap_path() -> (ChainSpec, String) {
    let api = RecordedBeaconApi::new(lodestar_dir());
    let spec = fetch_chain_spec(&api).await.unwrap();
    let root = fetch_finalized_checkpoint(&api).await.unwrap();
    (
        spec,
        format!("/eth/v1/beacon/light_client/bootstrap/{root}"),
    )
}

#[tokio::test]
async fn json_forms_give_the_bytes_and_values_of_the_ssz_forms() {
    let (spec, bootstrap) = spec_and_bootstrap_path().await;
    let ssz = recorded(&bootstrap, "ssz");
    let from_json =
        lc_object_ssz(&spec, LcObject::Bootstrap, &recorded_json(&bootstrap), "b").unwrap();
    assert_eq!(from_json, ssz);
    let decoded = Bootstrap::from_ssz(&spec, &from_json).unwrap();
    assert_eq!(decoded, Bootstrap::from_ssz(&spec, &ssz).unwrap());
    assert!(
        decoded.header.beacon.slot > 0,
        "a finalized checkpoint after genesis"
    );

    let ssz = recorded(UPDATES, "ssz");
    let ssz_items = split_update_stream(&ssz, 1).unwrap();
    let json_items = updates_ssz(&spec, &recorded_json(UPDATES), 1, UPDATES).unwrap();
    assert_eq!(json_items.len(), 1);
    assert_eq!(json_items[0], ssz_items[0]);
    let update = Update::from_ssz(&spec, &json_items[0]).unwrap();
    assert!(update.has_next_sync_committee());

    for (path, what) in [
        (FINALITY, LcObject::FinalityUpdate),
        (OPTIMISTIC, LcObject::OptimisticUpdate),
    ] {
        let from_json = lc_object_ssz(&spec, what, &recorded_json(path), path).unwrap();
        assert_eq!(from_json, recorded(path, "ssz"), "{path}");
    }
    let finality = lc_object_ssz(
        &spec,
        LcObject::FinalityUpdate,
        &recorded_json(FINALITY),
        FINALITY,
    )
    .unwrap();
    assert!(
        Update::from_finality_ssz(&spec, &finality)
            .unwrap()
            .has_finality()
    );
}

/// A directory holding only the case's JSON files.
fn json_only_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(lodestar_dir()).unwrap().flatten() {
        if entry.path().extension().is_some_and(|e| e == "json") {
            std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
        }
    }
    dir
}

#[tokio::test]
async fn a_recorded_case_of_json_only_syncs_the_store_of_the_ssz_case() {
    let json_only = json_only_copy();
    let from_json = lodestar_client_synced(RecordedBeaconApi::new(json_only.path())).await;
    let from_ssz = lodestar_client_synced(RecordedBeaconApi::new(lodestar_dir())).await;
    assert_same_store(&from_json, &from_ssz);
}

/// The sync reads the latest finality and optimistic updates in JSON too: a malformed one
/// fails the sync naming the endpoint and the field (it is not taken for "none on offer").
#[tokio::test]
async fn a_malformed_json_latest_update_fails_the_sync_naming_the_field() {
    for path in [FINALITY, OPTIMISTIC] {
        let json_only = json_only_copy();
        let mut doc = recorded_json(path);
        doc["data"]["sync_aggregate"]["sync_committee_bits"] = json!("0xff");
        let file = json_only
            .path()
            .join(format!("{}.json", RecordedBeaconApi::file_stem(path)));
        std::fs::write(file, doc.to_string()).unwrap();
        let client = lodestar_client(RecordedBeaconApi::new(json_only.path())).await;
        let err = client.sync().await.unwrap_err();
        assert!(
            matches!(&err, LightError::Json { path: p, field, detail } if p == path
                && field == "data.sync_aggregate.sync_committee_bits"
                && detail.contains("1 bytes, 64 expected")),
            "{err}"
        );
    }
}

/// The recorded bootstrap's JSON with `change` made, and the error decoding it gives.
async fn bootstrap_error(change: impl FnOnce(&mut Value)) -> LightError {
    let (spec, path) = spec_and_bootstrap_path().await;
    let mut doc = recorded_json(&path);
    change(&mut doc);
    lc_object_ssz(&spec, LcObject::Bootstrap, &doc, &path).unwrap_err()
}

fn assert_field(err: &LightError, want_field: &str, want_detail: &str) {
    assert!(
        matches!(err, LightError::Json { path, field, detail }
            if path.starts_with("/eth/v1/beacon/light_client/") && field == want_field
                && detail.contains(want_detail)),
        "{err}"
    );
}

#[tokio::test]
async fn malformed_json_is_refused_naming_the_field() {
    let err =
        bootstrap_error(|d| d["data"]["header"]["beacon"]["state_root"] = json!("0x1234")).await;
    assert_field(
        &err,
        "data.header.beacon.state_root",
        "2 bytes, 32 expected",
    );
    let err = bootstrap_error(|d| {
        d["data"]["current_sync_committee"]
            .as_object_mut()
            .unwrap()
            .remove("aggregate_pubkey");
    })
    .await;
    assert_field(
        &err,
        "data.current_sync_committee.aggregate_pubkey",
        "missing",
    );
    let err = bootstrap_error(|d| {
        let branch = d["data"]["current_sync_committee_branch"]
            .as_array_mut()
            .unwrap();
        branch.push(branch[0].clone());
    })
    .await;
    assert_field(
        &err,
        "data.current_sync_committee_branch",
        "7 items, at most 6 allowed",
    );
    let err = bootstrap_error(|d| {
        let keys = d["data"]["current_sync_committee"]["pubkeys"]
            .as_array_mut()
            .unwrap();
        keys.pop();
    })
    .await;
    assert_field(
        &err,
        "data.current_sync_committee.pubkeys",
        "511 items, 512 expected",
    );
    let err = bootstrap_error(|d| {
        d["data"]["header"]["execution"]["extra_data"] = json!(format!("0x{}", "00".repeat(33)))
    })
    .await;
    assert_field(&err, "data.header.execution.extra_data", "at most 64");
    let err =
        bootstrap_error(|d| d["data"]["header"]["execution"]["base_fee_per_gas"] = json!(7)).await;
    assert_field(
        &err,
        "data.header.execution.base_fee_per_gas",
        "not a string",
    );
    let err = bootstrap_error(|d| d["data"]["header"]["beacon"]["slot"] = json!("-1")).await;
    assert_field(&err, "data.header.beacon.slot", "not a decimal string");
    let err = bootstrap_error(|d| d["data"]["header"]["execution_branch"][2] = json!("0xzz")).await;
    assert_field(&err, "data.header.execution_branch[2]", "");
    let err = bootstrap_error(|d| d["version"] = json!("deneb")).await;
    assert_field(&err, "version", "is in fulu");
}

#[tokio::test]
async fn an_updates_list_over_its_count_is_refused() {
    let (spec, _) = spec_and_bootstrap_path().await;
    let mut doc = recorded_json(UPDATES);
    let first = doc[0].clone();
    doc.as_array_mut().unwrap().push(first);
    let err = updates_ssz(&spec, &doc, 1, UPDATES).unwrap_err();
    assert!(
        matches!(&err, LightError::Json { path, field, detail }
            if path == UPDATES && field == "(the answer)" && detail.contains("2 items, at most 1")),
        "{err}"
    );
    doc.as_array_mut().unwrap().pop();
    doc[0]["data"]["signature_slot"] = json!("1e3");
    let err = updates_ssz(&spec, &doc, 1, UPDATES).unwrap_err();
    assert_field(&err, "[0].data.signature_slot", "not a decimal string");
}
