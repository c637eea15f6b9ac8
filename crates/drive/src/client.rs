//! The driver's Engine API client: one call at a time over JSON-RPC or REST-SSZ, timed and
//! recorded as the consensus client sees it.
//!
//! Callers speak JSON-RPC terms (method name, `params` as JSON) whichever transport is on the
//! wire; for REST-SSZ the request and the answer go through the engine crate's translation, so
//! the driver checks one shape of answer. What a call means (which method when, what an answer
//! must say) lives in [`crate::driver`], not here.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde_json::Value;
use sszgate_engine::{
    Fork,
    method::{self, Resource, Route},
    translate,
};
use sszgate_gateway::JwtSecret;
use sszgate_record::{Capture, Recorder, Transport};

use crate::DriveError;

/// The transport the driver speaks to the engine endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineTransport {
    /// JSON-RPC `POST /`.
    Json,
    /// REST-SSZ under `/engine/v1/`.
    Ssz,
}

impl std::str::FromStr for EngineTransport {
    type Err = String;
    fn from_str(s: &str) -> Result<EngineTransport, String> {
        match s {
            "json" => Ok(EngineTransport::Json),
            "ssz" => Ok(EngineTransport::Ssz),
            other => Err(format!("unknown transport {other:?} (json or ssz)")),
        }
    }
}

/// The answer to one call: the JSON-RPC `result`, and how long the call took end to end.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The `result`, as JSON (REST-SSZ answers translated).
    pub result: Value,
    /// From the first request byte sent to the last answer byte read.
    pub elapsed: Duration,
}

/// The most bytes of one answer read: the gateway's bound on an EL's answer.
const MAX_ANSWER_BYTES: usize = sszgate_gateway::DEFAULT_MAX_ANSWER_BYTES;

/// The value sent as `X-Engine-Client-Version`, so a proxy can name the CL side.
pub const CLIENT_VERSION: &str = concat!("SG-sszgate-drive-", env!("CARGO_PKG_VERSION"));

/// An Engine API client for one endpoint, with a pooled HTTP/1.1 connection.
pub struct EngineClient {
    base: String,
    transport: EngineTransport,
    secret: JwtSecret,
    http: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
    recorder: Option<Arc<Recorder>>,
    next_id: AtomicU64,
}

impl EngineClient {
    /// A client for `url` (e.g. `http://127.0.0.1:8551`) speaking `transport`, signing every call
    /// with `secret`; every call is recorded when a `recorder` is given.
    pub fn new(
        url: &str,
        transport: EngineTransport,
        secret: JwtSecret,
        recorder: Option<Arc<Recorder>>,
    ) -> EngineClient {
        EngineClient {
            base: url.trim_end_matches('/').to_string(),
            transport,
            secret,
            http: Client::builder(TokioExecutor::new()).build_http(),
            timeout: Duration::from_secs(30),
            recorder,
            next_id: AtomicU64::new(1),
        }
    }

    /// The transport this client speaks.
    pub fn transport(&self) -> EngineTransport {
        self.transport
    }

    /// Calls `method` with `params` (a JSON array) under `fork`; returns the `result`, or an
    /// error naming the call (transport failure, HTTP status, JSON-RPC error or problem).
    pub async fn call(
        &self,
        method: &str,
        params: &Value,
        fork: Fork,
    ) -> Result<Reply, DriveError> {
        let params_json = serde_json::to_vec(params).expect("JSON values serialize");
        match self.transport {
            EngineTransport::Json => self.call_json(method, &params_json, fork).await,
            EngineTransport::Ssz => self.call_ssz(method, params, &params_json, fork).await,
        }
    }

