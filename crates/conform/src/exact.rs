//! Whether bytes are exactly a message: walked against the spec's container (a fault names the
//! field and the byte), decoded, and encoded again to the same bytes (a difference names the
//! first differing byte and its field path); and whether two decoded messages say the same,
//! field by field through their JSON-RPC form.
//!
//! Not here: the containers and codecs themselves (`sszgate_engine`).

use serde_json::Value;
use sszgate_engine::{Fork, Message, MessageKind, MethodSpec, ssz};

/// Decodes `bytes` as `m`'s message `kind` under `fork` after checking they are exactly its
/// canonical encoding; the error names the field and the byte.
pub fn exact(
    m: &'static MethodSpec,
    kind: MessageKind,
    fork: Fork,
    bytes: &[u8],
) -> Result<Message, String> {
    let ty = ssz::of_message(m, kind, fork);
    if let Some(ty) = ty {
        ssz::validate(ty, bytes).map_err(|e| e.to_string())?;
    }
    let message = Message::from_ssz(m, fork, kind, bytes).map_err(|e| e.to_string())?;
    let Some(ty) = ty else {
        return Ok(message);
    };
    let canonical = message.to_ssz(fork).map_err(|e| e.to_string())?;
    match first_difference(bytes, &canonical) {
        None => Ok(message),
        Some(at) => Err(format!(
            "{}: byte {at} ({}) is {}, the canonical encoding has {} ({} bytes, canonical {})",
            ty.name(),
            ssz::path_at(ty, bytes, at),
            byte(bytes, at),
            byte(&canonical, at),
            bytes.len(),
            canonical.len()
        )),
    }
}

/// The first index where `a` and `b` differ (the shorter one's length when one is a prefix).
pub fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => Some(i),
        None if a.len() != b.len() => Some(a.len().min(b.len())),
        None => None,
    }
}

fn byte(bytes: &[u8], at: usize) -> String {
    bytes
        .get(at)
        .map_or_else(|| "past the end".into(), |b| format!("0x{b:02x}"))
}

/// Whether two messages say the same, compared through their JSON-RPC form; the error names
/// the first differing JSON path and both values.
pub fn same(rest: &Message, json: &Message) -> Result<(), String> {
    let as_value = |m: &Message| {
        m.to_json()
            .ok()
            .and_then(|j| serde_json::from_slice::<Value>(&j).ok())
            .unwrap_or(Value::Null)
    };
    match difference(&as_value(rest), &as_value(json), "result") {
        None => Ok(()),
        Some((path, a, b)) => Err(format!("{path}: REST-SSZ {a}, JSON-RPC {b}")),
    }
}

/// The first path where `a` and `b` differ, with both values (shortened).
fn difference(a: &Value, b: &Value, path: &str) -> Option<(String, String, String)> {
    let short = |v: &Value| {
        let s = v.to_string();
        if s.len() > 80 {
            format!("{}…", &s[..80])
        } else {
            s
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                let null = Value::Null;
                difference(
                    x.get(k).unwrap_or(&null),
                    y.get(k).unwrap_or(&null),
                    &format!("{path}.{k}"),
                )
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| difference(p, q, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some((path.to_string(), short(a), short(b))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sszgate_engine::method;

    #[test]
    fn a_non_canonical_answer_names_its_byte() {
        let m = method::by_name("engine_newPayloadV4").unwrap();
        // VALID, latest_valid_hash absent, empty error: the canonical 9 bytes.
        let good = [0u8, 9, 0, 0, 0, 9, 0, 0, 0];
        exact(m, MessageKind::PayloadStatus, Fork::Osaka, &good).unwrap();
        let bad_status = [7u8, 9, 0, 0, 0, 9, 0, 0, 0];
        let e = exact(m, MessageKind::PayloadStatus, Fork::Osaka, &bad_status).unwrap_err();
        assert!(e.contains("status at byte 0"), "{e}");
        let truncated = [0u8, 9, 0, 0];
        let e = exact(m, MessageKind::PayloadStatus, Fork::Osaka, &truncated).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
    }

    #[test]
    fn json_differences_name_their_path() {
        let a: Value = serde_json::json!({"status": "VALID", "x": [1, 2]});
        let b: Value = serde_json::json!({"status": "VALID", "x": [1, 3]});
        let (path, x, y) = difference(&a, &b, "result").unwrap();
        assert_eq!(
            (path.as_str(), x.as_str(), y.as_str()),
            ("result.x[1]", "2", "3")
        );
        assert!(difference(&a, &a, "result").is_none());
    }
}
