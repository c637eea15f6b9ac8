//! `sszgate rpc`: a verified `eth_*` JSON-RPC endpoint, in one of two modes.
//!
//! - Local (`--execution` and `--beacon`): a beacon light client (trusting a checkpoint block
//!   root) anchors execution blocks; every answer of the untrusted execution RPC is checked
//!   against them before it is returned (`sszgate-rpc`). With `--serve-proofs` the same
//!   server also builds colibri.stateless proofs for other verifiers at `POST /proof`.
//! - Remote (`--prover URL`): every request is answered from an SSZ proof the prover sends,
//!   checked against the sync-committee keys this verifier holds (`sszgate-proof`'s `remote`).
//!
//! Arguments are resolved to the server's configuration by pure functions ([`mode`],
//! [`settings`]); the rest starts the trust source and serves until a signal.

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use alloy_primitives::B256;
use anyhow::{Context, Result, bail};
use clap::Args;
use sszgate_light::{
    ChainSpec, HttpBeaconApi, LightClient, ParticipationPolicy,
    client::{Network, fetch_finalized_checkpoint, resolve_chain_spec},
};
use sszgate_proof::{
    TrustedState,
    prover::{Prover, endpoint::ProofEndpoint},
    remote::ProofClient,
    tags::{Clock, DEFAULT_MAX_HEAD_AGE, Freshness},
};
use sszgate_rpc::{BpoForks, Config, ForkSchedule, LightAnchors, Routes, Server};

