//! `sszgate devnet up|down|status|feed` and `sszgate demo`: a local EL with the proxy in
//! front (or a Lodestar v1.38 proposer and its followers, a proxy on every Engine link, and a
//! feed of real blobs), and the first-run demo that drives it over REST-SSZ through the
//! bridge. The driving itself is `sszgate drive`'s (`crate::drive`), which the demo calls; the
//! processes are `sszgate_drive::devnet`'s.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use serde_json::json;
use sszgate_drive::{
    EthRpc,
    blob_feed::{BlobFeed, Hold},
    devnet::{self, BlobFeedPlan, ClConfig, Devnet, DevnetConfig, DevnetState, ElKind},
    lodestar::{self, Preset},
};
use sszgate_engine::Fork;

use crate::flags::{self, DataArg, ForkParser};

/// Arguments of `sszgate devnet`.
#[derive(Debug, Args)]
pub(crate) struct DevnetArgs {
    #[command(subcommand)]
    command: DevnetCommand,
}

#[derive(Debug, Subcommand)]
enum DevnetCommand {
    /// Install the EL if missing, write a fresh genesis, start the EL and the proxy.
    Up(UpArgs),
    /// Stop the devnet's processes (by process id) and forget them.
    Down(DirArg),
    /// Show what runs and whether it answers.
    Status(DirArg),
    /// Keep real mainnet blobs waiting in the devnet's pools for every block (`up --cl
    /// lodestar` starts it; runs until stopped).
    Feed(FeedArgs),
}

/// Arguments of `sszgate devnet feed`.
#[derive(Debug, Args)]
struct FeedArgs {
    #[command(flatten)]
    dir: DirArg,
    /// Blobs kept waiting in the proposer's pool for each block (whole 6-blob transactions).
    #[arg(long, default_value_t = DEFAULT_FEED)]
    blobs_per_block: u32,
    #[command(flatten)]
    data: DataArg,
}

/// The blob feed's default: BPO1's target, so blocks of 48 blobs keep the blob fee steady
/// (above the target it climbs each block until the load's fee cap stops it).
const DEFAULT_FEED: u32 = 48;

/// `--dir` of every `devnet` subcommand.
#[derive(Debug, Args)]
struct DirArg {
    /// The devnet's directory (chain data, genesis, JWT secret, logs, records).
    #[arg(long, default_value = "sszgate-devnet")]
    dir: PathBuf,
}

/// Arguments of `sszgate devnet up`.
#[derive(Debug, Args)]
pub(crate) struct UpArgs {
    #[command(flatten)]
    dir: DirArg,
    /// The execution client: geth or ethereumjs (Prague at most).
    #[arg(long, default_value = "geth")]
    el: ElKind,
    /// The fork active from genesis: cancun, prague or osaka.
    #[arg(long, env = flags::FORK_ENV, value_parser = ForkParser, default_value = "osaka")]
    fork: Fork,
    /// The most blobs per block (above 9 adds a BPO1 fork at genesis; Osaka only).
    #[arg(long, default_value_t = 72)]
    max_blobs: u32,
    /// Start no proxy in front of the EL.
    #[arg(long)]
    no_proxy: bool,
    /// The consensus client: builtin (none runs; drive the chain with `sszgate drive`) or
    /// lodestar (Lodestar v1.38 proposing with 8 interop validators, Fulu from genesis on
    /// Osaka, a BPO1 fork raising blobs to --max-blobs; Electra on prague, Deneb on cancun).
    #[arg(long, value_enum, default_value = "builtin")]
    cl: ClArg,
    /// The Lodestar v1.38 build directory for --cl lodestar (made by
    /// `bash ../shared/tools/lodestar-fulu/build.sh DIR`); default $HOME/.cache/lodestar-v1.38.
    #[arg(long, env = lodestar::BUILD_ENV, value_name = "DIR")]
    lodestar: Option<PathBuf>,
    /// The consensus preset for --cl lodestar: minimal (8-slot epochs) or mainnet (32-slot
    /// epochs, 512-member sync committees, as a light client expects).
    #[arg(long, value_enum, default_value = "minimal")]
    preset: PresetArg,
    /// Follower pairs for --cl lodestar (0 to 2): each a geth peered with the proposer's and
    /// a Lodestar without validators that fetches every block's blobs from its EL with
    /// engine_getBlobsV2, a proxy on its Engine link too.
    #[arg(long, default_value_t = 0)]
    followers: u32,
    /// Seconds per slot for --cl lodestar (6 lets a 48-blob block's cells be computed and
    /// gossiped in its slot on a loaded 2-core machine).
    #[arg(long, default_value_t = lodestar::SECONDS_PER_SLOT)]
    slot_seconds: u32,
    /// Real mainnet blobs kept waiting in the pools for every block under --cl lodestar (a
    /// background `sszgate devnet feed`); 0: none. Default 48 on osaka, 0 before it.
    #[arg(long)]
    blobs_per_block: Option<u32>,
    #[command(flatten)]
    data: DataArg,
}

