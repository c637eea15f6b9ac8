//! `sszgate bench`: the benchmarks that need a running proxy. (The codec benchmark is
//! `cargo bench -p sszgate-bench --bench codec`.)

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

/// Arguments of `sszgate bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    #[command(subcommand)]
    what: BenchCommand,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// What the proxy adds to a call: a fake EL serving real-data answers, called directly and
    /// through `sszgate proxy` (a child process), interleaved.
    Proxy(ProxyBenchArgs),
}

#[derive(Debug, Args)]
struct ProxyBenchArgs {
    /// Directory of real mainnet blocks and blob transactions; default: SSZGATE_DATA,
    /// ../shared/data/mainnet next to the repository, or the repository's testdata/.
    #[arg(long, env = "SSZGATE_DATA")]
    data: Option<PathBuf>,
    /// Blob counts to measure (getPayloadV5 and getBlobsV2).
    #[arg(long, value_delimiter = ',', default_value = "0,1,6,24,48,72")]
    blobs: Vec<usize>,
    /// Rounds per case with 24 blobs or more (three times as many below).
    #[arg(long, default_value_t = 100)]
    rounds: usize,
    /// Small calls through the proxy for the throughput and memory check.
    #[arg(long, default_value_t = 10_000)]
    small_calls: usize,
    /// An nginx binary to measure as a plain reverse-proxy baseline ("none" to skip); by
    /// default nginx from PATH when installed.
    #[arg(long)]
    nginx: Option<String>,
    /// Also write the Markdown report to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also measure the bridge: REST-SSZ calls through a bridging gateway to the JSON-RPC EL.
    #[arg(long)]
    bridge: bool,
    /// Extra arguments for the `sszgate proxy` under test, e.g. --proxy-arg=--store=none.
    #[arg(long = "proxy-arg", allow_hyphen_values = true)]
    proxy_args: Vec<String>,
}

pub(crate) fn run(args: BenchArgs) -> Result<()> {
    let BenchCommand::Proxy(args) = args.what;
    let nginx = match args.nginx.as_deref() {
        Some("none") => None,
        Some(path) => Some(PathBuf::from(path)),
        None => ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists()),
    };
    let options = sszgate_bench::proxy::Options {
        sszgate: std::env::current_exe().context("finding the sszgate executable")?,
        data: args.data.unwrap_or_else(sszgate_fixtures::data_dir),
        blobs: args.blobs,
        rounds: args.rounds,
        small_calls: args.small_calls,
        nginx,
        proxy_args: args.proxy_args,
        bridge: args.bridge,
    };
    eprintln!(
        "sszgate bench proxy: data {}, blobs {:?}, nginx {:?}",
        options.data.display(),
        options.blobs,
        options.nginx
    );
    let runtime = crate::runtime()?;
    let report = runtime.block_on(sszgate_bench::proxy::run(&options));
    let text = format!(
        "Machine: {}\n\n{}",
        sszgate_bench::harness::machine(),
        report.markdown()
    );
    println!("{text}");
    if let Some(out) = args.out {
        std::fs::write(&out, &text).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}
