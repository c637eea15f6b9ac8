//! `sszgate drive`: flags resolved into a driver, then blocks until the count or the duration
//! is reached, with progress on the terminal (plain lines when stderr is not one) and a
//! per-method latency summary at the end.

use std::{
    collections::BTreeMap,
    io::IsTerminal,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{Context, Result, bail};
use clap::Args;
use sszgate_drive::{
    BlockReport, DriveConfig, Driver, EngineClient, EngineTransport, EthRpc, Load, LoadShape,
    devnet::DevnetState,
};
use sszgate_engine::Fork;
use sszgate_record::{Recorder, Sink, SinkSpec};

use crate::flags::{self, DataArg, ForkParser, JwtSecretArg, LabelsArg};

/// Arguments of `sszgate drive`.
#[derive(Debug, Args)]
#[command(mut_arg("jwt_secret", |arg| arg.required_unless_present("devnet")))]
pub(crate) struct DriveArgs {
    /// A devnet directory (`sszgate devnet up`): takes the engine URL (the devnet's proxy),
    /// the JWT secret, the public RPC and the fork from its devnet.json.
    #[arg(long, help_heading = "Target")]
    devnet: Option<PathBuf>,

    /// With --devnet: talk to the EL directly, not through the devnet's proxy.
    #[arg(long, requires = "devnet", help_heading = "Target")]
    direct: bool,

    /// The Engine API URL to drive, e.g. http://127.0.0.1:8551.
    #[arg(long, required_unless_present = "devnet", help_heading = "Target")]
    engine: Option<String>,

    #[command(flatten, next_help_heading = "Target")]
    jwt: JwtSecretArg,

    /// The EL's public JSON-RPC: the chain head is read there, and the load sent there.
    #[arg(long, required_unless_present = "devnet", help_heading = "Target")]
    eth_rpc: Option<String>,

    /// The transport to speak: json (JSON-RPC) or ssz (REST-SSZ).
    #[arg(long, default_value = "json", help_heading = "Target")]
    transport: EngineTransport,

    /// The chain's fork (cancun, prague or osaka); default: a devnet's own, else found from the
    /// head and the EL's capabilities.
    #[arg(long, env = flags::FORK_ENV, value_parser = ForkParser, help_heading = "Target")]
    fork: Option<Fork>,

    /// Blocks to build (default 10 unless --duration is given).
    #[arg(long, conflicts_with = "duration", help_heading = "Pace")]
    blocks: Option<u64>,

    /// Run for this long instead of a block count, e.g. 5m.
    #[arg(long, value_parser = humantime::parse_duration, help_heading = "Pace")]
    duration: Option<Duration>,

    /// Wall time per slot, e.g. 12s; 0 builds as fast as the EL goes.
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration, help_heading = "Pace")]
    slot_time: Duration,

    /// Time the EL gets to build between forkchoiceUpdated and getPayload.
    #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration, help_heading = "Pace")]
    build_time: Duration,

    /// Plain ETH transfers per block.
    #[arg(long, default_value_t = 0, help_heading = "Load")]
    txs_per_block: usize,

    /// Blob transactions per block.
    #[arg(long, default_value_t = 0, help_heading = "Load")]
    blob_txs_per_block: usize,

    /// Blobs in each blob transaction (1-6).
    #[arg(long, default_value_t = 6, help_heading = "Load")]
    blobs_per_tx: usize,

    #[command(flatten, next_help_heading = "Load")]
    data: DataArg,

    /// Skip getBlobs after each block with blobs.
    #[arg(long, help_heading = "Load")]
    no_get_blobs: bool,

    /// Where the driver's own records go (source = driver); repeatable, as for the proxy.
    /// Default: sqlite:sszgate-drive.db, or driver.db in the devnet directory.
    #[arg(
        long = "store",
        env = flags::STORE_ENV,
        value_delimiter = ',',
        value_parser = flags::parse_store,
        help_heading = "Recording"
    )]
    stores: Vec<SinkSpec>,

    #[command(flatten, next_help_heading = "Recording")]
    labels: LabelsArg,
}

