//! rpc-snooper as a peer in `sszgate bench proxy` (`--rpc-snooper`): `sszgate snooper` and
//! rpc-snooper's own `snooper`, each a separate process before the proxy benchmark's fake EL,
//! measured in the same interleaved rounds as the direct call. Both run as a devnet runs
//! them (per-call log lines with bodies, truncated, to a file); sszgate also records to
//! SQLite, as it does by default. With a xatu server (`--xatu`), a second pair runs with
//! `--xatu-enabled --xatu-output xatu:…` publishing to it, in the same rounds.
//!
//! The rounds also call the EL through three floor relays (`relay_floor`: copying, splicing,
//! and splicing while reading every byte into memory as a recording relay must), the least
//! any relay adds on this machine, to read the middles against.
//! Each call of the rounds starts once every middle is idle (`proxy::wait_idle`): what a
//! middle does after an answer is its CPU, not the next middle's latency.
//! Per middle: added latency per call and per blob (its p50 less the direct p50), CPU per
//! call (utime + stime deltas from `/proc`), resident and peak memory (`VmRSS`, `VmHWM`), and
//! a sustained-load run of 72-blob getBlobsV2 calls (4 concurrent callers, one middle at a
//! time): calls that failed, and, for the publishing middles, how many of their events
//! reached the xatu server (the calls carry hashes of their own, so they are told apart).
//!
//! Not here: the fake EL, the cases and the round helpers ([`crate::proxy`]); the xatu
//! server itself (the shared kit's `run.sh` starts it).

use std::{
    io::Read,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use serde_json::Value;

use crate::{
    harness::{Summary, ms},
    proxy::{
        HttpClient, ProxyChild, cpu_seconds, free_port, interleaved, log_filter, rounds_for,
        rss_kib, try_call, wait_ready,
    },
    relay_floor::{FloorRelay, Mode},
};

/// Options of the rpc-snooper comparison.
#[derive(Clone, Debug)]
pub struct Options {
    /// rpc-snooper's `snooper` executable (`../shared/tools/rpc-snooper/build.sh`).
    pub rpc_snooper: PathBuf,
    /// The xatu server to publish to; without it the middles only log.
    pub xatu: Option<XatuKit>,
    /// getBlobsV2 calls (the most blobs measured) through each middle under sustained load.
    pub sustained_calls: usize,
}

/// A xatu server: its binary (`../shared/tools/xatu/build.sh`) and the kit directory whose
/// `run.sh` starts it with a file of the events it accepted.
#[derive(Clone, Debug)]
pub struct XatuKit {
    /// The `xatu` executable.
    pub binary: PathBuf,
    /// `../shared/tools/xatu` (its `run.sh` and `down.sh`).
    pub kit: PathBuf,
}

/// Concurrent callers of the sustained-load run.
const SUSTAINED_CALLERS: usize = 4;
/// How long the events of the sustained-load run may take to reach the xatu server after
/// the count last grew (rpc-snooper's default batch timeout is 5 s).
const EVENTS_QUIET: Duration = Duration::from_secs(15);
/// The longest a publishing middle may take to get its first event to the server.
const FIRST_EVENT: Duration = Duration::from_secs(90);
/// The xatu server's events file is read up to this size.
const EVENTS_FILE_CAP: u64 = 256 << 20;
/// First byte of the versioned hashes of the sustained-load calls (the rounds use `01`).
const SUSTAINED_MARK: &str = "0x02";
/// First byte of the versioned hash of the start-up probe.
const PROBE_MARK: &str = "0x03";

/// Which snooper a middle runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Program {
    Sszgate,
    RpcSnooper,
}

impl Program {
    fn name(self) -> &'static str {
        match self {
            Program::Sszgate => "sszgate snooper",
            Program::RpcSnooper => "rpc-snooper",
        }
    }
}

/// A middle under test: one snooper process before the fake EL.
struct Middle {
    name: String,
    /// Its client name at the xatu server, when it publishes.
    xatu_name: Option<String>,
    child: ProxyChild,
    addr: SocketAddr,
}

