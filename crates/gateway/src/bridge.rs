//! The bridge: a CL speaking one transport in front of an EL speaking the other, either way.
//!
//! One REST call becomes one `engine_*Vn` call for the fork in `Eth-Execution-Version` (the
//! method table decides which), and the JSON-RPC answer becomes the REST answer the spec
//! requires: SSZ body, `204` for empty blob answers, `Cache-Control: no-store` on payload
//! retrieval, problem+json with the mapped type for errors. A JSON-RPC call with a REST form
//! becomes REST requests the other way. The CL's JWT is checked (with `jwt::authenticate`) and
//! the gateway signs its own for the upstream (a token cannot be forwarded onto a different
//! request). Nothing is forwarded half-translated: a request that does not translate is
//! answered here; an answer that does not translate becomes `500 internal` naming the fault.
//!
//! Not here: which forks are asked in which order, when an older one is tried, and how
//! bodies of several eras merge (`sszgate_engine::translate`'s `ForkPlan`); this module only
//! sends, reads and times.

use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode, header};
use http_body_util::Full;
use sszgate_client::{
    answer,
    request::{self, CallHeaders},
};
use sszgate_engine::{
    MethodSpec, Problem,
    coding::Coding,
    method::{self, HttpMethod, Route},
    translate::{self, RestResponse, RpcError},
};
use sszgate_record::Capture;

use crate::{JwtSecret, ProxyConfig, call::Call, jwt::Denied, upstream::UpstreamError};

/// How the gateway talks to the upstream EL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum UpstreamTransport {
    /// The EL speaks JSON-RPC only: REST-SSZ calls from the CL are bridged to JSON-RPC.
    Json = 0,
    /// Use REST-SSZ on the upstream link: JSON-RPC calls with a REST form are bridged to
    /// REST-SSZ; REST-SSZ calls and the rest are relayed.
    Ssz,
    /// The EL speaks both: everything is relayed as it comes (snoop only).
    Relay,
}

/// The upstream transport in use, and whether it was chosen by asking the EL (`auto`), in
/// which case it is asked again after the EL has been unreachable (a new EL may have come up
/// behind the same address), as the spec's transition window says: per connection lifetime.
#[derive(Debug)]
pub struct TransportChoice {
    auto: bool,
    current: std::sync::atomic::AtomicU8,
    stale: std::sync::atomic::AtomicBool,
}

impl TransportChoice {
    /// A transport set by the operator.
    pub fn fixed(transport: UpstreamTransport) -> TransportChoice {
        TransportChoice {
            auto: false,
            current: (transport as u8).into(),
            stale: false.into(),
        }
    }

    /// A transport found by asking the EL; asked again after it was unreachable.
    pub fn auto(probed: UpstreamTransport) -> TransportChoice {
        TransportChoice {
            auto: true,
            current: (probed as u8).into(),
            stale: false.into(),
        }
    }

    /// The transport now.
    pub fn get(&self) -> UpstreamTransport {
        match self.current.load(std::sync::atomic::Ordering::Relaxed) {
            0 => UpstreamTransport::Json,
            1 => UpstreamTransport::Ssz,
            _ => UpstreamTransport::Relay,
        }
    }

