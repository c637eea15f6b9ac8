//! [`EngineClient`]: typed Engine API calls to one endpoint over JSON-RPC or REST-SSZ, with a
//! pooled HTTP/1.1 connection, a JWT per call, bounded answers, and every exchange timed and
//! handed to an optional [`Observer`] (the driver records them).
//!
//! A call is a typed request [`Message`] in and a typed answer out: over REST-SSZ the message
//! is written as SSZ and the answer read from SSZ, with no JSON in between.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use alloy_primitives::B256;
use alloy_rpc_types_engine::{ForkchoiceUpdated, PayloadId, PayloadStatus};
use bytes::Bytes;
use http::Uri;
use http_body_util::Full;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use sszgate_engine::{
    Fork, Message, MethodSpec,
    message::{Blobs, BlobsRequest, BuiltPayload, Forkchoice, NewPayload},
    method::{self, Family, Route},
    scan, translate,
};

use crate::{
    JwtSecret,
    answer::{self, DEFAULT_MAX_ANSWER_BYTES},
    identity,
    request::{self, CallHeaders},
};

/// The transport a client speaks to the engine endpoint.
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

/// Why a call failed; every variant names the method.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No answer: refused, reset, timed out, or unreadable.
    #[error("{method} to {url}: {problem}")]
    Unreachable {
        /// The call.
        method: &'static str,
        /// Where it went.
        url: String,
        /// What happened.
        problem: String,
    },
    /// An HTTP status where an answer was expected.
    #[error("{method}: HTTP {status}: {body}")]
    Http {
        /// The call.
        method: &'static str,
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// A JSON-RPC error (or a REST problem, as its JSON-RPC code).
    #[error("{method}: error {code}: {message}")]
    Rpc {
        /// The call.
        method: &'static str,
        /// The JSON-RPC code.
        code: i64,
        /// The message.
        message: String,
    },
    /// The request could not be built, or the answer does not decode as the method's answer.
    #[error("{method}: {problem}")]
    Answer {
        /// The call.
        method: &'static str,
        /// What is wrong.
        problem: String,
    },
}

/// One request and its answer, as the caller saw them (for recording).
#[derive(Clone, Debug)]
pub struct Exchange {
    /// The method called.
    pub method: &'static str,
    /// The transport it went over.
    pub transport: EngineTransport,
    /// `METHOD /path` of the HTTP request.
    pub target: String,
    /// The REST route, for REST-SSZ calls.
    pub route: Option<Route>,
    /// The fork of the call.
    pub fork: Fork,
    /// The request body.
    pub request: Bytes,
    /// The HTTP status (0 when there was no answer).
    pub status: u16,
    /// The answer body, without its content coding (empty when there was none).
    pub answer: Bytes,
    /// When the request left, µs since the Unix epoch.
    pub arrival_unix_us: i64,
    /// Time to the answer's head.
    pub first_byte: Option<Duration>,
    /// Time to the answer's last byte.
    pub elapsed: Duration,
    /// Why there was no answer, if there was none.
    pub failure: Option<String>,
    /// The `X-Engine-Client-Version` the call carried.
    pub client_version: String,
}

/// Receives every exchange of a client, failures included.
pub type Observer = Arc<dyn Fn(&Exchange) + Send + Sync>;

/// An answer, the method that gave it, and how long it took end to end.
#[derive(Clone, Debug)]
pub struct Reply<T> {
    /// The typed answer.
    pub value: T,
    /// The method called.
    pub method: &'static str,
    /// From the first request byte sent to the last answer byte read.
    pub elapsed: Duration,
}

/// An Engine API client for one endpoint.
pub struct EngineClient {
    base: String,
    transport: EngineTransport,
    secret: JwtSecret,
    http: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
    max_answer: usize,
    client_version: String,
    observer: Option<Observer>,
    next_id: AtomicU64,
}

impl EngineClient {
    /// A client for `url` (e.g. `http://127.0.0.1:8551`) speaking `transport`, signing every
    /// call with `secret`, naming itself sszgate's `role` (`drive`, say).
    pub fn new(
        url: &str,
        transport: EngineTransport,
        secret: JwtSecret,
        role: &str,
    ) -> EngineClient {
        EngineClient {
            base: url.trim_end_matches('/').to_string(),
            transport,
            secret,
            http: Client::builder(TokioExecutor::new()).build_http(),
            timeout: Duration::from_secs(30),
            max_answer: DEFAULT_MAX_ANSWER_BYTES,
            client_version: identity::header_value(role),
            observer: None,
            next_id: AtomicU64::new(1),
        }
    }

    /// Hands every exchange to `observer`.
    pub fn with_observer(mut self, observer: Observer) -> EngineClient {
        self.observer = Some(observer);
        self
    }

