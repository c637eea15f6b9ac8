//! `sszgate conform`: the REST-SSZ conformance suite. `el` checks an execution client's
//! server; `cl` stands between a consensus client and a working EL and checks every request
//! the CL sends. Both print the report (a Markdown table, or JSON) and exit non-zero when a
//! check fails.
//!
//! Not here: the checks (`sszgate-conform`).

use std::{net::SocketAddr, time::Duration};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use sszgate_conform::{
    Report,
    cl::ClConfig,
    el::{BlobSource, ElConfig},
};
use sszgate_drive::Senders;
use sszgate_engine::Fork;

use crate::flags::{self, ForkParser, JwtSecretArg};

/// `sszgate conform`.
#[derive(Args, Debug)]
pub(crate) struct ConformArgs {
    #[command(subcommand)]
    side: Side,
}

#[derive(Subcommand, Debug)]
enum Side {
    /// Check an EL's REST-SSZ server: capabilities, every claimed resource and fork with real
    /// messages, the fork header, the error contract, JWT, JSON-RPC equivalence, transports.
    El(ElArgs),
    /// Stand between a CL and a working EL and check every REST-SSZ request the CL sends.
    Cl(ClArgs),
}

/// How the report is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// A Markdown table: check, rule, verdict, evidence.
    Table,
    /// JSON, for CI.
    Json,
}

/// `sszgate conform el`.
#[derive(Args, Debug)]
struct ElArgs {
    /// The EL's Engine API URL (REST-SSZ under /engine/v1, JSON-RPC at /), e.g.
    /// http://127.0.0.1:8551.
    #[arg(long)]
    engine: String,
    #[command(flatten)]
    jwt: JwtSecretArg,
    /// The chain's fork; default: the newest claimed fork in which the EL builds a payload.
    #[arg(long, env = flags::FORK_ENV, value_parser = ForkParser)]
    fork: Option<Fork>,
    /// A JSON-RPC URL where eth_getBlockByNumber is answered; default: the engine URL's /
    /// (with the JWT).
    #[arg(long)]
    eth_rpc: Option<String>,
    /// Time given the EL to build a payload, e.g. 500ms.
    #[arg(long, default_value = "500ms", value_parser = humantime::parse_duration)]
    build_time: Duration,
    #[command(flatten)]
    blob_key: BlobKeyArgs,
    /// The report's format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

/// The funded account `conform el` sends its blob transaction from (as `sszgate drive` takes
/// its keys): without one, `blobs.pool` is not run.
#[derive(Args, Debug)]
struct BlobKeyArgs {
    /// A funded private key (hex) to send a blob transaction from, so that /blobs/vN are
    /// checked with blobs in the pool (needs --eth-rpc, where it is sent).
    #[arg(
        long,
        env = "SSZGATE_CONFORM_KEY",
        hide_env_values = true,
        requires = "eth_rpc"
    )]
    key: Option<String>,
    /// A BIP-39 mnemonic; as for `drive`, blob transactions go from the account after
    /// --mnemonic-index (m/44'/60'/0'/0/INDEX+1).
    #[arg(
        long,
        env = "SSZGATE_CONFORM_MNEMONIC",
        hide_env_values = true,
        conflicts_with = "key",
        requires = "eth_rpc"
    )]
    mnemonic: Option<String>,
    /// The first account of --mnemonic (the next one sends blob transactions).
    #[arg(long, default_value_t = 0, requires = "mnemonic")]
    mnemonic_index: u32,
    #[command(flatten)]
    data: flags::DataArg,
}

impl BlobKeyArgs {
    /// The blob source: the account and the data set's blobs (`None` without a key).
    fn source(&self) -> Result<Option<BlobSource>> {
        let senders = match (&self.key, &self.mnemonic) {
            (Some(key), _) => Senders::from_keys(std::slice::from_ref(key)).context("--key")?,
            (_, Some(phrase)) => {
                Senders::from_mnemonic(phrase, self.mnemonic_index).context("--mnemonic")?
            }
            _ => return Ok(None),
        };
        let source =
            BlobSource::from_data(senders, &self.data.dir()).map_err(anyhow::Error::msg)?;
        Ok(Some(source))
    }
}

/// `sszgate conform cl`.
#[derive(Args, Debug)]
struct ClArgs {
    /// Where the CL connects (its Engine API URL points here), e.g. 127.0.0.1:8551.
    #[arg(long)]
    listen: SocketAddr,
    /// The working EL's REST-SSZ server (or `sszgate proxy` bridging to a JSON-RPC EL).
    #[arg(long)]
    upstream: String,
    #[command(flatten)]
    jwt: JwtSecretArg,
    /// Stop and report after this many requests (default: on Ctrl-C or SIGTERM).
    #[arg(long)]
    calls: Option<u64>,
    /// Stop and report after this long, e.g. 2m.
    #[arg(long, value_parser = humantime::parse_duration)]
    duration: Option<Duration>,
    /// The report's format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

/// Runs `sszgate conform`.
pub(crate) fn run(args: ConformArgs) -> Result<()> {
    let runtime = crate::runtime()?;
    let (report, format) = match args.side {
        Side::El(args) => {
            let config = ElConfig {
                engine: args.engine,
                secret: secret(&args.jwt)?,
                fork: args.fork,
                eth_rpc: args.eth_rpc,
                build_time: args.build_time,
                blob_source: args.blob_key.source()?,
            };
            (
                runtime.block_on(sszgate_conform::run_el(&config)),
                args.format,
            )
        }
        Side::Cl(args) => {
            let config = ClConfig {
                upstream: args.upstream,
                secret: secret(&args.jwt)?,
                calls: args.calls,
                duration: args.duration,
            };
            let report = runtime.block_on(async {
                let stop = crate::shutdown_signal();
                let listener = tokio::net::TcpListener::bind(args.listen)
                    .await
                    .with_context(|| format!("listening on {}", args.listen))?;
                eprintln!("sszgate conform cl: listening on {}", args.listen);
                Ok::<_, anyhow::Error>(sszgate_conform::cl::serve(listener, config, stop).await)
            })?;
            (report, args.format)
        }
    };
    print(&report, format)
}

fn secret(jwt: &JwtSecretArg) -> Result<sszgate_gateway::JwtSecret> {
    flags::read_jwt_secret(
        jwt.jwt_secret
            .as_deref()
            .context("--jwt-secret is needed")?,
    )
}

fn print(report: &Report, format: Format) -> Result<()> {
    use std::io::Write;
    let text = match format {
        Format::Table => report.to_table(),
        Format::Json => report.to_json(),
    };
    std::io::stdout().write_all(text.as_bytes())?;
    let failed = report.with(sszgate_conform::Verdict::Fail);
    if !failed.is_empty() {
        bail!("{} check(s) failed: {}", failed.len(), failed.join(", "));
    }
    Ok(())
}