/// `--preset` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PresetArg {
    /// 8 slots an epoch, 32-member sync committees.
    Minimal,
    /// 32 slots an epoch, 512-member sync committees.
    Mainnet,
}

/// `--cl` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ClArg {
    /// No CL process: the built-in driver (`sszgate drive`) drives the chain.
    Builtin,
    /// Lodestar v1.38, in dev mode with interop validators.
    Lodestar,
}

/// The consensus side of `args` (none for the built-in driver).
fn cl_config(args: &UpArgs, max_blobs: u32) -> Result<Option<ClConfig>> {
    if args.cl == ClArg::Builtin {
        return Ok(None);
    }
    let build = lodestar::build_dir(args.lodestar.as_deref()).with_context(|| {
        format!(
            "--cl lodestar needs a Lodestar v1.38 build: {}, then --lodestar DIR",
            lodestar::BUILD_HINT
        )
    })?;
    let default_feed = if args.fork == Fork::Osaka {
        DEFAULT_FEED
    } else {
        0
    };
    let blobs_per_block = args.blobs_per_block.unwrap_or(default_feed);
    if blobs_per_block > max_blobs {
        bail!("--blobs-per-block {blobs_per_block} is above --max-blobs {max_blobs}");
    }
    let blob_feed = if blobs_per_block == 0 {
        None
    } else {
        Some(BlobFeedPlan {
            binary: std::env::current_exe().context("locating the sszgate binary")?,
            blobs_per_block,
            data: args.data.data.clone(),
        })
    };
    Ok(Some(ClConfig {
        build,
        preset: match args.preset {
            PresetArg::Minimal => Preset::Minimal,
            PresetArg::Mainnet => Preset::Mainnet,
        },
        seconds_per_slot: args.slot_seconds,
        followers: args.followers,
        blob_feed,
    }))
}

fn config(args: &UpArgs) -> Result<DevnetConfig> {
    let max_blobs = match (args.fork, args.max_blobs) {
        // Before Osaka the schedule is fixed: cap the default rather than refuse it.
        (Fork::Cancun, 72) => 6,
        (Fork::Prague, 72) => 9,
        (_, n) => n,
    };
    Ok(DevnetConfig {
        dir: args.dir.dir.clone(),
        el: args.el,
        fork: args.fork,
        max_blobs,
        proxy_binary: if args.no_proxy {
            None
        } else {
            Some(std::env::current_exe().context("locating the sszgate binary")?)
        },
        lodestar: cl_config(args, max_blobs)?,
    })
}

pub(crate) fn run(args: DevnetArgs) -> Result<()> {
    match args.command {
        DevnetCommand::Up(up) => {
            let config = config(&up)?;
            let state = crate::runtime()?.block_on(Devnet::up(&config))?.detach();
            print_state(&up.dir.dir, &state);
            Ok(())
        }
        DevnetCommand::Down(DirArg { dir }) => {
            let state = devnet::down(&dir)?;
            println!(
                "stopped the devnet in {} (EL pid {}{})",
                dir.display(),
                state.el_pid,
                state
                    .proxy_pid
                    .map(|p| format!(", proxy pid {p}"))
                    .unwrap_or_default()
                    + &state
                        .cl_pid
                        .map(|p| format!(", CL pid {p}"))
                        .unwrap_or_default()
            );
            Ok(())
        }
        DevnetCommand::Status(DirArg { dir }) => crate::runtime()?.block_on(status(&dir)),
        DevnetCommand::Feed(args) => crate::runtime()?.block_on(feed(&args)),
    }
}

