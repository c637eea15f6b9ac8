//! `sszgate bench`: the proxy benchmark, the soak, the attack campaign and the end-to-end
//! bench on a real chain (they need processes and sockets), and the codec and compression studies on real data, each with one command,
//! writing Markdown, CSV and charts.
//! (The micro-benchmarks against alloy's own codecs are `cargo bench -p sszgate-bench`.)

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use crate::flags::{DataArg, JsonOutArg, MarkdownOutArg, ProxyArgsArg};

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
    /// The codec study: every Engine API message on real data, JSON and SSZ, six operations.
    Codec(StudyArgs),
    /// The compression study: snappy (block, framed), zstd 1 and 3, gzip on real blocks and
    /// Engine API messages, by size range.
    Compress(StudyArgs),
    /// The soak: mainnet-shaped real-data traffic through the relay and the bridge (two
    /// `sszgate proxy` children) for --duration; RSS over time, p50/p99, errors, and the
    /// records in SQLite against the calls made. Exits 1 when a record was lost, a call
    /// failed or a proxy did not stop cleanly.
    Soak(SoakArgs),
    /// The adversarial campaign: decompression bombs, connection floods, slowloris, malformed
    /// HTTP/1.1, h2c and WebSocket abuse against `sszgate proxy` children; a row per attack.
    /// Exits 1 naming the rows that broke an invariant (the proxy died, a normal call was not
    /// answered within 1 s after, fds or RSS grew past their bounds, an unauthenticated or a
    /// hidden call reached the EL).
    Attack(AttackArgs),
    /// Verified RPC: sszgate's verifier on every recorded mainnet case, cold and warm, and
    /// sszgate's prover and proof verifier (the remote mode), next to colibri.stateless's
    /// prover and verifier (its npm package, run by node) in the same rounds; the BLS
    /// sync-aggregate check; the bytes each moves, and whether the two proofs are the same.
    /// Exits 1 when the two answers of a case differ.
    Rpc(RpcBenchArgs),
    /// The rpc-snooper study from the CL's side: one Fulu chain (Lodestar v1.38 + geth on
    /// Osaka, BPO1 48/72, a follower pair) under a load of real mainnet blobs, each CL's
    /// Engine link switched without a restart, in alternating windows, between direct,
    /// `sszgate proxy`, rpc-snooper and a second forwarder; the CL-perceived duration of every
    /// call (Lodestar's own histogram, read per call), the difference against direct and the
    /// overhead over the EL-side time, per method and blob count. A progress line per window.
    E2e(E2eArgs),
    /// The SSZ Engine API study on a real chain: Lodestar v1.38 + geth on Osaka (BPO1 48/72)
    /// with a follower pair, both Engine links through two bridges back to back (REST-SSZ in
    /// the middle), blocks of real mainnet blobs; per method and blob count the bytes as JSON
    /// and SSZ, the translation times and each form's encode and decode, beside the published
    /// study's figures. Writes ssz-chain.md, .html and .json to --out; exits 1 on a finding.
    SszChain(super::ssz_chain::SszChainArgs),
}

#[derive(Debug, Args)]
struct E2eArgs {
    /// Rounds of windows: each round is one window per middle (direct, sszgate, rpc-snooper,
    /// 2nd forwarder), in an order that rotates every round.
    #[arg(long, default_value_t = 3)]
    windows: usize,
    /// Slots per window.
    #[arg(long, default_value_t = 8)]
    slots_per_window: u64,
    /// Seconds per slot of the chain (6: a 72-blob block's columns are computed and gossiped
    /// within its slot on a loaded 2-core machine).
    #[arg(long, default_value_t = 6)]
    seconds_per_slot: u64,
    /// Blob counts of the load's batches, in turn (rounded up to whole 6-blob transactions),
    /// and the bins of the tables.
    #[arg(long, value_delimiter = ',', default_value = "0,6,12,24,48,72")]
    blobs: Vec<usize>,
    #[command(flatten)]
    chain: LiveChainArgs,
    /// rpc-snooper's build directory (holding bin/snooper); default
    /// $HOME/.cache/rpc-snooper-6452c11.
    #[arg(long, env = "SSZGATE_RPC_SNOOPER")]
    rpc_snooper: Option<PathBuf>,
    #[command(flatten)]
    data: DataArg,
    /// Also write the Markdown report to this file, and the HTML report (tables and charts)
    /// next to it with the extension .html.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    json: JsonOutArg,
    #[command(flatten)]
    proxy_args: ProxyArgsArg,
}

