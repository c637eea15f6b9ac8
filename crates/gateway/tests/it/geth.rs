//! The relay in front of a real execution client: go-ethereum v1.17.8 on a private post-merge
//! chain (every fork at genesis, Osaka included), driven through the proxy as a CL would:
//! forkchoiceUpdated with attributes, getPayloadV5, newPayloadV4, forkchoiceUpdated to the new
//! head. Checks the EL's answers and the records the proxy wrote.
//!
//! Needs geth (`scripts/install-geth.sh`, or `SSZGATE_GETH`). Locally a missing geth skips
//! with a loud message; under `CI=true` it is a failure.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use serde_json::{Value, json};
use sszgate_gateway::JwtSecret;

use crate::{Proxy, send, try_send};

fn geth_binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("SSZGATE_GETH") {
        return Some(PathBuf::from(path));
    }
    let tools = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin/geth");
    if tools.exists() {
        return Some(tools);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("geth"))
            .find(|p| p.exists())
    })
}

/// A geth process, killed by its pid when dropped.
struct Geth(Child);

impl Drop for Geth {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// (method, status, payload status, block number, block hash, blob count) of a record.
type Row = (
    String,
    i64,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<i64>,
);

pub(crate) async fn rpc(
    url: &str,
    token: Option<&str>,
    method: &str,
    params: Value,
) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let mut request = Request::post(url).header("content-type", "application/json");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    match try_send(request.body(Full::new(Bytes::from(body))).unwrap(), false).await {
        Ok((status, _, bytes)) => (
            status.as_u16(),
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        ),
        Err(_) => (0, Value::Null),
    }
}

