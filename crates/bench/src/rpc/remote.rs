//! sszgate's remote (proof) mode in `sszgate bench rpc`: its prover building a case's proof
//! from a replay server of the recording, and its proof verifier checking that proof on a
//! fresh trusted state (cold) and on the same state again (warm); the proof's size, whether it
//! equals colibri's proof byte for byte, and whether its verified answer agrees with
//! colibri's.
//!
//! A cold verification is what a restarted `sszgate rpc --prover` pays: a new `TrustedState`
//! read from its saved keys file (`TrustedState::load`: the committee's keys uncompressed,
//! each checked to be the committee's), the recording's contract code (what colibri's storage
//! holds), then the proof — with nothing cached, so the signature is checked.
//!
//! Not here: the prover or the verifier (`sszgate-proof`); colibri's side (the parent module).

use std::{
    collections::BTreeMap,
    path::Path,
    time::{Duration, Instant},
};

use alloy_primitives::{B256, Bytes};
use serde_json::Value;
use sszgate_fixtures::replay::Replay;
use sszgate_light::{ChainSpec, types::SyncCommittee};
use sszgate_proof::{
    Check, TrustedState,
    prover::Prover,
    receipts::{UNBOUND_LOG_FIELDS, UNBOUND_RECEIPT_FIELDS},
    tags::{Clock, replay_clock},
};

use super::{
    Case, MAX_RECORDED, RemoteOutcome, files_starting, named_files_starting, read_bytes_bounded,
    synced_store,
};

/// The largest proof of colibri's read back to compare.
const MAX_PROOF: u64 = 64 << 20;
/// The size of a committee's saved keys: 512 compressed keys.
const MAX_KEYS: u64 = 512 * 48;

/// What a restarted verifier loads before its first proof.
struct TrustSource {
    period: u64,
    /// The committee's 512 keys, compressed, as the vector gives them.
    keys: Vec<u8>,
    checkpoint: Option<B256>,
    codes: Vec<Bytes>,
    /// The recording's time (`latest` is checked against it, as `sszgate rpc --clock` does).
    clock: Clock,
    /// The keys saved by `TrustedState::save`, once they verified the proof.
    saved: Option<std::path::PathBuf>,
}

impl TrustSource {
    /// A new trusted state from the keys (decompressed), checkpoint, code and clock.
    fn fresh(&self) -> Result<TrustedState, String> {
        let mut trust = TrustedState::new(ChainSpec::mainnet());
        trust.freshness.clock = self.clock;
        trust.checkpoint = self.checkpoint;
        trust
            .add_committee_keys(self.period, &self.keys)
            .map_err(|e| e.to_string())?;
        for code in &self.codes {
            trust.add_code(code.clone());
        }
        Ok(trust)
    }

