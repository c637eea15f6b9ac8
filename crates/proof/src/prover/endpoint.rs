//! The prover endpoint (colibri's remote-prover HTTP API, spec §13): a JSON body naming the
//! method, its params and the client's state (`c4`, hex) in, the `C4Request` proof out as
//! `application/octet-stream`. Mounted by `sszgate rpc --serve-proofs` at `/proof`.
//!
//! Errors as colibri's server answers them: `400 {"error": …}` for a body that is not such a
//! request (naming what is wrong), `500 {"error": …}` when the proof cannot be built.
//! Not here: the proof building (`prover`), HTTP serving (`sszgate-rpc`'s server).

use bytes::Bytes;
use serde_json::Value;
use sszgate_rpc::{BoxFuture, Route, RouteAnswer};

use super::{ProveError, Prover};
use crate::trust::ClientState;

/// A parsed proof request.
#[derive(Debug, Clone, PartialEq)]
pub struct ProofRequest {
    /// The JSON-RPC method.
    pub method: String,
    /// Its params (a list).
    pub params: Value,
    /// What the client already has.
    pub client: ClientState,
    /// eth_call: ship the code of the accounts it runs.
    pub include_code: bool,
}

impl ProofRequest {
    /// Parses a request body; the error says which field is wrong.
    pub fn parse(body: &[u8]) -> Result<ProofRequest, String> {
        let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
        let method = v["method"]
            .as_str()
            .ok_or("`method` (a string) is missing")?
            .to_string();
        let params = match &v["params"] {
            Value::Null => Value::Array(Vec::new()),
            p @ Value::Array(_) => p.clone(),
            _ => return Err("`params` must be a list".into()),
        };
        let client = match &v["c4"] {
            Value::Null => ClientState::Empty,
            Value::String(hex) => {
                let bytes = const_hex::decode(hex).map_err(|e| format!("`c4`: {e}"))?;
                ClientState::from_bytes(&bytes).map_err(|e| format!("`c4`: {e}"))?
            }
            _ => return Err("`c4` must be a hex string".into()),
        };
        let include_code = v["include_code"].as_bool().unwrap_or(false);
        Ok(ProofRequest {
            method,
            params,
            client,
            include_code,
        })
    }

    /// The request body for it, as a verifier sends it.
    pub fn to_body(&self) -> String {
        serde_json::json!({
            "method": self.method,
            "params": self.params,
            "c4": const_hex::encode_prefixed(self.client.to_bytes()),
            "include_code": self.include_code,
        })
        .to_string()
    }
}

/// The prover behind `POST /proof`.
pub struct ProofEndpoint {
    prover: Prover,
}

impl ProofEndpoint {
    /// An endpoint answering with `prover`'s proofs.
    pub fn new(prover: Prover) -> ProofEndpoint {
        ProofEndpoint { prover }
    }

    async fn answer_body(&self, body: Bytes) -> RouteAnswer {
        let request = match ProofRequest::parse(&body) {
            Ok(r) => r,
            Err(e) => return RouteAnswer::error(400, &format!("invalid request: {e}")),
        };
        let started = std::time::Instant::now();
        let proof = self
            .prover
            .prove_for(
                &request.method,
                &request.params,
                request.include_code,
                &request.client,
            )
            .await;
        match proof {
            Ok(proof) => {
                tracing::debug!(method = %request.method, bytes = proof.len(), ms = started.elapsed().as_secs_f64() * 1e3, "proof built");
                RouteAnswer {
                    status: 200,
                    content_type: "application/octet-stream",
                    body: proof,
                }
            }
            Err(e @ ProveError::Params(_)) => RouteAnswer::error(400, &e.to_string()),
            Err(e) => {
                tracing::warn!(method = %request.method, error = %e, "no proof");
                RouteAnswer::error(500, &e.to_string())
            }
        }
    }
}

impl Route for ProofEndpoint {
    fn answer(&self, body: Bytes) -> BoxFuture<'_, RouteAnswer> {
        Box::pin(self.answer_body(body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_parsed_with_its_client_state_or_refused_naming_the_field() {
        let r = ProofRequest::parse(
            br#"{"method":"eth_blockNumber","params":[],"version":65811,"c4":"0x018f0500007b050000"}"#,
        )
        .unwrap();
        assert_eq!(r.method, "eth_blockNumber");
        assert_eq!(r.client, ClientState::Periods(vec![1423, 1403]));
        assert_eq!(ProofRequest::parse(&Bytes::from(r.to_body())).unwrap(), r);
        let checkpoint = format!("0x02{}", "ab".repeat(32));
        let r = ProofRequest::parse(
            format!(
                r#"{{"method":"eth_call","params":[{{}}],"c4":"{checkpoint}","include_code":true}}"#
            )
            .as_bytes(),
        )
        .unwrap();
        assert_eq!(
            r.client,
            ClientState::Checkpoint(alloy_primitives::B256::repeat_byte(0xab))
        );
        assert!(r.include_code);
        for (body, says) in [
            (&b"{"[..], "not JSON"),
            (br#"{"params":[]}"#, "`method`"),
            (br#"{"method":"m","params":{}}"#, "`params`"),
            (
                br#"{"method":"m","c4":"0x03"}"#,
                "`c4`: client state: status 3",
            ),
            (
                br#"{"method":"m","c4":"0x0101"}"#,
                "`c4`: client state: status 1 with 1 bytes",
            ),
            (br#"{"method":"m","c4":"zz"}"#, "`c4`"),
        ] {
            let e = ProofRequest::parse(body).unwrap_err();
            assert!(e.contains(says), "{e} lacks {says}");
        }
    }
}
