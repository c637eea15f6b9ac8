//! What rpc-snooper's xatu handlers read from a call: an `engine_newPayload*` or
//! `engine_getBlobs*` call and its answer become one [`Event`] with the same fields and the
//! same fallbacks (`UNKNOWN`, `ERROR`, `UNSUPPORTED`, zeros for unreadable hex); an
//! `engine_getClientVersion*` answer becomes the EL's [`Execution`] (its first entry, parsed
//! as ethPandaOps' `ParseExecutionClientVersion` parses `Name/Version-Commit`).
//!
//! Not here: the encodings (`wire`), the queue (`sink`).

use serde_json::Value;

use super::wire::{Execution, GetBlobs, NewPayload};
use crate::pretty::{Json, LazyJson};

/// What one call gives xatu.
#[derive(Debug, PartialEq)]
pub enum Seen {
    /// An event's data.
    Event(super::wire::EventData),
    /// The EL's name and version, from its `engine_getClientVersionV1` answer.
    ClientVersion(Execution),
}

/// Versioned hashes kept per getBlobs event at most (the Engine API allows 128 per call):
/// a peer's oversized call cannot make the queue hold gigabytes. `requested_count` stays true.
pub const MAX_HASHES: usize = 1024;

/// Reads one JSON-RPC call (`request`, and `response`, its answer, read as JSON only for
/// the methods xatu reads); `None` for calls xatu ignores.
pub fn read(request: &[u8], response: &LazyJson<'_>) -> Option<Seen> {
    let request: Value = serde_json::from_slice(request).ok()?;
    let method = request.get("method")?.as_str()?;
    let read = [
        "engine_newPayload",
        "engine_getBlobs",
        "engine_getClientVersion",
    ];
    if !read.iter().any(|m| method.starts_with(m)) {
        return None;
    }
    let params = request.get("params").and_then(Value::as_array);
    let params = params.map_or(&[][..], Vec::as_slice);
    if let Some(version) = method.strip_prefix("engine_getBlobs") {
        let b = get_blobs(version, params, &Slots::of(response.json()));
        return Some(Seen::Event(super::wire::EventData::GetBlobs(b)));
    }
    let answer: Option<Value> = serde_json::from_slice(response.body).ok();
    let answer = Answer::of(answer.as_ref());
    if let Some(version) = method.strip_prefix("engine_newPayload") {
        let p = new_payload(version, params, &answer);
        return Some(Seen::Event(super::wire::EventData::NewPayload(p)));
    }
    if method.starts_with("engine_getClientVersion") {
        return client_version(answer.result?).map(Seen::ClientVersion);
    }
    None
}

/// A JSON-RPC answer: its `result`, or its error's message.
struct Answer<'a> {
    result: Option<&'a Value>,
    error: Option<String>,
}

