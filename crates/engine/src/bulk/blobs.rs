//! The getBlobs answers V1..V3: lists of blobs with their proof or cell proofs, in both
//! codecs. JSON: the writer in serde's key order; the fixed-width reader (each blob decoded
//! into its final heap place, or only checked); serde reading it with each blob checked but not
//! decoded, for the checks without KZG. SSZ: the validated list sliced. V4 (cells) is serde's
//! and alloy's alone. The differential tests against serde are at the end of the file.

use alloy_eips::eip4844::{Blob, BlobAndProofV1, BlobAndProofV2, Bytes48};

use super::{CheckedBlob, fixed_items};
use crate::{
    error::{Error, Result},
    fixed_json::write::{hex_len, push_hex, push_hex_list},
    json::{self, read::Cursor},
    message::Blobs,
    method::{AnswerBlobs, MethodSpec},
    ssz::{self as schema, container_fields},
};

/// The JSON of a getBlobsV1..V3 result, in the key order of alloy's serde impls.
pub(crate) fn blobs_json(blobs: &Blobs) -> Option<Vec<u8>> {
    fn list<T>(
        items: &[Option<T>],
        size: impl Fn(&T) -> usize,
        write: impl Fn(&mut Vec<u8>, &T),
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            items
                .iter()
                .map(|i| i.as_ref().map_or(5, &size))
                .sum::<usize>()
                + 2,
        );
        out.push(b'[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match item {
                Some(item) => write(&mut out, item),
                None => out.extend_from_slice(b"null"),
            }
        }
        out.push(b']');
        out
    }
    let v1 = |out: &mut Vec<u8>, b: &BlobAndProofV1| {
        out.extend_from_slice(b"{\"blob\":");
        push_hex(out, b.blob.as_slice());
        out.extend_from_slice(b",\"proof\":");
        push_hex(out, b.proof.as_slice());
        out.push(b'}');
    };
    let v2 = |out: &mut Vec<u8>, b: &BlobAndProofV2| {
        out.extend_from_slice(b"{\"blob\":");
        push_hex(out, b.blob.as_slice());
        out.extend_from_slice(b",\"proofs\":");
        push_hex_list(out, &b.proofs);
        out.push(b'}');
    };
    let size_v1 = |_: &BlobAndProofV1| schema::BYTES_PER_BLOB * 2 + 140;
    let size_v2 = |b: &BlobAndProofV2| schema::BYTES_PER_BLOB * 2 + hex_len(&b.proofs) + 40;
    match blobs {
        Blobs::V1(items) => Some(list(items, size_v1, v1)),
        Blobs::V2(Some(items)) => {
            let wrapped: Vec<Option<&BlobAndProofV2>> = items.iter().map(Some).collect();
            Some(list(&wrapped, |b| size_v2(b), |out, b| v2(out, b)))
        }
        Blobs::V3(Some(items)) => Some(list(items, size_v2, v2)),
        _ => None,
    }
}

/// Decodes a `BlobsV1..V3Response` body (validated here), or `None` for a row whose answer has
/// no blob entries (V4: cells).
pub(crate) fn blobs_from_ssz(m: &MethodSpec, bytes: &[u8]) -> Result<Option<Blobs>> {
    let AnswerBlobs::Entries { null_entries, .. } = m.blobs else {
        return Ok(None);
    };
    let ty = schema::blobs_response(m.version);
    schema::validate(ty, bytes)?;
    let list = container_fields(ty, bytes)[0];
    if !m.cell_proofs() {
        let entry = 1 + schema::BYTES_PER_BLOB + 48;
        let items = list
            .chunks_exact(entry)
            .map(|e| {
                (e[0] == 1).then(|| BlobAndProofV1 {
                    blob: Box::new(Blob::from_slice(&e[1..1 + schema::BYTES_PER_BLOB])),
                    proof: Bytes48::from_slice(&e[1 + schema::BYTES_PER_BLOB..]),
                })
            })
            .collect();
        return Ok(Some(Blobs::V1(items)));
    }
    let items = cell_proof_entries(list);
    Ok(Some(if null_entries {
        Blobs::V3(Some(items))
    } else {
        let all: Option<Vec<_>> = items.into_iter().collect();
        Blobs::V2(Some(all.ok_or_else(|| {
            Error::invalid(
                "blobs/v2 response",
                "an entry is unavailable; v2 is all-or-nothing (204 for a miss)",
            )
        })?))
    }))
}

