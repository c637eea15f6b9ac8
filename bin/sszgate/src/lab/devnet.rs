//! `sszgate devnet up|down|status` and `sszgate demo`: a local EL with the proxy in front,
//! and the first-run demo that drives it over REST-SSZ through the bridge. The driving
//! itself is `sszgate drive`'s (`crate::drive`), which the demo calls.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use serde_json::json;
use sszgate_drive::{
    EthRpc,
    devnet::{self, Devnet, DevnetConfig, DevnetState, ElKind},
};
use sszgate_engine::Fork;

use crate::flags::{self, ForkParser};

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
}

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
    /// lodestar (a real CL proposing every 2 s slot, through the proxy; needs --lodestar,
    /// and --fork cancun or prague).
    #[arg(long, value_enum, default_value = "builtin")]
    cl: ClArg,
    /// A Lodestar v1.22 build directory (../shared/tools/lodestar/build.sh DIR), for
    /// --cl lodestar.
    #[arg(long, env = "SSZGATE_LODESTAR", value_name = "DIR")]
    lodestar: Option<PathBuf>,
}

/// `--cl` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum ClArg {
    /// No CL process: the built-in driver (`sszgate drive`) drives the chain.
    Builtin,
    /// Lodestar, in dev mode with interop validators.
    Lodestar,
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
        lodestar: match (args.cl, &args.lodestar) {
            (ClArg::Builtin, _) => None,
            (ClArg::Lodestar, Some(dir)) => Some(dir.clone()),
            (ClArg::Lodestar, None) => {
                bail!(
                    "--cl lodestar needs --lodestar DIR (a build of ../shared/tools/lodestar/build.sh DIR)"
                )
            }
        },
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
    }
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
            println!("  consensus client:     Lodestar (pid {pid}), a block every 2 s slot");
            println!("  beacon API:           {beacon}  (light-client server on)");
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
    Ok(())
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
