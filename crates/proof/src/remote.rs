//! The verifier of a remote prover (`sszgate rpc --prover URL`): each request is sent to the
//! prover with what this verifier already trusts (the `c4` client state), the proof that
//! comes back is checked ([`crate::verify`]) and only its verified result is answered.
//!
//! It keeps what the spec's verifier keeps (§8.3): sync-committee keys per period (saved to a
//! file when they change, so a restart needs no sync data), a checkpoint until the first
//! bootstrap, and a small cache of checked signatures. eth_call asks for the code of the
//! accounts it runs in every proof (no code cache across requests).
//!
//! Not here: the checks (`verify` and its modules), HTTP serving (`sszgate-rpc`).

use std::{path::PathBuf, sync::Mutex, time::Duration};

use serde_json::{Value, json};
use sszgate_rpc::{Answerer, Check as RpcCheck, Mismatch, RpcError, Upstream, UpstreamError};

use crate::ProofError;
use crate::prover::endpoint::ProofRequest;
use crate::trust::TrustedState;
use crate::verify::METHODS;

/// The largest proof read (a 215-transaction block's is ~90 kB; sync data adds ~25 kB a period;
/// an eth_getLogs range proof up to the prover's 24 MiB of receipts).
const MAX_PROOF: usize = 32 << 20;

/// Methods answered: eth_chainId from configuration, and the proof verifier's.
static ANSWERED: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    std::iter::once("eth_chainId")
        .chain(METHODS.iter().copied())
        .collect()
});
/// A client of a prover that verifies every proof it gets.
pub struct ProofClient {
    prover: Upstream,
    trust: Mutex<TrustedState>,
    chain_id: u64,
    state_path: Option<PathBuf>,
}

impl ProofClient {
    /// A client of the prover at `url` for chain `chain_id`, trusting `trust` (whose fork
    /// table its eth_call uses), saving the keys it learns to `state_path`.
    pub fn new(
        url: &str,
        timeout: Duration,
        mut trust: TrustedState,
        chain_id: u64,
        state_path: Option<PathBuf>,
    ) -> Result<ProofClient, String> {
        // A proven eth_call runs with the configured chain's id.
        trust.chain_id = chain_id;
        Ok(ProofClient {
            prover: Upstream::new(url, timeout, MAX_PROOF)?,
            trust: Mutex::new(trust),
            chain_id,
            state_path,
        })
    }

    /// The periods whose committee keys it holds.
    pub fn periods(&self) -> Vec<u64> {
        self.trust.lock().map(|t| t.periods()).unwrap_or_default()
    }

    /// Asks the prover for the proof of `method(params)`.
    async fn fetch(&self, method: &str, params: &Value) -> Result<Vec<u8>, RpcError> {
        let client = self
            .trust
            .lock()
            .map_err(|_| RpcError::Unprovable("trusted state poisoned".into()))?
            .client_state();
        let request = ProofRequest {
            method: method.to_string(),
            params: params.clone(),
            client,
            include_code: method == "eth_call",
        };
        let what = format!("prover {method}");
        let (status, body) = self
            .prover
            .post(&what, request.to_body(), "application/octet-stream")
            .await?;
        match status {
            200 => Ok(body.to_vec()),
            400 => Err(RpcError::InvalidParams(format!(
                "the prover refused the request: {}",
                error_text(&body)
            ))),
            _ => Err(RpcError::Upstream(UpstreamError::Rpc {
                what,
                code: i64::from(status),
                message: error_text(&body),
            })),
        }
    }

    /// Verifies `proof` and saves the keys it added.
    fn check(&self, proof: &[u8], method: &str, params: &Value) -> Result<Value, RpcError> {
        let mut trust = self
            .trust
            .lock()
            .map_err(|_| RpcError::Unprovable("trusted state poisoned".into()))?;
        let before = trust.periods();
        let result = crate::verify(proof, method, params, &mut trust).map_err(rpc_error);
        if trust.periods() != before {
            tracing::info!(periods = ?trust.periods(), "committee keys learned from the prover's sync data");
            if let Some(Err(e)) = self.state_path.as_ref().map(|path| trust.save(path)) {
                tracing::warn!(error = %e, "could not save the committee keys");
            }
        }
        result
    }
}

/// The `error` of a prover's JSON error answer, or its first bytes.
fn error_text(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v["error"].as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned())
}

/// A refused proof as the JSON-RPC error the local mode gives: a failed check is -32099 with
/// the proof verifier's check name.
pub fn rpc_error(e: ProofError) -> RpcError {
    let refused = |check, detail: String| {
        RpcError::Verification(Mismatch::new(RpcCheck::Proof(check), "proof", detail))
    };
    match e {
        ProofError::Decode(d) => refused("decode", d),
        ProofError::Check { check, detail } => refused(check.name(), detail),
        ProofError::Params(p) => RpcError::InvalidParams(p),
        ProofError::Unprovable(u) => RpcError::Unprovable(u),
        ProofError::Reverted(data) => match data.parse::<alloy_primitives::Bytes>() {
            Ok(bytes) => RpcError::Reverted(bytes),
            Err(_) => RpcError::Halted(data),
        },
        ProofError::Unsupported(u) => RpcError::Unprovable(u),
    }
}

impl Answerer for ProofClient {
    async fn call(&self, method: &str, params: &[Value]) -> Result<Value, RpcError> {
        if method == "eth_chainId" {
            return Ok(json!(format!("{:#x}", self.chain_id)));
        }
        if !METHODS.contains(&method) {
            return Err(RpcError::Unverifiable(method.to_string()));
        }
        let params = Value::Array(params.to_vec());
        let proof = self.fetch(method, &params).await?;
        self.check(&proof, method, &params)
    }

    fn methods(&self) -> &[&'static str] {
        &ANSWERED
    }

    fn gauges(&self) -> String {
        let periods = self.periods();
        format!(
            "# HELP sszgate_rpc_proof_periods Sync-committee periods whose keys the proof verifier holds.\n# TYPE sszgate_rpc_proof_periods gauge\nsszgate_rpc_proof_periods {}\n# HELP sszgate_rpc_proof_newest_period The newest of them.\n# TYPE sszgate_rpc_proof_newest_period gauge\nsszgate_rpc_proof_newest_period {}\n",
            periods.len(),
            periods.last().copied().unwrap_or(0)
        )
    }
}
