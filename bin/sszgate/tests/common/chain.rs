//! A real consensus client for the binary's tests, with geth, started by its kit's `up.sh` and
//! stopped by process id (`down.sh`): Lodestar v1.38 (Fulu/PeerDAS with geth on Osaka,
//! `../shared/tools/lodestar-fulu/`), built from source by its kit's `build.sh`; and a plain
//! eth_* JSON-RPC call.
//!
//! Not here: what the tests check.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use serde_json::Value;

/// One chain at a time in a test binary (a Lodestar takes ~300 MiB and a core).
pub(crate) static ONE_CHAIN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The Lodestar kit under `../shared/tools/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kit {
    /// `lodestar-fulu/`: Lodestar v1.38, Fulu/PeerDAS, geth on Osaka (BPO forks possible).
    Fulu,
}

impl Kit {
    /// The kit's directory under `../shared/tools/`.
    fn dir(self) -> &'static str {
        match self {
            Kit::Fulu => "lodestar-fulu",
        }
    }

    /// The variable naming the kit's build, and the build's default under `$HOME`.
    fn build_location(self) -> (&'static str, &'static str) {
        match self {
            Kit::Fulu => ("SSZGATE_LODESTAR_FULU", ".cache/lodestar-v1.38"),
        }
    }

    /// A script of the kit (`up.sh`, `down.sh`, `lib/…`).
    pub(crate) fn script(self, name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/tools")
            .join(self.dir())
            .join(name)
    }
}

/// geth and a Lodestar v1.38 build (`$SSZGATE_LODESTAR_FULU`), or `None` (skip locally; a
/// failure under CI).
pub(crate) fn fulu_tools() -> Option<(PathBuf, PathBuf)> {
    kit_tools(Kit::Fulu)
}

fn kit_tools(kit: Kit) -> Option<(PathBuf, PathBuf)> {
    let geth = std::env::var_os("SSZGATE_GETH")
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin/geth")))
        .filter(|p| p.exists());
    let (variable, default) = kit.build_location();
    let lodestar = std::env::var_os(variable)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(default)))
        .filter(|p| p.join("packages/cli/bin/lodestar.js").exists());
    match (geth, lodestar) {
        (Some(geth), Some(lodestar)) => Some((geth, lodestar)),
        (geth, lodestar) => {
            let why = format!("geth: {geth:?}, Lodestar build (${variable}): {lodestar:?}");
            let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            let build = kit.script("build.sh");
            assert!(
                !in_ci,
                "a real-CL test needs geth and Lodestar under CI ({why}): scripts/install-geth.sh, {}",
                build.display()
            );
            eprintln!("\n!!!!!!!! SKIPPED: Lodestar test: {why} !!!!!!!!\n");
            None
        }
    }
}

/// The Engine links of a Fulu pair: each geth's Engine port and the URL its Lodestar is
/// given (what listens there is the caller's).
pub(crate) struct FuluLinks {
    /// The proposer's geth Engine port.
    pub(crate) geth_auth: u16,
    /// The proposing Lodestar's Engine URL.
    pub(crate) cl_engine: String,
    /// The follower's geth Engine port.
    pub(crate) geth2_auth: u16,
    /// The following Lodestar's Engine URL.
    pub(crate) cl2_engine: String,
}

impl FuluLinks {
    /// Links on which the proposing Lodestar is told `cl_port` (where the caller listens), the
    /// follower `cl2_port`, or its geth directly when `None`; both geth Engine ports fresh.
    pub(crate) fn to(cl_port: u16, cl2_port: Option<u16>) -> FuluLinks {
        let geth2_auth = super::free_port();
        FuluLinks {
            geth_auth: super::free_port(),
            cl_engine: format!("http://127.0.0.1:{cl_port}"),
            geth2_auth,
            cl2_engine: format!("http://127.0.0.1:{}", cl2_port.unwrap_or(geth2_auth)),
        }
    }
}

/// geth and Lodestar, up (`up.sh`), stopped by process id (`down.sh`) when dropped.
pub(crate) struct Chain {
    /// What `up.sh` printed (URLs, pids, the run directory).
    pub(crate) up: Value,
    kit: Kit,
    _run: tempfile::TempDir,
}

/// The slot time of [`Chain::up_fulu_pair`]'s chain, in seconds.
pub(crate) const FULU_PAIR_SLOT_SECONDS: u64 = sszgate_drive::lodestar::SECONDS_PER_SLOT as u64;

impl Chain {
    /// A Fulu/Osaka chain of the v1.38 kit as the verified-RPC tests need it: the mainnet
    /// preset (512-member sync committees, as a light client expects) and a BPO1 fork at
    /// genesis (48 target, 72 most blobs a block, update fraction 5007716). Genesis is 30 s
    /// after Lodestar starts: a node that is still starting at genesis on a loaded machine
    /// misses its first slots, counts itself as syncing and, with no peer, never proposes.
    pub(crate) fn up_fulu(tools: &(PathBuf, PathBuf), geth_auth: u16, cl_engine: &str) -> Chain {
        let knobs = [
            ("PRESET", "mainnet"),
            ("FORK", "fulu"),
            ("BPO1", "1"),
            ("GENESIS_DELAY", "30"),
        ];
        Chain::start(Kit::Fulu, tools, geth_auth, cl_engine, &knobs)
    }

    /// The Fulu kit's proposer and a follower pair (geth2 + a Lodestar without validators,
    /// which fetches every block's blobs from its EL with `engine_getBlobsV2`), on the
    /// minimal preset with 6 s slots and a BPO1 fork at genesis (48 target, 72 most blobs a
    /// block). The
    /// Engine links are the caller's ([`FuluLinks`]); the JWT is `jwt_file`'s, so what
    /// listens on the links can start before the chain.
    pub(crate) fn up_fulu_pair(
        tools: &(PathBuf, PathBuf),
        links: &FuluLinks,
        jwt_file: &Path,
    ) -> Chain {
        let geth2_auth = links.geth2_auth.to_string();
        let slot = FULU_PAIR_SLOT_SECONDS.to_string();
        let jwt = jwt_file.display().to_string();
        let knobs = [
            ("PRESET", "minimal"),
            ("FORK", "fulu"),
            ("BPO1", "1"),
            ("FOLLOWER", "1"),
            ("GETH2_AUTH_PORT", geth2_auth.as_str()),
            ("CL2_ENGINE_URL", links.cl2_engine.as_str()),
            ("JWT", jwt.as_str()),
            ("GENESIS_DELAY", "30"),
            // The devnet's slot time (sszgate_drive::lodestar::SECONDS_PER_SLOT says why).
            ("SLOT", slot.as_str()),
        ];
        let chain = Chain::start(Kit::Fulu, tools, links.geth_auth, &links.cl_engine, &knobs);
        chain.connect_follower();
        chain
    }

    /// Makes sure the follower holds the proposer as a peer
    /// (`sszgate_drive::devnet::connect_follower` says why up.sh's one request is not enough).
    fn connect_follower(&self) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let peered = runtime.block_on(sszgate_drive::devnet::connect_follower_to(
            self.up["beacon_rest2"].as_str().unwrap(),
            self.up["beacon_rest"].as_str().unwrap(),
        ));
        if let Err(e) = peered {
            panic!("{e}: {}", self.log("lodestar2.log"));
        }
    }

    /// `kit`'s `up.sh` with `knobs` (its environment), in a fresh run directory.
    fn start(
        kit: Kit,
        tools: &(PathBuf, PathBuf),
        geth_auth: u16,
        cl_engine: &str,
        knobs: &[(&str, &str)],
    ) -> Chain {
        let run = tempfile::tempdir().unwrap();
        let out = Command::new("bash")
            .arg(kit.script("up.sh"))
            .env("GETH", &tools.0)
            .env("LS_BUILD", &tools.1)
            .env("RUN", run.path())
            .env("GETH_AUTH_PORT", geth_auth.to_string())
            .env("CL_ENGINE_URL", cl_engine)
            .envs(knobs.iter().copied())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            kit.script("up.sh").display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let up = serde_json::from_slice(&out.stdout).unwrap();
        Chain { up, kit, _run: run }
    }

    pub(crate) fn beacon(&self, path: &str) -> Option<Value> {
        let url = format!("{}{path}", self.up["beacon_rest"].as_str().unwrap());
        let out = Command::new("curl")
            .args(["-s", "-m", "5", &url])
            .output()
            .ok()?;
        serde_json::from_slice(&out.stdout).ok()
    }

    /// The head slot now. A busy beacon node may miss a read: it is asked again for 30 s
    /// (a slot read as 0 would let the caller's waits end at once).
    pub(crate) fn head(&self) -> u64 {
        let beacon = self.up["beacon_rest"].as_str().unwrap();
        let started = Instant::now();
        loop {
            if let Some(slot) = read_head_slot(beacon) {
                return slot;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{beacon} gave no head for 30 s: {}",
                self.log("lodestar.log")
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// The head slot, once it reaches `slot` (at most `within`).
    pub(crate) fn wait_for_slot(&self, slot: u64, within: Duration) -> u64 {
        self.wait_for_head(("beacon_rest", "lodestar.log"), slot, within)
    }

    /// The follower's head slot, once it reaches `slot` (at most `within`): every block up
    /// to it was imported by the follower, through its Engine link.
    pub(crate) fn wait_for_follower(&self, slot: u64, within: Duration) -> u64 {
        self.wait_for_head(("beacon_rest2", "lodestar2.log"), slot, within)
    }

    /// The head slot of the beacon node under `up[url]`, once it reaches `slot`; its log
    /// `log` in the failure when it does not within `within`.
    fn wait_for_head(&self, (url, log): (&str, &str), slot: u64, within: Duration) -> u64 {
        let beacon = self.up[url].as_str().unwrap_or_else(|| panic!("no {url}"));
        let started = Instant::now();
        loop {
            let head = head_slot(beacon);
            if head >= slot {
                return head;
            }
            assert!(
                started.elapsed() < within,
                "{url} is at slot {head}, not {slot}, after {within:?}: {}",
                self.log(log)
            );
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// The execution block hashes of the beacon blocks of slots 1..=head, in order.
    pub(crate) fn execution_hashes(&self, head: u64) -> Vec<String> {
        self.execution_blocks(head)
            .into_iter()
            .map(|(_, hash)| hash)
            .collect()
    }

    /// The execution (number, hash) of the beacon blocks of slots 1..=head, in order.
    pub(crate) fn execution_blocks(&self, head: u64) -> Vec<(u64, String)> {
        (1..=head)
            .filter_map(|slot| {
                let block = self.beacon(&format!("/eth/v2/beacon/blocks/{slot}"))?;
                let payload = &block["data"]["message"]["body"]["execution_payload"];
                let number = payload["block_number"].as_str()?.parse().ok()?;
                Some((number, payload["block_hash"].as_str()?.to_string()))
            })
            .collect()
    }

    pub(crate) fn log(&self, name: &str) -> String {
        let path = Path::new(self.up["run"].as_str().unwrap()).join(name);
        super::log_tail(&path, 64 << 10)
    }

    pub(crate) fn jwt(&self) -> String {
        self.up["jwt"].as_str().unwrap().to_string()
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(self.kit.script("down.sh"))
            .arg(self.up["run"].as_str().unwrap_or_default())
            .status();
    }
}

/// The head slot of the Beacon API at `beacon` (0 before the first block, or when it does
/// not answer).
pub(crate) fn head_slot(beacon: &str) -> u64 {
    read_head_slot(beacon).unwrap_or(0)
}

/// The head slot of the Beacon API at `beacon`, or `None` when it does not answer with one.
fn read_head_slot(beacon: &str) -> Option<u64> {
    let out = Command::new("curl")
        .args([
            "-s",
            "-m",
            "5",
            &format!("{beacon}/eth/v1/beacon/headers/head"),
        ])
        .output()
        .ok()?;
    let header = serde_json::from_slice::<Value>(&out.stdout).ok()?;
    header["data"]["header"]["message"]["slot"]
        .as_str()?
        .parse::<u64>()
        .ok()
}

/// An eth_* JSON-RPC call; its `result`, or the whole answer when it has none.
pub(crate) fn eth(url: &str, method: &str, params: Value) -> Value {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        .to_string();
    let out = Command::new("curl")
        .args([
            "-s",
            "-m",
            "30",
            "-H",
            "content-type: application/json",
            "-d",
            &body,
            url,
        ])
        .output()
        .unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    match answer.get("result") {
        Some(result) => result.clone(),
        None => answer,
    }
}