/// One geth at a time: the tests run in parallel on a 2-core machine, and three nodes starting
/// together (with their ports picked free just before) made startup flaky.
static ONE_GETH: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A running geth on a fresh chain: the Engine API port, the genesis hash and time, the JWT.
pub(crate) struct Node {
    _geth: Geth,
    _dir: tempfile::TempDir,
    pub(crate) auth_port: u16,
    pub(crate) head: String,
    pub(crate) timestamp: u64,
    pub(crate) secret_hex: String,
    /// Held until the node is gone (fields drop in order: geth first).
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

/// Starts geth, or says why it cannot (None: skip locally, fail under CI).
pub(crate) async fn start_geth() -> Option<Node> {
    start_geth_on(free_port()).await
}

/// Starts geth with its Engine API on `auth_port`, or says why it cannot.
pub(crate) async fn start_geth_on(auth_port: u16) -> Option<Node> {
    let Some(geth) = geth_binary() else {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !in_ci,
            "geth is missing under CI: run scripts/install-geth.sh"
        );
        eprintln!(
            "\n!!!!!!!! SKIPPED: real-geth test: no geth (scripts/install-geth.sh, or SSZGATE_GETH) !!!!!!!!\n"
        );
        return None;
    };
    let turn = ONE_GETH.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A post-merge genesis with every fork at time 0, less the ones geth 1.17.8 cannot run.
    let out = Command::new(&geth)
        .args(["--dev", "dumpgenesis"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "geth dumpgenesis: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut genesis: Value = serde_json::from_slice(&out.stdout).unwrap();
    let config = genesis["config"].as_object_mut().unwrap();
    for fork in ["bogotaTime", "amsterdamTime"] {
        config.remove(fork);
    }
    std::fs::write(d.join("genesis.json"), genesis.to_string()).unwrap();
    let datadir = d.join("data");
    let init = Command::new(&geth)
        .arg("init")
        .arg("--datadir")
        .arg(&datadir)
        .arg(d.join("genesis.json"))
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "geth init: {}",
        String::from_utf8_lossy(&init.stderr)
    );
    let secret_hex = "42".repeat(32);
    std::fs::write(d.join("jwt.hex"), &secret_hex).unwrap();
    std::fs::write(
        d.join("p2p-off.toml"),
        "[Node.P2P]\nMaxPeers = 0\nNoDiscovery = true\nNoDial = true\nListenAddr = \"\"\nBootstrapNodes = []\nBootstrapNodesV5 = []\n",
    )
    .unwrap();
    let http_port = free_port();
    let log = std::fs::File::create(d.join("geth.log")).unwrap();
    let geth_process = Geth(
        Command::new(&geth)
            .arg("--config")
            .arg(d.join("p2p-off.toml"))
            .arg("--datadir")
            .arg(&datadir)
            .args([
                "--networkid",
                "1337",
                "--authrpc.addr",
                "127.0.0.1",
                "--authrpc.port",
                &auth_port.to_string(),
            ])
            .arg("--authrpc.jwtsecret")
            .arg(d.join("jwt.hex"))
            .args([
                "--http",
                "--http.addr",
                "127.0.0.1",
                "--http.port",
                &http_port.to_string(),
                "--nat",
                "none",
                "--ipcdisable",
                "--syncmode",
                "full",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    let http = format!("http://127.0.0.1:{http_port}");
    let mut genesis_block = Value::Null;
    for _ in 0..150 {
        if let (200, v) = rpc(&http, None, "eth_getBlockByNumber", json!(["0x0", false])).await
            && v["result"].is_object()
        {
            genesis_block = v["result"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        genesis_block.is_object(),
        "geth did not come up: {}",
        std::fs::read_to_string(d.join("geth.log")).unwrap_or_default()
    );
    let head = genesis_block["hash"].as_str().unwrap().to_string();
    let timestamp = u64::from_str_radix(
        genesis_block["timestamp"]
            .as_str()
            .unwrap()
            .trim_start_matches("0x"),
        16,
    )
    .unwrap();

    Some(Node {
        _turn: turn,
        _geth: geth_process,
        _dir: dir,
        auth_port,
        head,
        timestamp,
        secret_hex,
    })
}

/// Payload attributes for the block after the genesis (`timestamp` is the genesis's), and the
/// parent beacon block root they carry.
pub(crate) fn next_attributes(timestamp: u64) -> (Value, String) {
    let root = format!("0x{}", "02".repeat(32));
    let attributes = json!({
        "timestamp": format!("0x{:x}", timestamp + 12),
        "prevRandao": format!("0x{}", "01".repeat(32)),
        "suggestedFeeRecipient": format!("0x{}", "11".repeat(20)),
        "withdrawals": [],
        "parentBeaconBlockRoot": root,
    });
    (attributes, root)
}

/// As a CL does over JSON-RPC at `url`: forkchoiceUpdated with attributes on the genesis `head`,
/// getPayloadV5 a moment later, newPayloadV4 of what was built. Checks each answer and returns
/// the new payload (block 1, on `head`, VALID).
async fn build_block_over_json(
    url: &str,
    token: Option<&str>,
    head: &str,
    timestamp: u64,
) -> Value {
    let (attributes, root) = next_attributes(timestamp);
    let state = json!({"headBlockHash": head, "safeBlockHash": head, "finalizedBlockHash": head});
    let (_, fcu) = rpc(
        url,
        token,
        "engine_forkchoiceUpdatedV3",
        json!([state, attributes]),
    )
    .await;
    assert_eq!(fcu["result"]["payloadStatus"]["status"], "VALID", "{fcu}");
    let payload_id = fcu["result"]["payloadId"]
        .as_str()
        .expect("a payload id")
        .to_string();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (_, built) = rpc(url, token, "engine_getPayloadV5", json!([payload_id])).await;
    let payload = built["result"]["executionPayload"].clone();
    assert_eq!(payload["blockNumber"], "0x1", "{built}");
    assert_eq!(payload["parentHash"], head);
    let requests = built["result"]["executionRequests"].clone();
    let (_, status) = rpc(
        url,
        token,
        "engine_newPayloadV4",
        json!([payload, [], root, requests]),
    )
    .await;
    assert_eq!(status["result"]["status"], "VALID", "{status}");
    payload
}

#[tokio::test]
async fn real_geth_through_the_proxy_builds_and_imports_a_block() {
    let Some(node) = start_geth().await else {
        return;
    };
    let (auth_port, head, timestamp, secret_hex) = (
        node.auth_port,
        node.head.clone(),
        node.timestamp,
        node.secret_hex.clone(),
    );
    let proxy = Proxy::start(&format!("http://127.0.0.1:{auth_port}")).await;
    let url = proxy.url();
    let secret = JwtSecret::from_hex(&secret_hex).unwrap();
    let token = secret.token();
    let t = Some(token.as_str());

    let (_, caps) = rpc(
        &url,
        t,
        "engine_exchangeCapabilities",
        json!([["engine_newPayloadV4", "engine_getPayloadV5"]]),
    )
    .await;
    assert!(
        caps["result"]
            .as_array()
            .unwrap()
            .contains(&json!("engine_getPayloadV5")),
        "{caps}"
    );
    let (_, version) = rpc(
        &url,
        t,
        "engine_getClientVersionV1",
        json!([{"code": "SG", "name": "sszgate-test", "version": "0.1.0", "commit": "00000000"}]),
    )
    .await;
    assert_eq!(version["result"][0]["code"], "GE", "{version}");

    let payload = build_block_over_json(&url, t, &head, timestamp).await;
    let new_head = payload["blockHash"].as_str().unwrap().to_string();
    let state =
        json!({"headBlockHash": new_head, "safeBlockHash": head, "finalizedBlockHash": head});
    let (_, fcu) = rpc(&url, t, "engine_forkchoiceUpdatedV3", json!([state, null])).await;
    assert_eq!(fcu["result"]["payloadStatus"]["status"], "VALID", "{fcu}");
    // A call without a token: geth's 401 comes back through the proxy as it is.
    let (code, _) = rpc(&url, None, "engine_exchangeCapabilities", json!([[]])).await;
    assert_eq!(code, 401);

    let (db, _keep) = proxy.finish().await;
    let rows: Vec<Row> = db
        .prepare("SELECT coalesce(method, '?'), status, payload_status, block_number, block_hash, blob_count FROM calls ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let methods: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        methods,
        [
            "engine_exchangeCapabilities",
            "engine_getClientVersionV1",
            "engine_forkchoiceUpdatedV3",
            "engine_getPayloadV5",
            "engine_newPayloadV4",
            "engine_forkchoiceUpdatedV3",
            "engine_exchangeCapabilities"
        ]
    );
    assert_eq!(rows[2].2.as_deref(), Some("VALID"));
    assert_eq!(
        (rows[3].3, rows[3].4.as_deref(), rows[3].5),
        (Some(1), Some(new_head.as_str()), Some(0))
    );
    assert_eq!(
        (rows[4].2.as_deref(), rows[4].3, rows[4].4.as_deref()),
        (Some("VALID"), Some(1), Some(new_head.as_str()))
    );
    assert_eq!(rows[6].1, 401);
}

/// REST-SSZ from the CL side, JSON-RPC on geth's side: the bridge builds and imports a block.
#[tokio::test]
async fn real_geth_behind_the_bridge_speaks_rest_ssz() {
    use sszgate_engine::{
        Fork, Message, MessageKind,
        message::{BuiltPayload, Forkchoice, NewPayload},
        method,
    };
    let Some(node) = start_geth().await else {
        return;
    };
    let proxy = Proxy::start_bridge(
        &format!("http://127.0.0.1:{}", node.auth_port),
        &node.secret_hex,
    )
    .await;
    let secret = JwtSecret::from_hex(&node.secret_hex).unwrap();
    let rest = |method: &str, path: &str, fork: Option<&str>, body: Vec<u8>| {
        let mut r = Request::builder()
            .method(method)
            .uri(format!("{}{path}", proxy.url()))
            .header("authorization", format!("Bearer {}", secret.token()))
            .header("content-type", "application/octet-stream");
        if let Some(fork) = fork {
            r = r.header("eth-execution-version", fork);
        }
        r.body(Full::new(Bytes::from(body))).unwrap()
    };
    let fcu_method = method::by_name("engine_forkchoiceUpdatedV3").unwrap();
    let (attributes, root) = next_attributes(node.timestamp);
    let params = json!([
        {"headBlockHash": node.head, "safeBlockHash": node.head, "finalizedBlockHash": node.head},
        attributes
    ]);
    let fcu = Message::from_json(
        fcu_method,
        Fork::Osaka,
        MessageKind::Forkchoice,
        params.to_string().as_bytes(),
    )
    .unwrap();
    let (code, _, body) = send(
        rest(
            "POST",
            "/engine/v1/forkchoice",
            Some("osaka"),
            fcu.to_ssz(Fork::Osaka).unwrap(),
        ),
        true,
    )
    .await;
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let Message::ForkchoiceResponse(answer) = Message::from_ssz(
        fcu_method,
        Fork::Osaka,
        MessageKind::ForkchoiceResponse,
        &body,
    )
    .unwrap() else {
        panic!()
    };
    assert!(answer.payload_status.status.is_valid());
    let id = answer.payload_id.expect("geth started a build");
    tokio::time::sleep(Duration::from_millis(600)).await;

    let (code, headers, body) = send(
        rest(
            "GET",
            &format!("/engine/v1/payloads/{}", id),
            Some("osaka"),
            vec![],
        ),
        true,
    )
    .await;
    assert_eq!(
        (code.as_u16(), headers["cache-control"].to_str().unwrap()),
        (200, "no-store")
    );
    let get = method::by_name("engine_getPayloadV5").unwrap();
    let Message::BuiltPayload(BuiltPayload::V5(built)) =
        Message::from_ssz(get, Fork::Osaka, MessageKind::BuiltPayload, &body).unwrap()
    else {
        panic!()
    };
    let payload = built.execution_payload;
    assert_eq!(payload.payload_inner.payload_inner.block_number, 1);

    let new_head = payload.payload_inner.payload_inner.block_hash;
    let envelope = Message::NewPayload(NewPayload::Prague(
        payload,
        vec![],
        root.parse().unwrap(),
        built.execution_requests,
    ))
    .to_ssz(Fork::Osaka)
    .unwrap();
    let (code, _, body) = send(
        rest("POST", "/engine/v1/payloads", Some("osaka"), envelope),
        true,
    )
    .await;
    assert_eq!(code, 200);
    let np = method::by_name("engine_newPayloadV4").unwrap();
    let Message::PayloadStatus(status) =
        Message::from_ssz(np, Fork::Osaka, MessageKind::PayloadStatus, &body).unwrap()
    else {
        panic!()
    };
    assert!(status.status.is_valid(), "{status:?}");
    assert_eq!(status.latest_valid_hash, Some(new_head));

    let fcu = Message::Forkchoice(Forkchoice {
        state: alloy_rpc_types_engine::ForkchoiceState {
            head_block_hash: new_head,
            safe_block_hash: node.head.parse().unwrap(),
            finalized_block_hash: node.head.parse().unwrap(),
        },
        attributes: None,
        custody_columns: None,
    });
    let (code, _, body) = send(
        rest(
            "POST",
            "/engine/v1/forkchoice",
            Some("osaka"),
            fcu.to_ssz(Fork::Osaka).unwrap(),
        ),
        false,
    )
    .await;
    let Message::ForkchoiceResponse(answer) = Message::from_ssz(
        fcu_method,
        Fork::Osaka,
        MessageKind::ForkchoiceResponse,
        &body,
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(code, 200);
    assert!(answer.payload_status.status.is_valid());

    let (code, _, body) = send(rest("GET", "/engine/v1/capabilities", None, vec![]), false).await;
    let doc: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(code, 200);
    assert!(
        doc["supported_forks"]
            .as_array()
            .unwrap()
            .contains(&json!("osaka")),
        "{doc}"
    );

    let (db, _keep) = proxy.finish().await;
    let modes: Vec<(String, String, i64)> = db
        .prepare("SELECT mode, coalesce(method, '?'), status FROM calls ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(modes.len(), 5);
    assert!(
        modes
            .iter()
            .all(|(mode, _, status)| mode == "bridge" && *status == 200),
        "{modes:?}"
    );
    assert_eq!(modes[2].1, "engine_newPayloadV4");
}

/// A JSON-RPC CL, REST-SSZ in the middle, geth at the end: sszgate (JSON-RPC -> REST-SSZ) in
/// front of sszgate (REST-SSZ -> JSON-RPC) in front of geth. Every call crosses the middle
/// link as REST-SSZ and comes back to the CL as the JSON-RPC it expects, errors included.
#[tokio::test]
async fn json_rpc_cl_over_a_rest_ssz_link_to_real_geth() {
    let Some(node) = start_geth().await else {
        return;
    };
    let inner = Proxy::start_bridge(
        &format!("http://127.0.0.1:{}", node.auth_port),
        &node.secret_hex,
    )
    .await;
    let jwt = JwtSecret::from_hex(&node.secret_hex).unwrap();
    let outer = Proxy::start_full(
        &inner.url(),
        Duration::from_secs(5),
        64 << 20,
        sszgate_gateway::UpstreamTransport::Ssz,
        Some(jwt.clone()),
    )
    .await;
    let url = outer.url();
    let token = jwt.token();
    let t = Some(token.as_str());
    build_block_over_json(&url, t, &node.head, node.timestamp).await;
    // An unknown payload id: geth's error becomes a problem type in the middle and the same
    // JSON-RPC code again for the CL (whatever code geth picks for it).
    let direct = format!("http://127.0.0.1:{}", node.auth_port);
    let (_, expected) = rpc(
        &direct,
        t,
        "engine_getPayloadV5",
        json!(["0x00000000000000ff"]),
    )
    .await;
    let (_, unknown) = rpc(
        &url,
        t,
        "engine_getPayloadV5",
        json!(["0x00000000000000ff"]),
    )
    .await;
    assert!(expected["error"]["code"].is_i64(), "{expected}");
    assert_eq!(
        (
            unknown["error"]["code"].clone(),
            unknown["error"]["message"].clone()
        ),
        (
            expected["error"]["code"].clone(),
            expected["error"]["message"].clone()
        )
    );
    // exchangeCapabilities stays JSON-RPC end to end.
    let (_, caps) = rpc(
        &url,
        t,
        "engine_exchangeCapabilities",
        json!([["engine_newPayloadV4"]]),
    )
    .await;
    assert!(
        caps["result"]
            .as_array()
            .is_some_and(|m| m.contains(&json!("engine_newPayloadV4"))),
        "{caps}"
    );

    let (outer_db, _a) = outer.finish().await;
    let (inner_db, _b) = inner.finish().await;
    let rows = |db: &rusqlite::Connection| -> Vec<(String, String, String)> {
        db.prepare("SELECT mode, transport, coalesce(method, '?') FROM calls ORDER BY seq")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let outer_rows = rows(&outer_db);
    let inner_rows = rows(&inner_db);
    assert_eq!(outer_rows.len(), 5, "{outer_rows:?}");
    assert!(
        outer_rows[..4]
            .iter()
            .all(|(mode, transport, _)| mode == "bridge" && transport == "json-rpc"),
        "{outer_rows:?}"
    );
    assert_eq!(outer_rows[4].0, "snoop", "exchangeCapabilities is relayed");
    // The middle link carried REST-SSZ for the four translated calls.
    let rest: Vec<&(String, String, String)> =
        inner_rows.iter().filter(|r| r.1 == "rest-ssz").collect();
    assert_eq!(rest.len(), 4, "{inner_rows:?}");
    assert_eq!(rest[2].2, "engine_newPayloadV4");
}
