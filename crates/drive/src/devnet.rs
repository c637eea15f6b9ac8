//! A local devnet in one directory: a real execution client on a fresh post-merge chain, on
//! loopback with a fresh JWT secret, and optionally `sszgate proxy` in front. With a consensus
//! client, Lodestar ([`crate::lodestar`]) proposes on it, follower pairs (a geth peered with
//! the first over devp2p, a Lodestar peered over libp2p, each with its own proxy) follow it,
//! and a blob feed ([`crate::blob_feed`], run as `sszgate devnet feed`) keeps real blobs in
//! the pools.
//!
//! `up` writes the genesis (every fork up to the chosen one at time 0, funded dev accounts, the
//! blob schedule), starts the processes in their own process groups with logs in the
//! directory, waits until they answer and writes `devnet.json`; `down` stops exactly the
//! processes that file names (by process id, after checking each still is the process started
//! for this directory). Installing the EL (geth through `go install`, the ethereumjs client
//! through npm) happens here when it is missing. Driving the chain is [`crate::driver`]'s job.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sszgate_engine::Fork;

use crate::{
    DriveError,
    load::{DEV_KEYS, EthRpc},
    lodestar::{self, Preset},
};

/// The geth release the devnet installs (newer ones need modules the proxy here lacks).
pub const GETH_VERSION: &str = "v1.17.8";
/// The ethereumjs client release the devnet installs.
pub const ETHEREUMJS_VERSION: &str = "0.10.5";
/// How long past genesis a follower Lodestar is asked to connect to the proposer's before the
/// devnet gives up on it (each Lodestar starting takes a core for several seconds on a 2-core
/// machine).
pub const PEERING_WITHIN: Duration = Duration::from_secs(90);

/// The execution client of a devnet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElKind {
    /// go-ethereum.
    Geth,
    /// The ethereumjs client (up to Prague).
    Ethereumjs,
}

impl std::str::FromStr for ElKind {
    type Err = String;
    fn from_str(s: &str) -> Result<ElKind, String> {
        match s {
            "geth" => Ok(ElKind::Geth),
            "ethereumjs" => Ok(ElKind::Ethereumjs),
            other => Err(format!("unknown EL {other:?} (geth or ethereumjs)")),
        }
    }
}

/// What `up` starts.
#[derive(Clone, Debug)]
pub struct DevnetConfig {
    /// The directory holding everything (created if missing).
    pub dir: PathBuf,
    /// The execution client.
    pub el: ElKind,
    /// The newest fork, active from genesis.
    pub fork: Fork,
    /// The most blobs per block (above Prague's 9, a BPO1 fork at genesis raises it; Osaka).
    pub max_blobs: u32,
    /// The `sszgate` binary to start as the proxy in front of the EL; none: no proxy.
    pub proxy_binary: Option<PathBuf>,
    /// Lodestar as the consensus client (through the proxy when there is one); none: the
    /// chain is driven by `sszgate drive`.
    pub lodestar: Option<ClConfig>,
}

/// The consensus side of a devnet: Lodestar v1.38 proposing, and its followers.
#[derive(Clone, Debug)]
pub struct ClConfig {
    /// The Lodestar v1.38 build directory.
    pub build: PathBuf,
    /// The consensus preset.
    pub preset: Preset,
    /// Seconds per slot.
    pub seconds_per_slot: u32,
    /// Follower pairs (geth + a Lodestar without validators, each link proxied like the
    /// proposer's), at most [`lodestar::MAX_FOLLOWERS`].
    pub followers: u32,
    /// The blob load run beside the chain; none: no load.
    pub blob_feed: Option<BlobFeedPlan>,
}

/// How the devnet's blob feed runs: `BINARY devnet feed --dir DIR --blobs-per-block N`.
#[derive(Clone, Debug)]
pub struct BlobFeedPlan {
    /// The `sszgate` binary.
    pub binary: PathBuf,
    /// Blobs kept waiting in the proposer's pool for each block.
    pub blobs_per_block: u32,
    /// The data set whose blobs it sends (`--data`); none: the binary's default.
    pub data: Option<PathBuf>,
}

/// A follower pair of a devnet, as `devnet.json` describes it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct FollowerState {
    /// Its EL's process id.
    pub el_pid: u32,
    /// Its EL's Engine API (JWT-authenticated).
    pub engine_url: String,
    /// Its EL's public JSON-RPC.
    pub eth_url: String,
    /// The proxy on its Engine link, when one runs.
    pub proxy: Option<ProxyState>,
    /// Its Lodestar's process id.
    pub cl_pid: u32,
    /// Its Lodestar's Beacon API.
    pub beacon_url: String,
}

/// A proxy on one Engine link.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ProxyState {
    /// Its process id.
    pub pid: u32,
    /// Its Engine API address (JSON-RPC relayed, REST-SSZ bridged).
    pub url: String,
    /// Its metrics and status address.
    pub metrics_url: String,
    /// Its records.
    pub records: PathBuf,
}

/// A running devnet, as `devnet.json` describes it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct DevnetState {
    /// The execution client.
    pub el: ElKind,
    /// The fork.
    pub fork: String,
    /// The most blobs per block.
    pub max_blobs: u32,
    /// The EL's process id.
    pub el_pid: u32,
    /// The EL's Engine API (JWT-authenticated).
    pub engine_url: String,
    /// The EL's public JSON-RPC.
    pub eth_url: String,
    /// The JWT secret file (hex).
    pub jwt_secret: PathBuf,
    /// The proxy's process id, when one runs.
    pub proxy_pid: Option<u32>,
    /// The proxy's Engine API address (JSON-RPC relayed, REST-SSZ bridged).
    pub proxy_url: Option<String>,
    /// The proxy's metrics and status address.
    pub metrics_url: Option<String>,
    /// The proxy's records.
    pub records: Option<PathBuf>,
    /// The consensus client's process id, when Lodestar runs.
    #[serde(default)]
    pub cl_pid: Option<u32>,
    /// Its Beacon API (light-client server on).
    #[serde(default)]
    pub beacon_url: Option<String>,
    /// The consensus preset, when Lodestar runs.
    #[serde(default)]
    pub preset: Option<Preset>,
    /// Seconds per slot, when Lodestar runs.
    #[serde(default)]
    pub seconds_per_slot: Option<u32>,
    /// The follower pairs.
    #[serde(default)]
    pub followers: Vec<FollowerState>,
    /// The blob feed's process id, when one runs.
    #[serde(default)]
    pub feed_pid: Option<u32>,
}