/// `sszgate rpc`.
#[derive(Args, Debug, Clone)]
pub(crate) struct RpcArgs {
    /// The untrusted execution JSON-RPC (any provider or node). Local mode: required;
    /// with --prover: only for methods allowed unverified.
    #[arg(long, env = "SSZGATE_RPC_EXECUTION", value_name = "URL")]
    execution: Option<String>,
    /// The untrusted Beacon API (light-client updates, blocks). Local mode: required; with
    /// --prover: read for the chain's parameters only (default: mainnet's).
    #[arg(long, env = "SSZGATE_RPC_BEACON", value_name = "URL")]
    beacon: Option<String>,
    /// Verify proofs from this colibri-compatible prover (`sszgate rpc --serve-proofs`'s
    /// `/proof`, or colibri's) instead of fetching and checking standard RPC data.
    #[arg(
        long,
        env = "SSZGATE_RPC_PROVER",
        value_name = "URL",
        conflicts_with = "serve_proofs"
    )]
    prover: Option<String>,
    /// Also serve colibri.stateless proofs at `POST /proof` (colibri's remote-prover API),
    /// built from --execution and --beacon.
    #[arg(long, env = "SSZGATE_RPC_SERVE_PROOFS")]
    serve_proofs: bool,
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
    /// Where what was verified is kept, so a restart does not sync again [default: local
    /// mode sszgate-light-client.json; --prover sszgate-proof-keys.bin].
    #[arg(long, env = "SSZGATE_RPC_STATE", value_name = "PATH")]
    state: Option<PathBuf>,
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
    /// The chain: mainnet, sepolia or hoodi (built-in parameters; the beacon node's, when it
    /// serves them, must agree), custom (the node's, with a warning), or a FILE (JSON
    /// `{"config": <the Beacon API's config/spec data>, "genesis": <its genesis data>}`).
    /// [default: mainnet, or the node's chain with a warning when it is not a built-in one]
    #[arg(long, env = "SSZGATE_RPC_NETWORK", value_name = "NAME|FILE")]
    network: Option<String>,
    /// Sync-committee members (of 512) that must sign a beacon block for it to anchor an
    /// answer. Below 342 (2/3) weakens the guarantee and is logged as a warning; the specs'
    /// safety threshold (half the most participants seen) still applies locally. With
    /// --prover it is the proof verifier's rule for signed headers and sync data.
    #[arg(
        long,
        env = "SSZGATE_RPC_MIN_PARTICIPATION",
        value_name = "N",
        default_value_t = 342,
        value_parser = clap::value_parser!(u16).range(1..=512)
    )]
    min_participation: u16,
    /// With --prover: how many slots behind the clock the block answering `latest` (and
    /// eth_blockNumber) may be; an older one is refused.
    #[arg(long, env = "SSZGATE_RPC_MAX_HEAD_AGE", value_name = "SLOTS", default_value_t = DEFAULT_MAX_HEAD_AGE)]
    max_head_age: u64,
    /// With --prover: take eth_getLogs proofs in colibri's form, which cannot show that no
    /// block of the range was left out (a warning at start). Off: only sszgate's complete
    /// form is taken.
    #[arg(long, env = "SSZGATE_RPC_ACCEPT_INCOMPLETE_LOGS")]
    accept_incomplete_logs: bool,
    /// The chain's blob-parameter-only forks (EIP-7892), for a chain sszgate does not know:
    /// `TIME:TARGET:MAX:FRACTION,…` (activation Unix time, target and maximum blobs per block,
    /// base-fee update fraction), e.g. `0:48:72:5007716`. Its EVM revisions follow the beacon
    /// node's fork epochs.
    #[arg(
        long,
        env = "SSZGATE_RPC_BLOB_SCHEDULE",
        value_name = "TIME:TARGET:MAX:FRACTION,…"
    )]
    blob_schedule: Option<BpoForks>,
    /// Timeout of one upstream request.
    #[arg(long, env = "SSZGATE_RPC_UPSTREAM_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    upstream_timeout: Duration,

    // Limits: the gateway's, by the same names and defaults (the body's is a JSON-RPC
    // request's), applied by the same code (sszgate-serve).
    /// Time a client has to send a request's headers; then the connection closes.
    #[arg(long, env = "SSZGATE_RPC_HEADER_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration, help_heading = "Limits")]
    header_timeout: Duration,
    /// Time a client has to send a request's body once its headers are in; then a 408.
    #[arg(long, env = "SSZGATE_RPC_BODY_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration, help_heading = "Limits")]
    body_timeout: Duration,
    /// Requests handled at once; beyond that a request is answered 503 at once (0: no limit).
    #[arg(
        long,
        env = "SSZGATE_RPC_MAX_IN_FLIGHT",
        default_value_t = 256,
        help_heading = "Limits"
    )]
    max_in_flight: usize,
    /// Largest request body accepted, bytes; a larger one is answered 413, from its
    /// Content-Length before it is read.
    #[arg(long, env = "SSZGATE_RPC_MAX_BODY", default_value_t = 1 << 20, help_heading = "Limits")]
    max_body: usize,
    /// Most requests in one batch; a larger batch is refused (its calls run 8 at once).
    #[arg(
        long,
        env = "SSZGATE_RPC_MAX_BATCH",
        default_value_t = 100,
        help_heading = "Limits"
    )]
    max_batch: usize,
    /// Upstream fetches one request (a whole batch) may cause; past them its calls are
    /// refused naming the budget.
    #[arg(
        long,
        env = "SSZGATE_RPC_MAX_UPSTREAM_FETCHES",
        default_value_t = 1024,
        help_heading = "Limits"
    )]
    max_upstream_fetches: u64,
    /// Bytes of upstream answers one request (a whole batch) may cause.
    #[arg(long, env = "SSZGATE_RPC_MAX_UPSTREAM_BYTES", default_value_t = 256 << 20, help_heading = "Limits")]
    max_upstream_bytes: u64,
    /// How long after a request (a whole batch) arrived its eth_call/eth_estimateGas EVM runs
    /// may go on; one call stops after 5 s in any case (as geth's rpc.evmtimeout).
    #[arg(long, env = "SSZGATE_RPC_MAX_EVM_TIME", default_value = "10s", value_parser = humantime::parse_duration, help_heading = "Limits")]
    max_evm_time: Duration,
}

/// Where the trust comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// The light client over `beacon`, answers checked against `execution`.
    Local {
        execution: String,
        beacon: String,
        serve_proofs: bool,
    },
    /// Proofs from `prover`; `beacon` (optional) names the chain.
    Remote {
        prover: String,
        beacon: Option<String>,
    },
}

/// The mode the arguments ask for, or what is missing.
fn mode(args: &RpcArgs) -> Result<Mode> {
    match (&args.prover, &args.execution, &args.beacon) {
        (Some(prover), execution, beacon) => {
            if !args.allow_unverified.is_empty() && execution.is_none() {
                bail!("--allow-unverified with --prover needs --execution to pass methods to");
            }
            Ok(Mode::Remote {
                prover: prover.clone(),
                beacon: beacon.clone(),
            })
        }
        (None, Some(execution), Some(beacon)) => Ok(Mode::Local {
            execution: execution.clone(),
            beacon: beacon.clone(),
            serve_proofs: args.serve_proofs,
        }),
        (None, _, _) => bail!(
            "name the untrusted sources: --execution URL and --beacon URL (local verification), or --prover URL (proofs)"
        ),
    }
}

