//! The report's figures from a store with known records: medians, differences against the
//! direct group, overhead per blob, bytes saved by the bridge, verdict counts; the HTML page is
//! self-contained and renders in headless Chromium without console errors.

use std::path::Path;

use sszgate_record::{Sink, SinkSpec};
use sszgate_report::{Query, build, load};

/// A store with the real schema (migrations applied by the sink) and rows inserted by hand.
fn store(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("calls.db");
    drop(Sink::open(&SinkSpec::Sqlite(db.display().to_string())).unwrap());
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut seq = 0;
    let mut insert = |source: &str,
                      method: &str,
                      mode: &str,
                      total: i64,
                      extra: &str,
                      labels: &str| {
        seq += 1;
        conn.execute_batch(&format!(
            "INSERT INTO calls (seq, source, arrival_unix_us, transport, http_version, method, status,
                request_bytes, response_bytes, total_us, labels, mode)
             VALUES ({seq}, '{source}', {}, 'json-rpc', 'HTTP/1.1', '{method}', 200, 100, 9, {total},
                '{labels}', '{mode}');
             UPDATE calls SET {extra} WHERE seq = {seq};",
            1_700_000_000_000_000i64 + seq * 1000,
        ))
        .unwrap();
    };
    for (way, totals) in [
        ("direct", [1000, 2000, 3000]),
        ("proxy", [1500, 2500, 3500]),
    ] {
        for t in totals {
            insert(
                "driver",
                "engine_forkchoiceUpdatedV3",
                "driver",
                t,
                "status = 200",
                &format!(r#"{{"way":"{way}"}}"#),
            );
        }
    }
    for overhead in [100, 200, 300] {
        insert(
            "proxy",
            "engine_getBlobsV2",
            "snoop",
            10_000,
            &format!("overhead_us = {overhead}, blob_count = 6, el_client = 'GE/test'"),
            "{}",
        );
    }
    insert(
        "proxy",
        "engine_getBlobsV2",
        "snoop",
        100_000,
        "overhead_us = 720, blob_count = 72, el_client = 'GE/test', verdict = 'failed', verify_check = 'cell-proofs'",
        "{}",
    );
    insert(
        "proxy",
        "engine_newPayloadV4",
        "bridge",
        900,
        "translate_request_us = 50, translate_response_us = 10, upstream_request_bytes = 250, upstream_response_bytes = 98, verdict = 'ok'",
        "{}",
    );
    db
}

#[test]
fn figures_are_computed_from_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let calls = load(&db, &Query::default()).unwrap();
    assert_eq!(calls.len(), 11);
    let report = build(&calls, None, "test".into());
    let titles: Vec<&str> = report.sections.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Calls, errors and latency per method",
            "Clients on the link",
            "End to end: the latency the CL sees, by way",
            "Proxy overhead by EL client",
            "Proxy overhead by blob count",
            "Bridged traffic: translation and bytes saved",
            "Verification verdicts",
        ]
    );
    let clients = &report.sections[1].table;
    let counted: usize = clients
        .rows
        .iter()
        .map(|r| r[2].parse::<usize>().unwrap())
        .sum();
    assert_eq!(counted, 11, "every call under one pair: {:?}", clients.rows);
    assert!(
        clients
            .rows
            .iter()
            .any(|r| r[0] == "(unknown)" && r[1] == "GE/test"),
        "{:?}",
        clients.rows
    );
    let e2e = &report.sections[2].table;
    assert_eq!(
        e2e.headers,
        [
            "method",
            "way=direct p50 ms (n)",
            "way=proxy p50 ms (n)",
            "proxy − direct p50 ms"
        ]
    );
    assert_eq!(
        e2e.rows,
        [[
            "engine_forkchoiceUpdatedV3",
            "2.000 (3)",
            "2.500 (3)",
            "+0.500"
        ]]
    );
    // 4 calls, 90 blobs; p50 by nearest rank (of 100, 200, 300, 720: rank round(1.5) = 2);
    // per blob: the overhead of the blob calls over their blobs.
    assert_eq!(
        report.sections[3].table.rows,
        [["GE/test", "4", "90", "0.330", "0.300", "0.720", "0.015"]]
    );
    assert_eq!(
        report.sections[4].table.rows,
        [
            ["6", "3", "10.000", "0.200", "0.300", "0.033"],
            ["72", "1", "100.000", "0.720", "0.720", "0.010"]
        ]
    );
    // CL side 100 + 9 bytes, EL side 250 + 98.
    assert_eq!(
        report.sections[5].table.rows,
        [[
            "engine_newPayloadV4",
            "1",
            "0.050",
            "0.010",
            "109",
            "348",
            "239 (69 %)"
        ]]
    );
    assert_eq!(
        report.sections[6].table.rows,
        [
            ["engine_getBlobsV2", "failed", "cell-proofs", "1"],
            ["engine_newPayloadV4", "ok", "", "1"]
        ]
    );
    // A period keeps only its calls.
    let later = load(
        &db,
        &Query {
            since_us: Some(1_700_000_000_000_000 + 7000),
            until_us: None,
        },
    )
    .unwrap();
    assert_eq!(later.len(), 5);
    // Another grouping, by a column.
    let by_source = build(&calls, Some("source"), "test".into());
    assert_eq!(
        by_source.sections[2].title,
        "End to end: the latency the CL sees, by source"
    );
}

