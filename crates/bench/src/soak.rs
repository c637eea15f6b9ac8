//! The soak run (`sszgate bench soak`): mainnet-shaped Engine API traffic with real data,
//! through the relay (JSON-RPC, snoop mode) and through the bridge (REST-SSZ in, JSON-RPC to
//! the EL), for a set time, at the mainnet rate or a multiple of it.
//!
//! Per slot (12 s, divided by the rate multiplier) each path makes the calls a CL makes:
//! forkchoiceUpdated, getPayload with a bundle of 0..72 real blobs, newPayload of a real
//! mainnet payload, getBlobs for the bundle's blobs (when it has any) and, on the relay, the
//! closing forkchoiceUpdated. The two proxies are separate processes (the sszgate binary,
//! recording to SQLite), so their RSS (from `/proc`) is their own; it is sampled over the run.
//! At the end both are stopped with SIGTERM and the records in their stores are counted
//! against the calls made: a record lost is a failure of the run, as is any error.

use std::{
    path::PathBuf,
    process::ExitStatus,
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde::Serialize;
use sszgate_engine::{
    Fork, Message,
    alloy_engine::ForkchoiceState,
    message::{Blobs, BlobsRequest, Forkchoice},
};
use sszgate_fixtures::{Fixtures, blobs_v2_response, built_payload};

use crate::proxy::{
    Answers, BENCH_SECRET, HttpClient, ProxyChild, fake_el, rpc, rss_kib, start_proxy, wait_ready,
};

/// Options of the soak run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The sszgate executable to run as the proxies.
    pub sszgate: PathBuf,
    /// The data directory (real blocks and blob transactions).
    pub data: PathBuf,
    /// How long traffic runs.
    pub duration: Duration,
    /// Slots per 12 s (1: mainnet's rate; 10: ten times it).
    pub rate_multiplier: f64,
    /// Blob counts the slots draw from.
    pub blobs: Vec<usize>,
    /// Time between two RSS samples.
    pub sample_every: Duration,
    /// Time after which the RSS is taken as warmed up (the growth bound is measured from it).
    pub warm_up: Duration,
    /// More arguments for both `sszgate proxy` processes.
    pub proxy_args: Vec<String>,
}

/// The RSS of both proxies at one time.
#[derive(Clone, Debug, Serialize)]
pub struct RssSample {
    /// Seconds since traffic started.
    pub t_s: f64,
    /// The relay's RSS, KiB.
    pub relay_kib: u64,
    /// The bridge's RSS, KiB.
    pub bridge_kib: u64,
}

/// What one path (relay or bridge) did.
#[derive(Clone, Debug, Serialize)]
pub struct PathResult {
    /// `relay` or `bridge`.
    pub name: String,
    /// Calls made.
    pub calls: u64,
    /// Calls that failed (transport error or a status other than 2xx).
    pub errors: u64,
    /// The first few errors, as text.
    pub first_errors: Vec<String>,
    /// Per method: (name, calls, p50 ms, p99 ms).
    pub latency: Vec<(String, u64, f64, f64)>,
    /// All calls: p50 and p99, ms.
    pub p50_ms: f64,
    /// All calls: p99, ms.
    pub p99_ms: f64,
    /// Records in the proxy's SQLite store after it stopped.
    pub records: u64,
    /// Calls without a record (`calls - records`, 0 when the store has them all).
    pub lost: u64,
    /// Records the proxy dropped (full queue) or lost (a failing sink), from its status.
    pub dropped: u64,
    /// The proxy's exit status after SIGTERM (`None`: it had to be killed).
    pub exit_ok: Option<bool>,
    /// RSS at the first sample, after warm-up, at the end, and the most seen, KiB.
    pub rss_kib: RssFigures,
}

/// RSS figures of one proxy, KiB.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct RssFigures {
    /// At the first sample (after the first slot).
    pub start: u64,
    /// At the first sample after warm-up.
    pub warm: u64,
    /// At the last sample.
    pub end: u64,
    /// The most seen after warm-up.
    pub max_after_warm: u64,
    /// The median of the samples of the first half of the time after warm-up: with answers
    /// of up to 20 MB in flight, one sample swings by tens of MB, so growth shows in the
    /// medians of the two halves, not in two single samples.
    pub median_first_half: u64,
    /// The median of the samples of the second half of the time after warm-up.
    pub median_second_half: u64,
}

/// The soak report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Traffic time, seconds.
    pub duration_s: f64,
    /// Slots per 12 s.
    pub rate_multiplier: f64,
    /// Slots run per path.
    pub slots: u64,
    /// Slots that started late because the one before took longer than a slot.
    pub late_slots: u64,
    /// Blob counts drawn from.
    pub blobs: Vec<usize>,
    /// The relay and the bridge.
    pub paths: Vec<PathResult>,
    /// RSS over time.
    pub rss: Vec<RssSample>,
}

