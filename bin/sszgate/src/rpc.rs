//! `sszgate rpc`: a verified `eth_*` JSON-RPC endpoint. A beacon light client (trusting a
//! checkpoint block root) anchors execution blocks; every answer of the untrusted execution
//! RPC is checked against them before it is returned (`sszgate-rpc`).
//!
//! Arguments are resolved to the server's configuration by a pure function ([`settings`]);
//! the rest starts the light client, keeps it synced and serves until a signal.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use alloy_primitives::B256;
use anyhow::{Context, Result, bail};
use clap::Args;
use sszgate_light::{
    ChainSpec, HttpBeaconApi, LightClient,
    client::{fetch_chain_spec, fetch_finalized_checkpoint},
};
use sszgate_rpc::{Config, LightAnchors};

/// `sszgate rpc`.
#[derive(Args, Debug, Clone)]
pub(crate) struct RpcArgs {
    /// The untrusted execution JSON-RPC (any provider or node).
    #[arg(long, env = "SSZGATE_RPC_EXECUTION", value_name = "URL")]
    execution: String,
    /// The untrusted Beacon API (light-client updates, blocks).
    #[arg(long, env = "SSZGATE_RPC_BEACON", value_name = "URL")]
    beacon: String,
    /// The trusted block root to start from; without it, the beacon node's finalized
    /// checkpoint is taken on trust (a warning says so).
    #[arg(long, env = "SSZGATE_RPC_CHECKPOINT", value_name = "ROOT")]
    checkpoint: Option<B256>,
    /// Where to serve JSON-RPC.
    #[arg(long, env = "SSZGATE_RPC_LISTEN", default_value = "127.0.0.1:8545")]
    listen: SocketAddr,
    /// The chain id answered by eth_chainId; known for mainnet, sepolia and hoodi.
    #[arg(long, env = "SSZGATE_RPC_CHAIN_ID")]
    chain_id: Option<u64>,
    /// Where the light client keeps what it verified, so a restart does not sync again.
    #[arg(
        long,
        env = "SSZGATE_RPC_STATE",
        default_value = "sszgate-light-client.json"
    )]
    state: PathBuf,
    /// Methods passed through unverified (comma-separated), marked in the log and metrics.
    #[arg(
        long,
        env = "SSZGATE_RPC_ALLOW_UNVERIFIED",
        value_delimiter = ',',
        value_name = "METHOD,…"
    )]
    allow_unverified: Vec<String>,
    /// Take the wall clock as fixed at this Unix time (seconds): for replaying a recorded
    /// chain, whose slots are in the past.
    #[arg(long, env = "SSZGATE_RPC_CLOCK", hide = true, value_name = "UNIX_TIME")]
    clock: Option<u64>,
    /// Timeout of one upstream request.
    #[arg(long, env = "SSZGATE_RPC_UPSTREAM_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    upstream_timeout: Duration,
}

/// The time `--clock` fixes the light client's clock at.
static FIXED_CLOCK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn fixed_clock() -> u64 {
    FIXED_CLOCK.load(std::sync::atomic::Ordering::Relaxed)
}

/// The chain id of a known chain, by the light client's name for it.
fn known_chain_id(name: &str) -> Option<u64> {
    match name {
        "mainnet" => Some(1),
        "sepolia" => Some(11_155_111),
        "hoodi" => Some(560_048),
        _ => None,
    }
}

/// The server's configuration, from the arguments and the chain the beacon node serves.
fn settings(args: &RpcArgs, spec: &ChainSpec) -> Result<Config> {
    let chain_id = match (args.chain_id, known_chain_id(&spec.name)) {
        (Some(given), Some(known)) if given != known => {
            bail!(
                "--chain-id {given}: the beacon node serves {}, chain id {known}",
                spec.name
            )
        }
        (Some(id), _) | (None, Some(id)) => id,
        (None, None) => bail!(
            "the beacon node serves a chain sszgate does not know ({}): name its id with --chain-id",
            spec.name
        ),
    };
    let mut config = Config::new(&args.execution, chain_id);
    config.beacon = Some(args.beacon.clone());
    config.listen = args.listen;
    config.upstream_timeout = args.upstream_timeout;
    config.allow_unverified = args.allow_unverified.clone();
    Ok(config)
}

/// Runs `sszgate rpc` until SIGINT or SIGTERM.
pub(crate) fn run(args: RpcArgs) -> Result<()> {
    crate::runtime()?.block_on(run_async(args))
}

