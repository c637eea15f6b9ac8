//! The recorder on its own: captures in, records out to JSON lines and SQLite, bodies cut as
//! asked, drops counted when the queue is full.

use bytes::Bytes;
use sszgate_record::{Capture, Recorder, Sink, SinkSpec, Transport};

fn capture(request: &str, response: &str) -> Capture {
    Capture {
        transport: Some(Transport::JsonRpc),
        http_version: "HTTP/1.1",
        status: 200,
        request: Bytes::copy_from_slice(request.as_bytes()),
        response: vec![
            Bytes::copy_from_slice(&response.as_bytes()[..10]),
            Bytes::copy_from_slice(&response.as_bytes()[10..]),
        ],
        total_us: 1500,
        upstream_ttlb_us: Some(1200),
        ..Capture::default()
    }
}

const REQUEST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"engine_forkchoiceUpdatedV3","params":[{"headBlockHash":"0x1111111111111111111111111111111111111111111111111111111111111111"},null]}"#;
const RESPONSE: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"payloadStatus":{"status":"SYNCING","latestValidHash":null,"validationError":null},"payloadId":null}}"#;

#[test]
fn jsonl_records_carry_facts_and_cut_bodies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let sink = Sink::open(&SinkSpec::Jsonl(path.display().to_string()))
        .unwrap()
        .unwrap()
        .with_body_bytes(40);
    let recorder = Recorder::start(vec![sink], "proxy", vec![("node".into(), "n1".into())], 8);
    recorder.record(capture(REQUEST, RESPONSE));
    recorder.shutdown();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1);
    let r = &lines[0];
    assert_eq!(r["method"], "engine_forkchoiceUpdatedV3");
    assert_eq!(r["payload_status"], "SYNCING");
    assert_eq!(r["block_hash"], format!("0x{}", "11".repeat(32)));
    assert_eq!(r["overhead_us"], 300);
    assert_eq!(r["response_bytes"], RESPONSE.len());
    assert_eq!(r["labels"], r#"{"node":"n1"}"#);
    assert_eq!(
        r["request_body"],
        format!("{}…(+{} bytes)", &REQUEST[..40], REQUEST.len() - 40)
    );
    assert_eq!(
        r["response_body"].as_str().unwrap().len(),
        40 + format!("…(+{} bytes)", RESPONSE.len() - 40).len()
    );
}

#[test]
fn no_body_bytes_means_no_bodies_and_records_plus_drops_add_up_under_a_tiny_queue() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.jsonl");
    let sink = Sink::open(&SinkSpec::Jsonl(path.display().to_string()))
        .unwrap()
        .unwrap();
    let recorder = Recorder::start(vec![sink], "proxy", vec![], 1);
    for _ in 0..200 {
        recorder.record(capture(REQUEST, RESPONSE));
    }
    recorder.shutdown();
    let stats = recorder.stats();
    let lines = std::fs::read_to_string(&path).unwrap().lines().count() as u64;
    assert_eq!(stats.recorded, lines);
    assert_eq!(stats.recorded + stats.dropped, 200, "{stats:?}");
    let first: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert!(first.get("request_body").is_none());
    assert!(
        recorder
            .metrics()
            .render()
            .contains(&format!("sszgate_records_dropped_total {}", stats.dropped))
    );
}

#[test]
fn sqlite_schema_is_migrated_once_and_store_specs_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("calls.db").display().to_string();
    for _ in 0..2 {
        let sink = Sink::open(&SinkSpec::Sqlite(db.clone())).unwrap().unwrap();
        let recorder = Recorder::start(vec![sink], "proxy", vec![], 8);
        recorder.record(capture(REQUEST, RESPONSE));
        recorder.shutdown();
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    let count: i64 = conn
        .query_row("SELECT count(*) FROM calls", [], |r| r.get(0))
        .unwrap();
    assert_eq!((version, mode.as_str(), count), (6, "wal", 2));
    for bad in ["sqlite:", "mysql:x", "jsonl", "nothing"] {
        assert_eq!(
            bad.parse::<SinkSpec>().unwrap_err().to_string(),
            format!(
                "invalid store {bad:?} (expected sqlite:PATH, jsonl:PATH, jsonl:-, clickhouse:http://HOST:PORT/DB or none)"
            )
        );
    }
    // A ClickHouse address that is not one says what is wrong with it.
    let err = "clickhouse:http://h:8123"
        .parse::<SinkSpec>()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no database (expected http://HOST:PORT/DB)"),
        "{err}"
    );
    assert!(matches!(
        "clickhouse:http://u:p@h:8123/db".parse::<SinkSpec>().unwrap(),
        SinkSpec::ClickHouse(url) if url.database == "db" && url.password.as_deref() == Some("p")
    ));
    assert_eq!("none".parse::<SinkSpec>().unwrap(), SinkSpec::None);
}

#[test]
fn records_wait_out_a_locked_database_and_none_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("calls.db");
    let sink = Sink::open(&SinkSpec::Sqlite(db.display().to_string()))
        .unwrap()
        .unwrap();
    let recorder = Recorder::start(vec![sink], "proxy", vec![], 1024);
    // Another process holds the write lock past the sink's 5 s busy timeout.
    let locker = rusqlite::Connection::open(&db).unwrap();
    locker.execute_batch("BEGIN EXCLUSIVE").unwrap();
    for _ in 0..10 {
        recorder.record(capture(REQUEST, RESPONSE));
    }
    std::thread::sleep(std::time::Duration::from_millis(6500));
    assert!(
        recorder.stats().sink_errors >= 1,
        "the write failed while locked"
    );
    locker.execute_batch("COMMIT").unwrap();
    for _ in 0..10 {
        recorder.record(capture(REQUEST, RESPONSE));
    }
    recorder.shutdown();
    let stats = recorder.stats();
    assert_eq!(stats.lost, 0);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (rows, distinct): (i64, i64) = conn
        .query_row("SELECT count(*), count(DISTINCT seq) FROM calls", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(
        (rows, distinct),
        (20, 20),
        "every record once, in spite of the lock"
    );
}
