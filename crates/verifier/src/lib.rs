//! The embeddable proof verifier: what a wallet, an extension or a device links to check a
//! prover's answers without a node. One facade over `sszgate-proof`'s verification core, the
//! same core `sszgate rpc --prover` runs: options as JSON (the chain, a trusted checkpoint,
//! the participation rule, a fixed clock), the trust state (committee keys per period) as
//! bytes the application keeps wherever it likes, and `verify(method, params, proof)`
//! returning the verified JSON-RPC result or an error naming the check.
//!
//! The caller gives the clock (`now`, Unix seconds) with every call: an embedded target may
//! have no system clock (wasm32), and a replay of recorded proofs fixes it.
//!
//! Not here: fetching proofs (the JS package's provider and the C caller do that), bindings
//! (`sszgate-verifier-wasm`, `sszgate-verifier-c`).

use alloy_primitives::B256;
use serde_json::Value;
use sszgate_exec::{ForkSchedule, parse_bpo};
use sszgate_light::{ChainSpec, ParticipationPolicy};
use sszgate_proof::tags::Clock;
use sszgate_proof::trust::known_chain_id;
use sszgate_proof::{ProofError, TrustedState};

/// Saved trust state read in parts: [`Verifier::with_options`] takes one.
pub use sszgate_proof::trust::SavedState;

/// Why a verifier could not be made, or an answer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifierError {
    /// The options or the saved state are not usable; says which and why.
    #[error("options: {0}")]
    Options(String),
    /// The params are not JSON or not a list.
    #[error("params: {0}")]
    Params(String),
    /// The proof was refused: `check` names the check that failed (`None` for a decode,
    /// parameter or unsupported-method error).
    #[error("{message}")]
    Refused {
        /// The failed check's name, as `sszgate rpc --prover` reports it.
        check: Option<String>,
        /// What failed.
        message: String,
    },
}

impl From<ProofError> for VerifierError {
    fn from(e: ProofError) -> VerifierError {
        VerifierError::Refused {
            check: e.check().map(|c| c.name().to_string()),
            message: e.to_string(),
        }
    }
}

/// A proof verifier for one chain, holding the committee keys it has learned.
#[derive(Debug)]
pub struct Verifier {
    trust: TrustedState,
    /// The clock fixed by the options, else the caller's `now` is used.
    fixed_now: Option<u64>,
}

fn option_err(e: impl std::fmt::Display) -> VerifierError {
    VerifierError::Options(e.to_string())
}

/// The chain named by the options' `network`: a built-in name, or an object with the Beacon
/// API's `config` and `genesis` data, the execution `chainId` and an optional `blobSchedule`
/// (`TIME:TARGET:MAX:FRACTION,…`).
fn chain(network: &Value) -> Result<(ChainSpec, u64, ForkSchedule), VerifierError> {
    match network {
        Value::Null => chain(&Value::from("mainnet")),
        Value::String(name) => {
            let spec = match name.as_str() {
                "mainnet" => ChainSpec::mainnet(),
                "sepolia" => ChainSpec::sepolia(),
                "hoodi" => ChainSpec::hoodi(),
                other => {
                    return Err(option_err(format!(
                        "network `{other}`: mainnet, sepolia, hoodi or a custom chain object expected"
                    )));
                }
            };
            let id = known_chain_id(name).unwrap_or(1);
            Ok((spec, id, ForkSchedule::for_chain(id)))
        }
        Value::Object(_) => {
            // Indexing a `Value` (not its map) answers `Null` for a missing key.
            let o = network;
            let (config, genesis) = (&o["config"], &o["genesis"]);
            let spec = ChainSpec::from_beacon_api(config, genesis)
                .map_err(|e| option_err(format!("network: {e}")))?;
            let id = o["chainId"]
                .as_u64()
                .ok_or_else(|| option_err("network.chainId: a number is required"))?;
            let bpo = match &o["blobSchedule"] {
                Value::Null => Vec::new(),
                Value::String(text) => parse_bpo(text).map_err(option_err)?,
                _ => return Err(option_err("network.blobSchedule: a string expected")),
            };
            let forks =
                ForkSchedule::for_chain_or_consensus(id, spec.execution_fork_times()).with_bpo(bpo);
            Ok((spec, id, forks))
        }
        _ => Err(option_err("network: a name or an object expected")),
    }
}