impl Middle {
    /// Starts `program` before `el`, publishing to `xatu` (the gRPC address) when given, with
    /// its log in `dir`; returns once it listens.
    async fn start(
        program: Program,
        binaries: (&Path, &Path),
        el: SocketAddr,
        dir: &Path,
        xatu: Option<&str>,
    ) -> Middle {
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let slug = match program {
            Program::Sszgate => "sszgate",
            Program::RpcSnooper => "rpc-snooper",
        };
        let slug = format!("{slug}{}", if xatu.is_some() { "-xatu" } else { "" });
        let mut command = match program {
            Program::Sszgate => {
                let mut c = Command::new(binaries.0);
                c.arg("snooper").env("SSZGATE_LOG", log_filter());
                c
            }
            Program::RpcSnooper => Command::new(binaries.1),
        };
        command.args(["-b=127.0.0.1", &format!("-p={}", addr.port()), "--no-color"]);
        if program == Program::Sszgate {
            let store = format!("sqlite:{}", dir.join(format!("{slug}.db")).display());
            command.args(["--store", &store]);
        }
        if let Some(grpc) = xatu {
            command.args(xatu_flags(&slug, grpc));
        }
        let log = std::fs::File::create(dir.join(format!("{slug}.log"))).expect("a log file");
        let child = command
            .arg(format!("http://{el}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", program.name()));
        let middle = Middle {
            name: format!(
                "{}{}",
                program.name(),
                if xatu.is_some() { " + xatu" } else { "" }
            ),
            xatu_name: xatu.map(|_| slug),
            child: ProxyChild { child },
            addr,
        };
        wait_ready(addr).await;
        middle
    }

    fn pid(&self) -> u32 {
        self.child.child.id()
    }

    fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

/// rpc-snooper's xatu flags for a client named `name` publishing to `grpc`, at its defaults
/// otherwise (batches of 512, 5 s batch timeout, 5 workers, a queue of 51200).
fn xatu_flags(name: &str, grpc: &str) -> Vec<String> {
    format!(
        "--xatu-enabled --xatu-name {name} --xatu-network-name bench --xatu-network-id 1337 \
         --xatu-output xatu:{grpc}"
    )
    .split_whitespace()
    .map(str::to_string)
    .collect()
}

/// A xatu server from the kit's `run.sh`, stopped by `down.sh` on drop.
struct XatuServer {
    grpc: String,
    events: PathBuf,
    run: PathBuf,
    kit: PathBuf,
}

impl XatuServer {
    fn start(kit: &XatuKit, run: &Path) -> Result<XatuServer, String> {
        let out = Command::new("bash")
            .arg(kit.kit.join("run.sh"))
            .env("XATU", &kit.binary)
            .env("RUN", run)
            .output()
            .map_err(|e| format!("running run.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "run.sh failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let info: Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| format!("run.sh printed no JSON: {e}"))?;
        let field = |name: &str| info[name].as_str().map(str::to_string);
        let (Some(grpc), Some(events)) = (field("grpc"), field("events")) else {
            return Err(format!("run.sh printed no grpc or events: {info}"));
        };
        Ok(XatuServer {
            grpc,
            events: events.into(),
            run: run.into(),
            kit: kit.kit.clone(),
        })
    }

    /// Events from client `name` whose first versioned hash starts with `mark`.
    fn events_marked(&self, name: &str, mark: &str) -> u64 {
        let mut text = String::new();
        if let Ok(file) = std::fs::File::open(&self.events) {
            let _ = file.take(EVENTS_FILE_CAP).read_to_string(&mut text);
        }
        text.lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|e| e["meta"]["client"]["name"] == name)
            .filter(|e| {
                e["EXECUTION_ENGINE_GET_BLOBS"]["versioned_hashes"][0]
                    .as_str()
                    .is_some_and(|h| h.starts_with(mark))
            })
            .count() as u64
    }
}

impl Drop for XatuServer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(self.kit.join("down.sh"))
            .arg(&self.run)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// One case measured through every middle.
#[derive(Clone, Debug)]
pub struct PeerCase {
    /// Case name (`getPayloadV5`, `getBlobsV2`, `forkchoiceUpdatedV3`).
    pub name: String,
    /// Blobs in the answer.
    pub blobs: usize,
    /// Direct calls.
    pub direct: Summary,
    /// Per middle (in [`Report::middles`]' order): its calls and its CPU per call, ms.
    pub middles: Vec<(Summary, f64)>,
    /// Per middle, then per floor relay: calls that failed (no whole answer, or not 200), left
    /// out of its samples.
    pub failed: Vec<usize>,
    /// The floor relays' calls in the same rounds (copying, splicing, splicing and reading
    /// into memory; TCP relays): the least any relay adds on this machine.
    pub floors: Vec<Summary>,
}

/// What one middle used, and how it held up under sustained load.
#[derive(Clone, Debug)]
pub struct MiddleResult {
    /// `sszgate snooper`, `rpc-snooper`, with ` + xatu` when publishing.
    pub name: String,
    /// VmRSS once started, before any call, KiB.
    pub rss_start_kib: u64,
    /// VmRSS after the rounds, before the sustained load, KiB.
    pub rss_before_load_kib: u64,
    /// VmRSS after the sustained load, KiB.
    pub rss_after_kib: u64,
    /// VmHWM at the end (the peak over the whole run), KiB.
    pub rss_peak_kib: u64,
    /// Calls of the sustained-load run, and the blobs in each.
    pub load_calls: (usize, usize),
    /// Of those, calls that failed (no answer, or not 200).
    pub load_failed: usize,
    /// How long the sustained-load run took.
    pub load_time: Duration,
    /// For a publishing middle: events of the sustained-load calls that reached the server.
    pub events: Option<u64>,
}

/// The comparison's result.
#[derive(Clone, Debug)]
pub struct Report {
    /// The middles, in the order of [`PeerCase::middles`].
    pub middles: Vec<MiddleResult>,
    /// The cases.
    pub cases: Vec<PeerCase>,
    /// Why there is no publishing pair, when there is none.
    pub no_xatu: Option<String>,
}

/// What the comparison shares with the proxy benchmark: the sszgate executable, the fake EL,
/// a scratch directory and the HTTP client.
pub(crate) struct Bench<'a> {
    pub(crate) sszgate: &'a Path,
    pub(crate) el: SocketAddr,
    pub(crate) dir: &'a Path,
    pub(crate) client: &'a HttpClient,
}

