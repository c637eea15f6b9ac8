//! The recorder's pipeline: one capture becomes its records in stages, each a small function
//! of its own: the answer joined as its readers need it ([`join`]), bounded decode of the
//! content codings ([`decode`]), split into calls (a JSON-RPC batch into its elements,
//! [`split`]), the facts of each call ([`facts`], the scanner of [`meta`]), its check
//! ([`check`], `sszgate_verify::call`), and the record ([`record`]).
//!
//! What happens to a blob answer's blobs is decided once per call, from what checks them
//! (`sszgate_verify::call::blob_mode`): the join leaves their digits out when nothing decodes
//! them (and no body is kept), and the check reads the answer as joined, without joining
//! again.
//!
//! Not here: the queue, the worker's thread, its fault catching, batching and sinks
//! (`recorder`).

use std::borrow::Cow;

use bytes::Bytes;
use sszgate_engine::{
    Fork,
    blob_answer::{Answer, BlobMode},
    coding, json, method, scan,
};
use sszgate_verify::{
    Verdict, Verifier,
    call::{self, RecordedCall, Wire},
};

use crate::{
    meta,
    record::{self, Capture, Facts, Record, Transport},
};

/// Stage 1: the answer's frames as one body. A single JSON-RPC call's blob answer, not
/// content-coded, is joined without its blobs' digits when `mode` does not decode them and
/// no body is kept (`keeps_bodies`: a kept body needs them); any other answer is joined whole
/// (a single frame as it is).
pub(crate) fn join<'a>(
    c: &Capture,
    frames: &'a [Bytes],
    mode: BlobMode,
    keeps_bodies: bool,
    scratch: &'a mut Vec<u8>,
) -> Answer<'a> {
    let single_call = !keeps_bodies
        && c.transport == Some(Transport::JsonRpc)
        && !is_batch(&c.request)
        && coding::coded(c.encodings.1.as_deref()).is_none();
    let method = single_call
        .then(|| match &c.method {
            Some(name) => Some(name.as_str()),
            None => scan::envelope(&c.request)?.method,
        })
        .flatten()
        .and_then(|name| method::by_name(name).ok());
    Answer::join(frames, method, mode, scratch)
}

/// A body as the facts read it.
pub(crate) struct Decoded<'a> {
    /// Without its content coding; empty when that could not be removed (nothing
    /// half-decoded is read).
    pub(crate) body: Cow<'a, [u8]>,
    /// Whether it came with a content coding.
    pub(crate) coded: bool,
    /// Its decoded size, when it came with a coding that was removed.
    pub(crate) decoded: Option<u64>,
}

/// Both bodies of a capture as the later stages read them.
pub(crate) struct Bodies<'a> {
    /// The request body.
    pub(crate) request: Decoded<'a>,
    /// The answer body.
    pub(crate) response: Decoded<'a>,
    /// The answer as joined, before its content coding was removed.
    answer: Answer<'a>,
    /// Why a body is not read, or not whole.
    pub(crate) notes: Vec<String>,
}

impl Bodies<'_> {
    /// The answer of `call` for its check: the joined answer (whole or without its blobs'
    /// digits) for the one call of a capture, else its own bytes, whole.
    fn answer_of<'b>(&'b self, call: &Call<'b>) -> Answer<'b> {
        if call.batch_index.is_none() && !self.response.coded {
            self.answer
        } else {
            Answer::whole(call.response)
        }
    }
}

/// Stage 2: the bodies without their content codings, each bounded: the request by the
/// capture's limit (`default_limit` when it gives none), the answer by `max_decoded`.
pub(crate) fn decode<'a>(
    c: &'a Capture,
    answer: Answer<'a>,
    default_limit: usize,
    max_decoded: usize,
) -> Bodies<'a> {
    let mut notes = Vec::new();
    let request_limit = match c.request_limit {
        0 => default_limit,
        limit => limit,
    };
    let request = decode_body(
        "request",
        &c.request,
        c.encodings.0.as_deref(),
        request_limit,
        &mut notes,
    );
    let response = decode_body(
        "answer",
        answer.bytes(),
        c.encodings.1.as_deref(),
        max_decoded,
        &mut notes,
    );
    if let Some(size) = c.response_not_kept {
        notes.push(format!(
            "answer of {size} bytes not kept: larger than the recorder holds (--queue-bytes); its facts are not read"
        ));
    }
    Bodies {
        request,
        response,
        answer,
        notes,
    }
}

