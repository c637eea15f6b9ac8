//! The proxy benchmark: what sszgate's relay adds to a call, measured against a direct call.
//!
//! A fake EL on loopback serves real-data answers (getPayloadV5 and getBlobsV2 with 0..72 real
//! blobs, forkchoiceUpdated) chosen by an `x-bench-case` header, so it never parses a body.
//! The proxy under test is a separate process (the sszgate binary), so its CPU time (from
//! `/proc/<pid>/stat`, utime + stime) and peak RSS (`VmHWM`) are its own. For every case the
//! direct and the proxied call alternate, one sample each per round, each round in a shuffled
//! order.
//! Recording is on (SQLite), as in production.

use std::{
    convert::Infallible,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, service::service_fn};
use hyper_util::{
    client::legacy::Client,
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use sszgate_engine::{Fork, Message, message::Blobs};
use sszgate_fixtures::{Fixtures, blobs_v2_response, built_payload};
use tokio::net::TcpListener;

use crate::{
    harness::{Summary, ms},
    relay_floor::{FloorRelay, Mode},
};

/// Options of the proxy benchmark.
#[derive(Clone, Debug)]
pub struct Options {
    /// The sszgate executable to run as the proxy.
    pub sszgate: PathBuf,
    /// The data directory (real blocks and blob transactions).
    pub data: PathBuf,
    /// Blob counts to measure.
    pub blobs: Vec<usize>,
    /// Rounds per case.
    pub rounds: usize,
    /// Small calls for the memory-growth check.
    pub small_calls: usize,
    /// An nginx executable to measure as a plain reverse-proxy baseline, if any.
    pub nginx: Option<PathBuf>,
    /// More arguments for `sszgate proxy` (e.g. `--store none`).
    pub proxy_args: Vec<String>,
    /// Also measure the bridge (REST-SSZ calls to a gateway in front of the JSON-RPC fake EL).
    pub bridge: bool,
    /// Also measure the floor relays (plain TCP relays, copying and splicing, and a bare
    /// hyper HTTP relay; see [`crate::relay_floor`]).
    pub floors: bool,
    /// Also measure `sszgate snooper` next to rpc-snooper (see [`crate::snooper_peer`]).
    pub snooper: Option<crate::snooper_peer::Options>,
}

/// One measured bridge case.
#[derive(Clone, Debug)]
pub struct BridgeResult {
    /// Case name.
    pub name: String,
    /// Blobs in the answer.
    pub blobs: usize,
    /// Bytes of the JSON-RPC answer and of the REST-SSZ answer.
    pub sizes: (usize, usize),
    /// The JSON-RPC call straight to the EL.
    pub direct: Summary,
    /// The REST-SSZ call through the bridge.
    pub bridged: Summary,
    /// The same with `Accept-Encoding: zstd`.
    pub bridged_zstd: Summary,
    /// The bridge's CPU per call, ms (both variants).
    pub cpu_ms_per_call: f64,
}

/// One measured case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// Case name (`getPayloadV5`, `getBlobsV2`, `forkchoiceUpdatedV3`).
    pub name: String,
    /// Blobs in the answer.
    pub blobs: usize,
    /// Answer size, bytes.
    pub bytes: usize,
    /// Direct calls.
    pub direct: Summary,
    /// Calls through sszgate.
    pub proxied: Summary,
    /// Calls through nginx, when measured.
    pub nginx: Option<Summary>,
    /// sszgate's CPU time per proxied call, ms.
    pub cpu_ms_per_call: f64,
    /// The floor relays, when measured: their calls and their CPU per call, ms.
    pub floors: Vec<(Summary, f64)>,
}

/// The whole report.
#[derive(Clone, Debug)]
pub struct Report {
    /// The cases.
    pub cases: Vec<CaseResult>,
    /// Small calls per second through the proxy (16 concurrent callers).
    pub throughput: f64,
    /// Small calls per second straight to the fake EL (same callers).
    pub throughput_direct: f64,
    /// Peak RSS of the proxy before and after the small-call run, KiB.
    pub rss_kib: (u64, u64),
    /// Resident RSS before and after the small-call run, KiB.
    pub rss_now_kib: (u64, u64),
    /// Small calls made for the memory check.
    pub small_calls: usize,
    /// Records the proxy wrote / dropped (from its status endpoint).
    pub records: (u64, u64),
    /// The bridge cases, when measured.
    pub bridge: Vec<BridgeResult>,
    /// `sszgate snooper` next to rpc-snooper, when measured.
    pub snooper: Option<crate::snooper_peer::Report>,
}

/// The canned answers of the fake EL, by case header.
pub(crate) struct Answers(pub(crate) Vec<(String, Bytes)>);

impl Answers {
    fn get(&self, case: &str) -> Bytes {
        self.0
            .iter()
            .find(|(name, _)| name == case)
            .map(|(_, b)| b.clone())
            .unwrap_or_else(|| {
                Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}")
            })
    }
}