/// Runs the comparison over `cases` (name, answer case, blobs, request), with `rounds`
/// rounds per case as the proxy benchmark counts them; `progress` is told each step.
pub(crate) async fn run(
    options: &Options,
    bench: &Bench<'_>,
    cases: &[(String, String, usize, Bytes)],
    rounds: usize,
    progress: &mut dyn FnMut(&str),
) -> Report {
    let (server, no_xatu) = match &options.xatu {
        Some(kit) => match XatuServer::start(kit, &bench.dir.join("xatu")) {
            Ok(server) => (Some(server), None),
            Err(e) => (None, Some(format!("the xatu server did not start: {e}"))),
        },
        None => (None, Some("no xatu server given".to_string())),
    };
    let middles = start_middles(options, bench, server.as_ref()).await;
    let mut results: Vec<MiddleResult> = middles.iter().map(started).collect();
    if let Some(server) = &server {
        progress("the publishing middles' first events");
        for middle in middles.iter().filter(|m| m.xatu_name.is_some()) {
            first_event(bench.client, middle, server).await;
        }
    }
    // The least any relay adds on this machine: copying, and splicing (no copy to user space).
    let floors = FloorRelay::start_each(&[Mode::Copy, Mode::Splice, Mode::SpliceTee], bench.el);
    let peer_cases = measure_cases(bench, (&middles, &floors), cases, rounds, progress).await;
    let load = cases
        .iter()
        .filter(|(name, ..)| name == "getBlobsV2")
        .max_by_key(|(_, _, n, _)| *n);
    if let Some((_, case, n, _)) = load {
        let body = blobs_request(SUSTAINED_MARK, *n);
        let calls = options.sustained_calls;
        for (middle, result) in middles.iter().zip(&mut results) {
            progress(&format!("sustained load through {}", middle.name));
            result.rss_before_load_kib = rss_kib(middle.pid()).1;
            let started = Instant::now();
            result.load_failed = sustained(bench.client, &middle.url(), case, &body, calls).await;
            result.load_time = started.elapsed();
            result.load_calls = (calls, *n);
        }
        if let Some(server) = &server {
            progress("the sustained load's events at the xatu server");
            settle_events(&middles, &mut results, server, calls).await;
        }
    }
    for (middle, result) in middles.iter().zip(&mut results) {
        (result.rss_peak_kib, result.rss_after_kib) = rss_kib(middle.pid());
    }
    Report {
        middles: results,
        cases: peer_cases,
        no_xatu,
    }
}