/// One call's outcome: method name, latency, error text.
type Outcome = (&'static str, Duration, Option<String>);

/// Everything a slot needs, built once from the fixtures.
struct Traffic {
    fcu_json: Bytes,
    np_json: Bytes,
    fcu_ssz: Bytes,
    np_ssz: Bytes,
    /// Per blob count: the getBlobsV2 JSON request and the REST body.
    blobs_requests: Vec<(usize, Bytes, Bytes)>,
}

impl Traffic {
    fn blobs_request(&self, n: usize) -> (&Bytes, &Bytes) {
        let (_, json, ssz) = self
            .blobs_requests
            .iter()
            .find(|(k, _, _)| *k == n)
            .expect("a request per blob count");
        (json, ssz)
    }
}

/// The blob count of slot `slot`: a fixed pseudo-random draw, the same for every run.
fn draw(blobs: &[usize], slot: u64) -> usize {
    let x = slot
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    blobs[((x >> 33) % blobs.len() as u64) as usize]
}

async fn timed(client: &HttpClient, name: &'static str, request: Request<Full<Bytes>>) -> Outcome {
    let start = Instant::now();
    let result = async {
        let response = client
            .request(request)
            .await
            .map_err(|e| format!("{name}: {e}"))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("{name}: body: {e}"))?
            .to_bytes();
        if !status.is_success() {
            return Err(format!(
                "{name}: status {status}: {}",
                String::from_utf8_lossy(&body[..body.len().min(200)])
            ));
        }
        Ok(())
    }
    .await;
    (name, start.elapsed(), result.err())
}

fn json_call(url: &str, case: &str, body: &Bytes) -> Request<Full<Bytes>> {
    Request::post(url)
        .header("content-type", "application/json")
        .header("x-bench-case", case)
        .body(Full::new(body.clone()))
        .expect("request")
}

fn rest_call(
    url: &str,
    verb: &str,
    path: &str,
    fork: Option<&str>,
    token: &str,
    body: Bytes,
) -> Request<Full<Bytes>> {
    let mut r = Request::builder()
        .method(verb)
        .uri(format!("{url}{path}"))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/octet-stream");
    if let Some(fork) = fork {
        r = r.header("eth-execution-version", fork);
    }
    r.body(Full::new(body)).expect("request")
}

/// A CL's calls of one slot over JSON-RPC, through the relay.
async fn relay_slot(client: &HttpClient, url: &str, t: &Traffic, n: usize) -> Vec<Outcome> {
    let mut out = vec![
        timed(
            client,
            "forkchoiceUpdatedV3",
            json_call(url, "fcu", &t.fcu_json),
        )
        .await,
    ];
    let get_payload = Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"engine_getPayloadV5","params":["0x{n:016x}"]}}"#
    ));
    out.push(
        timed(
            client,
            "getPayloadV5",
            json_call(url, &format!("getPayload-{n}"), &get_payload),
        )
        .await,
    );
    out.push(
        timed(
            client,
            "newPayloadV4",
            json_call(url, "newPayload", &t.np_json),
        )
        .await,
    );
    if n > 0 {
        let (json, _) = t.blobs_request(n);
        out.push(
            timed(
                client,
                "getBlobsV2",
                json_call(url, &format!("getBlobs-{n}"), json),
            )
            .await,
        );
    }
    out.push(
        timed(
            client,
            "forkchoiceUpdatedV3",
            json_call(url, "fcu", &t.fcu_json),
        )
        .await,
    );
    out
}

/// A CL's calls of one slot over REST-SSZ, through the bridge to the JSON-RPC EL.
async fn bridge_slot(client: &HttpClient, url: &str, t: &Traffic, n: usize) -> Vec<Outcome> {
    let secret = sszgate_gateway::JwtSecret::from_hex(BENCH_SECRET).expect("bench secret");
    let token = secret.token();
    let mut out = vec![
        timed(
            client,
            "POST /forkchoice",
            rest_call(
                url,
                "POST",
                "/engine/v1/forkchoice",
                Some("osaka"),
                &token,
                t.fcu_ssz.clone(),
            ),
        )
        .await,
    ];
    out.push(
        timed(
            client,
            "GET /payloads/{id}",
            rest_call(
                url,
                "GET",
                &format!("/engine/v1/payloads/0x{n:016x}"),
                Some("osaka"),
                &token,
                Bytes::new(),
            ),
        )
        .await,
    );
    out.push(
        timed(
            client,
            "POST /payloads",
            rest_call(
                url,
                "POST",
                "/engine/v1/payloads",
                Some("prague"),
                &token,
                t.np_ssz.clone(),
            ),
        )
        .await,
    );
    if n > 0 {
        let (_, ssz) = t.blobs_request(n);
        out.push(
            timed(
                client,
                "POST /blobs/v2",
                rest_call(
                    url,
                    "POST",
                    "/engine/v1/blobs/v2",
                    None,
                    &token,
                    ssz.clone(),
                ),
            )
            .await,
        );
    }
    out
}