pub(crate) fn rpc(result: &[u8]) -> Bytes {
    let mut out = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":".to_vec();
    out.extend_from_slice(result);
    out.push(b'}');
    Bytes::from(out)
}

pub(crate) async fn fake_el(answers: Arc<Answers>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binding the fake EL");
    let addr = listener.local_addr().expect("local addr");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let _ = stream.set_nodelay(true);
            let answers = answers.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let answers = answers.clone();
                    async move {
                        let case = request
                            .headers()
                            .get("x-bench-case")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_string();
                        let body = request
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        // Bridged calls carry no bench header: pick the answer from the call.
                        let case = if case.is_empty() {
                            case_of(&body)
                        } else {
                            case
                        };
                        Ok::<_, Infallible>(
                            Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(answers.get(&case)))
                                .expect("response"),
                        )
                    }
                });
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// A port free on 127.0.0.1 right now (the kernel's ephemeral pick).
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The answer case of a JSON-RPC call the bridge made: the method, and the blob count (the
/// last byte of the payload id, or the number of versioned hashes).
fn case_of(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    if text.contains("engine_getPayloadV5") {
        let id = text
            .rsplit("0x")
            .next()
            .unwrap_or("")
            .get(..16)
            .unwrap_or("0");
        format!(
            "getPayload-{}",
            u64::from_str_radix(&id[14..], 16).unwrap_or(0)
        )
    } else if text.contains("engine_getBlobsV2") {
        format!("getBlobs-{}", text.matches("\"0x").count())
    } else if text.contains("engine_newPayload") {
        "newPayload".into()
    } else if text.contains("engine_getClientVersion") {
        "clientVersion".into()
    } else {
        "fcu".into()
    }
}

/// The proxy under test, a child process stopped by its pid on drop.
pub(crate) struct ProxyChild {
    pub(crate) child: Child,
}

impl Drop for ProxyChild {
    fn drop(&mut self) {
        // Stopped already (and reaped: its pid may belong to another process by now).
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        // SIGTERM first, for a graceful drain; then make sure.
        terminate(self.child.id());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn terminate(pid: u32) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status();
}

/// utime + stime of a process, seconds.
pub(crate) fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold blanks).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of stat; 12 and 13 after the name and state.
    let hz = 100.0; // USER_HZ on Linux
    (ticks(11) + ticks(12)) / hz
}

/// (VmHWM, VmRSS) of a process, KiB.
pub(crate) fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

pub(crate) type HttpClient =
    Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

pub(crate) async fn call(client: &HttpClient, target: &str, case: &str, body: &Bytes) -> usize {
    let request = Request::post(target)
        .header("content-type", "application/json")
        .header("x-bench-case", case)
        .body(Full::new(body.clone()))
        .expect("request");
    let response = client.request(request).await.expect("the call succeeds");
    response
        .into_body()
        .collect()
        .await
        .expect("the body arrives")
        .to_bytes()
        .len()
}

pub(crate) fn start_proxy(
    sszgate: &Path,
    upstream: SocketAddr,
    dir: &Path,
    extra: &[String],
) -> (ProxyChild, SocketAddr, SocketAddr) {
    start_proxy_wrapped(&[], sszgate, upstream, dir, extra)
}

/// [`start_proxy`] through a wrapper command that execs it (e.g. `prlimit --nofile=128:128`),
/// so the child's pid is still the proxy's.
pub(crate) fn start_proxy_wrapped(
    wrapper: &[&str],
    sszgate: &Path,
    upstream: SocketAddr,
    dir: &Path,
    extra: &[String],
) -> (ProxyChild, SocketAddr, SocketAddr) {
    let (listen, metrics) = (
        SocketAddr::from(([127, 0, 0, 1], free_port())),
        SocketAddr::from(([127, 0, 0, 1], free_port())),
    );
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(sszgate);
            command
        }
        None => Command::new(sszgate),
    };
    let child = command
        .args([
            "proxy",
            "--upstream",
            &format!("http://{upstream}"),
            "--listen",
            &listen.to_string(),
            "--metrics",
            &metrics.to_string(),
        ])
        .arg("--store")
        .arg(format!("sqlite:{}", dir.join("bench.db").display()))
        .args(extra)
        .env("SSZGATE_LOG", log_filter())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting the sszgate proxy");
    (ProxyChild { child }, listen, metrics)
}

/// The log filter of the sszgate processes a bench starts: errors only unless `SSZGATE_LOG`
/// says otherwise. The benches' answers pair real blobs with hashes and payloads they do not
/// belong to, so verification fails on them by construction, and sszgate says so at `warn`
/// each time. (rpc-snooper's per-call log lines in snooper mode are not tracing's: they stay.)
pub(crate) fn log_filter() -> String {
    std::env::var("SSZGATE_LOG").unwrap_or_else(|_| "error".into())
}

