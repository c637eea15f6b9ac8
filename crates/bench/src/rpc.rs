//! The verified-RPC benchmark (`sszgate bench rpc`): on every recorded mainnet case
//! (`shared/data/colibri/`), the time sszgate's verifier takes to answer, cold and warm, next
//! to colibri.stateless verifying its own proof of the same request (its npm package, a child
//! process driven by `scripts/colibri-peer.mjs`) in the same rounds; the BLS sync-aggregate
//! check alone; what crossed the wire for each; and whether the two answers agree. The remote
//! (proof) mode too (`remote`): sszgate's prover and proof verifier next to colibri's, the
//! proof sizes, and whether sszgate's proof equals colibri's byte for byte.
//!
//! Not here: the verifiers (`sszgate-rpc`, `sszgate-proof`) or the light client
//! (`sszgate-light`).

mod remote;

use std::{
    array,
    io::{BufRead, BufReader, Read, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use sszgate_fixtures::replay::Replay;
use sszgate_light::{
    ChainSpec,
    block::{AnyBlock, BlockSummary},
    bls::CommitteeKeys,
    spec::signing_root,
    store::LightClientStore,
    types::{Bootstrap, SyncAggregate, SyncCommittee, Update, split_update_stream},
};
use sszgate_rpc::{BeaconSource, FixedAnchors, Limits, Upstream, Verifier};

use crate::harness::{Summary, machine, ms};
use remote::Remote;

/// The colibri peer's script, written to node's `-e` (so the binary needs no file beside it).
const COLIBRI_PEER: &str = include_str!("../../../scripts/colibri-peer.mjs");
/// The mock-file naming module the peer imports.
const COLIBRI_MOCKNAME: &str = include_str!("../../../scripts/colibri-mockname.mjs");
/// The peer's import of it, replaced by its text: the peer runs from `node -e`, where a
/// relative import resolves against the working directory, not `scripts/`.
const MOCKNAME_IMPORT: &str = "import { mockname } from './colibri-mockname.mjs';";

/// The colibri peer's script with its one local import inlined.
fn colibri_peer_script() -> String {
    COLIBRI_PEER.replace(
        MOCKNAME_IMPORT,
        &COLIBRI_MOCKNAME.replace("export function mockname", "function mockname"),
    )
}
/// The longest line the colibri peer may answer with (a 170-transaction block is ~200 kB).
const MAX_PEER_LINE: u64 = 64 << 20;
/// The largest upstream answer the verifier takes.
const MAX_ANSWER: usize = 64 << 20;
/// The largest `test.json` read (the 170-transaction block's is ~0.4 MB).
const MAX_TEST_JSON: u64 = 16 << 20;
/// The largest other recorded file read (beacon blocks, light-client updates: ~1.2 MB).
const MAX_RECORDED: u64 = 64 << 20;
/// The case whose recorded sync aggregate the BLS rows check.
const BLS_CASE: &str = "eth_blockNumber_electra";

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The recorded cases (`shared/data/colibri`).
    pub data: PathBuf,
    /// colibri's vectors (`shared/vectors/colibri`): the committee keys sszgate's proof
    /// verifier trusts for a case, where the vector of the case has them.
    pub vectors: PathBuf,
    /// colibri's npm package directory; none: sszgate alone, and the report says so.
    pub colibri: Option<PathBuf>,
    /// Rounds of samples per case.
    pub rounds: usize,
    /// Only the cases whose name contains this.
    pub only: Option<String>,
}

/// One case's figures.
#[derive(Debug)]
pub struct CaseRow {
    /// The case directory's name.
    pub case: String,
    /// The JSON-RPC method.
    pub method: String,
    /// sszgate after a restart: committee keys read from the saved state, one sync-aggregate
    /// check, the method on an empty verifier.
    pub sszgate_cold: Summary,
    /// sszgate: the method again on the same verifier.
    pub sszgate_warm: Summary,
    /// colibri: its proof verified by a new process.
    pub colibri_cold: Option<Summary>,
    /// colibri: the proof verified again by the same client.
    pub colibri_warm: Option<Summary>,
    /// colibri: its prover building the proof from the recorded answers.
    pub colibri_prove: Option<Summary>,
    /// Bytes sszgate fetched from the upstream for one cold answer.
    pub fetched_bytes: u64,
    /// Upstream requests sszgate made for one cold answer.
    pub upstream_requests: usize,
    /// The plain JSON-RPC answer's size (what a provider sends an unverifying client).
    pub answer_bytes: usize,
    /// colibri's proof size.
    pub colibri_proof_bytes: Option<usize>,
    /// Whether sszgate's answer and colibri's verified result agree (`None`: colibri did not
    /// run); the difference when they do not.
    pub agreement: Option<Result<(), String>>,
    /// sszgate's remote (proof) mode.
    pub remote: RemoteOutcome,
}

/// sszgate's remote (proof) mode on one case, or why it has no figures.
#[derive(Debug)]
pub enum RemoteOutcome {
    /// Proven and verified.
    Measured(RemoteRow),
    /// sszgate's prover built no proof of the case (a method it lacks, or an answer it needs
    /// that the recording does not hold): why.
    NotBuilt(String),
    /// sszgate's verifier refused sszgate's proof (the run fails): why.
    Refused(String),
}

/// The figures of sszgate's remote (proof) mode on one case.
#[derive(Debug)]
pub struct RemoteRow {
    /// sszgate's prover building the proof from the replay server of the recording.
    pub prove: Summary,
    /// sszgate's proof verifier on a new trusted state: the period's committee keys read
    /// back from a saved keys file, then the proof.
    pub verify_cold: Summary,
    /// The proof verified again with the same trusted state.
    pub verify_warm: Summary,
    /// sszgate's proof size.
    pub proof_bytes: usize,
    /// Whether sszgate's proof equals colibri's byte for byte (`None`: colibri did not run).
    pub same_proof: Option<bool>,
    /// Whether sszgate's proof-verified answer and colibri's verified result agree (`None`:
    /// colibri did not run); the difference when they do not.
    pub agreement: Option<Result<(), String>>,
}

/// The whole run.
#[derive(Debug)]
pub struct Report {
    /// The machine it ran on.
    pub machine: String,
    /// Rounds per case.
    pub rounds: usize,
    /// Per case.
    pub rows: Vec<CaseRow>,
    /// The 512 committee keys decompressed and validated, and one aggregate checked.
    pub bls_first: Summary,
    /// The keys read back from the saved state, and one aggregate checked.
    pub bls_cold: Summary,
    /// One aggregate checked with the keys prepared.
    pub bls_warm: Summary,
    /// colibri's package, or why it did not run.
    pub colibri: Result<String, String>,
}

/// A recorded case.
struct Case {
    name: String,
    dir: PathBuf,
    method: String,
    params: Vec<Value>,
    /// The params as written: colibri names the recorded answers by the JSON text of the
    /// params, so their keys must keep their order.
    params_text: Box<serde_json::value::RawValue>,
    expected: Value,
    checkpoint: Option<String>,
}

/// A case's `test.json`.
#[derive(serde::Deserialize)]
struct TestJson {
    method: String,
    params: Box<serde_json::value::RawValue>,
    expected_result: Value,
    trusted_blockhash: Option<String>,
}

fn cases(options: &Options) -> Result<Vec<Case>, String> {
    let entries =
        std::fs::read_dir(&options.data).map_err(|e| format!("{}: {e}", options.data.display()))?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let dir = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(text) = read_bounded(&dir.join("test.json"), MAX_TEST_JSON) else {
            continue;
        };
        if options.only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let test: TestJson =
            serde_json::from_str(&text).map_err(|e| format!("{name}/test.json: {e}"))?;
        out.push(Case {
            params: serde_json::from_str(test.params.get())
                .map_err(|e| format!("{name}/test.json params: {e}"))?,
            method: test.method,
            params_text: test.params,
            expected: test.expected_result,
            checkpoint: test.trusted_blockhash,
            name,
            dir,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// A text file of at most `max` bytes; a larger one is an error, not read whole.
fn read_bounded(path: &Path, max: u64) -> Result<String, String> {
    String::from_utf8(read_bytes_bounded(path, max)?)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A file of at most `max` bytes; a larger one is an error, not read whole.
fn read_bytes_bounded(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    sszgate_light::persist::read_file_bounded(path, max)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A recorded sync aggregate over its parent block, and the committee that signed it.
struct BlsCheck {
    committee: SyncCommittee,
    period: u64,
    aggregate: SyncAggregate,
    signing_root: alloy_primitives::B256,
    slot: u64,
    keys: CommitteeKeys,
    /// The keys as a restarted light client reads them from its saved state.
    saved: Vec<u8>,
}

impl BlsCheck {
    fn load(dir: &Path) -> Result<BlsCheck, String> {
        let spec = ChainSpec::mainnet();
        let store = synced_store(&spec, dir, &mut |_| {})?;
        let head = block(&spec, &dir.join("eth_v2_beacon_blocks_head.ssz"))?;
        let parent = block(
            &spec,
            &dir.join(format!(
                "eth_v2_beacon_blocks_{}.ssz",
                head.header.parent_root
            )),
        )?;
        let period = spec.period(head.header.slot);
        let committee = if period == store.finalized_period() {
            store.current_sync_committee()
        } else {
            store
                .next_sync_committee()
                .ok_or("the recording does not prove the signing committee")?
        }
        .clone();
        let keys = CommitteeKeys::new(&committee, period).map_err(|e| e.to_string())?;
        Ok(BlsCheck {
            saved: keys.to_uncompressed(),
            signing_root: signing_root(
                parent.root,
                spec.domain_for_signature_slot(head.header.slot),
            ),
            slot: head.header.slot,
            aggregate: head.sync_aggregate,
            committee,
            period,
            keys,
        })
    }

    /// The first time a committee is learned: 512 keys decompressed and subgroup-checked.
    fn first(&self) -> Result<(), String> {
        let keys = CommitteeKeys::new(&self.committee, self.period).map_err(|e| e.to_string())?;
        keys.verify(&self.aggregate, self.signing_root, self.slot)
            .map_err(|e| e.to_string())
    }

    /// After a restart: the keys read back from the saved state.
    fn cold(&self) -> Result<(), String> {
        let keys = CommitteeKeys::from_uncompressed(&self.committee, self.period, &self.saved)
            .map_err(|e| e.to_string())?;
        keys.verify(&self.aggregate, self.signing_root, self.slot)
            .map_err(|e| e.to_string())
    }

    fn warm(&self) -> Result<(), String> {
        self.keys
            .verify(&self.aggregate, self.signing_root, self.slot)
            .map_err(|e| e.to_string())
    }
}

fn block(spec: &ChainSpec, path: &Path) -> Result<BlockSummary, String> {
    let bytes = read_bytes_bounded(path, MAX_RECORDED)?;
    Ok(AnyBlock::from_ssz(spec, &bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .summary())
}

/// The files of `dir` whose names start with `prefix` (none, maybe), in name order, each of
/// at most `max` bytes.
fn files_starting(dir: &Path, prefix: &str, max: u64) -> Result<Vec<Vec<u8>>, String> {
    let files = named_files_starting(dir, prefix, max)?;
    Ok(files.into_iter().map(|(_, bytes)| bytes).collect())
}

/// [`files_starting`] with each file's name.
fn named_files_starting(
    dir: &Path,
    prefix: &str,
    max: u64,
) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| Ok((name.clone(), read_bytes_bounded(&dir.join(&name), max)?)))
        .collect()
}

/// The case's bootstrap with every recorded update applied; `each` sees the store after the
/// bootstrap and after every update.
fn synced_store(
    spec: &ChainSpec,
    dir: &Path,
    each: &mut dyn FnMut(&LightClientStore),
) -> Result<LightClientStore, String> {
    let prefix = "eth_v1_beacon_light_client_bootstrap_";
    let bytes = files_starting(dir, prefix, MAX_RECORDED)?
        .into_iter()
        .next();
    let bytes = bytes.ok_or_else(|| format!("{}: no {prefix}* file", dir.display()))?;
    let bootstrap = Bootstrap::from_ssz(spec, &bytes).map_err(|e| e.to_string())?;
    let mut store =
        LightClientStore::bootstrap(spec.clone(), bootstrap.header.beacon.root(), &bootstrap)
            .map_err(|e| e.to_string())?;
    each(&store);
    for updates in files_starting(dir, "eth_v1_beacon_light_client_updates_", MAX_RECORDED)? {
        for item in split_update_stream(&updates, 128).map_err(|e| e.to_string())? {
            let update = Update::from_ssz(spec, item).map_err(|e| e.to_string())?;
            if spec.period(update.attested_header.beacon.slot) >= store.finalized_period() {
                store
                    .process_update(&update, u64::MAX / 2)
                    .map_err(|e| e.to_string())?;
                each(&store);
            }
        }
    }
    Ok(store)
}

/// colibri's npm package in a node child process.
struct ColibriPeer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl ColibriPeer {
    fn start(package: &Path) -> Result<ColibriPeer, String> {
        let mut child = Command::new("node")
            .args(["--input-type=module", "-e", &colibri_peer_script()])
            .env("COLIBRI_PKG", package)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting node: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("node's pipes".into());
        };
        Ok(ColibriPeer {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    /// Sends one request; its answer, or colibri's error.
    fn ask(&mut self, request: &str) -> Result<Value, String> {
        writeln!(self.stdin, "{request}").map_err(|e| format!("colibri peer: {e}"))?;
        let mut line = String::new();
        (&mut self.stdout)
            .take(MAX_PEER_LINE)
            .read_line(&mut line)
            .map_err(|e| format!("colibri peer: {e}"))?;
        let answer: Value = serde_json::from_str(&line)
            .map_err(|e| format!("colibri peer answered {:?}: {e}", line.get(..200)))?;
        match answer["ok"].as_bool() {
            Some(true) => Ok(answer),
            _ => Err(format!(
                "colibri: {} (asked {})",
                answer["error"],
                request.get(..300).unwrap_or(request)
            )),
        }
    }

    /// Asks and returns the time colibri measured inside itself, and the answer.
    fn timed(&mut self, request: &str) -> Result<(Duration, Value), String> {
        let answer = self.ask(request)?;
        let ms = answer["ms"].as_f64().ok_or("colibri peer: no ms")?;
        Ok((Duration::from_secs_f64(ms / 1e3), answer))
    }
}

/// colibri for the whole run: one peer process for proving and warm verifications, a new one
/// for each cold verification, and the proofs it made as files.
struct Colibri {
    package: PathBuf,
    peer: ColibriPeer,
    proofs: PathBuf,
}

impl Colibri {
    fn start(package: &Path) -> Result<Colibri, String> {
        // One directory per run, also when runs share a process (the tests).
        static RUNS: AtomicUsize = AtomicUsize::new(0);
        let run = RUNS.fetch_add(1, Ordering::Relaxed);
        let name = format!("sszgate-bench-rpc-{}-{run}", std::process::id());
        let proofs = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&proofs).map_err(|e| format!("{}: {e}", proofs.display()))?;
        Ok(Colibri {
            package: package.to_path_buf(),
            peer: ColibriPeer::start(package)?,
            proofs,
        })
    }

    fn proof_file(&self, case: &Case) -> PathBuf {
        self.proofs.join(format!("{}.ssz", case.name))
    }

    /// One verification by a new process: colibri cold.
    fn verify_cold(&self, case: &Case) -> Result<(Duration, Value), String> {
        let mut fresh = ColibriPeer::start(&self.package)?;
        let file = self.proof_file(case);
        fresh.timed(&colibri_request(case, "verify", Some(&file)))
    }
}

impl Drop for Colibri {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.proofs);
    }
}

impl Drop for ColibriPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A request line to the colibri peer for one case, the params as written (not through a
/// `Value`, whose objects would sort their keys).
/// JSON text on one line, as written otherwise: whitespace outside strings dropped.
fn one_line(json: &str) -> String {
    let (mut out, mut in_string, mut escaped) = (String::with_capacity(json.len()), false, false);
    for c in json.chars() {
        if in_string {
            (escaped, in_string) = (!escaped && c == '\\', escaped || c != '"');
        } else if c == '"' {
            in_string = true;
        } else if c.is_whitespace() {
            continue;
        }
        out.push(c);
    }
    out
}

/// `file`: where `prove` saves the proof, or what `verify` checks (a fresh client); none:
/// `verify` checks the peer's last proof with its previous client (warm).
fn colibri_request(case: &Case, op: &str, file: Option<&Path>) -> String {
    let key = if op == "prove" { "save" } else { "proof" };
    format!(
        r#"{{"op":{},"case":{},"method":{},"params":{},"fresh":{},"{key}":{},"checkpoint":{}}}"#,
        json!(op),
        json!(case.dir),
        json!(case.method),
        one_line(case.params_text.get()),
        file.is_some(),
        json!(file),
        json!(case.checkpoint)
    )
}

/// Runs the benchmark.
pub fn run(options: &Options) -> Result<Report, String> {
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let bls = BlsCheck::load(&options.data.join(BLS_CASE))?;
    let mut colibri = match &options.colibri {
        Some(package) => Colibri::start(package),
        None => Err("no colibri package given (--colibri or SSZGATE_COLIBRI)".into()),
    };
    let mut rows = Vec::new();
    let mut bls_samples = (Vec::new(), Vec::new(), Vec::new());
    for case in cases(options)? {
        eprintln!("bench rpc: {} ({})", case.name, case.method);
        let peer = colibri.as_mut().ok();
        let row = runtime.block_on(run_case(&case, &bls, peer, options))?;
        for _ in 0..options.rounds {
            bls_samples.0.push(timed(|| bls.cold())?);
            bls_samples.1.push(timed(|| bls.warm())?);
            bls_samples.2.push(timed(|| bls.first())?);
        }
        rows.push(row);
    }
    Ok(Report {
        machine: machine(),
        rounds: options.rounds,
        rows,
        bls_cold: summary("BLS cold", bls_samples.0),
        bls_warm: summary("BLS warm", bls_samples.1),
        bls_first: summary("BLS first", bls_samples.2),
        colibri: colibri.map(|c| c.package.display().to_string()),
    })
}

fn timed(f: impl FnOnce() -> Result<(), String>) -> Result<Duration, String> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed())
}

fn summary(name: &str, samples: Vec<Duration>) -> Summary {
    Summary {
        name: name.to_string(),
        samples,
    }
}

/// sszgate's verifier over the case's replay server, with anchors from its recorded blocks.
fn verifier(url: &str, anchors: &FixedAnchors) -> Result<Verifier<FixedAnchors>, String> {
    let upstream = Upstream::new(url, Duration::from_secs(10), MAX_ANSWER)?;
    let beacon = BeaconSource {
        url: url.to_string(),
        spec: ChainSpec::mainnet(),
    };
    Verifier::new(anchors.clone(), upstream, 1, Limits::default()).with_beacon(
        &beacon,
        Duration::from_secs(10),
        MAX_ANSWER,
    )
}

/// What one round samples, one each, the order rotating from round to round.
#[derive(Clone, Copy)]
enum Variant {
    LocalCold,
    LocalWarm,
    ColibriCold,
    ColibriWarm,
    ColibriProve,
    Prove,
    ProofCold,
    ProofWarm,
}

/// Every variant, in the order of the samples' slots.
const VARIANTS: [Variant; 8] = [
    Variant::LocalCold,
    Variant::LocalWarm,
    Variant::ColibriCold,
    Variant::ColibriWarm,
    Variant::ColibriProve,
    Variant::Prove,
    Variant::ProofCold,
    Variant::ProofWarm,
];

/// sszgate's local mode on one case: a replay server of the recording, its first answer and
/// what that fetched, and a verifier kept warm.
struct Local {
    replay: Replay,
    anchors: FixedAnchors,
    warm: Verifier<FixedAnchors>,
    answer: Value,
    /// The bytes of the files the first answer fetched, and how many.
    fetched: (u64, usize),
}

impl Local {
    async fn start(case: &Case) -> Result<Local, String> {
        let anchors = FixedAnchors::from_recorded_blocks(&ChainSpec::mainnet(), &case.dir)?;
        let replay = Replay::start(&case.dir)
            .await
            .map_err(|e| format!("{}: replay server: {e}", case.name))?;
        let answer = verifier(&replay.url(), &anchors)?
            .call(&case.method, &case.params)
            .await
            .map_err(|e| format!("{}: sszgate: {e}", case.name))?;
        Ok(Local {
            warm: verifier(&replay.url(), &anchors)?,
            fetched: fetched(&replay, case),
            replay,
            anchors,
            answer,
        })
    }

    /// After a restart: keys read back, one sync-aggregate check, the method on an empty
    /// verifier.
    async fn cold(&self, case: &Case, bls: &BlsCheck) -> Result<Duration, String> {
        let start = Instant::now();
        bls.cold()?;
        let fresh = verifier(&self.replay.url(), &self.anchors)?;
        fresh
            .call(&case.method, &case.params)
            .await
            .map_err(|e| e.to_string())?;
        Ok(start.elapsed())
    }

    async fn warm(&self, case: &Case) -> Result<Duration, String> {
        let start = Instant::now();
        self.warm
            .call(&case.method, &case.params)
            .await
            .map_err(|e| e.to_string())?;
        Ok(start.elapsed())
    }
}

/// The files `replay` served so far: their bytes, and how many.
fn fetched(replay: &Replay, case: &Case) -> (u64, usize) {
    let served = replay.served();
    let bytes = served
        .iter()
        .filter_map(|name| std::fs::metadata(case.dir.join(name)).ok())
        .map(|m| m.len())
        .sum();
    (bytes, served.len())
}

/// colibri's proof of the case (kept by its peer and in a file), verified once by a new
/// process and once by the peer's client (which the warm samples reuse): the proof's size
/// and the verified result.
fn colibri_first(c: &mut Colibri, case: &Case) -> Result<(Option<usize>, Value), String> {
    let file = c.proof_file(case);
    let proof = c.peer.ask(&colibri_request(case, "prove", Some(&file)))?;
    let (_, verified) = c.verify_cold(case)?;
    c.peer.ask(&colibri_request(case, "verify", Some(&file)))?;
    let size = proof["size"].as_u64().map(|n| n as usize);
    Ok((size, verified["result"].clone()))
}

/// One case set up: each side's first answer, and what the samples reuse.
struct CaseRun<'a> {
    case: &'a Case,
    bls: &'a BlsCheck,
    local: Local,
    colibri: Option<&'a mut Colibri>,
    remote: Result<Remote, RemoteOutcome>,
}

impl CaseRun<'_> {
    /// One sample of `variant`; none when it does not run (no colibri, no proof).
    async fn sample(&mut self, variant: Variant) -> Result<Option<Duration>, String> {
        let case = self.case;
        let (colibri, remote) = (self.colibri.as_deref_mut(), self.remote.as_mut().ok());
        Ok(Some(match (variant, colibri, remote) {
            (Variant::LocalCold, ..) => self.local.cold(case, self.bls).await?,
            (Variant::LocalWarm, ..) => self.local.warm(case).await?,
            (Variant::ColibriCold, Some(c), _) => c.verify_cold(case)?.0,
            (Variant::ColibriWarm, Some(c), _) => {
                c.peer.timed(&colibri_request(case, "verify", None))?.0
            }
            (Variant::ColibriProve, Some(c), _) => {
                let file = c.proof_file(case);
                c.peer
                    .timed(&colibri_request(case, "prove", Some(&file)))?
                    .0
            }
            (Variant::Prove, _, Some(r)) => r.prove().await?,
            (Variant::ProofCold, _, Some(r)) => r.verify_cold()?,
            (Variant::ProofWarm, _, Some(r)) => r.verify_warm()?,
            _ => return Ok(None),
        }))
    }
}

async fn run_case(
    case: &Case,
    bls: &BlsCheck,
    mut colibri: Option<&mut Colibri>,
    options: &Options,
) -> Result<CaseRow, String> {
    let local = Local::start(case).await?;
    let colibri_first = colibri
        .as_deref_mut()
        .map(|c| colibri_first(c, case))
        .transpose()?;
    let remote = Remote::start(case, &options.vectors).await;
    let mut run = CaseRun {
        case,
        bls,
        local,
        colibri,
        remote,
    };
    let mut samples: [Vec<Duration>; VARIANTS.len()] = array::from_fn(|_| Vec::new());
    for round in 0..options.rounds {
        for step in 0..VARIANTS.len() {
            let slot = (step + round) % VARIANTS.len();
            if let Some(took) = run.sample(VARIANTS[slot]).await? {
                samples[slot].push(took);
            }
        }
    }
    case_row(run, colibri_first, samples)
}

/// The row of a case from its setup and samples.
fn case_row(
    run: CaseRun<'_>,
    colibri_first: Option<(Option<usize>, Value)>,
    samples: [Vec<Duration>; VARIANTS.len()],
) -> Result<CaseRow, String> {
    let [cold, warm, c_cold, c_warm, c_prove, prove, p_cold, p_warm] = samples;
    let ran = colibri_first.is_some();
    let optional = |name: &str, s: Vec<Duration>| ran.then(|| summary(name, s));
    let case = run.case;
    let (fetched_bytes, upstream_requests) = run.local.fetched;
    let colibri_result = colibri_first.as_ref().map(|(_, result)| result);
    let colibri_file = run.colibri.as_ref().map(|c| c.proof_file(case));
    let remote = match run.remote {
        Ok(r) => RemoteOutcome::Measured(RemoteRow {
            prove: summary("sszgate prove", prove),
            verify_cold: summary("sszgate verify (proof) cold", p_cold),
            verify_warm: summary("sszgate verify (proof) warm", p_warm),
            proof_bytes: r.proof.len(),
            same_proof: (colibri_file.as_deref())
                .map(|f| remote::same_as_colibri(&r.proof, f))
                .transpose()?,
            agreement: colibri_result.map(|c| proof_agreement(case, &r.answer, c)),
        }),
        Err(outcome) => outcome,
    };
    Ok(CaseRow {
        case: case.name.clone(),
        method: case.method.clone(),
        sszgate_cold: summary("sszgate cold", cold),
        sszgate_warm: summary("sszgate warm", warm),
        colibri_cold: optional("colibri cold", c_cold),
        colibri_warm: optional("colibri warm", c_warm),
        colibri_prove: optional("colibri prove", c_prove),
        fetched_bytes,
        upstream_requests,
        answer_bytes: json!({"jsonrpc": "2.0", "id": 1, "result": case.expected})
            .to_string()
            .len(),
        colibri_proof_bytes: colibri_first.as_ref().and_then(|(size, _)| *size),
        agreement: colibri_result
            .map(|c| sszgate_rpc::colibri::same(&run.local.answer, c, "result")),
        remote,
    })
}

/// sszgate's proof-verified answer against colibri's verified result, less the fields no
/// proof binds (which sszgate's proof verifier does not return).
fn proof_agreement(case: &Case, ours: &Value, colibri: &Value) -> Result<(), String> {
    let bound = remote::bound_fields(&case.method, colibri.clone());
    sszgate_rpc::colibri::same(ours, &bound, "result")
        .map_err(|e| format!("sszgate's proof-verified answer: {e}"))
}

/// `median (p10–p90)` in milliseconds, or `—`.
fn cell(s: Option<&Summary>) -> String {
    match s {
        Some(s) if !s.samples.is_empty() => format!(
            "{} ({}–{})",
            ms(s.median()),
            ms(s.quantile(0.1)),
            ms(s.quantile(0.9))
        ),
        _ => "—".into(),
    }
}

/// `yes`, `no: …`, or `—` when not compared.
fn agreed(agreement: Option<&Result<(), String>>) -> String {
    match agreement {
        None => "—".to_string(),
        Some(Ok(())) => "yes".to_string(),
        Some(Err(e)) => format!("no: {}", e.replace('|', "\\|")),
    }
}

impl RemoteOutcome {
    /// Why there are no figures, as a table cell (`unsupported: …` for a method or case the
    /// prover lacks).
    fn note(&self) -> String {
        let text = match self {
            RemoteOutcome::Measured(_) => return String::new(),
            RemoteOutcome::NotBuilt(why) if why.starts_with("unsupported") => why.clone(),
            RemoteOutcome::NotBuilt(why) => format!("not built: {why}"),
            RemoteOutcome::Refused(why) => format!("no: {why}"),
        };
        text.replace('|', "\\|")
    }
}

impl Report {
    /// The report as Markdown: the local-mode timing table, the BLS rows, the remote-mode
    /// (proof) timing table and the transfer sizes.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "{} rounds per case, the variants interleaved. Times in ms, median (p10–p90).\n\
             colibri: {}.\n\n",
            self.rounds,
            match &self.colibri {
                Ok(p) => format!("npm @corpus-core/colibri-stateless (WASM) from {p}"),
                Err(why) => format!("not run: {why}"),
            }
        );
        out += &self.local_table();
        out += &format!(
            "\nBLS sync-aggregate check ({BLS_CASE}'s head over its parent): a committee first learned (512 keys decompressed and subgroup-checked) {}; after a restart (keys read back from the saved state) {}; warm (keys in memory) {}.\n\n",
            cell(Some(&self.bls_first)),
            cell(Some(&self.bls_cold)),
            cell(Some(&self.bls_warm))
        );
        out += &self.remote_table();
        out += &self.sizes_table();
        out
    }

    /// Local mode: sszgate's verifier fetching the standard answers, next to colibri.
    fn local_table(&self) -> String {
        let mut out = "| case | method | sszgate cold | sszgate warm | colibri verify cold | colibri verify warm | colibri prove | same answer |\n|---|---|---:|---:|---:|---:|---:|---|\n".to_string();
        for r in &self.rows {
            out += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.case,
                r.method,
                cell(Some(&r.sszgate_cold)),
                cell(Some(&r.sszgate_warm)),
                cell(r.colibri_cold.as_ref()),
                cell(r.colibri_warm.as_ref()),
                cell(r.colibri_prove.as_ref()),
                agreed(r.agreement.as_ref())
            );
        }
        out
    }

    /// Remote mode: sszgate's prover and proof verifier next to colibri's.
    fn remote_table(&self) -> String {
        let mut out = "Remote mode (proofs): sszgate's prover building the proof from the recording's replay server; sszgate's proof verifier on it cold (a new trusted state read from its saved keys file, as a restarted `sszgate rpc --prover` reads it, and the recorded contract code) and warm (the same state again, its checked signatures remembered); colibri as above, on its own proof.\n\n| case | method | sszgate prove | colibri prove | sszgate verify cold | sszgate verify warm | colibri verify cold | colibri verify warm | same answer |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n".to_string();
        for r in &self.rows {
            let measured = match &r.remote {
                RemoteOutcome::Measured(m) => Some(m),
                _ => None,
            };
            out += &format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.case,
                r.method,
                cell(measured.map(|m| &m.prove)),
                cell(r.colibri_prove.as_ref()),
                cell(measured.map(|m| &m.verify_cold)),
                cell(measured.map(|m| &m.verify_warm)),
                cell(r.colibri_cold.as_ref()),
                cell(r.colibri_warm.as_ref()),
                measured.map_or_else(|| r.remote.note(), |m| agreed(m.agreement.as_ref()))
            );
        }
        out
    }

    /// Bytes on the wire: the plain answer, what the local mode fetched, the two proofs.
    fn sizes_table(&self) -> String {
        let mut out = "\n| case | method | plain JSON-RPC answer, bytes | sszgate local mode fetched, bytes (requests) | sszgate proof, bytes | colibri proof, bytes | same proof bytes |\n|---|---|---:|---:|---:|---:|---|\n".to_string();
        let number = |n: Option<usize>| n.map_or("—".into(), |n| n.to_string());
        for r in &self.rows {
            let (ours, same) = match &r.remote {
                RemoteOutcome::Measured(m) => (
                    Some(m.proof_bytes),
                    match m.same_proof {
                        None => "—".to_string(),
                        Some(same) => if same { "yes" } else { "no" }.to_string(),
                    },
                ),
                other => (None, other.note()),
            };
            out += &format!(
                "| {} | {} | {} | {} ({}) | {} | {} | {} |\n",
                r.case,
                r.method,
                r.answer_bytes,
                r.fetched_bytes,
                r.upstream_requests,
                number(ours),
                number(r.colibri_proof_bytes),
                same
            );
        }
        out
    }

    /// Cases where sszgate's and colibri's answers differ (local mode, or sszgate's proof
    /// verified), or where sszgate's verifier refused sszgate's proof.
    pub fn disagreements(&self) -> Vec<(&str, &str)> {
        let mut out = Vec::new();
        for r in &self.rows {
            if let Some(Err(e)) = &r.agreement {
                out.push((r.case.as_str(), e.as_str()));
            }
            match &r.remote {
                RemoteOutcome::Measured(RemoteRow {
                    agreement: Some(Err(e)),
                    ..
                })
                | RemoteOutcome::Refused(e) => out.push((r.case.as_str(), e.as_str())),
                _ => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_colibri_peer_script_holds_no_relative_import() {
        let script = super::colibri_peer_script();
        assert!(!script.contains("from './"), "a relative import is left");
        assert!(script.contains("function mockname(req)"));
        assert!(!script.contains("export function mockname"));
    }

    use super::one_line;

    #[test]
    fn one_line_keeps_strings_and_key_order() {
        let text = "[\n  {\"to\": \"0xA b\",\n   \"data\": \"q\\\" x\"},\n  true\n]";
        assert_eq!(one_line(text), r#"[{"to":"0xA b","data":"q\" x"},true]"#);
    }
}
