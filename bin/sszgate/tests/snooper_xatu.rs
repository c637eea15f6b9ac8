//! sszgate's `--xatu-*` output against a real xatu server (v1.8.1, built by
//! `../shared/tools/xatu/build.sh`): rpc-snooper and sszgate, chained in front of a real geth
//! so that both see the very same calls, publish to the same server, and the server's
//! events are equal field by field; and with the server stopped, the relay goes on, the
//! events are dropped and counted, and publishing resumes once it is back; with `--xatu-tls`,
//! both publish through a TLS terminator (a CA of the test's own, given in `SSL_CERT_FILE`),
//! and a server whose certificate is not trusted is refused.
//!
//! Differences from rpc-snooper's events, by design: `meta.client.implementation`
//! (`sszgate`) and `meta.client.version` (sszgate's); per event, `event.id` (a fresh UUID),
//! `event.date_time`, `requested_at` and `duration_ms` (each proxy's own clock and round
//! trip: rpc-snooper's includes sszgate's relay here); the `sszgate_*` labels sszgate adds
//! (its facts of the call, which xatu's messages have no field for) — the test leaves exactly
//! those out, and checks the labels' values on their own.
//!
//! Needs geth, rpc-snooper (`SSZGATE_RPC_SNOOPER` or `~/.cache/rpc-snooper-6452c11`), the
//! xatu binary (`SSZGATE_XATU` or `~/.cache/xatu-v1.8.1/bin/xatu`) and python3. Locally a
//! missing one skips loudly; under `CI=true` it is a failure.

mod common;

use std::{
    collections::BTreeMap,
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde_json::Value;
use sszgate_drive::{
    DriveConfig, Driver, EngineTransport, EthRpc,
    devnet::{Devnet, DevnetConfig, ElKind, find_geth},
};
use sszgate_engine::Fork;
use sszgate_gateway::JwtSecret;

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

fn skip(what: &str, install: &str) {
    assert!(!in_ci(), "{what} is missing under CI: {install}");
    eprintln!("\n!!!!!!!! SKIPPED: snooper xatu test: no {what} ({install}) !!!!!!!!\n");
}

/// A built tool: `env` if set, else `default` under `$HOME`; a loud skip when absent.
fn tool(env: &str, default: &str, install: &str) -> Option<PathBuf> {
    let path = std::env::var_os(env)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(default)))
        .filter(|p| p.exists());
    if path.is_none() {
        skip(default, install);
    }
    path
}

/// rpc-snooper's build directory and the xatu binary, or a loud skip.
fn snooper_and_xatu() -> Option<(PathBuf, PathBuf)> {
    let build = "bash ../shared/tools/rpc-snooper/build.sh, or SSZGATE_RPC_SNOOPER";
    let rpc_snooper = tool("SSZGATE_RPC_SNOOPER", ".cache/rpc-snooper-6452c11", build)?;
    let build = "bash ../shared/tools/xatu/build.sh, or SSZGATE_XATU";
    let xatu = tool("SSZGATE_XATU", ".cache/xatu-v1.8.1/bin/xatu", build)?;
    Some((rpc_snooper, xatu))
}

fn shared_tools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/tools")
}

/// A xatu server from the shared kit's `run.sh`, killed on drop.
struct XatuServer {
    info: Value,
    run: PathBuf,
    xatu: PathBuf,
    server: Option<u32>,
    restarted: Option<KillOnDrop>,
}

impl XatuServer {
    fn start(xatu: &Path, run: &Path) -> XatuServer {
        let out = Command::new("bash")
            .arg(shared_tools().join("xatu/run.sh"))
            .env("XATU", xatu)
            .env("RUN", run)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "run.sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let info: Value = serde_json::from_slice(&out.stdout).unwrap();
        let server = info["pids"]["xatu"].as_u64().map(|p| p as u32);
        XatuServer {
            info,
            run: run.to_path_buf(),
            xatu: xatu.to_path_buf(),
            server,
            restarted: None,
        }
    }

