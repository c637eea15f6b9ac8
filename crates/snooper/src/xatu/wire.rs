//! The xatu messages sszgate sends, in both of xatu's encodings: protobuf (the body of
//! `xatu.EventIngester/CreateEvents` over gRPC) and protojson (one line per event for the
//! `http:` and `stdout` outputs). Field numbers and JSON names follow xatu v1.8.1's
//! `event_ingester.proto` (`DecoratedEvent`, `Event`, `Meta`, `ClientMeta`,
//! `ExecutionEngineNewPayload`, `ExecutionEngineGetBlobs`) and Google's `Timestamp` and
//! wrapper types.
//!
//! Why a hand-written encoder and not prost: sszgate only ever encodes these few messages
//! (it never decodes one), so forty lines of varint and length-delimited writing cost less
//! than prost, its derive macros and a build step, and keep xatu's GPL `.proto` files out of
//! the tree. The real server's acceptance of these bytes is the test of the field numbers.
//!
//! Not here: reading the calls (`event`), queueing and sending (`sink`).

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

/// `Event.Name` `EXECUTION_ENGINE_NEW_PAYLOAD`.
const NAME_NEW_PAYLOAD: u64 = 82;
/// `Event.Name` `EXECUTION_ENGINE_GET_BLOBS`.
const NAME_GET_BLOBS: u64 = 83;
/// `ModuleName` `RPC_SNOOPER`.
const MODULE_RPC_SNOOPER: u64 = 10;
/// `EngineSource` `ENGINE_SOURCE_SNOOPER`.
const SOURCE_SNOOPER: u64 = 1;

/// `ClientMeta`: who sends the events (rpc-snooper's fields).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientMeta {
    /// `--xatu-name`.
    pub name: String,
    /// This build's version.
    pub version: String,
    /// The implementation's name.
    pub implementation: String,
    /// `--xatu-network-name`.
    pub network_name: String,
    /// `--xatu-network-id`.
    pub network_id: u64,
    /// The EL behind the proxy, once known.
    pub execution: Option<Execution>,
    /// `--xatu-label` pairs, sorted by key.
    pub labels: Vec<(String, String)>,
}

/// `ClientMeta.Ethereum.Execution`: the EL's name and version parts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Execution {
    /// E.g. `Geth`.
    pub implementation: String,
    /// E.g. `1.17.8-stable-0xdeadbeef`.
    pub version: String,
    /// Major version.
    pub major: String,
    /// Minor version.
    pub minor: String,
    /// Patch version.
    pub patch: String,
}

/// One event: the envelope's fields and its data.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The sender as it was when the event was made.
    pub client: std::sync::Arc<ClientMeta>,
    /// `Event.id`, a UUID.
    pub id: String,
    /// `Event.date_time`: when the answer was seen.
    pub date_time: SystemTime,
    /// `data.requested_at`: when the call arrived.
    pub requested_at: SystemTime,
    /// `data.duration_ms`: the round trip.
    pub duration_ms: u64,
    /// The event's own data.
    pub data: EventData,
    /// What sszgate knows of the call that xatu's event has no field for (sizes, the exact
    /// round trip, the HTTP status), sent as `sszgate_*` labels next to `--xatu-label`'s:
    /// the client labels are the one place a xatu event has room for them.
    pub facts: Vec<(String, String)>,
}

/// The data of the two event kinds rpc-snooper publishes.
#[derive(Clone, Debug, PartialEq)]
pub enum EventData {
    /// `ExecutionEngineNewPayload`.
    NewPayload(NewPayload),
    /// `ExecutionEngineGetBlobs`.
    GetBlobs(GetBlobs),
}

