//! Classification of an incoming request: which transport, which call, and whether it can be
//! relayed at all. Reads the path, the headers and, for JSON-RPC, the envelope (`method`,
//! `id`) with the scanner; never the params.

use bytes::Bytes;
use http::{HeaderMap, Method};
use sszgate_engine::{Problem, method::Route, scan};
use sszgate_record::Transport;

/// What a request is.
#[derive(Clone, Debug)]
pub(crate) enum Class {
    /// JSON-RPC `POST /`: the method of the first call (batches have several), and its id.
    JsonRpc {
        /// Method of the (first) call.
        method: Option<String>,
    },
    /// REST-SSZ under `/engine/v1/`.
    Rest(Route),
}

impl Class {
    pub(crate) fn transport(&self) -> Transport {
        match self {
            Class::JsonRpc { .. } => Transport::JsonRpc,
            Class::Rest(_) => Transport::RestSsz,
        }
    }
}

/// A request the gateway answers itself, with the problem and a message.
#[derive(Clone, Debug)]
pub(crate) struct Refusal {
    pub(crate) problem: Problem,
    pub(crate) message: String,
    /// The JSON-RPC id to echo (raw JSON), when there was one.
    pub(crate) id: Option<Bytes>,
}

/// A refusal without a JSON-RPC id (the caller adds one when it knows it).
pub(crate) fn refuse(problem: Problem, message: impl Into<String>) -> Refusal {
    Refusal {
        problem,
        message: message.into(),
        id: None,
    }
}

/// The content coding a request's body is in, if any other than `identity`.
pub(crate) fn request_coding(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(http::header::CONTENT_ENCODING)
        .map(|v| v.to_str().unwrap_or("(not text)").trim())
        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("identity"))
}

/// True for a JSON-RPC request target.
pub(crate) fn is_json_rpc(method: &Method, path: &str) -> bool {
    method == Method::POST && (path == "/" || path.is_empty())
}

/// Classifies a request whose body has been read.
pub(crate) fn classify(
    method: &Method,
    target: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> Result<Class, Refusal> {
    let path = target.split('?').next().unwrap_or_default();
    if is_json_rpc(method, path) {
        if let Some(coding) = request_coding(headers) {
            // No EL takes a coded JSON-RPC request, and its calls could not be read here
            // without expanding it: refused as it is.
            return Err(refuse(
                Problem::InvalidRequest,
                format!(
                    "Content-Encoding {coding:?} on a JSON-RPC request: the Engine API's JSON-RPC takes plain JSON"
                ),
            ));
        }
        let calls = scan::calls(body).ok_or_else(|| {
            refuse(
                Problem::ParseError,
                "request body is not a JSON-RPC object or batch",
            )
        })?;
        if calls.is_empty() {
            return Err(refuse(Problem::InvalidRequest, "empty JSON-RPC batch"));
        }
        let mut first = None;
        for (i, call) in calls.iter().enumerate() {
            let Some(envelope) = scan::envelope(call) else {
                // An object that does not scan is broken JSON; anything else is not a call.
                let object = call.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
                return Err(if object {
                    refuse(Problem::ParseError, "request body is not valid JSON")
                } else {
                    refuse(
                        Problem::InvalidRequest,
                        format!("call {i} of the body is not a JSON object"),
                    )
                });
            };
            let Some(m) = envelope.method else {
                return Err(Refusal {
                    problem: Problem::InvalidRequest,
                    message: format!("call {i} has no \"method\" string"),
                    id: envelope.id.map(Bytes::copy_from_slice),
                });
            };
            let limit = crate::sizes::json_call_limit(m);
            if call.len() > limit {
                return Err(Refusal {
                    problem: Problem::RequestTooLarge,
                    message: format!(
                        "call {i} is {} bytes, over the limit of {limit} bytes for {m}",
                        call.len()
                    ),
                    id: envelope.id.map(Bytes::copy_from_slice),
                });
            }
            first.get_or_insert_with(|| m.to_string());
        }
        return Ok(Class::JsonRpc { method: first });
    }
    if path.starts_with(sszgate_engine::method::REST_BASE) {
        return Route::parse(method.as_str(), target)
            .map(Class::Rest)
            .map_err(|e| refuse(e.problem(), e.to_string()));
    }
    Err(refuse(
        Problem::MethodNotFound,
        format!(
            "no Engine API endpoint at {method} {path} (JSON-RPC is POST /, REST-SSZ is under /engine/v1/)"
        ),
    ))
}

/// The JSON-RPC error body for a refusal.
pub(crate) fn json_rpc_error(refusal: &Refusal) -> Bytes {
    let id = refusal.id.as_deref().map_or("null".to_string(), |id| {
        String::from_utf8_lossy(id).into_owned()
    });
    let message = serde_json::to_string(&refusal.message).expect("a string serializes");
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{},"message":{message}}}}}"#,
        refusal.problem.rpc_code()
    ))
}

/// The problem+json body for a refusal.
pub(crate) fn problem_json(refusal: &Refusal) -> Bytes {
    let body = sszgate_engine::translate::ProblemBody {
        type_uri: refusal.problem.type_uri().to_string(),
        detail: Some(refusal.message.clone()),
    };
    Bytes::from(serde_json::to_vec(&body).expect("a problem serializes"))
}

/// The id of the first call of a JSON-RPC body, to echo in an error about it.
pub(crate) fn first_id(body: &[u8]) -> Option<Bytes> {
    let calls = scan::calls(body)?;
    scan::envelope(calls.first()?)?
        .id
        .map(Bytes::copy_from_slice)
}
