//! The SSZ Engine API study on a real chain (`sszgate bench ssz-chain`): a Fulu chain of
//! Lodestar v1.38 and geth on Osaka (BPO1: 48 target, 72 most blobs a block) with a follower
//! pair, each CL's Engine link crossing two `sszgate proxy` bridges back to back — JSON-RPC
//! from the CL, REST-SSZ in the middle, JSON-RPC to geth — and a load of real mainnet blobs
//! making blocks of the asked blob counts (the proposer's getPayloadV5 is held with a control
//! rule while each load enters geth's pool, so one block takes all of it). Per method,
//! direction and blob count: bytes as JSON and as SSZ (and as the middle link carried them,
//! zstd, and as framed snappy), the bridges' translation times, and the encoding and decoding
//! of one recorded message in each form, in rows for [`sszgate_report::ssz_study`].
//!
//! - [`records`]: the bridges' records read back and grouped;
//! - [`codecs`]: the recorded messages measured.
//!
//! Not here: the command line, writing files (the binary's), the sections' layout (the report
//! crate's).

mod codecs;
mod records;

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde::Serialize;
use sszgate_drive::{EthRpc, Load, LoadShape, Senders, load::MAX_BLOBS_PER_TX};
use sszgate_engine::Fork;
use sszgate_gateway::inject::{Action, RuleSpec};
use sszgate_report::ssz_study::SszStudyRow;

use crate::{
    attack::rpc::{LiveTools, chain::LiveChain},
    proxy::{ProxyChild, free_port, start_proxy, wait_ready},
};

/// Seconds per slot: a 72-blob block's cells and columns are computed, gossiped and bridged
/// twice within its slot on a loaded 2-core machine.
const SLOT_SECONDS: u64 = 6;
/// The most bytes of a body each CL-side record keeps: the largest message whole.
const BODY_BYTES: usize = 64 << 20;

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The sszgate executable (its `proxy` is the bridge).
    pub sszgate: PathBuf,
    /// geth, the Lodestar v1.38 build and the chain kit.
    pub tools: LiveTools,
    /// The data directory with the real blobs (`sszgate-fixtures`).
    pub data: PathBuf,
    /// Blob counts of the blocks made, each a multiple of 6 up to 72 (0: a block without
    /// load).
    pub blobs: Vec<usize>,
    /// Blocks made per blob count.
    pub rounds: usize,
    /// Most rounds of each codec measurement.
    pub codec_rounds: usize,
    /// Leave the run's directory (the bridges' records, the chain's logs) in place.
    pub keep: bool,
}

impl Options {
    /// What is wrong with these options, in words.
    pub fn check(&self) -> Result<(), String> {
        if let Some(n) = self
            .blobs
            .iter()
            .find(|&&n| n > 72 || n % MAX_BLOBS_PER_TX != 0)
        {
            return Err(format!(
                "blob count {n}: each must be a multiple of {MAX_BLOBS_PER_TX} up to 72 (every transaction carries {MAX_BLOBS_PER_TX} real blobs)"
            ));
        }
        if self.blobs.is_empty() || self.rounds == 0 || self.codec_rounds == 0 {
            return Err("give at least one blob count, one round and one codec round".into());
        }
        self.tools.missing().map_or(Ok(()), Err)
    }
}

/// A block the load made: its slot, the blobs asked for and the blobs it holds.
#[derive(Clone, Debug, Serialize)]
pub struct Block {
    /// Its slot.
    pub slot: u64,
    /// Blobs sent for it.
    pub asked: usize,
    /// Blobs it holds.
    pub blobs: usize,
}

/// The study's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// One row per method, direction and blob count.
    pub rows: Vec<SszStudyRow>,
    /// The blocks the load made.
    pub blocks: Vec<Block>,
    /// What went wrong on the way (a load that did not land whole, a message that did not
    /// measure): each makes the run fail.
    pub findings: Vec<String>,
    /// Wall time of the run, seconds.
    pub seconds: f64,
}