/// The entries of a validated list of variable-size `BlobAndProofV2` entries: offsets, then
/// per entry {available, contents offset, blob, proofs offset, proofs}.
fn cell_proof_entries(list: &[u8]) -> Vec<Option<BlobAndProofV2>> {
    let offset =
        |at: usize| u32::from_le_bytes(list[at..at + 4].try_into().expect("validated")) as usize;
    let count = if list.is_empty() { 0 } else { offset(0) / 4 };
    let mut items = Vec::with_capacity(count);
    for i in 0..count {
        let end = if i + 1 < count {
            offset((i + 1) * 4)
        } else {
            list.len()
        };
        let entry = &list[offset(i * 4)..end];
        let contents = &entry[5..];
        let proofs_at = u32::from_le_bytes(
            contents[schema::BYTES_PER_BLOB..schema::BYTES_PER_BLOB + 4]
                .try_into()
                .expect("validated"),
        ) as usize;
        items.push((entry[0] == 1).then(|| BlobAndProofV2 {
            blob: Box::new(Blob::from_slice(&contents[..schema::BYTES_PER_BLOB])),
            proofs: fixed_items(&contents[proofs_at..], 48, Bytes48::from_slice),
        }));
    }
    items
}

/// One getBlobs entry: `{"blob": …, "proof": …}` (V1) or `{"blob": …, "proofs": […]}`
/// (V2/V3), keys in any order, each exactly once; the blob as `read_blob` reads it.
fn blob_entry<B>(
    c: &mut Cursor<'_>,
    cell_proofs: bool,
    read_blob: &mut impl FnMut(&mut Cursor<'_>) -> Option<B>,
) -> Option<(B, Vec<Bytes48>)> {
    c.eat(b"{")?;
    let (mut blob, mut proofs) = (None::<B>, None::<Vec<Bytes48>>);
    loop {
        match c.key()? {
            b"blob" if blob.is_none() => blob = Some(read_blob(c)?),
            b"proof" if !cell_proofs && proofs.is_none() => {
                proofs = Some(vec![c.fixed()?]);
            }
            b"proofs" if cell_proofs && proofs.is_none() => {
                let mut list = Vec::with_capacity(schema::CELLS_PER_EXT_BLOB);
                c.list(|c| {
                    list.push(c.fixed()?);
                    Some(())
                })?;
                proofs = Some(list);
            }
            _ => return None,
        }
        if c.next_is(b"}") {
            break;
        }
        c.eat(b",")?;
    }
    Some((blob?, proofs?))
}

/// The entries of a getBlobsV1/V2/V3 result at its fixed shape, each blob as `read_blob`
/// reads it: `Some(None)` for a `null` answer (V2/V3), `None` for any other shape or version.
/// A V2 answer has no `null` entries (it is all or nothing).
#[allow(clippy::type_complexity)]
fn blob_entries<B>(
    m: &MethodSpec,
    doc: &[u8],
    mut read_blob: impl FnMut(&mut Cursor<'_>) -> Option<B>,
) -> Option<Option<Vec<Option<(B, Vec<Bytes48>)>>>> {
    let AnswerBlobs::Entries {
        null_entries,
        null_answer,
    } = m.blobs
    else {
        return None;
    };
    let cell_proofs = m.cell_proofs();
    let mut c = Cursor::new(doc);
    if null_answer && c.next_is(b"null") {
        c.end()?;
        return Some(None);
    }
    let mut entries = Vec::new();
    c.list(|c| {
        if null_entries && c.next_is(b"null") {
            entries.push(None);
        } else {
            entries.push(Some(blob_entry(c, cell_proofs, &mut read_blob)?));
        }
        Some(())
    })?;
    c.end()?;
    Some(Some(entries))
}

/// Decodes a getBlobsV1/V2/V3 result at fixed width (blobs and proofs straight from hex);
/// `None` means "use serde" (another shape, a V4 answer, or anything unexpected).
pub(crate) fn blobs_from_json(m: &MethodSpec, doc: &[u8]) -> Option<Blobs> {
    // Each blob is decoded into its final heap place: moving 128 KiB arrays by value from
    // entry to list to answer cost more than the decode itself (8.9 ms against 6.1 ms through
    // serde for 72 blobs, measured).
    let entries = blob_entries(m, doc, |c| {
        let mut b: Box<Blob> = Box::default();
        c.hex(b.as_mut_slice())?;
        Some(b)
    })?;
    // The variant is the row's shape: one proof per blob (V1), or cell proofs with missing
    // blobs as `null` entries (V3) or as a `null` answer only (V2).
    let partial = matches!(
        m.blobs,
        AnswerBlobs::Entries {
            null_entries: true,
            ..
        }
    );
    let cells = |e: Option<(Box<Blob>, Vec<Bytes48>)>| {
        e.map(|(blob, proofs)| BlobAndProofV2 { blob, proofs })
    };
    Some(match (entries, m.cell_proofs(), partial) {
        (Some(entries), false, _) => Blobs::V1(
            entries
                .into_iter()
                .map(|e| {
                    e.map(|(blob, mut proofs)| BlobAndProofV1 {
                        blob,
                        proof: proofs.pop().expect("one proof parsed"),
                    })
                })
                .collect(),
        ),
        (None, _, false) => Blobs::V2(None),
        (None, _, true) => Blobs::V3(None),
        (Some(entries), true, false) => Blobs::V2(Some(
            entries.into_iter().map(cells).collect::<Option<Vec<_>>>()?,
        )),
        (Some(entries), true, true) => Blobs::V3(Some(entries.into_iter().map(cells).collect())),
    })
}

/// A getBlobsV1/V2/V3 result at its fixed shape without decoding its blobs (each checked for
/// width, quotes and hex digits, here or when its digits were left out): per entry, `None`
/// when missing or its number of proofs; `Some(None)` for a `null` answer. `None` for any
/// other shape or version.
#[allow(clippy::type_complexity)]
pub(crate) fn blobs_without_blobs(
    m: &MethodSpec,
    doc: &[u8],
    digits_left_out: bool,
) -> Option<Option<Vec<Option<usize>>>> {
    let bytes = if digits_left_out {
        0
    } else {
        schema::BYTES_PER_BLOB
    };
    let entries = blob_entries(m, doc, |c| const_hex::check(c.hex_of_width(bytes)?).ok())?;
    Some(entries.map(|entries| {
        entries
            .into_iter()
            .map(|e| e.map(|((), proofs)| proofs.len()))
            .collect()
    }))
}

/// One getBlobs entry as serde reads it with its blob checked but not decoded.
#[derive(serde::Deserialize)]
struct EntryV1<B> {
    #[allow(dead_code)]
    blob: B,
    #[allow(dead_code)]
    proof: Bytes48,
}

/// One getBlobs entry with cell proofs, its blob checked but not decoded.
#[derive(serde::Deserialize)]
struct EntryV2<B> {
    #[allow(dead_code)]
    blob: B,
    proofs: Vec<Bytes48>,
}

/// A getBlobs result (a row with blob entries) read by serde with its blobs checked but not
/// decoded: per entry, `None` when missing or its number of proofs; `None` for a `null`
/// answer. It refuses what serde's full decode refuses (a `null` entry in V2, a `null`
/// answer in V1).
pub(crate) fn blobs_serde_without_blobs(
    what: &str,
    m: &MethodSpec,
    doc: &[u8],
    digits_left_out: bool,
) -> Result<Option<Vec<Option<usize>>>> {
    fn read<const L: bool>(
        what: &str,
        m: &MethodSpec,
        doc: &[u8],
    ) -> Result<Option<Vec<Option<usize>>>> {
        let AnswerBlobs::Entries { null_entries, .. } = m.blobs else {
            return Err(Error::invalid(what, "no blob entries in this answer"));
        };
        let counts = |proofs: &[Bytes48]| Some(proofs.len());
        Ok(match (m.cell_proofs(), null_entries) {
            (false, _) => {
                let entries: Vec<Option<EntryV1<CheckedBlob<L>>>> = json::from_slice(what, doc)?;
                Some(entries.iter().map(|e| e.as_ref().map(|_| 1)).collect())
            }
            (true, false) => {
                let entries: Option<Vec<EntryV2<CheckedBlob<L>>>> = json::from_slice(what, doc)?;
                entries.map(|e| e.iter().map(|e| counts(&e.proofs)).collect())
            }
            (true, true) => {
                let entries: Option<Vec<Option<EntryV2<CheckedBlob<L>>>>> =
                    json::from_slice(what, doc)?;
                entries.map(|e| {
                    e.iter()
                        .map(|e| e.as_ref().and_then(|e| counts(&e.proofs)))
                        .collect()
                })
            }
        })
    }
    json::require_hex_prefix(what, doc)?;
    if digits_left_out {
        read::<true>(what, m, doc)
    } else {
        read::<false>(what, m, doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method;

    /// The row of `engine_getBlobsV{n}`.
    fn get_blobs(n: u8) -> &'static MethodSpec {
        method::by_name(&format!("engine_getBlobsV{n}")).unwrap()
    }

    fn entry(seed: u8, version: u8, reorder: bool) -> String {
        let blob = format!(
            "\"0x{}\"",
            format!("{seed:02x}").repeat(schema::BYTES_PER_BLOB)
        );
        let proof = |i: usize| format!("\"0x{}\"", format!("{:02x}", i as u8 ^ seed).repeat(48));
        let proofs = if version == 1 {
            format!("\"proof\": {}", proof(0))
        } else {
            let list: Vec<String> = (0..schema::CELLS_PER_EXT_BLOB).map(proof).collect();
            format!("\"proofs\":[ {} ]", list.join(","))
        };
        if reorder {
            format!("{{ {proofs} , \"blob\" : {blob} }}")
        } else {
            format!("{{\"blob\":{blob},{proofs}}}")
        }
    }

    fn serde(version: u8, doc: &str) -> Blobs {
        match version {
            1 => Blobs::V1(serde_json::from_str(doc).unwrap()),
            2 => Blobs::V2(serde_json::from_str(doc).unwrap()),
            _ => Blobs::V3(serde_json::from_str(doc).unwrap()),
        }
    }

    #[test]
    fn blobs_answers_decode_as_serde_decodes_them() {
        for version in [1u8, 2, 3] {
            let mut entries = vec![entry(1, version, false), entry(2, version, true)];
            if version != 2 {
                entries.insert(1, "null".into());
            }
            let doc = format!(" [ {} ] ", entries.join(" ,\n"));
            assert_eq!(
                blobs_from_json(get_blobs(version), doc.as_bytes()),
                Some(serde(version, &doc)),
                "V{version}"
            );
            assert_eq!(
                blobs_from_json(get_blobs(version), b"[]"),
                Some(serde(version, "[]")),
                "V{version} empty"
            );
        }
        assert_eq!(
            blobs_from_json(get_blobs(2), b" null "),
            Some(Blobs::V2(None))
        );
        assert_eq!(
            blobs_from_json(get_blobs(3), b"null"),
            Some(Blobs::V3(None))
        );
    }

    #[test]
    fn unusual_blobs_answers_fall_back_to_serde() {
        let good = entry(1, 2, false);
        let cases = [
            // A null entry in V2 (all or nothing), an unknown key, a key twice, a short blob,
            // a missing proof list, trailing bytes, a V1 proof list.
            format!("[{good},null]"),
            format!("[{}]", good.replacen("{", "{\"extra\":1,", 1)),
            format!(
                "[{}]",
                good.replacen(
                    "{",
                    &format!("{{\"blob\":\"0x{}\",", "00".repeat(schema::BYTES_PER_BLOB)),
                    1,
                )
            ),
            format!("[{}]", good.replacen("0x0101", "0x01", 1)),
            format!(
                "[{}]",
                good.split(",\"proofs\"").next().unwrap().to_string() + "}"
            ),
            format!("[{good}] x"),
        ];
        for doc in &cases {
            assert_eq!(
                blobs_from_json(get_blobs(2), doc.as_bytes()),
                None,
                "{}",
                &doc[..doc.len().min(80)]
            );
        }
        assert_eq!(
            blobs_from_json(get_blobs(1), format!("[{good}]").as_bytes()),
            None
        );
        assert_eq!(blobs_from_json(get_blobs(4), b"[]"), None);
    }
}