    async fn call_json(
        &self,
        method: &str,
        params: &[u8],
        fork: Fork,
    ) -> Result<Reply, DriveError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut body =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":"#).into_bytes();
        body.extend_from_slice(params);
        body.push(b'}');
        let request = http::Request::post(format!("{}/", self.base))
            .header(http::header::CONTENT_TYPE, "application/json");
        let exchange = self
            .exchange(method, request, Bytes::from(body), fork, None)
            .await?;
        if exchange.status != 200 {
            return Err(DriveError::Http {
                method: method.to_string(),
                status: exchange.status,
                body: snippet(&exchange.body),
            });
        }
        Ok(Reply {
            result: json_rpc_result(method, exchange.status, &exchange.body)?,
            elapsed: exchange.elapsed,
        })
    }

    async fn call_ssz(
        &self,
        method: &str,
        params: &Value,
        params_json: &[u8],
        fork: Fork,
    ) -> Result<Reply, DriveError> {
        let spec = method::by_name(method).map_err(|e| DriveError::engine(method, e))?;
        let rest = translate::request_to_rest(method, params_json, Some(fork))
            .map_err(|e| DriveError::engine(method, e))?;
        let mut request = http::Request::builder()
            .method(rest.method.as_str())
            .uri(format!("{}{}", self.base, rest.target))
            .header(http::header::ACCEPT, accept(spec.resource));
        if let Some(content_type) = rest.content_type() {
            request = request.header(http::header::CONTENT_TYPE, content_type);
        }
        if let Some(fork) = rest.fork {
            request = request.header(method::FORK_HEADER, fork.to_string());
        }
        let route = Route::parse(rest.method.as_str(), &rest.target).ok();
        let exchange = self
            .exchange(method, request, Bytes::from(rest.body), fork, route)
            .await?;
        let requested = match spec.resource {
            Resource::Blobs(_) => params[0].as_array().map_or(0, Vec::len),
            _ => 0,
        };
        let answer =
            translate::result_from_rest(spec, fork, exchange.status, &exchange.body, requested)
                .map_err(|e| DriveError::Answer {
                    method: method.to_string(),
                    problem: format!("HTTP {}: {e}", exchange.status),
                })?;
        match answer {
            Ok(result) => Ok(Reply {
                result: serde_json::from_slice(&result).expect("the engine crate writes JSON"),
                elapsed: exchange.elapsed,
            }),
            Err(error) => Err(DriveError::Rpc {
                method: method.to_string(),
                code: error.code,
                message: format!("HTTP {}: {}", exchange.status, error.message),
            }),
        }
    }

    /// Sends one request with the JWT and client headers, reads the whole answer, records it.
    async fn exchange(
        &self,
        method: &str,
        request: http::request::Builder,
        body: Bytes,
        fork: Fork,
        route: Option<Route>,
    ) -> Result<Exchange, DriveError> {
        let request = request
            .header(
                http::header::AUTHORIZATION,
                format!("Bearer {}", self.secret.token()),
            )
            .header("x-engine-client-version", CLIENT_VERSION)
            .body(Full::new(body.clone()))
            .expect("a well-formed request");
        let target = format!("{} {}", request.method(), request.uri().path());
        let arrival = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        let started = Instant::now();
        let sent = tokio::time::timeout(self.timeout, async {
            let response = self.http.request(request).await?;
            let status = response.status().as_u16();
            let first_byte = started.elapsed();
            // The largest legal answer is tens of MB; an EL sending more is cut off, not
            // buffered (the gateway's bound on answers).
            let body = http_body_util::Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await?
                .to_bytes();
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>((status, first_byte, body))
        })
        .await;
        let elapsed = started.elapsed();
        let (status, first_byte, answer, failure) = match sent {
            Ok(Ok((status, first_byte, answer))) => (status, Some(first_byte), answer, None),
            Ok(Err(e)) => (0, None, Bytes::new(), Some(error_chain(e.as_ref()))),
            Err(_) => (
                0,
                None,
                Bytes::new(),
                Some(format!("no answer within {:?}", self.timeout)),
            ),
        };
        if let Some(recorder) = &self.recorder {
            recorder.record(Capture {
                arrival_unix_us: arrival,
                transport: Some(match self.transport {
                    EngineTransport::Json => Transport::JsonRpc,
                    EngineTransport::Ssz => Transport::RestSsz,
                }),
                http_version: "HTTP/1.1",
                target,
                method: Some(method.to_string()),
                route,
                fork: (self.transport == EngineTransport::Ssz).then(|| fork.to_string()),
                cl_client: Some(CLIENT_VERSION.to_string()),
                status,
                error_side: failure.is_some().then_some(sszgate_record::ErrorSide::El),
                error_message: failure.clone(),
                request: body,
                response: vec![answer.clone()],
                upstream_ttfb_us: first_byte.map(|d| d.as_micros() as u64),
                upstream_ttlb_us: Some(elapsed.as_micros() as u64),
                total_us: elapsed.as_micros() as u64,
                mode: "driver",
                ..Capture::default()
            });
        }
        if let Some(problem) = failure {
            return Err(DriveError::Unreachable {
                method: method.to_string(),
                url: self.base.clone(),
                problem,
            });
        }
        Ok(Exchange {
            status,
            body: answer,
            elapsed,
        })
    }
}

struct Exchange {
    status: u16,
    body: Bytes,
    elapsed: Duration,
}

/// What a REST call accepts: SSZ for the binary resources, JSON for the two JSON ones.
fn accept(resource: Resource) -> &'static str {
    if resource.is_json() {
        method::JSON_CONTENT_TYPE
    } else {
        method::SSZ_CONTENT_TYPE
    }
}

fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The `result` of a JSON-RPC answer, or its error as a [`DriveError`] naming `method`.
pub(crate) fn json_rpc_result(method: &str, status: u16, body: &[u8]) -> Result<Value, DriveError> {
    let mut envelope: Value = serde_json::from_slice(body).map_err(|_| DriveError::Http {
        method: method.to_string(),
        status,
        body: snippet(body),
    })?;
    if let Some(error) = envelope.get("error").filter(|e| !e.is_null()) {
        return Err(DriveError::Rpc {
            method: method.to_string(),
            code: error["code"].as_i64().unwrap_or(0),
            message: error["message"].as_str().unwrap_or("").to_string(),
        });
    }
    match envelope.get_mut("result") {
        Some(result) => Ok(result.take()),
        None => Err(DriveError::Answer {
            method: method.to_string(),
            problem: "a JSON-RPC answer with neither result nor error".into(),
        }),
    }
}

/// The start of a body, as text, for error messages.
pub(crate) fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
    if body.len() > 300 {
        format!("{text}…")
    } else {
        text
    }
}