    /// Saves the keys as `sszgate rpc --prover` keeps them, for [`TrustSource::state`].
    fn save(&mut self) -> Result<(), String> {
        let path = std::env::temp_dir().join(format!(
            "sszgate-bench-keys-{}-{}-{}.bin",
            std::process::id(),
            self.period,
            SAVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        self.fresh()?
            .save(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        self.saved = Some(path);
        Ok(())
    }

    /// A restarted verifier's state: the saved keys read back, and the code.
    fn state(&self) -> Result<TrustedState, String> {
        let Some(path) = &self.saved else {
            return self.fresh();
        };
        let mut trust = TrustedState::load(ChainSpec::mainnet(), path)?;
        trust.freshness.clock = self.clock;
        for code in &self.codes {
            trust.add_code(code.clone());
        }
        Ok(trust)
    }
}

/// Saved key files made by this process, to name each apart.
static SAVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Drop for TrustSource {
    fn drop(&mut self) {
        if let Some(path) = &self.saved {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// sszgate's prover and proof verifier on one case, set up.
pub(super) struct Remote {
    /// Serves the prover; kept running for the samples.
    _replay: Replay,
    prover: Prover,
    method: String,
    params: Value,
    /// The proof built first; every sample must build it again.
    pub(super) proof: Vec<u8>,
    /// The answer the first cold verification returned.
    pub(super) answer: Value,
    source: TrustSource,
    warm: TrustedState,
}

impl Remote {
    /// Builds the case's proof once and verifies it cold; `Err`: why there are no remote
    /// figures (the prover built no proof, or the verifier refused it).
    pub(super) async fn start(case: &Case, vectors: &Path) -> Result<Remote, RemoteOutcome> {
        let not_built = |e: String| RemoteOutcome::NotBuilt(e);
        let replay = Replay::start(&case.dir)
            .await
            .map_err(|e| not_built(format!("replay server: {e}")))?;
        let url = replay.url();
        let prover = Prover::new(&url, &url, Duration::from_secs(10))
            .map_err(|e| not_built(e.to_string()))?;
        let params = Value::Array(case.params.clone());
        let proof = prover.prove(&case.method, &params).await.map_err(|e| {
            let missing = replay.missing();
            not_built(match missing.is_empty() {
                true => e.to_string(),
                false => format!("{e} (not in the recording: {})", missing.join(", ")),
            })
        })?;
        let (source, answer) =
            trust_for(case, vectors, &proof, &params).map_err(RemoteOutcome::Refused)?;
        let warm = source.state().map_err(RemoteOutcome::Refused)?;
        Ok(Remote {
            _replay: replay,
            prover,
            method: case.method.clone(),
            params,
            proof,
            answer,
            warm,
            source,
        })
    }

    /// One proof built again: its time (it must equal the first).
    pub(super) async fn prove(&self) -> Result<Duration, String> {
        let start = Instant::now();
        let proof = self
            .prover
            .prove(&self.method, &self.params)
            .await
            .map_err(|e| e.to_string())?;
        let took = start.elapsed();
        if proof != self.proof {
            return Err("sszgate's prover built a different proof of the same request".into());
        }
        Ok(took)
    }

    /// One verification by a restarted verifier: the keys loaded, then the proof.
    pub(super) fn verify_cold(&self) -> Result<Duration, String> {
        let start = Instant::now();
        let mut trust = self.source.state()?;
        sszgate_proof::verify(&self.proof, &self.method, &self.params, &mut trust)
            .map_err(|e| e.to_string())?;
        Ok(start.elapsed())
    }

    /// The proof verified again with the same trusted state.
    pub(super) fn verify_warm(&mut self) -> Result<Duration, String> {
        let start = Instant::now();
        sszgate_proof::verify(&self.proof, &self.method, &self.params, &mut self.warm)
            .map_err(|e| e.to_string())?;
        Ok(start.elapsed())
    }
}

/// The trust that verifies `proof`: the keys of the period it is signed in (of the
/// candidates, the period whose keys verify, newest first), the case's checkpoint and
/// recorded contract code; and the answer. `Err`: why sszgate's verifier refused sszgate's
/// proof.
fn trust_for(
    case: &Case,
    vectors: &Path,
    proof: &[u8],
    params: &Value,
) -> Result<(TrustSource, Value), String> {
    let refused =
        |e: &dyn std::fmt::Display| format!("sszgate's verifier refused sszgate's proof: {e}");
    let candidates = candidate_keys(case, vectors).map_err(|e| refused(&e))?;
    let codes = codes(&case.dir)?;
    let checkpoint = (case.checkpoint.as_deref().map(str::parse::<B256>))
        .transpose()
        .map_err(|e| format!("trusted_blockhash: {e}"))?;
    let decoded = sszgate_proof::decode(proof).map_err(|e| refused(&e))?;
    let clock = replay_clock(&ChainSpec::mainnet(), &decoded.proof).unwrap_or_default();
    let mut why = "no committee keys for the case".to_string();
    for (period, keys) in candidates.into_iter().rev() {
        let mut source = TrustSource {
            period,
            keys,
            checkpoint,
            codes: codes.clone(),
            clock,
            saved: None,
        };
        match sszgate_proof::verify(proof, &case.method, params, &mut source.fresh()?) {
            Ok(answer) => {
                source.save()?;
                return Ok((source, answer));
            }
            Err(e) if e.check() == Some(Check::Committee) => why = e.to_string(),
            Err(e) => return Err(refused(&e)),
        }
    }
    Err(refused(&why))
}

/// The committee keys (512 compressed each) the case's proof may be signed with, by period:
/// those of colibri's vector of the case (`sync_committee_<period>.pubkeys`, the trust its
/// verifier was given), else the committees the recording's bootstrap and updates prove
/// (some recordings hold no usable bootstrap).
fn candidate_keys(case: &Case, vectors: &Path) -> Result<BTreeMap<u64, Vec<u8>>, String> {
    let dir = vectors.join(&case.name);
    let prefix = "sync_committee_";
    let saved = match dir.is_dir() {
        true => named_files_starting(&dir, prefix, MAX_KEYS)?,
        false => Vec::new(),
    };
    let mut out = BTreeMap::new();
    for (name, keys) in saved {
        let period = name[prefix.len()..].trim_end_matches(".pubkeys").parse();
        out.insert(period.map_err(|e| format!("{name}: {e}"))?, keys);
    }
    if out.is_empty() {
        for (period, committee) in committees(&case.dir)? {
            out.insert(period, committee.pubkeys.iter().flat_map(|k| k.0).collect());
        }
    }
    Ok(out)
}

/// Each period's sync committee that the recording's bootstrap and updates prove.
fn committees(dir: &Path) -> Result<BTreeMap<u64, SyncCommittee>, String> {
    let mut out = BTreeMap::new();
    synced_store(&ChainSpec::mainnet(), dir, &mut |store| {
        let period = store.finalized_period();
        out.insert(period, store.current_sync_committee().clone());
        if let Some(next) = store.next_sync_committee() {
            out.insert(period + 1, next.clone());
        }
    })?;
    Ok(out)
}

/// The contract code the recording holds (`code_<hash>`, colibri's storage).
fn codes(dir: &Path) -> Result<Vec<Bytes>, String> {
    let codes = files_starting(dir, "code_", MAX_RECORDED)?;
    Ok(codes.into_iter().map(Bytes::from).collect())
}

/// Whether `proof` equals colibri's proof saved at `file`.
pub(super) fn same_as_colibri(proof: &[u8], file: &Path) -> Result<bool, String> {
    Ok(read_bytes_bounded(file, MAX_PROOF)? == proof)
}

/// colibri's verified result without what sszgate's proof verifier leaves out because no
/// proof binds it (`sszgate_proof::receipts`): a receipt's gas used and effective gas price,
/// its logs' index. eth_getLogs's logs keep theirs: sszgate's range proof binds it (and the
/// proof then differs from colibri's, whose verifier does not read that form).
pub(super) fn bound_fields(method: &str, mut result: Value) -> Value {
    let strip = |v: &mut Value, fields: &[&str]| {
        if let Some(o) = v.as_object_mut() {
            for field in fields {
                o.remove(*field);
            }
        }
    };
    let logs = match method {
        "eth_getTransactionReceipt" => {
            strip(&mut result, &UNBOUND_RECEIPT_FIELDS);
            result.get_mut("logs")
        }
        _ => None,
    };
    if let Some(Value::Array(logs)) = logs {
        logs.iter_mut()
            .for_each(|log| strip(log, &UNBOUND_LOG_FIELDS));
    }
    result
}