/// `ExecutionEngineNewPayload`'s own fields.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewPayload {
    /// `block_number`.
    pub block_number: u64,
    /// `block_hash`.
    pub block_hash: String,
    /// `parent_hash`.
    pub parent_hash: String,
    /// `gas_used`.
    pub gas_used: u64,
    /// `gas_limit`.
    pub gas_limit: u64,
    /// `tx_count`.
    pub tx_count: u32,
    /// `blob_count`: the versioned hashes given.
    pub blob_count: u32,
    /// `status`: the EL's verdict, `ERROR` or `UNKNOWN`.
    pub status: String,
    /// `latest_valid_hash`.
    pub latest_valid_hash: String,
    /// `validation_error` (or the JSON-RPC error's message).
    pub validation_error: String,
    /// `method_version`, e.g. `V4`.
    pub method_version: String,
}

/// `ExecutionEngineGetBlobs`'s own fields.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GetBlobs {
    /// `requested_count`: the versioned hashes asked for.
    pub requested_count: u32,
    /// `versioned_hashes` (the first `event::MAX_HASHES`).
    pub versioned_hashes: Vec<String>,
    /// `returned_count`.
    pub returned_count: u32,
    /// `status`: `SUCCESS`, `PARTIAL`, `EMPTY`, `UNSUPPORTED` or `ERROR`.
    pub status: String,
    /// `error_message`.
    pub error_message: String,
    /// `method_version`.
    pub method_version: String,
    /// `returned_blob_indexes`.
    pub returned_blob_indexes: Vec<u32>,
}

/// A protobuf message being written.
#[derive(Default)]
struct Message(Vec<u8>);

impl Message {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire_type: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire_type));
    }

    /// A varint field (integers, enums), left out when zero (proto3).
    fn uint(&mut self, field: u32, v: u64) -> &mut Self {
        if v != 0 {
            self.key(field, 0);
            self.varint(v);
        }
        self
    }

    /// A length-delimited field, always written.
    fn bytes(&mut self, field: u32, v: &[u8]) -> &mut Self {
        self.key(field, 2);
        self.varint(v.len() as u64);
        self.0.extend_from_slice(v);
        self
    }

    /// A string field, left out when empty (proto3).
    fn string(&mut self, field: u32, v: &str) -> &mut Self {
        if !v.is_empty() {
            self.bytes(field, v.as_bytes());
        }
        self
    }

    /// An embedded message, always written (a set wrapper of 0 is still set).
    fn message(&mut self, field: u32, v: Message) -> &mut Self {
        self.bytes(field, &v.0)
    }
}

/// `google.protobuf.UInt64Value` / `UInt32Value`: `value = 1`.
fn wrapper(v: u64) -> Message {
    let mut m = Message::default();
    m.uint(1, v);
    m
}

/// Seconds and nanoseconds since the Unix epoch (0 before it).
fn unix(t: SystemTime) -> (u64, u32) {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    (d.as_secs(), d.subsec_nanos())
}

/// `google.protobuf.Timestamp`: `seconds = 1`, `nanos = 2`.
fn timestamp(t: SystemTime) -> Message {
    let (secs, nanos) = unix(t);
    let mut m = Message::default();
    m.uint(1, secs).uint(2, u64::from(nanos));
    m
}

/// `xatu.CreateEventsRequest { repeated DecoratedEvent events = 1; }`.
pub fn create_events_request(events: &[Event]) -> Vec<u8> {
    let mut request = Message::default();
    for event in events {
        request.message(
            1,
            decorated_event(event, &client_meta(&event.client, &event.facts)),
        );
    }
    request.0
}

fn client_meta(c: &ClientMeta, facts: &[(String, String)]) -> Vec<u8> {
    let mut network = Message::default();
    network.string(1, &c.network_name).uint(2, c.network_id);
    let mut ethereum = Message::default();
    ethereum.message(1, network);
    if let Some(x) = &c.execution {
        let mut execution = Message::default();
        execution
            .string(2, &x.implementation)
            .string(3, &x.version)
            .string(4, &x.major)
            .string(5, &x.minor)
            .string(6, &x.patch);
        ethereum.message(2, execution);
    }
    let mut m = Message::default();
    m.string(1, &c.name)
        .string(2, &c.version)
        .string(4, &c.implementation)
        .message(8, ethereum);
    for (k, v) in c.labels.iter().chain(facts) {
        let mut entry = Message::default();
        entry.string(1, k).string(2, v);
        m.message(9, entry);
    }
    m.uint(63, MODULE_RPC_SNOOPER);
    m.0
}