/// sszgate's and rpc-snooper's middles, logging only, then publishing to `server` if any.
async fn start_middles(
    options: &Options,
    bench: &Bench<'_>,
    server: Option<&XatuServer>,
) -> Vec<Middle> {
    let binaries = (bench.sszgate, options.rpc_snooper.as_path());
    let mut outputs = vec![None];
    outputs.extend(server.map(|s| Some(s.grpc.as_str())));
    let mut middles = Vec::new();
    for grpc in outputs {
        for program in [Program::Sszgate, Program::RpcSnooper] {
            middles.push(Middle::start(program, binaries, bench.el, bench.dir, grpc).await);
        }
    }
    middles
}

/// Every case, direct, through every middle and through the floor relays in the same rounds,
/// with each middle's CPU.
async fn measure_cases(
    bench: &Bench<'_>,
    (middles, floors): (&[Middle], &[FloorRelay]),
    cases: &[(String, String, usize, Bytes)],
    rounds: usize,
    progress: &mut dyn FnMut(&str),
) -> Vec<PeerCase> {
    let mut targets = vec![format!("http://{}/", bench.el)];
    targets.extend(middles.iter().map(Middle::url));
    targets.extend(floors.iter().map(|f| format!("http://{}/", f.addr)));
    let mut out = Vec::new();
    for (name, case, n, request) in cases {
        progress(&format!("{name}, {n} blobs"));
        let warm_failed = warm_up_peers(bench.client, &targets, case, request).await;
        let rounds = rounds_for(*n, rounds);
        let before: Vec<f64> = middles.iter().map(|m| cpu_seconds(m.pid())).collect();
        let pids: Vec<u32> = middles.iter().map(Middle::pid).collect();
        let (samples, mut failed) =
            interleaved(bench.client, &targets, (case, request), rounds, &pids).await;
        for (total, warm) in failed.iter_mut().zip(warm_failed) {
            *total += warm;
        }
        let mut samples = samples.into_iter();
        let direct = Summary {
            name: "direct".into(),
            samples: samples.next().expect("the direct samples"),
        };
        let per_middle = middles
            .iter()
            .zip(samples.by_ref())
            .zip(before)
            .map(|((m, samples), before)| {
                let cpu = (cpu_seconds(m.pid()) - before) * 1e3 / rounds as f64;
                let name = m.name.clone();
                (Summary { name, samples }, cpu)
            })
            .collect();
        out.push(PeerCase {
            name: name.clone(),
            blobs: *n,
            direct,
            middles: per_middle,
            failed: failed[1..].to_vec(),
            floors: floors
                .iter()
                .zip(samples)
                .map(|(floor, samples)| Summary {
                    name: floor.mode.name().to_string(),
                    samples,
                })
                .collect(),
        });
    }
    out
}

/// Three calls to every target before a case's rounds; each target's failed calls. A peer
/// that cuts an answer here is a result to report, not a reason to stop the bench.
async fn warm_up_peers(
    client: &HttpClient,
    targets: &[String],
    case: &str,
    request: &Bytes,
) -> Vec<usize> {
    let mut failed = vec![0; targets.len()];
    for (target, failed) in targets.iter().zip(&mut failed) {
        for _ in 0..3 {
            if try_call(client, target, case, request).await != Ok(200) {
                *failed += 1;
            }
        }
    }
    failed
}

/// A middle's result as it starts: its resident memory now, nothing measured yet.
fn started(middle: &Middle) -> MiddleResult {
    let rss = rss_kib(middle.pid()).1;
    MiddleResult {
        name: middle.name.clone(),
        rss_start_kib: rss,
        rss_before_load_kib: rss,
        rss_after_kib: rss,
        rss_peak_kib: rss,
        load_calls: (0, 0),
        load_failed: 0,
        load_time: Duration::ZERO,
        events: None,
    }
}

/// A getBlobsV2 call for `n` versioned hashes starting with `mark`.
fn blobs_request(mark: &str, n: usize) -> Bytes {
    let hashes: Vec<String> = (0..n).map(|i| format!("\"{mark}{i:062x}\"")).collect();
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"engine_getBlobsV2","params":[[{}]]}}"#,
        hashes.join(",")
    ))
}

