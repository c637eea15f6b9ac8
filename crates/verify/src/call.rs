//! One recorded call checked: its messages decoded from the bytes that crossed the link
//! (JSON-RPC or REST-SSZ) and handed to the [`Verifier`]; a blob-carrying answer read once,
//! its blobs decoded or only validated as the [`BlobMode`] says ([`blob_mode`] decides it, for
//! the recorder's join of the answer's frames and for the check alike).
//!
//! Only the calls with something to verify are decoded (newPayload, forkchoiceUpdated for the
//! roots it announces, getPayload, getBlobs); which calls succeeded, and so are worth it, is
//! the caller's to say. Nothing here knows of records or sinks: the recorder writes the
//! [`Outcome`] into its facts.

use std::time::Instant;

use sszgate_engine::{
    Fork, Message,
    blob_answer::{Answer, BlobMode},
    method::{Family, MethodSpec},
    scan,
};

use crate::{Outcome, Verdict, Verifier};

/// How a recorded call crossed the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// JSON-RPC, over HTTP or WebSocket: `params` and `result` in JSON.
    JsonRpc,
    /// REST-SSZ: SSZ bodies, the payload id in the path of a getPayload.
    RestSsz {
        /// The `{payloadId}` of `GET /payloads/{payloadId}`.
        payload_id: Option<[u8; 8]>,
        /// The answer's HTTP status (200 carries a body; 204 none).
        status: u16,
    },
}

/// A call as it was recorded, for checking.
#[derive(Clone, Copy, Debug)]
pub struct RecordedCall<'a> {
    /// The method (for REST, the one its resource and fork stand for).
    pub method: &'static MethodSpec,
    /// The fork whose shapes its messages have.
    pub fork: Fork,
    /// How it crossed the link.
    pub wire: Wire,
    /// The request body (JSON-RPC: the whole call; REST: the SSZ body).
    pub request: &'a [u8],
    /// The answer body, whole or without its blobs' digits.
    pub answer: Answer<'a>,
}

/// Whether calls of `m` carry anything to check.
pub fn worth_checking(m: &MethodSpec) -> bool {
    matches!(
        m.family,
        Family::NewPayload | Family::ForkchoiceUpdated | Family::GetPayload | Family::GetBlobs
    )
}

/// What happens to the blobs of the next blob-carrying answer, from what checks it (the
/// `--verify` level and its KZG sampling): decoded when its KZG proofs are due, validated
/// when only the other checks read it, skipped when nothing checks it (`verifier` is `None`).
pub fn blob_mode(verifier: Option<&Verifier>) -> BlobMode {
    match verifier {
        Some(v) if v.kzg_on_next_blob_call() => BlobMode::Decode,
        Some(_) => BlobMode::Validate,
        None => BlobMode::Skip,
    }
}

/// Checks one call whose blobs are read as `mode` says (see [`blob_mode`]); `None` when it
/// carries nothing to check. Messages that do not decode give a skipped verdict saying why.
/// An answer joined without its blobs' digits is read without its blobs whatever the mode.
pub fn check(verifier: &mut Verifier, call: &RecordedCall<'_>, mode: BlobMode) -> Option<Outcome> {
    let m = call.method;
    if !worth_checking(m) {
        return None;
    }
    let read_from = Instant::now();
    let decoded = match call.wire {
        Wire::JsonRpc => {
            let without_blobs = mode != BlobMode::Decode || !call.answer.has_blob_digits();
            if without_blobs && let Some(read) = call.answer.read_without_blobs(m) {
                let answer = match read {
                    Ok(answer) => answer,
                    Err(e) => return Some(undecoded(e.to_string())),
                };
                return match json_request(m, call.fork, call.request) {
                    Ok(req) => verifier.call_without_blobs(m, call.fork, &req, &answer),
                    Err(problem) => Some(undecoded(problem)),
                };
            }
            json_messages(m, call.fork, call.request, call.answer.bytes())
        }
        Wire::RestSsz { payload_id, status } => ssz_messages(
            m,
            call.fork,
            payload_id,
            status,
            call.request,
            call.answer.bytes(),
        ),
    };
    match decoded {
        Ok((req, resp)) => verifier.call_read_since(m, call.fork, &req, resp.as_ref(), read_from),
        Err(problem) => Some(undecoded(problem)),
    }
}

/// The verdict on a call whose messages do not decode.
fn undecoded(problem: String) -> Outcome {
    Outcome {
        verdict: Verdict::Skipped(format!("the messages do not decode: {problem}")),
        micros: 0,
    }
}

/// A request and, when it succeeded with a result, its answer.
type Decoded = (Message, Option<Message>);

/// The `params` of a JSON-RPC call of `m`.
fn json_request(m: &'static MethodSpec, fork: Fork, request: &[u8]) -> Result<Message, String> {
    let params = scan::envelope(request)
        .and_then(|e| e.params)
        .ok_or("no params")?;
    Message::from_json(m, fork, m.request, params).map_err(|e| e.to_string())
}

/// A JSON-RPC call of `m` and its answer, decoded whole (an answer without a result, or a
/// `null` one, gives none).
fn json_messages(
    m: &'static MethodSpec,
    fork: Fork,
    request: &[u8],
    response: &[u8],
) -> Result<Decoded, String> {
    let req = json_request(m, fork, request)?;
    let resp = match scan::envelope(response).and_then(|e| e.result) {
        Some(result) if result != b"null" => {
            Some(Message::from_json(m, fork, m.response, result).map_err(|e| e.to_string())?)
        }
        _ => None,
    };
    Ok((req, resp))
}

