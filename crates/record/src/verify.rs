//! Verification on the recorder's thread: the messages of a finished call are decoded and
//! handed to a [`Verifier`]; the verdict lands in the call's facts, the metrics and, when a
//! check fails, a warning in the log. The call itself was answered long before.
//!
//! Only the calls with something to verify are decoded (newPayload, forkchoiceUpdated for the
//! roots it announces, getPayload, getBlobs), and only when they succeeded. JSON-RPC answers
//! whose KZG proofs are sampled out are read without their blobs.

use sszgate_engine::{
    Fork, Message,
    method::{self, Family, MethodSpec, Route},
    scan,
    without_blobs::{self, Digits},
};
use sszgate_verify::{AnswerWithoutBlobs, Verdict, Verifier};

use crate::record::{Facts, Transport};

/// What a call is, for decoding it.
pub(crate) struct CallShape<'a> {
    pub(crate) transport: Transport,
    pub(crate) method: Option<&'a str>,
    pub(crate) route: Option<&'a Route>,
    pub(crate) fork: Option<Fork>,
    pub(crate) status: u16,
    /// Whether the answer still holds its blobs' digits.
    pub(crate) digits: Digits,
}

/// The answer was joined without its blobs' digits and this call needs them: verify it again
/// with the whole answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NeedsWholeAnswer;

fn worth_decoding(m: &MethodSpec) -> bool {
    matches!(
        m.family,
        Family::NewPayload | Family::ForkchoiceUpdated | Family::GetPayload | Family::GetBlobs
    )
}

/// Decodes the call's request and answer and verifies them; writes the verdict into `facts`.
/// An answer without its blobs' digits is read without its blobs, or not at all: the caller
/// is told to come back with the whole answer.
pub(crate) fn verify(
    verifier: &mut Verifier,
    call: &CallShape<'_>,
    request: &[u8],
    response: &[u8],
    facts: &mut Facts,
) -> Result<(), NeedsWholeAnswer> {
    if facts.error_code.is_some() || !(200..300).contains(&call.status) {
        return Ok(());
    }
    let outcome = match call.transport {
        Transport::JsonRpc | Transport::WebSocket => {
            let Some(m) = call.method.and_then(|name| method::by_name(name).ok()) else {
                return Ok(());
            };
            if !worth_decoding(m) {
                return Ok(());
            }
            match json_without_blobs(verifier, m, request, response, call.digits) {
                Some(outcome) => outcome,
                None if call.digits == Digits::LeftOut => return Err(NeedsWholeAnswer),
                None => decided(
                    verifier,
                    json_messages(m, request, response)
                        .map(|(req, resp)| (m, m.latest_fork(), req, resp)),
                ),
            }
        }
        Transport::RestSsz => {
            let Some(route) = call.route else {
                return Ok(());
            };
            // Versioned resources (/blobs/vN) carry no fork header: the row decides.
            let Some(m) = crate::meta::rest_method(route.resource, call.fork) else {
                return Ok(());
            };
            let fork = call.fork.unwrap_or_else(|| m.latest_fork());
            if !worth_decoding(m) {
                return Ok(());
            }
            decided(
                verifier,
                ssz_messages(m, fork, route, call.status, request, response)
                    .map(|(req, resp)| (m, fork, req, resp)),
            )
        }
        Transport::Other => return Ok(()),
    };
    let Some(outcome) = outcome else {
        return Ok(());
    };
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
    Ok(())
}

type Decoded = (Message, Option<Message>);

