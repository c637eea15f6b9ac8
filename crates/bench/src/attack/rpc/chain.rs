//! The live Fulu chain of the forged-head rows: geth on Osaka and a Lodestar v1.38 with 8
//! interop validators on the mainnet preset, started by the kit's `up.sh` and stopped by
//! process id (`down.sh`) when dropped; and the plain Beacon API and JSON-RPC calls the rows
//! make of it.
//!
//! Not here: the forgery, the relays, the verdicts.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::{Value, json};

/// The most bytes read of one answer of the chain.
const MAX_ANSWER: usize = 32 << 20;
/// The longest one call to the chain may take.
const CALL_LIMIT: Duration = Duration::from_secs(10);

/// Where the live chain's tools are.
#[derive(Clone, Debug)]
pub struct LiveTools {
    /// geth (v1.17.8).
    pub geth: PathBuf,
    /// The Lodestar v1.38 build (`build.sh`'s directory).
    pub lodestar: PathBuf,
    /// The kit (`shared/tools/lodestar-fulu`, holding `up.sh` and `down.sh`).
    pub kit: PathBuf,
}

impl LiveTools {
    /// What is missing, in words; `None` when all is there.
    pub fn missing(&self) -> Option<String> {
        let absent: Vec<String> = [
            (&self.geth, self.geth.clone()),
            (
                &self.lodestar,
                self.lodestar.join("packages/cli/bin/lodestar.js"),
            ),
            (&self.kit, self.kit.join("up.sh")),
        ]
        .into_iter()
        .filter(|(_, needed)| !needed.exists())
        .map(|(_, needed)| needed.display().to_string())
        .collect();
        (!absent.is_empty()).then(|| format!("missing: {}", absent.join(", ")))
    }
}

/// A running chain; dropped, `down.sh` stops it by the process ids `up.sh` recorded.
pub(crate) struct LiveChain {
    /// What `up.sh` printed (URLs, pids, the run directory).
    up: Value,
    kit: PathBuf,
}

impl Drop for LiveChain {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(self.kit.join("down.sh"))
            .arg(self.up["run"].as_str().unwrap_or_default())
            .output();
    }
}

impl LiveChain {
    /// Starts the chain (`PRESET=mainnet FORK=fulu`) with its state in `run`.
    pub(crate) fn up(tools: &LiveTools, run: &Path) -> Result<LiveChain, String> {
        LiveChain::up_with(tools, run, &[("PRESET", "mainnet"), ("FORK", "fulu")])
    }

