//! The `sszgate` binary as a user runs it: real process, stdin/stdout, exit codes.

mod common;

use std::{
    io::Write,
    process::{Command, Output, Stdio},
};

use common::{post, start_proxy, terminate};

fn sszgate(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sszgate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sszgate starts");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn version_and_help() {
    let out = sszgate(&["--version"], b"");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("sszgate {}", env!("CARGO_PKG_VERSION"))
    );
    let out = sszgate(&["--help"], b"");
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(help.contains("convert") && help.contains("[lab]"), "{help}");
    assert!(help.contains("Start with `sszgate demo`"), "{help}");
    // Operator commands are listed before the lab's.
    let at = |name: &str| help.find(&format!("\n  {name} ")).unwrap();
    assert!(
        at("report") < at("demo") && at("proxy") < at("bench"),
        "{help}"
    );
}

#[test]
fn payload_status_json_to_hex_and_back() {
    let json = br#"{"status":"INVALID","latestValidHash":null,"validationError":"bad state root"}"#;
    let out = sszgate(
        &["convert", "--message", "payload-status", "--to", "hex"],
        json,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        "0x0109000000090000000400000062616420737461746520726f6f74"
    );
    let out = sszgate(
        &["convert", "--message", "payload-status"],
        b"0x010900000009000000040000006261642073746174652072 6f6f74",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        back,
        serde_json::json!({"status": "INVALID", "latestValidHash": null, "validationError": "bad state root"})
    );
}

#[test]
fn method_name_picks_version_and_binary_ssz_goes_to_stdout() {
    let z = format!("0x{}", "00".repeat(32));
    let params = format!(
        r#"[{{"headBlockHash":"{z}","safeBlockHash":"{z}","finalizedBlockHash":"{z}"}},null]"#
    );
    let out = sszgate(
        &["convert", "--message", "engine_forkchoiceUpdatedV3"],
        params.as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut expected = vec![0u8; 96];
    expected.extend_from_slice(&100u32.to_le_bytes());
    assert_eq!(out.stdout, expected, "stdout is a pipe: raw SSZ");
    let out = sszgate(
        &[
            "convert",
            "--message",
            "engine_forkchoiceUpdatedV3",
            "--fork",
            "cancun",
            "--from",
            "ssz",
        ],
        &expected,
    );
    let back: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sent: serde_json::Value = serde_json::from_str(&params).unwrap();
    assert_eq!(back, sent);
}

#[test]
fn bad_input_fails_with_a_precise_message() {
    // Truncated SSZ payload status.
    let out = sszgate(
        &["convert", "--message", "payload-status", "--from", "ssz"],
        &[0, 9, 0, 0, 0],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("sszgate: error: converting standard input"),
        "{err}"
    );
    assert!(
        err.contains(
            "invalid SSZ PayloadStatus: . at byte 0: truncated: needs at least 9 bytes, got 5"
        ),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing half-done on stdout");
    // A fork the method does not serve.
    let out = sszgate(
        &[
            "convert",
            "--message",
            "engine_getPayloadV4",
            "--fork",
            "osaka",
            "--response",
        ],
        b"{}",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("engine_getPayloadV4 does not serve fork osaka")
    );
    // Unknown message name.
    let out = sszgate(&["convert", "--message", "nope"], b"{}");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("unknown message \"nope\"")
    );
    // A missing file names the file.
    let out = sszgate(
        &[
            "convert",
            "--message",
            "payload-status",
            "/nonexistent/x.ssz",
        ],
        b"",
    );
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("reading /nonexistent/x.ssz")
    );
}

/// A loopback EL answering every request with `body` (the EL of the proxy test).
fn tiny_el(body: &'static str) -> std::net::SocketAddr {
    common::CountingEl::start("", std::sync::Arc::new(body.as_bytes().to_vec())).addr
}

const VALID: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"status":"VALID","latestValidHash":null,"validationError":null}}"#;

/// Three newPayloadV1 calls through the proxy at `listen`, each answered VALID.
fn three_calls(listen: &str) {
    for id in 1..=3 {
        let answer = post(
            listen,
            &format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"engine_newPayloadV1","params":[{{}}]}}"#
            ),
        );
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with(r#""validationError":null}}"#), "{answer}");
    }
}