fn start_nginx(nginx: &Path, upstream: SocketAddr, dir: &Path) -> Option<(ProxyChild, SocketAddr)> {
    let listen = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let conf = format!(
        "daemon off; worker_processes 1; pid {dir}/nginx.pid; error_log {dir}/nginx-error.log;
         events {{ worker_connections 256; }}
         http {{ access_log off; client_body_temp_path {dir}; proxy_temp_path {dir}; fastcgi_temp_path {dir}; uwsgi_temp_path {dir}; scgi_temp_path {dir};
           client_max_body_size 64m; proxy_buffering off; proxy_request_buffering off;
           upstream el {{ server {upstream}; keepalive 16; }}
           server {{ listen {listen}; location / {{ proxy_pass http://el; proxy_http_version 1.1; proxy_set_header Connection \"\"; }} }} }}",
        dir = dir.display()
    );
    let path = dir.join("nginx.conf");
    std::fs::write(&path, conf).ok()?;
    let child = Command::new(nginx)
        .arg("-c")
        .arg(&path)
        .arg("-p")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    Some((ProxyChild { child }, listen))
}

pub(crate) async fn wait_ready(addr: SocketAddr) {
    // Up to a minute: a debug build loads the KZG setup for a few seconds before it listens,
    // longer on a busy machine.
    for _ in 0..2400 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("nothing listens on {addr}");
}

/// Rounds for a case with `blobs` blobs: `base` from 24 blobs on, three times as many below.
pub(crate) fn rounds_for(blobs: usize, base: usize) -> usize {
    if blobs >= 24 { base } else { base * 3 }
}

/// Three calls to every target (connections open, caches warm); the answer's size.
pub(crate) async fn warm_up(
    client: &HttpClient,
    targets: &[String],
    case: &str,
    request: &Bytes,
) -> usize {
    let mut bytes = 0;
    for target in targets {
        for _ in 0..3 {
            bytes = call(client, target, case, request).await;
        }
    }
    bytes
}

/// `rounds` rounds of one call per target, each round in an order of its own
/// ([`round_orders`]), so that a burst of noise hits every target alike and no target always
/// follows the same one; each target's samples of the calls answered whole (200), and its
/// failed calls, in the order of `targets`. With `settle` (process ids), each call starts only
/// once those processes are idle ([`wait_idle`]).
pub(crate) async fn interleaved(
    client: &HttpClient,
    targets: &[String],
    (case, request): (&str, &Bytes),
    rounds: usize,
    settle: &[u32],
) -> (Vec<Vec<Duration>>, Vec<usize>) {
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); targets.len()];
    let mut failed = vec![0; targets.len()];
    for order in round_orders(targets.len(), rounds) {
        for which in order {
            wait_idle(settle).await;
            let start = Instant::now();
            match try_call(client, &targets[which], case, request).await {
                Ok(200) => samples[which].push(start.elapsed()),
                _ => failed[which] += 1,
            }
        }
    }
    (samples, failed)
}

/// The order of `targets` targets in each of `rounds` rounds: shuffled, from a fixed seed so
/// that a run can be repeated. A rotation (each round starting one later) let every target
/// go first equally often but kept its predecessor fixed: a middle measured right after
/// rpc-snooper always met the state rpc-snooper left the machine in.
pub(crate) fn round_orders(targets: usize, rounds: usize) -> Vec<Vec<usize>> {
    let mut rng = fastrand::Rng::with_seed(0x5572_6761_7465);
    (0..rounds)
        .map(|_| {
            let mut order: Vec<usize> = (0..targets).collect();
            rng.shuffle(&mut order);
            order
        })
        .collect()
}

/// A process is idle once it used less than this share of a core over [`IDLE_WINDOW`].
const IDLE_SHARE: f64 = 0.01;
/// The window over which idleness is judged.
const IDLE_WINDOW: Duration = Duration::from_millis(20);
/// The on-CPU nanoseconds in one [`IDLE_WINDOW`] from which a process counts as busy.
const BUSY_NS: u64 = (IDLE_WINDOW.as_nanos() as f64 * IDLE_SHARE) as u64;
/// The longest wait for idle processes: one that never settles (a timer's work, a collector)
/// delays the next call by this much and no more.
const IDLE_AT_MOST: Duration = Duration::from_secs(2);

/// Waits until every process of `pids` has been idle for [`IDLE_WINDOW`] — done with what it
/// does after an answer (logging, recording, publishing) — or [`IDLE_AT_MOST`]. Without it a
/// call would be timed while the previous middle still works on its own call, and a middle
/// would pay for whichever neighbour's deferred work came before it; an
/// Engine API link carries a call every few seconds, not back to back.
pub(crate) async fn wait_idle(pids: &[u32]) {
    if pids.is_empty() {
        return;
    }
    wait_until_quiet(|| oncpu_ns(pids)).await;
}

/// [`wait_idle`]'s waiting over any reading of on-CPU nanoseconds, so that it can be tested
/// with counts that do not depend on how busy the machine is.
async fn wait_until_quiet(mut read: impl FnMut() -> Vec<u64>) {
    let deadline = Instant::now() + IDLE_AT_MOST;
    let mut last = read();
    while Instant::now() < deadline {
        tokio::time::sleep(IDLE_WINDOW).await;
        let now = read();
        if now
            .iter()
            .zip(&last)
            .all(|(n, l)| n.saturating_sub(*l) < BUSY_NS)
        {
            return;
        }
        last = now;
    }
}

/// The on-CPU nanoseconds of each process so far: the sum over its threads of the first
/// field of `/proc/<pid>/task/<tid>/schedstat` (exact, where `/proc/<pid>/stat` counts in
/// 10 ms ticks). A thread that ended since is no longer counted, which only makes a process
/// look busy one window longer.
fn oncpu_ns(pids: &[u32]) -> Vec<u64> {
    pids.iter()
        .map(|pid| {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                return 0;
            };
            tasks
                .flatten()
                .filter_map(|task| first_field(&task.path().join("schedstat")))
                .sum()
        })
        .collect()
}

/// One call; its status once the whole answer arrived, or why there was none.
pub(crate) async fn try_call(
    client: &HttpClient,
    target: &str,
    case: &str,
    body: &Bytes,
) -> Result<u16, String> {
    let request = Request::post(target)
        .header("content-type", "application/json")
        .header("x-bench-case", case)
        .body(Full::new(body.clone()))
        .map_err(|e| e.to_string())?;
    let response = client.request(request).await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    Ok(status)
}

/// Runs the benchmark; `progress` is told each case as it starts (with its index and the
/// number of steps), then the small-call run, the bridge when measured, then `done`.
pub async fn run(options: &Options, progress: &mut dyn FnMut(usize, usize, &str)) -> Report {
    let fixtures = Fixtures::load(&options.data).expect("fixtures load");
    let blobs = fixtures.blobs().expect("blobs load");
    let (_, payload) = fixtures.reference_payload().expect("a reference payload");

    let z = format!("0x{}", "00".repeat(32));
    let fcu_request = Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"engine_forkchoiceUpdatedV3","params":[{{"headBlockHash":"{z}","safeBlockHash":"{z}","finalizedBlockHash":"{z}"}},null]}}"#
    ));
    let mut answers = vec![
        ("newPayload".to_string(), rpc(br#"{"status":"VALID","latestValidHash":null,"validationError":null}"#)),
        ("fcu".to_string(), rpc(br#"{"payloadStatus":{"status":"VALID","latestValidHash":null,"validationError":null},"payloadId":null}"#)),
        // The snoopers publish to xatu only once they know the EL's name and version.
        ("clientVersion".to_string(), rpc(br#"[{"code":"GE","name":"Geth","version":"1.17.8-stable","commit":"0xdeadbeef"}]"#)),
    ];
    let mut cases: Vec<(String, String, usize, Bytes)> = vec![(
        "forkchoiceUpdatedV3".into(),
        "fcu".into(),
        0,
        fcu_request.clone(),
    )];
    for &n in &options.blobs {
        let built = Message::BuiltPayload(
            built_payload(Fork::Osaka, &payload, &blobs, n).expect("built payload"),
        )
        .to_json()
        .expect("json");
        answers.push((format!("getPayload-{n}"), rpc(&built)));
        cases.push(("getPayloadV5".into(), format!("getPayload-{n}"), n, Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"engine_getPayloadV5","params":["0x0000000000000001"]}"#)));
        if n > 0 {
            let hashes: Vec<String> = (0..n).map(|i| format!("\"0x01{:062x}\"", i)).collect();
            let blobs_json = Message::Blobs(Blobs::V2(Some(blobs_v2_response(&blobs, n))))
                .to_json()
                .expect("json");
            answers.push((format!("getBlobs-{n}"), rpc(&blobs_json)));
            let request = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"engine_getBlobsV2","params":[[{}]]}}"#,
                hashes.join(",")
            );
            cases.push((
                "getBlobsV2".into(),
                format!("getBlobs-{n}"),
                n,
                Bytes::from(request),
            ));
        }
    }
    let answers = Arc::new(Answers(answers));
    let el = fake_el(answers.clone()).await;
    let dir = std::env::temp_dir().join(format!("sszgate-bench-proxy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (proxy, proxy_addr, metrics_addr) =
        start_proxy(&options.sszgate, el, &dir, &options.proxy_args);
    wait_ready(proxy_addr).await;
    let pid = proxy.child.id();
    let nginx = options
        .nginx
        .as_deref()
        .and_then(|n| start_nginx(n, el, &dir));
    if let Some((_, addr)) = &nginx {
        wait_ready(*addr).await;
    }

    let floors = match options.floors {
        true => FloorRelay::start_each(&[Mode::Copy, Mode::Splice, Mode::Hyper], el),
        false => Vec::new(),
    };

    let client: HttpClient = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(32)
        .build_http();
    let direct = format!("http://{el}/");
    let proxied = format!("http://{proxy_addr}/");
    let via_nginx = nginx.as_ref().map(|(_, a)| format!("http://{a}/"));

    // Every path of a case (each round calls them in an order of its own): direct, sszgate,
    // nginx (when measured), then the floor relays.
    let mut targets = vec![direct.clone(), proxied.clone()];
    targets.extend(via_nginx.clone());
    targets.extend(floors.iter().map(|f| format!("http://{}/", f.addr)));
    let mut results = Vec::new();
    let steps = cases.len() + 1;
    for (step, (name, case, n, request)) in cases.iter().enumerate() {
        progress(step, steps, &format!("{name}, {n} blobs"));
        let bytes = warm_up(&client, &targets, case, request).await;
        let rounds = rounds_for(*n, options.rounds);
        let cpu_before = cpu_seconds(pid);
        let floor_cpu_before: Vec<f64> = floors.iter().map(FloorRelay::cpu_seconds).collect();
        let (samples, failed) = interleaved(&client, &targets, (case, request), rounds, &[]).await;
        assert!(
            failed.iter().all(|&n| n == 0),
            "{name}, {n} blobs: calls failed per path {failed:?}"
        );
        let cpu = (cpu_seconds(pid) - cpu_before) * 1e3 / rounds as f64;
        let mut samples = samples.into_iter();
        let mut summary = |name: &str| Summary {
            name: name.into(),
            samples: samples.next().expect("one sample list per target"),
        };
        let direct = summary("direct");
        let proxied = summary("sszgate");
        let nginx = via_nginx.as_ref().map(|_| summary("nginx"));
        let floor_results = floors
            .iter()
            .zip(floor_cpu_before)
            .map(|(relay, before)| {
                (
                    summary(relay.mode.name()),
                    (relay.cpu_seconds() - before) * 1e3 / rounds as f64,
                )
            })
            .collect();
        results.push(CaseResult {
            name: name.clone(),
            blobs: *n,
            bytes,
            direct,
            proxied,
            nginx,
            cpu_ms_per_call: cpu,
            floors: floor_results,
        });
    }

    // Small-call throughput and memory growth.
    progress(
        cases.len(),
        steps,
        &format!("{} small calls", options.small_calls),
    );
    let rss_before = rss_kib(pid);
    let throughput = |target: String, calls: usize| {
        let client = client.clone();
        let request = fcu_request.clone();
        async move {
            let start = Instant::now();
            let per_task = calls / 16;
            let tasks: Vec<_> = (0..16)
                .map(|_| {
                    let (client, target, request) =
                        (client.clone(), target.clone(), request.clone());
                    tokio::spawn(async move {
                        for _ in 0..per_task {
                            call(&client, &target, "fcu", &request).await;
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.expect("caller task");
            }
            (per_task * 16) as f64 / start.elapsed().as_secs_f64()
        }
    };
    let throughput_direct = throughput(direct.clone(), options.small_calls).await;
    let throughput_proxied = throughput(proxied.clone(), options.small_calls).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_after = rss_kib(pid);
    let status: serde_json::Value = {
        let response = client
            .get(
                format!("http://{metrics_addr}/_sszgate/status")
                    .parse()
                    .expect("uri"),
            )
            .await
            .expect("status answers");
        serde_json::from_slice(
            &response
                .into_body()
                .collect()
                .await
                .expect("status body")
                .to_bytes(),
        )
        .unwrap_or_default()
    };
    drop(nginx);
    drop(proxy);
    let snooper = match &options.snooper {
        Some(peer) => {
            let bench = crate::snooper_peer::Bench {
                sszgate: &options.sszgate,
                el,
                dir: &dir,
                client: &client,
            };
            let mut step = |what: &str| progress(steps, steps + 1, &format!("rpc-snooper: {what}"));
            Some(crate::snooper_peer::run(peer, &bench, &cases, options.rounds, &mut step).await)
        }
        None => None,
    };
    let bridge = if options.bridge {
        progress(steps, steps + 1, "the bridge");
        measure_bridge(options, el, &dir, &client, &cases).await
    } else {
        Vec::new()
    };
    progress(steps, steps, "done");
    let _ = std::fs::remove_dir_all(&dir);
    Report {
        bridge,
        snooper,
        cases: results,
        throughput: throughput_proxied,
        throughput_direct,
        rss_kib: (rss_before.0, rss_after.0),
        rss_now_kib: (rss_before.1, rss_after.1),
        small_calls: options.small_calls,
        records: (
            status["records"]["recorded"].as_u64().unwrap_or(0),
            status["records"]["dropped"].as_u64().unwrap_or(0),
        ),
    }
}

impl Report {
    /// The floor table: what each floor relay adds and uses, next to sszgate.
    fn floors_markdown(&self) -> String {
        let mut out = String::from(
            "\nThe floors (plain TCP relays on loopback, copying and splicing, and an HTTP relay with nothing but hyper; nothing recorded; in the same rounds): added p50 ms and CPU per call ms, per blob where there are blobs.\n\n",
        );
        let names: Vec<&str> = self.cases[0]
            .floors
            .iter()
            .map(|(s, _)| s.name.as_str())
            .collect();
        out.push_str("| call | blobs | sszgate added | sszgate CPU |");
        for name in &names {
            out.push_str(&format!(" {name} added | {name} CPU |"));
        }
        out.push_str("\n|---|---:|---:|---:|");
        out.push_str(&"---:|---:|".repeat(names.len()));
        out.push('\n');
        let direct_ms = |c: &CaseResult| c.direct.median().as_secs_f64() * 1e3;
        for c in &self.cases {
            // Per blob where the answer has blobs, per call otherwise.
            let per = |v: f64| {
                if c.blobs > 0 {
                    format!("{:.4}/blob", v / c.blobs as f64)
                } else {
                    format!("{v:.3}")
                }
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} |",
                c.name,
                c.blobs,
                per(c.proxied.median().as_secs_f64() * 1e3 - direct_ms(c)),
                per(c.cpu_ms_per_call)
            ));
            for (summary, cpu) in &c.floors {
                out.push_str(&format!(
                    " {} | {} |",
                    per(summary.median().as_secs_f64() * 1e3 - direct_ms(c)),
                    per(*cpu)
                ));
            }
            out.push('\n');
        }
        out
    }

    /// The report as Markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let has_nginx = self.cases.iter().any(|c| c.nginx.is_some());
        out.push_str("| call | blobs | answer bytes | direct p50 ms | sszgate p50 ms | direct p95 ms | sszgate p95 ms | added p50 ms | added per blob ms | sszgate CPU per call ms | CPU per blob ms |");
        out.push_str(if has_nginx {
            " nginx p50 ms | nginx added p50 ms |\n"
        } else {
            "\n"
        });
        out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        out.push_str(if has_nginx { "---:|---:|\n" } else { "\n" });
        for c in &self.cases {
            let added =
                c.proxied.median().as_secs_f64() * 1e3 - c.direct.median().as_secs_f64() * 1e3;
            let per_blob = if c.blobs > 0 {
                format!("{:.4}", added / c.blobs as f64)
            } else {
                "–".into()
            };
            let cpu_blob = if c.blobs > 0 {
                format!("{:.4}", c.cpu_ms_per_call / c.blobs as f64)
            } else {
                "–".into()
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {:.3} | {} | {:.3} | {} |",
                c.name,
                c.blobs,
                c.bytes,
                ms(c.direct.median()),
                ms(c.proxied.median()),
                ms(c.direct.quantile(0.95)),
                ms(c.proxied.quantile(0.95)),
                added,
                per_blob,
                c.cpu_ms_per_call,
                cpu_blob
            ));
            if let Some(n) = &c.nginx {
                out.push_str(&format!(
                    " {} | {:.3} |",
                    ms(n.median()),
                    n.median().as_secs_f64() * 1e3 - c.direct.median().as_secs_f64() * 1e3
                ));
            }
            out.push('\n');
        }
        if self.cases.iter().any(|c| !c.floors.is_empty()) {
            out.push_str(&self.floors_markdown());
        }
        if !self.bridge.is_empty() {
            out.push_str("\nThe bridge (a REST-SSZ call through `sszgate proxy --upstream-transport json` to the JSON-RPC fake EL, against the JSON-RPC call straight to it):\n\n");
            out.push_str("| call | blobs | JSON bytes | SSZ bytes | direct JSON p50 ms | bridged p50 ms | bridged zstd p50 ms | added p50 ms | bridge CPU per call ms |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
            for b in &self.bridge {
                out.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} | {} | {:.3} | {:.3} |\n",
                    b.name,
                    b.blobs,
                    b.sizes.0,
                    b.sizes.1,
                    ms(b.direct.median()),
                    ms(b.bridged.median()),
                    ms(b.bridged_zstd.median()),
                    b.bridged.median().as_secs_f64() * 1e3 - b.direct.median().as_secs_f64() * 1e3,
                    b.cpu_ms_per_call
                ));
            }
        }
        if let Some(peer) = &self.snooper {
            out.push_str(&peer.markdown());
        }
        out.push_str(&format!(
            "\nSmall calls (forkchoiceUpdatedV3, 16 concurrent callers): {:.0} calls/s through sszgate, {:.0} calls/s direct. \
             Memory across {} small calls through sszgate: peak RSS {} KiB -> {} KiB, resident {} KiB -> {} KiB. Records written {}, dropped {}.\n",
            self.throughput,
            self.throughput_direct,
            self.small_calls,
            self.rss_kib.0,
            self.rss_kib.1,
            self.rss_now_kib.0,
            self.rss_now_kib.1,
            self.records.0,
            self.records.1
        ));
        out
    }
}

async fn send_request(client: &HttpClient, request: Request<Full<Bytes>>) -> usize {
    let response = client.request(request).await.expect("the call succeeds");
    assert!(
        response.status().is_success(),
        "status {}",
        response.status()
    );
    response
        .into_body()
        .collect()
        .await
        .expect("the body arrives")
        .to_bytes()
        .len()
}

/// The bridge: REST-SSZ calls to a second sszgate (`--upstream-transport json`) in front of the
/// same fake EL, against the JSON-RPC call straight to the EL, interleaved.
async fn measure_bridge(
    options: &Options,
    el: SocketAddr,
    dir: &Path,
    client: &HttpClient,
    cases: &[(String, String, usize, Bytes)],
) -> Vec<BridgeResult> {
    use sszgate_engine::message::BlobsRequest;
    let bridge_dir = dir.join("bridge");
    std::fs::create_dir_all(&bridge_dir).expect("bridge dir");
    let mut args = vec![
        "--upstream-transport".to_string(),
        "json".into(),
        "--jwt-secret".into(),
        BENCH_SECRET.into(),
    ];
    args.extend(options.proxy_args.iter().cloned());
    let (proxy, addr, _) = start_proxy(&options.sszgate, el, &bridge_dir, &args);
    wait_ready(addr).await;
    let pid = proxy.child.id();
    let secret = sszgate_gateway::JwtSecret::from_hex(BENCH_SECRET).expect("bench secret");
    let fixtures = Fixtures::load(&options.data).expect("fixtures load");
    let (block, _) = fixtures.reference_payload().expect("a reference payload");
    let np = Message::NewPayload(block.new_payload().expect("payload"));
    let np_json = Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"engine_newPayloadV4","params":{}}}"#,
        String::from_utf8(np.to_json().expect("json")).expect("utf8")
    ));
    let np_ssz = Bytes::from(np.to_ssz(Fork::Prague).expect("ssz"));
    let mut bridge_cases: Vec<BridgeCase> = vec![(
        "newPayloadV4".into(),
        0,
        np_json,
        "newPayload".into(),
        "POST",
        "/engine/v1/payloads".into(),
        Some("prague"),
        np_ssz,
    )];
    for (name, case, n, request) in cases {
        match name.as_str() {
            "getPayloadV5" => {
                let body = Bytes::from(format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"engine_getPayloadV5","params":["0x{:016x}"]}}"#,
                    n
                ));
                bridge_cases.push((
                    name.clone(),
                    *n,
                    body,
                    case.clone(),
                    "GET",
                    format!("/engine/v1/payloads/0x{:016x}", n),
                    Some("osaka"),
                    Bytes::new(),
                ));
            }
            "getBlobsV2" => {
                let request_ssz = Message::BlobsRequest(BlobsRequest {
                    versioned_hashes: (0..*n)
                        .map(|i| format!("0x01{:062x}", i).parse().expect("hash"))
                        .collect(),
                    indices: None,
                })
                .to_ssz(Fork::Osaka)
                .expect("ssz");
                bridge_cases.push((
                    name.clone(),
                    *n,
                    request.clone(),
                    case.clone(),
                    "POST",
                    "/engine/v1/blobs/v2".into(),
                    None,
                    Bytes::from(request_ssz),
                ));
            }
            _ => {}
        }
    }
    let direct_url = format!("http://{el}/");
    let mut results = Vec::new();
    for (name, n, json_body, case, verb, path, fork, rest_body) in bridge_cases {
        let rest_request = |zstd: bool| {
            let mut r = Request::builder()
                .method(verb)
                .uri(format!("http://{addr}{path}"))
                .header("authorization", format!("Bearer {}", secret.token()))
                .header("content-type", "application/octet-stream");
            if let Some(fork) = fork {
                r = r.header("eth-execution-version", fork);
            }
            if zstd {
                r = r.header("accept-encoding", "zstd");
            }
            r.body(Full::new(rest_body.clone())).expect("request")
        };
        let json_request = || {
            Request::post(&direct_url)
                .header("content-type", "application/json")
                .header("x-bench-case", &case)
                .body(Full::new(json_body.clone()))
                .expect("request")
        };
        let json_size = send_request(client, json_request()).await;
        let rest_size = send_request(client, rest_request(false)).await;
        send_request(client, rest_request(true)).await;
        let rounds = rounds_for(n, options.rounds);
        let (mut d, mut b, mut z) = (Vec::new(), Vec::new(), Vec::new());
        let cpu_before = cpu_seconds(pid);
        for round in 0..rounds {
            for which in [[0, 1, 2], [1, 2, 0], [2, 0, 1]][round % 3] {
                let start = Instant::now();
                match which {
                    0 => send_request(client, json_request()).await,
                    1 => send_request(client, rest_request(false)).await,
                    _ => send_request(client, rest_request(true)).await,
                };
                [&mut d, &mut b, &mut z][which].push(start.elapsed());
            }
        }
        let cpu = (cpu_seconds(pid) - cpu_before) * 1e3 / (2 * rounds) as f64;
        results.push(BridgeResult {
            name,
            blobs: n,
            sizes: (json_size, rest_size),
            direct: Summary {
                name: "direct JSON-RPC".into(),
                samples: d,
            },
            bridged: Summary {
                name: "REST-SSZ via bridge".into(),
                samples: b,
            },
            bridged_zstd: Summary {
                name: "REST-SSZ via bridge, zstd".into(),
                samples: z,
            },
            cpu_ms_per_call: cpu,
        });
    }
    drop(proxy);
    results
}

