//! Translation between the two transports, one call at a time.
//!
//! A JSON-RPC request (`method` + `params`) becomes a REST request (HTTP method, target, fork
//! header, body) and back; a JSON-RPC result or error becomes a REST response (status, content
//! type, body or problem+json) and back. Which resource and which version comes from the method
//! table; the bodies go through [`Message`]. Nothing here opens a socket.

use serde::{Deserialize, Serialize};

use crate::{
    error::{Error, Problem, Result},
    fork::Fork,
    json,
    message::Message,
    method::{
        self, HttpMethod, JSON_CONTENT_TYPE, MethodSpec, PROBLEM_CONTENT_TYPE, Resource, Route,
        SSZ_CONTENT_TYPE, Scope,
    },
};

/// A REST-SSZ request, ready to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestRequest {
    /// The HTTP method.
    pub method: HttpMethod,
    /// Path and query, e.g. `/engine/v1/payloads/0x…`.
    pub target: String,
    /// The `Eth-Execution-Version` value, for fork-scoped resources.
    pub fork: Option<Fork>,
    /// The body (empty for `GET`).
    pub body: Vec<u8>,
}

impl RestRequest {
    /// The `Content-Type` of the body, if it has one.
    pub fn content_type(&self) -> Option<&'static str> {
        (self.method == HttpMethod::Post).then_some(SSZ_CONTENT_TYPE)
    }
}

/// A REST-SSZ response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestResponse {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type`, absent for `204`.
    pub content_type: Option<&'static str>,
    /// `Cache-Control: no-store` where the spec requires it (payload retrieval).
    pub no_store: bool,
    /// The body.
    pub body: Vec<u8>,
}

/// A JSON-RPC call resolved from a REST request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpcCall {
    /// The method row.
    pub method: &'static MethodSpec,
    /// The fork of the call.
    pub fork: Fork,
    /// The `params` array, as JSON.
    pub params: Vec<u8>,
    /// The typed request, for callers that need more than the JSON (e.g. versioned hashes).
    pub message: Message,
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code.
    pub code: i64,
    /// The message.
    pub message: String,
}

/// A problem+json body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemBody {
    /// The problem type URI.
    #[serde(rename = "type")]
    pub type_uri: String,
    /// The human-readable detail, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The REST request for a JSON-RPC call of `method_name` with `params`. `fork` picks the fork
/// where the method serves several (default: the newest it serves).
pub fn request_to_rest(
    method_name: &str,
    params: &[u8],
    fork: Option<Fork>,
) -> Result<RestRequest> {
    let method = method::by_name(method_name)?;
    let fork = fork.unwrap_or_else(|| method.latest_fork());
    method.check_fork(fork)?;
    let message = Message::from_json(method, fork, method.request, params)?;
    let fork_header = (method.resource.scope() == Scope::ForkScoped).then_some(fork);
    let mut route = Route {
        resource: method.resource,
        payload_id: None,
        range: None,
    };
    let body = match (&message, method.resource) {
        (Message::PayloadId(id), _) => {
            route.payload_id = Some(id.0.0);
            Vec::new()
        }
        (Message::BodiesByRange { from, count }, _) => {
            route.range = Some((*from, *count));
            Vec::new()
        }
        (_, Resource::Capabilities | Resource::Identity) => Vec::new(),
        _ => message.to_ssz(fork)?,
    };
    Ok(RestRequest {
        method: method.resource.http_method(),
        target: route.target(),
        fork: fork_header,
        body,
    })
}

/// The JSON-RPC call for a REST request. `fork_header` is the `Eth-Execution-Version` value;
/// it must be present for fork-scoped resources and is ignored otherwise.
pub fn request_from_rest(
    http_method: &str,
    target: &str,
    fork_header: Option<&str>,
    body: &[u8],
) -> Result<RpcCall> {
    let route = Route::parse(http_method, target)?;
    let fork = match (route.resource.scope(), fork_header) {
        (Scope::ForkScoped, None) => {
            return Err(Error::UnknownFork(format!(
                "(missing {} header)",
                method::FORK_HEADER
            )));
        }
        (Scope::ForkScoped, Some(value)) => value.parse::<Fork>()?,
        // Not fork-scoped: the header is ignored, the table row carries the forks.
        _ => Fork::Amsterdam,
    };
    let method = method::for_resource(route.resource, fork)?;
    let message = match route.resource {
        Resource::GetPayload => Message::PayloadId(alloy_rpc_types_engine::PayloadId::new(
            route.payload_id.expect("parsed with the route"),
        )),
        Resource::BodiesByRange => {
            let (from, count) = route.range.expect("parsed with the route");
            Message::BodiesByRange { from, count }
        }
        Resource::Capabilities => Message::Capabilities(Vec::new()),
        Resource::Identity => Message::ClientVersion(Vec::new()),
        _ => Message::from_ssz(method, fork, method.request, body)?,
    };
    let params = match &message {
        // The gateway asks these on its own behalf; the REST caller sends no body.
        Message::Capabilities(_) => b"[[]]".to_vec(),
        Message::ClientVersion(_) => format!(
            r#"[{{"code":"SG","name":"sszgate","version":"{}","commit":"00000000"}}]"#,
            env!("CARGO_PKG_VERSION")
        )
        .into_bytes(),
        m => m.to_json_params()?,
    };
    Ok(RpcCall {
        method,
        fork,
        params,
        message,
    })
}