impl<'a> Answer<'a> {
    fn of(body: Option<&'a Value>) -> Answer<'a> {
        let error = body.and_then(|b| b.get("error")).filter(|e| e.is_object());
        let message = error.map(|e| e.get("message").and_then(Value::as_str).unwrap_or(""));
        Answer {
            result: body.and_then(|b| b.get("result")).filter(|r| !r.is_null()),
            error: message.map(str::to_string),
        }
    }
}

/// What a getBlobs answer tells: its error's message, or which of its `result` items are
/// not null. Read into a tree that borrows the body's strings (an answer of 72 blobs is
/// 20 MB of hex), with the same JSON rules as `serde_json::Value`.
#[derive(Debug, Default, PartialEq)]
struct Slots {
    /// The message of an `error` object (empty when it has none).
    error: Option<String>,
    /// Per item of a `result` array: present (not null). `None` when `result` is absent,
    /// null or not an array.
    present: Option<Vec<bool>>,
}

impl Slots {
    fn of(answer: Option<&Json<'_>>) -> Slots {
        let Some(answer) = answer else {
            return Slots::default();
        };
        let error = answer.get("error").filter(|e| matches!(e, Json::Object(_)));
        let message = error.map(|e| e.get("message").and_then(Json::as_str).unwrap_or(""));
        let items = answer.get("result").and_then(Json::as_array);
        Slots {
            error: message.map(str::to_string),
            present: items.map(|a| a.iter().map(|v| *v != Json::Null).collect()),
        }
    }
}

fn text(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or("").to_string()
}

/// A hex quantity as rpc-snooper reads it: 0 when absent or unreadable.
fn quantity(v: Option<&Value>) -> u64 {
    let s = v.and_then(Value::as_str).unwrap_or("");
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    u64::from_str_radix(digits, 16).unwrap_or(0)
}

fn count(v: Option<&Value>) -> u32 {
    v.and_then(Value::as_array)
        .map_or(0, |a| u32::try_from(a.len()).unwrap_or(u32::MAX))
}

fn new_payload(version: &str, params: &[Value], answer: &Answer) -> NewPayload {
    let payload = params.first().filter(|p| p.is_object());
    let field = |name| payload.and_then(|p| p.get(name));
    let mut p = NewPayload {
        block_number: quantity(field("blockNumber")),
        block_hash: text(field("blockHash")),
        parent_hash: text(field("parentHash")),
        gas_used: quantity(field("gasUsed")),
        gas_limit: quantity(field("gasLimit")),
        tx_count: count(field("transactions")),
        blob_count: count(params.get(1)),
        method_version: version.to_string(),
        ..NewPayload::default()
    };
    if let Some(message) = &answer.error {
        p.status = "ERROR".into();
        p.validation_error = message.clone();
        return p;
    }
    let status = answer.result.filter(|r| r.is_object());
    p.status = status
        .and_then(|r| r.get("status"))
        .and_then(Value::as_str)
        .unwrap_or("UNKNOWN")
        .to_string();
    p.latest_valid_hash = text(status.and_then(|r| r.get("latestValidHash")));
    p.validation_error = text(status.and_then(|r| r.get("validationError")));
    p
}

fn get_blobs(version: &str, params: &[Value], answer: &Slots) -> GetBlobs {
    let hashes = params.first().and_then(Value::as_array);
    let hashes = hashes.map_or(&[][..], Vec::as_slice);
    let strings = hashes.iter().filter_map(Value::as_str);
    let mut b = GetBlobs {
        requested_count: u32::try_from(strings.clone().count()).unwrap_or(u32::MAX),
        versioned_hashes: strings.take(MAX_HASHES).map(str::to_string).collect(),
        method_version: version.to_string(),
        ..GetBlobs::default()
    };
    if let Some(message) = &answer.error {
        b.status = "ERROR".into();
        b.error_message = message.clone();
        return b;
    }
    let Some(blobs) = &answer.present else {
        b.status = "UNSUPPORTED".into();
        return b;
    };
    b.returned_blob_indexes = (0..blobs.len())
        .filter(|&i| blobs[i])
        .map(|i| u32::try_from(i).unwrap_or(u32::MAX))
        .collect();
    b.returned_count = u32::try_from(b.returned_blob_indexes.len()).unwrap_or(u32::MAX);
    b.status = match b.returned_blob_indexes.len() {
        0 => "EMPTY",
        n if n < blobs.len() => "PARTIAL",
        _ => "SUCCESS",
    }
    .into();
    b
}

/// The first `ClientVersionV1` of an answer, as `Name/Version[-Commit]` parsed into parts.
fn client_version(result: &Value) -> Option<Execution> {
    let first = result.as_array()?.first()?;
    let name = first.get("name")?.as_str()?;
    let mut version = text(first.get("version"));
    let commit = text(first.get("commit"));
    let bare = commit.trim_start_matches("0x");
    let contained = !bare.is_empty()
        && (version.contains(bare) || (bare.len() >= 6 && version.contains(&bare[..6])));
    if !bare.is_empty() && !contained {
        version = format!("{version}-{commit}");
    }
    let version = version.strip_prefix('v').unwrap_or(&version).to_string();
    let core = version.split(['-', '+']).next().unwrap_or("");
    let mut parts = core.split('.').filter(|s| !s.is_empty());
    let mut next = || parts.next().unwrap_or("").to_string();
    let (major, minor, patch) = (next(), next(), next());
    Some(Execution {
        implementation: name.to_string(),
        version,
        major,
        minor,
        patch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xatu::wire::EventData;

    fn event(request: &str, response: &str) -> EventData {
        match read(request.as_bytes(), &LazyJson::new(response.as_bytes())) {
            Some(Seen::Event(e)) => e,
            other => panic!("not an event: {other:?}"),
        }
    }

    #[test]
    fn new_payload_fields_and_verdicts() {
        let request = r#"{"method":"engine_newPayloadV4","params":[{"blockNumber":"0x10","blockHash":"0xab","parentHash":"0xcd","gasUsed":"0x5208","gasLimit":"0x1c9c380","transactions":["0x01","0x02"]},["0x01"],"0xee",[]]}"#;
        let EventData::NewPayload(p) = event(
            request,
            r#"{"result":{"status":"VALID","latestValidHash":"0xab"}}"#,
        ) else {
            panic!("kind")
        };
        assert_eq!(
            (p.block_number, p.gas_used, p.gas_limit),
            (16, 21000, 30_000_000)
        );
        assert_eq!((p.tx_count, p.blob_count), (2, 1));
        assert_eq!(
            (p.status.as_str(), p.latest_valid_hash.as_str()),
            ("VALID", "0xab")
        );
        assert_eq!(p.method_version, "V4");
        let EventData::NewPayload(p) =
            event(request, r#"{"error":{"code":-32602,"message":"bad"}}"#)
        else {
            panic!("kind")
        };
        assert_eq!(
            (p.status.as_str(), p.validation_error.as_str()),
            ("ERROR", "bad")
        );
        let EventData::NewPayload(p) = event(
            r#"{"method":"engine_newPayloadV3","params":[{"blockNumber":"zz"}]}"#,
            "not json",
        ) else {
            panic!("kind")
        };
        assert_eq!((p.status.as_str(), p.block_number), ("UNKNOWN", 0));
    }

    #[test]
    fn get_blobs_statuses() {
        let request = r#"{"method":"engine_getBlobsV1","params":[["0x01","0x02","0x03"]]}"#;
        let status = |response: &str| match event(request, response) {
            EventData::GetBlobs(b) => (b.status, b.returned_count, b.returned_blob_indexes),
            _ => panic!("kind"),
        };
        assert_eq!(
            status(r#"{"result":[{},null,{}]}"#),
            ("PARTIAL".into(), 2, vec![0, 2])
        );
        assert_eq!(
            status(r#"{"result":[{},{},{}]}"#),
            ("SUCCESS".into(), 3, vec![0, 1, 2])
        );
        assert_eq!(
            status(r#"{"result":[null,null,null]}"#),
            ("EMPTY".into(), 0, vec![])
        );
        assert_eq!(
            status(r#"{"result":null}"#),
            ("UNSUPPORTED".into(), 0, vec![])
        );
        assert_eq!(
            status(r#"{"error":{"message":"x"}}"#),
            ("ERROR".into(), 0, vec![])
        );
    }

    #[test]
    fn get_blobs_answers_read_as_a_value_tree_reads_them() {
        // What the event read before: the whole answer as a `Value`.
        let by_value = |body: &str| {
            let value: Option<Value> = serde_json::from_str(body).ok();
            let answer = Answer::of(value.as_ref());
            let items = answer.result.and_then(Value::as_array);
            Slots {
                error: answer.error,
                present: items.map(|a| a.iter().map(|v| !v.is_null()).collect()),
            }
        };
        let bodies = [
            r#"{"result":[{"blob":"0x00"},null,{"blob":"0x00"}]}"#,
            r#"{"result":"0x01"}"#,
            r#"{"result":{"a":1}}"#,
            r#"{"result":[null],"result":[{}]}"#,
            r#"{"error":"plain","result":[{}]}"#,
            r#"{"error":{"code":1},"result":[]}"#,
            r#"{"error":{"message":5}}"#,
            r#"{"result":[{"x":1e400}]}"#,
            r#"[{"result":[{}]}]"#,
            "{\"result\":[\"\u{e9}\"]}",
            r#"{"result":[{}]} trailing"#,
            "",
        ];
        let slots = |body: &[u8]| Slots::of(LazyJson::new(body).json());
        for body in bodies {
            assert_eq!(slots(body.as_bytes()), by_value(body), "{body}");
        }
        let invalid_utf8 = b"{\"result\":[\"\xff\"]}";
        assert_eq!(slots(invalid_utf8), Slots::default());
    }

    #[test]
    fn an_oversized_get_blobs_keeps_its_count_and_a_bounded_hash_list() {
        let hashes = vec!["\"0x01\""; MAX_HASHES + 5].join(",");
        let request = format!(r#"{{"method":"engine_getBlobsV1","params":[[{hashes}]]}}"#);
        let EventData::GetBlobs(b) = event(&request, r#"{"error":{"message":"too large"}}"#) else {
            panic!("kind")
        };
        assert_eq!(b.requested_count as usize, MAX_HASHES + 5);
        assert_eq!(b.versioned_hashes.len(), MAX_HASHES);
    }

    #[test]
    fn client_version_parts() {
        let request = br#"{"method":"engine_getClientVersionV1","params":[]}"#;
        let answer = br#"{"result":[{"code":"GE","name":"Geth","version":"1.17.8-stable","commit":"0xdeadbeef"}]}"#;
        let Some(Seen::ClientVersion(x)) = read(request, &LazyJson::new(answer)) else {
            panic!("no version")
        };
        assert_eq!(x.implementation, "Geth");
        assert_eq!(x.version, "1.17.8-stable-0xdeadbeef");
        assert_eq!(
            (x.major.as_str(), x.minor.as_str(), x.patch.as_str()),
            ("1", "17", "8")
        );
        assert_eq!(
            read(br#"{"method":"eth_chainId"}"#, &LazyJson::new(b"")),
            None
        );
    }
}