impl Report {
    /// The report's sections (tables and charts) in an [`sszgate_report::Report`], whose
    /// `markdown` and `html` write them.
    pub fn report(&self, command: &str, machine: &str) -> sszgate_report::Report {
        let blocks: Vec<String> = self
            .blocks
            .iter()
            .map(|b| format!("slot {}: {} of {}", b.slot, b.blobs, b.asked))
            .collect();
        let findings = if self.findings.is_empty() {
            String::new()
        } else {
            format!(" Findings: {}.", self.findings.join("; "))
        };
        sszgate_report::Report {
            source: format!(
                "`{command}` on {machine}; {:.0} s. Lodestar v1.38 + geth (Osaka, BPO1 48/72, 6 s slots, a follower pair), both Engine links through two bridges back to back. Loaded blocks (blobs of asked): {}.{findings}",
                self.seconds,
                blocks.join(", ")
            ),
            sections: sszgate_report::ssz_study::sections(&self.rows),
        }
    }
}

/// One link's two bridges: the CL's (JSON-RPC in, REST-SSZ out) and geth's (REST-SSZ in,
/// JSON-RPC out), each writing JSON-lines records in its own directory.
struct Bridges {
    cl: ProxyChild,
    el: ProxyChild,
    cl_listen: std::net::SocketAddr,
    cl_control: std::net::SocketAddr,
    cl_records: PathBuf,
    el_records: PathBuf,
}

impl Bridges {
    /// Starts both in front of the geth Engine port `geth_auth`, under `dir/name-*`.
    async fn start(
        options: &Options,
        dir: &Path,
        name: &str,
        geth_auth: u16,
        jwt: &Path,
    ) -> Result<Bridges, String> {
        let flags = |side: &str, transport: &str, body_bytes: usize| -> (PathBuf, Vec<String>) {
            let records = dir.join(format!("{name}-{side}.jsonl"));
            let flags = [
                "--upstream-transport",
                transport,
                "--verify",
                "off",
                "--jwt-secret",
                &jwt.display().to_string(),
                "--store",
                &format!("jsonl:{}", records.display()),
                "--jsonl-body-bytes",
                &body_bytes.to_string(),
            ]
            .map(str::to_string)
            .to_vec();
            (records, flags)
        };
        let own = |side: &str| {
            let own = dir.join(format!("{name}-{side}"));
            std::fs::create_dir_all(&own).map(|()| own)
        };
        let (el_dir, cl_dir) = (
            own("el").map_err(|e| e.to_string())?,
            own("cl").map_err(|e| e.to_string())?,
        );
        let (el_records, el_flags) = flags("el", "json", 0);
        let geth = std::net::SocketAddr::from(([127, 0, 0, 1], geth_auth));
        let (el, el_listen, _) = start_proxy(&options.sszgate, geth, &el_dir, &el_flags);
        let (cl_records, cl_flags) = flags("cl", "ssz", BODY_BYTES);
        let (cl, cl_listen, cl_control) =
            start_proxy(&options.sszgate, el_listen, &cl_dir, &cl_flags);
        wait_ready(el_listen).await;
        wait_ready(cl_listen).await;
        Ok(Bridges {
            cl,
            el,
            cl_listen,
            cl_control,
            cl_records,
            el_records,
        })
    }

    /// Stops both (SIGTERM: their records are written out first).
    fn stop(self) -> Result<(PathBuf, PathBuf), String> {
        for (proxy, side) in [(self.cl, "CL-side"), (self.el, "EL-side")] {
            if crate::soak::stop(proxy) != Some(true) {
                return Err(format!("the {side} bridge did not stop cleanly"));
            }
        }
        Ok((self.cl_records, self.el_records))
    }
}

/// A directory of the run's own, removed when dropped unless kept.
struct WorkDir(PathBuf, bool);