fn decorated_event(e: &Event, client: &[u8]) -> Message {
    let name = match e.data {
        EventData::NewPayload(_) => NAME_NEW_PAYLOAD,
        EventData::GetBlobs(_) => NAME_GET_BLOBS,
    };
    let mut head = Message::default();
    head.uint(1, name)
        .message(2, timestamp(e.date_time))
        .string(3, &e.id);
    let mut meta = Message::default();
    meta.bytes(1, client);
    let mut data = Message::default();
    data.uint(1, SOURCE_SNOOPER)
        .message(2, timestamp(e.requested_at))
        .message(3, wrapper(e.duration_ms));
    let field = match &e.data {
        EventData::NewPayload(p) => {
            new_payload(&mut data, p);
            204
        }
        EventData::GetBlobs(b) => {
            get_blobs(&mut data, b);
            205
        }
    };
    let mut m = Message::default();
    m.message(1, head).message(2, meta).message(field, data);
    m
}

fn new_payload(m: &mut Message, p: &NewPayload) {
    m.message(4, wrapper(p.block_number))
        .string(5, &p.block_hash)
        .string(6, &p.parent_hash)
        .message(7, wrapper(p.gas_used))
        .message(8, wrapper(p.gas_limit))
        .message(9, wrapper(p.tx_count.into()))
        .message(10, wrapper(p.blob_count.into()))
        .string(11, &p.status)
        .string(12, &p.latest_valid_hash)
        .string(13, &p.validation_error)
        .string(14, &p.method_version);
}

fn get_blobs(m: &mut Message, b: &GetBlobs) {
    m.message(4, wrapper(b.requested_count.into()));
    for hash in &b.versioned_hashes {
        m.bytes(5, hash.as_bytes());
    }
    m.message(6, wrapper(b.returned_count.into()))
        .string(7, &b.status)
        .string(8, &b.error_message)
        .string(9, &b.method_version);
    for index in &b.returned_blob_indexes {
        m.message(10, wrapper((*index).into()));
    }
}

/// A Timestamp as protojson writes it: RFC 3339 in UTC, 0, 3, 6 or 9 fractional digits.
fn rfc3339(t: SystemTime) -> String {
    let (secs, nanos) = unix(t);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, mo, d) = civil_from_days(days as i64);
    let time = format!("{:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60);
    let fraction = match nanos {
        0 => String::new(),
        n if n % 1_000_000 == 0 => format!(".{:03}", n / 1_000_000),
        n if n % 1_000 == 0 => format!(".{:06}", n / 1_000),
        n => format!(".{n:09}"),
    };
    format!("{y:04}-{mo:02}-{d:02}T{time}{fraction}Z")
}

/// Year, month, day of the `days`-th day after 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Inserts `value` under `key` unless it is protojson's default (an empty string or list).
fn put(map: &mut Map<String, Value>, key: &str, value: Value) {
    let empty = match &value {
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    };
    if !empty {
        map.insert(key.to_string(), value);
    }
}

/// One event as protojson, as xatu's `http` and `stdout` sinks write it.
pub fn event_json(e: &Event) -> Value {
    let (name, data) = match &e.data {
        EventData::NewPayload(p) => ("EXECUTION_ENGINE_NEW_PAYLOAD", new_payload_json(p)),
        EventData::GetBlobs(b) => ("EXECUTION_ENGINE_GET_BLOBS", get_blobs_json(b)),
    };
    let mut data = data;
    data.insert("source".into(), json!("ENGINE_SOURCE_SNOOPER"));
    data.insert("requested_at".into(), json!(rfc3339(e.requested_at)));
    data.insert("duration_ms".into(), json!(e.duration_ms.to_string()));
    json!({
        "event": {"name": name, "date_time": rfc3339(e.date_time), "id": e.id},
        "meta": {"client": client_json(&e.client, &e.facts)},
        name: data,
    })
}