/// The chain the arguments name (a FILE is read here).
fn network(args: &RpcArgs) -> Result<Network> {
    let Some(name) = args.network.as_deref() else {
        return Ok(Network::Default);
    };
    Ok(match name {
        "mainnet" => Network::Named(ChainSpec::mainnet()),
        "sepolia" => Network::Named(ChainSpec::sepolia()),
        "hoodi" => Network::Named(ChainSpec::hoodi()),
        "custom" => Network::Node,
        file => {
            let path = std::path::Path::new(file);
            let bytes = sszgate_light::persist::read_file_bounded(path, 1 << 20)
                .with_context(|| format!("--network {file}: not mainnet, sepolia, hoodi or custom, and not a readable file"))?;
            let doc: serde_json::Value = serde_json::from_slice(&bytes)
                .with_context(|| format!("--network {file}: not JSON"))?;
            let spec = ChainSpec::from_beacon_api(&doc["config"], &doc["genesis"])
                .with_context(|| format!("--network {file}: {{\"config\": <config/spec data>, \"genesis\": <genesis data>}} expected"))?;
            Network::Named(spec)
        }
    })
}

/// The participation rule anchors (local mode) and signed proof headers and sync data
/// (`--prover`) are held to.
fn participation(args: &RpcArgs) -> Result<ParticipationPolicy> {
    let min = usize::from(args.min_participation);
    ParticipationPolicy::new(min).map_err(|e| anyhow::anyhow!("--min-participation {min}: {e}"))
}

/// The state file: the flag's, else the mode's default.
fn state_path(args: &RpcArgs, mode: &Mode) -> PathBuf {
    args.state.clone().unwrap_or_else(|| match mode {
        Mode::Local { .. } => "sszgate-light-client.json".into(),
        Mode::Remote { .. } => "sszgate-proof-keys.bin".into(),
    })
}

/// The time `--clock` fixes the light client's clock at.
static FIXED_CLOCK: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn fixed_clock() -> u64 {
    FIXED_CLOCK.load(std::sync::atomic::Ordering::Relaxed)
}

/// The proof verifier's clock (the system's, or --clock's) and --max-head-age.
fn freshness(args: &RpcArgs) -> Freshness {
    Freshness {
        clock: args.clock.map_or(Clock::System, Clock::Fixed),
        max_head_age: args.max_head_age,
    }
}

