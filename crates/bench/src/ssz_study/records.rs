//! The records of the study's two bridges, read back: the CL-side bridge's (JSON-RPC from the
//! CL, REST-SSZ onward; with the CL's JSON bodies) and the EL-side bridge's (REST-SSZ in,
//! JSON-RPC to geth), grouped per method, direction and blob count into sizes and translation
//! times, with one recorded JSON message kept per group for the codec measurements.
//!
//! Not here: running the chain, measuring the codecs, writing the report.

use std::{
    collections::BTreeMap,
    io::{BufRead, Read},
    path::Path,
};

use serde::Deserialize;
use sszgate_report::ssz_study::Spread;

/// The longest record line read: a 72-blob answer's JSON (about 20 MB) escaped in a record,
/// with room to spare.
const MAX_LINE: u64 = 160 << 20;

/// One call as a bridge recorded it (the fields the study reads).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Recorded {
    method: Option<String>,
    mode: String,
    status: u16,
    injected: Option<String>,
    error_code: Option<i64>,
    blob_count: Option<u64>,
    blobs_returned: Option<u64>,
    versioned_hash_count: Option<u64>,
    block_hash: Option<String>,
    request_bytes: u64,
    response_bytes: u64,
    request_decoded_bytes: Option<u64>,
    response_decoded_bytes: Option<u64>,
    response_encoding: Option<String>,
    translate_request_us: Option<u64>,
    translate_response_us: Option<u64>,
    upstream_request_bytes: Option<u64>,
    upstream_response_bytes: Option<u64>,
    request_body: Option<String>,
    response_body: Option<String>,
}

impl Recorded {
    /// A bridged call answered whole by the EL: not refused, not an error, not injected.
    fn counts(&self) -> bool {
        self.mode == "bridge"
            && self.status == 200
            && self.injected.is_none()
            && self.error_code.is_none()
    }

    /// Its blobs: the bundle's, the answered blobs', or the versioned hashes', when its
    /// facts tell.
    fn blobs(&self) -> Option<u64> {
        self.blob_count
            .or(self.blobs_returned)
            .or(self.versioned_hash_count)
    }

    /// The key that finds the same call in the other bridge's records: its method and block.
    fn call_key(&self) -> Option<(String, String)> {
        Some((self.method.clone()?, self.block_hash.clone()?))
    }

    /// Its method, when it is one whose REST body is SSZ.
    fn ssz_method(&self) -> Option<&'static sszgate_engine::MethodSpec> {
        let m = sszgate_engine::method::by_name(self.method.as_deref()?).ok()?;
        (!m.resource.is_json()).then_some(m)
    }
}

/// Which way a message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Direction {
    /// CL to EL.
    Request,
    /// EL to CL.
    Answer,
}

impl Direction {
    /// Its name in the report.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Direction::Request => "request",
            Direction::Answer => "answer",
        }
    }
}