impl DevnetState {
    /// The state file of a devnet directory.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join("devnet.json")
    }

    /// Reads `dir/devnet.json`.
    pub fn read(dir: &Path) -> Result<DevnetState, DriveError> {
        let path = DevnetState::path(dir);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            DriveError::Devnet(format!(
                "{}: {e} (no devnet here? `sszgate devnet up --dir {}`)",
                path.display(),
                dir.display()
            ))
        })?;
        serde_json::from_str(&text)
            .map_err(|e| DriveError::Devnet(format!("{}: {e}", path.display())))
    }

    /// Every process id, in the order they are stopped: the feed, the CLs (followers first),
    /// the proxies, the ELs.
    pub fn pids(&self) -> Vec<u32> {
        let followers = &self.followers;
        let mut pids: Vec<u32> = self.feed_pid.into_iter().collect();
        pids.extend(followers.iter().map(|f| f.cl_pid));
        pids.extend(self.cl_pid);
        pids.extend(
            followers
                .iter()
                .filter_map(|f| f.proxy.as_ref().map(|p| p.pid)),
        );
        pids.extend(self.proxy_pid);
        pids.extend(followers.iter().map(|f| f.el_pid));
        pids.push(self.el_pid);
        pids
    }

    /// How long `pid` gets between SIGTERM and SIGKILL: a proxy drains and verifies what it
    /// has queued before it exits (its records would be lost to a kill), the others 20 s.
    pub fn stop_grace(&self, pid: u32) -> Duration {
        let proxy = self.proxy_pid == Some(pid)
            || self
                .followers
                .iter()
                .any(|f| f.proxy.as_ref().is_some_and(|p| p.pid == pid));
        if proxy { PROXY_STOP_GRACE } else { STOP_GRACE }
    }

    /// The public JSON-RPC of every EL: the proposer's, then the followers'.
    pub fn eth_urls(&self) -> Vec<String> {
        std::iter::once(self.eth_url.clone())
            .chain(self.followers.iter().map(|f| f.eth_url.clone()))
            .collect()
    }

    /// The JWT secret, as hex.
    pub fn secret_hex(&self) -> Result<String, DriveError> {
        std::fs::read_to_string(&self.jwt_secret)
            .map(|s| s.trim().to_string())
            .map_err(|e| DriveError::Devnet(format!("{}: {e}", self.jwt_secret.display())))
    }
}

fn io(what: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> DriveError {
    move |e| DriveError::Devnet(format!("{what}: {e}"))
}

/// Finds geth: `SSZGATE_GETH`, then `bin/geth` under `dir`, then the repository's `.tools`,
/// then `PATH`.
pub fn find_geth(dir: &Path) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("SSZGATE_GETH") {
        return Some(PathBuf::from(path));
    }
    let candidates = [
        dir.join("bin/geth"),
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin/geth"),
    ];
    candidates
        .into_iter()
        .find(|p| p.exists())
        .or_else(|| find_on_path("geth"))
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    })
}

/// Installs geth into `dir/bin` with `go install` (about 3 minutes on 2 cores).
pub fn install_geth(dir: &Path) -> Result<PathBuf, DriveError> {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).map_err(io(bin.display()))?;
    eprintln!(
        "installing geth {GETH_VERSION} into {} (go install; a few minutes)…",
        bin.display()
    );
    let status = Command::new("go")
        .args([
            "install",
            &format!("github.com/ethereum/go-ethereum/cmd/geth@{GETH_VERSION}"),
        ])
        .env("GOBIN", &bin)
        .env("GOFLAGS", "-mod=mod")
        .status()
        .map_err(io("running `go install` (is Go installed?)"))?;
    if !status.success() {
        return Err(DriveError::Devnet(format!(
            "go install geth {GETH_VERSION} failed ({status})"
        )));
    }
    Ok(bin.join("geth"))
}

/// Finds the ethereumjs client (`SSZGATE_ETHEREUMJS`, `dir/ethereumjs`, the repository's
/// `.tools`, `PATH`).
pub fn find_ethereumjs(dir: &Path) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("SSZGATE_ETHEREUMJS") {
        return Some(PathBuf::from(path));
    }
    let candidates = [
        dir.join("ethereumjs/node_modules/.bin/ethereumjs"),
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../.tools/ethereumjs/node_modules/.bin/ethereumjs"),
    ];
    candidates
        .into_iter()
        .find(|p| p.exists())
        .or_else(|| find_on_path("ethereumjs"))
}

/// Installs the ethereumjs client into `dir/ethereumjs` with npm.
pub fn install_ethereumjs(dir: &Path) -> Result<PathBuf, DriveError> {
    let prefix = dir.join("ethereumjs");
    std::fs::create_dir_all(&prefix).map_err(io(prefix.display()))?;
    eprintln!(
        "installing @ethereumjs/client {ETHEREUMJS_VERSION} into {} (npm)…",
        prefix.display()
    );
    let status = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&prefix)
        .arg(format!("@ethereumjs/client@{ETHEREUMJS_VERSION}"))
        .status()
        .map_err(io("running npm (is Node.js installed?)"))?;
    if !status.success() {
        return Err(DriveError::Devnet(format!(
            "npm install @ethereumjs/client failed ({status})"
        )));
    }
    Ok(prefix.join("node_modules/.bin/ethereumjs"))
}

/// The blob maximum of a BPO1 fork at genesis when `max_blobs` is above the fork's own (6
/// before Prague, 9 from it); `None` when the fork's own suffices. Above it before Osaka is an
/// error. The EL's genesis and the CL's blob schedule both follow this one decision.
pub fn bpo1_max(fork: Fork, max_blobs: u32) -> Result<Option<u32>, DriveError> {
    let default_max = if fork >= Fork::Prague { 9 } else { 6 };
    if max_blobs <= default_max {
        return Ok(None);
    }
    if fork != Fork::Osaka {
        return Err(DriveError::Config(format!(
            "more than {default_max} blobs per block needs Osaka (a BPO fork), not {fork}"
        )));
    }
    Ok(Some(max_blobs))
}

