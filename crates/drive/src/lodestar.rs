//! A real consensus client for the devnet: Lodestar (v1.22, built from source, e.g. by
//! `../shared/tools/lodestar/build.sh`) in `dev` mode with interop validators, proposing a
//! block every slot over the Engine API of the devnet's proxy (or its EL), with its Beacon API
//! (light-client server on) on loopback.
//!
//! Only the command is built here; `devnet` starts, records and stops the process like the
//! others.

use std::{path::Path, process::Command};

use sszgate_engine::Fork;

use crate::DriveError;

/// Validators in the one Lodestar process.
pub const VALIDATORS: u32 = 8;
/// Seconds per slot.
pub const SECONDS_PER_SLOT: u32 = 2;
/// Seconds from `up` to the beacon chain's genesis: time for Lodestar to start.
pub const GENESIS_DELAY: u64 = 12;

/// Where Lodestar runs and what it drives.
pub struct LodestarPlan<'a> {
    /// The build directory (holding `packages/cli/bin/lodestar.js`).
    pub build: &'a Path,
    /// The devnet directory (Lodestar's data goes to `lodestar/` in it).
    pub dir: &'a Path,
    /// The Engine API URL it is given.
    pub engine_url: &'a str,
    /// The JWT secret file.
    pub jwt: &'a Path,
    /// The EL's genesis block hash.
    pub el_genesis_hash: &'a str,
    /// The beacon chain's genesis time, seconds since the Unix epoch.
    pub genesis_time: u64,
    /// The EL's fork (Cancun → Deneb, Prague → Electra).
    pub fork: Fork,
    /// Its Beacon API port and its p2p port (loopback).
    pub rest_port: u16,
    /// Its p2p port (discovery off).
    pub p2p_port: u16,
}

/// The `lodestar dev` command of `plan`; an error when Lodestar cannot run it.
pub fn command(plan: &LodestarPlan<'_>) -> Result<Command, DriveError> {
    let cli = plan.build.join("packages/cli/bin/lodestar.js");
    if !cli.exists() {
        return Err(DriveError::Config(format!(
            "no Lodestar build in {} (no packages/cli/bin/lodestar.js): build one with ../shared/tools/lodestar/build.sh DIR",
            plan.build.display()
        )));
    }
    let electra = match plan.fork {
        Fork::Cancun => false,
        Fork::Prague => true,
        other => {
            return Err(DriveError::Config(format!(
                "Lodestar v1.22 runs Deneb or Electra: use --fork cancun or prague, not {other}"
            )));
        }
    };
    let mut c = Command::new("node");
    // Lodestar reads every LODESTAR_* variable as a flag: pass none but the preset.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("LODESTAR") {
            c.env_remove(key);
        }
    }
    c.env("LODESTAR_PRESET", "minimal")
        .current_dir(plan.dir)
        .arg("--max-old-space-size=4096")
        .arg(cli)
        .arg("dev")
        .arg("--dataDir")
        .arg(plan.dir.join("lodestar"))
        .args(["--genesisValidators", &VALIDATORS.to_string()])
        .args(["--startValidators", &format!("0..{}", VALIDATORS - 1)])
        .args(["--genesisTime", &plan.genesis_time.to_string()])
        .args(["--genesisEth1Hash", plan.el_genesis_hash])
        .args(["--params.SECONDS_PER_SLOT", &SECONDS_PER_SLOT.to_string()])
        .args(["--params.TERMINAL_TOTAL_DIFFICULTY", "0"]);
    for fork in ["ALTAIR", "BELLATRIX", "CAPELLA", "DENEB"]
        .into_iter()
        .chain(electra.then_some("ELECTRA"))
    {
        c.args([format!("--params.{fork}_FORK_EPOCH"), "0".to_string()]);
    }
    let rest = plan.rest_port.to_string();
    c.args(["--execution.urls", plan.engine_url])
        .arg("--jwtSecret")
        .arg(plan.jwt)
        .args([
            "--suggestedFeeRecipient",
            "0x00000000000000000000000000000000000fee01",
        ])
        .args(["--rest.address", "127.0.0.1", "--rest.port", &rest])
        .args(["--rest.namespace", "*", "--rest.swaggerUI", "false"])
        .args(["--server", &format!("http://127.0.0.1:{rest}")])
        .args([
            "--listenAddress",
            "127.0.0.1",
            "--port",
            &plan.p2p_port.to_string(),
        ])
        .args(["--discv5", "false", "--logLevel", "info"]);
    Ok(c)
}