/// The outcomes of one path, and the slots it ran late.
#[derive(Default)]
struct PathLog {
    outcomes: Vec<Outcome>,
    slots: u64,
    late: u64,
}

/// Runs slots on one path until `until`, one every `slot`.
async fn drive_path(
    bridge: bool,
    client: HttpClient,
    url: String,
    traffic: Arc<Traffic>,
    blobs: Vec<usize>,
    slot: Duration,
    until: Instant,
) -> PathLog {
    let mut log = PathLog::default();
    let mut next = Instant::now();
    while Instant::now() < until {
        let n = draw(&blobs, log.slots);
        let outcomes = if bridge {
            bridge_slot(&client, &url, &traffic, n).await
        } else {
            relay_slot(&client, &url, &traffic, n).await
        };
        log.outcomes.extend(outcomes);
        log.slots += 1;
        next += slot;
        let now = Instant::now();
        if now > next {
            log.late += 1;
            next = now;
        } else {
            tokio::time::sleep_until(next.into()).await;
        }
    }
    log
}

fn quantile_ms(samples: &mut [Duration], q: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    samples.sort();
    let rank = ((samples.len() - 1) as f64 * q).round() as usize;
    samples[rank].as_secs_f64() * 1e3
}

/// Stops a proxy with SIGTERM and waits for it (at most 30 s, then it is killed).
pub(crate) fn stop(mut proxy: ProxyChild) -> Option<bool> {
    let pid = proxy.child.id();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = proxy.child.try_wait() {
            return Some(ExitStatus::success(&status));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

async fn status_dropped(client: &HttpClient, control: std::net::SocketAddr) -> u64 {
    let Ok(uri) = format!("http://{control}/_sszgate/status").parse() else {
        return 0;
    };
    let Ok(response) = client.get(uri).await else {
        return 0;
    };
    let body = response
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let status: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let field = |k: &str| status["records"][k].as_u64().unwrap_or(0);
    field("dropped") + field("lost")
}

fn count_records(db: &std::path::Path) -> u64 {
    rusqlite::Connection::open(db)
        .and_then(|c| c.query_row("SELECT count(*) FROM calls", [], |r| r.get::<_, i64>(0)))
        .map_or(0, |n| n as u64)
}

/// Runs the soak.
pub async fn run(options: &Options) -> Report {
    let fixtures = Fixtures::load(&options.data).expect("fixtures load");
    let blob_items = fixtures.blobs().expect("blobs load");
    let (block, payload) = fixtures.reference_payload().expect("a reference payload");

    // The EL's answers, by case, and the requests of every slot, built once.
    let mut answers = vec![
        (
            "newPayload".to_string(),
            rpc(br#"{"status":"VALID","latestValidHash":null,"validationError":null}"#),
        ),
        (
            "fcu".to_string(),
            rpc(br#"{"payloadStatus":{"status":"VALID","latestValidHash":null,"validationError":null},"payloadId":"0x0000000000000001"}"#),
        ),
    ];
    let mut blobs_requests = Vec::new();
    for &n in &options.blobs {
        let built = Message::BuiltPayload(
            built_payload(Fork::Osaka, &payload, &blob_items, n).expect("built payload"),
        )
        .to_json()
        .expect("json");
        answers.push((format!("getPayload-{n}"), rpc(&built)));
        if n > 0 {
            let blobs_json = Message::Blobs(Blobs::V2(Some(blobs_v2_response(&blob_items, n))))
                .to_json()
                .expect("json");
            answers.push((format!("getBlobs-{n}"), rpc(&blobs_json)));
            let hashes: Vec<String> = (0..n).map(|i| format!("0x01{i:062x}")).collect();
            let json = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"engine_getBlobsV2","params":[[{}]]}}"#,
                hashes
                    .iter()
                    .map(|h| format!("\"{h}\""))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let ssz = Message::BlobsRequest(BlobsRequest {
                versioned_hashes: hashes.iter().map(|h| h.parse().expect("hash")).collect(),
                indices: None,
            })
            .to_ssz(Fork::Osaka)
            .expect("ssz");
            blobs_requests.push((n, Bytes::from(json), Bytes::from(ssz)));
        }
    }
    let z = format!("0x{}", "00".repeat(32));
    let np = Message::NewPayload(block.new_payload().expect("payload"));
    let traffic = Arc::new(Traffic {
        fcu_json: Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"engine_forkchoiceUpdatedV3","params":[{{"headBlockHash":"{z}","safeBlockHash":"{z}","finalizedBlockHash":"{z}"}},null]}}"#
        )),
        np_json: Bytes::from(format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"engine_newPayloadV4","params":{}}}"#,
            String::from_utf8(np.to_json().expect("json")).expect("utf8")
        )),
        fcu_ssz: Bytes::from(
            Message::Forkchoice(Forkchoice {
                state: ForkchoiceState::default(),
                attributes: None,
                custody_columns: None,
            })
            .to_ssz(Fork::Osaka)
            .expect("ssz"),
        ),
        np_ssz: Bytes::from(np.to_ssz(Fork::Prague).expect("ssz")),
        blobs_requests,
    });
    let el = fake_el(Arc::new(Answers(answers))).await;

    let dir = std::env::temp_dir().join(format!("sszgate-soak-{}", std::process::id()));
    let (relay_dir, bridge_dir) = (dir.join("relay"), dir.join("bridge"));
    std::fs::create_dir_all(&relay_dir).expect("soak dir");
    std::fs::create_dir_all(&bridge_dir).expect("soak dir");
    let mut relay_args = vec!["--upstream-transport".to_string(), "relay".into()];
    relay_args.extend(options.proxy_args.iter().cloned());
    let mut bridge_args = vec![
        "--upstream-transport".to_string(),
        "json".into(),
        "--jwt-secret".into(),
        BENCH_SECRET.into(),
    ];
    bridge_args.extend(options.proxy_args.iter().cloned());
    let (relay, relay_addr, relay_control) =
        start_proxy(&options.sszgate, el, &relay_dir, &relay_args);
    let (bridge, bridge_addr, bridge_control) =
        start_proxy(&options.sszgate, el, &bridge_dir, &bridge_args);
    wait_ready(relay_addr).await;
    wait_ready(bridge_addr).await;
    let pids = (relay.child.id(), bridge.child.id());

    let client: HttpClient = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(8)
        .build_http();
    let slot = Duration::from_secs_f64(12.0 / options.rate_multiplier.max(0.001));
    let started = Instant::now();
    let until = started + options.duration;
    let paths = [
        (false, format!("http://{relay_addr}/")),
        (true, format!("http://{bridge_addr}")),
    ];
    let tasks: Vec<_> = paths
        .into_iter()
        .map(|(bridge, url)| {
            tokio::spawn(drive_path(
                bridge,
                client.clone(),
                url,
                traffic.clone(),
                options.blobs.clone(),
                slot,
                until,
            ))
        })
        .collect();
    let mut rss = Vec::new();
    let mut next_sample = started + options.sample_every.min(slot);
    while Instant::now() < until {
        tokio::time::sleep_until(next_sample.min(until).into()).await;
        rss.push(RssSample {
            t_s: started.elapsed().as_secs_f64(),
            relay_kib: rss_kib(pids.0).1,
            bridge_kib: rss_kib(pids.1).1,
        });
        next_sample += options.sample_every;
    }
    let mut logs = Vec::new();
    for task in tasks {
        logs.push(task.await.expect("a path task"));
    }
    let duration_s = started.elapsed().as_secs_f64();
    rss.push(RssSample {
        t_s: duration_s,
        relay_kib: rss_kib(pids.0).1,
        bridge_kib: rss_kib(pids.1).1,
    });
    let dropped = (
        status_dropped(&client, relay_control).await,
        status_dropped(&client, bridge_control).await,
    );
    let exits = (stop(relay), stop(bridge));
    let records = (
        count_records(&relay_dir.join("bench.db")),
        count_records(&bridge_dir.join("bench.db")),
    );
    let _ = std::fs::remove_dir_all(&dir);

    let warm_at = options.warm_up.as_secs_f64();
    let figures = |pick: fn(&RssSample) -> u64| {
        let after: Vec<u64> = rss.iter().filter(|s| s.t_s >= warm_at).map(pick).collect();
        let median = |part: &[u64]| {
            let mut part = part.to_vec();
            part.sort_unstable();
            part.get(part.len() / 2).copied().unwrap_or(0)
        };
        let (first, second) = after.split_at(after.len() / 2);
        RssFigures {
            start: rss.first().map_or(0, pick),
            warm: after.first().copied().unwrap_or(0),
            end: rss.last().map_or(0, pick),
            max_after_warm: after.iter().copied().max().unwrap_or(0),
            median_first_half: median(first),
            median_second_half: median(second),
        }
    };
    let slots = logs.iter().map(|l| l.slots).min().unwrap_or(0);
    let late_slots = logs.iter().map(|l| l.late).sum();
    let mut results = Vec::new();
    for (i, log) in logs.into_iter().enumerate() {
        let name = if i == 0 { "relay" } else { "bridge" };
        let calls = log.outcomes.len() as u64;
        let first_errors: Vec<String> = log
            .outcomes
            .iter()
            .filter_map(|(_, _, e)| e.clone())
            .take(5)
            .collect();
        let errors = log.outcomes.iter().filter(|(_, _, e)| e.is_some()).count() as u64;
        let mut methods: Vec<&'static str> = log.outcomes.iter().map(|(m, _, _)| *m).collect();
        methods.sort();
        methods.dedup();
        let latency = methods
            .iter()
            .map(|m| {
                let mut samples: Vec<Duration> = log
                    .outcomes
                    .iter()
                    .filter(|(n, _, _)| n == m)
                    .map(|(_, d, _)| *d)
                    .collect();
                (
                    m.to_string(),
                    samples.len() as u64,
                    quantile_ms(&mut samples, 0.5),
                    quantile_ms(&mut samples, 0.99),
                )
            })
            .collect();
        let mut all: Vec<Duration> = log.outcomes.iter().map(|(_, d, _)| *d).collect();
        let (recorded, exit_ok, dropped) = if i == 0 {
            (records.0, exits.0, dropped.0)
        } else {
            (records.1, exits.1, dropped.1)
        };
        results.push(PathResult {
            name: name.into(),
            calls,
            errors,
            first_errors,
            latency,
            p50_ms: quantile_ms(&mut all, 0.5),
            p99_ms: quantile_ms(&mut all, 0.99),
            records: recorded,
            lost: calls.saturating_sub(recorded),
            dropped,
            exit_ok,
            rss_kib: if i == 0 {
                figures(|s| s.relay_kib)
            } else {
                figures(|s| s.bridge_kib)
            },
        });
    }
    Report {
        duration_s,
        rate_multiplier: options.rate_multiplier,
        slots,
        late_slots,
        blobs: options.blobs.clone(),
        paths: results,
        rss,
    }
}