    fn grpc(&self) -> String {
        self.info["grpc"].as_str().unwrap().to_string()
    }

    /// Stops the server (the receiver stays), and waits until its port refuses.
    fn stop(&mut self) {
        if let Some(pid) = self.server.take() {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            wait_for("the server's port closed", || {
                TcpStream::connect(self.grpc()).is_err()
            });
        }
    }

    /// Starts the server again on the same config (the same port).
    fn restart(&mut self) {
        let log = std::fs::File::create(self.run.join("xatu2.log")).unwrap();
        let child = Command::new(&self.xatu)
            .args(["server", "--config"])
            .arg(self.run.join("server.yaml"))
            .args(["--log-format", "json"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.restarted = Some(KillOnDrop::new(child));
        wait_for("the server's port open again", || {
            TcpStream::connect(self.grpc()).is_ok()
        });
    }

    /// Every event the server has written, as JSON.
    fn events(&self) -> Vec<Value> {
        let text = common::read_log(self.run.join("events.ndjson")).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The events from the client named `name`.
    fn events_from(&self, name: &str) -> Vec<Value> {
        let from = |e: &Value| e["meta"]["client"]["name"] == name;
        self.events().into_iter().filter(from).collect()
    }
}

impl Drop for XatuServer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(shared_tools().join("xatu/down.sh"))
            .arg(&self.run)
            .status();
        if let Some(pid) = self.server {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
    }
}

/// Waits (at most two minutes) until `check` holds.
fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Starts `program args` with stdout and stderr to `log`; returns once `port` listens.
fn start(program: &Path, args: &[String], log: &Path, port: u16) -> Child {
    let file = std::fs::File::create(log).unwrap();
    let child = Command::new(program)
        .args(args)
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&format!("{program:?} on port {port}"), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    child
}

fn read(path: &Path) -> String {
    common::read_log(path).unwrap_or_default()
}

/// rpc-snooper's xatu flags for an instance named `name` publishing to `grpc`.
fn xatu_flags(name: &str, grpc: &str) -> Vec<String> {
    format!(
        "--xatu-enabled --xatu-name {name} --xatu-network-name testnet --xatu-network-id 1337 \
         --xatu-output xatu:{grpc} --xatu-batch-timeout 200ms --xatu-label role=test"
    )
    .split_whitespace()
    .map(str::to_string)
    .collect()
}

/// An event with what legitimately differs between two proxies left out (see the header).
fn comparable(event: &Value) -> Value {
    let mut e = event.clone();
    let name = e["event"]["name"].as_str().unwrap().to_string();
    for field in ["date_time", "id"] {
        e["event"].as_object_mut().unwrap().remove(field);
    }
    for field in ["requested_at", "duration_ms"] {
        e[&name].as_object_mut().unwrap().remove(field);
    }
    let meta = e["meta"].as_object_mut().unwrap();
    meta.remove("server");
    let client = meta["client"].as_object_mut().unwrap();
    for field in ["name", "version", "implementation"] {
        client.remove(field);
    }
    if let Some(labels) = client.get_mut("labels").and_then(Value::as_object_mut) {
        labels.retain(|key, _| !key.starts_with("sszgate_"));
    }
    e
}

/// The events of `events` by kind, comparable, sorted.
fn by_kind(events: &[Value]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for e in events {
        let kind = e["event"]["name"].as_str().unwrap().to_string();
        out.entry(kind).or_default().push(comparable(e).to_string());
    }
    out.values_mut().for_each(|v| v.sort());
    out
}

/// A JSON-RPC call with a fresh JWT to `addr`; the answer's body.
fn engine_call(addr: &str, secret: &JwtSecret, body: &str) -> String {
    let bearer = format!("Bearer {}", secret.token());
    let headers = [
        ("content-type", "application/json"),
        ("authorization", bearer.as_str()),
    ];
    let (status, answer) = common::request(addr, "POST", "/", &headers, body.as_bytes());
    assert_eq!(status, 200, "{body}: {}", String::from_utf8_lossy(&answer));
    String::from_utf8(answer).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpc_snooper_and_sszgate_publish_equal_events_to_a_real_xatu_server() {
    if find_geth(Path::new(".")).is_none() {
        return skip("geth", "scripts/install-geth.sh, or SSZGATE_GETH");
    }
    let Some((rpc_snooper, xatu)) = snooper_and_xatu() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = XatuServer::start(&xatu, &dir.path().join("xatu"));
    let config = DevnetConfig {
        dir: dir.path().join("devnet"),
        el: ElKind::Geth,
        fork: Fork::Osaka,
        max_blobs: 6,
        proxy_binary: None,
        lodestar: None,
    };
    let devnet = Devnet::up(&config).await.unwrap();
    let state = devnet.state.clone();
    let secret_hex = state.secret_hex().unwrap();
    let jwt_file = dir.path().join("jwt.hex");
    std::fs::write(&jwt_file, &secret_hex).unwrap();
    let jwt_file = jwt_file.to_str().unwrap().to_string();
    // driver -> rpc-snooper -> sszgate -> geth: both proxies see the same calls.
    let (sg_port, rs_port) = (common::free_port(), common::free_port());
    let mut sg_args = vec![
        format!("-b=127.0.0.1"),
        format!("-p={sg_port}"),
        "--no-color".into(),
    ];
    sg_args.extend([
        "--store".into(),
        "none".into(),
        "--jwt-secret".into(),
        jwt_file.clone(),
    ]);
    sg_args.extend(xatu_flags("sszgate-1", &server.grpc()));
    sg_args.push(state.engine_url.clone());
    let sg_log = dir.path().join("sszgate.log");
    let sszgate = KillOnDrop::new(start(
        Path::new(env!("CARGO_BIN_EXE_sszgate")),
        &[vec!["snooper".into()], sg_args].concat(),
        &sg_log,
        sg_port,
    ));
    let mut rs_args = vec![
        format!("-b=127.0.0.1"),
        format!("-p={rs_port}"),
        "--no-color".into(),
    ];
    rs_args.extend(["--jwt-secret".into(), jwt_file]);
    rs_args.extend(xatu_flags("rpc-snooper-1", &server.grpc()));
    rs_args.push(format!("http://127.0.0.1:{sg_port}"));
    let rs_log = dir.path().join("rpc-snooper.log");
    let snooper = KillOnDrop::new(start(
        &rpc_snooper.join("bin/snooper"),
        &rs_args,
        &rs_log,
        rs_port,
    ));
    // Both publish only once they know the EL's version, as rpc-snooper does.
    wait_for("both to know the EL's version", || {
        read(&sg_log).contains("fetched execution metadata")
            && read(&rs_log).contains("fetched execution metadata")
    });

    let secret = JwtSecret::from_hex(&secret_hex).unwrap();
    let front = format!("http://127.0.0.1:{rs_port}");
    let engine = sszgate_drive::engine_client(&front, EngineTransport::Json, secret.clone(), None);
    let eth = EthRpc::new(&state.eth_url);
    let mut driver = Driver::start(engine, eth, None, DriveConfig::default())
        .await
        .unwrap();
    for _ in 0..3 {
        driver
            .step()
            .await
            .expect("a VALID block through both proxies");
    }
    // getBlobs: hashes geth does not have, in both versions (answers differ by version).
    let addr = format!("127.0.0.1:{rs_port}");
    let hash = |b: u8| format!("\"0x01{}\"", format!("{b:02x}").repeat(31));
    let mut sent = Vec::new();
    for (method, hashes) in [
        ("engine_getBlobsV1", [hash(1), hash(2)]),
        ("engine_getBlobsV2", [hash(3), hash(4)]),
    ] {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"{method}","params":[[{}]]}}"#,
            hashes.join(",")
        );
        engine_call(&addr, &secret, &body);
        sent.push((hashes[0].trim_matches('"').to_string(), body.len()));
    }

