//! A local devnet in one directory: a real execution client on a fresh post-merge chain, on
//! loopback with p2p off and a fresh JWT secret, and optionally `sszgate proxy` in front.
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
};

/// The geth release the devnet installs (newer ones need modules the proxy here lacks).
pub const GETH_VERSION: &str = "v1.17.8";
/// The ethereumjs client release the devnet installs.
pub const ETHEREUMJS_VERSION: &str = "0.10.5";

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
    /// A Lodestar build to run as the consensus client (through the proxy when there is
    /// one); none: the chain is driven by `sszgate drive`.
    pub lodestar: Option<PathBuf>,
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
    let default_max = if fork >= Fork::Prague { 9 } else { 6 };
    if max_blobs > default_max {
        if fork != Fork::Osaka {
            return Err(DriveError::Config(format!(
                "more than {default_max} blobs per block needs Osaka (a BPO fork), not {fork}"
            )));
        }
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

/// geth on the devnet's chain in `dir` (its `chain/` and `p2p-off.toml`), Engine API and
/// public RPC on the given loopback ports.
fn geth_command(geth: &Path, dir: &Path, auth_port: u16, http_port: u16, jwt: &Path) -> Command {
    let mut c = Command::new(geth);
    c.arg("--config")
        .arg(dir.join("p2p-off.toml"))
        .arg("--datadir")
        .arg(dir.join("chain"))
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

/// A devnet started by this process: stopped (by process id) when dropped.
pub struct Devnet {
    /// Where it lives.
    pub dir: PathBuf,
    /// What `devnet.json` says.
    pub state: DevnetState,
    children: Vec<Child>,
}

impl Devnet {
    /// Installs what is missing, writes the genesis, starts the EL (and the proxy) and waits
    /// until they answer. Refuses a directory where a devnet still runs.
    pub async fn up(config: &DevnetConfig) -> Result<Devnet, DriveError> {
        let dir = &config.dir;
        std::fs::create_dir_all(dir).map_err(io(dir.display()))?;
        let dir = dir.canonicalize().map_err(io(dir.display()))?;
        if let Ok(old) = DevnetState::read(&dir)
            && (alive(old.el_pid, &dir) || old.proxy_pid.is_some_and(|p| alive(p, &dir)))
        {
            return Err(DriveError::Devnet(format!(
                "a devnet already runs in {} (`sszgate devnet down --dir {}` first)",
                dir.display(),
                dir.display()
            )));
        }
        // geth writes the genesis for both ELs (its dev genesis holds the system contracts).
        let geth = match find_geth(&dir) {
            Some(path) => path,
            None => install_geth(&dir)?,
        };
        let genesis = genesis(&geth, config.fork, config.max_blobs)?;
        let chain = dir.join("chain");
        if chain.exists() {
            std::fs::remove_dir_all(&chain).map_err(io(chain.display()))?;
        }
        std::fs::create_dir_all(&chain).map_err(io(chain.display()))?;
        let genesis_path = dir.join("genesis.json");
        std::fs::write(&genesis_path, genesis.to_string()).map_err(io(genesis_path.display()))?;
        let jwt_secret = dir.join("jwt.hex");
        std::fs::write(&jwt_secret, fresh_secret()?).map_err(io(jwt_secret.display()))?;
        let (auth_port, http_port) = (free_port()?, free_port()?);
        let el_log = dir.join("el.log");
        let el_command = match config.el {
            ElKind::Geth => {
                let init = Command::new(&geth)
                    .arg("init")
                    .arg("--datadir")
                    .arg(&chain)
                    .arg(&genesis_path)
                    .output()
                    .map_err(io("geth init"))?;
                if !init.status.success() {
                    return Err(DriveError::Devnet(format!(
                        "geth init: {}",
                        String::from_utf8_lossy(&init.stderr)
                    )));
                }
                let p2p_off = dir.join("p2p-off.toml");
                std::fs::write(
                    &p2p_off,
                    "[Node.P2P]\nMaxPeers = 0\nNoDiscovery = true\nNoDial = true\nListenAddr = \"\"\nBootstrapNodes = []\nBootstrapNodesV5 = []\n",
                )
                .map_err(io(p2p_off.display()))?;
                geth_command(&geth, &dir, auth_port, http_port, &jwt_secret)
            }
            ElKind::Ethereumjs => {
                if config.fork > Fork::Prague {
                    return Err(DriveError::Config(
                        "the ethereumjs client runs up to Prague: use --fork prague".into(),
                    ));
                }
                let ethereumjs = match find_ethereumjs(&dir) {
                    Some(path) => path,
                    None => install_ethereumjs(&dir)?,
                };
                let mut c = Command::new(ethereumjs);
                c.arg("--gethGenesis")
                    .arg(&genesis_path)
                    .arg("--dataDir")
                    .arg(&chain)
                    .args(["--rpc", "--rpcAddr", "127.0.0.1"])
                    .args(["--rpcPort", &http_port.to_string()])
                    .args(["--rpcEngine", "--rpcEngineAddr", "127.0.0.1"])
                    .args(["--rpcEnginePort", &auth_port.to_string()])
                    .args(["--rpcEngineAuth", "true", "--jwtSecret"])
                    .arg(&jwt_secret)
                    .args(["--maxPeers", "0", "--discV4", "false", "--discDns", "false"])
                    .args(["--isSingleNode", "true"]);
                c
            }
        };
        let el = spawn(el_command, &el_log)?;
        let mut devnet = Devnet {
            dir: dir.clone(),
            state: DevnetState {
                el: config.el,
                fork: config.fork.to_string(),
                max_blobs: config.max_blobs,
                el_pid: el.id(),
                engine_url: format!("http://127.0.0.1:{auth_port}"),
                eth_url: format!("http://127.0.0.1:{http_port}"),
                jwt_secret: jwt_secret.clone(),
                proxy_pid: None,
                proxy_url: None,
                metrics_url: None,
                records: None,
                cl_pid: None,
                beacon_url: None,
            },
            children: vec![el],
        };
        devnet.write_state()?;
        wait_for_el(&devnet.state.eth_url, &mut devnet.children[0], &el_log).await?;

        if let Some(binary) = &config.proxy_binary {
            let (listen, metrics) = (free_port()?, free_port()?);
            let records = dir.join("records.db");
            let proxy_log = dir.join("proxy.log");
            let mut c = Command::new(binary);
            c.arg("proxy")
                .args(["--upstream", &devnet.state.engine_url])
                .args(["--listen", &format!("127.0.0.1:{listen}")])
                .args(["--metrics", &format!("127.0.0.1:{metrics}")])
                .arg("--jwt-secret")
                .arg(&jwt_secret)
                .arg("--store")
                .arg(format!("sqlite:{}", records.display()))
                .args(["--label", &format!("devnet={}", dir.display())])
                // A devnet exists to catch bugs: every call is verified, proofs included.
                .args(["--verify", "all"]);
            let proxy = spawn(c, &proxy_log)?;
            devnet.state.proxy_pid = Some(proxy.id());
            devnet.state.proxy_url = Some(format!("http://127.0.0.1:{listen}"));
            devnet.state.metrics_url = Some(format!("http://127.0.0.1:{metrics}"));
            devnet.state.records = Some(records);
            devnet.children.push(proxy);
            devnet.write_state()?;
            let deadline = Instant::now() + Duration::from_secs(20);
            while tokio::net::TcpStream::connect(("127.0.0.1", listen))
                .await
                .is_err()
            {
                if Instant::now() > deadline
                    || devnet.children[1].try_wait().ok().flatten().is_some()
                {
                    return Err(DriveError::Devnet(format!(
                        "the proxy did not come up; the end of {}:\n{}",
                        proxy_log.display(),
                        tail(&proxy_log)
                    )));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        if let Some(build) = &config.lodestar {
            devnet.start_lodestar(build, config.fork).await?;
        }
        Ok(devnet)
    }

    /// Starts Lodestar on the proxy (or the EL), its genesis a few seconds from now.
    async fn start_lodestar(&mut self, build: &Path, fork: Fork) -> Result<(), DriveError> {
        let genesis = EthRpc::new(&self.state.eth_url)
            .call("eth_getBlockByNumber", json!(["0x0", false]))
            .await?;
        let hash = genesis["hash"]
            .as_str()
            .ok_or_else(|| DriveError::Devnet(format!("the EL's genesis has no hash: {genesis}")))?
            .to_string();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let (rest_port, p2p_port) = (free_port()?, free_port()?);
        let engine_url = self
            .state
            .proxy_url
            .clone()
            .unwrap_or(self.state.engine_url.clone());
        let command = crate::lodestar::command(&crate::lodestar::LodestarPlan {
            build,
            dir: &self.dir,
            engine_url: &engine_url,
            jwt: &self.state.jwt_secret,
            el_genesis_hash: &hash,
            genesis_time: now + crate::lodestar::GENESIS_DELAY,
            fork,
            rest_port,
            p2p_port,
        })?;
        let log = self.dir.join("cl.log");
        let cl = spawn(command, &log)?;
        self.state.cl_pid = Some(cl.id());
        self.state.beacon_url = Some(format!("http://127.0.0.1:{rest_port}"));
        self.children.push(cl);
        self.write_state()
    }

    fn write_state(&self) -> Result<(), DriveError> {
        let path = DevnetState::path(&self.dir);
        let text = serde_json::to_string_pretty(&self.state).expect("state serializes");
        std::fs::write(&path, text).map_err(io(path.display()))
    }

    /// Leaves the processes running (for `sszgate devnet up`, which exits after starting them).
    pub fn detach(mut self) -> DevnetState {
        self.children.clear();
        self.state.clone()
    }

    /// Stops the EL (SIGTERM, then SIGKILL after 20 s) and waits for it, leaving the proxy
    /// up; [`Devnet::restart_el`] starts it again on the same chain and ports.
    pub fn stop_el(&mut self) -> Result<(), DriveError> {
        stop(self.state.el_pid, &self.dir)?;
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
            &self.dir,
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
            let _ = stop(child.id(), &self.dir);
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

/// Stops `pid` if it is a live process of the devnet in `dir`: SIGTERM, then SIGKILL after
/// 20 s.
fn stop(pid: u32, dir: &Path) -> Result<(), DriveError> {
    if !alive(pid, dir) {
        return Ok(());
    }
    let pid_t = pid as libc::pid_t;
    // SAFETY: kill(2) with a pid checked above to be this devnet's process; no memory involved.
    unsafe { libc::kill(pid_t, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(20);
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

/// Stops the devnet in `dir` (the CL first, then the proxy, then the EL) and removes
/// `devnet.json`.
pub fn down(dir: &Path) -> Result<DevnetState, DriveError> {
    let dir = dir.canonicalize().map_err(io(dir.display()))?;
    let state = DevnetState::read(&dir)?;
    if let Some(pid) = state.cl_pid {
        stop(pid, &dir)?;
    }
    if let Some(pid) = state.proxy_pid {
        stop(pid, &dir)?;
    }
    stop(state.el_pid, &dir)?;
    let path = DevnetState::path(&dir);
    std::fs::remove_file(&path).map_err(io(path.display()))?;
    Ok(state)
}
