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
    BlockReport, DriveConfig, Driver, EngineTransport, EthRpc, Load, LoadShape, devnet::DevnetState,
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

    /// A funded private key (hex) to send the load from; twice (or comma-separated) for
    /// transfers and blob transactions from two accounts. Default: the public dev keys a
    /// devnet funds.
    #[arg(
        long = "key",
        env = "SSZGATE_DRIVE_KEY",
        value_delimiter = ',',
        hide_env_values = true,
        help_heading = "Load"
    )]
    keys: Vec<String>,
    /// A file of funded private keys, one hex key per line (the first two are used).
    #[arg(long, conflicts_with_all = ["keys", "mnemonic"], value_name = "FILE", help_heading = "Load")]
    key_file: Option<PathBuf>,
    /// A BIP-39 mnemonic whose accounts --mnemonic-index and the next send the load.
    #[arg(
        long,
        env = "SSZGATE_DRIVE_MNEMONIC",
        hide_env_values = true,
        conflicts_with = "keys",
        help_heading = "Load"
    )]
    mnemonic: Option<String>,
    /// The first account of --mnemonic used (m/44'/60'/0'/0/INDEX; the next one too).
    #[arg(
        long,
        default_value_t = 0,
        requires = "mnemonic",
        help_heading = "Load"
    )]
    mnemonic_index: u32,

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

/// What a drive does, resolved from its flags without I/O; the fork is left to the target.
#[derive(Debug)]
struct Plan {
    /// Where the driver's records go.
    stores: Vec<SinkSpec>,
    /// The load of every block.
    shape: LoadShape,
    /// Blocks to build at most.
    blocks: u64,
    /// Time to drive for at most.
    duration: Option<Duration>,
    /// The slot loop's pace and checks (its fork is the default until the target's is known).
    config: DriveConfig,
    /// Where the load's keys come from.
    keys: KeySource,
}

/// Where the load's senders come from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum KeySource {
    /// The public dev keys a devnet funds.
    Dev,
    /// Keys given on the command line.
    Keys(Vec<String>),
    /// A file of keys.
    File(PathBuf),
    /// Two consecutive accounts of a mnemonic, from an index.
    Mnemonic(String, u32),
}

impl KeySource {
    /// The senders, reading a key file bounded (a few keys are a few hundred bytes).
    fn senders(&self) -> Result<sszgate_drive::Senders> {
        use sszgate_drive::Senders;
        Ok(match self {
            KeySource::Dev => Senders::dev(),
            KeySource::Keys(keys) => Senders::from_keys(keys)?,
            KeySource::File(path) => {
                let text = crate::input::read_file(path, 64 << 10, "a key file")?;
                let text = String::from_utf8_lossy(&text);
                let keys: Vec<String> = text
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .take(2)
                    .map(str::to_string)
                    .collect();
                Senders::from_keys(&keys)
                    .with_context(|| format!("--key-file {}", path.display()))?
            }
            KeySource::Mnemonic(phrase, index) => Senders::from_mnemonic(phrase, *index)?,
        })
    }
}