/// A bridge case: name, blobs, direct JSON body, its answer case, REST method, path, fork,
/// REST body.
type BridgeCase = (
    String,
    usize,
    Bytes,
    String,
    &'static str,
    String,
    Option<&'static str>,
    Bytes,
);

/// The JWT secret of the bridge benchmark (hex).
pub(crate) const BENCH_SECRET: &str =
    "5353535353535353535353535353535353535353535353535353535353535353";

/// The first number of a small `/proc` file (its first 64 bytes: a schedstat line is three
/// numbers).
fn first_field(path: &std::path::Path) -> Option<u64> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(64)
        .read_to_string(&mut text)
        .ok()?;
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use std::process::{Child, Command};

    use super::*;

    /// Kills and reaps the child when dropped, so that a failed assertion leaves no process.
    struct Reaped(Child);

    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    fn spawn(program: &str, args: &[&str]) -> Reaped {
        Reaped(Command::new(program).args(args).spawn().unwrap())
    }

    /// Each round is a permutation of the targets; over the rounds every target goes first
    /// and follows every other; the same seed gives the same orders.
    #[test]
    fn every_round_calls_each_target_once_and_every_target_follows_every_other() {
        let (targets, rounds) = (8, 100);
        let orders = round_orders(targets, rounds);
        assert_eq!(orders.len(), rounds);
        let mut follows = vec![vec![0; targets]; targets];
        let mut first = vec![0; targets];
        for order in &orders {
            let mut sorted = order.clone();
            sorted.sort();
            assert_eq!(sorted, (0..targets).collect::<Vec<_>>(), "{order:?}");
            first[order[0]] += 1;
            for pair in order.windows(2) {
                follows[pair[1]][pair[0]] += 1;
            }
        }
        for (target, before) in follows.iter().enumerate() {
            for (other, n) in before.iter().enumerate() {
                if other != target {
                    assert!(*n > 0, "{target} never follows {other}: {follows:?}");
                }
            }
        }
        assert!(first.iter().all(|&n| n > 0), "{first:?}");
        assert_eq!(
            orders,
            round_orders(targets, rounds),
            "the same seed, the same orders"
        );
    }

    /// A process that computes shows on-CPU time growing; one that sleeps does not; a process
    /// that is gone counts as idle. Whether a 20 ms window shows a busy process busy depends on
    /// the machine's load, so the waiting itself is tested with counts given by hand below.
    #[test]
    #[cfg(target_os = "linux")]
    fn on_cpu_time_grows_for_a_busy_process_and_stops_for_a_sleeping_one() {
        let busy = spawn("sh", &["-c", "while :; do :; done"]);
        let idle = spawn("sleep", &["60"]);
        let pids = [busy.0.id(), idle.0.id()];
        let before = oncpu_ns(&pids[..1]);
        let grew = (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(100));
            oncpu_ns(&pids[..1])[0] > before[0] + 1_000_000
        });
        assert!(grew, "a spinning process used under 1 ms of CPU in 10 s");
        // Once `sleep` has started (loading it takes CPU), its count stops moving.
        let settled = (0..100).any(|_| {
            let first = oncpu_ns(&pids[1..]);
            std::thread::sleep(Duration::from_millis(100));
            first == oncpu_ns(&pids[1..]) && first[0] > 0
        });
        assert!(settled, "a sleeping process kept using CPU");
        assert_eq!(oncpu_ns(&[u32::MAX]), vec![0]);
    }

    /// The reads `wait_until_quiet` makes before it returns, and how long it waited, when
    /// each process's count grows by the given steps (the last step repeats).
    fn quiet_after(steps: &[u64]) -> (usize, Duration) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let (mut reads, mut count) = (0usize, 0u64);
        let started = Instant::now();
        runtime.block_on(wait_until_quiet(|| {
            count += steps[reads.min(steps.len() - 1)];
            reads += 1;
            vec![1, count]
        }));
        (reads, started.elapsed())
    }

    /// A window under 1 % of a core (0.2 ms in 20 ms) is quiet and ends the wait at once; a
    /// process busy for some windows is waited for; one that never settles is waited for up
    /// to the cap and no longer.
    #[test]
    fn a_busy_process_is_waited_for_up_to_the_cap_and_a_quiet_one_is_not() {
        let busy = BUSY_NS;
        assert_eq!(busy, 200_000, "1 % of a 20 ms window");
        assert_eq!(quiet_after(&[0, busy - 1]).0, 2);
        assert_eq!(quiet_after(&[0, busy, busy, busy, 0]).0, 5);
        let (reads, waited) = quiet_after(&[0, busy]);
        assert!(waited >= IDLE_AT_MOST, "{waited:?}");
        // One window of 20 ms at least between reads: at most 100 of them in 2 s.
        assert!((2..=101).contains(&reads), "{reads} reads");
    }
}