    let settled = || {
        let (rs, sg) = (
            server.events_from("rpc-snooper-1"),
            server.events_from("sszgate-1"),
        );
        let kinds = by_kind(&sg);
        let blobs = kinds.get("EXECUTION_ENGINE_GET_BLOBS").map_or(0, Vec::len);
        let payloads = kinds
            .get("EXECUTION_ENGINE_NEW_PAYLOAD")
            .map_or(0, Vec::len);
        rs.len() == sg.len() && blobs >= 2 && payloads >= 3
    };
    wait_for("both proxies' events at the server", settled);
    let (rs, sg) = (
        server.events_from("rpc-snooper-1"),
        server.events_from("sszgate-1"),
    );
    assert_eq!(
        by_kind(&sg),
        by_kind(&rs),
        "sszgate's events vs rpc-snooper's"
    );
    let first = &sg[0];
    assert_eq!(first["meta"]["client"]["implementation"], "sszgate");
    assert_eq!(first["meta"]["client"]["labels"]["role"], "test");
    assert_eq!(first["meta"]["client"]["ethereum"]["network"]["id"], "1337");
    assert!(first["meta"]["client"]["ethereum"]["execution"]["implementation"].is_string());
    let valid = sg
        .iter()
        .filter(|e| e["EXECUTION_ENGINE_NEW_PAYLOAD"]["status"] == "VALID");
    assert!(valid.count() >= 3, "{sg:?}");
    // sszgate's own facts ride in its labels: each getBlobs event names the bytes of the very
    // request sent, and every event a status and sizes.
    for (first_hash, len) in sent {
        let event = sg
            .iter()
            .find(|e| e["EXECUTION_ENGINE_GET_BLOBS"]["versioned_hashes"][0] == first_hash)
            .unwrap_or_else(|| panic!("no getBlobs event for {first_hash}: {sg:?}"));
        let labels = &event["meta"]["client"]["labels"];
        assert_eq!(labels["sszgate_request_bytes"], len.to_string(), "{event}");
    }
    for event in &sg {
        let labels = &event["meta"]["client"]["labels"];
        assert_eq!(labels["sszgate_http_status"], "200", "{event}");
        for key in ["sszgate_response_bytes", "sszgate_duration_us"] {
            let value = labels[key].as_str().and_then(|v| v.parse::<u64>().ok());
            assert!(value.is_some_and(|v| v > 0), "{key} in {event}");
        }
    }
    assert!(rs.iter().all(|e| {
        e["meta"]["client"]["labels"]
            .as_object()
            .is_some_and(|l| !l.keys().any(|k| k.starts_with("sszgate_")))
    }));
    drop(snooper); // rpc-snooper ends on SIGTERM with the signal's status: killed instead
    sszgate.terminate();
    drop(devnet);
}

