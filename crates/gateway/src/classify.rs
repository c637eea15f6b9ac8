//! Refusals and classification: what the gateway refuses, and how a refusal is shaped. The
//! body of a call is classified here, once: a JSON-RPC body by its envelope (`method`, `id`,
//! read with the scanner; never the params), a REST-SSZ call by the route its head named.
//!
//! Not here: what a call is from its head and the transport rule (`call`), answering and
//! recording a refusal (`proxy`).

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use sszgate_engine::{Problem, scan};
use sszgate_record::{ErrorSide, Transport};

use crate::call::{Call, RpcEnvelope};

/// A request the gateway answers itself: the problem, a message, and whose fault it is.
#[derive(Clone, Debug)]
pub(crate) struct Refusal {
    pub(crate) problem: Problem,
    pub(crate) message: String,
    /// The JSON-RPC id to echo (raw JSON), when there was one.
    pub(crate) id: Option<Bytes>,
    /// Whose fault: the CL's unless said otherwise.
    pub(crate) side: ErrorSide,
    /// The HTTP status, when HTTP itself must say it (a timeout, an upstream failure) rather
    /// than the problem's.
    pub(crate) status: Option<StatusCode>,
}

impl Refusal {
    /// The same refusal, the fault of `side`.
    pub(crate) fn by(self, side: ErrorSide) -> Refusal {
        Refusal { side, ..self }
    }

    /// The same refusal, answered with `status`.
    pub(crate) fn with_status(self, status: StatusCode) -> Refusal {
        Refusal {
            status: Some(status),
            ..self
        }
    }
}

/// A refusal of the CL's call, without a JSON-RPC id (the caller adds one when it knows it).
pub(crate) fn refuse(problem: Problem, message: impl Into<String>) -> Refusal {
    Refusal {
        problem,
        message: message.into(),
        id: None,
        side: ErrorSide::Cl,
        status: None,
    }
}

/// The content coding a request's body is in, if any other than `identity`.
pub(crate) fn request_coding(headers: &HeaderMap) -> Option<&str> {
    let header = headers.get(http::header::CONTENT_ENCODING)?;
    sszgate_engine::coding::coded(Some(header.to_str().unwrap_or("(not text)")))
}

/// Classifies a call whose body has been read: a JSON-RPC body gets its envelope scanned
/// into `call.rpc`; a REST-SSZ call needs the route its head named; anything else is refused.
pub(crate) fn classify(call: &mut Call, headers: &HeaderMap) -> Result<(), Refusal> {
    match call.transport {
        Transport::JsonRpc => {
            call.rpc = Some(scan_json_rpc(headers, &call.body)?);
            Ok(())
        }
        Transport::RestSsz => match &call.route {
            Some(Ok(_)) => Ok(()),
            Some(Err(refusal)) => Err(refusal.clone()),
            None => unreachable!("a REST-SSZ call's route is parsed with its head"),
        },
        Transport::Other | Transport::WebSocket => {
            let path = call.target.split('?').next().unwrap_or_default();
            Err(refuse(
                Problem::MethodNotFound,
                format!(
                    "no Engine API endpoint at {} {path} (JSON-RPC is POST /, REST-SSZ is under /engine/v1/)",
                    call.method
                ),
            ))
        }
    }
}

/// The envelope of a JSON-RPC body: every call scanned and held to its method's size limit,
/// the first call's method and id kept. A refusal echoes the id of the call it is about, or
/// else the first call's.
fn scan_json_rpc(headers: &HeaderMap, body: &Bytes) -> Result<RpcEnvelope, Refusal> {
    let piece = |raw: &[u8]| body.slice_ref(raw);
    if let Some(coding) = request_coding(headers) {
        return Err(coded_json_rpc(coding, body));
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
    // A body that is one object is a single call; an array, even of one, is a batch.
    let single = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    let mut first: Option<RpcEnvelope> = None;
    let with_id = |refusal: Refusal, id: Option<&[u8]>, first: &Option<RpcEnvelope>| Refusal {
        id: id
            .map(piece)
            .or_else(|| first.as_ref().and_then(|f| f.id.clone())),
        ..refusal
    };
    for (i, call) in calls.iter().enumerate() {
        let Some(envelope) = scan::envelope(call) else {
            // An object that does not scan is broken JSON; anything else is not a call.
            let object = call.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
            let refusal = if object {
                refuse(Problem::ParseError, "request body is not valid JSON")
            } else {
                refuse(
                    Problem::InvalidRequest,
                    format!("call {i} of the body is not a JSON object"),
                )
            };
            return Err(with_id(refusal, None, &first));
        };
        let Some(m) = envelope.method else {
            let refusal = refuse(
                Problem::InvalidRequest,
                format!("call {i} has no \"method\" string"),
            );
            return Err(with_id(refusal, envelope.id, &first));
        };
        let limit = crate::sizes::json_call_limit(m);
        if call.len() > limit {
            let refusal = refuse(
                Problem::RequestTooLarge,
                format!(
                    "call {i} is {} bytes, over the limit of {limit} bytes for {m}",
                    call.len()
                ),
            );
            return Err(with_id(refusal, envelope.id, &first));
        }
        first.get_or_insert_with(|| RpcEnvelope {
            method: Some(m.to_string()),
            id: envelope.id.map(piece),
            params: envelope.params.filter(|_| single).map(piece),
            single,
        });
    }
    Ok(first.expect("a batch of at least one call, each scanned"))
}

/// The refusal of a JSON-RPC request with a content coding: no EL takes one, and its calls
/// could not be read here without expanding it, so it is refused as it is (echoing the first
/// call's id should the body be plain JSON after all).
fn coded_json_rpc(coding: &str, body: &Bytes) -> Refusal {
    let first_id = scan::calls(body).and_then(|calls| {
        scan::envelope(calls.first()?)?
            .id
            .map(|id| body.slice_ref(id))
    });
    Refusal {
        id: first_id,
        ..refuse(
            Problem::InvalidRequest,
            format!(
                "Content-Encoding {coding:?} on a JSON-RPC request: the Engine API's JSON-RPC takes plain JSON"
            ),
        )
    }
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