/// `body` without its content coding, at most `limit` bytes of it; why not, in `notes`.
fn decode_body<'a>(
    what: &str,
    body: &'a [u8],
    header: Option<&str>,
    limit: usize,
    notes: &mut Vec<String>,
) -> Decoded<'a> {
    let Some(header) = coding::coded(header) else {
        return Decoded {
            body: Cow::Borrowed(body),
            coded: false,
            decoded: None,
        };
    };
    match coding::decode(body, Some(header), limit) {
        Ok(decoded) => Decoded {
            decoded: Some(decoded.len() as u64),
            body: decoded,
            coded: true,
        },
        Err(e) => {
            notes.push(format!("{what} body not read: {e}"));
            Decoded {
                body: Cow::Borrowed(&[]),
                coded: true,
                decoded: None,
            }
        }
    }
}

/// One call of a capture: its method when its envelope names one, its place in a batch, the
/// bodies it owns, and what its facts read of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Call<'a> {
    /// The method its envelope names.
    pub(crate) method: Option<&'a str>,
    /// Its place in a JSON-RPC batch.
    pub(crate) batch_index: Option<u32>,
    /// The request body this call owns: the whole body for one call, its element in a batch.
    pub(crate) request: &'a [u8],
    /// The answer body it owns, as `request`.
    pub(crate) response: &'a [u8],
    /// What the facts read: the call's object and its answer's as the scanner found them
    /// (empty when not found).
    pub(crate) scanned: (&'a [u8], &'a [u8]),
}

/// Stage 3: the calls of a capture: the elements of a JSON-RPC batch (answers matched by
/// id), or the one call.
pub(crate) fn split<'a>(
    transport: Transport,
    request: &'a [u8],
    response: &'a [u8],
) -> Vec<Call<'a>> {
    let whole = |method, scanned| Call {
        method,
        batch_index: None,
        request,
        response,
        scanned,
    };
    if !matches!(transport, Transport::JsonRpc | Transport::WebSocket) {
        return vec![whole(None, (request, response))];
    }
    let requests = scan::calls(request).unwrap_or_default();
    if requests.is_empty() {
        // Refused before it was read (too large, not JSON): the answer says why.
        return vec![whole(None, (&[], response))];
    }
    let responses = scan::calls(response).unwrap_or_default();
    if !is_batch(request) {
        // A single call owns the whole bodies (even when the answer does not scan), and its
        // answer is not walked for its id (a pass over 20 MB, measured: 5% of the proxy's CPU).
        let method = scan::envelope(requests[0]).unwrap_or_default().method;
        let answer = responses.first().copied().unwrap_or_default();
        return vec![whole(method, (requests[0], answer))];
    }
    requests
        .iter()
        .enumerate()
        .map(|(i, req)| {
            let envelope = scan::envelope(req).unwrap_or_default();
            // Batch answers may come in any order: match them by id.
            let by_id = responses.iter().find(|r| {
                envelope.id.is_some() && scan::envelope(r).and_then(|e| e.id) == envelope.id
            });
            let resp = by_id.or(responses.get(i)).copied().unwrap_or_default();
            Call {
                method: envelope.method,
                batch_index: Some(i as u32),
                request: req,
                response: resp,
                scanned: (req, resp),
            }
        })
        .collect()
}

/// Whether a JSON-RPC body is a batch (an array of calls), by JSON's whitespace rule.
pub(crate) fn is_batch(body: &[u8]) -> bool {
    json::read::first_byte(body) == Some(b'[')
}

/// Stage 4: the facts of one call, read by the scanner ([`meta`]).
pub(crate) fn facts(c: &Capture, transport: Transport, call: &Call<'_>) -> Facts {
    let (request, response) = call.scanned;
    let mut facts = match (transport, &c.route) {
        (Transport::JsonRpc | Transport::WebSocket, _) => meta::json_call(request, response),
        (Transport::RestSsz, Some(route)) => meta::rest_call(
            route.resource,
            fork_of(c),
            route.payload_id,
            request,
            c.status,
            response,
        ),
        _ => meta::problem(response),
    };
    facts.batch_index = call.batch_index;
    facts
}

/// The method a call stands for: its envelope's, or the capture's; for REST, its resource's
/// under the capture's fork.
pub(crate) fn method_of(c: &Capture, call: &Call<'_>) -> Option<String> {
    match (&c.route, c.transport) {
        (Some(route), Some(Transport::RestSsz)) => meta::rest_method(route.resource, fork_of(c))
            .map(|m| m.name.to_string())
            .or_else(|| c.method.clone()),
        _ => call.method.map(str::to_string).or_else(|| c.method.clone()),
    }
}

/// The fork the capture names, if it names a known one.
fn fork_of(c: &Capture) -> Option<Fork> {
    c.fork.as_deref().and_then(|f| f.parse::<Fork>().ok())
}