fn e2e(args: E2eArgs) -> Result<()> {
    if args.windows == 0 || args.slots_per_window < 2 || args.seconds_per_slot < 2 {
        anyhow::bail!(
            "--windows must be at least 1, --slots-per-window and --seconds-per-slot at least 2"
        );
    }
    if args.blobs.is_empty() || args.blobs.iter().any(|&n| n > 72) {
        anyhow::bail!("--blobs takes counts from 0 to 72");
    }
    let home = std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default());
    let options = sszgate_bench::e2e::Options {
        sszgate: std::env::current_exe().context("finding the sszgate executable")?,
        tools: args.chain.tools(),
        snooper: args
            .rpc_snooper
            .unwrap_or_else(|| home.join(".cache/rpc-snooper-6452c11"))
            .join("bin/snooper"),
        data: args.data.dir(),
        windows: args.windows,
        slots_per_window: args.slots_per_window,
        seconds_per_slot: args.seconds_per_slot,
        blobs: args.blobs,
        proxy_args: args.proxy_args.proxy_args,
    };
    let mut progress = |line: &str| eprintln!("sszgate bench e2e: {line}");
    let report = crate::runtime()?
        .block_on(sszgate_bench::e2e::run(&options, &mut progress))
        .map_err(|e| anyhow::anyhow!("bench e2e: {e}"))?;
    print_report(&report.markdown(), args.out.as_deref())?;
    if let Some(out) = &args.out {
        let html = out.with_extension("html");
        std::fs::write(&html, report.html())
            .with_context(|| format!("writing {}", html.display()))?;
    }
    if let Some(path) = args.json.json {
        let json = serde_json::to_string_pretty(&report).context("the report as JSON")?;
        std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[derive(Debug, Args)]
struct RpcBenchArgs {
    /// The recorded cases (one directory each, with test.json); default:
    /// ../shared/data/colibri next to the repository.
    #[arg(long, env = "SSZGATE_RPC_CASES")]
    cases: Option<PathBuf>,
    /// colibri's vectors (one directory each): the committee keys sszgate's proof verifier
    /// trusts for a case that has one; default: ../shared/vectors/colibri next to the
    /// repository.
    #[arg(long, env = "SSZGATE_COLIBRI_VECTORS")]
    vectors: Option<PathBuf>,
    /// colibri.stateless's npm package directory (node_modules/@corpus-core/colibri-stateless);
    /// without it sszgate is measured alone and the report says so.
    #[arg(long, env = "SSZGATE_COLIBRI")]
    colibri: Option<PathBuf>,
    /// Samples per case and variant.
    #[arg(long, default_value_t = 10)]
    rounds: usize,
    /// Only the cases whose name contains this.
    #[arg(long)]
    only: Option<String>,
    #[command(flatten)]
    out: MarkdownOutArg,
}

fn rpc(args: RpcBenchArgs) -> Result<()> {
    if args.rounds == 0 {
        anyhow::bail!("--rounds must be at least 1");
    }
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    let options = sszgate_bench::rpc::Options {
        data: args.cases.unwrap_or_else(|| shared.join("data/colibri")),
        vectors: args
            .vectors
            .unwrap_or_else(|| shared.join("vectors/colibri")),
        colibri: args.colibri,
        rounds: args.rounds,
        only: args.only,
    };
    let report = sszgate_bench::rpc::run(&options)
        .map_err(|e| anyhow::anyhow!("bench rpc ({}): {e}", options.data.display()))?;
    print_report(&report.markdown(), args.out.out.as_deref())?;
    let differ = report.disagreements();
    if !differ.is_empty() {
        let lines: Vec<String> = differ.iter().map(|(c, e)| format!("{c}: {e}")).collect();
        anyhow::bail!(
            "sszgate and colibri answered differently:\n{}",
            lines.join("\n")
        );
    }
    Ok(())
}

/// `bench attack --target rpc`: the campaign against `sszgate rpc`.
fn attack_rpc(args: AttackArgs) -> Result<()> {
    let shared = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    let options = sszgate_bench::attack::rpc::Options {
        sszgate: std::env::current_exe().context("finding the sszgate executable")?,
        data: args.cases.unwrap_or_else(|| shared.join("data/colibri")),
        short: args.short,
        live: args.live.then(|| args.chain.tools()),
    };
    let report = crate::runtime()?.block_on(sszgate_bench::attack::rpc::run(&options));
    print_report(&report.markdown(), args.out.out.as_deref())?;
    if let Some(path) = args.json.json {
        let json = serde_json::to_string_pretty(&report).context("the report as JSON")?;
        std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    let failed: Vec<String> = report
        .failed()
        .iter()
        .map(|(i, row)| format!("row {i} ({}): {}", row.attack, row.failures.join("; ")))
        .collect();
    if !failed.is_empty() {
        anyhow::bail!("{} rows failed:\n{}", failed.len(), failed.join("\n"));
    }
    Ok(())
}

/// Where a live chain's tools are (geth, Lodestar v1.38 and its kit).
#[derive(Debug, Args)]
pub(crate) struct LiveChainArgs {
    /// geth (v1.17.8) for the live chain; default .tools/bin/geth in the repository.
    #[arg(long, env = "SSZGATE_GETH")]
    geth: Option<PathBuf>,
    /// The Lodestar v1.38 build; default $HOME/.cache/lodestar-v1.38.
    #[arg(long, env = "SSZGATE_LODESTAR_FULU")]
    lodestar: Option<PathBuf>,
    /// The chain kit (up.sh, down.sh); default ../shared/tools/lodestar-fulu.
    #[arg(long)]
    kit: Option<PathBuf>,
}

impl LiveChainArgs {
    /// The tools given, else geth in the repository's `.tools/bin`, the build in
    /// `$HOME/.cache/lodestar-v1.38` and the kit in `../shared/tools/lodestar-fulu`.
    pub(crate) fn tools(self) -> sszgate_bench::attack::rpc::LiveTools {
        let repository = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        sszgate_bench::attack::rpc::LiveTools {
            geth: self
                .geth
                .unwrap_or_else(|| repository.join(".tools/bin/geth")),
            lodestar: self.lodestar.unwrap_or_else(|| {
                std::path::Path::new(&std::env::var_os("HOME").unwrap_or_default())
                    .join(".cache/lodestar-v1.38")
            }),
            kit: self
                .kit
                .unwrap_or_else(|| repository.join("../shared/tools/lodestar-fulu")),
        }
    }
}

#[derive(Debug, Args)]
struct AttackArgs {
    /// The CI-sized run: smaller bombs (1 GiB) and floods, every attack kind still present.
    #[arg(long)]
    short: bool,
    /// What to attack: `proxy` (`sszgate proxy` children) or `rpc` (`sszgate rpc` children:
    /// lying Beacon APIs and hostile clients; exits 1 on a wrong answer accepted or an
    /// invariant broken).
    #[arg(long, value_enum, default_value_t = AttackTarget::Proxy)]
    target: AttackTarget,
    /// With --target rpc: the recorded cases; default ../shared/data/colibri next to the
    /// repository.
    #[arg(long, env = "SSZGATE_RPC_CASES")]
    cases: Option<PathBuf>,
    /// With --target rpc: run the live rows (the forged head signed by 1, 100, 300 and 400 of
    /// 512 seats) on a Fulu chain of geth and Lodestar v1.38 started for them; without it,
    /// they are reported as not run.
    #[arg(long)]
    live: bool,
    /// With --live: the chain's tools.
    #[command(flatten)]
    chain: LiveChainArgs,
    #[command(flatten)]
    out: MarkdownOutArg,
    #[command(flatten)]
    json: JsonOutArg,
}

/// What `bench attack` attacks.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum AttackTarget {
    /// `sszgate proxy` children.
    Proxy,
    /// `sszgate rpc` children.
    Rpc,
}

fn attack(args: AttackArgs) -> Result<()> {
    if let AttackTarget::Rpc = args.target {
        return attack_rpc(args);
    }
    let options = sszgate_bench::attack::Options {
        sszgate: std::env::current_exe().context("finding the sszgate executable")?,
        short: args.short,
    };
    let runtime = crate::runtime()?;
    let report = runtime.block_on(sszgate_bench::attack::run(&options));
    print_report(&report.markdown(), args.out.out.as_deref())?;
    if let Some(path) = args.json.json {
        let json = serde_json::to_string_pretty(&report).context("the report as JSON")?;
        std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    let failed: Vec<String> = report
        .failed()
        .iter()
        .map(|(i, row)| {
            format!(
                "row {i} ({}, {}): {}",
                row.attack,
                row.target.label(),
                row.failures.join("; ")
            )
        })
        .collect();
    if !failed.is_empty() {
        anyhow::bail!(
            "{} rows broke an invariant:\n{}",
            failed.len(),
            failed.join("\n")
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
struct SoakArgs {
    #[command(flatten)]
    data: DataArg,
    /// How long traffic runs, e.g. 30m or 45s.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    duration: std::time::Duration,
    /// Slots per 12 s: 1 is mainnet's rate, 10 ten times it.
    #[arg(long, default_value_t = 1.0)]
    rate_multiplier: f64,
    /// Blob counts the slots draw from (getPayload bundles and getBlobs).
    #[arg(long, value_delimiter = ',', default_value = "0,1,6,9,21,48,72")]
    blobs: Vec<usize>,
    /// Time between two RSS samples of the proxies.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    sample_every: std::time::Duration,
    /// Time after which the RSS counts as warmed up (default: a quarter of --duration, at
    /// most 60 s).
    #[arg(long, value_parser = humantime::parse_duration)]
    warm_up: Option<std::time::Duration>,
    #[command(flatten)]
    out: MarkdownOutArg,
    #[command(flatten)]
    json: JsonOutArg,
    #[command(flatten)]
    proxy_args: ProxyArgsArg,
}

fn soak(args: SoakArgs) -> Result<()> {
    if args.duration.is_zero() || args.rate_multiplier.is_nan() || args.rate_multiplier <= 0.0 {
        anyhow::bail!("--duration and --rate-multiplier must be above zero");
    }
    if args.blobs.iter().any(|&n| n > 72) || args.blobs.is_empty() {
        anyhow::bail!("--blobs takes counts from 0 to 72");
    }
    let options = sszgate_bench::soak::Options {
        sszgate: std::env::current_exe().context("finding the sszgate executable")?,
        data: args.data.dir(),
        duration: args.duration,
        rate_multiplier: args.rate_multiplier,
        blobs: args.blobs,
        sample_every: args.sample_every,
        warm_up: args
            .warm_up
            .unwrap_or_else(|| (args.duration / 4).min(std::time::Duration::from_secs(60))),
        proxy_args: args.proxy_args.proxy_args,
    };
    eprintln!(
        "sszgate bench soak: data {}, {:?} at {}x, blobs {:?}",
        options.data.display(),
        options.duration,
        options.rate_multiplier,
        options.blobs
    );
    let runtime = crate::runtime()?;
    let report = runtime.block_on(sszgate_bench::soak::run(&options));
    print_report(&report.markdown(), args.out.out.as_deref())?;
    if let Some(path) = args.json.json {
        let json = serde_json::to_string_pretty(&report).context("the report as JSON")?;
        std::fs::write(&path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    if !report.clean() {
        anyhow::bail!("the soak lost records, saw errors, or a proxy did not stop cleanly");
    }
    Ok(())
}

#[derive(Debug, Args)]
struct StudyArgs {
    #[command(flatten)]
    data: DataArg,
    /// Blob counts of the messages with blobs.
    #[arg(long, value_delimiter = ',', default_value = "0,6,24,48,72")]
    blobs: Vec<usize>,
    /// Where the report goes: <study>.md, <study>.csv and the charts (SVG).
    #[arg(long, default_value = "sszgate-bench")]
    out: PathBuf,
    /// Megabytes of message through each operation (rounds = this / message size).
    #[arg(long)]
    budget_mb: Option<usize>,
    /// Fewest rounds per message.
    #[arg(long, default_value_t = 15)]
    min_rounds: usize,
    /// Most rounds per message.
    #[arg(long, default_value_t = 300)]
    max_rounds: usize,
}

#[derive(Debug, Args)]
struct ProxyBenchArgs {
    #[command(flatten)]
    data: DataArg,
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
    #[command(flatten)]
    out: MarkdownOutArg,
    /// Also measure the bridge: REST-SSZ calls through a bridging gateway to the JSON-RPC EL.
    #[arg(long)]
    bridge: bool,
    #[command(flatten)]
    proxy_args: ProxyArgsArg,
    /// Leave out the floor relays (a plain copying and a splicing TCP relay and a bare hyper
    /// HTTP relay, measured in the same rounds as the least a relay adds on this machine).
    #[arg(long)]
    no_floors: bool,
    /// rpc-snooper's `snooper` binary, measured next to `sszgate snooper` ("none" to skip); by
    /// default `$SSZGATE_RPC_SNOOPER/bin/snooper` or `~/.cache/rpc-snooper-6452c11/bin/snooper`
    /// when built (`../shared/tools/rpc-snooper/build.sh`).
    #[arg(long)]
    rpc_snooper: Option<String>,
    /// The xatu binary both snoopers also publish to, in a second pair ("none" to skip); by
    /// default `$SSZGATE_XATU` or `~/.cache/xatu-v1.8.1/bin/xatu` when built.
    #[arg(long)]
    xatu: Option<String>,
    /// The xatu kit whose `run.sh` starts the server (`../shared/tools/xatu`).
    #[arg(long)]
    xatu_kit: Option<PathBuf>,
    /// getBlobsV2 calls (the most blobs measured) through each snooper under sustained load.
    #[arg(long, default_value_t = 200)]
    sustained_calls: usize,
}

/// A peer's executable: `given` ("none": no peer), else `$env` (with `under` appended) or
/// `~/default`, when it exists.
fn peer_binary(given: Option<&str>, env: &str, under: &str, default: &str) -> Option<PathBuf> {
    match given {
        Some("none") => None,
        Some(path) => Some(PathBuf::from(path)),
        None => std::env::var_os(env)
            .map(|v| match under {
                "" => PathBuf::from(v),
                under => PathBuf::from(v).join(under),
            })
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(default)))
            .filter(|p| p.exists()),
    }
}

/// The rpc-snooper comparison's options, when rpc-snooper is there.
fn snooper_peer(args: &ProxyBenchArgs) -> Option<sszgate_bench::snooper_peer::Options> {
    let rpc_snooper = peer_binary(
        args.rpc_snooper.as_deref(),
        "SSZGATE_RPC_SNOOPER",
        "bin/snooper",
        ".cache/rpc-snooper-6452c11/bin/snooper",
    )?;
    let xatu = peer_binary(
        args.xatu.as_deref(),
        "SSZGATE_XATU",
        "",
        ".cache/xatu-v1.8.1/bin/xatu",
    );
    let kit = args.xatu_kit.clone().unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/tools/xatu")
    });
    Some(sszgate_bench::snooper_peer::Options {
        rpc_snooper,
        xatu: xatu.map(|binary| sszgate_bench::snooper_peer::XatuKit { binary, kit }),
        sustained_calls: args.sustained_calls,
    })
}

pub(crate) fn run(args: BenchArgs) -> Result<()> {
    let args = match args.what {
        BenchCommand::Proxy(args) => args,
        BenchCommand::Codec(args) => return study(Study::Codec, args),
        BenchCommand::Compress(args) => return study(Study::Compress, args),
        BenchCommand::Soak(args) => return soak(args),
        BenchCommand::Attack(args) => return attack(args),
        BenchCommand::Rpc(args) => return rpc(args),
        BenchCommand::E2e(args) => return e2e(args),
        BenchCommand::SszChain(args) => return super::ssz_chain::run(args),
    };
    let nginx = match args.nginx.as_deref() {
        Some("none") => None,
        Some(path) => Some(PathBuf::from(path)),
        None => ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists()),
    };
    let snooper = snooper_peer(&args);
    let options = sszgate_bench::proxy::Options {
        sszgate: std::env::current_exe().context("finding the sszgate executable")?,
        data: args.data.dir(),
        blobs: args.blobs,
        rounds: args.rounds,
        small_calls: args.small_calls,
        nginx,
        proxy_args: args.proxy_args.proxy_args,
        bridge: args.bridge,
        floors: !args.no_floors,
        snooper,
    };
    eprintln!(
        "sszgate bench proxy: data {}, blobs {:?}, nginx {:?}, rpc-snooper {:?}",
        options.data.display(),
        options.blobs,
        options.nginx,
        options.snooper.as_ref().map(|s| (&s.rpc_snooper, &s.xatu))
    );
    let runtime = crate::runtime()?;
    let report = runtime.block_on(sszgate_bench::proxy::run(&options, &mut progress("proxy")));
    print_report(&report.markdown(), args.out.out.as_deref())?;
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Study {
    Codec,
    Compress,
}

/// A progress bar on a terminal, a line per tenth otherwise.
fn progress(what: &'static str) -> impl FnMut(usize, usize, &str) {
    let bar = std::io::IsTerminal::is_terminal(&std::io::stderr()).then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}",
            )
            .expect("a valid template"),
        );
        bar
    });
    let mut last_tenth = usize::MAX;
    move |done, total, item| match &bar {
        Some(bar) => {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            bar.set_message(item.to_string());
            if done == total {
                bar.finish_and_clear();
            }
        }
        None => {
            let tenth = done * 10 / total.max(1);
            if tenth != last_tenth {
                last_tenth = tenth;
                eprintln!("sszgate bench {what}: {done}/{total} {item}");
            }
        }
    }
}