/// Runs the blob feed on the devnet in `--dir` until stopped.
async fn feed(args: &FeedArgs) -> Result<()> {
    let state = DevnetState::read(&args.dir.dir)?;
    let data = args.data.dir();
    let blobs = sszgate_fixtures::Fixtures::load(&data)
        .and_then(|f| f.blobs())
        .with_context(|| format!("reading the blobs of {}", data.display()))?;
    let urls = state.eth_urls();
    println!(
        "feeding {} blobs a block from {} real blobs of {} to {}",
        args.blobs_per_block,
        blobs.len(),
        data.display(),
        urls.join(", ")
    );
    let mut feed = BlobFeed::new(&urls, blobs, args.blobs_per_block).await?;
    // With a proxy on the proposer's link, blocks wait while each load enters the pool.
    if let (Some(control_url), Some(slot)) = (state.metrics_url, state.seconds_per_slot) {
        let slot = std::time::Duration::from_secs(slot.into());
        feed = feed.holding(Hold { control_url, slot });
    }
    feed.run(|line| println!("{line}")).await?;
    Ok(())
}

fn print_state(dir: &Path, state: &DevnetState) {
    println!(
        "devnet up in {}: {:?} at {}",
        dir.display(),
        state.el,
        state.fork
    );
    println!("  engine API (EL, JWT): {}", state.engine_url);
    println!("  public JSON-RPC:      {}", state.eth_url);
    println!("  JWT secret:           {}", state.jwt_secret.display());
    if let (Some(proxy), Some(metrics), Some(records)) =
        (&state.proxy_url, &state.metrics_url, &state.records)
    {
        println!("  proxy (JSON-RPC relayed, REST-SSZ bridged): {proxy}");
        println!("  metrics and status:   {metrics}/metrics  {metrics}/_sszgate/status");
        println!("  proxy records:        {}", records.display());
    }
    match (state.cl_pid, &state.beacon_url) {
        (Some(pid), Some(beacon)) => {
            println!(
                "  consensus client:     Lodestar v1.38 (pid {pid}), {} preset, a block every {} s slot",
                state.preset.map_or("?", Preset::name),
                state.seconds_per_slot.unwrap_or_default()
            );
            println!("  beacon API:           {beacon}  (light-client server on)");
            for (i, follower) in state.followers.iter().enumerate() {
                println!(
                    "  follower {}:           geth {} (engine {}), Lodestar {}",
                    i + 1,
                    follower.eth_url,
                    follower.engine_url,
                    follower.beacon_url
                );
                if let Some(proxy) = &follower.proxy {
                    println!(
                        "    its proxy:          {}  records {}",
                        proxy.url,
                        proxy.records.display()
                    );
                }
            }
            if let Some(pid) = state.feed_pid {
                println!(
                    "  blob feed:            pid {pid}, log {}",
                    dir.join("feed.log").display()
                );
            }
        }
        _ => println!(
            "drive it: sszgate drive --devnet {} --transport ssz --blocks 20 --blob-txs-per-block 2",
            dir.display()
        ),
    }
    println!("stop it:  sszgate devnet down --dir {}", dir.display());
}