/// Stage 5: the check of one call that succeeded, its verdict written into `facts`; a failed
/// check is logged too. The answer is read as joined (see [`Bodies::answer_of`]), its blobs
/// as `sszgate_verify::call::blob_mode` says for this call.
pub(crate) fn check(
    verifier: &mut Verifier,
    c: &Capture,
    call: &Call<'_>,
    bodies: &Bodies<'_>,
    facts: &mut Facts,
) {
    if facts.error_code.is_some() || !(200..300).contains(&c.status) {
        return;
    }
    let Some(recorded) = recorded_call(c, call, bodies) else {
        return;
    };
    let mode = call::blob_mode(Some(verifier));
    let Some(outcome) = call::check(verifier, &recorded, mode) else {
        return;
    };
    facts.verdict = Some(outcome.verdict.name().to_string());
    facts.verify_us = Some(outcome.micros);
    match outcome.verdict {
        Verdict::Ok { kzg } => facts.verify_check = kzg.then(|| "kzg".to_string()),
        Verdict::Failed(failure) => {
            tracing::warn!(
                method = recorded.method.name,
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

/// A call as the check takes it: its method and fork resolved (JSON-RPC: the method's newest
/// fork; REST: the capture's fork, or the row's for versioned resources), `None` for a call
/// with nothing to resolve.
fn recorded_call<'a>(
    c: &Capture,
    call: &Call<'a>,
    bodies: &'a Bodies<'a>,
) -> Option<RecordedCall<'a>> {
    let answer = bodies.answer_of(call);
    match c.transport.unwrap_or(Transport::Other) {
        Transport::JsonRpc | Transport::WebSocket => {
            let name = call.method.or(c.method.as_deref())?;
            let m = method::by_name(name).ok()?;
            Some(RecordedCall {
                method: m,
                fork: m.latest_fork(),
                wire: Wire::JsonRpc,
                request: call.request,
                answer,
            })
        }
        Transport::RestSsz => {
            let route = c.route.as_ref()?;
            // Versioned resources (/blobs/vN) carry no fork header: the row decides.
            let m = meta::rest_method(route.resource, fork_of(c))?;
            Some(RecordedCall {
                method: m,
                fork: fork_of(c).unwrap_or_else(|| m.latest_fork()),
                wire: Wire::RestSsz {
                    payload_id: route.payload_id,
                    status: c.status,
                },
                request: call.request,
                answer,
            })
        }
        Transport::Other => None,
    }
}

/// Stage 6: the record of one call: `base` (what the gateway knew) with the call's method,
/// sizes, notes, bodies (the first `body_bytes` of each) and facts.
pub(crate) fn record(
    mut base: Record,
    c: &Capture,
    call: &Call<'_>,
    bodies: &Bodies<'_>,
    body_bytes: usize,
    mut facts: Facts,
) -> Record {
    if facts.error_message.is_none() {
        facts.error_message = c.error_message.clone();
    }
    base.error_side = c
        .error_side
        .or_else(|| (facts.error_code.is_some() || c.status >= 400).then_some(crate::ErrorSide::El))
        .map(|s| s.name());
    base.method = method_of(c, call);
    // A coded body is counted as it came; a batch element as its own bytes.
    let (request, response) = (&bodies.request, &bodies.response);
    if request.decoded.is_none() && !request.coded {
        base.request_bytes = call.request.len() as u64;
    }
    if response.decoded.is_none() && !response.coded && call.batch_index.is_some() {
        base.response_bytes = call.response.len() as u64;
    }
    base.request_decoded_bytes = request.decoded;
    base.response_decoded_bytes = response.decoded;
    base.capture_note = (!bodies.notes.is_empty()).then(|| bodies.notes.join("; "));
    let body = |b: &[u8]| (body_bytes > 0).then(|| record::body_text(b, body_bytes));
    base.request_body = body(call.request);
    base.response_body = body(call.response);
    base.facts = facts;
    base
}

#[cfg(test)]
mod tests {
    use sszgate_engine::ssz::BYTES_PER_BLOB;

    use super::*;

    fn capture(request: &str) -> Capture {
        Capture {
            transport: Some(Transport::JsonRpc),
            status: 200,
            request: Bytes::copy_from_slice(request.as_bytes()),
            ..Capture::default()
        }
    }

    const STATUS: &str = r#"{"jsonrpc":"2.0","id":1,"method":"engine_newPayloadV4","params":[]}"#;

    #[test]
    fn a_batch_splits_into_its_calls_and_answers_are_matched_by_id() {
        let request = format!(
            r#" [{STATUS},{{"jsonrpc":"2.0","id":2,"method":"engine_getBlobsV1","params":[[]]}}]"#
        );
        let response = r#"[{"jsonrpc":"2.0","id":2,"result":[]},{"jsonrpc":"2.0","id":1,"result":{"status":"VALID"}}]"#;
        let calls = split(Transport::JsonRpc, request.as_bytes(), response.as_bytes());
        assert_eq!(calls.len(), 2);
        assert_eq!(
            (calls[0].method, calls[0].batch_index),
            (Some("engine_newPayloadV4"), Some(0))
        );
        assert_eq!(
            calls[0].response,
            br#"{"jsonrpc":"2.0","id":1,"result":{"status":"VALID"}}"#
        );
        assert_eq!(
            calls[1].response,
            br#"{"jsonrpc":"2.0","id":2,"result":[]}"#
        );
        let c = capture(&request);
        assert_eq!(
            facts(&c, Transport::JsonRpc, &calls[0])
                .payload_status
                .as_deref(),
            Some("VALID")
        );
        assert_eq!(
            facts(&c, Transport::JsonRpc, &calls[1]).batch_index,
            Some(1)
        );
    }

    #[test]
    fn a_single_call_owns_the_whole_bodies_and_a_refused_one_is_read_from_its_answer() {
        let response = r#"{"jsonrpc":"2.0","id":1,"result":{"status":"SYNCING"}}"#;
        let calls = split(Transport::JsonRpc, STATUS.as_bytes(), response.as_bytes());
        assert_eq!(calls.len(), 1);
        let call = calls[0];
        assert_eq!(
            (call.request, call.response),
            (STATUS.as_bytes(), response.as_bytes())
        );
        assert_eq!(
            (call.method, call.batch_index),
            (Some("engine_newPayloadV4"), None)
        );
        // Not JSON: one call, nothing scanned from the request, the answer read for its error.
        let error =
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#;
        let calls = split(Transport::JsonRpc, b"\x0c{", error.as_bytes());
        assert_eq!(calls[0].scanned, (&b""[..], error.as_bytes()));
        let facts = facts(&capture("\x0c{"), Transport::JsonRpc, &calls[0]);
        assert_eq!(facts.error_code, Some(-32700));
        assert!(!is_batch(b"\x0c["), "form feed is not JSON whitespace");
        assert!(is_batch(b"\r\n ["));
    }

    #[test]
    fn bodies_are_decoded_within_their_bound_or_noted() {
        let gzip = coding::Coding::parse("gzip").unwrap().unwrap();
        let coded = gzip.encode(&[b' '; 4096]).unwrap();
        let mut c = capture(STATUS);
        c.encodings.1 = Some("gzip".into());
        let bodies = decode(&c, Answer::whole(&coded), 1 << 20, 4096);
        assert_eq!(bodies.response.decoded, Some(4096));
        assert!(bodies.notes.is_empty());
        let bodies = decode(&c, Answer::whole(&coded), 1 << 20, 4095);
        assert!(bodies.response.body.is_empty() && bodies.response.coded);
        assert!(
            bodies.notes[0].starts_with("answer body not read"),
            "{:?}",
            bodies.notes
        );
        assert_eq!(bodies.request.body, STATUS.as_bytes());
    }

    #[test]
    fn a_blob_answer_is_joined_without_its_digits_only_when_nothing_decodes_them() {
        let request =
            r#"{"jsonrpc":"2.0","id":1,"method":"engine_getBlobsV1","params":[["0x01"]]}"#;
        let response = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":[{{"blob":"0x{}","proof":"0x{}"}}]}}"#,
            "0a".repeat(BYTES_PER_BLOB),
            "0b".repeat(48)
        );
        let frames: Vec<Bytes> = response
            .as_bytes()
            .chunks(50_000)
            .map(Bytes::copy_from_slice)
            .collect();
        let c = capture(request);
        let mut scratch = Vec::new();
        for (mode, keeps_bodies, left_out) in [
            (BlobMode::Validate, false, true),
            (BlobMode::Skip, false, true),
            (BlobMode::Decode, false, false),
            (BlobMode::Validate, true, false),
        ] {
            let answer = join(&c, &frames, mode, keeps_bodies, &mut scratch);
            assert_eq!(answer.has_blob_digits(), !left_out, "{mode:?}");
            let len = if left_out {
                response.len() - 2 * BYTES_PER_BLOB
            } else {
                response.len()
            };
            assert_eq!(answer.bytes().len(), len, "{mode:?}");
        }
        // A content-coded answer, or a batch, is joined whole.
        let mut coded = capture(request);
        coded.encodings.1 = Some("gzip".into());
        assert!(join(&coded, &frames, BlobMode::Skip, false, &mut scratch).has_blob_digits());
        let batch = capture(&format!("[{request}]"));
        assert!(join(&batch, &frames, BlobMode::Skip, false, &mut scratch).has_blob_digits());
    }
}
