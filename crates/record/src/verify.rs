//! Verification on the recorder's thread: the messages of a finished call are decoded and
//! handed to a [`Verifier`]; the verdict lands in the call's facts, the metrics and, when a
//! check fails, a warning in the log. The call itself was answered long before.
//!
//! Only the calls with something to verify are decoded (newPayload, forkchoiceUpdated for the
//! roots it announces, getPayload, getBlobs), and only when they succeeded.

use sszgate_engine::{
    Fork, Message,
    method::{self, Family, MethodSpec, Route},
    scan,
};
use sszgate_verify::{Verdict, Verifier};

use crate::record::{Facts, Transport};

/// What a call is, for decoding it.
pub(crate) struct CallShape<'a> {
    pub(crate) transport: Transport,
    pub(crate) method: Option<&'a str>,
    pub(crate) route: Option<&'a Route>,
    pub(crate) fork: Option<Fork>,
    pub(crate) status: u16,
}

fn worth_decoding(m: &MethodSpec) -> bool {
    matches!(
        m.family,
        Family::NewPayload | Family::ForkchoiceUpdated | Family::GetPayload | Family::GetBlobs
    )
}

/// Decodes the call's request and answer and verifies them; writes the verdict into `facts`.
pub(crate) fn verify(
    verifier: &mut Verifier,
    call: &CallShape<'_>,
    request: &[u8],
    response: &[u8],
    facts: &mut Facts,
) {
    if facts.error_code.is_some() || !(200..300).contains(&call.status) {
        return;
    }
    let decoded = match call.transport {
        Transport::JsonRpc | Transport::WebSocket => {
            let Some(m) = call.method.and_then(|name| method::by_name(name).ok()) else {
                return;
            };
            if !worth_decoding(m) {
                return;
            }
            json_messages(m, request, response).map(|(req, resp)| (m, m.latest_fork(), req, resp))
        }
        Transport::RestSsz => {
            let Some(route) = call.route else {
                return;
            };
            // Versioned resources (/blobs/vN) carry no fork header: the row decides.
            let Some(m) = crate::meta::rest_method(route.resource, call.fork) else {
                return;
            };
            let fork = call.fork.unwrap_or_else(|| m.latest_fork());
            if !worth_decoding(m) {
                return;
            }
            ssz_messages(m, fork, route, call.status, request, response)
                .map(|(req, resp)| (m, fork, req, resp))
        }
        Transport::Other => return,
    };
    let outcome = match decoded {
        Ok((m, fork, req, resp)) => verifier.call(m, fork, &req, resp.as_ref()),
        Err(problem) => Some(sszgate_verify::Outcome {
            verdict: Verdict::Skipped(format!("the messages do not decode: {problem}")),
            micros: 0,
        }),
    };
    let Some(outcome) = outcome else { return };
    facts.verdict = Some(outcome.verdict.name().to_string());
    facts.verify_us = Some(outcome.micros);
    match outcome.verdict {
        Verdict::Ok { kzg } => facts.verify_check = kzg.then(|| "kzg".to_string()),
        Verdict::Failed(failure) => {
            tracing::warn!(
                method = call.method.unwrap_or("?"),
                check = failure.check.name(),
                detail = %failure.detail,
                "verification failed"
            );
            facts.verify_check = Some(failure.check.name().to_string());
            facts.verify_detail = Some(failure.detail);
        }
        Verdict::Skipped(reason) => facts.verify_detail = Some(reason),
    }
}

type Decoded = (Message, Option<Message>);

fn json_messages(
    m: &'static MethodSpec,
    request: &[u8],
    response: &[u8],
) -> Result<Decoded, String> {
    let fork = m.latest_fork();
    let params = scan::envelope(request)
        .and_then(|e| e.params)
        .ok_or("no params")?;
    let req = Message::from_json(m, fork, m.request, params).map_err(|e| e.to_string())?;
    let resp = match scan::envelope(response).and_then(|e| e.result) {
        Some(result) if result != b"null" => {
            Some(Message::from_json(m, fork, m.response, result).map_err(|e| e.to_string())?)
        }
        _ => None,
    };
    Ok((req, resp))
}

fn ssz_messages(
    m: &'static MethodSpec,
    fork: Fork,
    route: &Route,
    status: u16,
    request: &[u8],
    response: &[u8],
) -> Result<Decoded, String> {
    let req = match (m.family, route.payload_id) {
        (Family::GetPayload, Some(id)) => {
            Message::PayloadId(alloy_rpc_types_engine::PayloadId::new(id))
        }
        _ => Message::from_ssz(m, fork, m.request, request).map_err(|e| e.to_string())?,
    };
    let resp = if status == 200 {
        Some(Message::from_ssz(m, fork, m.response, response).map_err(|e| e.to_string())?)
    } else {
        None
    };
    Ok((req, resp))
}
