//! The chain-timing rows: a Beacon API (a replay of one recorded mainnet case) that reports
//! another `SECONDS_PER_SLOT`, `EPOCHS_PER_SYNC_COMMITTEE_PERIOD` or `genesis_time` than
//! mainnet's, while `sszgate rpc --network mainnet` starts against it. It must refuse to
//! start and name the field. Without a `--network` flag the rows are not run.
//!
//! Not here: the verdict's rules (the parent module).

use std::{collections::HashMap, path::Path, process::Command};

use serde_json::{Value, json};
use sszgate_fixtures::replay::{Answer, Replay};
use sszgate_light::ChainSpec;

use super::server::{RpcChild, Started};

/// A lie about mainnet's timing: the field and the value told.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TimingLie {
    /// The field as the Beacon API names it.
    pub(crate) field: &'static str,
    /// The value told instead of mainnet's.
    pub(crate) told: u64,
}

/// The rows' lies: half mainnet's slot time, twice its period, genesis an hour late.
pub(crate) const LIES: [TimingLie; 3] = [
    TimingLie {
        field: "SECONDS_PER_SLOT",
        told: 6,
    },
    TimingLie {
        field: "EPOCHS_PER_SYNC_COMMITTEE_PERIOD",
        told: 512,
    },
    TimingLie {
        field: "genesis_time",
        told: 1_606_824_023 + 3600,
    },
];

/// The recorded case replayed (its files answer the light client's other routes).
const CASE: &str = "eth_getBalance1";
/// The fixed clock: a time within the recording's period (April 2025).
const CLOCK: &str = "1745000000";

/// What a timing row saw.
pub(crate) enum TimingSeen {
    /// `sszgate rpc` has no `--network`: the row cannot be run as written.
    FlagMissing,
    /// It ended at start: its status and log.
    Refused { status: String, log: String },
    /// It served.
    Served,
    /// The replay could not start.
    NoReplay(String),
}

/// Whether `sszgate rpc` has the `--network` flag.
pub(crate) fn has_network_flag(sszgate: &Path) -> bool {
    Command::new(sszgate)
        .args(["rpc", "--help"])
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("--network"))
}

/// The replay's answers for the two routes, with `lie` told.
fn lying_answers(lie: TimingLie) -> HashMap<String, Answer> {
    let (mut config, mut genesis) = ChainSpec::mainnet().to_beacon_api();
    let target = if lie.field == "genesis_time" {
        &mut genesis
    } else {
        &mut config
    };
    target[lie.field] = lie.told.to_string().into();
    let body = |data: Value| Answer::Body(json!({ "data": data }).to_string().into_bytes());
    HashMap::from([
        ("eth_v1_config_spec.json".to_string(), body(config)),
        ("eth_v1_beacon_genesis.json".to_string(), body(genesis)),
    ])
}

/// Starts `sszgate rpc --network mainnet` against a replay telling `lie`.
pub(crate) async fn run(sszgate: &Path, data: &Path, dir: &Path, lie: TimingLie) -> TimingSeen {
    if !has_network_flag(sszgate) {
        return TimingSeen::FlagMissing;
    }
    let replay = match Replay::start_with(&data.join(CASE), lying_answers(lie)).await {
        Ok(replay) => replay,
        Err(e) => return TimingSeen::NoReplay(e.to_string()),
    };
    let state = dir.join(format!("timing-{}.json", lie.field));
    let args: Vec<String> = [
        "--network",
        "mainnet",
        "--beacon",
        &replay.url(),
        "--execution",
        &replay.url(),
        "--checkpoint",
        &format!("0x{}", "11".repeat(32)),
        "--clock",
        CLOCK,
        "--state",
        &state.to_string_lossy(),
    ]
    .map(str::to_string)
    .to_vec();
    let log = dir.join(format!("timing-{}.log", lie.field));
    match RpcChild::start(sszgate, &args, &log).await {
        Started::Serving(_child) => TimingSeen::Served,
        Started::Ended(status, log) => TimingSeen::Refused { status, log },
    }
}