/// Probes `middle` until an event of its reaches the server: both snoopers publish only once
/// they know the EL's version, which they ask for as they start.
async fn first_event(client: &HttpClient, middle: &Middle, server: &XatuServer) {
    let name = middle.xatu_name.as_deref().expect("a publishing middle");
    let probe = blobs_request(PROBE_MARK, 1);
    let deadline = Instant::now() + FIRST_EVENT;
    while server.events_marked(name, PROBE_MARK) == 0 {
        assert!(
            Instant::now() < deadline,
            "{} published nothing to the xatu server in {FIRST_EVENT:?}",
            middle.name
        );
        let _ = try_call(client, &middle.url(), "probe", &probe).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// `calls` calls through `target` from [`SUSTAINED_CALLERS`] concurrent callers; how many
/// failed.
async fn sustained(
    client: &HttpClient,
    target: &str,
    case: &str,
    body: &Bytes,
    calls: usize,
) -> usize {
    let callers: Vec<_> = (0..SUSTAINED_CALLERS)
        .map(|i| {
            let share = calls / SUSTAINED_CALLERS + usize::from(i < calls % SUSTAINED_CALLERS);
            let (client, target, case, body) = (
                client.clone(),
                Arc::<str>::from(target),
                Arc::<str>::from(case),
                body.clone(),
            );
            tokio::spawn(async move {
                let mut failed = 0;
                for _ in 0..share {
                    if try_call(&client, &target, &case, &body).await != Ok(200) {
                        failed += 1;
                    }
                }
                failed
            })
        })
        .collect();
    let mut failed = 0;
    for caller in callers {
        failed += caller.await.unwrap_or(0);
    }
    failed
}

/// Waits until every publishing middle's sustained-load events are at the server, or their
/// count has not grown for [`EVENTS_QUIET`]; records the counts.
async fn settle_events(
    middles: &[Middle],
    results: &mut [MiddleResult],
    server: &XatuServer,
    calls: usize,
) {
    let counts = || -> Vec<Option<u64>> {
        middles
            .iter()
            .map(|m| {
                m.xatu_name
                    .as_deref()
                    .map(|name| server.events_marked(name, SUSTAINED_MARK))
            })
            .collect()
    };
    let mut last = counts();
    let mut grew = Instant::now();
    loop {
        let all_in = last.iter().flatten().all(|&n| n >= calls as u64);
        if all_in || grew.elapsed() > EVENTS_QUIET {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = counts();
        if now != last {
            grew = Instant::now();
            last = now;
        }
    }
    for (result, count) in results.iter_mut().zip(last) {
        result.events = count;
    }
}

fn mib(kib: u64) -> String {
    format!("{:.0}", kib as f64 / 1024.0)
}

impl Report {
    /// The middle named `name` and its index.
    fn middle(&self, name: &str) -> Option<usize> {
        self.middles.iter().position(|m| m.name == name)
    }

    /// The report as Markdown: latency and CPU per case, memory and sustained load per
    /// middle, and the target's verdict.
    pub fn markdown(&self) -> String {
        let mut out = String::from(
            "\nrpc-snooper as a peer (`sszgate snooper` and rpc-snooper's `snooper`, both at their defaults: per-call log lines with truncated bodies to a file; sszgate also records to SQLite), in the same rounds as the direct call; each call starts once every middle has been idle for 20 ms (under 1 % of a core), at most 2 s after the previous one. Per middle: added p50 ms (its p50 less the direct p50) and CPU ms per call; per blob in brackets where there are blobs.\n\n| call | blobs | direct p50 ms |",
        );
        for m in &self.middles {
            out.push_str(&format!(" {} added | {} CPU |", m.name, m.name));
        }
        let floors = self.cases.first().map_or(&[][..], |c| &c.floors[..]);
        for floor in floors {
            out.push_str(&format!(" {} added |", floor.name));
        }
        out.push_str("\n|---|---:|---:|");
        out.push_str(&"---:|---:|".repeat(self.middles.len()));
        out.push_str(&"---:|".repeat(floors.len()));
        out.push('\n');
        for c in &self.cases {
            let direct = c.direct.median().as_secs_f64() * 1e3;
            let shown = |v: f64| {
                if c.blobs > 0 {
                    format!("{v:.3} ({:.4})", v / c.blobs as f64)
                } else {
                    format!("{v:.3}")
                }
            };
            out.push_str(&format!(
                "| {} | {} | {} |",
                c.name,
                c.blobs,
                ms(c.direct.median())
            ));
            for (summary, cpu) in &c.middles {
                let added = summary.median().as_secs_f64() * 1e3 - direct;
                out.push_str(&format!(" {} | {} |", shown(added), shown(*cpu)));
            }
            for floor in &c.floors {
                let added = floor.median().as_secs_f64() * 1e3 - direct;
                out.push_str(&format!(" {} |", shown(added)));
            }
            out.push('\n');
        }
        for c in self
            .cases
            .iter()
            .filter(|c| c.failed.iter().any(|&n| n > 0))
        {
            let floors = c.floors.iter().map(|f| f.name.as_str());
            let names = self.middles.iter().map(|m| m.name.as_str()).chain(floors);
            let failed: Vec<String> = names
                .zip(&c.failed)
                .filter(|(_, n)| **n > 0)
                .map(|(name, n)| format!("{name} {n}"))
                .collect();
            out.push_str(&format!(
                "\nFailed calls in the rounds of {} ({} blobs), left out of the samples: {}.\n",
                c.name,
                c.blobs,
                failed.join(", ")
            ));
        }
        out.push_str(&self.middles_markdown());
        out.push_str(&self.verdict());
        out
    }

    fn middles_markdown(&self) -> String {
        let mut out = format!(
            "\nMemory (VmRSS, MiB) and sustained load ({SUSTAINED_CALLERS} concurrent callers of getBlobsV2, one middle at a time):\n\n| middle | RSS started | RSS before load | RSS after load | peak (VmHWM) | load calls × blobs | failed | calls/s | events at xatu |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
        );
        for m in &self.middles {
            let events = m
                .events
                .map_or("–".to_string(), |e| format!("{e} of {}", m.load_calls.0));
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} × {} | {} | {:.1} | {} |\n",
                m.name,
                mib(m.rss_start_kib),
                mib(m.rss_before_load_kib),
                mib(m.rss_after_kib),
                mib(m.rss_peak_kib),
                m.load_calls.0,
                m.load_calls.1,
                m.load_failed,
                m.load_calls.0 as f64 / m.load_time.as_secs_f64().max(1e-9),
                events
            ));
        }
        if let Some(why) = &self.no_xatu {
            out.push_str(&format!("\nNo publishing pair: {why}.\n"));
        }
        out
    }

    /// sszgate's added latency and CPU per call over rpc-snooper's for the calls with the
    /// most blobs, publishing when measured so; the target is at most 1/4.
    fn verdict(&self) -> String {
        let pair = [" + xatu", ""].into_iter().find_map(|suffix| {
            let ours = self.middle(&format!("{}{suffix}", Program::Sszgate.name()))?;
            let theirs = self.middle(&format!("{}{suffix}", Program::RpcSnooper.name()))?;
            Some((ours, theirs, suffix))
        });
        let Some((ours, theirs, suffix)) = pair else {
            return String::new();
        };
        let most = self.cases.iter().map(|c| c.blobs).max().unwrap_or(0);
        let mut out = format!(
            "\nsszgate over rpc-snooper{} at {most} blobs (target: at most 0.25 for both):\n\n",
            if suffix.is_empty() {
                ", logging only"
            } else {
                ", both publishing to xatu"
            }
        );
        for c in self.cases.iter().filter(|c| c.blobs == most && most > 0) {
            let direct = c.direct.median().as_secs_f64();
            let added = |i: usize| c.middles[i].0.median().as_secs_f64() - direct;
            let latency = added(ours) / added(theirs);
            let cpu = c.middles[ours].1 / c.middles[theirs].1;
            let met = if latency <= 0.25 && cpu <= 0.25 {
                "met"
            } else {
                "not met"
            };
            out.push_str(&format!(
                "- {}: added latency {latency:.3}, CPU {cpu:.3}: {met}",
                c.name
            ));
            for floor in &c.floors {
                let floor_added = floor.median().as_secs_f64() - direct;
                out.push_str(&format!(
                    "; the {} added {:.3} of rpc-snooper's",
                    floor.name,
                    floor_added / added(theirs)
                ));
            }
            out.push('\n');
        }
        let (o, t) = (&self.middles[ours], &self.middles[theirs]);
        out.push_str(&format!(
            "- memory under load: sszgate {} → {} MiB (peak {}), rpc-snooper {} → {} MiB (peak {})\n",
            mib(o.rss_before_load_kib),
            mib(o.rss_after_kib),
            mib(o.rss_peak_kib),
            mib(t.rss_before_load_kib),
            mib(t.rss_after_kib),
            mib(t.rss_peak_kib)
        ));
        out
    }
}
