//! Engine API facts from the bodies of a call, with a scanner rather than a parse.
//!
//! JSON bodies are walked with [`sszgate_engine::scan`] (only the top-level keys asked for are
//! read, everything else is skipped quote to quote); SSZ bodies with the spec schemas of
//! [`sszgate_engine::ssz`] (offsets read, nothing decoded). A body that does not have the
//! expected shape leaves the facts empty: recording never fails a call.

use sszgate_engine::{
    Fork,
    method::{self, Family, MethodSpec, Resource},
    scan::{self, array_elements, object_fields, plain_str, quantity},
    ssz,
};

use crate::record::Facts;

/// Bytes of a blob's JSON string without its quotes (`0x` and two digits a byte): blobs are
/// stepped over at this width, not read.
const BLOB_HEX_WIDTH: usize = 2 + 2 * ssz::BYTES_PER_BLOB;

fn string(raw: Option<&[u8]>) -> Option<String> {
    raw.and_then(plain_str).map(str::to_string)
}

fn count(raw: Option<&[u8]>) -> Option<u64> {
    raw.and_then(array_elements).map(|v| v.len() as u64)
}

/// Facts of a JSON execution payload object (`executionPayload` or newPayload `params[0]`).
fn json_payload(facts: &mut Facts, payload: &[u8]) {
    if let Some([number, hash, parent, gas, txs]) = object_fields(
        payload,
        [
            "blockNumber",
            "blockHash",
            "parentHash",
            "gasUsed",
            "transactions",
        ],
    ) {
        facts.block_number = number.and_then(quantity);
        facts.block_hash = string(hash);
        facts.parent_hash = string(parent);
        facts.gas_used = gas.and_then(quantity);
        facts.tx_count = count(txs);
    }
}

/// Facts of a JSON PayloadStatus object.
fn json_status(facts: &mut Facts, status: &[u8]) {
    if let Some([s, lvh, err]) =
        object_fields(status, ["status", "latestValidHash", "validationError"])
    {
        facts.payload_status = string(s);
        facts.latest_valid_hash = string(lvh);
        facts.validation_error = string(err);
    }
}

/// Facts of one JSON-RPC call: its request object and its response object.
pub fn json_call(request: &[u8], response: &[u8]) -> Facts {
    let mut facts = Facts::default();
    let req = scan::envelope(request).unwrap_or_default();
    // The answer is read only up to its result or error: a 20 MB result is not walked.
    // (Measured: walking it to find the end of the object was 6% of the proxy's CPU on
    // 72-blob answers, which put their id before their result.)
    let resp = scan::answer_head(response).unwrap_or_default();
    facts.rpc_id = req
        .id
        .or(resp.id)
        .map(|id| String::from_utf8_lossy(id).into_owned());
    if let Some([code, message]) = resp
        .error
        .and_then(|e| object_fields(e, ["code", "message"]))
    {
        facts.error_code = code.and_then(|c| std::str::from_utf8(c).ok()?.parse().ok());
        facts.error_message = string(message);
    }
    let Some(m) = req.method.and_then(|name| method::by_name(name).ok()) else {
        return facts;
    };
    let params = req.params.and_then(array_elements).unwrap_or_default();
    let result = resp.result.filter(|r| !r.starts_with(b"null"));
    match m.family {
        Family::NewPayload => {
            if let Some(payload) = params.first() {
                json_payload(&mut facts, payload);
            }
            facts.versioned_hash_count = count(params.get(1).copied());
            if let Some(r) = result {
                json_status(&mut facts, r);
            }
        }
        Family::ForkchoiceUpdated => {
            if let Some([head]) = params
                .first()
                .and_then(|s| object_fields(s, ["headBlockHash"]))
            {
                facts.block_hash = string(head);
            }
            if let Some([status, id]) =
                result.and_then(|r| object_fields(r, ["payloadStatus", "payloadId"]))
            {
                if let Some(status) = status {
                    json_status(&mut facts, status);
                }
                facts.payload_id = string(id);
            }
        }
        Family::GetPayload => {
            facts.payload_id = string(params.first().copied());
            if let Some(r) = result {
                // Only the payload (near the start) and the start of the blobs are read: blobs
                // are counted at their fixed width, not scanned.
                let payload = match m.version {
                    1 => Some(r),
                    _ => scan::value_start(r, ["executionPayload"]).map(|(_, p)| p),
                };
                if let Some(p) = payload {
                    json_payload(&mut facts, p);
                }
                if let Some((_, bundle)) = scan::value_start(r, ["blobsBundle"])
                    && let Some((_, blobs)) = scan::value_start(bundle, ["blobs"])
                {
                    facts.blob_count = scan::count_fixed_strings(blobs, BLOB_HEX_WIDTH)
                        .map(|n| n as u64)
                        .or_else(|| count(Some(blobs)));
                }
            }
        }
        Family::GetBlobs => {
            let requested = count(params.first().copied());
            facts.blobs_requested = requested;
            facts.versioned_hash_count = requested;
            // Entries are stepped over at the blob's fixed width when they have it.
            let available = result.and_then(|r| {
                scan::fixed_first_string_objects(r, "blob", BLOB_HEX_WIDTH).or_else(|| {
                    array_elements(r).map(|entries| entries.iter().map(|e| *e != b"null").collect())
                })
            });
            if let Some(available) = available {
                blob_entries(&mut facts, available.into_iter());
            } else if resp.error.is_none() {
                facts.blobs_returned = Some(0);
            }
        }
        _ => {}
    }
    facts
}