/// An optional number option.
fn number(options: &Value, key: &str) -> Result<Option<u64>, VerifierError> {
    match &options[key] {
        Value::Null => Ok(None),
        v => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| option_err(format!("{key}: a non-negative integer expected"))),
    }
}

/// A verifier's options, read and checked once: the trust a verifier starts from (chain, fork
/// table, rules; no keys), the checkpoint they name and the fixed clock. An application that
/// makes many verifiers with the same options keeps one (the WASM package does: reading them
/// anew, JSON and the chain's parameters and fork table, was a sixth of a verifier's making
/// from saved state in Node).
#[derive(Debug, Clone)]
pub struct Options {
    trust: TrustedState,
    checkpoint: Option<B256>,
    fixed_now: Option<u64>,
}

impl Options {
    /// Reads `options` (JSON text: `network`, `checkpoint`, `now`, `maxHeadAge`,
    /// `minParticipation`, `acceptIncompleteLogs`; see [`Verifier::new`]).
    pub fn parse(options: &str) -> Result<Options, VerifierError> {
        let options: Value = serde_json::from_str(options).map_err(option_err)?;
        if !options.is_object() {
            return Err(option_err("an object expected"));
        }
        let (spec, chain_id, forks) = chain(&options["network"])?;
        let mut trust = TrustedState::new(spec);
        let checkpoint = match &options["checkpoint"] {
            Value::Null => None,
            Value::String(hex) => Some(
                hex.parse()
                    .map_err(|e| option_err(format!("checkpoint: {e}")))?,
            ),
            _ => return Err(option_err("checkpoint: a 0x-prefixed block root expected")),
        };
        trust.chain_id = chain_id;
        trust.forks = forks;
        if let Some(age) = number(&options, "maxHeadAge")? {
            trust.freshness.max_head_age = age;
        }
        if let Some(min) = number(&options, "minParticipation")? {
            let policy = ParticipationPolicy::new(min as usize).map_err(option_err)?;
            trust = trust.with_participation(policy);
        }
        match &options["acceptIncompleteLogs"] {
            Value::Null => {}
            Value::Bool(accept) => trust.accept_incomplete_logs = *accept,
            _ => return Err(option_err("acceptIncompleteLogs: true or false expected")),
        }
        let fixed_now = number(&options, "now")?;
        Ok(Options {
            trust,
            checkpoint,
            fixed_now,
        })
    }
}

impl Verifier {
    /// A verifier made from `options` (JSON: `network`, `checkpoint`, `now`, `maxHeadAge`,
    /// `minParticipation`, `acceptIncompleteLogs`: take eth_getLogs in colibri's form, which
    /// cannot show that no block was left out, as `sszgate rpc --accept-incomplete-logs`) and,
    /// when given, a `state` saved by [`Verifier::save_state`]. It needs a checkpoint or a
    /// state: without either it could trust nothing.
    pub fn new(options: &str, state: Option<&[u8]>) -> Result<Verifier, VerifierError> {
        let saved = state.as_ref().map(|s| s as &dyn SavedState);
        Verifier::with_options(&Options::parse(options)?, saved)
    }