async fn status(dir: &Path) -> Result<()> {
    let dir = dir
        .canonicalize()
        .with_context(|| format!("no devnet directory {}", dir.display()))?;
    let state = DevnetState::read(&dir)?;
    let el_alive = devnet::alive(state.el_pid, &dir);
    let head = EthRpc::new(&state.eth_url)
        .quantity("eth_blockNumber", json!([]))
        .await;
    println!(
        "EL {:?} pid {}: {}; head {}",
        state.el,
        state.el_pid,
        if el_alive { "running" } else { "NOT RUNNING" },
        match head {
            Ok(n) => format!("block {n}"),
            Err(e) => format!("unknown ({e})"),
        }
    );
    if let Some(pid) = state.proxy_pid {
        println!(
            "proxy pid {pid}: {} at {}",
            if devnet::alive(pid, &dir) {
                "running"
            } else {
                "NOT RUNNING"
            },
            state.proxy_url.as_deref().unwrap_or("?")
        );
    }
    let running = |pid: u32| {
        if devnet::alive(pid, &dir) {
            "running"
        } else {
            "NOT RUNNING"
        }
    };
    if let (Some(pid), Some(beacon)) = (state.cl_pid, &state.beacon_url) {
        let slot = lodestar_head(beacon).await;
        println!("Lodestar pid {pid}: {}; {slot}", running(pid));
    }
    for (i, follower) in state.followers.iter().enumerate() {
        let slot = lodestar_head(&follower.beacon_url).await;
        println!(
            "follower {}: geth pid {} {}, Lodestar pid {} {}; {slot}",
            i + 1,
            follower.el_pid,
            running(follower.el_pid),
            follower.cl_pid,
            running(follower.cl_pid)
        );
    }
    if let Some(pid) = state.feed_pid {
        println!("blob feed pid {pid}: {}", running(pid));
    }
    Ok(())
}

/// The head slot a Beacon API reports, as text.
async fn lodestar_head(beacon: &str) -> String {
    match devnet::head_slot(beacon).await {
        Ok(slot) => format!("head slot {slot}"),
        Err(e) => format!("head unknown ({e})"),
    }
}

/// Arguments of `sszgate demo`.
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Where the demo's devnet lives.
    #[arg(long, default_value = "sszgate-demo")]
    dir: PathBuf,
    /// Blocks to drive.
    #[arg(long, default_value_t = 20)]
    blocks: u64,
    /// Blob transactions per block (6 blobs each).
    #[arg(long, default_value_t = 2)]
    blob_txs_per_block: usize,
    /// Leave the devnet running afterwards.
    #[arg(long)]
    keep: bool,
}

/// Parses `sszgate drive` flags for the demo.
#[derive(Debug, Parser)]
struct DriveFlags {
    #[command(flatten)]
    args: crate::drive::DriveArgs,
}

pub(crate) fn demo(args: DemoArgs) -> Result<()> {
    let started = std::time::Instant::now();
    let up = UpArgs {
        dir: DirArg {
            dir: args.dir.clone(),
        },
        el: ElKind::Geth,
        fork: Fork::Osaka,
        max_blobs: 72,
        no_proxy: false,
        cl: ClArg::Builtin,
        lodestar: None,
        preset: PresetArg::Minimal,
        followers: 0,
        slot_seconds: lodestar::SECONDS_PER_SLOT,
        blobs_per_block: None,
        data: DataArg { data: None },
    };
    let config = config(&up)?;
    let runtime = crate::runtime()?;
    runtime.block_on(async {
        let devnet = Devnet::up(&config).await?;
        print_state(&args.dir, &devnet.state);
        // The demo is the same run on every machine: no SSZGATE_* variable changes it.
        let drive = crate::flags::without_env(DriveFlags::command()).try_get_matches_from([
            "drive".to_string(),
            "--devnet".into(),
            args.dir.display().to_string(),
            "--transport".into(),
            "ssz".into(),
            "--blocks".into(),
            args.blocks.to_string(),
            "--txs-per-block".into(),
            "4".into(),
            "--blob-txs-per-block".into(),
            args.blob_txs_per_block.to_string(),
        ])?;
        let drive = DriveFlags::from_arg_matches(&drive)?;
        let summary = crate::drive::drive(&drive.args).await?;
        println!();
        summary.print(&mut std::io::stdout())?;
        if let Some(records) = &devnet.state.records {
            println!(
                "proxy records (REST-SSZ bridged to geth's JSON-RPC): {}",
                records.display()
            );
        }
        if args.keep {
            devnet.detach();
            println!(
                "the devnet keeps running: sszgate devnet down --dir {}",
                args.dir.display()
            );
        } else {
            drop(devnet);
            println!("devnet stopped");
        }
        println!("demo done in {:.1} s", started.elapsed().as_secs_f64());
        Ok(())
    })
}