fn client_json(c: &ClientMeta, facts: &[(String, String)]) -> Value {
    let mut network = Map::new();
    put(&mut network, "name", json!(c.network_name));
    if c.network_id != 0 {
        network.insert("id".into(), json!(c.network_id.to_string()));
    }
    let mut ethereum = Map::new();
    ethereum.insert("network".into(), Value::Object(network));
    if let Some(x) = &c.execution {
        let mut execution = Map::new();
        put(&mut execution, "implementation", json!(x.implementation));
        put(&mut execution, "version", json!(x.version));
        put(&mut execution, "version_major", json!(x.major));
        put(&mut execution, "version_minor", json!(x.minor));
        put(&mut execution, "version_patch", json!(x.patch));
        ethereum.insert("execution".into(), Value::Object(execution));
    }
    let mut m = Map::new();
    put(&mut m, "name", json!(c.name));
    put(&mut m, "version", json!(c.version));
    put(&mut m, "implementation", json!(c.implementation));
    m.insert("ethereum".into(), Value::Object(ethereum));
    let labels: Map<String, Value> = c
        .labels
        .iter()
        .chain(facts)
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    put(&mut m, "labels", Value::Object(labels));
    m.insert("module_name".into(), json!("RPC_SNOOPER"));
    Value::Object(m)
}

fn new_payload_json(p: &NewPayload) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("block_number".into(), json!(p.block_number.to_string()));
    put(&mut m, "block_hash", json!(p.block_hash));
    put(&mut m, "parent_hash", json!(p.parent_hash));
    m.insert("gas_used".into(), json!(p.gas_used.to_string()));
    m.insert("gas_limit".into(), json!(p.gas_limit.to_string()));
    m.insert("tx_count".into(), json!(p.tx_count));
    m.insert("blob_count".into(), json!(p.blob_count));
    put(&mut m, "status", json!(p.status));
    put(&mut m, "latest_valid_hash", json!(p.latest_valid_hash));
    put(&mut m, "validation_error", json!(p.validation_error));
    put(&mut m, "method_version", json!(p.method_version));
    m
}

fn get_blobs_json(b: &GetBlobs) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("requested_count".into(), json!(b.requested_count));
    put(&mut m, "versioned_hashes", json!(b.versioned_hashes));
    m.insert("returned_count".into(), json!(b.returned_count));
    put(&mut m, "status", json!(b.status));
    put(&mut m, "error_message", json!(b.error_message));
    put(&mut m, "method_version", json!(b.method_version));
    put(
        &mut m,
        "returned_blob_indexes",
        json!(b.returned_blob_indexes),
    );
    m
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn varints_and_zero_fields_follow_proto3() {
        let mut m = Message::default();
        m.uint(1, 300).uint(2, 0).string(3, "").string(4, "a");
        assert_eq!(m.0, [0x08, 0xac, 0x02, 0x22, 0x01, b'a']);
        // A wrapper holding 0 is present but empty.
        let mut outer = Message::default();
        outer.message(7, wrapper(0));
        assert_eq!(outer.0, [0x3a, 0x00]);
    }

    #[test]
    fn timestamps_render_as_protojson_does() {
        let at = |s, n| UNIX_EPOCH + Duration::new(s, n);
        assert_eq!(rfc3339(at(0, 0)), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(at(1_795_739_112, 897_000_000)),
            "2026-11-27T00:25:12.897Z"
        );
        assert_eq!(
            rfc3339(at(951_782_400, 1_000)),
            "2000-02-29T00:00:00.000001Z"
        );
        assert_eq!(
            rfc3339(at(4_107_542_400, 5)),
            "2100-03-01T00:00:00.000000005Z"
        );
    }
}
