//! Applies the control point's decisions to an admitted call (`inject` decides): a pause
//! holds or refuses it; a rule delays it, answers it for the EL in the caller's transport,
//! drops its connection, or relays it and corrupts a field of the EL's JSON-RPC answer. Each
//! changed call carries the rule in its record (`injected`) and is counted in
//! `sszgate_injected_total{method,action}`.
//!
//! Not here: the rules themselves (`inject`), the relay (`proxy`).

use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use sszgate_engine::{
    Fork, Message, Problem,
    alloy_engine::{ForkchoiceUpdated, PayloadStatus, PayloadStatusEnum},
    method::{self, Family, MethodSpec},
    translate::{self, RpcError},
};
use sszgate_record::Recorder;

use crate::{
    ProxyConfig,
    call::Call,
    classify,
    inject::{Action, Injection},
    proxy::{ResponseBody, refuse},
};

/// What becomes of a call after the control point.
pub(crate) enum Stage {
    /// On to the bridge or the relay, as usual (perhaps late).
    Go(Call),
    /// Relayed, and the answer's JSON-RPC `result` changed at `pointer`.
    Corrupt(Call, String, serde_json::Value),
    /// Answered here, recorded.
    Answered(Response<ResponseBody>),
    /// The connection is to be closed without an answer (recorded).
    Drop,
}

/// The control point's stage: the pause, then the first rule whose turn it is.
pub(crate) async fn stage(mut call: Call, config: &ProxyConfig, recorder: &Recorder) -> Stage {
    if config.control.idle() {
        return Stage::Go(call);
    }
    let name = call.method_name().map(str::to_string);
    let label = name.as_deref().unwrap_or("none");
    match config.control.pass().await {
        Err(()) => {
            recorder.metrics().injected(label, "held");
            call.injected = Some("paused: refused".into());
            let refusal = classify::refuse(
                Problem::Internal,
                "forwarding is paused (sszgate ctl resume)",
            );
            return Stage::Answered(refuse(
                call,
                refusal.with_status(StatusCode::SERVICE_UNAVAILABLE),
                recorder,
            ));
        }
        Ok(true) => {
            recorder.metrics().injected(label, "held");
            call.injected = Some("paused: held until resumed".into());
        }
        Ok(false) => {}
    }
    let Some(injection) = config.control.decide(name.as_deref()) else {
        return Stage::Go(call);
    };
    recorder.metrics().injected(label, injection.action.name());
    let note = match call.injected.take() {
        Some(held) => format!("{held}; {}", injection.note()),
        None => injection.note(),
    };
    call.injected = Some(note);
    apply(call, injection, recorder).await
}

async fn apply(call: Call, injection: Injection, recorder: &Recorder) -> Stage {
    match injection.action {
        Action::Delay { ms } => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Stage::Go(call)
        }
        Action::RpcError { code, message } => {
            Stage::Answered(answer_error(call, RpcError { code, message }, recorder))
        }
        Action::HttpStatus { status } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            Stage::Answered(answer(call, status, None, Bytes::new(), recorder))
        }
        Action::PayloadStatus { status } => Stage::Answered(answer_status(call, &status, recorder)),
        Action::Drop => {
            let mut capture = call.into_capture();
            capture.error_message =
                Some("connection closed without an answer (a rule's drop)".into());
            recorder.record(capture);
            Stage::Drop
        }
        Action::Corrupt { pointer, value } if call.rpc.as_ref().is_some_and(|r| r.single) => {
            Stage::Corrupt(call, pointer, value)
        }
        Action::Corrupt { .. } => {
            let mut call = call;
            if let Some(note) = &mut call.injected {
                note.push_str(" (not applied: only a single JSON-RPC call's answer is corrupted)");
            }
            Stage::Go(call)
        }
    }
}

/// A JSON-RPC error in the caller's transport: an error object, or problem+json.
fn answer_error(call: Call, error: RpcError, recorder: &Recorder) -> Response<ResponseBody> {
    if call.answers_in_json_rpc() {
        let body = json_rpc(
            &call,
            "error",
            &serde_json::to_vec(&error).expect("an error serializes"),
        );
        return answer(
            call,
            StatusCode::OK,
            Some(method::JSON_CONTENT_TYPE),
            body,
            recorder,
        );
    }
    let problem = translate::error_to_problem(&error);
    let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::BAD_REQUEST);
    answer(
        call,
        status,
        problem.content_type,
        Bytes::from(problem.body),
        recorder,
    )
}

