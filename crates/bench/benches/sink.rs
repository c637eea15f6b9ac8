//! The cost of the sinks on the recorder's thread, and how fast ClickHouse takes the rows:
//! the same captures (a real newPayload, forkchoiceUpdated and getBlobs answers) recorded to
//! SQLite, to ClickHouse (spool + shipper) and to both, interleaved, against a real
//! ClickHouse server started on loopback for the run.
//!
//! `cargo bench -p sszgate-bench --bench sink [-- --rounds 10 --calls 2000]`
//! Needs Debian's `clickhouse-server` (or `SSZGATE_CLICKHOUSE`).

use std::time::{Duration, Instant};

use sszgate_bench::harness::{Summary, flag, machine, markdown_table, ms};
use sszgate_engine::{Fork, Message};
use sszgate_fixtures::{Fixtures, testdata_dir};
use sszgate_record::{
    Capture, Recorder, Sink, SinkOptions, SinkSpec, Transport,
    clickhouse::{Identity, migrate, test_server::ClickHouseServer},
};

/// The captures of one run: newPayload (a real Prague payload), forkchoiceUpdated and an
/// empty getBlobs answer, in turn.
fn captures(calls: usize) -> Vec<Capture> {
    let fixtures = Fixtures::load(&testdata_dir()).expect("fixtures load");
    let np = fixtures
        .largest_block(Fork::Prague)
        .expect("a Prague block")
        .new_payload()
        .expect("its newPayload");
    let params = String::from_utf8(Message::NewPayload(np).to_json().unwrap()).unwrap();
    (0..calls)
        .map(|i| {
            let (request, response) = match i % 3 {
                0 => (
                    format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"engine_newPayloadV4","params":{params}}}"#),
                    format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{{"status":"VALID","latestValidHash":null,"validationError":null}}}}"#),
                ),
                1 => (
                    format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"engine_forkchoiceUpdatedV3","params":[{{"headBlockHash":"0x{0}","safeBlockHash":"0x{0}","finalizedBlockHash":"0x{0}"}},null]}}"#, "11".repeat(32)),
                    format!(r#"{{"jsonrpc":"2.0","id":{i},"result":{{"payloadStatus":{{"status":"VALID","latestValidHash":null,"validationError":null}},"payloadId":null}}}}"#),
                ),
                _ => (
                    format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"engine_getBlobsV2","params":[["0x01{}"]]}}"#, "22".repeat(31)),
                    format!(r#"{{"jsonrpc":"2.0","id":{i},"result":null}}"#),
                ),
            };
            Capture {
                arrival_unix_us: 1_700_000_000_000_000 + i as i64 * 1000,
                transport: Some(Transport::JsonRpc),
                http_version: "HTTP/1.1",
                status: 200,
                request: request.into(),
                response: vec![response.into()],
                total_us: 1000,
                upstream_ttlb_us: Some(900),
                ..Capture::default()
            }
        })
        .collect()
}

/// Records `captures` to `sinks` and returns when every record is written (spooled, for
/// ClickHouse) — the recorder's thread's work.
fn record(sinks: Vec<Sink>, captures: &[Capture]) -> Recorder {
    let n = captures.len() as u64;
    let recorder = Recorder::start(sinks, "proxy", Vec::new(), captures.len() + 1);
    for capture in captures {
        recorder.record(capture.clone());
    }
    while recorder.stats().recorded < n {
        std::thread::sleep(Duration::from_micros(200));
    }
    recorder
}

fn main() {
    let rounds: usize =
        flag("--rounds").map_or(10, |r| r.parse().expect("--rounds takes a number"));
    let calls: usize = flag("--calls").map_or(2000, |r| r.parse().expect("--calls takes a number"));
    let server = ClickHouseServer::start().expect("clickhouse-server is needed for this bench");
    let captures = captures(calls);
    let dir = tempfile::tempdir().unwrap();
    // A fresh database per run, its tables made before timing.
    let databases: Vec<String> = (0..(rounds + 1) * 2)
        .map(|i| format!("bench_{i}"))
        .collect();
    for db in &databases {
        migrate(&server.client(db)).expect("the schema applies");
    }
    let mut next_db = databases.iter();
    // One run: (time until every record is written — spooled for ClickHouse —, time until
    // ClickHouse holds every row).
    let mut run = |name: &str, n: usize| -> (Duration, Option<Duration>) {
        let mut sinks = Vec::new();
        let mut db = None;
        if name.contains("SQLite") {
            let path = dir.path().join(format!("calls-{n}.db"));
            sinks.push(
                Sink::open(&SinkSpec::Sqlite(path.display().to_string()))
                    .unwrap()
                    .unwrap(),
            );
        }
        if name.contains("ClickHouse") {
            let name = next_db.next().expect("enough databases");
            let options = SinkOptions {
                spool_dir: dir.path().join(format!("spool-{n}")),
                identity: Identity::new(Some("bench".into()), None),
                ..SinkOptions::default()
            };
            sinks.push(
                Sink::open_with(
                    &SinkSpec::ClickHouse(server.url(name).parse().unwrap()),
                    &options,
                )
                .unwrap()
                .unwrap(),
            );
            db = Some(name);
        }
        let start = Instant::now();
        let recorder = record(sinks, &captures);
        let written = start.elapsed();
        let shipped = db.map(|db| {
            let client = server.client(db);
            let sql = format!("SELECT count() FROM {db}.sszgate_calls");
            while client
                .execute(&sql)
                .map(|c| c.trim().parse::<usize>().unwrap_or(0))
                .unwrap_or(0)
                < captures.len()
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            start.elapsed()
        });
        recorder.shutdown();
        (written, shipped)
    };
    let names = ["SQLite", "ClickHouse (spool)", "SQLite + ClickHouse"];
    let mut written: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    let mut shipped = Vec::new();
    let mut n = 0;
    // Interleaved: every round runs each variant once, in a rotating order.
    for round in 0..=rounds {
        for i in 0..names.len() {
            let index = (i + round) % names.len();
            n += 1;
            let (w, s) = run(names[index], n);
            if round > 0 {
                written[index].push(w);
                shipped.extend(s);
            }
        }
    }
    let summaries: Vec<Summary> = names
        .iter()
        .zip(written)
        .map(|(name, samples)| Summary {
            name: name.to_string(),
            samples,
        })
        .collect();
    let shipped = Summary {
        name: "ClickHouse holds every row".into(),
        samples: shipped,
    };
    println!("## Sinks: the recorder's time for {calls} calls, and ClickHouse's\n");
    println!("Machine: {}", machine());
    println!(
        "Data: {calls} captures (a real Prague newPayload of testdata, forkchoiceUpdated, getBlobsV2, in turn); {rounds} interleaved rounds after one warm-up round; the first of each pair of figures is the recorder's time until every record is written (spooled, for ClickHouse). ClickHouse {} on loopback.\n",
        server
            .client("default")
            .execute("SELECT version()")
            .unwrap_or_default()
            .trim()
    );
    println!("{}", markdown_table(&summaries));
    let per_call = |s: &Summary| s.median().as_secs_f64() * 1e6 / calls as f64;
    println!("| per call | µs |\n|---|---:|");
    for s in &summaries {
        println!("| {} | {:.1} |", s.name, per_call(s));
    }
    println!(
        "\nFrom the first record to ClickHouse holding all {calls} rows (the ClickHouse runs above): median {} ms, p10 {} ms, p90 {} ms — {:.0} rows/s.",
        ms(shipped.median()),
        ms(shipped.quantile(0.1)),
        ms(shipped.quantile(0.9)),
        calls as f64 / shipped.median().as_secs_f64()
    );
}
