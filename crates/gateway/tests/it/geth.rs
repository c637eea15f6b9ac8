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

use crate::{Proxy, try_send};

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

fn free_port() -> u16 {
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

async fn rpc(url: &str, token: Option<&str>, method: &str, params: Value) -> (u16, Value) {
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

#[tokio::test]
async fn real_geth_through_the_proxy_builds_and_imports_a_block() {
    let Some(geth) = geth_binary() else {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !in_ci,
            "geth is missing under CI: run scripts/install-geth.sh"
        );
        eprintln!(
            "\n!!!!!!!! SKIPPED: real-geth test: no geth (scripts/install-geth.sh, or SSZGATE_GETH) !!!!!!!!\n"
        );
        return;
    };
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
    let (auth_port, http_port) = (free_port(), free_port());
    let log = std::fs::File::create(d.join("geth.log")).unwrap();
    let _geth = Geth(
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

    let root = format!("0x{}", "02".repeat(32));
    let attributes = json!({
        "timestamp": format!("0x{:x}", timestamp + 12),
        "prevRandao": format!("0x{}", "01".repeat(32)),
        "suggestedFeeRecipient": format!("0x{}", "11".repeat(20)),
        "withdrawals": [],
        "parentBeaconBlockRoot": root,
    });
    let state = json!({"headBlockHash": head, "safeBlockHash": head, "finalizedBlockHash": head});
    let (_, fcu) = rpc(
        &url,
        t,
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
    let (_, built) = rpc(&url, t, "engine_getPayloadV5", json!([payload_id])).await;
    let payload = built["result"]["executionPayload"].clone();
    assert_eq!(payload["blockNumber"], "0x1", "{built}");
    assert_eq!(payload["parentHash"], head.as_str());
    let requests = built["result"]["executionRequests"].clone();
    let (_, status) = rpc(
        &url,
        t,
        "engine_newPayloadV4",
        json!([payload, [], root, requests]),
    )
    .await;
    assert_eq!(status["result"]["status"], "VALID", "{status}");
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
