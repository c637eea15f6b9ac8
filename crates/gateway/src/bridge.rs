//! The bridge: a CL speaking REST-SSZ in front of an EL speaking JSON-RPC.
//!
//! One REST call becomes one `engine_*Vn` call for the fork in `Eth-Execution-Version` (the
//! method table decides which), and the JSON-RPC answer becomes the REST answer the spec
//! requires: SSZ body, `204` for empty blob answers, `Cache-Control: no-store` on payload
//! retrieval, problem+json with the mapped type for errors. The CL's JWT is verified here and
//! the gateway signs its own for the upstream (a token cannot be forwarded onto a different
//! request). Nothing is forwarded half-translated: a request that does not translate is
//! answered here; an answer that does not translate becomes `500 internal` naming the fault.

use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use sszgate_engine::{
    Problem,
    method::{self, HttpMethod, Route},
    scan,
    translate::{self, RestResponse, RpcError},
};
use sszgate_record::Capture;

use crate::{ProxyConfig, upstream::UpstreamError};

/// Which transport the upstream EL speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpstreamTransport {
    /// JSON-RPC only: REST-SSZ calls are translated.
    Json,
    /// REST-SSZ (and JSON-RPC): REST-SSZ calls are relayed as they are.
    Ssz,
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

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

/// Translates one REST call (already routed) to JSON-RPC, calls the EL, and translates back.
pub(crate) async fn rest_to_json(
    method: &http::Method,
    target: &str,
    headers: &HeaderMap,
    route: &Route,
    body: Bytes,
    config: &ProxyConfig,
) -> Bridged {
    let Some(secret) = &config.jwt else {
        return problem(
            Problem::Internal,
            "the REST-SSZ bridge needs --jwt-secret (it signs its own upstream tokens)",
        );
    };
    match bearer(headers) {
        None => return unauthorized("no bearer token"),
        Some(token) => {
            if let Err(why) = secret.verify(token) {
                return unauthorized(&why);
            }
        }
    }
    if route.resource.http_method() == HttpMethod::Post && !route.resource.is_json() {
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !content_type.starts_with(method::SSZ_CONTENT_TYPE) {
            return problem(
                Problem::UnsupportedMediaType,
                format!(
                    "Content-Type {content_type:?}: {} takes {}",
                    route.resource,
                    method::SSZ_CONTENT_TYPE
                ),
            );
        }
    }
    let fork_header = headers
        .get(method::FORK_HEADER)
        .and_then(|v| v.to_str().ok());
    let started = Instant::now();
    let call = match translate::request_from_rest(method.as_str(), target, fork_header, &body) {
        Ok(call) => call,
        Err(e) => return problem(e.problem(), e.to_string()),
    };
    let rpc_body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"{}","params":{}}}"#,
        call.method.name,
        String::from_utf8_lossy(&call.params)
    );
    let translate_request_us = started.elapsed().as_micros() as u64;
    let upstream_request_bytes = rpc_body.len() as u64;
    let request = Request::post(config.upstream.uri("/"))
        .header(header::CONTENT_TYPE, method::JSON_CONTENT_TYPE)
        .header(header::AUTHORIZATION, format!("Bearer {}", secret.token()))
        .body(Full::new(Bytes::from(rpc_body)))
        .expect("a valid request");
    let sent = Instant::now();
    let answer = match config.upstream.send(request).await {
        Ok(response) => {
            let status = response.status();
            match response.into_body().collect().await {
                Ok(body) if status == StatusCode::OK => body.to_bytes(),
                Ok(body) => {
                    let detail = format!(
                        "upstream answered HTTP {status}: {}",
                        String::from_utf8_lossy(&body.to_bytes()[..])
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
                Err(e) => return problem(Problem::Internal, format!("upstream body failed: {e}")),
            }
        }
        Err(e @ (UpstreamError::Failed(..) | UpstreamError::Timeout(..))) => {
            return problem(Problem::Internal, e.to_string());
        }
    };
    let upstream_us = sent.elapsed().as_micros() as u64;
    let started = Instant::now();
    let response = match scan::envelope(&answer) {
        Some(envelope) if envelope.error.is_some() => {
            let error = envelope.error.unwrap_or_default();
            let error: RpcError = serde_json::from_slice(error).unwrap_or(RpcError {
                code: -32603,
                message: String::from_utf8_lossy(error).into_owned(),
            });
            translate::error_to_problem(&error)
        }
        Some(envelope) if envelope.result.is_some() => {
            let result = envelope.result.unwrap_or_default();
            match translate::result_to_rest(call.method, call.fork, result) {
                Ok(response) => response,
                Err(e) => translate::problem_response(
                    Problem::Internal,
                    Some(format!(
                        "the EL's {} answer does not translate: {e}",
                        call.method.name
                    )),
                ),
            }
        }
        _ => translate::problem_response(
            Problem::Internal,
            Some("the EL's answer is not a JSON-RPC response".into()),
        ),
    };
    Bridged {
        response,
        translate_request_us: Some(translate_request_us),
        translate_response_us: Some(started.elapsed().as_micros() as u64),
        upstream_request_bytes: Some(upstream_request_bytes),
        upstream_response_bytes: Some(answer.len() as u64),
        upstream_us: Some(upstream_us),
    }
}

fn unauthorized(why: &str) -> Bridged {
    let mut answer = problem(Problem::InvalidRequest, format!("JWT refused: {why}"));
    answer.response.status = 401;
    answer
}

/// The HTTP response of a bridged call, and the capture filled in.
pub(crate) fn into_response(bridged: Bridged, capture: &mut Capture) -> Response<Full<Bytes>> {
    let r = bridged.response;
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
    response.body(Full::new(body)).expect("a valid response")
}