/// Resolves `args` into a plan; `default_store` is the target's (a devnet's driver.db).
fn plan(args: &DriveArgs, default_store: &SinkSpec) -> Plan {
    let stores = if args.stores.is_empty() {
        vec![default_store.clone()]
    } else {
        args.stores.clone()
    };
    let open_ended = args.duration.is_some();
    Plan {
        stores,
        shape: LoadShape {
            transfers: args.txs_per_block,
            blob_txs: args.blob_txs_per_block,
            blobs_per_tx: args.blobs_per_tx,
        },
        blocks: args
            .blocks
            .unwrap_or(if open_ended { u64::MAX } else { 10 }),
        duration: args.duration,
        config: DriveConfig {
            build_time: args.build_time,
            slot_time: args.slot_time,
            get_blobs: !args.no_get_blobs,
            ..DriveConfig::default()
        },
        keys: match (&args.keys, &args.key_file, &args.mnemonic) {
            (_, Some(file), _) => KeySource::File(file.clone()),
            (_, _, Some(phrase)) => KeySource::Mnemonic(phrase.clone(), args.mnemonic_index),
            (keys, _, _) if !keys.is_empty() => KeySource::Keys(keys.clone()),
            _ => KeySource::Dev,
        },
    }
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
    let plan = plan(args, &target.default_store);
    let eth = EthRpc::new(&target.eth);
    let mut sinks = Vec::new();
    for spec in &plan.stores {
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
    let engine = sszgate_drive::engine_client(
        &target.engine,
        args.transport,
        target.secret.clone(),
        Some(recorder.clone()),
    );
    let fork = match args.fork.or(target.fork) {
        Some(fork) => fork,
        None => sszgate_drive::driver::detect_fork(&engine, &eth).await?,
    };
    let shape = plan.shape;
    let load = if shape.transfers + shape.blob_txs > 0 {
        let blobs = if shape.blob_txs > 0 {
            let dir = args.data.dir();
            sszgate_fixtures::Fixtures::load(&dir)
                .and_then(|f| f.blobs())
                .with_context(|| format!("reading the blobs of {}", dir.display()))?
        } else {
            Vec::new()
        };
        Some(Load::new(&eth, fork, shape, blobs, plan.keys.senders()?).await?)
    } else {
        None
    };
    let config = DriveConfig {
        fork,
        ..plan.config
    };
    let mut driver = Driver::start(engine, eth, load, config).await?;
    let blocks = plan.blocks;
    let deadline = plan.duration.map(|d| Instant::now() + d);
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
        stores: plan.stores.iter().map(flags::store_text).collect(),
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

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, FromArgMatches, Parser};

    use super::*;

    /// `sszgate drive` alone, as the tests parse it.
    #[derive(Debug, Parser)]
    struct DriveCli {
        #[command(flatten)]
        args: DriveArgs,
    }

    /// The plan of `argv` (after `drive`), reading no environment variable.
    fn plan_of(argv: &[&str]) -> Plan {
        let argv = ["drive", "--devnet", "dn"]
            .into_iter()
            .chain(argv.iter().copied());
        let matches = flags::without_env(DriveCli::command())
            .try_get_matches_from(argv)
            .unwrap_or_else(|e| panic!("{e}"));
        let args = DriveCli::from_arg_matches(&matches).unwrap().args;
        plan(&args, &SinkSpec::Sqlite("dn/driver.db".into()))
    }

    #[test]
    fn the_defaults_are_ten_blocks_no_load_and_the_targets_store() {
        let plan = plan_of(&[]);
        assert_eq!(plan.stores, [SinkSpec::Sqlite("dn/driver.db".into())]);
        assert_eq!((plan.blocks, plan.duration), (10, None));
        let shape = LoadShape {
            transfers: 0,
            blob_txs: 0,
            blobs_per_tx: 6,
        };
        assert_eq!(plan.shape, shape);
        assert_eq!(plan.config.build_time, Duration::from_millis(500));
        assert_eq!(plan.config.slot_time, Duration::ZERO);
        assert!(plan.config.get_blobs);
    }

    #[test]
    fn a_duration_lifts_the_block_count_and_flags_reach_the_plan() {
        let plan = plan_of(&["--duration", "5m", "--store", "jsonl:-", "--no-get-blobs"]);
        assert_eq!(plan.blocks, u64::MAX);
        assert_eq!(plan.duration, Some(Duration::from_secs(300)));
        assert_eq!(plan.stores, [SinkSpec::Jsonl("-".into())]);
        assert!(!plan.config.get_blobs);
        let plan = plan_of(&[
            "--blocks",
            "3",
            "--blob-txs-per-block",
            "2",
            "--slot-time",
            "12s",
        ]);
        assert_eq!((plan.blocks, plan.shape.blob_txs), (3, 2));
        assert_eq!(plan.config.slot_time, Duration::from_secs(12));
    }

    #[test]
    fn blocks_and_duration_together_are_refused() {
        let argv = [
            "drive",
            "--devnet",
            "dn",
            "--blocks",
            "3",
            "--duration",
            "1m",
        ];
        let err = flags::without_env(DriveCli::command()).try_get_matches_from(argv);
        assert!(err.unwrap_err().to_string().contains("cannot be used with"));
    }
}