/// The REST response for a JSON-RPC `result` of `method` under `fork`.
pub fn result_to_rest(
    method: &'static MethodSpec,
    fork: Fork,
    result: &[u8],
) -> Result<RestResponse> {
    let message = Message::from_json(method, fork, method.response, result)?;
    let no_store = method.resource == Resource::GetPayload;
    if message.is_no_content() {
        return Ok(RestResponse {
            status: 204,
            content_type: None,
            no_store,
            body: Vec::new(),
        });
    }
    let content_type = if method.resource.is_json() {
        JSON_CONTENT_TYPE
    } else {
        SSZ_CONTENT_TYPE
    };
    Ok(RestResponse {
        status: 200,
        content_type: Some(content_type),
        no_store,
        body: message.to_ssz(fork)?,
    })
}

/// The JSON-RPC `result` (or error) for a REST response to a call of `method` under `fork`.
/// `blobs_requested` is the number of hashes asked for, which a `204` to `/blobs/v1` needs
/// (JSON-RPC V1 answers a `null` per blob rather than a `null` list).
pub fn result_from_rest(
    method: &'static MethodSpec,
    fork: Fork,
    status: u16,
    body: &[u8],
    blobs_requested: usize,
) -> Result<std::result::Result<Vec<u8>, RpcError>> {
    match status {
        200 => {
            let message = Message::from_ssz(method, fork, method.response, body)?;
            Ok(Ok(message.to_json()?))
        }
        204 => {
            let null = match method.version {
                1 if method.resource == Resource::Blobs(1) => {
                    json::to_vec(&vec![serde_json::Value::Null; blobs_requested])?
                }
                _ if matches!(method.resource, Resource::Blobs(_)) => b"null".to_vec(),
                _ => {
                    return Err(Error::invalid(
                        format!("{} answer", method.resource),
                        "204 No Content where the spec has a body",
                    ));
                }
            };
            Ok(Ok(null))
        }
        _ => Ok(Err(error_from_problem(status, body))),
    }
}

/// The REST problem response for a JSON-RPC error.
pub fn error_to_problem(error: &RpcError) -> RestResponse {
    let problem = Problem::from_rpc_code(error.code);
    problem_response(problem, Some(error.message.clone()))
}

/// A REST problem response.
pub fn problem_response(problem: Problem, detail: Option<String>) -> RestResponse {
    let body = ProblemBody {
        type_uri: problem.type_uri().to_string(),
        detail,
    };
    RestResponse {
        status: problem.http_status(),
        content_type: Some(PROBLEM_CONTENT_TYPE),
        no_store: false,
        body: serde_json::to_vec(&body).expect("a problem body serializes"),
    }
}

/// The JSON-RPC error for a REST error response (problem+json, or anything else an upstream
/// answered: the status picks the problem when the body does not name one).
pub fn error_from_problem(status: u16, body: &[u8]) -> RpcError {
    let parsed: Option<ProblemBody> = serde_json::from_slice(body).ok();
    let problem = parsed
        .as_ref()
        .and_then(|p| Problem::from_type_uri(&p.type_uri))
        .or_else(|| Problem::ALL.into_iter().find(|p| p.http_status() == status))
        .unwrap_or(Problem::Internal);
    let message = match parsed {
        Some(ProblemBody {
            detail: Some(detail),
            ..
        }) => detail,
        Some(ProblemBody { type_uri, .. }) => type_uri,
        None => format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ),
    };
    RpcError {
        code: problem.rpc_code(),
        message,
    }
}

/// The problem response for an error of this crate (a request that could not be translated).
pub fn error_response(error: &Error) -> RestResponse {
    problem_response(error.problem(), Some(error.to_string()))
}
