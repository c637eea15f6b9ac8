//! Shared by the recorded-data tests: the colibri case directories, anchors taken from a
//! case's recorded beacon blocks, a verified RPC server in front of a case's replay server, a
//! plain JSON-RPC client, and the comparison with `expected_result`.
//!
//! Not here: the tests themselves.
#![allow(dead_code)]

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    time::Duration,
};

use alloy_primitives::B256;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::{Value, json};
use sszgate_fixtures::replay::{Answer, Replay};
use sszgate_light::block::AnyBlock;
use sszgate_rpc::{Anchor, BeaconSource, Config, FixedAnchors, Server, serve};

/// The recorded cases (`shared/data/colibri/`).
pub(crate) fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/colibri")
}

/// Every case directory, by name.
pub(crate) fn case_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(cases_dir())
        .expect("the colibri recordings")
        .flatten()
        .filter(|e| e.path().join("test.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A case's `test.json`.
pub(crate) fn test_json(case: &str) -> Value {
    let text = std::fs::read_to_string(cases_dir().join(case).join("test.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Slot, parent root, and the execution payload's number and hash of a recorded mainnet
/// `SignedBeaconBlock` (decoded by sszgate-light, as the verifier decodes it).
pub(crate) fn beacon_block_facts(bytes: &[u8]) -> (u64, B256, u64, B256) {
    let block = AnyBlock::from_ssz(&sszgate_light::ChainSpec::mainnet(), bytes).unwrap();
    let payload = block.execution_payload();
    (
        block.summary().header.slot,
        block.parent_root(),
        payload.block_number,
        payload.block_hash,
    )
}

/// Anchors from a case's recorded beacon blocks ([`FixedAnchors::from_recorded_blocks`]),
/// and the list of them by number.
pub(crate) fn anchors_of(case: &str) -> (FixedAnchors, Vec<Anchor>) {
    let fixed = FixedAnchors::from_recorded_blocks(
        &sszgate_light::ChainSpec::mainnet(),
        &cases_dir().join(case),
    )
    .unwrap();
    let list = fixed.anchors().copied().collect();
    (fixed, list)
}

/// A replay server of `case` (answers replaced by `answers`) and a verified RPC server
/// trusting `anchors` in front of it, as execution RPC and Beacon API both.
pub(crate) async fn start(
    case: &str,
    answers: HashMap<String, Answer>,
    anchors: FixedAnchors,
) -> (Replay, Server) {
    start_with(case, answers, anchors, |_| {}).await
}

/// [`start`] with the server's configuration changed by `tweak`.
pub(crate) async fn start_with(
    case: &str,
    answers: HashMap<String, Answer>,
    anchors: FixedAnchors,
    tweak: impl FnOnce(&mut Config),
) -> (Replay, Server) {
    let replay = Replay::start_with(&cases_dir().join(case), answers)
        .await
        .unwrap();
    let mut config = Config::new(&replay.url(), 1);
    config.beacon = Some(BeaconSource {
        url: replay.url(),
        spec: sszgate_light::ChainSpec::mainnet(),
    });
    config.upstream_timeout = Duration::from_secs(5);
    tweak(&mut config);
    let server = serve(config, anchors).await.unwrap();
    (replay, server)
}

/// POSTs `body` to `url`; the JSON answer.
pub(crate) async fn post(url: &str, body: &Value) -> Value {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = hyper::Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

/// Calls `method` on the verified server; its whole JSON-RPC answer.
pub(crate) async fn call(server: &Server, method: &str, params: &Value) -> Value {
    post(
        &server.url(),
        &json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}),
    )
    .await
}

#[allow(unused_imports)]
pub(crate) use sszgate_rpc::colibri::same;