/// Counts the available entries of a getBlobs answer and lists the missing indices.
fn blob_entries(facts: &mut Facts, available: impl Iterator<Item = bool>) {
    let mut returned = 0;
    let mut missing = Vec::new();
    for (i, ok) in available.enumerate() {
        if ok {
            returned += 1;
        } else {
            missing.push(i.to_string());
        }
    }
    facts.blobs_returned = Some(returned);
    facts.blob_count = Some(returned);
    facts.blobs_missing = (!missing.is_empty()).then(|| missing.join(","));
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn hex_at(b: &[u8], at: usize, len: usize) -> Option<String> {
    Some(const_hex::encode_prefixed(b.get(at..at + len)?))
}

/// Facts of an SSZ `ExecutionPayload` (any fork: the first 508 bytes are the same layout).
fn ssz_payload(facts: &mut Facts, p: &[u8]) {
    facts.parent_hash = hex_at(p, 0, 32);
    facts.block_number = u64_at(p, 404);
    facts.gas_used = u64_at(p, 420);
    facts.block_hash = hex_at(p, 472, 32);
    // transactions: offset at 504; its list starts with the first element's offset (4 * count).
    let txs_at = p
        .get(504..508)
        .map(|o| u32::from_le_bytes(o.try_into().expect("4 bytes")) as usize);
    let next = p
        .get(508..512)
        .map(|o| u32::from_le_bytes(o.try_into().expect("4 bytes")) as usize);
    if let Some(start) = txs_at {
        let end = next
            .filter(|n| *n >= start && p.len() > 512)
            .unwrap_or(p.len());
        let list = p.get(start..end).unwrap_or_default();
        facts.tx_count = Some(list.get(..4).map_or(0, |o| {
            u32::from_le_bytes(o.try_into().expect("4 bytes")) as u64 / 4
        }));
    }
}

/// Facts of an SSZ `PayloadStatus`.
fn ssz_status(facts: &mut Facts, s: &[u8]) {
    let Ok(f) = ssz::fields(&ssz::PAYLOAD_STATUS, s) else {
        return;
    };
    facts.payload_status =
        Some(["VALID", "INVALID", "SYNCING", "ACCEPTED"][f[0][0] as usize].to_string());
    facts.latest_valid_hash = (!f[1].is_empty()).then(|| const_hex::encode_prefixed(f[1]));
    facts.validation_error =
        (f[2].len() > 4).then(|| String::from_utf8_lossy(&f[2][4..]).into_owned());
}

/// Facts of a problem+json error answer (type, detail, and the JSON-RPC code it stands for).
pub fn problem(response: &[u8]) -> Facts {
    let mut facts = Facts::default();
    if let Some([ty, detail]) = object_fields(response, ["type", "detail"]) {
        facts.problem_type = string(ty);
        facts.error_message = string(detail);
        facts.error_code = facts
            .problem_type
            .as_deref()
            .and_then(sszgate_engine::Problem::from_type_uri)
            .map(|p| p.rpc_code());
    }
    facts
}

/// Facts of one REST-SSZ call. `payload_id` comes from the path of `GET /payloads/{id}`;
/// `status` 204 means an empty blobs answer; errors are problem+json.
pub fn rest_call(
    resource: Resource,
    fork: Option<Fork>,
    payload_id: Option<[u8; 8]>,
    request: &[u8],
    status: u16,
    response: &[u8],
) -> Facts {
    if status >= 400 {
        return problem(response);
    }
    let mut facts = Facts::default();
    let fork = fork.unwrap_or(Fork::Osaka);
    match resource {
        Resource::SubmitPayload => {
            if let Ok(f) = ssz::fields(ssz::payload_envelope(fork), request) {
                ssz_payload(&mut facts, f[0]);
            }
            ssz_status(&mut facts, response);
        }
        Resource::Forkchoice => {
            if let Ok(f) = ssz::fields(ssz::forkchoice_update(fork), request) {
                facts.block_hash = hex_at(f[0], 0, 32);
            }
            if let Ok(f) = ssz::fields(&ssz::FORKCHOICE_RESPONSE, response) {
                ssz_status(&mut facts, f[0]);
                facts.payload_id = (f[1].len() == 8).then(|| const_hex::encode_prefixed(f[1]));
            }
        }
        Resource::GetPayload => {
            facts.payload_id = payload_id.map(const_hex::encode_prefixed);
            if let Ok(f) = ssz::fields(ssz::built_payload(fork), response) {
                ssz_payload(&mut facts, f[0]);
                if let Some(bundle) = f.get(2).filter(|_| fork.has_blobs())
                    && let Ok(b) = ssz::fields(&ssz::BLOBS_BUNDLE_V1, bundle)
                        .or_else(|_| ssz::fields(&ssz::BLOBS_BUNDLE_V2, bundle))
                {
                    facts.blob_count = Some((b[2].len() / ssz::BYTES_PER_BLOB) as u64);
                }
            }
        }
        Resource::Blobs(version) => {
            if let Ok(f) = ssz::fields(ssz::blobs_request(version), request) {
                let requested = (f[0].len() / 32) as u64;
                facts.blobs_requested = Some(requested);
                facts.versioned_hash_count = Some(requested);
            }
            if status == 204 {
                facts.blobs_returned = Some(0);
            } else if let Ok(f) = ssz::fields(ssz::blobs_response(version), response) {
                let list = f[0];
                // One proof per blob: fixed-size entries; cell proofs: variable-size ones.
                let fixed_entries =
                    rest_method(resource, Some(fork)).is_some_and(|m| !m.cell_proofs());
                let entries: Vec<bool> = if fixed_entries {
                    list.chunks_exact(1 + ssz::BYTES_PER_BLOB + 48)
                        .map(|e| e[0] == 1)
                        .collect()
                } else {
                    let n = list.get(..4).map_or(0, |o| {
                        u32::from_le_bytes(o.try_into().expect("4 bytes")) as usize / 4
                    });
                    (0..n)
                        .map(|i| {
                            let at = u32::from_le_bytes(
                                list[i * 4..i * 4 + 4].try_into().expect("4 bytes"),
                            ) as usize;
                            list.get(at) == Some(&1)
                        })
                        .collect()
                };
                blob_entries(&mut facts, entries.into_iter());
            }
        }
        _ => {}
    }
    facts
}

/// The method a REST call stands for, for the record's `method` column.
pub fn rest_method(resource: Resource, fork: Option<Fork>) -> Option<&'static MethodSpec> {
    method::for_resource(resource, fork.unwrap_or(Fork::Osaka)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A getBlobsV2 entry with a real-width blob of `byte`s and one proof.
    fn entry(byte: u8) -> String {
        format!(
            r#"{{"blob":"0x{}","proofs":["0x{}"]}}"#,
            format!("{byte:02x}").repeat(ssz::BYTES_PER_BLOB),
            "ab".repeat(48)
        )
    }

    #[test]
    fn get_blobs_facts_come_from_the_fixed_width_walk() {
        let result = format!("[{},null,{}, null]", entry(1), entry(2));
        let response = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{result}}}"#);
        let request = r#"{"jsonrpc":"2.0","id":7,"method":"engine_getBlobsV2","params":[["0x01","0x02","0x03","0x04"]]}"#;
        // The walk applies to the answer as the facts see it (from the result to the end of
        // the document), and agrees with the general walk.
        let (_, from_result) = scan::value_start(response.as_bytes(), ["result"]).unwrap();
        assert_eq!(
            scan::fixed_first_string_objects(from_result, "blob", BLOB_HEX_WIDTH),
            Some(vec![true, false, true, false])
        );
        let facts = json_call(request.as_bytes(), response.as_bytes());
        assert_eq!(facts.blobs_requested, Some(4));
        assert_eq!(facts.blobs_returned, Some(2));
        assert_eq!(facts.blob_count, Some(2));
        assert_eq!(facts.blobs_missing.as_deref(), Some("1,3"));
        // A blob one digit short is not stepped over; the general walk still counts it.
        let short = response.replacen("\"0x01", "\"0x1", 1);
        let (_, from_result) = scan::value_start(short.as_bytes(), ["result"]).unwrap();
        assert_eq!(
            scan::fixed_first_string_objects(from_result, "blob", BLOB_HEX_WIDTH),
            None
        );
        let facts = json_call(request.as_bytes(), short.as_bytes());
        assert_eq!(facts.blobs_returned, Some(2));
        assert_eq!(facts.blobs_missing.as_deref(), Some("1,3"));
    }
}