    /// Starts the chain with `knobs` (up.sh's environment: `PRESET`, `BPO1`, `FOLLOWER`, the
    /// Engine ports and URLs, …) and its state in `run`.
    pub(crate) fn up_with(
        tools: &LiveTools,
        run: &Path,
        knobs: &[(&str, &str)],
    ) -> Result<LiveChain, String> {
        let out = Command::new("bash")
            .arg(tools.kit.join("up.sh"))
            .env("GETH", &tools.geth)
            .env("LS_BUILD", &tools.lodestar)
            .env("RUN", run)
            .envs(knobs.iter().copied())
            .output()
            .map_err(|e| format!("up.sh: {e}"))?;
        if !out.status.success() {
            // What up.sh started before it failed is stopped by the pids it recorded.
            let _ = Command::new("bash")
                .arg(tools.kit.join("down.sh"))
                .arg(run)
                .output();
            return Err(format!(
                "up.sh ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let up = serde_json::from_slice(&out.stdout).map_err(|e| format!("up.sh's JSON: {e}"))?;
        Ok(LiveChain {
            up,
            kit: tools.kit.clone(),
        })
    }

    /// Makes sure the follower pair's Lodestar (`FOLLOWER=1`) holds the proposer's as a peer
    /// (`sszgate_drive::devnet::connect_follower` says why up.sh's one request is not enough).
    pub(crate) async fn connect_follower(&self) -> Result<(), String> {
        let (follower, proposer) = (self.field("beacon_rest2"), self.field("beacon_rest"));
        sszgate_drive::devnet::connect_follower_to(&follower, &proposer).await
    }

    /// What `up.sh` printed (URLs, pids, the run directory, the genesis time).
    pub(crate) fn up_json(&self) -> &Value {
        &self.up
    }

    /// A text field of what `up.sh` printed (`geth_http2`, `jwt`, …), empty when absent.
    pub(crate) fn field(&self, name: &str) -> String {
        self.up[name].as_str().unwrap_or_default().into()
    }

    /// The Beacon API's base URL.
    pub(crate) fn beacon(&self) -> String {
        self.up["beacon_rest"].as_str().unwrap_or_default().into()
    }

    /// geth's JSON-RPC URL.
    pub(crate) fn geth(&self) -> String {
        self.up["geth_http"].as_str().unwrap_or_default().into()
    }

    /// A Beacon API GET as JSON.
    pub(crate) async fn beacon_json(&self, path: &str) -> Result<Value, String> {
        let bytes = get(&format!("{}{path}", self.beacon()), "application/json").await?;
        serde_json::from_slice(&bytes).map_err(|e| format!("{path}: {e}"))
    }

    /// A Beacon API GET as SSZ.
    pub(crate) async fn beacon_ssz(&self, path: &str) -> Result<Bytes, String> {
        get(
            &format!("{}{path}", self.beacon()),
            "application/octet-stream",
        )
        .await
    }

    /// An eth_* call to geth: its `result`.
    pub(crate) async fn eth(&self, method: &str, params: Value) -> Result<Value, String> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let client = Client::builder(TokioExecutor::new()).build_http();
        let url = self.geth();
        let call = super::relay::post_json(&client, &url, body.to_string().into_bytes());
        let bytes = tokio::time::timeout(CALL_LIMIT, call)
            .await
            .map_err(|_| format!("{method}: no answer within {CALL_LIMIT:?}"))??;
        let answer: Value = serde_json::from_slice(&bytes).map_err(|e| format!("{method}: {e}"))?;
        match answer.get("result") {
            Some(result) => Ok(result.clone()),
            None => Err(format!("{method}: {answer}")),
        }
    }

    /// An eth_* call whose result is a quantity.
    pub(crate) async fn quantity(&self, method: &str, params: Value) -> Result<u64, String> {
        let result = self.eth(method, params).await?;
        quantity(&result).ok_or_else(|| format!("{method}: {result} is not a quantity"))
    }

    /// The head slot and root, once the head reaches `slot` (at most `within`).
    pub(crate) async fn head_at(
        &self,
        slot: u64,
        within: Duration,
    ) -> Result<(u64, String), String> {
        head_at(&self.beacon(), slot, within).await
    }
}

/// The head slot and root of the Beacon API at `beacon`, once its head reaches `slot` (at
/// most `within`).
pub(crate) async fn head_at(
    beacon: &str,
    slot: u64,
    within: Duration,
) -> Result<(u64, String), String> {
    let started = Instant::now();
    loop {
        let head = get(
            &format!("{beacon}/eth/v1/beacon/headers/head"),
            "application/json",
        )
        .await
        .and_then(|b| serde_json::from_slice::<Value>(&b).map_err(|e| e.to_string()));
        let seen = head.as_ref().ok().and_then(|h| {
            let slot = h["data"]["header"]["message"]["slot"]
                .as_str()?
                .parse()
                .ok()?;
            Some((slot, h["data"]["root"].as_str()?.to_string()))
        });
        match seen {
            Some((at, root)) if at >= slot => return Ok((at, root)),
            _ if started.elapsed() > within => {
                return Err(format!(
                    "{beacon}: the head did not reach slot {slot} within {within:?}: {head:?}"
                ));
            }
            _ => tokio::time::sleep(Duration::from_secs(1)).await,
        }
    }
}

/// A `0x` quantity as a number.
pub(crate) fn quantity(value: &Value) -> Option<u64> {
    u64::from_str_radix(value.as_str()?.strip_prefix("0x")?, 16).ok()
}

/// A GET with `accept`; the body of a 200 answer, or an error naming the status.
pub(crate) async fn get(url: &str, accept: &str) -> Result<Bytes, String> {
    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let request = hyper::Request::get(url)
        .header("accept", accept)
        .body(Empty::new())
        .map_err(|e| e.to_string())?;
    let exchange = async {
        let answer = client.request(request).await.map_err(|e| e.to_string())?;
        let status = answer.status();
        let body = Limited::new(answer.into_body(), MAX_ANSWER)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if !status.is_success() {
            return Err(format!(
                "{url}: {status} {}",
                String::from_utf8_lossy(&body)
            ));
        }
        Ok(body)
    };
    tokio::time::timeout(CALL_LIMIT, exchange)
        .await
        .map_err(|_| format!("{url}: no answer within {CALL_LIMIT:?}"))?
}