/// The proxy as a user runs it: flags, a real EL socket, SIGTERM, and every record written.
#[test]
fn proxy_relays_records_and_drains_on_sigterm() {
    let el = tiny_el(VALID);
    let dir = std::env::temp_dir().join(format!("sszgate-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (child, listen) = start_proxy(
        el,
        &[
            "--store".into(),
            format!("sqlite:{}", dir.join("calls.db").display()),
            "--store".into(),
            format!("jsonl:{}", dir.join("calls.jsonl").display()),
            "--label".into(),
            "node=cli-test".into(),
        ],
    );
    three_calls(&listen);
    // SIGTERM: the proxy drains and writes what it recorded before it exits.
    terminate(child);
    let jsonl = std::fs::read_to_string(dir.join("calls.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{jsonl}");
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["method"], "engine_newPayloadV1");
        assert_eq!(line["payload_status"], "VALID");
        assert_eq!(line["rpc_id"], (i + 1).to_string());
        assert_eq!(line["labels"], r#"{"node":"cli-test"}"#);
    }
    let db = rusqlite::Connection::open(dir.join("calls.db")).unwrap();
    let count: i64 = db
        .query_row(
            "SELECT count(*) FROM calls WHERE payload_status = 'VALID'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(count, 3);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--store clickhouse:` as a user runs it against a real server: the rows carry the node
/// and network given, and `sszgate report` reads them back into a report.
#[test]
fn proxy_ships_to_clickhouse_and_report_reads_it() {
    use sszgate_record::clickhouse::test_server::ClickHouseServer;
    let Some(server) = ClickHouseServer::start() else {
        return;
    };
    let el = tiny_el(VALID);
    let dir = tempfile::tempdir().unwrap();
    let (child, listen) = start_proxy(
        el,
        &[
            "--store".into(),
            format!("clickhouse:{}", server.url("cli")),
            "--spool-dir".into(),
            dir.path().join("spool").display().to_string(),
            "--node".into(),
            "cli-node".into(),
            "--network".into(),
            "hoodi".into(),
        ],
    );
    three_calls(&listen);
    terminate(child);
    let client = server.client("cli");
    let rows = client
        .execute("SELECT method, payload_status, node, network FROM cli.sszgate_calls ORDER BY seq FORMAT TSV")
        .unwrap();
    assert_eq!(
        rows,
        "engine_newPayloadV1\tVALID\tcli-node\thoodi\n".repeat(3),
        "every call is in ClickHouse, once"
    );
    let out = dir.path().join("report");
    let report = sszgate(
        &[
            "report",
            "--store",
            &format!("clickhouse:{}", server.url("cli")),
            "--group-by",
            "node",
            "--out",
            &out.display().to_string(),
        ],
        b"",
    );
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        markdown.contains("3 calls from clickhouse http://127.0.0.1:"),
        "{markdown}"
    );
    assert!(markdown.contains("| engine_newPayloadV1 |"), "{markdown}");
    assert!(out.join("report.html").exists());
}

#[test]
fn verify_passes_a_real_payload_and_names_the_failed_check_of_a_corrupted_one() {
    use sszgate_engine::{Message, message::NewPayload};
    use sszgate_fixtures::{Fixtures, testdata_dir};
    let dir = tempfile::tempdir().unwrap();
    let np = Fixtures::load(&testdata_dir())
        .unwrap()
        .blocks
        .iter()
        .rev()
        .map(|b| b.new_payload().unwrap())
        .find(|np| matches!(np, NewPayload::Prague(..)))
        .expect("an electra block in testdata");
    let mut files = Vec::new();
    for (name, corrupt) in [("good.json", false), ("bad.json", true)] {
        let mut np = np.clone();
        if corrupt && let NewPayload::Prague(p, ..) = &mut np {
            p.payload_inner.withdrawals.reverse();
        }
        let params = Message::NewPayload(np).to_json_params().unwrap();
        let path = dir.path().join(name);
        std::fs::write(
            &path,
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"engine_newPayloadV4","params":{}}}"#,
                String::from_utf8(params).unwrap()
            ),
        )
        .unwrap();
        files.push(path.display().to_string());
    }
    let out = sszgate(&["verify", &files[0]], b"");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("good.json: ok (block hash"), "{stdout}");
    let out = sszgate(&["verify", &files[0], &files[1]], b"");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout.contains("bad.json: FAILED block-hash: payload.blockHash is"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 of the files failed verification"));
    // A file that is not a request needs --message, and says so.
    let out = sszgate(&["verify", "Cargo.toml"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--message"));
}

/// `sszgate bench proxy` on the repository's testdata, a few rounds: every path is measured
/// (direct, the proxy, the three floor relays) and the proxy (on one worker thread) recorded every
/// call it relayed.
#[test]
fn bench_proxy_measures_every_path_and_the_proxy_records_its_calls() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("proxy.md");
    let data = sszgate_fixtures::testdata_dir();
    let out = sszgate(
        &[
            "bench",
            "proxy",
            "--data",
            data.to_str().unwrap(),
            "--blobs",
            "1",
            "--rounds",
            "2",
            "--small-calls",
            "64",
            "--nginx",
            "none",
            "--out",
            out_file.to_str().unwrap(),
            // The proxy on one relay thread: the flag starts a proxy that relays and records.
            "--proxy-arg=--worker-threads=1",
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Progress on stderr: each case, the small calls, the end (3 cases + the small calls).
    let stderr = String::from_utf8_lossy(&out.stderr);
    for step in [
        "0/4 forkchoiceUpdatedV3, 0 blobs",
        "3/4 64 small calls",
        "4/4 done",
    ] {
        assert!(
            stderr.contains(&format!("sszgate bench proxy: {step}")),
            "no {step:?} in {stderr}"
        );
    }
    let report = std::fs::read_to_string(&out_file).unwrap();
    // Three cases (forkchoiceUpdated, getPayloadV5 and getBlobsV2 with 1 blob), in both
    // tables, each row with a number in every column.
    // With rpc-snooper found (SSZGATE_RPC_SNOOPER, always under CI) a third table follows:
    // its cells are "added (per blob)".
    let (own, peer) = report
        .split_once("rpc-snooper as a peer")
        .unwrap_or((report.as_str(), ""));
    let rows = |prefix: &str| {
        own.lines()
            .filter(|l| l.starts_with(prefix))
            .map(|l| l.split('|').map(str::trim).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    };
    let calls = rows("| getBlobsV2 | 1 |");
    assert_eq!(calls.len(), 2, "{report}");
    for row in &calls {
        for cell in &row[3..row.len() - 1] {
            let number = cell.trim_end_matches("/blob");
            assert!(
                number.parse::<f64>().is_ok(),
                "not a number: {cell:?} in {report}"
            );
        }
    }
    if !peer.is_empty() {
        let peer_rows: Vec<&str> = peer
            .lines()
            .filter(|l| l.starts_with("| getBlobsV2 | 1 |"))
            .collect();
        assert_eq!(peer_rows.len(), 1, "{report}");
        // The floor relays are measured in the same rounds as the snoopers.
        assert!(
            peer.contains("copy relay added | splice relay added | splice+tee relay added |"),
            "{report}"
        );
        let cells: Vec<&str> = peer_rows[0].split('|').map(str::trim).collect();
        for cell in &cells[3..cells.len() - 1] {
            let first = cell.split_whitespace().next().unwrap_or_default();
            assert!(
                first.parse::<f64>().is_ok(),
                "not a number: {cell:?} in {report}"
            );
        }
        // A peer's cut answers are reported; sszgate's middles must cut none.
        for line in peer.lines().filter(|l| l.starts_with("Failed calls")) {
            assert!(!line.contains("sszgate snooper"), "{report}");
        }
    }
    assert!(
        report.contains(
            "| copy relay added | copy relay CPU | splice relay added | splice relay CPU | hyper relay added | hyper relay CPU |"
        ),
        "{report}"
    );
    // 3 warm-up + 2×3 measured calls per case (three times the rounds below 24 blobs), plus
    // the small calls: each recorded once, none lost.
    let written: u64 = report
        .split("Records written ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no record count in {report}"));
    assert_eq!(written, 3 * 9 + 64, "{report}");
    assert!(report.contains("dropped 0."), "{report}");
}