async fn run_async(args: RpcArgs) -> Result<()> {
    let api = HttpBeaconApi::new(&args.beacon, args.upstream_timeout).context("--beacon")?;
    let spec = fetch_chain_spec(&api)
        .await
        .context("reading the chain's parameters from --beacon")?;
    let config = settings(&args, &spec)?;
    let checkpoint = match args.checkpoint {
        Some(root) => root,
        None => {
            let root = fetch_finalized_checkpoint(&api)
                .await
                .context("the finalized checkpoint")?;
            if !args.state.exists() {
                tracing::warn!(%root, "no --checkpoint: starting from the beacon node's finalized checkpoint, taken on trust (trust on first use); pass --checkpoint ROOT from a source you trust");
            }
            root
        }
    };
    tracing::info!(chain = %spec.name, state = %args.state.display(), "light client: bootstrapping or resuming");
    let mut client = LightClient::open(api, spec, args.state.clone(), checkpoint)
        .await
        .context("starting the light client")?;
    if let Some(at) = args.clock {
        FIXED_CLOCK.store(at, std::sync::atomic::Ordering::Relaxed);
        client = client.with_clock(fixed_clock);
    }
    let client = Arc::new(client);
    sync_once(&client).await?;
    tokio::spawn(keep_synced(client.clone()));
    let server = sszgate_rpc::serve(config, LightAnchors(client))
        .await
        .map_err(|e| anyhow::anyhow!("serving on {}: {e}", args.listen))?;
    tracing::info!(url = %server.url(), execution = %args.execution, beacon = %args.beacon, "sszgate rpc serving verified eth_* JSON-RPC");
    crate::shutdown_signal().await;
    tracing::info!("stopping");
    Ok(())
}

/// One sync, with a progress line.
async fn sync_once<A: sszgate_light::BeaconApi>(client: &LightClient<A>) -> Result<()> {
    let report = client.sync().await.context("syncing the light client")?;
    let status = client.status();
    tracing::info!(
        updates = report.updates_applied,
        finalized_slot = status.finalized_slot,
        optimistic_slot = status.optimistic_slot,
        behind = status.current_slot.saturating_sub(status.optimistic_slot),
        "light client synced"
    );
    Ok(())
}

/// Syncs once a slot; a failed sync is logged and tried again next slot.
async fn keep_synced<A: sszgate_light::BeaconApi + 'static>(client: Arc<LightClient<A>>) {
    let slot = Duration::from_secs(client.spec().seconds_per_slot.max(1));
    loop {
        tokio::time::sleep(slot).await;
        if let Err(e) = sync_once(&client).await {
            tracing::warn!(error = %format!("{e:#}"), "light client sync failed; trying again next slot");
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: RpcArgs,
    }

    fn args(extra: &[&str]) -> RpcArgs {
        let mut argv = vec!["rpc", "--execution", "http://el", "--beacon", "http://cl"];
        argv.extend_from_slice(extra);
        Cli::parse_from(argv).args
    }

    #[test]
    fn the_chain_id_comes_from_the_chain_or_the_flag_and_they_must_agree() {
        let mainnet = ChainSpec::mainnet();
        assert_eq!(settings(&args(&[]), &mainnet).unwrap().chain_id, 1);
        assert_eq!(
            settings(&args(&["--chain-id", "1"]), &mainnet)
                .unwrap()
                .chain_id,
            1
        );
        let wrong = settings(&args(&["--chain-id", "5"]), &mainnet).unwrap_err();
        assert!(wrong.to_string().contains("chain id 1"), "{wrong}");
        let custom = ChainSpec {
            name: "custom".into(),
            ..ChainSpec::mainnet()
        };
        assert!(
            settings(&args(&[]), &custom)
                .unwrap_err()
                .to_string()
                .contains("--chain-id")
        );
        assert_eq!(
            settings(&args(&["--chain-id", "1337"]), &custom)
                .unwrap()
                .chain_id,
            1337
        );
    }

    #[test]
    fn flags_reach_the_server_configuration() {
        let c = settings(
            &args(&[
                "--listen",
                "127.0.0.1:9999",
                "--allow-unverified",
                "eth_gasPrice,eth_feeHistory",
                "--upstream-timeout",
                "3s",
            ]),
            &ChainSpec::mainnet(),
        )
        .unwrap();
        assert_eq!(c.listen, "127.0.0.1:9999".parse().unwrap());
        assert_eq!(c.allow_unverified, ["eth_gasPrice", "eth_feeHistory"]);
        assert_eq!(c.upstream_timeout, Duration::from_secs(3));
        assert_eq!(c.beacon.as_deref(), Some("http://cl"));
        assert_eq!(c.execution, "http://el");
    }
}
