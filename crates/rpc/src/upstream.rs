//! The untrusted execution JSON-RPC endpoint (and a prover, which answers at the same kind of
//! URL). Every request has a timeout, every answer a size bound read before it is kept, and an answer that
//! is not a JSON-RPC result is an error. Nothing read here is trusted: callers check it.
//!
//! Every request also spends from the client request's upstream budget, when it has one
//! (`sszgate_serve::Budget::current`): a fetch is refused before it is made when the budget's
//! fetches are spent, and an answer is read only up to the bytes left.
//!
//! Not here: any verification; the Beacon API, which is read with sszgate-light's client
//! (`HttpBeaconApi`, through `blocks::BeaconBlocks`; this module's own Beacon API GET moved
//! there).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Request, StatusCode, Uri, header};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::UpstreamError;

/// The untrusted execution RPC.
#[derive(Clone, Debug)]
pub struct Upstream {
    client: Client<HttpConnector, Full<Bytes>>,
    execution: Uri,
    timeout: Duration,
    max_answer: usize,
}

impl Upstream {
    /// A client of `execution` (JSON-RPC URL).
    pub fn new(execution: &str, timeout: Duration, max_answer: usize) -> Result<Upstream, String> {
        let execution: Uri = execution
            .parse()
            .map_err(|e| format!("execution URL {execution:?}: {e}"))?;
        Ok(Upstream {
            client: Client::builder(TokioExecutor::new()).build_http(),
            execution,
            timeout,
            max_answer,
        })
    }

    /// Calls `method` and returns its `result` (which may be `null`).
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, UpstreamError> {
        self.call_raw(method, &params.to_string()).await
    }

    /// Calls `method` with `params` given as JSON text (kept as written: object keys in the
    /// order given) and returns its `result`.
    pub async fn call_raw(&self, method: &str, params: &str) -> Result<Value, UpstreamError> {
        let what = format!("{method} {params}");
        let method = Value::from(method);
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":{method},"params":{params}}}"#);
        let request = Request::post(self.execution.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| transport(&what, e))?;
        let (status, bytes) = self.exchange(&what, request).await?;
        let answer: Value = serde_json::from_slice(&bytes).map_err(|e| malformed(&what, e))?;
        if let Some(error) = answer.get("error") {
            return Err(UpstreamError::Rpc {
                what,
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .chars()
                    .take(200)
                    .collect(),
            });
        }
        if status != StatusCode::OK {
            return Err(UpstreamError::Status {
                what,
                status: status.as_u16(),
            });
        }
        match answer {
            Value::Object(mut o) if o.contains_key("result") => {
                Ok(o.remove("result").unwrap_or(Value::Null))
            }
            _ => Err(malformed(&what, "no `result` in the answer")),
        }
    }

    /// Calls `method` and decodes a non-null `result` as `T`.
    pub async fn call_as<T: DeserializeOwned>(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Option<T>, UpstreamError> {
        let what = format!("{method} {params}");
        match self.call(method, params).await? {
            Value::Null => Ok(None),
            v => serde_json::from_value(v)
                .map(Some)
                .map_err(|e| malformed(&what, e)),
        }
    }

    /// POSTs `body` (JSON) to the execution URL asking for `accept`; the status and the
    /// bounded answer, whatever the status (a prover's errors come with 4xx/5xx).
    pub async fn post(
        &self,
        what: &str,
        body: String,
        accept: &'static str,
    ) -> Result<(u16, Bytes), UpstreamError> {
        let request = Request::post(self.execution.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, accept)
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| transport(what, e))?;
        let (status, bytes) = self.exchange(what, request).await?;
        Ok((status.as_u16(), bytes))
    }

    /// One HTTP exchange: timeout over the whole of it, the body bounded.
    async fn exchange(
        &self,
        what: &str,
        request: Request<Full<Bytes>>,
    ) -> Result<(StatusCode, Bytes), UpstreamError> {
        let budget = sszgate_serve::Budget::current();
        let limit = self.answer_limit(what, budget.as_ref())?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| transport(what, e))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), limit)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        self.too_large(what, limit, budget.as_ref())
                    } else {
                        transport(what, e)
                    }
                })?
                .to_bytes();
            if let Some(budget) = &budget {
                budget
                    .spend_bytes(body.len() as u64)
                    .map_err(|spent| over(what, spent))?;
            }
            Ok((status, body))
        };
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| UpstreamError::Timeout {
                what: what.to_string(),
                millis: self.timeout.as_millis() as u64,
            })?
    }
}

impl Upstream {
    /// Takes this fetch from the request's budget, if it has one, before the fetch is made;
    /// the most bytes its answer may have: the answer bound, or what is left of the budget.
    fn answer_limit(
        &self,
        what: &str,
        budget: Option<&sszgate_serve::Budget>,
    ) -> Result<usize, UpstreamError> {
        let Some(budget) = budget else {
            return Ok(self.max_answer);
        };
        budget.spend_fetch().map_err(|spent| over(what, spent))?;
        let left = usize::try_from(budget.bytes_left()).unwrap_or(usize::MAX);
        Ok(self.max_answer.min(left))
    }

    /// An answer over `limit`: over the answer bound, or over what was left of the budget.
    fn too_large(
        &self,
        what: &str,
        limit: usize,
        budget: Option<&sszgate_serve::Budget>,
    ) -> UpstreamError {
        match budget {
            Some(budget) if limit < self.max_answer => {
                // Account what the answer would have taken at least: the budget is spent.
                let spent = budget.spend_bytes(limit as u64 + 1).err();
                spent.map_or_else(
                    || UpstreamError::TooLarge {
                        what: what.to_string(),
                        limit,
                    },
                    |spent| over(what, spent),
                )
            }
            _ => UpstreamError::TooLarge {
                what: what.to_string(),
                limit,
            },
        }
    }
}

fn over(what: &str, spent: sszgate_serve::BudgetSpent) -> UpstreamError {
    UpstreamError::Budget {
        what: what.to_string(),
        spent,
    }
}

fn transport(what: &str, e: impl std::fmt::Display) -> UpstreamError {
    UpstreamError::Transport {
        what: what.to_string(),
        detail: e.to_string(),
    }
}

fn malformed(what: &str, e: impl std::fmt::Display) -> UpstreamError {
    UpstreamError::Malformed {
        what: what.to_string(),
        detail: e.to_string().chars().take(300).collect(),
    }
}