/// The genesis: geth's own dev genesis (every fork at time 0, the system contracts) cut back
/// to `fork`, the dev accounts funded, and for more than 9 blobs a BPO1 fork at genesis.
pub fn genesis(geth: &Path, fork: Fork, max_blobs: u32) -> Result<Value, DriveError> {
    let out = Command::new(geth)
        .args(["--dev", "dumpgenesis"])
        .output()
        .map_err(io(format!("{} --dev dumpgenesis", geth.display())))?;
    if !out.status.success() {
        return Err(DriveError::Devnet(format!(
            "geth dumpgenesis: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let mut genesis: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| DriveError::Devnet(format!("geth dumpgenesis printed no JSON: {e}")))?;
    let config = genesis["config"]
        .as_object_mut()
        .ok_or_else(|| DriveError::Devnet("geth's genesis has no config".into()))?;
    let later: &[&str] = match fork {
        Fork::Cancun => &["pragueTime", "osakaTime"],
        Fork::Prague => &["osakaTime"],
        Fork::Osaka => &[],
        Fork::Amsterdam => {
            return Err(DriveError::Config(
                "geth v1.17.8 cannot run Amsterdam: use osaka".into(),
            ));
        }
        other => return Err(DriveError::Config(format!("no devnet for {other}"))),
    };
    let dropped: Vec<String> = config
        .keys()
        .filter(|k| {
            later.contains(&k.as_str())
                || k.starts_with("bpo")
                || ["bogotaTime", "amsterdamTime", "verkleTime"].contains(&k.as_str())
        })
        .cloned()
        .collect();
    for key in dropped {
        config.remove(&key);
    }
    if bpo1_max(fork, max_blobs)?.is_some() {
        config.insert("bpo1Time".into(), json!(0));
        config["blobSchedule"]["bpo1"] = json!({
            "target": max_blobs * 2 / 3,
            "max": max_blobs,
            "baseFeeUpdateFraction": 5_007_716,
        });
    }
    let alloc = genesis["alloc"]
        .as_object_mut()
        .ok_or_else(|| DriveError::Devnet("geth's genesis has no alloc".into()))?;
    for key in DEV_KEYS {
        let signer: alloy_signer_local::PrivateKeySigner = key.parse().expect("valid dev keys");
        alloc.insert(
            format!("{:x}", signer.address()),
            json!({"balance": "0xc097ce7bc90715b34b9f1000000000"}),
        );
    }
    Ok(genesis)
}

fn free_port() -> Result<u16, DriveError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(io("picking a free loopback port"))
}

fn fresh_secret() -> Result<String, DriveError> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret)
        .map_err(|e| DriveError::Devnet(format!("no randomness for the JWT secret: {e}")))?;
    Ok(const_hex::encode(secret))
}

/// Starts `command` in its own process group (a terminal's Ctrl-C does not reach it), with its
/// output in `log`.
fn spawn(mut command: Command, log: &Path) -> Result<Child, DriveError> {
    use std::os::unix::process::CommandExt;
    let out = std::fs::File::create(log).map_err(io(log.display()))?;
    let err = out.try_clone().map_err(io(log.display()))?;
    command
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(io(format!("starting {:?}", command.get_program())))
}

fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

/// The files of the devnet's `index`-th geth (0: the proposer's): its data directory and its
/// config file.
fn geth_files(dir: &Path, index: usize) -> (PathBuf, PathBuf) {
    match index {
        0 => (dir.join("chain"), dir.join("geth.toml")),
        n => (
            dir.join(format!("chain{}", n + 1)),
            dir.join(format!("geth{}.toml", n + 1)),
        ),
    }
}

/// Where a geth's devp2p listens (loopback, discovery off) and whom it dials.
#[derive(Clone, Debug)]
struct GethP2p {
    port: u16,
    /// Its node key, hex (fixed before the start, so its enode is known in advance).
    key: String,
    static_nodes: Vec<String>,
}

impl GethP2p {
    /// A fresh port and node key, dialing `static_nodes`.
    fn new(static_nodes: Vec<String>) -> Result<GethP2p, DriveError> {
        Ok(GethP2p {
            port: free_port()?,
            key: fresh_secret()?,
            static_nodes,
        })
    }

    /// Its enode URL.
    fn enode(&self) -> String {
        let signer: alloy_signer_local::PrivateKeySigner =
            self.key.parse().expect("a fresh 32-byte key");
        format!("enode://{:x}@127.0.0.1:{}", signer.public_key(), self.port)
    }
}

/// The p2p section of a geth config: off, or on loopback dialing its static nodes.
fn p2p_config(p2p: Option<&GethP2p>) -> String {
    match p2p {
        None => "[Node.P2P]\nMaxPeers = 0\nNoDiscovery = true\nNoDial = true\nListenAddr = \"\"\nBootstrapNodes = []\nBootstrapNodesV5 = []\n".into(),
        Some(p2p) => format!(
            "[Node.P2P]\nMaxPeers = 8\nNoDiscovery = true\nListenAddr = \"127.0.0.1:{}\"\nBootstrapNodes = []\nBootstrapNodesV5 = []\nStaticNodes = {}\n",
            p2p.port,
            serde_json::to_string(&p2p.static_nodes).expect("strings serialize")
        ),
    }
}

/// geth on its data directory and config file, Engine API and public RPC on the given
/// loopback ports.
fn geth_command(
    geth: &Path,
    (datadir, config): &(PathBuf, PathBuf),
    auth_port: u16,
    http_port: u16,
    jwt: &Path,
) -> Command {
    let mut c = Command::new(geth);
    c.arg("--config")
        .arg(config)
        .arg("--datadir")
        .arg(datadir)
        .args(["--networkid", "1337", "--authrpc.addr", "127.0.0.1"])
        .args(["--authrpc.port", &auth_port.to_string()])
        .arg("--authrpc.jwtsecret")
        .arg(jwt)
        .args(["--http", "--http.addr", "127.0.0.1"])
        .args(["--http.port", &http_port.to_string()])
        .args(["--http.api", "eth,net,web3,txpool"])
        .args(["--nat", "none", "--ipcdisable", "--syncmode", "full"]);
    c
}

/// Writes a fresh geth's genesis, config and node key for the devnet's `index`-th geth.
fn init_geth(
    geth: &Path,
    dir: &Path,
    index: usize,
    p2p: Option<&GethP2p>,
) -> Result<(PathBuf, PathBuf), DriveError> {
    let (datadir, config) = geth_files(dir, index);
    if datadir.exists() {
        std::fs::remove_dir_all(&datadir).map_err(io(datadir.display()))?;
    }
    let init = Command::new(geth)
        .arg("init")
        .arg("--datadir")
        .arg(&datadir)
        .arg(dir.join("genesis.json"))
        .output()
        .map_err(io("geth init"))?;
    if !init.status.success() {
        return Err(DriveError::Devnet(format!(
            "geth init: {}",
            String::from_utf8_lossy(&init.stderr)
        )));
    }
    std::fs::write(&config, p2p_config(p2p)).map_err(io(config.display()))?;
    if let Some(p2p) = p2p {
        // geth takes `DATADIR/geth/nodekey` as its identity when the file is there.
        let key = datadir.join("geth/nodekey");
        std::fs::write(&key, &p2p.key).map_err(io(key.display()))?;
    }
    Ok((datadir, config))
}

/// The ethereumjs client on the devnet's chain, Engine API and public RPC on the given ports.
fn ethereumjs_command(
    dir: &Path,
    auth_port: u16,
    http_port: u16,
    jwt: &Path,
) -> Result<Command, DriveError> {
    let ethereumjs = match find_ethereumjs(dir) {
        Some(path) => path,
        None => install_ethereumjs(dir)?,
    };
    let chain = dir.join("chain");
    if chain.exists() {
        std::fs::remove_dir_all(&chain).map_err(io(chain.display()))?;
    }
    std::fs::create_dir_all(&chain).map_err(io(chain.display()))?;
    let mut c = Command::new(ethereumjs);
    c.arg("--gethGenesis")
        .arg(dir.join("genesis.json"))
        .arg("--dataDir")
        .arg(&chain)
        .args(["--rpc", "--rpcAddr", "127.0.0.1"])
        .args(["--rpcPort", &http_port.to_string()])
        .args(["--rpcEngine", "--rpcEngineAddr", "127.0.0.1"])
        .args(["--rpcEnginePort", &auth_port.to_string()])
        .args(["--rpcEngineAuth", "true", "--jwtSecret"])
        .arg(jwt)
        .args(["--maxPeers", "0", "--discV4", "false", "--discDns", "false"])
        .args(["--isSingleNode", "true"]);
    Ok(c)
}

/// Waits (at most 90 s) until the EL at `eth_url` serves its genesis block; fails early, with
/// the end of its log, when `el` exits.
async fn wait_for_el(eth_url: &str, el: &mut Child, log: &Path) -> Result<(), DriveError> {
    let eth = EthRpc::new(eth_url);
    let deadline = Instant::now() + Duration::from_secs(90);
    while eth
        .call("eth_getBlockByNumber", json!(["0x0", false]))
        .await
        .ok()
        .filter(|b| b.is_object())
        .is_none()
    {
        if Instant::now() > deadline || el.try_wait().ok().flatten().is_some() {
            return Err(DriveError::Devnet(format!(
                "the EL did not come up; the end of {}:\n{}",
                log.display(),
                tail(log)
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

/// A `GET` of a Beacon API: its JSON answer (1 MiB at most), or what went wrong.
pub async fn beacon_get(url: &str) -> Result<Value, String> {
    http_json(http::Method::GET, url, None).await
}

/// The head slot a Beacon API at `beacon` reports, or what went wrong.
pub async fn head_slot(beacon: &str) -> Result<u64, String> {
    let head = beacon_get(&format!("{beacon}/eth/v1/beacon/headers/head")).await?;
    let slot = &head["data"]["header"]["message"]["slot"];
    slot.as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no head slot in {head}"))
}

/// How long a follower must hold its peer, past genesis, before it counts as peered: a
/// connection Lodestar drops does so at its first status exchange or heartbeat, within a few
/// seconds.
const PEER_HELD: Duration = Duration::from_secs(10);

/// Connects the Lodestar at `follower` to another (libp2p address `address`, peer id `peer`)
/// and waits until the follower has held a connected peer for [`PEER_HELD`], past genesis,
/// asking again every 2 s whenever it has none. Why: Lodestar dials a `connect_peer` once and,
/// with discovery off, never again; a dial that fails, or a connection dropped soon after
/// (seen on loaded machines, around genesis), left a follower alone at slot 0 for good. Fails
/// `within` after genesis (or after the call, if later), saying what the follower last reported.
pub async fn connect_follower(
    follower: &str,
    (peer, address): (&str, &str),
    within: Duration,
) -> Result<(), String> {
    let genesis = genesis_time(follower).await?;
    let until_genesis = Duration::from_secs(genesis.saturating_sub(unix_now()));
    let deadline = Instant::now() + until_genesis + within;
    let connect =
        format!("{follower}/eth/v1/lodestar/connect_peer?peerId={peer}&multiaddr={address}");
    let (mut held_since, mut dialled) = (None, String::from("not asked"));
    loop {
        let count = beacon_get(&format!("{follower}/eth/v1/node/peer_count")).await;
        let connected = count
            .as_ref()
            .ok()
            .and_then(|c| c["data"]["connected"].as_str()?.parse::<u64>().ok());
        if connected.is_some_and(|n| n > 0) {
            let since = *held_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= PEER_HELD && unix_now() > genesis {
                return Ok(());
            }
        } else {
            held_since = None;
            dialled = match http_json(http::Method::POST, &connect, None).await {
                Ok(_) => "accepted".to_string(),
                Err(e) => e,
            };
        }
        if Instant::now() > deadline {
            let count = count.map_or_else(|e| e, |c| c.to_string());
            return Err(format!(
                "the Lodestar at {follower} held no peer for {PEER_HELD:?} past genesis within \
                 {within:?} of asking it to connect to {address} (peer count: {count}; last \
                 connect_peer: {dialled})"
            ));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

/// [`connect_follower`] for a follower pair whose proposer's Beacon API is at `proposer`: its
/// libp2p identity read there, [`PEERING_WITHIN`] to hold it.
pub async fn connect_follower_to(follower: &str, proposer: &str) -> Result<(), String> {
    let (peer, address) = p2p_identity(proposer).await?;
    connect_follower(follower, (&peer, &address), PEERING_WITHIN).await
}

/// The genesis time (Unix seconds) the Beacon API at `beacon` reports.
async fn genesis_time(beacon: &str) -> Result<u64, String> {
    let genesis = beacon_get(&format!("{beacon}/eth/v1/beacon/genesis")).await?;
    genesis["data"]["genesis_time"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| format!("no genesis time in {beacon}'s answer: {genesis}"))
}

/// The libp2p peer id and first TCP address (without its `/p2p/` part) of the Lodestar whose
/// Beacon API is at `beacon`.
async fn p2p_identity(beacon: &str) -> Result<(String, String), String> {
    let identity = beacon_get(&format!("{beacon}/eth/v1/node/identity")).await?;
    let data = &identity["data"];
    let peer = data["peer_id"].as_str();
    let address = data["p2p_addresses"].as_array().and_then(|all| {
        all.iter()
            .filter_map(|a| a.as_str())
            .find(|a| a.contains("/tcp/"))
            .and_then(|a| a.split("/p2p/").next())
    });
    match (peer, address) {
        (Some(peer), Some(address)) => Ok((peer.to_string(), address.to_string())),
        _ => Err(format!(
            "no peer id and TCP address in {beacon}'s identity: {identity}"
        )),
    }
}

/// One HTTP call to a loopback API (a Beacon API, a proxy's control API) with an optional JSON
/// body: its JSON answer (`null` when empty; 1 MiB at most), or what went wrong.
pub(crate) async fn http_json(
    method: http::Method,
    url: &str,
    body: Option<&Value>,
) -> Result<Value, String> {
    use http_body_util::{BodyExt, Full, Limited};
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<bytes::Bytes>>();
    let mut request = http::Request::builder().method(method).uri(url);
    if body.is_some() {
        // Lodestar refuses a JSON content type on an empty body.
        request = request.header(http::header::CONTENT_TYPE, "application/json");
    }
    let bytes = body.map_or_else(bytes::Bytes::new, |b| b.to_string().into());
    let request = request.body(Full::new(bytes)).map_err(|e| e.to_string())?;
    let call = async {
        let response = client.request(request).await.map_err(|e| e.to_string())?;
        let status = response.status();
        // An answer used here is a few kilobytes; a peer gets 1 MiB at most.
        let body = Limited::new(response.into_body(), 1 << 20)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if !status.is_success() {
            return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body)));
        }
        if body.is_empty() {
            // Lodestar's `connect_peer` answers 200 with no body.
            return Ok(Value::Null);
        }
        serde_json::from_slice::<Value>(&body).map_err(|e| e.to_string())
    };
    match tokio::time::timeout(Duration::from_secs(5), call).await {
        Ok(answer) => answer,
        Err(_) => Err("no answer within 5 s".to_string()),
    }
}

/// Waits (at most 180 s) until the Lodestar at `beacon` serves its Beacon API; its libp2p
/// peer id. Fails early, with the end of its log, when `cl` exits.
async fn wait_for_cl(beacon: &str, cl: &mut Child, log: &Path) -> Result<String, DriveError> {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let identity = beacon_get(&format!("{beacon}/eth/v1/node/identity")).await;
        if let Some(peer) = identity
            .ok()
            .and_then(|i| i["data"]["peer_id"].as_str().map(String::from))
        {
            return Ok(peer);
        }
        if Instant::now() > deadline || cl.try_wait().ok().flatten().is_some() {
            return Err(DriveError::Devnet(format!(
                "Lodestar did not come up; the end of {}:\n{}",
                log.display(),
                tail(log)
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Seconds since the Unix epoch.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Checks the consensus side of `config` before anything starts: the Lodestar build (`None`
/// without a CL), the followers' number and EL, the fork.
fn check_consensus(config: &DevnetConfig) -> Result<Option<lodestar::Build>, DriveError> {
    let Some(cl) = &config.lodestar else {
        return Ok(None);
    };
    if cl.followers > lodestar::MAX_FOLLOWERS {
        return Err(DriveError::Config(format!(
            "{} follower pairs asked for: a devnet runs at most {} (each Lodestar takes about 550 MiB and a core)",
            cl.followers,
            lodestar::MAX_FOLLOWERS
        )));
    }
    if cl.followers > 0 && config.el != ElKind::Geth {
        return Err(DriveError::Config(
            "follower pairs need --el geth (their ELs peer over devp2p)".into(),
        ));
    }
    lodestar::forks(config.fork)?;
    if cl.blob_feed.is_some() && config.fork != Fork::Osaka {
        return Err(DriveError::Config(format!(
            "the blob feed sends Osaka blob transactions (cell proofs): use --fork osaka, not {}",
            config.fork
        )));
    }
    lodestar::Build::open(&cl.build).map(Some)
}

/// A devnet started by this process: stopped (by process id) when dropped.
pub struct Devnet {
    /// Where it lives.
    pub dir: PathBuf,
    /// What `devnet.json` says.
    pub state: DevnetState,
    children: Vec<Child>,
}

/// What every follower pair of a devnet is started with.
struct FollowerSetup<'a> {
    build: &'a lodestar::Build,
    chain: &'a lodestar::ChainParams,
    els: &'a ElSetup<'a>,
    proxy_binary: Option<&'a Path>,
    /// The proposer's geth, which each follower's geth dials.
    enode: Option<String>,
    /// The proposer's Lodestar: its p2p port and libp2p peer id.
    p2p_port: u16,
    peer: String,
}

/// What the ELs of one devnet share.
struct ElSetup<'a> {
    kind: ElKind,
    geth: &'a Path,
    jwt: &'a Path,
}

impl ElSetup<'_> {
    /// Starts the devnet's `index`-th EL on fresh loopback ports and waits until it answers:
    /// the process and its Engine and public URLs.
    async fn start(
        &self,
        dir: &Path,
        index: usize,
        p2p: Option<&GethP2p>,
    ) -> Result<(Child, String, String), DriveError> {
        let (auth_port, http_port) = (free_port()?, free_port()?);
        let command = match self.kind {
            ElKind::Geth => {
                let files = init_geth(self.geth, dir, index, p2p)?;
                geth_command(self.geth, &files, auth_port, http_port, self.jwt)
            }
            ElKind::Ethereumjs => ethereumjs_command(dir, auth_port, http_port, self.jwt)?,
        };
        let log = match index {
            0 => dir.join("el.log"),
            n => dir.join(format!("el{}.log", n + 1)),
        };
        let mut el = spawn(command, &log)?;
        let eth_url = format!("http://127.0.0.1:{http_port}");
        if let Err(e) = wait_for_el(&eth_url, &mut el, &log).await {
            let _ = stop(el.id(), dir, STOP_GRACE);
            let _ = el.wait();
            return Err(e);
        }
        Ok((el, format!("http://127.0.0.1:{auth_port}"), eth_url))
    }
}

impl Devnet {
    /// Installs what is missing, writes the genesis, starts the EL (and the proxy, and the
    /// consensus side) and waits until they answer. Refuses a directory where a devnet still
    /// runs, and a setting that cannot work before starting anything.
    pub async fn up(config: &DevnetConfig) -> Result<Devnet, DriveError> {
        let dir = &config.dir;
        std::fs::create_dir_all(dir).map_err(io(dir.display()))?;
        let dir = dir.canonicalize().map_err(io(dir.display()))?;
        if let Ok(old) = DevnetState::read(&dir)
            && old.pids().into_iter().any(|p| alive(p, &dir))
        {
            return Err(DriveError::Devnet(format!(
                "a devnet already runs in {} (`sszgate devnet down --dir {}` first)",
                dir.display(),
                dir.display()
            )));
        }
        let build = check_consensus(config)?;
        if config.el == ElKind::Ethereumjs && config.fork > Fork::Prague {
            return Err(DriveError::Config(
                "the ethereumjs client runs up to Prague: use --fork prague".into(),
            ));
        }
        // geth writes the genesis for both ELs (its dev genesis holds the system contracts).
        let geth = match find_geth(&dir) {
            Some(path) => path,
            None => install_geth(&dir)?,
        };
        let genesis = genesis(&geth, config.fork, config.max_blobs)?;
        let genesis_path = dir.join("genesis.json");
        std::fs::write(&genesis_path, genesis.to_string()).map_err(io(genesis_path.display()))?;
        let jwt_secret = dir.join("jwt.hex");
        std::fs::write(&jwt_secret, fresh_secret()?).map_err(io(jwt_secret.display()))?;
        let followers = config.lodestar.as_ref().map_or(0, |cl| cl.followers);
        let p2p = (followers > 0)
            .then(|| GethP2p::new(Vec::new()))
            .transpose()?;
        let els = ElSetup {
            kind: config.el,
            geth: &geth,
            jwt: &jwt_secret,
        };
        let (el, engine_url, eth_url) = els.start(&dir, 0, p2p.as_ref()).await?;
        eprintln!(
            "devnet: {:?} on {} (at most {} blobs a block) up at {eth_url}",
            config.el, config.fork, config.max_blobs
        );
        let mut devnet = Devnet {
            dir: dir.clone(),
            state: DevnetState {
                el: config.el,
                fork: config.fork.to_string(),
                max_blobs: config.max_blobs,
                el_pid: el.id(),
                engine_url,
                eth_url,
                jwt_secret: jwt_secret.clone(),
                proxy_pid: None,
                proxy_url: None,
                metrics_url: None,
                records: None,
                cl_pid: None,
                beacon_url: None,
                preset: None,
                seconds_per_slot: None,
                followers: Vec::new(),
                feed_pid: None,
            },
            children: vec![el],
        };
        devnet.write_state()?;
        if let Some(binary) = &config.proxy_binary {
            let upstream = devnet.state.engine_url.clone();
            let proxy = devnet.start_proxy(binary, &upstream, 0).await?;
            devnet.state.proxy_pid = Some(proxy.pid);
            devnet.state.proxy_url = Some(proxy.url);
            devnet.state.metrics_url = Some(proxy.metrics_url);
            devnet.state.records = Some(proxy.records);
            devnet.write_state()?;
        }
        if let (Some(cl), Some(build)) = (&config.lodestar, build) {
            let enode = p2p.map(|p| p.enode());
            devnet
                .start_consensus(config, cl, &build, &els, enode)
                .await?;
        }
        Ok(devnet)
    }

    /// Starts `sszgate proxy` (`binary`) in front of the Engine API at `upstream`, verifying
    /// every call, and waits until it listens. Its files carry the link's number (none for
    /// the proposer's link, 2, 3, … for the followers').
    async fn start_proxy(
        &mut self,
        binary: &Path,
        upstream: &str,
        index: usize,
    ) -> Result<ProxyState, DriveError> {
        let suffix = if index == 0 {
            String::new()
        } else {
            (index + 1).to_string()
        };
        let (listen, metrics) = (free_port()?, free_port()?);
        let records = self.dir.join(format!("records{suffix}.db"));
        let log = self.dir.join(format!("proxy{suffix}.log"));
        let mut c = Command::new(binary);
        c.arg("proxy")
            .args(["--upstream", upstream])
            .args(["--listen", &format!("127.0.0.1:{listen}")])
            .args(["--metrics", &format!("127.0.0.1:{metrics}")])
            .arg("--jwt-secret")
            .arg(&self.state.jwt_secret)
            .arg("--store")
            .arg(format!("sqlite:{}", records.display()))
            .args(["--label", &format!("devnet={}", self.dir.display())])
            // A devnet exists to catch bugs: every call is verified, proofs included.
            .args(["--verify", "all"]);
        if index > 0 {
            c.args(["--label", &format!("link=follower{index}")]);
        }
        let mut proxy = spawn(c, &log)?;
        let pid = proxy.id();
        let deadline = Instant::now() + Duration::from_secs(20);
        while tokio::net::TcpStream::connect(("127.0.0.1", listen))
            .await
            .is_err()
        {
            if Instant::now() > deadline || proxy.try_wait().ok().flatten().is_some() {
                let _ = stop(pid, &self.dir, STOP_GRACE);
                let _ = proxy.wait();
                return Err(DriveError::Devnet(format!(
                    "the proxy did not come up; the end of {}:\n{}",
                    log.display(),
                    tail(&log)
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.children.push(proxy);
        eprintln!(
            "devnet: sszgate proxy on Engine link {} at 127.0.0.1:{listen} (records {})",
            index + 1,
            records.display()
        );
        Ok(ProxyState {
            pid,
            url: format!("http://127.0.0.1:{listen}"),
            metrics_url: format!("http://127.0.0.1:{metrics}"),
            records,
        })
    }

    /// Starts the proposing Lodestar on the proxy (or the EL), its genesis
    /// [`lodestar::GENESIS_DELAY`] from now; then each follower pair, peered with the
    /// proposer's on both layers; then the blob feed.
    async fn start_consensus(
        &mut self,
        config: &DevnetConfig,
        cl: &ClConfig,
        build: &lodestar::Build,
        els: &ElSetup<'_>,
        enode: Option<String>,
    ) -> Result<(), DriveError> {
        let params_file = match bpo1_max(config.fork, config.max_blobs)? {
            Some(max) => {
                let path = self.dir.join("cl-params.json");
                let text = lodestar::blob_schedule(max).to_string();
                std::fs::write(&path, text).map_err(io(path.display()))?;
                Some(path)
            }
            None => None,
        };
        let chain = lodestar::ChainParams {
            preset: cl.preset,
            fork: config.fork,
            seconds_per_slot: cl.seconds_per_slot,
            jwt: self.state.jwt_secret.clone(),
            params_file,
        };
        let genesis = EthRpc::new(&self.state.eth_url)
            .call("eth_getBlockByNumber", json!(["0x0", false]))
            .await?;
        let hash = genesis["hash"]
            .as_str()
            .ok_or_else(|| DriveError::Devnet(format!("the EL's genesis has no hash: {genesis}")))?
            .to_string();
        let genesis_time = unix_now() + lodestar::GENESIS_DELAY;
        let role = lodestar::Role::Proposer {
            el_genesis_hash: hash,
            genesis_time,
        };
        let engine_url = self
            .state
            .proxy_url
            .clone()
            .unwrap_or(self.state.engine_url.clone());
        let (pid, beacon_url, p2p_port, peer) = self
            .start_lodestar(build, &chain, role, &engine_url, 0)
            .await?;
        self.state.cl_pid = Some(pid);
        self.state.beacon_url = Some(beacon_url);
        self.state.preset = Some(cl.preset);
        self.state.seconds_per_slot = Some(cl.seconds_per_slot);
        self.write_state()?;
        eprintln!(
            "devnet: Lodestar v1.38 proposing ({} preset, {} s slots), genesis in about {} s",
            cl.preset.name(),
            cl.seconds_per_slot,
            genesis_time.saturating_sub(unix_now())
        );
        let setup = FollowerSetup {
            build,
            chain: &chain,
            els,
            proxy_binary: config.proxy_binary.as_deref(),
            enode,
            p2p_port,
            peer,
        };
        for index in 1..=cl.followers as usize {
            let follower = self.start_follower(&setup, index).await?;
            self.state.followers.push(follower);
            self.write_state()?;
        }
        if let Some(feed) = &cl.blob_feed {
            self.start_feed(feed)?;
        }
        Ok(())
    }

    /// Starts one Lodestar node (`index` 0: the proposer) and waits for its Beacon API: its
    /// process id, Beacon API URL, p2p port and libp2p peer id.
    async fn start_lodestar(
        &mut self,
        build: &lodestar::Build,
        chain: &lodestar::ChainParams,
        role: lodestar::Role,
        engine_url: &str,
        index: usize,
    ) -> Result<(u32, String, u16, String), DriveError> {
        let suffix = if index == 0 {
            String::new()
        } else {
            (index + 1).to_string()
        };
        let node_dir = self.dir.join(format!("cl{suffix}"));
        if node_dir.exists() {
            std::fs::remove_dir_all(&node_dir).map_err(io(node_dir.display()))?;
        }
        std::fs::create_dir_all(&node_dir).map_err(io(node_dir.display()))?;
        let (rest_port, p2p_port) = (free_port()?, free_port()?);
        let command = lodestar::command(&lodestar::NodePlan {
            build,
            chain,
            role,
            dir: &node_dir,
            engine_url,
            rest_port,
            p2p_port,
        })?;
        let log = self.dir.join(format!("cl{suffix}.log"));
        let mut node = spawn(command, &log)?;
        let pid = node.id();
        let beacon = format!("http://127.0.0.1:{rest_port}");
        match wait_for_cl(&beacon, &mut node, &log).await {
            Ok(peer) => {
                self.children.push(node);
                Ok((pid, beacon, p2p_port, peer))
            }
            Err(e) => {
                let _ = stop(pid, &self.dir, STOP_GRACE);
                let _ = node.wait();
                Err(e)
            }
        }
    }

    /// Starts the `index`-th follower pair: a geth dialing the proposer's, a proxy on its
    /// Engine link when the devnet has proxies, and a Lodestar without validators connected
    /// to the proposer's.
    async fn start_follower(
        &mut self,
        setup: &FollowerSetup<'_>,
        index: usize,
    ) -> Result<FollowerState, DriveError> {
        let p2p = GethP2p::new(setup.enode.iter().cloned().collect())?;
        let (el, engine_url, eth_url) = setup.els.start(&self.dir, index, Some(&p2p)).await?;
        let el_pid = el.id();
        self.children.push(el);
        let proxy = match setup.proxy_binary {
            Some(binary) => Some(self.start_proxy(binary, &engine_url, index).await?),
            None => None,
        };
        let role = lodestar::Role::Follower {
            genesis_state: self.dir.join("cl/genesis.ssz"),
        };
        let cl_engine = proxy.as_ref().map_or(engine_url.clone(), |p| p.url.clone());
        let (cl_pid, beacon_url, _, _) = self
            .start_lodestar(setup.build, setup.chain, role, &cl_engine, index)
            .await?;
        let address = format!("/ip4/127.0.0.1/tcp/{}", setup.p2p_port);
        eprintln!(
            "devnet: follower {index}: Lodestar at {beacon_url} started; waiting until it has held the proposer as a peer for {PEER_HELD:?}, past genesis"
        );
        connect_follower(&beacon_url, (&setup.peer, &address), PEERING_WITHIN)
            .await
            .map_err(|e| {
                DriveError::Devnet(format!(
                    "follower {index}: connecting to the proposer's Lodestar: {e}"
                ))
            })?;
        eprintln!(
            "devnet: follower {index} up (geth at {eth_url}, Lodestar at {beacon_url}), peered with the proposer"
        );
        Ok(FollowerState {
            el_pid,
            engine_url,
            eth_url,
            proxy,
            cl_pid,
            beacon_url,
        })
    }

    /// Starts the blob feed (`sszgate devnet feed`) on this devnet.
    fn start_feed(&mut self, plan: &BlobFeedPlan) -> Result<(), DriveError> {
        let mut c = Command::new(&plan.binary);
        c.args(["devnet", "feed", "--dir"])
            .arg(&self.dir)
            .args(["--blobs-per-block", &plan.blobs_per_block.to_string()]);
        if let Some(data) = &plan.data {
            c.arg("--data").arg(data);
        }
        let feed = spawn(c, &self.dir.join("feed.log"))?;
        self.state.feed_pid = Some(feed.id());
        self.children.push(feed);
        self.write_state()?;
        eprintln!(
            "devnet: blob feed keeping {} real mainnet blobs in the pool for every block (log {})",
            plan.blobs_per_block,
            self.dir.join("feed.log").display()
        );
        Ok(())
    }

    /// Writes `devnet.json` whole or not at all: a new file renamed over the old, so that a
    /// process reading it meanwhile (the blob feed, started just before its pid is written)
    /// sees the old state or the new, never an empty or half-written file.
    fn write_state(&self) -> Result<(), DriveError> {
        let path = DevnetState::path(&self.dir);
        let fresh = self.dir.join("devnet.json.new");
        let text = serde_json::to_string_pretty(&self.state).expect("state serializes");
        std::fs::write(&fresh, text).map_err(io(fresh.display()))?;
        std::fs::rename(&fresh, &path).map_err(io(path.display()))
    }

    /// Leaves the processes running (for `sszgate devnet up`, which exits after starting them).
    pub fn detach(mut self) -> DevnetState {
        self.children.clear();
        self.state.clone()
    }

    /// Stops the EL (SIGTERM, then SIGKILL after 20 s) and waits for it, leaving the proxy
    /// up; [`Devnet::restart_el`] starts it again on the same chain and ports.
    pub fn stop_el(&mut self) -> Result<(), DriveError> {
        stop(self.state.el_pid, &self.dir, STOP_GRACE)?;
        let _ = self.children[0].wait();
        Ok(())
    }

    /// Starts the EL again (geth only) on the same data directory and ports.
    pub async fn restart_el(&mut self) -> Result<(), DriveError> {
        if self.state.el != ElKind::Geth {
            return Err(DriveError::Config("restart is for geth devnets".into()));
        }
        let geth = find_geth(&self.dir).ok_or_else(|| DriveError::Devnet("no geth".into()))?;
        let port = |url: &str| {
            url.rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .unwrap_or(0)
        };
        let command = geth_command(
            &geth,
            &geth_files(&self.dir, 0),
            port(&self.state.engine_url),
            port(&self.state.eth_url),
            &self.state.jwt_secret,
        );
        let log = self.dir.join("el-restarted.log");
        let el = spawn(command, &log)?;
        self.state.el_pid = el.id();
        self.children[0] = el;
        self.write_state()?;
        wait_for_el(&self.state.eth_url, &mut self.children[0], &log).await
    }
}

impl Drop for Devnet {
    fn drop(&mut self) {
        // The CL first, then the proxy, so it drains its records while the EL is still there.
        for child in self.children.iter_mut().rev() {
            let _ = stop(child.id(), &self.dir, self.state.stop_grace(child.id()));
            let _ = child.wait();
        }
    }
}

/// Whether `pid` runs and is a process of the devnet in `dir` (its command line names the
/// directory): a recycled pid is never taken for ours.
pub fn alive(pid: u32, dir: &Path) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // A zombie (state Z) has exited; it only waits to be reaped.
    let state = stat.rsplit(") ").next().and_then(|s| s.chars().next());
    if state == Some('Z') {
        return false;
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let needle = dir.to_string_lossy();
    String::from_utf8_lossy(&cmdline).contains(needle.as_ref())
}

/// How long a process of the devnet gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(20);

/// How long a proxy gets: it verifies (KZG) and writes what it still holds before it exits,
/// minutes behind the relay on a loaded machine.
const PROXY_STOP_GRACE: Duration = Duration::from_secs(300);

/// Stops `pid` if it is a live process of the devnet in `dir`: SIGTERM, then SIGKILL after
/// `grace`.
fn stop(pid: u32, dir: &Path, grace: Duration) -> Result<(), DriveError> {
    if !alive(pid, dir) {
        return Ok(());
    }
    let pid_t = pid as libc::pid_t;
    // SAFETY: kill(2) with a pid checked above to be this devnet's process; no memory involved.
    unsafe { libc::kill(pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + grace;
    while alive(pid, dir) {
        if Instant::now() > deadline {
            // SAFETY: as above.
            unsafe { libc::kill(pid_t, libc::SIGKILL) };
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// Stops the devnet in `dir` (the feed, the CLs, the proxies, then the ELs) and removes
/// `devnet.json`.
pub fn down(dir: &Path) -> Result<DevnetState, DriveError> {
    let dir = dir.canonicalize().map_err(io(dir.display()))?;
    let state = DevnetState::read(&dir)?;
    for pid in state.pids() {
        stop(pid, &dir, state.stop_grace(pid))?;
    }
    let path = DevnetState::path(&dir);
    std::fs::remove_file(&path).map_err(io(path.display()))?;
    Ok(state)
}

#[cfg(test)]
mod connect_follower_tests {
    //! `connect_follower` against a scripted Beacon API on loopback: a peer dropped soon
    //! after it was counted is dialled again, and a follower that never holds one fails with
    //! what it reported.

    use std::sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    };

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// How the scripted follower answers `peer_count`, given how many times it was asked and
    /// how many dials it has had.
    type Script = fn(u64, u64) -> u64;

    /// A Beacon API answering the genesis (`genesis_in` seconds from now), `peer_count` by
    /// `script`, and `connect_peer` (counted); its URL and the dial count.
    async fn follower(genesis_in: i64, script: Script) -> (String, Arc<AtomicU64>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (asked, dials) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let counted = dials.clone();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let line = String::from_utf8_lossy(&read_head(&mut conn).await).to_string();
                let body = if line.starts_with("GET /eth/v1/beacon/genesis") {
                    let at = unix_now() as i64 + genesis_in;
                    json!({"data": {"genesis_time": at.to_string()}}).to_string()
                } else if line.starts_with("GET /eth/v1/node/peer_count") {
                    let n = asked.fetch_add(1, Ordering::SeqCst);
                    let connected = script(n, dials.load(Ordering::SeqCst));
                    json!({"data": {"connected": connected.to_string()}}).to_string()
                } else if line.starts_with("POST /eth/v1/lodestar/connect_peer?peerId=P&") {
                    dials.fetch_add(1, Ordering::SeqCst);
                    String::new()
                } else {
                    "unexpected".to_string()
                };
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(answer.as_bytes()).await;
            }
        });
        (url, counted)
    }

    /// A request's head (through its blank line; bodies here are empty), however the reads
    /// split it.
    async fn read_head(conn: &mut tokio::net::TcpStream) -> Vec<u8> {
        let mut head = Vec::new();
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 << 10 {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        head
    }

    #[tokio::test]
    async fn a_peer_dropped_after_it_was_counted_is_dialled_again_and_held() {
        // Counted at the first look (up.sh's dial), gone at the next two, back only once
        // dialled again.
        let (url, dials) = follower(-100, |asked, dials| match asked {
            0 => 1,
            1 | 2 => 0,
            _ => u64::from(dials > 0),
        })
        .await;
        let started = Instant::now();
        let peered = connect_follower(&url, ("P", "/ip4/127.0.0.1/tcp/1"), Duration::from_secs(60));
        assert_eq!(peered.await, Ok(()));
        // Dialled at each of the two looks without a peer, never while it had one.
        assert_eq!(dials.load(Ordering::SeqCst), 2);
        // Held for PEER_HELD from the look after the drop (two 2 s steps in).
        assert!(
            started.elapsed() >= PEER_HELD + Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_follower_that_never_holds_a_peer_fails_saying_what_it_reported() {
        let (url, dials) = follower(-100, |_, _| 0).await;
        let peered = connect_follower(&url, ("P", "/ip4/127.0.0.1/tcp/1"), Duration::from_secs(3));
        let error = peered.await.unwrap_err();
        assert!(error.contains(r#""connected":"0""#), "{error}");
        assert!(error.contains("last connect_peer: accepted"), "{error}");
        assert!(dials.load(Ordering::SeqCst) >= 2, "{error}");
    }

    #[tokio::test]
    async fn the_time_to_hold_a_peer_counts_from_genesis() {
        // Genesis 4 s away and 1 s allowed: not given up on before genesis.
        let (url, _) = follower(4, |_, _| 0).await;
        let started = Instant::now();
        let peered = connect_follower(&url, ("P", "/ip4/127.0.0.1/tcp/1"), Duration::from_secs(1));
        let error = peered.await.unwrap_err();
        assert!(
            error.contains("held no peer for 10s past genesis"),
            "{error}"
        );
        assert!(
            started.elapsed() >= Duration::from_secs(4),
            "{:?}",
            started.elapsed()
        );
    }
}
