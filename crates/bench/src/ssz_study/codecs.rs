//! The codec side of the study: one recorded message per group decoded from its JSON-RPC
//! body, checked to round-trip through both forms (and its SSZ to be as long as the middle
//! link carried), then encoded and decoded as JSON and as SSZ by the codec study's
//! interleaved measurement ([`crate::codec`]); and its SSZ's framed-snappy size.
//!
//! Not here: the records, the chain, the report.

use sszgate_engine::{Fork, Message, MethodSpec, coding::Coding, scan};
use sszgate_report::ssz_study::Spread;

use super::records::{Direction, Kept};
use crate::codec::{Case, CodecOptions, CodecRow, measure};

/// What the codecs measured on one kept message.
#[derive(Clone, Debug)]
pub(crate) struct Timed {
    /// Encoding as JSON, µs.
    pub(crate) json_encode_us: Spread,
    /// Encoding as SSZ, µs.
    pub(crate) ssz_encode_us: Spread,
    /// Decoding the JSON form, µs.
    pub(crate) json_decode_us: Spread,
    /// Decoding the SSZ form, µs.
    pub(crate) ssz_decode_us: Spread,
    /// The SSZ form's size as framed snappy.
    pub(crate) snappy_bytes: u64,
}

/// The JSON of `direction` in a JSON-RPC body: its `params` or its `result`.
fn json_part(body: &[u8], direction: Direction) -> Option<&[u8]> {
    let envelope = scan::envelope(body)?;
    match direction {
        Direction::Request => envelope.params,
        Direction::Answer => envelope.result,
    }
}

/// `kept`'s message, decoded from its JSON; an error names the method and what failed: it
/// does not decode, the two forms do not decode alike, or its SSZ is not the length the
/// middle link carried.
fn recorded_message(
    m: &'static MethodSpec,
    direction: Direction,
    kept: &Kept,
) -> Result<Case, String> {
    let fork = Fork::Osaka;
    let kind = match direction {
        Direction::Request => m.request,
        Direction::Answer => m.response,
    };
    let what = format!("{} {}", m.name, direction.name());
    let json = json_part(kept.json.as_bytes(), direction)
        .ok_or_else(|| format!("{what}: the recorded body is not a JSON-RPC message"))?;
    let value = Message::from_json(m, fork, kind, json).map_err(|e| format!("{what}: {e}"))?;
    let again = match direction {
        Direction::Request => value.to_json_params(),
        Direction::Answer => value.to_json(),
    }
    .map_err(|e| format!("{what}: as JSON: {e}"))?;
    let ssz = value
        .to_ssz(fork)
        .map_err(|e| format!("{what}: as SSZ: {e}"))?;
    let from_json =
        Message::from_json(m, fork, kind, &again).map_err(|e| format!("{what}: {e}"))?;
    let from_ssz = Message::from_ssz(m, fork, kind, &ssz).map_err(|e| format!("{what}: {e}"))?;
    if from_json != from_ssz || from_json != value {
        return Err(format!(
            "{what}: the recorded message does not decode alike from JSON and SSZ"
        ));
    }
    if direction == Direction::Answer && kept.ssz_len > 0 && kept.ssz_len != ssz.len() as u64 {
        return Err(format!(
            "{what}: its SSZ is {} bytes, the middle link carried {}",
            ssz.len(),
            kept.ssz_len
        ));
    }
    Ok(Case {
        message: what,
        data: "recorded on the chain".into(),
        blobs: 0,
        method: m,
        fork,
        kind,
        value,
    })
}

fn spread(rows: &[CodecRow], operation: &str) -> Result<Spread, String> {
    rows.iter()
        .find(|r| r.operation == operation)
        .map(|r| Spread {
            median: r.median_us,
            low: r.p10_us,
            high: r.p90_us,
        })
        .ok_or_else(|| format!("no {operation} measured"))
}

/// Measures `kept` (a message of method `m` going `direction`) with at most `rounds` rounds
/// (at least a few, more for small messages, as the codec study does).
pub(crate) fn time(
    m: &'static MethodSpec,
    direction: Direction,
    kept: &Kept,
    rounds: usize,
) -> Result<Timed, String> {
    let case = recorded_message(m, direction, kept)?;
    let ssz = case
        .value
        .to_ssz(case.fork)
        .map_err(|e| format!("{}: {e}", case.message))?;
    let snappy = Coding::Snappy
        .encode(&ssz)
        .map_err(|e| format!("{}: snappy: {e}", case.message))?;
    let options = CodecOptions {
        blobs: Vec::new(),
        budget_bytes: 200 << 20,
        min_rounds: rounds.min(5),
        max_rounds: rounds,
    };
    let rows = measure(&case, &options);
    Ok(Timed {
        json_encode_us: spread(&rows, "json-encode")?,
        ssz_encode_us: spread(&rows, "ssz-encode")?,
        json_decode_us: spread(&rows, "json-decode")?,
        ssz_decode_us: spread(&rows, "ssz-decode")?,
        snappy_bytes: snappy.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fcu_answer() -> Kept {
        Kept {
            json: r#"{"jsonrpc":"2.0","id":7,"result":{"payloadStatus":{"status":"VALID","latestValidHash":"0x1111111111111111111111111111111111111111111111111111111111111111","validationError":null},"payloadId":"0x0102030405060708"}}"#.into(),
            ssz_len: 0,
        }
    }

    #[test]
    fn a_recorded_answer_is_timed_in_both_forms() {
        let m = sszgate_engine::method::by_name("engine_forkchoiceUpdatedV3").unwrap();
        let timed = time(m, Direction::Answer, &fcu_answer(), 3).unwrap();
        for s in [
            timed.json_encode_us,
            timed.ssz_encode_us,
            timed.json_decode_us,
            timed.ssz_decode_us,
        ] {
            assert!(
                s.median > 0.0 && s.low <= s.median && s.median <= s.high,
                "{s:?}"
            );
        }
        assert!(timed.snappy_bytes > 0);
    }

    #[test]
    fn an_ssz_length_unlike_the_links_is_an_error() {
        let m = sszgate_engine::method::by_name("engine_forkchoiceUpdatedV3").unwrap();
        let kept = Kept {
            ssz_len: 3,
            ..fcu_answer()
        };
        let error = time(m, Direction::Answer, &kept, 3).unwrap_err();
        assert!(error.contains("the middle link carried 3"), "{error}");
        let garbled = Kept {
            json: "{\"result\":{\"payloadStatus\":7}}".into(),
            ssz_len: 0,
        };
        let error = time(m, Direction::Answer, &garbled, 3).unwrap_err();
        assert!(
            error.starts_with("engine_forkchoiceUpdatedV3 answer"),
            "{error}"
        );
    }
}