    /// Notes that the EL could not be reached (only matters for `auto`).
    pub(crate) fn mark_unreachable(&self) {
        if self.auto {
            self.stale.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Asks the EL again if it was unreachable since the last answer.
    pub(crate) async fn refresh(&self, upstream: &crate::Upstream, jwt: Option<&crate::JwtSecret>) {
        if self.stale.swap(false, std::sync::atomic::Ordering::Relaxed) {
            let probed = upstream.probe_transport(jwt).await;
            if upstream.health().consecutive_errors > 0 {
                // Still down: ask again next time.
                self.stale.store(true, std::sync::atomic::Ordering::Relaxed);
            } else {
                tracing::info!(?probed, "upstream transport asked again after a reconnect");
                self.current
                    .store(probed as u8, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// What the bridge answers and what it measured.
pub(crate) struct Bridged {
    pub(crate) response: RestResponse,
    pub(crate) translate_request_us: Option<u64>,
    pub(crate) translate_response_us: Option<u64>,
    pub(crate) upstream_request_bytes: Option<u64>,
    pub(crate) upstream_response_bytes: Option<u64>,
    pub(crate) upstream_us: Option<u64>,
}

fn problem(problem: Problem, detail: impl Into<String>) -> Bridged {
    Bridged {
        response: translate::problem_response(problem, Some(detail.into())),
        translate_request_us: None,
        translate_response_us: None,
        upstream_request_bytes: None,
        upstream_response_bytes: None,
        upstream_us: None,
    }
}

/// The response encodings the bridge offers, in order of preference: the spec's `zstd, gzip`,
/// then snappy (framed, the Ethereum p2p format), an extension used only when the caller asks
/// for it by name.
const ENCODINGS: [&str; 3] = ["zstd", "gzip", "snappy"];

/// The encoding to answer with, from the caller's `Accept-Encoding` (`q=0` refuses one).
pub(crate) fn negotiate(headers: &HeaderMap) -> Option<&'static str> {
    let accepted: Vec<(String, bool)> = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|item| {
            let mut parts = item.split(';').map(str::trim);
            let name = parts.next().unwrap_or("").to_ascii_lowercase();
            let refused =
                parts.any(|p| p.replace(' ', "") == "q=0" || p.replace(' ', "") == "q=0.0");
            (name, !refused)
        })
        .collect();
    ENCODINGS
        .into_iter()
        .find(|e| accepted.iter().any(|(name, ok)| *ok && name == e))
}

/// Which way a call crosses the bridge.
pub(crate) enum Direction {
    /// A JSON-RPC call of this method to a REST-SSZ EL.
    ToRest(&'static MethodSpec),
    /// A REST-SSZ call to a JSON-RPC EL.
    ToJson(Route),
}

/// The way `call` crosses the bridge when the two sides speak different transports; `None`
/// when it is relayed as it is (same transport, a batch, a method without a REST form, and
/// exchangeCapabilities, which stays JSON-RPC: it is how the CL learns the JSON methods).
pub(crate) fn direction(call: &Call, upstream: UpstreamTransport) -> Option<Direction> {
    match (upstream, &call.rpc, call.route()) {
        (UpstreamTransport::Ssz, Some(rpc), _) if rpc.single => {
            let m = method::by_name(rpc.method.as_deref()?).ok()?;
            (m.family != method::Family::ExchangeCapabilities).then_some(Direction::ToRest(m))
        }
        (UpstreamTransport::Json, None, Some(route)) => Some(Direction::ToJson(route.clone())),
        _ => None,
    }
}

/// Answers a bridged call: the CL's JWT checked (the gateway signs its own token for the EL:
/// a token cannot be forwarded onto a different request), then translated, asked and
/// translated back. The answer is in the caller's transport.
pub(crate) async fn answer(
    direction: Direction,
    call: &Call,
    headers: &HeaderMap,
    config: &ProxyConfig,
) -> Bridged {
    let secret = match crate::jwt::authenticate(config.jwt.as_ref(), headers) {
        Ok(secret) => Ok(secret),
        Err(Denied::Refused(why)) => Err(unauthorized(&why)),
        Err(Denied::NoSecret) => Err(problem(
            Problem::Internal,
            match direction {
                Direction::ToJson(_) => {
                    "the REST-SSZ bridge needs --jwt-secret (it signs its own upstream tokens)"
                }
                Direction::ToRest(_) => "the JSON-RPC -> REST-SSZ bridge needs --jwt-secret",
            },
        )),
    };
    let id = call.rpc.as_ref().and_then(|rpc| rpc.id.as_deref());
    match (direction, secret) {
        (Direction::ToJson(route), Ok(secret)) => {
            rest_to_json(call, headers, &route, secret, config).await
        }
        (Direction::ToJson(_), Err(refused)) => refused,
        (Direction::ToRest(m), Ok(secret)) => {
            as_json_rpc(json_to_rest(call, m, secret, config).await, id)
        }
        (Direction::ToRest(_), Err(refused)) => as_json_rpc(refused, id),
    }
}

/// Translates one REST call (already routed) to JSON-RPC, calls the EL, and translates back.
async fn rest_to_json(
    call: &Call,
    headers: &HeaderMap,
    route: &Route,
    secret: &JwtSecret,
    config: &ProxyConfig,
) -> Bridged {
    if let Some(refused) = media_refusal(headers, route) {
        return refused;
    }
    let started = Instant::now();
    let rpc = match translate::request_from_route(route, call.fork.as_deref(), &call.body) {
        Ok(rpc) => rpc,
        Err(e) => return problem(request_problem(&e), e.to_string()),
    };
    let rpc_body = request::envelope(1, rpc.method.name, &rpc.params);
    let translate_request_us = started.elapsed().as_micros() as u64;
    let upstream_request_bytes = rpc_body.len() as u64;
    let request = request::json_rpc(
        config.upstream.uri("/"),
        Bytes::from(rpc_body),
        &upstream_headers(secret),
    );
    let sent = Instant::now();
    let limit = config.limits.max_answer_bytes;
    let answer = match config.upstream.send(request).await {
        Ok(response) => match answer::read(response, limit).await {
            Ok((StatusCode::OK, body)) => body,
            Ok((status, body)) => {
                let detail = format!(
                    "upstream answered HTTP {status}: {}",
                    String::from_utf8_lossy(&body[..body.len().min(800)])
                        .chars()
                        .take(200)
                        .collect::<String>()
                );
                let problem_type = if status == StatusCode::UNAUTHORIZED {
                    Problem::Internal
                } else {
                    Problem::from_rpc_code(-32603)
                };
                return problem(problem_type, detail);
            }
            Err(e) => return problem(Problem::Internal, e.to_string()),
        },
        Err(e @ (UpstreamError::Failed(..) | UpstreamError::Timeout(..))) => {
            config.upstream_transport.mark_unreachable();
            return problem(Problem::Internal, e.to_string());
        }
    };
    let upstream_us = sent.elapsed().as_micros() as u64;
    let started = Instant::now();
    let response = translate::rpc_answer_to_rest(rpc.method, rpc.fork, &answer);
    Bridged {
        response,
        translate_request_us: Some(translate_request_us),
        translate_response_us: Some(started.elapsed().as_micros() as u64),
        upstream_request_bytes: Some(upstream_request_bytes),
        upstream_response_bytes: Some(answer.len() as u64),
        upstream_us: Some(upstream_us),
    }
}

/// The refusal of a REST-SSZ request the bridge does not take: it takes uncompressed SSZ (the
/// spec compresses answers only), with an SSZ `Content-Type` on a POST of an SSZ resource.
fn media_refusal(headers: &HeaderMap, route: &Route) -> Option<Bridged> {
    if let Some(coding) = crate::classify::request_coding(headers) {
        return Some(problem(
            Problem::UnsupportedMediaType,
            format!(
                "Content-Encoding {coding:?} on a request: the bridge takes uncompressed SSZ (the spec compresses answers only)"
            ),
        ));
    }
    if route.resource.http_method() == HttpMethod::Post && !route.resource.is_json() {
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !content_type.starts_with(method::SSZ_CONTENT_TYPE) {
            return Some(problem(
                Problem::UnsupportedMediaType,
                format!(
                    "Content-Type {content_type:?}: {} takes {}",
                    route.resource,
                    method::SSZ_CONTENT_TYPE
                ),
            ));
        }
    }
    None
}

/// The problem of a request that does not translate: the spec's type for the error, except
/// that more hashes than the advertised `limits.*` (`bodies.max_count`,
/// `blobs.max_versioned_hashes`) is `413 request-too-large`.
fn request_problem(e: &sszgate_engine::Error) -> Problem {
    match e {
        sszgate_engine::Error::Ssz(ssz)
            if matches!(
                ssz.problem,
                sszgate_engine::ssz::SszProblem::OverLimit { .. }
            ) && matches!(ssz.path.as_str(), "block_hashes" | "versioned_hashes") =>
        {
            Problem::RequestTooLarge
        }
        other => other.problem(),
    }
}

fn unauthorized(why: &str) -> Bridged {
    let mut answer = problem(Problem::InvalidRequest, format!("JWT refused: {why}"));
    answer.response.status = 401;
    answer
}

/// Translates one JSON-RPC call to REST-SSZ, calls the EL, and translates the answer back.
async fn json_to_rest(
    call: &Call,
    m: &'static MethodSpec,
    secret: &JwtSecret,
    config: &ProxyConfig,
) -> Bridged {
    let id = call.rpc.as_ref().and_then(|rpc| rpc.id.as_deref());
    let params = call
        .rpc
        .as_ref()
        .and_then(|rpc| rpc.params.as_deref())
        .unwrap_or(b"[]");
    // Which forks are asked, in which order, and how bodies of several eras merge: the
    // translation's policy (`translate::ForkPlan`); here only the sending and the timing.
    let mut plan = translate::ForkPlan::new(m, params);
    let mut translate_request_us = 0;
    let mut upstream_request_bytes = 0;
    let mut upstream_response_bytes = 0;
    let mut upstream_us = 0;
    loop {
        let started = Instant::now();
        let Some((fork, rest)) = plan.next_request() else {
            break;
        };
        translate_request_us += started.elapsed().as_micros() as u64;
        upstream_request_bytes += rest.body.len() as u64;
        let sent = Instant::now();
        let (status, answer) = match call_rest(config, secret, m, rest).await {
            Ok(answer) => answer,
            Err(detail) => return problem(Problem::Internal, detail),
        };
        upstream_us += sent.elapsed().as_micros() as u64;
        upstream_response_bytes += answer.len() as u64;
        if plan.answer(fork, status, answer) == translate::NextStep::Done {
            break;
        }
    }
    let started = Instant::now();
    let json = match plan.outcome() {
        Ok(outcome) => rpc_result(id, outcome.as_deref()),
        Err(e) => return problem(e.problem(), e.to_string()),
    };
    Bridged {
        response: RestResponse {
            status: 200,
            content_type: Some(method::JSON_CONTENT_TYPE),
            no_store: false,
            body: json,
        },
        translate_request_us: Some(translate_request_us),
        translate_response_us: Some(started.elapsed().as_micros() as u64),
        upstream_request_bytes: Some(upstream_request_bytes),
        upstream_response_bytes: Some(upstream_response_bytes),
        upstream_us: Some(upstream_us),
    }
}

/// Sends one translated REST request upstream with the gateway's token; the status and the
/// decoded body, or what went wrong.
async fn call_rest(
    config: &ProxyConfig,
    secret: &JwtSecret,
    m: &MethodSpec,
    rest: translate::RestRequest,
) -> Result<(u16, Bytes), String> {
    let uri = config.upstream.uri(&rest.target);
    let request = request::rest(uri, rest, m.resource, &upstream_headers(secret));
    let response = config.upstream.send(request).await.map_err(|e| {
        config.upstream_transport.mark_unreachable();
        e.to_string()
    })?;
    let (status, body) = answer::read(response, config.limits.max_answer_bytes)
        .await
        .map_err(|e| e.to_string())?;
    Ok((status.as_u16(), body))
}

/// The headers of the gateway's own call to the EL: its own token (a CL's token cannot be
/// forwarded onto a different request) and the encodings it decodes.
fn upstream_headers(secret: &JwtSecret) -> CallHeaders {
    CallHeaders {
        token: secret.token(),
        client_version: None,
        accept_encoding: Some(request::ACCEPT_ENCODINGS),
    }
}

/// A JSON-RPC response object.
fn rpc_result(id: Option<&[u8]>, outcome: Result<&[u8], &RpcError>) -> Vec<u8> {
    let id = id.unwrap_or(b"null");
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id);
    match outcome {
        Ok(result) => {
            out.extend_from_slice(b",\"result\":");
            out.extend_from_slice(result);
        }
        Err(error) => {
            out.extend_from_slice(b",\"error\":");
            out.extend_from_slice(&serde_json::to_vec(error).expect("an error serializes"));
        }
    }
    out.push(b'}');
    out
}

/// A bridged JSON-RPC refusal: the problem as a JSON-RPC error object (HTTP 401 stays 401).
fn as_json_rpc(bridged: Bridged, id: Option<&[u8]>) -> Bridged {
    if bridged.response.content_type != Some(method::PROBLEM_CONTENT_TYPE) {
        return bridged;
    }
    let status = if bridged.response.status == 401 {
        401
    } else {
        200
    };
    let error = translate::error_from_problem(bridged.response.status, &bridged.response.body);
    Bridged {
        response: RestResponse {
            status,
            content_type: Some(method::JSON_CONTENT_TYPE),
            no_store: false,
            body: rpc_result(id, Err(&error)),
        },
        ..bridged
    }
}

/// The HTTP response of a bridged call, and the capture filled in.
/// `encoding` is what the CL accepts (see [`negotiate`]); bodies are compressed with it.
pub(crate) fn into_response(
    bridged: Bridged,
    capture: &mut Capture,
    encoding: Option<&'static str>,
) -> Response<Full<Bytes>> {
    let mut r = bridged.response;
    let mut content_encoding = None;
    if let Some(encoding) = encoding.filter(|_| !r.body.is_empty())
        && let Ok(Some(coding)) = Coding::parse(encoding)
        && let Ok(compressed) = coding.encode(&r.body)
    {
        r.body = compressed;
        content_encoding = Some(encoding);
        capture.encodings.1 = Some(encoding.to_string());
    }
    capture.mode = "bridge";
    capture.status = r.status;
    capture.translate_request_us = bridged.translate_request_us;
    capture.translate_response_us = bridged.translate_response_us;
    capture.upstream_request_bytes = bridged.upstream_request_bytes;
    capture.upstream_response_bytes = bridged.upstream_response_bytes;
    capture.upstream_ttlb_us = bridged.upstream_us;
    let body = Bytes::from(r.body);
    capture.response = vec![body.clone()];
    let mut response = Response::builder().status(r.status);
    if let Some(content_type) = r.content_type {
        response = response.header(header::CONTENT_TYPE, content_type);
    }
    if r.no_store {
        response = response.header(header::CACHE_CONTROL, "no-store");
    }
    if let Some(encoding) = content_encoding {
        response = response.header(header::CONTENT_ENCODING, encoding);
    }
    response.body(Full::new(body)).expect("a valid response")
}