/// The target resolved from flags or a devnet.
struct Target {
    engine: String,
    eth: String,
    secret: sszgate_gateway::JwtSecret,
    fork: Option<Fork>,
    default_store: SinkSpec,
}

fn target(args: &DriveArgs) -> Result<Target> {
    if let Some(dir) = &args.devnet {
        let state = DevnetState::read(dir)?;
        let engine = match (&args.engine, args.direct, &state.proxy_url) {
            (Some(url), _, _) => url.clone(),
            (None, false, Some(proxy)) => proxy.clone(),
            (None, _, _) => state.engine_url.clone(),
        };
        return Ok(Target {
            engine,
            eth: state.eth_url.clone(),
            secret: sszgate_gateway::JwtSecret::from_hex(&state.secret_hex()?)?,
            fork: Some(state.fork.parse()?),
            default_store: SinkSpec::Sqlite(dir.join("driver.db").display().to_string()),
        });
    }
    let (Some(engine), Some(secret), Some(eth)) =
        (&args.engine, &args.jwt.jwt_secret, &args.eth_rpc)
    else {
        bail!("--engine, --jwt-secret and --eth-rpc are needed without --devnet");
    };
    Ok(Target {
        engine: engine.clone(),
        eth: eth.clone(),
        secret: flags::read_jwt_secret(secret)?,
        fork: None,
        default_store: SinkSpec::Sqlite("sszgate-drive.db".into()),
    })
}

pub(crate) fn run(args: DriveArgs) -> Result<()> {
    let runtime = crate::runtime()?;
    runtime.block_on(async {
        let summary = drive(&args).await?;
        summary.print(&mut std::io::stdout())?;
        Ok(())
    })
}

/// What a drive did, for the summary.
pub(crate) struct Summary {
    pub(crate) blocks: Vec<BlockReport>,
    pub(crate) transport: EngineTransport,
    pub(crate) engine: String,
    pub(crate) stores: Vec<String>,
    pub(crate) wall: Duration,
}

impl Summary {
    /// Prints blocks, transactions, blobs and per-method latency percentiles.
    pub(crate) fn print(&self, out: &mut impl std::io::Write) -> Result<()> {
        let txs: usize = self.blocks.iter().map(|b| b.tx_hashes.len()).sum();
        let blobs: usize = self.blocks.iter().map(|b| b.blob_count).sum();
        let head = self.blocks.last().map(|b| (b.number, b.hash));
        writeln!(
            out,
            "drove {} blocks ({txs} transactions, {blobs} blobs) over {} at {} in {:.1} s",
            self.blocks.len(),
            match self.transport {
                EngineTransport::Json => "JSON-RPC",
                EngineTransport::Ssz => "REST-SSZ",
            },
            self.engine,
            self.wall.as_secs_f64()
        )?;
        if let Some((number, hash)) = head {
            writeln!(out, "head: block {number} {hash}")?;
        }
        let mut by_method: BTreeMap<&str, Vec<Duration>> = BTreeMap::new();
        for call in self.blocks.iter().flat_map(|b| &b.calls) {
            by_method.entry(call.method).or_default().push(call.elapsed);
        }
        writeln!(
            out,
            "{:<32} {:>6} {:>9} {:>9} {:>9}",
            "method", "calls", "p50 ms", "p90 ms", "max ms"
        )?;
        for (method, mut times) in by_method {
            times.sort();
            let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
            writeln!(
                out,
                "{method:<32} {:>6} {:>9.2} {:>9.2} {:>9.2}",
                times.len(),
                at(0.5).as_secs_f64() * 1e3,
                at(0.9).as_secs_f64() * 1e3,
                at(1.0).as_secs_f64() * 1e3
            )?;
        }
        writeln!(out, "driver records: {}", self.stores.join(", "))?;
        Ok(())
    }
}