/// A REST-SSZ call of `m` and its answer (when it is 200), decoded.
fn ssz_messages(
    m: &'static MethodSpec,
    fork: Fork,
    payload_id: Option<[u8; 8]>,
    status: u16,
    request: &[u8],
    response: &[u8],
) -> Result<Decoded, String> {
    let req = match (m.family, payload_id) {
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

#[cfg(test)]
mod tests {
    use sszgate_engine::{method, ssz};

    use super::*;

    /// A getBlobsV2 call for `n` hashes and its answer, `n` entries of a well-formed shape
    /// (their KZG proofs would not verify), `proofs` cell proofs each.
    fn get_blobs(n: usize, proofs: usize) -> (String, String) {
        let hash = format!("\"0x{}\"", "01".repeat(32));
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"engine_getBlobsV2","params":[[{}]]}}"#,
            vec![hash; n].join(",")
        );
        let proof = format!("\"0x{}\"", "ab".repeat(48));
        let entry = format!(
            r#"{{"blob":"0x{}","proofs":[{}]}}"#,
            "02".repeat(ssz::BYTES_PER_BLOB),
            vec![proof; proofs].join(",")
        );
        let response = format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":[{}]}}"#,
            vec![entry; n].join(",")
        );
        (request, response)
    }

    /// The verdict on one JSON-RPC getBlobsV2 call, its blobs read as [`blob_mode`] says
    /// (and that mode).
    fn verdict(verifier: &mut Verifier, request: &str, response: &str) -> (Verdict, BlobMode) {
        let m = method::by_name("engine_getBlobsV2").unwrap();
        let mode = blob_mode(Some(verifier));
        let call = RecordedCall {
            method: m,
            fork: m.latest_fork(),
            wire: Wire::JsonRpc,
            request: request.as_bytes(),
            answer: Answer::whole(response.as_bytes()),
        };
        let outcome = check(verifier, &call, mode).expect("a verdict");
        (outcome.verdict, mode)
    }

    #[test]
    fn sampled_out_answers_are_read_without_their_blobs() {
        let hand = crate::pace::HandClock::default();
        let mut verifier = Verifier::with_clock("sample".parse().unwrap(), hand.clock());
        let (request, response) = get_blobs(2, 128);
        // The first blob call has its KZG proofs checked: the whole answer is decoded, and
        // the blobs are not those of the hashes asked for.
        let (first, mode) = verdict(&mut verifier, &request, &response);
        assert_eq!(mode, BlobMode::Decode);
        assert!(matches!(first, Verdict::Failed(f) if f.check.name() == "blobs-answer"));
        // Until its time is earned back, the next are read without their blobs, with every
        // other check.
        for _ in 0..7 {
            let (v, mode) = verdict(&mut verifier, &request, &response);
            assert_eq!((v, mode), (Verdict::Ok { kzg: false }, BlobMode::Validate));
        }
        // An hour on, the next is due for KZG: the shape check fails first, on the whole
        // answer; then, without KZG due, the same answer read without its blobs.
        hand.advance(std::time::Duration::from_secs(3600));
        let (_, short) = get_blobs(2, 127);
        let (due, mode) = verdict(&mut verifier, &request, &short);
        assert_eq!(mode, BlobMode::Decode);
        assert!(matches!(due, Verdict::Failed(f) if f.check.name() == "blobs-answer"));
        let (sampled_out, mode) = verdict(&mut verifier, &request, &short);
        assert_eq!(mode, BlobMode::Validate);
        assert_eq!(
            sampled_out,
            Verdict::Failed(crate::Failure::new(
                crate::Check::BlobsAnswer,
                "[0]: 127 cell proofs, 128 expected"
            ))
        );
        // An answer whose result is not its last member gets the same verdict.
        let (request, response) = get_blobs(1, 128);
        let result = response
            .strip_prefix(r#"{"jsonrpc":"2.0","id":7,"result":"#)
            .and_then(|r| r.strip_suffix('}'))
            .unwrap();
        let reordered = format!(r#"{{"jsonrpc":"2.0","result":{result},"id":7}}"#);
        assert!(!verifier.kzg_on_next_blob_call());
        let (v, _) = verdict(&mut verifier, &request, &reordered);
        assert_eq!(v, Verdict::Ok { kzg: false });
        // Nothing checks the blobs without a verifier; every check with `--verify all`.
        assert_eq!(blob_mode(None), BlobMode::Skip);
        assert_eq!(
            blob_mode(Some(&Verifier::new(crate::Mode::All))),
            BlobMode::Decode
        );
    }

    #[test]
    fn calls_without_anything_to_check_or_that_do_not_decode_say_so() {
        let mut verifier = Verifier::new(crate::Mode::All);
        let m = method::by_name("engine_getClientVersionV1").unwrap();
        let call = RecordedCall {
            method: m,
            fork: m.latest_fork(),
            wire: Wire::JsonRpc,
            request: b"{}",
            answer: Answer::whole(b"{}"),
        };
        assert_eq!(check(&mut verifier, &call, BlobMode::Decode), None);
        let m = method::by_name("engine_newPayloadV4").unwrap();
        let call = RecordedCall {
            method: m,
            request: br#"{"jsonrpc":"2.0","id":1,"method":"engine_newPayloadV4"}"#,
            ..call
        };
        let outcome = check(&mut verifier, &call, BlobMode::Decode).expect("a verdict");
        assert_eq!(
            outcome.verdict,
            Verdict::Skipped("the messages do not decode: no params".into())
        );
    }
}