fn study(which: Study, args: StudyArgs) -> Result<()> {
    let data = args.data.dir();
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let name = match which {
        Study::Codec => "codec",
        Study::Compress => "compress",
    };
    let started = std::time::Instant::now();
    // alloy's blob type is a 128 KiB array moved by value; give the codecs room.
    let out = args.out.clone();
    let data_shown = data.display().to_string();
    let (markdown, charts, rows) = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || -> Result<(String, Vec<String>, usize)> {
            let csv = out.join(format!("{name}.csv"));
            match which {
                Study::Codec => {
                    let options = sszgate_bench::codec::CodecOptions {
                        blobs: args.blobs,
                        budget_bytes: args.budget_mb.unwrap_or(400) << 20,
                        min_rounds: args.min_rounds,
                        max_rounds: args.max_rounds,
                    };
                    let rows = sszgate_bench::codec::run(&data, &options, &mut progress("codec"))
                        .with_context(|| format!("reading {}", data.display()))?;
                    sszgate_bench::report::write_csv(&csv, &rows)?;
                    let charts = sszgate_bench::report::codec_charts(&out, &rows)?;
                    Ok((
                        sszgate_bench::report::codec_markdown(&rows),
                        charts,
                        rows.len(),
                    ))
                }
                Study::Compress => {
                    let items = sszgate_bench::compress::items(&data, &args.blobs)
                        .with_context(|| format!("reading {}", data.display()))?;
                    let rows = sszgate_bench::compress::run(
                        &items,
                        args.budget_mb.unwrap_or(64) << 20,
                        args.min_rounds.min(15),
                        args.max_rounds,
                        &mut progress("compress"),
                    );
                    sszgate_bench::report::write_csv(&csv, &rows)?;
                    let charts = sszgate_bench::report::compress_charts(&out, &rows)?;
                    Ok((
                        sszgate_bench::report::compress_markdown(&rows),
                        charts,
                        rows.len(),
                    ))
                }
            }
        })
        .context("starting the study thread")?
        .join()
        .map_err(|_| anyhow::anyhow!("the study thread panicked"))??;
    let text = format!(
        "## sszgate bench {name}\n\nMachine: {}\nData: {}\nTook {:.0} s; {rows} measurements in {name}.csv; charts: {}\n\n{markdown}",
        sszgate_bench::harness::machine(),
        data_shown,
        started.elapsed().as_secs_f64(),
        charts
            .iter()
            .map(|c| c.rsplit('/').next().unwrap_or(c))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let md = args.out.join(format!("{name}.md"));
    std::fs::write(&md, &text).with_context(|| format!("writing {}", md.display()))?;
    println!("{text}");
    eprintln!(
        "sszgate bench {name}: wrote {} and the CSV and charts next to it",
        md.display()
    );
    Ok(())
}

/// Prints a bench's Markdown report after the machine's description, and writes the same to
/// `out` when given.
fn print_report(markdown: &str, out: Option<&std::path::Path>) -> Result<()> {
    let text = format!(
        "Machine: {}\n\n{markdown}",
        sszgate_bench::harness::machine()
    );
    println!("{text}");
    if let Some(out) = out {
        std::fs::write(out, &text).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}