    /// The transport this client speaks.
    pub fn transport(&self) -> EngineTransport {
        self.transport
    }

    /// The `X-Engine-Client-Version` this client sends.
    pub fn client_version(&self) -> &str {
        &self.client_version
    }

    /// `engine_forkchoiceUpdated` of `fork`'s version.
    pub async fn forkchoice_updated(
        &self,
        fork: Fork,
        forkchoice: Forkchoice,
    ) -> Result<Reply<ForkchoiceUpdated>, ClientError> {
        let m = pick(Family::ForkchoiceUpdated, fork)?;
        let reply = self.call(m, fork, &Message::Forkchoice(forkchoice)).await?;
        expect(m, reply, |a| match a {
            Message::ForkchoiceResponse(r) => Some(r),
            _ => None,
        })
    }

    /// `engine_getPayload` of `fork`'s version.
    pub async fn get_payload(
        &self,
        fork: Fork,
        id: PayloadId,
    ) -> Result<Reply<BuiltPayload>, ClientError> {
        let m = pick(Family::GetPayload, fork)?;
        let reply = self.call(m, fork, &Message::PayloadId(id)).await?;
        expect(m, reply, |a| match a {
            Message::BuiltPayload(p) => Some(p),
            _ => None,
        })
    }

    /// `engine_newPayload` of `fork`'s version.
    pub async fn new_payload(
        &self,
        fork: Fork,
        payload: NewPayload,
    ) -> Result<Reply<PayloadStatus>, ClientError> {
        let m = pick(Family::NewPayload, fork)?;
        let reply = self.call(m, fork, &Message::NewPayload(payload)).await?;
        expect(m, reply, |a| match a {
            Message::PayloadStatus(s) => Some(s),
            _ => None,
        })
    }

    /// `engine_getBlobs` `method` (a CL picks the version: V1 before Osaka, V2 after).
    pub async fn get_blobs(
        &self,
        m: &'static MethodSpec,
        fork: Fork,
        versioned_hashes: Vec<B256>,
    ) -> Result<Reply<Blobs>, ClientError> {
        let request = Message::BlobsRequest(BlobsRequest {
            versioned_hashes,
            indices: None,
        });
        let reply = self.call(m, fork, &request).await?;
        expect(m, reply, |a| match a {
            Message::Blobs(b) => Some(b),
            _ => None,
        })
    }

    /// `engine_exchangeCapabilities` with `offered`: the methods the EL has of those.
    pub async fn exchange_capabilities(
        &self,
        offered: Vec<String>,
    ) -> Result<Reply<Vec<String>>, ClientError> {
        let m = method::by_name("engine_exchangeCapabilities").expect("in the table");
        let reply = self
            .call(m, m.latest_fork(), &Message::Capabilities(offered))
            .await?;
        expect(m, reply, |a| match a {
            Message::Capabilities(c) => Some(c),
            _ => None,
        })
    }

    /// Calls `m` under `fork` with the typed `request`; the typed answer, or an error naming
    /// the call (transport failure, HTTP status, JSON-RPC error or problem, bad answer).
    pub async fn call(
        &self,
        m: &'static MethodSpec,
        fork: Fork,
        request: &Message,
    ) -> Result<Reply<Message>, ClientError> {
        match self.transport {
            EngineTransport::Json => self.call_json(m, fork, request).await,
            EngineTransport::Ssz => self.call_ssz(m, fork, request).await,
        }
    }

    async fn call_json(
        &self,
        m: &'static MethodSpec,
        fork: Fork,
        request: &Message,
    ) -> Result<Reply<Message>, ClientError> {
        let params = request.to_json_params().map_err(|e| bad(m, e))?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let body = Bytes::from(request::envelope(id, m.name, &params));
        let http = request::json_rpc(self.uri("/"), body.clone(), &self.headers());
        let exchange = self.exchange(m, fork, http, body, None).await?;
        if exchange.status != 200 {
            return Err(http_error(m, &exchange));
        }
        let envelope = scan::envelope(&exchange.answer).ok_or_else(|| http_error(m, &exchange))?;
        match (envelope.result, envelope.error) {
            (_, Some(error)) if error != b"null" => Err(rpc_error(m, error)),
            (Some(result), _) => Ok(Reply {
                value: Message::from_json(m, fork, m.response, result).map_err(|e| bad(m, e))?,
                method: m.name,
                elapsed: exchange.elapsed,
            }),
            _ => Err(ClientError::Answer {
                method: m.name,
                problem: "a JSON-RPC answer with neither result nor error".into(),
            }),
        }
    }