/// The server's configuration, from the arguments and the chain being verified.
fn settings(args: &RpcArgs, spec: &ChainSpec) -> Result<Config> {
    let chain_id = match (
        args.chain_id,
        sszgate_proof::trust::known_chain_id(&spec.name),
    ) {
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
    let mut config = Config::new(args.execution.as_deref().unwrap_or(""), chain_id);
    config.beacon = args.beacon.clone().map(|url| sszgate_rpc::BeaconSource {
        url,
        spec: spec.clone(),
    });
    config.listen = args.listen;
    config.upstream_timeout = args.upstream_timeout;
    config.allow_unverified = args.allow_unverified.clone();
    config.connection.header_timeout = args.header_timeout;
    config.connection.body_timeout = args.body_timeout;
    config.connection.max_in_flight = args.max_in_flight;
    config.max_request_body = args.max_body;
    config.max_batch = args.max_batch;
    config.budget = sszgate_rpc::BudgetLimits {
        fetches: args.max_upstream_fetches,
        bytes: args.max_upstream_bytes,
        evm: args.max_evm_time,
    };
    config.blob_schedule = fork_table(args, spec, chain_id)?;
    Ok(config)
}

/// The chain's fork table: built in for a known chain, else from the beacon node's fork
/// epochs and --blob-schedule.
fn fork_table(args: &RpcArgs, spec: &ChainSpec, chain_id: u64) -> Result<ForkSchedule> {
    match (&args.blob_schedule, ForkSchedule::is_known(chain_id)) {
        (Some(_), true) => bail!("--blob-schedule: chain id {chain_id} has a built-in schedule"),
        (bpo, _) => Ok(
            ForkSchedule::for_chain_or_consensus(chain_id, spec.execution_fork_times())
                .with_bpo(bpo.clone().unwrap_or_default().0),
        ),
    }
}

/// Runs `sszgate rpc` until SIGINT or SIGTERM.
pub(crate) fn run(args: RpcArgs) -> Result<()> {
    crate::runtime()?.block_on(run_async(args))
}

async fn run_async(args: RpcArgs) -> Result<()> {
    // Before any port is bound (see `shutdown_signal`).
    let stop = crate::shutdown_signal();
    let mode = mode(&args)?;
    let policy = participation(&args)?;
    let state = state_path(&args, &mode);
    let server = match &mode {
        Mode::Local {
            execution,
            beacon,
            serve_proofs,
        } => serve_local(&args, execution, beacon, *serve_proofs, policy, state).await?,
        Mode::Remote { prover, beacon } => {
            serve_remote(&args, prover, beacon.as_deref(), policy, state).await?
        }
    };
    wait(server, stop).await
}

/// Serves until a signal; a listener that fails ends the process with an error.
async fn wait(mut server: Server, stop: impl std::future::Future<Output = ()>) -> Result<()> {
    tokio::select! {
        _ = stop => {
            tracing::info!("stopping");
            Ok(())
        }
        _ = server.stopped() => bail!("the JSON-RPC listener on {} failed", server.local_addr()),
    }
}

/// The chain's parameters: the named network's (compared with the beacon node's), or the
/// node's where the arguments allow it.
async fn chain_spec(args: &RpcArgs, api: Option<&HttpBeaconApi>) -> Result<ChainSpec> {
    let network = network(args)?;
    let Some(api) = api else {
        return match network {
            Network::Named(spec) => Ok(spec),
            Network::Default => Ok(ChainSpec::mainnet()),
            Network::Node => bail!("--network custom takes the chain from --beacon: name one"),
        };
    };
    resolve_chain_spec(api, network)
        .await
        .context("the chain's parameters (--network, compared with --beacon's)")
}

/// The checkpoint: the flag's, else the beacon node's finalized one (trust on first use).
async fn checkpoint(args: &RpcArgs, api: &HttpBeaconApi, first_use: bool) -> Result<B256> {
    if let Some(root) = args.checkpoint {
        return Ok(root);
    }
    let root = fetch_finalized_checkpoint(api)
        .await
        .context("the finalized checkpoint")?;
    if first_use {
        tracing::warn!(%root, "no --checkpoint: starting from the beacon node's finalized checkpoint, taken on trust (trust on first use); pass --checkpoint ROOT from a source you trust");
    }
    Ok(root)
}

async fn serve_local(
    args: &RpcArgs,
    execution: &str,
    beacon: &str,
    serve_proofs: bool,
    policy: ParticipationPolicy,
    state: PathBuf,
) -> Result<Server> {
    let api = HttpBeaconApi::new(beacon, args.upstream_timeout).context("--beacon")?;
    let spec = chain_spec(args, Some(&api)).await?;
    let config = settings(args, &spec)?;
    let checkpoint = checkpoint(args, &api, !state.exists()).await?;
    tracing::info!(chain = %spec.name, state = %state.display(), "light client: bootstrapping or resuming");
    let mut client = LightClient::open(api, spec.clone(), state, checkpoint)
        .await
        .context("starting the light client")?
        .with_participation(policy);
    if let Some(at) = args.clock {
        FIXED_CLOCK.store(at, std::sync::atomic::Ordering::Relaxed);
        client = client.with_clock(fixed_clock);
    }
    let client = Arc::new(client);
    sync_once(&client).await?;
    tokio::spawn(keep_synced(client.clone()));
    let mut routes: Routes = Vec::new();
    if serve_proofs {
        let prover = Prover::new(execution, beacon, args.upstream_timeout)?.with_spec(spec);
        routes.push(("/proof".into(), Arc::new(ProofEndpoint::new(prover))));
    }
    let verifier =
        sszgate_rpc::local_verifier(&config, LightAnchors(client)).map_err(anyhow::Error::msg)?;
    let server = sszgate_rpc::serve_with(config, verifier, routes)
        .await
        .map_err(|e| anyhow::anyhow!("serving on {}: {e}", args.listen))?;
    let proofs = if serve_proofs {
        " and proofs at POST /proof"
    } else {
        ""
    };
    tracing::info!(url = %server.url(), execution, beacon, "sszgate rpc serving verified eth_* JSON-RPC{proofs}");
    Ok(server)
}

/// The remote mode's trust: the saved keys, else the checkpoint to bootstrap from.
async fn remote_trust(
    args: &RpcArgs,
    spec: ChainSpec,
    api: Option<&HttpBeaconApi>,
    state: &std::path::Path,
) -> Result<TrustedState> {
    if state.exists() {
        let trust = TrustedState::load(spec, state).map_err(anyhow::Error::msg)?;
        tracing::info!(periods = ?trust.periods(), state = %state.display(), "committee keys loaded");
        return Ok(trust);
    }
    let root = match (args.checkpoint, api) {
        (Some(root), _) => root,
        (None, Some(api)) => checkpoint(args, api, true).await?,
        (None, None) => bail!(
            "--prover: name a trusted beacon block root with --checkpoint ROOT (the prover's first proof then carries its bootstrap)"
        ),
    };
    let mut trust = TrustedState::new(spec);
    trust.checkpoint = Some(root);
    Ok(trust)
}

async fn serve_remote(
    args: &RpcArgs,
    prover: &str,
    beacon: Option<&str>,
    policy: ParticipationPolicy,
    state: PathBuf,
) -> Result<Server> {
    let api = match beacon {
        Some(url) => Some(HttpBeaconApi::new(url, args.upstream_timeout).context("--beacon")?),
        None => None,
    };
    let spec = chain_spec(args, api.as_ref()).await?;
    let config = settings(args, &spec)?;
    let mut trust = remote_trust(args, spec, api.as_ref(), &state)
        .await?
        .with_participation(policy);
    trust.freshness = freshness(args);
    trust.forks = config.blob_schedule.clone();
    trust.accept_incomplete_logs = args.accept_incomplete_logs;
    if args.accept_incomplete_logs {
        tracing::warn!(
            "--accept-incomplete-logs: eth_getLogs answers in colibri's proof form are taken; a prover can leave out whole blocks of a range, or answer [] with no block"
        );
    }
    let client = ProofClient::new(
        prover,
        args.upstream_timeout,
        trust,
        config.chain_id,
        Some(state),
    )
    .map_err(anyhow::Error::msg)
    .context("--prover")?;
    let server = sszgate_rpc::serve_with(config, client, Vec::new())
        .await
        .map_err(|e| anyhow::anyhow!("serving on {}: {e}", args.listen))?;
    tracing::info!(url = %server.url(), prover, "sszgate rpc serving eth_* JSON-RPC verified from the prover's proofs");
    Ok(server)
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
    fn min_participation_defaults_to_two_thirds_and_is_bounded() {
        let local = args(&[]);
        let policy = participation(&local).unwrap();
        assert_eq!(policy, ParticipationPolicy::SUPERMAJORITY);
        let lowered = args(&["--min-participation", "100"]);
        let policy = participation(&lowered).unwrap();
        assert_eq!(policy.min_participants(), 100);
        for out_of_range in ["0", "513"] {
            let argv = [
                "rpc",
                "--execution",
                "x",
                "--beacon",
                "y",
                "--min-participation",
                out_of_range,
            ];
            assert!(Cli::try_parse_from(argv).is_err(), "{out_of_range}");
        }
        // The proof verifier takes it too.
        let r = remote(&["--min-participation", "100"]);
        assert!(matches!(mode(&r).unwrap(), Mode::Remote { .. }));
        assert_eq!(participation(&r).unwrap().min_participants(), 100);
    }

    #[test]
    fn the_network_flag_names_a_built_in_chain_the_node_or_a_file() {
        assert_eq!(network(&args(&[])).unwrap(), Network::Default);
        assert_eq!(
            network(&args(&["--network", "hoodi"])).unwrap(),
            Network::Named(ChainSpec::hoodi())
        );
        assert_eq!(
            network(&args(&["--network", "custom"])).unwrap(),
            Network::Node
        );
        let missing = network(&args(&["--network", "/nonexistent/chain.json"])).unwrap_err();
        assert!(
            format!("{missing:#}").contains("not a readable file"),
            "{missing:#}"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("chain.json");
        let mut config = serde_json::json!({"SECONDS_PER_SLOT": "6", "SLOTS_PER_EPOCH": "32",
            "EPOCHS_PER_SYNC_COMMITTEE_PERIOD": "256", "GENESIS_FORK_VERSION": "0x10000038"});
        config["DENEB_FORK_EPOCH"] = "0".into();
        config["DENEB_FORK_VERSION"] = "0x40000038".into();
        let genesis = serde_json::json!({"genesis_time": "1700000000",
            "genesis_validators_root": format!("0x{}", "ab".repeat(32))});
        let doc = serde_json::json!({"config": config, "genesis": genesis});
        std::fs::write(&file, doc.to_string()).unwrap();
        let Network::Named(spec) = network(&args(&["--network", file.to_str().unwrap()])).unwrap()
        else {
            panic!("a file names its chain");
        };
        assert_eq!((spec.seconds_per_slot, spec.genesis_time), (6, 1700000000));
        std::fs::write(&file, "{}").unwrap();
        assert!(network(&args(&["--network", file.to_str().unwrap()])).is_err());
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
        let beacon = c.beacon.expect("the beacon source");
        assert_eq!(
            (beacon.url.as_str(), beacon.spec.name.as_str()),
            ("http://cl", "mainnet")
        );
        assert_eq!(c.execution, "http://el");
    }

    #[test]
    fn the_proof_verifiers_clock_and_head_age_come_from_the_flags() {
        let default = freshness(&remote(&[]));
        assert_eq!(default, Freshness::default());
        assert_eq!(default.max_head_age, 3);
        let set = freshness(&remote(&["--clock", "1746612311", "--max-head-age", "8"]));
        assert_eq!(set.clock, Clock::Fixed(1_746_612_311));
        assert_eq!(set.max_head_age, 8);
    }

    #[test]
    fn incomplete_logs_are_refused_unless_the_flag_opts_in() {
        assert!(!remote(&[]).accept_incomplete_logs);
        assert!(remote(&["--accept-incomplete-logs"]).accept_incomplete_logs);
    }

    #[test]
    fn the_fork_table_is_built_in_or_from_the_beacon_forks_and_blob_schedule() {
        let mainnet = ChainSpec::mainnet();
        let c = settings(&args(&[]), &mainnet).unwrap();
        assert_eq!(c.blob_schedule, ForkSchedule::mainnet());
        let known = settings(&args(&["--blob-schedule", "0:48:72:5007716"]), &mainnet);
        assert!(known.unwrap_err().to_string().contains("built-in"));
        let custom = ChainSpec {
            name: "custom".into(),
            ..ChainSpec::mainnet()
        };
        let flags = ["--chain-id", "1337", "--blob-schedule", "0:48:72:5007716"];
        let c = settings(&args(&flags), &custom).unwrap();
        let bpo = c.blob_schedule.at(u64::MAX).unwrap();
        assert_eq!((bpo.target_blob_count, bpo.max_blob_count), (48, 72));
        let bad = Cli::try_parse_from(["rpc", "--prover", "http://p", "--blob-schedule", "1:2"]);
        assert!(bad.is_err());
    }

    fn remote(extra: &[&str]) -> RpcArgs {
        let mut argv = vec!["rpc", "--prover", "http://prover/proof"];
        argv.extend_from_slice(extra);
        Cli::parse_from(argv).args
    }

    #[test]
    fn the_mode_follows_the_sources_named_and_says_what_is_missing() {
        let local = args(&["--serve-proofs"]);
        assert_eq!(
            mode(&local).unwrap(),
            Mode::Local {
                execution: "http://el".into(),
                beacon: "http://cl".into(),
                serve_proofs: true
            }
        );
        assert_eq!(
            state_path(&local, &mode(&local).unwrap()),
            PathBuf::from("sszgate-light-client.json")
        );
        let r = remote(&[]);
        assert_eq!(
            mode(&r).unwrap(),
            Mode::Remote {
                prover: "http://prover/proof".into(),
                beacon: None
            }
        );
        assert_eq!(
            state_path(&r, &mode(&r).unwrap()),
            PathBuf::from("sszgate-proof-keys.bin")
        );
        let passing = mode(&remote(&["--allow-unverified", "eth_gasPrice"])).unwrap_err();
        assert!(passing.to_string().contains("--execution"), "{passing}");
        let none = Cli::try_parse_from(["rpc", "--execution", "http://el"]).unwrap();
        let e = mode(&none.args).unwrap_err().to_string();
        assert!(e.contains("--beacon") && e.contains("--prover"), "{e}");
        assert!(Cli::try_parse_from(["rpc", "--prover", "http://p", "--serve-proofs"]).is_err());
        let c = settings(&r, &ChainSpec::mainnet()).unwrap();
        assert_eq!((c.execution.as_str(), c.chain_id), ("", 1));
    }
}