#[test]
fn the_page_is_self_contained_and_renders_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let db = store(dir.path());
    let report = build(
        &load(&db, &Query::default()).unwrap(),
        None,
        "<test & store>".into(),
    );
    let html = report.html();
    assert!(html.contains("&lt;test &amp; store&gt;"));
    assert!(!html.contains("<script") && !html.contains("src=\"http"));
    assert_eq!(
        html.matches("<svg").count(),
        5,
        "one chart per section but the verdicts"
    );
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).unwrap();

    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.exists());
    let Some(chromium) = chromium else {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !in_ci,
            "chromium is missing under CI: apt-get install chromium"
        );
        eprintln!(
            "\n!!!!!!!! SKIPPED: report rendering: no chromium (apt-get install chromium) !!!!!!!!\n"
        );
        return;
    };
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        dom.contains("<h2>Proxy overhead by blob count</h2>"),
        "{dom}"
    );
    assert_eq!(dom.matches("<svg").count(), 5);
    assert!(
        dom.contains("<rect") && dom.contains("<circle"),
        "bars and markers rendered"
    );
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
}

/// Records through the recorder to SQLite and ClickHouse at once: a mix of methods, modes,
/// blob counts, errors and two labels, with known timings.
fn record_both(sqlite: &Path, clickhouse: Option<(&str, &Path)>) {
    use sszgate_record::{Capture, Recorder, SinkOptions, Transport, clickhouse::Identity};
    let mut sinks = vec![
        Sink::open(&SinkSpec::Sqlite(sqlite.display().to_string()))
            .unwrap()
            .unwrap(),
    ];
    if let Some((url, spool)) = clickhouse {
        let options = SinkOptions {
            spool_dir: spool.to_path_buf(),
            identity: Identity::new(Some("node-b".into()), Some("mainnet".into())),
            ..SinkOptions::default()
        };
        sinks.push(
            Sink::open_with(&SinkSpec::ClickHouse(url.parse().unwrap()), &options)
                .unwrap()
                .unwrap(),
        );
    }
    let recorder = Recorder::start(sinks, "proxy", vec![("way".into(), "proxy".into())], 256);
    for i in 0..40u64 {
        let (method, response) = match i % 4 {
            0 => (
                "engine_forkchoiceUpdatedV3",
                r#"{"payloadStatus":{"status":"VALID","latestValidHash":null,"validationError":null},"payloadId":null}"#.to_string(),
            ),
            1 => (
                "engine_newPayloadV4",
                r#"{"status":"VALID","latestValidHash":null,"validationError":null}"#.to_string(),
            ),
            2 => ("engine_getBlobsV2", "null".to_string()),
            _ => ("engine_getPayloadV5", String::new()),
        };
        let body = if response.is_empty() {
            format!(
                r#"{{"jsonrpc":"2.0","id":{i},"error":{{"code":-38001,"message":"Unknown payload"}}}}"#
            )
        } else {
            format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{response}}}"#)
        };
        recorder.record(Capture {
            arrival_unix_us: 1_700_000_000_000_000 + i as i64 * 12_000_000,
            transport: Some(Transport::JsonRpc),
            http_version: "HTTP/1.1",
            status: 200,
            request: format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"{method}","params":[]}}"#)
                .into(),
            response: vec![body.into()],
            total_us: 1000 + i * 37,
            upstream_ttlb_us: Some(900 + i * 30),
            ..Capture::default()
        });
    }
    recorder.shutdown();
}

#[test]
fn a_clickhouse_store_gives_the_same_calls_and_report_as_sqlite() {
    let Some(server) = sszgate_record::clickhouse::test_server::ClickHouseServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("calls.db");
    record_both(
        &db,
        Some((&server.url("reports"), &dir.path().join("spool"))),
    );
    let from_sqlite = load(&db, &Query::default()).unwrap();
    let mut from_clickhouse =
        sszgate_report::load_clickhouse(&server.client("reports"), &Query::default()).unwrap();
    assert_eq!(from_sqlite.len(), 40);
    for call in &mut from_clickhouse {
        // ClickHouse rows add the node and the network to the labels.
        assert_eq!(call.labels.remove("node").as_deref(), Some("node-b"));
        assert_eq!(call.labels.remove("network").as_deref(), Some("mainnet"));
    }
    assert_eq!(from_clickhouse, from_sqlite);
    assert_eq!(from_sqlite.iter().filter(|c| c.error).count(), 10);
    let markdown = |calls| build(calls, Some("way"), "the store".into()).markdown();
    assert_eq!(markdown(&from_clickhouse), markdown(&from_sqlite));

    // A period: the calls of minutes 2..4 only.
    let query = Query {
        since_us: Some(1_700_000_000_000_000 + 120_000_000),
        until_us: Some(1_700_000_000_000_000 + 240_000_000),
    };
    let window = sszgate_report::load_clickhouse(&server.client("reports"), &query).unwrap();
    assert_eq!(window.len(), 10);
    assert_eq!(
        window,
        load(&db, &query)
            .unwrap()
            .into_iter()
            .map(|mut c| {
                c.labels.insert("node".into(), "node-b".into());
                c.labels.insert("network".into(), "mainnet".into());
                c
            })
            .collect::<Vec<_>>()
    );
}