    async fn call_ssz(
        &self,
        m: &'static MethodSpec,
        fork: Fork,
        request: &Message,
    ) -> Result<Reply<Message>, ClientError> {
        let rest = translate::rest_request(m, fork, request).map_err(|e| bad(m, e))?;
        let route = Route::parse(rest.method.as_str(), &rest.target).ok();
        let body = Bytes::from(rest.body.clone());
        let http = request::rest(self.uri(&rest.target), rest, m.resource, &self.headers());
        let exchange = self.exchange(m, fork, http, body, route).await?;
        let requested = match request {
            Message::BlobsRequest(r) => r.versioned_hashes.len(),
            _ => 0,
        };
        let answer =
            translate::message_from_rest(m, fork, exchange.status, &exchange.answer, requested)
                .map_err(|e| ClientError::Answer {
                    method: m.name,
                    problem: format!("HTTP {}: {e}", exchange.status),
                })?;
        match answer {
            Ok(value) => Ok(Reply {
                value,
                method: m.name,
                elapsed: exchange.elapsed,
            }),
            Err(error) => Err(ClientError::Rpc {
                method: m.name,
                code: error.code,
                message: format!("HTTP {}: {}", exchange.status, error.message),
            }),
        }
    }

    fn headers(&self) -> CallHeaders {
        CallHeaders {
            token: self.secret.token(),
            client_version: Some(self.client_version.clone()),
            accept_encoding: None,
        }
    }

    fn uri(&self, path_and_query: &str) -> Uri {
        format!("{}{path_and_query}", self.base)
            .parse()
            .unwrap_or_else(|_| Uri::from_static("http://invalid./"))
    }

    /// Sends one request, reads the whole answer (bounded), and hands the exchange to the
    /// observer; an error when there was no answer.
    async fn exchange(
        &self,
        m: &'static MethodSpec,
        fork: Fork,
        http: http::Request<Full<Bytes>>,
        body: Bytes,
        route: Option<Route>,
    ) -> Result<Exchange, ClientError> {
        let target = format!("{} {}", http.method(), http.uri().path());
        let arrival_unix_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        let started = Instant::now();
        let sent = tokio::time::timeout(self.timeout, async {
            let response = self
                .http
                .request(http)
                .await
                .map_err(|e| answer::error_chain(&e))?;
            let first_byte = started.elapsed();
            let (status, body) = answer::read(response, self.max_answer)
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>((status.as_u16(), first_byte, body))
        })
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {:?}", self.timeout)));
        let (status, first_byte, answer, failure) = match sent {
            Ok((status, first_byte, answer)) => (status, Some(first_byte), answer, None),
            Err(problem) => (0, None, Bytes::new(), Some(problem)),
        };
        let exchange = Exchange {
            method: m.name,
            transport: self.transport,
            target,
            route,
            fork,
            request: body,
            status,
            answer,
            arrival_unix_us,
            first_byte,
            elapsed: started.elapsed(),
            failure,
            client_version: self.client_version.clone(),
        };
        if let Some(observer) = &self.observer {
            observer(&exchange);
        }
        match exchange.failure.clone() {
            Some(problem) => Err(ClientError::Unreachable {
                method: m.name,
                url: self.base.clone(),
                problem,
            }),
            None => Ok(exchange),
        }
    }
}

/// The method of `family` a CL of `fork` calls.
fn pick(family: Family, fork: Fork) -> Result<&'static MethodSpec, ClientError> {
    method::for_fork(family, fork).ok_or_else(|| ClientError::Answer {
        method: "engine API",
        problem: format!("no {family:?} method serves {fork}"),
    })
}

/// The answer of the kind `m` answers with, or an error naming what came instead.
fn expect<T>(
    m: &'static MethodSpec,
    reply: Reply<Message>,
    of_kind: impl FnOnce(Message) -> Option<T>,
) -> Result<Reply<T>, ClientError> {
    let kind = reply.value.kind();
    match of_kind(reply.value) {
        Some(value) => Ok(Reply {
            value,
            method: reply.method,
            elapsed: reply.elapsed,
        }),
        None => Err(ClientError::Answer {
            method: m.name,
            problem: format!("a {kind:?} answer where {:?} was expected", m.response),
        }),
    }
}

fn bad(m: &'static MethodSpec, e: sszgate_engine::Error) -> ClientError {
    ClientError::Answer {
        method: m.name,
        problem: e.to_string(),
    }
}

fn http_error(m: &'static MethodSpec, exchange: &Exchange) -> ClientError {
    ClientError::Http {
        method: m.name,
        status: exchange.status,
        body: snippet(&exchange.answer),
    }
}

fn rpc_error(m: &'static MethodSpec, error: &[u8]) -> ClientError {
    let error: serde_json::Value = serde_json::from_slice(error).unwrap_or_default();
    ClientError::Rpc {
        method: m.name,
        code: error["code"].as_i64().unwrap_or(0),
        message: error["message"].as_str().unwrap_or("").to_string(),
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