/// Runs the drive `args` asks for and returns what it did.
pub(crate) async fn drive(args: &DriveArgs) -> Result<Summary> {
    let target = target(args)?;
    let eth = EthRpc::new(&target.eth);
    let stores = if args.stores.is_empty() {
        vec![target.default_store.clone()]
    } else {
        args.stores.clone()
    };
    let mut sinks = Vec::new();
    for spec in &stores {
        if let Some(sink) = Sink::open(spec).with_context(|| format!("opening --store {spec:?}"))? {
            sinks.push(sink);
        }
    }
    let recorder = Arc::new(Recorder::start(
        sinks,
        "driver",
        args.labels.labels.clone(),
        65_536,
    ));
    let engine = EngineClient::new(
        &target.engine,
        args.transport,
        target.secret.clone(),
        Some(recorder.clone()),
    );
    let fork = match args.fork.or(target.fork) {
        Some(fork) => fork,
        None => sszgate_drive::driver::detect_fork(&engine, &eth).await?,
    };
    let shape = LoadShape {
        transfers: args.txs_per_block,
        blob_txs: args.blob_txs_per_block,
        blobs_per_tx: args.blobs_per_tx,
    };
    let load = if shape.transfers + shape.blob_txs > 0 {
        let blobs = if shape.blob_txs > 0 {
            let dir = args.data.dir();
            sszgate_fixtures::Fixtures::load(&dir)
                .and_then(|f| f.blobs())
                .with_context(|| format!("reading the blobs of {}", dir.display()))?
        } else {
            Vec::new()
        };
        Some(Load::new(&eth, fork, shape, blobs).await?)
    } else {
        None
    };
    let config = DriveConfig {
        fork,
        build_time: args.build_time,
        slot_time: args.slot_time,
        get_blobs: !args.no_get_blobs,
        ..DriveConfig::default()
    };
    let mut driver = Driver::start(engine, eth, load, config).await?;
    let blocks = args.blocks.unwrap_or(if args.duration.is_some() {
        u64::MAX
    } else {
        10
    });
    let deadline = args.duration.map(|d| Instant::now() + d);
    let progress = Progress::new(blocks, deadline.is_some());
    let started = Instant::now();
    let mut reports = Vec::new();
    let mut calls = 0usize;
    while (reports.len() as u64) < blocks && deadline.is_none_or(|d| Instant::now() < d) {
        let report = match driver.step().await {
            Ok(report) => report,
            Err(e) => {
                progress.finish();
                recorder.shutdown();
                return Err(e).with_context(|| {
                    format!(
                        "building block {} on {}",
                        driver.head().number + 1,
                        driver.head().hash
                    )
                });
            }
        };
        calls += report.calls.len();
        progress.block(&report, calls, started.elapsed());
        reports.push(report);
    }
    progress.finish();
    recorder.shutdown();
    let stats = recorder.stats();
    if stats.dropped > 0 {
        eprintln!("warning: {} driver records were dropped", stats.dropped);
    }
    Ok(Summary {
        blocks: reports,
        transport: args.transport,
        engine: target.engine,
        stores: stores.iter().map(flags::store_text).collect(),
        wall: started.elapsed(),
    })
}

/// A progress bar on a terminal, a line per block otherwise.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new(blocks: u64, open_ended: bool) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = if open_ended {
            indicatif::ProgressBar::new_spinner()
        } else {
            indicatif::ProgressBar::new(blocks)
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} blocks  {msg}",
            )
            .expect("a valid template"),
        );
        Progress { bar: Some(bar) }
    }

    fn block(&self, report: &BlockReport, calls: usize, elapsed: Duration) {
        let rate = calls as f64 / elapsed.as_secs_f64().max(1e-3);
        let line = format!(
            "block {} {} txs {} blobs {}{} | {rate:.1} calls/s | VALID",
            report.number,
            report.hash,
            report.tx_hashes.len(),
            report.blob_count,
            if report.left_out > 0 {
                format!(" ({} of the load left out)", report.left_out)
            } else {
                String::new()
            }
        );
        match &self.bar {
            Some(bar) => {
                bar.inc(1);
                bar.set_message(line);
            }
            None => eprintln!("{line}"),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
