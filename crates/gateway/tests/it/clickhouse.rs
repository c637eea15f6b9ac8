//! The ClickHouse sink against a real server (Debian's clickhouse-server, started here on
//! loopback): rows equal the SQLite records field by field, the xatu-shaped tables are filled,
//! a replay after a lost cursor duplicates nothing, and a one-minute outage loses nothing.

use std::{collections::BTreeMap, time::Duration};

use rusqlite::Connection;
use serde_json::Value;
use sszgate_engine::{
    Message,
    message::{Blobs, NewPayload},
};
use sszgate_fixtures::{Fixtures, blobs_v2_response, testdata_dir};
use sszgate_record::{
    Sink, SinkOptions, SinkSpec,
    clickhouse::{Client, Identity, test_server::ClickHouseServer},
};

use crate::{
    EXTRA_SINKS, Proxy,
    fake_el::{Answer, FakeEl},
    post_json, send,
};

/// A fake EL answering newPayload (VALID), getBlobsV3 (2 of 3 blobs, real ones) and
/// forkchoiceUpdated (a payload id), and -32601 for anything else.
async fn fake_el() -> (FakeEl, NewPayload, String) {
    let (np, params) = crate::relay::new_payload();
    let fixtures = Fixtures::load(&testdata_dir()).unwrap();
    let hash = np.payload_v1().block_hash.to_string();
    let blobs = fixtures.blobs().unwrap();
    let two = blobs_v2_response(&blobs, 2);
    let blobs_json = String::from_utf8(
        Message::Blobs(Blobs::V3(Some(vec![
            Some(two[0].clone()),
            None,
            Some(two[1].clone()),
        ])))
        .to_json()
        .unwrap(),
    )
    .unwrap();
    let el = FakeEl::start(move |seen| {
        let body = String::from_utf8_lossy(&seen.body);
        let id = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| v.get("id").cloned())
            .unwrap_or(Value::Null);
        let result = if body.contains("engine_newPayloadV4") {
            format!(r#"{{"status":"VALID","latestValidHash":"{hash}","validationError":null}}"#)
        } else if body.contains("engine_getBlobsV3") {
            blobs_json.clone()
        } else if body.contains("engine_forkchoiceUpdatedV3") {
            r#"{"payloadStatus":{"status":"VALID","latestValidHash":null,"validationError":null},"payloadId":"0x0102030405060708"}"#.to_string()
        } else {
            return Answer::ok(
                "application/json",
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"the method does not exist"}}}}"#
                ),
            );
        };
        Answer::ok(
            "application/json",
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#),
        )
    })
    .await;
    (el, np, String::from_utf8(params).unwrap())
}

/// A proxy in front of a fake EL (as [`fake_el`]) writing to ClickHouse database `db` too,
/// spooling in `spool`; with the EL's payload and the newPayload params the calls send.
async fn proxy_to(
    server: &ClickHouseServer,
    db: &str,
    spool: &std::path::Path,
) -> (Proxy, FakeEl, NewPayload, String) {
    let (el, np, np_params) = fake_el().await;
    EXTRA_SINKS.with(|s| s.borrow_mut().push(clickhouse_sink(server, db, spool)));
    (Proxy::start(&el.url()).await, el, np, np_params)
}

/// The JSON-RPC request of the `i`th call of a mix of five kinds.
fn call(i: u64, np_params: &str) -> String {
    let h = |b: u64| format!("\"0x01{}\"", format!("{:02x}", b % 256).repeat(31));
    match i % 5 {
        0 => format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"engine_newPayloadV4","params":{np_params}}}"#
        ),
        1 => format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"engine_getBlobsV3","params":[[{},{},{}]]}}"#,
            h(i),
            h(i + 1),
            h(i + 2)
        ),
        2 => format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"engine_forkchoiceUpdatedV3","params":[{{"headBlockHash":"0x{0}","safeBlockHash":"0x{0}","finalizedBlockHash":"0x{0}"}},null]}}"#,
            "11".repeat(32)
        ),
        3 => {
            format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"engine_noSuchMethodV1","params":[]}}"#)
        }
        _ => "{not json".to_string(),
    }
}