impl Report {
    /// True when nothing was lost, nothing failed and both proxies stopped cleanly.
    pub fn clean(&self) -> bool {
        self.paths
            .iter()
            .all(|p| p.lost == 0 && p.errors == 0 && p.dropped == 0 && p.exit_ok == Some(true))
    }

    /// The report as Markdown.
    pub fn markdown(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Soak: {:.0} s of traffic at {}x mainnet's rate (a slot every {:.2} s), {} slots per path ({} started late), blob counts drawn from {:?}.\n",
            self.duration_s,
            self.rate_multiplier,
            12.0 / self.rate_multiplier,
            self.slots,
            self.late_slots,
            self.blobs
        );
        out.push_str("| path | calls | errors | records | lost | dropped | exit after SIGTERM | p50 ms | p99 ms | RSS start MiB | RSS after warm-up MiB | RSS end MiB | RSS max after warm-up MiB | RSS median, 1st / 2nd half after warm-up, MiB |\n");
        out.push_str("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
        let mib = |k: u64| k as f64 / 1024.0;
        for p in &self.paths {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} / {:.1} |",
                p.name,
                p.calls,
                p.errors,
                p.records,
                p.lost,
                p.dropped,
                match p.exit_ok {
                    Some(true) => "0",
                    Some(false) => "failed",
                    None => "killed",
                },
                p.p50_ms,
                p.p99_ms,
                mib(p.rss_kib.start),
                mib(p.rss_kib.warm),
                mib(p.rss_kib.end),
                mib(p.rss_kib.max_after_warm),
                mib(p.rss_kib.median_first_half),
                mib(p.rss_kib.median_second_half),
            );
        }
        out.push_str("\n| path | call | calls | p50 ms | p99 ms |\n|---|---|---:|---:|---:|\n");
        for p in &self.paths {
            for (m, n, p50, p99) in &p.latency {
                let _ = writeln!(out, "| {} | {m} | {n} | {p50:.2} | {p99:.2} |", p.name);
            }
        }
        for p in &self.paths {
            for e in &p.first_errors {
                let _ = writeln!(out, "\nerror ({}): {e}", p.name);
            }
        }
        out
    }
}