    /// [`Verifier::new`] with options read before, and the saved state read in parts (the
    /// WASM package reads a JS array's entries only when the process has not read them
    /// before).
    pub fn with_options(
        options: &Options,
        state: Option<&dyn SavedState>,
    ) -> Result<Verifier, VerifierError> {
        let mut trust = options.trust.clone();
        if let Some(saved) = state {
            trust
                .load_saved(saved)
                .map_err(|e| option_err(format!("state: {e}")))?;
        }
        if options.checkpoint.is_some() {
            trust.checkpoint = options.checkpoint;
        }
        if trust.checkpoint.is_none() && trust.periods().is_empty() {
            return Err(option_err(
                "a checkpoint (a trusted finalized beacon block root) or a saved state is needed",
            ));
        }
        Ok(Verifier {
            trust,
            fixed_now: options.fixed_now,
        })
    }

    /// Verifies `proof` for `method(params)` (params as JSON text, a list) at `now` (Unix
    /// seconds; ignored when the options fixed the clock): the verified result as JSON text.
    /// Sync data in the proof adds committee keys (see [`Verifier::save_state`]).
    pub fn verify(
        &mut self,
        method: &str,
        params: &str,
        proof: &[u8],
        now: u64,
    ) -> Result<String, VerifierError> {
        let params: Value =
            serde_json::from_str(params).map_err(|e| VerifierError::Params(e.to_string()))?;
        if !params.is_array() {
            return Err(VerifierError::Params("a list expected".into()));
        }
        self.trust.freshness.clock = Clock::Fixed(self.fixed_now.unwrap_or(now));
        let result = sszgate_proof::verify(proof, method, &params, &mut self.trust)?;
        Ok(result.to_string())
    }

    /// The trust state as bytes (checkpoint and committee keys): give it back to
    /// [`Verifier::new`] to start where this verifier is.
    pub fn save_state(&self) -> Vec<u8> {
        self.trust.to_bytes()
    }

    /// What to tell a prover about this verifier (`c4`, spec §8.3): the periods whose keys it
    /// holds, else its checkpoint, so that the prover adds the sync data it lacks.
    pub fn client_state(&self) -> Vec<u8> {
        self.trust.client_state().to_bytes()
    }

    /// Trusts `keys` (512 compressed BLS keys, 48 bytes each) as the sync committee of
    /// `period`, without sync data: only for keys from a source as trusted as a checkpoint
    /// (recorded test data, the application's own light client).
    pub fn add_committee_keys(&mut self, period: u64, keys: &[u8]) -> Result<(), VerifierError> {
        Ok(self.trust.add_committee_keys(period, keys)?)
    }

    /// Knows `code` by its hash, for eth_call proofs that leave it out (a prover does when the
    /// client said it has it). Code is checked against the proven code hash when used, so any
    /// source will do.
    pub fn add_code(&mut self, code: &[u8]) {
        self.trust.add_code(code.to_vec().into());
    }

    /// The sync-committee periods whose keys the verifier holds.
    pub fn periods(&self) -> Vec<u64> {
        self.trust.periods()
    }
}

/// The methods a proof can answer; any other is refused, never passed through.
pub const METHODS: &[&str] = sszgate_proof::verify::METHODS;

#[cfg(test)]
mod tests {
    use super::Options;

    /// Each option is read into the value a verifier starts from.
    #[test]
    fn options_are_read_into_the_trust_a_verifier_starts_from() {
        let a = r#"{"network":"mainnet","maxHeadAge":7,"now":11}"#;
        let b = r#"{"network":"sepolia","maxHeadAge":9,"acceptIncompleteLogs":true}"#;
        for (text, age, chain_id, now, incomplete) in
            [(a, 7, 1, Some(11), false), (b, 9, 11_155_111, None, true)]
        {
            let options = Options::parse(text).unwrap();
            assert_eq!(options.trust.freshness.max_head_age, age, "{text}");
            assert_eq!(options.trust.chain_id, chain_id, "{text}");
            assert_eq!(options.trust.accept_incomplete_logs, incomplete, "{text}");
            assert_eq!(options.fixed_now, now, "{text}");
        }
        let err = Options::parse(r#"{"network":"mainnet","maxHeadAge":-1}"#).unwrap_err();
        assert!(err.to_string().contains("maxHeadAge"), "{err}");
    }
}