fn clickhouse_sink(server: &ClickHouseServer, db: &str, spool: &std::path::Path) -> Sink {
    let options = SinkOptions {
        spool_dir: spool.to_path_buf(),
        identity: Identity::new(Some("node-a".into()), Some("hoodi".into())),
        drain: Duration::from_secs(20),
        ..SinkOptions::default()
    };
    Sink::open_with(
        &SinkSpec::ClickHouse(server.url(db).parse().unwrap()),
        &options,
    )
    .unwrap()
    .unwrap()
}

/// Every row of a SQLite query, column name to value (as text; NULL as None).
fn sqlite_rows(db: &Connection, sql: &str) -> Vec<BTreeMap<String, Option<String>>> {
    let mut stmt = db.prepare(sql).unwrap();
    let names: Vec<String> = stmt.column_names().iter().map(|s| s.to_string()).collect();
    stmt.query_map([], |r| {
        Ok(names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let value = match r.get::<_, rusqlite::types::Value>(i).unwrap() {
                    rusqlite::types::Value::Null => None,
                    rusqlite::types::Value::Integer(v) => Some(v.to_string()),
                    rusqlite::types::Value::Text(t) => Some(t),
                    other => Some(format!("{other:?}")),
                };
                (name.clone(), value)
            })
            .collect())
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Every row of a ClickHouse query, column name to value (as text; null as None).
fn clickhouse_rows(client: &Client, sql: &str) -> Vec<BTreeMap<String, Option<String>>> {
    client
        .rows::<serde_json::Map<String, Value>>(sql)
        .unwrap()
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::Null => None,
                        Value::String(s) => Some(s),
                        other => Some(other.to_string()),
                    };
                    (k, v)
                })
                .collect()
        })
        .collect()
}