/// A newPayloadV4 call for block `number` (the shared kit's stand-in EL answers VALID).
fn new_payload(number: u64) -> String {
    let hash = format!("0x{:064x}", number);
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"engine_newPayloadV4","params":[{{"blockNumber":"0x{number:x}","blockHash":"{hash}","parentHash":"{hash}","gasUsed":"0x0","gasLimit":"0x1","transactions":[]}},[],"{hash}",[]]}}"#
    )
}

/// `text` without ANSI colour sequences (`ESC [ … m`).
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|c| *c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}

/// The largest `dropped_total=N` the log shows.
fn dropped_total(log: &str) -> u64 {
    plain(log)
        .split("dropped_total=")
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn a_stopped_xatu_server_drops_and_counts_and_publishing_resumes() {
    let build = "bash ../shared/tools/xatu/build.sh, or SSZGATE_XATU";
    let Some(xatu) = tool("SSZGATE_XATU", ".cache/xatu-v1.8.1/bin/xatu", build) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut server = XatuServer::start(&xatu, &dir.path().join("xatu"));
    let (el_port, _el) = stand_in_el();
    let port = common::free_port();
    let mut args = vec![
        "snooper".to_string(),
        format!("-p={port}"),
        "--no-color".into(),
    ];
    args.extend(["--store".into(), "none".into(), "--hide-bodies".into()]);
    args.extend(xatu_flags("sszgate-1", &server.grpc()));
    args.extend(["--xatu-export-timeout".into(), "2s".into()]);
    args.push(format!("http://127.0.0.1:{el_port}"));
    let log = dir.path().join("sszgate.log");
    let sszgate = KillOnDrop::new(start(
        Path::new(env!("CARGO_BIN_EXE_sszgate")),
        &args,
        &log,
        port,
    ));
    let addr = format!("127.0.0.1:{port}");
    wait_for("the EL's version", || {
        read(&log).contains("fetched execution metadata")
    });
    let block = |e: &Value| {
        e["EXECUTION_ENGINE_NEW_PAYLOAD"]["block_number"]
            .as_str()
            .map(|s| s.parse::<u64>().unwrap())
    };
    common::post(&addr, &new_payload(1));
    wait_for("the first event", || {
        server.events_from("sszgate-1").len() == 1
    });

    server.stop();
    for number in 100..120 {
        let answer = common::post(&addr, &new_payload(number));
        assert!(
            answer.contains("\"VALID\""),
            "the relay goes on while xatu is down: {answer}"
        );
    }
    wait_for("20 events dropped and counted", || {
        dropped_total(&read(&log)) == 20
    });

    server.restart();
    let mut number = 200;
    wait_for("publishing to resume", || {
        number += 1;
        common::post(&addr, &new_payload(number));
        std::thread::sleep(Duration::from_millis(300));
        server
            .events_from("sszgate-1")
            .iter()
            .any(|e| block(e).is_some_and(|n| n > 200))
    });
    // A probe sent while the restarted server was not yet taking events may be dropped too:
    // every probe either arrives or is counted, on top of the 20 dropped while it was down.
    let probes = number - 200;
    let mut seen: Vec<u64> = Vec::new();
    wait_for("every probe to arrive or be counted dropped", || {
        seen = server
            .events_from("sszgate-1")
            .iter()
            .filter_map(block)
            .collect();
        let arrived = seen
            .iter()
            .filter(|n| **n > 200)
            .collect::<std::collections::BTreeSet<_>>()
            .len() as u64;
        dropped_total(&read(&log)) == 20 + probes - arrived
    });
    assert!(
        seen.iter().all(|n| !(100..120).contains(n)),
        "dropped events arrived: {seen:?}"
    );
    sszgate.terminate();
}

/// The kit's stand-in EL (`fake_el.py`: VALID for every newPayload, a client version) on a
/// free port, once it listens; killed when the handle drops.
fn stand_in_el() -> (u16, KillOnDrop) {
    let port = common::free_port();
    let el = Command::new("python3")
        .arg(shared_tools().join("rpc-snooper/fake_el.py"))
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let el = KillOnDrop::new(el);
    wait_for("the stand-in EL", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    (port, el)
}

/// A child process killed when the test ends, however it ends (a failed assertion
/// included), unless [`KillOnDrop::terminate`] ended it first.
struct KillOnDrop(Option<Child>);

impl KillOnDrop {
    fn new(child: Child) -> KillOnDrop {
        KillOnDrop(Some(child))
    }

    /// SIGTERM, and a check that the process ended cleanly.
    fn terminate(mut self) {
        if let Some(child) = self.0.take() {
            common::terminate(child);
        }
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A TLS terminator on a free loopback port (ALPN `h2`, a certificate for 127.0.0.1 signed by
/// a CA of its own), each connection relayed in the clear to `upstream`; and the CA in PEM,
/// for a client's `SSL_CERT_FILE`.
async fn tls_terminator(upstream: String) -> (u16, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca.self_signed(&ca_key).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&leaf_key, &ca, &ca_key)
        .unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, upstream) = (acceptor.clone(), upstream.clone());
            tokio::spawn(async move {
                // A handshake the client refuses (an untrusted certificate) just ends here.
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let Ok(mut plain) = tokio::net::TcpStream::connect(&upstream).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    (port, ca.pem())
}

/// `--xatu-tls`: rpc-snooper and sszgate both publish over TLS to a real xatu server (behind a
/// TLS terminator whose CA they are given in `SSL_CERT_FILE`), and the server has an event
/// from each; sszgate without that CA refuses the server's certificate, drops and counts its
/// events, and keeps relaying.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_publish_over_tls_and_an_untrusted_server_is_refused() {
    let Some((rpc_snooper, xatu)) = snooper_and_xatu() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = XatuServer::start(&xatu, &dir.path().join("xatu"));
    let (tls_port, ca) = tls_terminator(server.grpc()).await;
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca).unwrap();
    let (el_port, _el) = stand_in_el();
    let tls_output = format!("127.0.0.1:{tls_port}");
    let sszgate = Path::new(env!("CARGO_BIN_EXE_sszgate"));
    let snooper = rpc_snooper.join("bin/snooper");
    let middles = [
        ("sszgate-tls", sszgate, Some(&ca_file)),
        ("rpc-snooper-tls", snooper.as_path(), Some(&ca_file)),
        ("sszgate-untrusting", sszgate, None),
    ];
    let mut running = Vec::new();
    for (name, program, ca) in middles {
        let port = common::free_port();
        let mut args: Vec<String> = Vec::new();
        if program == sszgate {
            args.extend(["snooper", "--store", "none"].map(String::from));
        }
        args.extend([
            format!("-p={port}"),
            "--no-color".into(),
            "--xatu-tls".into(),
        ]);
        args.extend(xatu_flags(name, &tls_output));
        args.extend(["--xatu-export-timeout".into(), "5s".into()]);
        args.push(format!("http://127.0.0.1:{el_port}"));
        let log = dir.path().join(format!("{name}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let mut command = Command::new(program);
        command
            .args(&args)
            .stdout(file.try_clone().unwrap())
            .stderr(file);
        match ca {
            Some(ca) => command.env("SSL_CERT_FILE", ca),
            // The system's roots, which do not hold the terminator's CA.
            None => command.env_remove("SSL_CERT_FILE"),
        };
        let child = KillOnDrop::new(command.stdin(Stdio::null()).spawn().unwrap());
        wait_for(&format!("{name} on port {port}"), || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        running.push((name, port, log, child));
    }
    let mut number = 1;
    wait_for("an event over TLS from each trusting middle", || {
        for (_, port, ..) in &running {
            let answer = common::post(&format!("127.0.0.1:{port}"), &new_payload(number));
            assert!(answer.contains("\"VALID\""), "{answer}");
        }
        number += 1;
        std::thread::sleep(Duration::from_millis(300));
        ["sszgate-tls", "rpc-snooper-tls"]
            .iter()
            .all(|name| !server.events_from(name).is_empty())
    });
    let (_, _, untrusting_log, _) = &running[2];
    wait_for("the untrusting middle's drops counted", || {
        dropped_total(&read(untrusting_log)) > 0
    });
    assert!(server.events_from("sszgate-untrusting").is_empty());
    let log = plain(&read(untrusting_log));
    assert!(
        log.contains("certificate") || log.contains("UnknownIssuer"),
        "the refusal says why: {log}"
    );
    for (_, _, _, child) in running {
        drop(child);
    }
}