/// The verdict on a call whose messages were decoded, or why they were not.
fn decided(
    verifier: &mut Verifier,
    decoded: Result<(&'static MethodSpec, Fork, Message, Option<Message>), String>,
) -> Option<sszgate_verify::Outcome> {
    match decoded {
        Ok((m, fork, req, resp)) => verifier.call(m, fork, &req, resp.as_ref()),
        Err(problem) => Some(sszgate_verify::Outcome {
            verdict: Verdict::Skipped(format!("the messages do not decode: {problem}")),
            micros: 0,
        }),
    }
}

/// A JSON-RPC getPayload or getBlobs call whose KZG proofs are sampled out, verified from its
/// answer read without the blobs: nothing to decode per blob, only its digits checked (measured:
/// decoding every blob was most of what `--verify sample` cost the proxy, docs/benchmarks.md).
/// `None` when this does not apply (another method, KZG due, an answer of another shape, a
/// request that does not decode); the whole messages are decoded then.
fn json_without_blobs(
    verifier: &mut Verifier,
    m: &'static MethodSpec,
    request: &[u8],
    response: &[u8],
    digits: Digits,
) -> Option<Option<sszgate_verify::Outcome>> {
    if !matches!(m.family, Family::GetPayload | Family::GetBlobs)
        || verifier.kzg_on_next_blob_call()
    {
        return None;
    }
    // The answer's `result` is its last member (what ELs send); the readers refuse anything
    // else, and the whole answer is decoded then.
    let result = scan::last_value(response, "result")?;
    let answer = if m.family == Family::GetPayload {
        let (built, blobs) = without_blobs::built_payload(m, result, digits)?;
        AnswerWithoutBlobs::Payload(Box::new(built), blobs)
    } else {
        AnswerWithoutBlobs::Blobs(without_blobs::blobs(m, result, digits)?)
    };
    let fork = m.latest_fork();
    let params = scan::envelope(request)?.params?;
    let req = Message::from_json(m, fork, m.request, params).ok()?;
    Some(verifier.call_without_blobs(m, fork, &req, &answer))
}

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

#[cfg(test)]
mod tests {
    use sszgate_engine::ssz;

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

    #[test]
    fn sampled_out_answers_are_read_without_their_blobs() {
        let m = method::by_name("engine_getBlobsV2").unwrap();
        let mut verifier = Verifier::new("sample".parse().unwrap());
        let (request, response) = get_blobs(2, 128);
        let (request, response) = (request.as_bytes(), response.as_bytes());
        // The first blob call has its KZG proofs checked: the whole answer is decoded.
        assert!(json_without_blobs(&mut verifier, m, request, response, Digits::Present).is_none());
        let mut facts = Facts::default();
        let shape = CallShape {
            transport: Transport::JsonRpc,
            method: Some(m.name),
            route: None,
            fork: None,
            status: 200,
            digits: Digits::Present,
        };
        verify(&mut verifier, &shape, request, response, &mut facts).unwrap();
        // (the blobs are not those of the hashes asked for)
        assert_eq!(facts.verdict.as_deref(), Some("failed"));
        assert_eq!(facts.verify_check.as_deref(), Some("blobs-answer"));
        // The next seven are read without their blobs, with every other check.
        for _ in 0..7 {
            let outcome = json_without_blobs(&mut verifier, m, request, response, Digits::Present)
                .expect("read without blobs")
                .expect("a verdict");
            assert_eq!(outcome.verdict, Verdict::Ok { kzg: false });
        }
        let (request, short) = get_blobs(2, 127);
        let outcome = json_without_blobs(
            &mut verifier,
            m,
            request.as_bytes(),
            short.as_bytes(),
            Digits::Present,
        );
        assert!(outcome.is_none(), "the ninth blob call is due for KZG");
        // KZG due: the shape check fails first, on the whole answer; then, without KZG due,
        // the same through the recorder's path and the answer read without its blobs.
        let mut facts_of = |request: &str, response: &str| {
            let mut facts = Facts::default();
            let (req, resp) = (request.as_bytes(), response.as_bytes());
            verify(&mut verifier, &shape, req, resp, &mut facts).unwrap();
            facts
        };
        let facts = facts_of(&request, &short);
        assert_eq!(facts.verify_check.as_deref(), Some("blobs-answer"));
        let facts = facts_of(&request, &short);
        assert_eq!(
            (facts.verdict.as_deref(), facts.verify_detail.as_deref()),
            (Some("failed"), Some("[0]: 127 cell proofs, 128 expected"))
        );
        // An answer whose result is not its last member is decoded whole.
        let (request, response) = get_blobs(1, 128);
        let result = response
            .strip_prefix(r#"{"jsonrpc":"2.0","id":7,"result":"#)
            .and_then(|r| r.strip_suffix('}'))
            .unwrap();
        let reordered = format!(r#"{{"jsonrpc":"2.0","result":{result},"id":7}}"#);
        assert!(!verifier.kzg_on_next_blob_call());
        assert!(
            json_without_blobs(
                &mut verifier,
                m,
                request.as_bytes(),
                reordered.as_bytes(),
                Digits::Present
            )
            .is_none()
        );
        assert!(
            json_without_blobs(
                &mut verifier,
                m,
                request.as_bytes(),
                response.as_bytes(),
                Digits::Present
            )
            .is_some()
        );
    }
}
