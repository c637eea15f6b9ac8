//! The verified-RPC benchmark (`sszgate bench rpc`): on every recorded mainnet case
//! (`shared/data/colibri/`), the time sszgate's verifier takes to answer, cold and warm, next
//! to colibri.stateless verifying its own proof of the same request (its npm package, a child
//! process driven by `scripts/colibri-peer.mjs`) in the same rounds; the BLS sync-aggregate
//! check alone; what crossed the wire for each; and whether the two answers agree.
//!
//! Not here: the verifier (`sszgate-rpc`) or the light client (`sszgate-light`).

use std::{
    io::{BufRead, BufReader, Read, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, ChildStdout, Command, Stdio},
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
use sszgate_rpc::{FixedAnchors, Limits, Upstream, Verifier};

use crate::harness::{Summary, machine, ms};

/// The colibri peer's script, written to node's `-e` (so the binary needs no file beside it).
const COLIBRI_PEER: &str = include_str!("../../../scripts/colibri-peer.mjs");
/// The longest line the colibri peer may answer with (a 170-transaction block is ~200 kB).
const MAX_PEER_LINE: u64 = 64 << 20;
/// The largest upstream answer the verifier takes.
const MAX_ANSWER: usize = 64 << 20;
/// The largest `test.json` read (the 170-transaction block's is ~0.4 MB).
const MAX_TEST_JSON: u64 = 16 << 20;
/// The case whose recorded sync aggregate the BLS rows check.
const BLS_CASE: &str = "eth_blockNumber_electra";

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The recorded cases (`shared/data/colibri`).
    pub data: PathBuf,
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
    pub proof_bytes: Option<usize>,
    /// Whether sszgate's answer and colibri's verified result agree (`None`: colibri did not
    /// run); the difference when they do not.
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
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = String::new();
    file.take(max + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if text.len() as u64 > max {
        return Err(format!("{}: larger than {max} bytes", path.display()));
    }
    Ok(text)
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
        let store = synced_store(&spec, dir)?;
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
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(AnyBlock::from_ssz(spec, &bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .summary())
}

/// The files of `dir` whose names start with `prefix`, in name order.
fn files_starting(dir: &Path, prefix: &str) -> Result<Vec<Vec<u8>>, String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    if names.is_empty() {
        return Err(format!("{}: no {prefix}* file", dir.display()));
    }
    names.sort();
    names
        .iter()
        .map(|name| std::fs::read(dir.join(name)).map_err(|e| format!("{name}: {e}")))
        .collect()
}

/// The case's bootstrap with every recorded update applied.
fn synced_store(spec: &ChainSpec, dir: &Path) -> Result<LightClientStore, String> {
    let bytes = files_starting(dir, "eth_v1_beacon_light_client_bootstrap_")?.remove(0);
    let bootstrap = Bootstrap::from_ssz(spec, &bytes).map_err(|e| e.to_string())?;
    let mut store =
        LightClientStore::bootstrap(spec.clone(), bootstrap.header.beacon.root(), &bootstrap)
            .map_err(|e| e.to_string())?;
    for updates in files_starting(dir, "eth_v1_beacon_light_client_updates_")? {
        for item in split_update_stream(&updates, 128).map_err(|e| e.to_string())? {
            let update = Update::from_ssz(spec, item).map_err(|e| e.to_string())?;
            if spec.period(update.attested_header.beacon.slot) >= store.finalized_period() {
                store
                    .process_update(&update, u64::MAX / 2)
                    .map_err(|e| e.to_string())?;
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
            .args(["--input-type=module", "-e", COLIBRI_PEER])
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
        let proofs = std::env::temp_dir().join(format!("sszgate-bench-rpc-{}", std::process::id()));
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
        let row = runtime.block_on(run_case(&case, &bls, colibri.as_mut().ok(), options.rounds))?;
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
    let upstream = Upstream::new(url, Some(url), Duration::from_secs(10), MAX_ANSWER)?;
    Ok(Verifier::new(
        anchors.clone(),
        upstream,
        1,
        Limits::default(),
    ))
}

/// Samples of one case, the variants interleaved in rotating order.
#[derive(Default)]
struct CaseSamples {
    sszgate_cold: Vec<Duration>,
    sszgate_warm: Vec<Duration>,
    colibri_cold: Vec<Duration>,
    colibri_warm: Vec<Duration>,
    colibri_prove: Vec<Duration>,
}

async fn run_case(
    case: &Case,
    bls: &BlsCheck,
    mut colibri: Option<&mut Colibri>,
    rounds: usize,
) -> Result<CaseRow, String> {
    let anchors = FixedAnchors::from_recorded_blocks(&ChainSpec::mainnet(), &case.dir)?;
    let replay = Replay::start(&case.dir)
        .await
        .map_err(|e| format!("{}: replay server: {e}", case.name))?;
    let url = replay.url();
    // One cold answer first: what it fetched, and the answer to compare.
    let ours = verifier(&url, &anchors)?
        .call(&case.method, &case.params)
        .await
        .map_err(|e| format!("{}: sszgate: {e}", case.name))?;
    let served = replay.served();
    let fetched_bytes = served
        .iter()
        .filter_map(|name| std::fs::metadata(case.dir.join(name)).ok())
        .map(|m| m.len())
        .sum();
    let (proof_bytes, agreement) = match colibri.as_deref_mut() {
        Some(c) => {
            let file = c.proof_file(case);
            let proof = c.peer.ask(&colibri_request(case, "prove", Some(&file)))?;
            let (_, verified) = c.verify_cold(case)?;
            // The warm client of the peer process, for the warm samples.
            c.peer.ask(&colibri_request(case, "verify", Some(&file)))?;
            let agreement = sszgate_rpc::colibri::same(&ours, &verified["result"], "result");
            (proof["size"].as_u64().map(|n| n as usize), Some(agreement))
        }
        None => (None, None),
    };
    let warm = verifier(&url, &anchors)?;
    let mut samples = CaseSamples::default();
    for round in 0..rounds {
        for step in 0..5 {
            match (step + round) % 5 {
                0 => {
                    let start = Instant::now();
                    bls.cold()?;
                    let fresh = verifier(&url, &anchors)?;
                    fresh
                        .call(&case.method, &case.params)
                        .await
                        .map_err(|e| e.to_string())?;
                    samples.sszgate_cold.push(start.elapsed());
                }
                1 => {
                    let start = Instant::now();
                    warm.call(&case.method, &case.params)
                        .await
                        .map_err(|e| e.to_string())?;
                    samples.sszgate_warm.push(start.elapsed());
                }
                n => {
                    let Some(c) = colibri.as_deref_mut() else {
                        continue;
                    };
                    match n {
                        2 => samples.colibri_cold.push(c.verify_cold(case)?.0),
                        3 => samples
                            .colibri_warm
                            .push(c.peer.timed(&colibri_request(case, "verify", None))?.0),
                        _ => {
                            let file = c.proof_file(case);
                            let request = colibri_request(case, "prove", Some(&file));
                            samples.colibri_prove.push(c.peer.timed(&request)?.0);
                        }
                    }
                }
            }
        }
    }
    let ran = colibri.is_some();
    let optional = |name: &str, s: Vec<Duration>| ran.then(|| summary(name, s));
    Ok(CaseRow {
        case: case.name.clone(),
        method: case.method.clone(),
        sszgate_cold: summary("sszgate cold", samples.sszgate_cold),
        sszgate_warm: summary("sszgate warm", samples.sszgate_warm),
        colibri_cold: optional("colibri cold", samples.colibri_cold),
        colibri_warm: optional("colibri warm", samples.colibri_warm),
        colibri_prove: optional("colibri prove", samples.colibri_prove),
        fetched_bytes,
        upstream_requests: served.len(),
        answer_bytes: json!({"jsonrpc": "2.0", "id": 1, "result": case.expected})
            .to_string()
            .len(),
        proof_bytes,
        agreement,
    })
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

impl Report {
    /// The report as Markdown: the timing table, the sizes table, the BLS rows, the machine.
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
        out += "| case | method | sszgate cold | sszgate warm | colibri verify cold | colibri verify warm | colibri prove | same answer |\n|---|---|---:|---:|---:|---:|---:|---|\n";
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
                match &r.agreement {
                    None => "—".to_string(),
                    Some(Ok(())) => "yes".to_string(),
                    Some(Err(e)) => format!("no: {e}"),
                }
            );
        }
        out += &format!(
            "\nBLS sync-aggregate check ({BLS_CASE}'s head over its parent): a committee first learned (512 keys decompressed and subgroup-checked) {}; after a restart (keys read back from the saved state) {}; warm (keys in memory) {}.\n\n",
            cell(Some(&self.bls_first)),
            cell(Some(&self.bls_cold)),
            cell(Some(&self.bls_warm))
        );
        out += "| case | plain JSON-RPC answer, bytes | sszgate fetched, bytes (requests) | colibri proof, bytes |\n|---|---:|---:|---:|\n";
        for r in &self.rows {
            out += &format!(
                "| {} | {} | {} ({}) | {} |\n",
                r.case,
                r.answer_bytes,
                r.fetched_bytes,
                r.upstream_requests,
                r.proof_bytes.map_or("—".into(), |n| n.to_string())
            );
        }
        out
    }

    /// Cases where sszgate's and colibri's answers differ.
    pub fn disagreements(&self) -> Vec<(&str, &str)> {
        self.rows
            .iter()
            .filter_map(|r| match &r.agreement {
                Some(Err(e)) => Some((r.case.as_str(), e.as_str())),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn one_line_keeps_strings_and_key_order() {
        let text = "[\n  {\"to\": \"0xA b\",\n   \"data\": \"q\\\" x\"},\n  true\n]";
        assert_eq!(one_line(text), r#"[{"to":"0xA b","data":"q\" x"},true]"#);
    }
}