impl Drop for WorkDir {
    fn drop(&mut self) {
        if !self.1 {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A fresh JWT secret in `dir`: 32 bytes of the kernel's randomness, as hex.
fn jwt_secret(dir: &Path) -> Result<PathBuf, String> {
    let mut secret = [0u8; 32];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom").map_err(|e| e.to_string())?,
        &mut secret,
    )
    .map_err(|e| e.to_string())?;
    let path = dir.join("jwt.hex");
    std::fs::write(&path, const_hex::encode(secret)).map_err(|e| e.to_string())?;
    Ok(path)
}

/// Runs the study: the chain and its load (on a runtime of its own), then the records read
/// and the kept messages measured. `progress` is told each step.
pub fn run(options: &Options, progress: &mut dyn FnMut(&str)) -> Result<Report, String> {
    options.check()?;
    let started = Instant::now();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = WorkDir(
        std::env::temp_dir().join(format!("sszgate-ssz-chain-{}-{now}", std::process::id())),
        options.keep,
    );
    std::fs::create_dir_all(&dir.0).map_err(|e| format!("{}: {e}", dir.0.display()))?;
    if options.keep {
        progress(&format!("records and logs go to {}", dir.0.display()));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let (blocks, mut findings, links) = runtime.block_on(on_chain(options, &dir.0, progress))?;
    progress("reading the records and measuring the recorded messages");
    let mut study = records::Study::default();
    for (cl, el) in &links {
        study.add_cl_side(cl)?;
        study.add_el_side(el)?;
    }
    let rows = rows(&study, options.codec_rounds, &mut findings, progress);
    Ok(Report {
        rows,
        blocks,
        findings,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The chain with both links bridged, the load, the chain stopped and the bridges stopped:
/// the blocks made, what went wrong, and each link's two record files.
async fn on_chain(
    options: &Options,
    dir: &Path,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<Block>, Vec<String>, Vec<(PathBuf, PathBuf)>), String> {
    let jwt = jwt_secret(dir)?;
    let (geth_auth, geth2_auth) = (free_port(), free_port());
    progress("starting the four bridges");
    let proposer = Bridges::start(options, dir, "proposer", geth_auth, &jwt).await?;
    let follower = Bridges::start(options, dir, "follower", geth2_auth, &jwt).await?;
    progress("starting geth and Lodestar (Fulu, BPO1 48/72) with a follower pair");
    let run = dir.join("chain");
    let (auth, auth2) = (geth_auth.to_string(), geth2_auth.to_string());
    let (cl_url, cl2_url) = (
        format!("http://{}", proposer.cl_listen),
        format!("http://{}", follower.cl_listen),
    );
    let jwt_text = jwt.display().to_string();
    let slot = SLOT_SECONDS.to_string();
    let knobs = [
        ("PRESET", "minimal"),
        ("FORK", "fulu"),
        ("BPO1", "1"),
        ("FOLLOWER", "1"),
        ("SLOT", slot.as_str()),
        ("GENESIS_DELAY", "30"),
        ("GETH_AUTH_PORT", auth.as_str()),
        ("CL_ENGINE_URL", cl_url.as_str()),
        ("GETH2_AUTH_PORT", auth2.as_str()),
        ("CL2_ENGINE_URL", cl2_url.as_str()),
        ("JWT", jwt_text.as_str()),
    ];
    let chain = LiveChain::up_with(&options.tools, &run, &knobs)?;
    // The bridges are stopped below whatever happens here.
    let loaded = async {
        chain.connect_follower().await?;
        load(options, &chain, proposer.cl_control, progress).await
    }
    .await;
    drop(chain);
    progress("chain stopped; stopping the bridges");
    let links = vec![proposer.stop()?, follower.stop()?];
    let (blocks, findings) = loaded?;
    Ok((blocks, findings, links))
}

/// Makes `options.rounds` blocks of each blob count, each followed by two slots for the
/// follower to fetch its blobs; the blocks, and the load that did not land whole (the last
/// sent: what stays in the pool would spoil the next).
async fn load(
    options: &Options,
    chain: &LiveChain,
    control: std::net::SocketAddr,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<Block>, Vec<String>), String> {
    let blobs = sszgate_fixtures::Fixtures::load(&options.data)
        .and_then(|f| f.blobs())
        .map_err(|e| format!("the real blobs of {}: {e}", options.data.display()))?;
    let slot = Duration::from_secs(SLOT_SECONDS);
    chain.head_at(3, Duration::from_secs(240)).await?;
    let (mut blocks, mut findings) = (Vec::new(), Vec::new());
    for &asked in &options.blobs {
        for round in 1..=options.rounds {
            if asked == 0 {
                // Blocks without a load come by themselves between the loads.
                tokio::time::sleep(slot).await;
                continue;
            }
            let block = match one_block(chain, control, &blobs, asked).await {
                Ok(block) => block,
                Err(e) => {
                    findings.push(format!("{asked} blobs: {e}; no larger load sent"));
                    return Ok((blocks, findings));
                }
            };
            progress(&format!(
                "{asked} blobs, round {round}/{}: slot {}, {} blobs",
                options.rounds, block.slot, block.blobs
            ));
            if block.blobs != asked {
                // What did not land stays in geth's pool: a later load would not land whole
                // either (and may pass the pool's per-account limit).
                findings.push(format!(
                    "{asked} blobs sent, the block of slot {} holds {}; no larger load sent",
                    block.slot, block.blobs
                ));
                blocks.push(block);
                return Ok((blocks, findings));
            }
            blocks.push(block);
            // The follower gossips the block and fetches its blobs from geth2.
            tokio::time::sleep(2 * slot).await;
        }
    }
    Ok((blocks, findings))
}

/// Sends `asked` real blobs in 6-blob transactions to both ELs while the proposer's
/// getPayloadV5 is held (an error rule on the CL-side bridge at `control`), so one payload
/// takes them all; the block that holds them.
async fn one_block(
    chain: &LiveChain,
    control: std::net::SocketAddr,
    blobs: &[sszgate_fixtures::BlobItem],
    asked: usize,
) -> Result<Block, String> {
    let (el, el2) = (
        EthRpc::new(&chain.geth()),
        EthRpc::new(&chain.field("geth_http2")),
    );
    let shape = LoadShape {
        transfers: 0,
        blob_txs: asked / MAX_BLOBS_PER_TX,
        blobs_per_tx: MAX_BLOBS_PER_TX,
    };
    let mut load = Load::new(&el, Fork::Osaka, shape, blobs.to_vec(), Senders::dev())
        .await
        .map_err(|e| format!("the blob load: {e}"))?;
    let txs = load.next_block();
    let (from, _) = chain.head_at(0, Duration::from_secs(10)).await?;
    hold(control, true).await?;
    let sent = async {
        for tx in &txs {
            el.call("eth_sendRawTransaction", serde_json::json!([tx.raw]))
                .await
                .map_err(|e| format!("geth took no blob transaction {}: {e}", tx.hash))?;
        }
        // A payload geth began before the last transaction came may still be proposed: two
        // more slots held, the next one is begun with all of them in the pool.
        tokio::time::sleep(Duration::from_secs(2 * SLOT_SECONDS)).await;
        Ok::<(), String>(())
    }
    .await;
    hold(control, false).await?;
    sent?;
    for tx in &txs {
        // geth2 may have it by gossip already: its refusal is fine.
        let _ = el2
            .call("eth_sendRawTransaction", serde_json::json!([tx.raw]))
            .await;
    }
    first_block_with(chain, from, asked, Duration::from_secs(20 * SLOT_SECONDS)).await
}

/// The first block after slot `from` with at least `blobs` blobs, or the largest seen when
/// none has that many within `within`.
async fn first_block_with(
    chain: &LiveChain,
    from: u64,
    blobs: usize,
    within: Duration,
) -> Result<Block, String> {
    let started = Instant::now();
    let (mut next, mut largest) = (from + 1, None::<Block>);
    loop {
        let (head, _) = chain.head_at(0, Duration::from_secs(10)).await?;
        while next <= head {
            let block = chain
                .beacon_json(&format!("/eth/v2/beacon/blocks/{next}"))
                .await;
            let count = block.ok().and_then(|b| {
                Some(
                    b["data"]["message"]["body"]["blob_kzg_commitments"]
                        .as_array()?
                        .len(),
                )
            });
            let found = Block {
                slot: next,
                asked: blobs,
                blobs: count.unwrap_or(0),
            };
            next += 1;
            if found.blobs >= blobs {
                return Ok(found);
            }
            if largest.as_ref().is_none_or(|l| found.blobs > l.blobs) {
                largest = Some(found);
            }
        }
        if started.elapsed() > within {
            return largest.ok_or_else(|| format!("no block after slot {from} within {within:?}"));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Holds the proposer's getPayloadV5 (an error answer, for at most two minutes) or lets it go
/// (every rule cleared), on the control address of the CL-side bridge.
async fn hold(control: std::net::SocketAddr, on: bool) -> Result<(), String> {
    let (method, body) = if on {
        let rule = RuleSpec {
            method: Some("engine_getPayloadV5".into()),
            action: Action::RpcError {
                code: -32000,
                message: "sszgate-bench-holding-blocks-for-the-blob-load".into(),
            },
            every: None,
            count: None,
            seconds: Some(120),
        };
        let body = serde_json::to_vec(&rule).map_err(|e| e.to_string())?;
        (http::Method::POST, body)
    } else {
        (http::Method::DELETE, Vec::new())
    };
    let request = http::Request::builder()
        .method(method)
        .uri(format!("http://{control}/_sszgate/rules"))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let answer = client
        .request(request)
        .await
        .map_err(|e| format!("the control address {control}: {e}"))?;
    let status = answer.status();
    let text = Limited::new(answer.into_body(), 1 << 20)
        .collect()
        .await
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_default();
    if !status.is_success() {
        return Err(format!("the control address {control}: {status} {text}"));
    }
    Ok(())
}

/// The study's rows from the grouped records, each kept message measured; a group without
/// both sides' sizes, or whose message does not measure, is a finding.
fn rows(
    study: &records::Study,
    codec_rounds: usize,
    findings: &mut Vec<String>,
    progress: &mut dyn FnMut(&str),
) -> Vec<SszStudyRow> {
    let mut rows = Vec::new();
    for (&(method, direction, blobs), group) in &study.groups {
        let what = format!("{method} {} with {blobs} blobs", direction.name());
        let (Some(json_bytes), Some(ssz_bytes)) = (group.json_bytes(), group.ssz_bytes()) else {
            findings.push(format!("{what}: not recorded by both bridges"));
            continue;
        };
        let m = sszgate_engine::method::by_name(method).expect("a method of the table");
        let timed = study
            .kept
            .get(&(method, direction, blobs))
            .ok_or_else(|| format!("{what}: no message kept"))
            .and_then(|kept| {
                progress(&format!("measuring {what}"));
                codecs::time(m, direction, kept, codec_rounds)
            });
        let timed = match timed {
            Ok(timed) => Some(timed),
            Err(e) => {
                findings.push(e);
                None
            }
        };
        rows.push(SszStudyRow {
            method: method.to_string(),
            direction: direction.name().to_string(),
            blobs,
            calls: group.calls,
            json_bytes,
            ssz_bytes,
            ssz_zstd_bytes: group.zstd_bytes(),
            ssz_snappy_bytes: timed.as_ref().map(|t| t.snappy_bytes),
            to_ssz_us: group.to_ssz_us(),
            to_json_us: group.to_json_us(),
            json_encode_us: timed.as_ref().map(|t| t.json_encode_us),
            ssz_encode_us: timed.as_ref().map(|t| t.ssz_encode_us),
            json_decode_us: timed.as_ref().map(|t| t.json_decode_us),
            ssz_decode_us: timed.as_ref().map(|t| t.ssz_decode_us),
        });
    }
    rows
}