fn count(client: &Client, sql: &str) -> u64 {
    client.execute(sql).unwrap().trim().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_equal_the_sqlite_records_field_by_field_and_fill_the_xatu_tables() {
    let Some(server) = ClickHouseServer::start() else {
        return;
    };
    let spool = tempfile::tempdir().unwrap();
    let (proxy, _el, np, np_params) = proxy_to(&server, "fleet", spool.path()).await;
    for i in 0..10 {
        send(post_json(&proxy.url(), call(i, &np_params)), false).await;
    }
    let (db, _dir) = proxy.finish().await;
    let client = server.client("fleet");

    let records = sqlite_rows(&db, "SELECT * FROM calls ORDER BY seq");
    assert_eq!(records.len(), 10);
    let rows = clickhouse_rows(&client, "SELECT * FROM fleet.sszgate_calls ORDER BY seq");
    assert_eq!(rows.len(), records.len(), "one row per record");
    for (record, row) in records.iter().zip(&rows) {
        for (column, value) in record {
            assert_eq!(
                row.get(column),
                Some(value),
                "column {column} of record {:?}",
                record["seq"]
            );
        }
        // Identity on every row, and the values derived for the xatu tables.
        let get = |c: &str| row[c].as_deref().unwrap_or("");
        assert_eq!(get("node"), "node-a");
        assert_eq!(get("network"), "hoodi");
        assert_eq!(get("network_id"), "560048");
        assert_eq!(get("recorder_version"), env!("CARGO_PKG_VERSION"));
        let method = record["method"].as_deref().unwrap_or("");
        let expected_version = method.rsplit_once('V').map_or("", |(_, v)| v);
        assert_eq!(
            get("method_version").trim_start_matches('V'),
            expected_version
        );
    }
    let seqs: Vec<&str> = rows
        .iter()
        .map(|r| r["spool_seq"].as_deref().unwrap())
        .collect();
    assert_eq!(seqs, ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"]);
    // The mix did reach the table with its facts (not only nulls).
    let kinds = sqlite_rows(
        &db,
        "SELECT count(*) AS n FROM calls WHERE payload_status = 'VALID' AND block_hash IS NOT NULL",
    );
    assert_eq!(
        kinds[0]["n"].as_deref(),
        Some("4"),
        "2 newPayload + 2 forkchoiceUpdated"
    );

    let p = np.payload_v1();
    let new_payload = clickhouse_rows(
        &client,
        "SELECT block_number, block_hash, parent_hash, tx_count, blob_count, status, method_version, source, meta_client_name, meta_network_name, meta_network_id, sszgate_spool_seq FROM fleet.execution_engine_new_payload ORDER BY sszgate_spool_seq",
    );
    assert_eq!(new_payload.len(), 2, "{new_payload:?}");
    let first = &new_payload[0];
    let text = |v: &str| Some(v.to_string());
    assert_eq!(first["block_number"], text(&p.block_number.to_string()));
    assert_eq!(first["block_hash"], text(&p.block_hash.to_string()));
    assert_eq!(first["parent_hash"], text(&p.parent_hash.to_string()));
    assert_eq!(first["tx_count"], text(&p.transactions.len().to_string()));
    assert_eq!(first["status"], text("VALID"));
    assert_eq!(first["method_version"], text("V4"));
    assert_eq!(first["source"], text("SNOOPER"));
    assert_eq!(first["meta_client_name"], text("node-a"));
    assert_eq!(first["meta_network_name"], text("hoodi"));
    assert_eq!(first["meta_network_id"], text("560048"));
    assert_eq!(first["sszgate_spool_seq"], text("1"));
    let get_blobs = clickhouse_rows(
        &client,
        "SELECT requested_count, returned_count, status, method_version FROM fleet.execution_engine_get_blobs",
    );
    assert_eq!(get_blobs.len(), 2);
    for row in get_blobs {
        assert_eq!(
            (
                row["requested_count"].clone(),
                row["returned_count"].clone()
            ),
            (text("3"), text("2"))
        );
        assert_eq!(row["status"], text("PARTIAL"));
        assert_eq!(row["method_version"], text("V3"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_after_a_lost_cursor_sends_only_what_the_server_lacks() {
    let Some(server) = ClickHouseServer::start() else {
        return;
    };
    let spool = tempfile::tempdir().unwrap();
    let (proxy, el, _, np_params) = proxy_to(&server, "replay", spool.path()).await;
    for i in 0..6 {
        send(post_json(&proxy.url(), call(i, &np_params)), false).await;
    }
    proxy.finish().await;
    let client = server.client("replay");
    assert_eq!(
        count(&client, "SELECT count() FROM replay.sszgate_calls"),
        6
    );

    // As if the process had died after the server took the rows but before the cursor was
    // saved: the cursor is gone, so every row is read again at the next start.
    let dir = std::fs::read_dir(spool.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_file(dir.join("cursor")).unwrap();
    EXTRA_SINKS.with(|s| {
        s.borrow_mut()
            .push(clickhouse_sink(&server, "replay", spool.path()))
    });
    let proxy = Proxy::start(&el.url()).await;
    for i in 6..10 {
        send(post_json(&proxy.url(), call(i, &np_params)), false).await;
    }
    let recorder = proxy.recorder.clone();
    proxy.finish().await;
    let stats = recorder.stats();
    assert_eq!(stats.shipped, 4, "only the new rows were sent: {stats:?}");
    assert_eq!(stats.spool_waiting, 0);
    assert_eq!(
        count(&client, "SELECT count() FROM replay.sszgate_calls"),
        10
    );
    assert_eq!(
        count(
            &client,
            "SELECT uniqExact(spool_seq) FROM replay.sszgate_calls"
        ),
        10
    );
    // newPayload calls were numbers 0 and 5 (first run) — the xatu table holds each once.
    assert_eq!(
        count(
            &client,
            "SELECT count() FROM replay.execution_engine_new_payload"
        ),
        2
    );
    assert_eq!(
        count(
            &client,
            "SELECT count() FROM replay.execution_engine_get_blobs"
        ),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_minute_outage_loses_and_duplicates_nothing() {
    let Some(mut server) = ClickHouseServer::start() else {
        return;
    };
    let spool = tempfile::tempdir().unwrap();
    let (proxy, _el, _, np_params) = proxy_to(&server, "outage", spool.path()).await;
    let url = proxy.url();
    let client = server.client("outage");
    let mut sent = 0u64;
    let mut answered = Vec::new();
    let burst = |from: u64, n: u64| {
        let (url, np_params) = (url.clone(), np_params.clone());
        async move {
            let mut codes = Vec::new();
            for i in from..from + n {
                let (code, _, _) = send(post_json(&url, call(i, &np_params)), false).await;
                codes.push(code.as_u16());
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            codes
        }
    };
    // Before: rows reach the server.
    answered.extend(burst(sent, 20).await);
    sent += 20;
    for _ in 0..100 {
        if count(&client, "SELECT count() FROM outage.sszgate_calls") == 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        count(&client, "SELECT count() FROM outage.sszgate_calls"),
        20
    );

    // The outage: a minute without the server, traffic all along.
    tokio::task::block_in_place(|| server.stop());
    let outage = std::time::Instant::now();
    while outage.elapsed() < Duration::from_secs(60) {
        answered.extend(burst(sent, 10).await);
        sent += 10;
    }
    let during = proxy.recorder.stats();
    assert!(
        during.spool_waiting > 0 && during.ship_errors > 0,
        "rows wait in the spool while the server is down: {during:?}"
    );

    // After: the server is back, traffic goes on, and the spool empties.
    tokio::task::block_in_place(|| server.restart());
    answered.extend(burst(sent, 20).await);
    sent += 20;
    let recorder = proxy.recorder.clone();
    let (db, _dir) = proxy.finish().await;
    let stats = recorder.stats();

    // Every call was answered as usual (the bad JSON with a JSON-RPC parse error).
    assert_eq!(answered.len() as u64, sent);
    assert!(answered.iter().all(|c| *c == 200), "{answered:?}");
    let records = sqlite_rows(&db, "SELECT count(*) AS n FROM calls");
    assert_eq!(records[0]["n"].as_deref(), Some(sent.to_string().as_str()));
    assert_eq!(
        (stats.lost, stats.dropped, stats.spool_waiting),
        (0, 0, 0),
        "{stats:?}"
    );
    assert_eq!(
        count(&client, "SELECT count() FROM outage.sszgate_calls"),
        sent,
        "every call is in ClickHouse"
    );
    assert_eq!(
        count(
            &client,
            "SELECT uniqExact(spool_seq) FROM outage.sszgate_calls"
        ),
        sent,
        "none twice"
    );
    assert_eq!(
        count(&client, "SELECT min(spool_seq) FROM outage.sszgate_calls"),
        1
    );
    assert_eq!(
        count(&client, "SELECT max(spool_seq) FROM outage.sszgate_calls"),
        sent
    );
    // The same calls as SQLite holds, by the recorder's sequence number.
    let sqlite_seqs: Vec<String> = sqlite_rows(&db, "SELECT seq FROM calls ORDER BY seq")
        .into_iter()
        .map(|r| r["seq"].clone().unwrap())
        .collect();
    let clickhouse_seqs: Vec<String> =
        clickhouse_rows(&client, "SELECT seq FROM outage.sszgate_calls ORDER BY seq")
            .into_iter()
            .map(|r| r["seq"].clone().unwrap())
            .collect();
    assert_eq!(sqlite_seqs, clickhouse_seqs);
    assert_eq!(
        count(
            &client,
            "SELECT count() FROM outage.execution_engine_new_payload"
        ),
        sent / 5
    );
}
