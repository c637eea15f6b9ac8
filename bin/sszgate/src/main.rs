//! `sszgate`: the command-line front of the sszgate library crates.
//!
//! This file parses arguments, sets up the process and calls into the libraries; it holds no
//! Engine API logic. Errors are printed with their whole chain and exit code 1; usage errors
//! exit 2 (clap's); a closed stdout (`sszgate … | head`) is not an error.

mod conform;
mod convert;
mod ctl;
mod drive;
mod flags;
mod input;
mod lab;
mod memory;
mod prove;
mod proxy;
mod report;
mod rpc;
mod snooper;
mod verify;

use lab::{bench, devnet};

// Large Engine API messages (10-20 MB) are built and dropped on every call; mimalloc reuses
// those buffers where glibc maps and faults them in anew (docs/benchmarks.md: SSZ encode of a
// 72-blob bundle 7.4 ms with glibc, 0.7 ms with mimalloc).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// An Engine API gateway between consensus and execution clients.
///
/// sszgate relays and records Engine API calls, bridges REST-SSZ and JSON-RPC, drives an
/// execution client like a consensus client would, measures codecs on real mainnet data and
/// verifies what crosses the link.
#[derive(Debug, Parser)]
#[command(
    name = "sszgate",
    version,
    propagate_version = true,
    max_term_width = 100
)]
#[command(after_help = "\
Operator commands (proxy, snooper, ctl, rpc, prove, conform, drive, convert, methods, verify, report) work with the
clients you run; lab commands (demo, devnet, bench) start clients and proxies of their own.
Start with `sszgate demo`: a local geth devnet, driven over REST-SSZ through the bridge.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands: operator commands first, then the lab's (`--help` lists them in this
/// order, `display_order` keeps it so).
#[derive(Debug, Subcommand)]
enum Command {
    // Operator commands: for the CL and EL a user runs.
    /// Relay and record every Engine API call between a CL and an EL.
    #[command(display_order = 1)]
    Proxy(proxy::ProxyArgs),
    /// Drive an EL's Engine API as a consensus client would (JSON-RPC or REST-SSZ).
    #[command(display_order = 2)]
    Drive(drive::DriveArgs),
    /// Convert one Engine API message between its JSON-RPC and REST-SSZ forms.
    #[command(display_order = 3)]
    Convert(convert::ConvertArgs),
    /// Print the JSON-RPC ⇄ REST-SSZ method table.
    #[command(display_order = 4)]
    Methods,
    /// Verify saved messages: block hash, transactions, blobs and KZG proofs.
    #[command(display_order = 5)]
    Verify(verify::VerifyArgs),
    /// Report on recorded calls: latency, overhead by EL and blob count, bridge, verdicts.
    #[command(display_order = 6)]
    Report(report::ReportArgs),
    /// Serve verified eth_* JSON-RPC: answers of an untrusted execution RPC checked against
    /// blocks a beacon light client anchors, or a prover's SSZ proofs checked (--prover);
    /// also serve such proofs (--serve-proofs).
    #[command(display_order = 8)]
    Rpc(rpc::RpcArgs),
    /// Build the colibri.stateless SSZ proof of one eth_* request from an execution RPC and a
    /// Beacon API.
    #[command(display_order = 9)]
    Prove(prove::ProveArgs),
    /// Control a running proxy (rules, add, rm, clear, pause, resume): inject faults per
    /// method (delay, error, status, drop, corrupt), pause and resume forwarding.
    #[command(display_order = 7)]
    Ctl(ctl::CtlArgs),
    /// Check REST-SSZ conformance: an EL's server (`el`), or the requests of a CL (`cl`).
    #[command(display_order = 9)]
    Conform(conform::ConformArgs),
    /// rpc-snooper's command line over the proxy (also when run as `snooper` or
    /// `json_rpc_snoop`): `sszgate snooper -b=0.0.0.0 -p=8561 http://EL:8551`; `-h` lists it.
    #[command(display_order = 9, disable_help_flag = true)]
    Snooper {
        /// rpc-snooper's flags and the target URL.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },

    // Lab commands (`lab`): clients, proxies and fake ELs of their own.
    /// [lab] The first run: a geth devnet, 20 blocks with blobs driven over REST-SSZ via the
    /// bridge.
    #[command(display_order = 10)]
    Demo(devnet::DemoArgs),
    /// [lab] A local devnet (up, down, status, feed): a real EL on a fresh chain with the proxy
    /// in front, and optionally Lodestar v1.38 with follower pairs and a real-blob feed.
    #[command(display_order = 11)]
    Devnet(devnet::DevnetArgs),
    /// [lab] Benchmarks and studies (proxy, soak, attack, codec, compress, rpc, e2e,
    /// ssz-chain): what the proxy adds, its memory and records over time, hostile input, the
    /// codecs and compression on real data, verified RPC next to colibri.stateless, and a real
    /// CL's view of the link and of SSZ on a live chain.
    #[command(display_order = 12)]
    Bench(bench::BenchArgs),
}

impl Command {
    /// Whether the command is a long-running server (its memory is returned when idle).
    fn serves(&self) -> bool {
        matches!(
            self,
            Command::Proxy(_) | Command::Rpc(_) | Command::Snooper { .. }
        )
    }
}

/// The program names rpc-snooper's image and launchers use: sszgate run under them speaks
/// rpc-snooper's command line.
const SNOOPER_NAMES: [&str; 2] = ["snooper", "json_rpc_snoop"];

fn main() -> ExitCode {
    let mut argv = std::env::args();
    let program = argv.next().unwrap_or_default();
    let name = std::path::Path::new(&program).file_name();
    let cli = match name.and_then(|n| n.to_str()) {
        Some(name) if SNOOPER_NAMES.contains(&name) => Cli {
            command: Command::Snooper {
                args: argv.collect(),
            },
        },
        _ => Cli::parse(),
    };
    // rpc-snooper's `--no-color` and `-v` apply to sszgate's own lines in snooper mode too;
    // a non-empty NO_COLOR turns colours off everywhere, as tracing's default does.
    let (color, level) = match &cli.command {
        Command::Snooper { args } => snooper::log_style(args),
        _ => (true, "info"),
    };
    let ansi = color && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SSZGATE_LOG")
                .unwrap_or_else(|_| level.into()),
        )
        .with_ansi(ansi)
        .with_writer(std::io::stderr)
        .init();
    if cli.command.serves() {
        memory::return_freed_memory_when_idle();
    }
    let result = match cli.command {
        Command::Convert(args) => convert::run(args),
        Command::Proxy(args) => proxy::run(args),
        Command::Drive(args) => drive::run(args),
        Command::Devnet(args) => devnet::run(args),
        Command::Demo(args) => devnet::demo(args),
        Command::Bench(args) => bench::run(args),
        Command::Report(args) => report::run(args),
        Command::Verify(args) => verify::run(args),
        Command::Methods => convert::print_methods(),
        Command::Ctl(args) => ctl::run(args),
        Command::Rpc(args) => rpc::run(args),
        Command::Conform(args) => conform::run(args),
        Command::Prove(args) => prove::run(args),
        Command::Snooper { args } => snooper::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("sszgate: error: {err:#}");
            ExitCode::from(1)
        }
    }
}

/// Resolves on SIGINT or SIGTERM: how a daemon (`proxy`, `rpc`, `snooper`, `conform cl`) is
/// told to stop. The handlers are installed when this is called, not when the future is first
/// polled: a server calls it before it binds its port, so that a signal sent as soon as the
/// port is open stops it gracefully instead of killing it (the signal's default action).
pub(crate) fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("installing a SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("installing a SIGINT handler");
    async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
    }
}

/// The runtime every async subcommand runs on: multi-threaded, with room on each thread's
/// stack for large Engine API bodies (blob bundles).
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    runtime_with(None)
}

/// The runtime with `workers` worker threads (tokio's default, one per core, when `None`).
pub(crate) fn runtime_with(
    workers: Option<std::num::NonZeroUsize>,
) -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context;
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = workers {
        builder.worker_threads(n.get());
    }
    builder
        .enable_all()
        .thread_stack_size(8 << 20)
        .build()
        .context("starting the runtime")
}

/// Whether `err` comes from writing to a closed stdout.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod help_tests;