/// A `SYNCING`/`ACCEPTED` answer to a newPayload or forkchoiceUpdated, typed and written in
/// the caller's transport.
fn answer_status(call: Call, status: &str, recorder: &Recorder) -> Response<ResponseBody> {
    let status = PayloadStatus::from_status(if status == "ACCEPTED" {
        PayloadStatusEnum::Accepted
    } else {
        PayloadStatusEnum::Syncing
    });
    let spec = call.method_spec();
    let message = match spec.map(|m| m.family) {
        Some(Family::ForkchoiceUpdated) => {
            Message::ForkchoiceResponse(ForkchoiceUpdated::new(status))
        }
        _ => Message::PayloadStatus(status),
    };
    let written = match (spec, call.answers_in_json_rpc()) {
        (Some(_), true) => message
            .to_json()
            .map(|json| json_rpc(&call, "result", &json))
            .map_err(|e| e.to_string()),
        (Some(m), false) => message
            .to_ssz(fork_of(&call, m))
            .map(Bytes::from)
            .map_err(|e| e.to_string()),
        (None, _) => Err("no method to answer for".to_string()),
    };
    match written {
        Ok(body) if call.answers_in_json_rpc() => answer(
            call,
            StatusCode::OK,
            Some(method::JSON_CONTENT_TYPE),
            body,
            recorder,
        ),
        Ok(body) => answer(
            call,
            StatusCode::OK,
            Some(method::SSZ_CONTENT_TYPE),
            body,
            recorder,
        ),
        Err(e) => {
            let refusal =
                classify::refuse(Problem::Internal, format!("a rule's payload status: {e}"));
            refuse(call, refusal, recorder)
        }
    }
}

/// The fork a REST call named (the method's newest when it named none it serves).
fn fork_of(call: &Call, m: &MethodSpec) -> Fork {
    call.fork
        .as_deref()
        .and_then(|f| f.parse::<Fork>().ok())
        .filter(|f| m.serves(*f))
        .unwrap_or_else(|| m.latest_fork())
}

/// `{"jsonrpc":"2.0","id":…,"<member>":<value>}` with the call's id.
fn json_rpc(call: &Call, member: &str, value: &[u8]) -> Bytes {
    let id = call
        .rpc
        .as_ref()
        .and_then(|rpc| rpc.id.clone())
        .unwrap_or_else(|| Bytes::from_static(b"null"));
    let mut out = Vec::with_capacity(value.len() + id.len() + 32);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(&id);
    out.extend_from_slice(format!(r#","{member}":"#).as_bytes());
    out.extend_from_slice(value);
    out.push(b'}');
    Bytes::from(out)
}

/// Answers `call` with `body`, and records it.
pub(crate) fn answer(
    call: Call,
    status: StatusCode,
    content_type: Option<&'static str>,
    body: Bytes,
    recorder: &Recorder,
) -> Response<ResponseBody> {
    let arrived = call.arrived;
    let mut capture = call.into_capture();
    capture.status = status.as_u16();
    capture.response = vec![body.clone()];
    capture.total_us = arrived.elapsed().as_micros() as u64;
    recorder.record(capture);
    let mut response = Response::builder().status(status);
    if let Some(content_type) = content_type {
        response = response.header(header::CONTENT_TYPE, content_type);
    }
    response
        .body(
            Full::new(body)
                .map_err(|never| match never {})
                .boxed_unsync(),
        )
        .expect("a valid response")
}

/// The EL's JSON-RPC answer with `result` changed at `pointer` to `value`; `Err` says why it
/// could not be (not JSON, no result, no such field).
pub(crate) fn corrupt(
    answer: &[u8],
    pointer: &str,
    value: serde_json::Value,
) -> Result<Vec<u8>, String> {
    let mut doc: serde_json::Value =
        serde_json::from_slice(answer).map_err(|e| format!("the answer is not JSON: {e}"))?;
    let result = doc.get_mut("result").ok_or("the answer has no result")?;
    let field = result
        .pointer_mut(pointer)
        .ok_or_else(|| format!("the result has no {pointer}"))?;
    *field = value;
    Ok(serde_json::to_vec(&doc).expect("a JSON value serializes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_of_the_result_is_corrupted_and_nothing_else() {
        let answer = br#"{"jsonrpc":"2.0","id":3,"result":{"payloadStatus":{"status":"VALID","latestValidHash":"0x01"},"payloadId":null}}"#;
        let bad = corrupt(
            answer,
            "/payloadStatus/status",
            serde_json::json!("INVALID"),
        )
        .unwrap();
        let bad: serde_json::Value = serde_json::from_slice(&bad).unwrap();
        assert_eq!(
            bad,
            serde_json::json!({"jsonrpc":"2.0","id":3,"result":{"payloadStatus":{"status":"INVALID","latestValidHash":"0x01"},"payloadId":null}})
        );
        assert!(
            corrupt(answer, "/nope", serde_json::json!(1))
                .unwrap_err()
                .contains("no /nope")
        );
        assert!(
            corrupt(b"{\"error\":{}}", "/a", serde_json::json!(1))
                .unwrap_err()
                .contains("no result")
        );
        assert!(
            corrupt(b"\x00", "/a", serde_json::json!(1))
                .unwrap_err()
                .contains("not JSON")
        );
    }
}