/// A row's key: method, direction, blobs.
pub(crate) type Key = (&'static str, Direction, u64);

/// What one group's calls measured, from both bridges.
#[derive(Clone, Debug, Default)]
pub(crate) struct Group {
    /// Calls the CL made in this group.
    pub(crate) calls: usize,
    json_bytes: Vec<f64>,
    ssz_bytes: Vec<f64>,
    zstd_bytes: Vec<f64>,
    to_ssz_us: Vec<f64>,
    to_json_us: Vec<f64>,
}

impl Group {
    /// The JSON sizes (min–max).
    pub(crate) fn json_bytes(&self) -> Option<Spread> {
        Spread::of_sizes(&self.json_bytes)
    }

    /// The uncompressed SSZ sizes (min–max).
    pub(crate) fn ssz_bytes(&self) -> Option<Spread> {
        Spread::of_sizes(&self.ssz_bytes)
    }

    /// The SSZ sizes on the link when compressed with zstd.
    pub(crate) fn zstd_bytes(&self) -> Option<Spread> {
        Spread::of_sizes(&self.zstd_bytes)
    }

    /// The bridge's JSON to SSZ translations (p10–p90).
    pub(crate) fn to_ssz_us(&self) -> Option<Spread> {
        Spread::of_times(&self.to_ssz_us)
    }

    /// The bridge's SSZ to JSON translations (p10–p90).
    pub(crate) fn to_json_us(&self) -> Option<Spread> {
        Spread::of_times(&self.to_json_us)
    }
}

/// One recorded message kept for the codec measurements: the CL-side JSON-RPC body, and the
/// SSZ size the middle link carried for it (0 when it carried no body).
#[derive(Clone, Debug)]
pub(crate) struct Kept {
    /// The JSON-RPC body as the CL link carried it (the whole envelope).
    pub(crate) json: String,
    /// The SSZ body's size on the middle link, uncompressed.
    pub(crate) ssz_len: u64,
}

/// Every group of a run, and one kept message per group.
#[derive(Debug, Default)]
pub(crate) struct Study {
    /// The groups, ordered by method, direction and blobs.
    pub(crate) groups: BTreeMap<Key, Group>,
    /// The last recorded message of each group.
    pub(crate) kept: BTreeMap<Key, Kept>,
    /// The blobs of each CL-side call by method and block hash: an SSZ newPayload's facts
    /// hold no versioned-hash count, its JSON-RPC form's do.
    blobs_by_block: std::collections::HashMap<(String, String), u64>,
}

fn push(values: &mut Vec<f64>, value: Option<u64>) {
    if let Some(v) = value {
        values.push(v as f64);
    }
}

impl Study {
    /// Adds the records of the CL-side bridge at `path` (JSON-RPC in from the CL, REST-SSZ
    /// out; written with bodies): what the CL sent, the request's translation to SSZ, the
    /// answer's back to JSON, and the messages kept.
    pub(crate) fn add_cl_side(&mut self, path: &Path) -> Result<(), String> {
        each_record(path, |r| {
            let Some(m) = r.ssz_method() else { return };
            let blobs = r.blobs().unwrap_or(0);
            if let Some(call) = r.call_key() {
                self.blobs_by_block.insert(call, blobs);
            }
            for direction in [Direction::Request, Direction::Answer] {
                let key = (m.name, direction, blobs);
                let group = self.groups.entry(key).or_default();
                group.calls += 1;
                let (body, ssz_len) = match direction {
                    Direction::Request => {
                        group
                            .json_bytes
                            .push(r.request_decoded_bytes.unwrap_or(r.request_bytes) as f64);
                        push(&mut group.to_ssz_us, r.translate_request_us);
                        (&r.request_body, r.upstream_request_bytes)
                    }
                    Direction::Answer => {
                        push(&mut group.to_json_us, r.translate_response_us);
                        (&r.response_body, r.upstream_response_bytes)
                    }
                };
                if let Some(json) = body {
                    self.kept.insert(
                        key,
                        Kept {
                            json: json.clone(),
                            ssz_len: ssz_len.unwrap_or(0),
                        },
                    );
                }
            }
        })
    }

    /// Adds the records of the EL-side bridge at `path` (REST-SSZ in, JSON-RPC to the EL):
    /// the SSZ the middle link carried (and its zstd size), the EL's JSON answer, and the
    /// translations at this end. A call whose facts give no blob count takes that of the
    /// CL-side call of the same method and block (add the CL side's records first).
    pub(crate) fn add_el_side(&mut self, path: &Path) -> Result<(), String> {
        each_record(path, |r| {
            let Some(m) = r.ssz_method() else { return };
            let blobs = r
                .blobs()
                .or_else(|| self.blobs_by_block.get(&r.call_key()?).copied())
                .unwrap_or(0);
            let request = self
                .groups
                .entry((m.name, Direction::Request, blobs))
                .or_default();
            request
                .ssz_bytes
                .push(r.request_decoded_bytes.unwrap_or(r.request_bytes) as f64);
            push(&mut request.to_json_us, r.translate_request_us);
            let answer = self
                .groups
                .entry((m.name, Direction::Answer, blobs))
                .or_default();
            answer
                .ssz_bytes
                .push(r.response_decoded_bytes.unwrap_or(r.response_bytes) as f64);
            if r.response_encoding.as_deref() == Some("zstd") {
                answer.zstd_bytes.push(r.response_bytes as f64);
            }
            push(&mut answer.json_bytes, r.upstream_response_bytes);
            push(&mut answer.to_ssz_us, r.translate_response_us);
        })
    }
}

/// Calls `each` with every counted record of the JSON-lines file at `path`; a line longer
/// than [`MAX_LINE`] or not a record is an error naming the line.
fn each_record(path: &Path, mut each: impl FnMut(&Recorded)) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{}: line {number}: {e}", path.display()))?;
        if read == 0 {
            break;
        }
        if read as u64 == MAX_LINE && line.last() != Some(&b'\n') {
            return Err(format!(
                "{}: line {number} is longer than {MAX_LINE} bytes",
                path.display()
            ));
        }
        let record: Recorded = serde_json::from_slice(&line)
            .map_err(|e| format!("{}: line {number}: {e}", path.display()))?;
        if record.counts() {
            each(&record);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, lines: &[serde_json::Value]) -> std::path::PathBuf {
        let path = dir.join(name);
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        std::fs::write(&path, text.join("\n") + "\n").unwrap();
        path
    }

    #[test]
    fn both_bridges_records_become_groups_per_direction_and_blob_count() {
        let dir = tempfile::tempdir().unwrap();
        let bundle = serde_json::json!({
            "method": "engine_getPayloadV5", "mode": "bridge", "status": 200, "blob_count": 6,
            "request_bytes": 90, "response_bytes": 1_700_000, "translate_request_us": 4,
            "translate_response_us": 9000, "upstream_request_bytes": 0,
            "upstream_response_bytes": 850_000,
            "request_body": "{\"id\":1}", "response_body": "{\"result\":{}}"
        });
        let injected = serde_json::json!({
            "method": "engine_getPayloadV5", "mode": "bridge", "status": 200, "blob_count": 6,
            "injected": "rule 1: rpc error", "response_bytes": 5
        });
        let identity = serde_json::json!({
            "method": "engine_getClientVersionV1", "mode": "bridge", "status": 200
        });
        let import = serde_json::json!({
            "method": "engine_newPayloadV4", "mode": "bridge", "status": 200,
            "versioned_hash_count": 6, "block_hash": "0xab", "request_bytes": 9000
        });
        let cl = write(
            dir.path(),
            "cl.jsonl",
            &[bundle, injected, identity.clone(), import],
        );
        let el_bundle = serde_json::json!({
            "method": "engine_getPayloadV5", "mode": "bridge", "status": 200, "blob_count": 6,
            "request_bytes": 0, "response_bytes": 700_000, "response_decoded_bytes": 850_000,
            "response_encoding": "zstd", "translate_request_us": 3,
            "translate_response_us": 7000, "upstream_response_bytes": 1_700_050
        });
        let el_import = serde_json::json!({
            "method": "engine_newPayloadV4", "mode": "bridge", "status": 200,
            "block_hash": "0xab", "request_bytes": 4000
        });
        let el = write(dir.path(), "el.jsonl", &[el_bundle, identity, el_import]);
        let mut study = Study::default();
        study.add_cl_side(&cl).unwrap();
        study.add_el_side(&el).unwrap();
        assert_eq!(study.groups.len(), 4, "{:?}", study.groups.keys());
        // The SSZ newPayload's blobs come from the JSON-RPC call of the same block.
        let import = &study.groups[&("engine_newPayloadV4", Direction::Request, 6)];
        assert_eq!(import.json_bytes().unwrap().median, 9000.0);
        assert_eq!(import.ssz_bytes().unwrap().median, 4000.0);
        let answer = &study.groups[&("engine_getPayloadV5", Direction::Answer, 6)];
        assert_eq!(answer.calls, 1);
        assert_eq!(answer.json_bytes().unwrap().median, 1_700_050.0);
        assert_eq!(answer.ssz_bytes().unwrap().median, 850_000.0);
        assert_eq!(answer.zstd_bytes().unwrap().median, 700_000.0);
        assert_eq!(answer.to_ssz_us().unwrap().median, 7000.0);
        assert_eq!(answer.to_json_us().unwrap().median, 9000.0);
        let request = &study.groups[&("engine_getPayloadV5", Direction::Request, 6)];
        assert_eq!(request.json_bytes().unwrap().median, 90.0);
        assert_eq!(request.ssz_bytes().unwrap().median, 0.0);
        assert!(request.zstd_bytes().is_none());
        let kept = &study.kept[&("engine_getPayloadV5", Direction::Answer, 6)];
        assert_eq!(
            (kept.json.as_str(), kept.ssz_len),
            ("{\"result\":{}}", 850_000)
        );
    }

    #[test]
    fn a_line_that_is_not_a_record_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.jsonl");
        std::fs::write(&path, "{\"mode\":\"bridge\"}\nnot json\n").unwrap();
        let error = Study::default().add_cl_side(&path).unwrap_err();
        assert!(error.contains("line 2"), "{error}");
    }
}
