//! Blob checks: a getPayload bundle against its payload's blob transactions and its proofs, and
//! getBlobs answers against the hashes asked for.
//!
//! Versioned hashes are `kzg_to_versioned_hash(commitment)`; proofs are verified with c-kzg in
//! one batch per call: EIP-4844 blob proofs for V1 bundles and getBlobsV1, EIP-7594 cell proofs
//! (the 128 cells recomputed from each blob) for V2 bundles and getBlobsV2/V3. getBlobs answers
//! carry no commitments: each blob's commitment is recomputed and must give the hash asked for.

use alloy_eips::eip4844::kzg_to_versioned_hash;
use alloy_primitives::{B256, FixedBytes};
use alloy_rpc_types_engine::BlobAndProofV2;
use c_kzg::KzgSettings;
use sszgate_engine::{
    blob_answer::BlobsShape,
    message::{Blobs, BuiltPayload},
    txs::blob_versioned_hashes,
};

use crate::{Check, Failure};

/// Cells (and cell proofs) per blob (EIP-7594).
pub const CELLS_PER_BLOB: usize = 128;

type Bytes48 = FixedBytes<48>;

fn kzg_blob(blob: &FixedBytes<131072>, what: &str) -> Result<c_kzg::Blob, Failure> {
    c_kzg::Blob::from_bytes(blob.as_slice())
        .map_err(|e| Failure::new(Check::Commitments, format!("{what}: {e:?}")))
}

/// The bundle's lists, whatever the envelope's version: transactions, commitments, proofs and
/// blobs, and whether the proofs are cell proofs (V2 bundles); `None` before Cancun.
#[allow(clippy::type_complexity)]
fn bundle_of(
    built: &BuiltPayload,
) -> Option<(
    &[alloy_primitives::Bytes],
    &[Bytes48],
    &[Bytes48],
    &[FixedBytes<131072>],
    bool,
)> {
    Some(match built {
        BuiltPayload::V1(_) | BuiltPayload::V2(_) => return None,
        BuiltPayload::V3(e) => (
            &e.execution_payload.payload_inner.payload_inner.transactions,
            &e.blobs_bundle.commitments,
            &e.blobs_bundle.proofs,
            &e.blobs_bundle.blobs,
            false,
        ),
        BuiltPayload::V4(e) => {
            let b = &e.envelope_inner.blobs_bundle;
            (
                &e.envelope_inner
                    .execution_payload
                    .payload_inner
                    .payload_inner
                    .transactions,
                &b.commitments,
                &b.proofs,
                &b.blobs,
                false,
            )
        }
        BuiltPayload::V5(e) => (
            &e.execution_payload.payload_inner.payload_inner.transactions,
            &e.blobs_bundle.commitments,
            &e.blobs_bundle.proofs,
            &e.blobs_bundle.blobs,
            true,
        ),
        BuiltPayload::V6(e) => (
            &e.execution_payload
                .payload_inner
                .payload_inner
                .payload_inner
                .transactions,
            &e.blobs_bundle.commitments,
            &e.blobs_bundle.proofs,
            &e.blobs_bundle.blobs,
            true,
        ),
    })
}

/// The bundle of a getPayload answer: its lists line up, its commitments give the versioned
/// hashes of the payload's blob transactions, and, given the KZG settings, its proofs verify.
pub fn check_bundle(kzg: Option<&KzgSettings>, built: &BuiltPayload) -> Result<(), Failure> {
    let Some((_, commitments, proofs, blobs, cells)) = bundle_of(built) else {
        return Ok(());
    };
    check_bundle_lists(built, blobs.len())?;
    let Some(kzg) = kzg.filter(|_| !blobs.is_empty()) else {
        return Ok(());
    };
    let blobs: Vec<&FixedBytes<131072>> = blobs.iter().collect();
    if cells {
        verify_cells(kzg, &blobs, commitments, proofs, "blobsBundle")
    } else {
        verify_blob_proofs(kzg, &blobs, commitments, proofs, "blobsBundle")
    }
}

/// The checks of a bundle that need no blob contents, for a bundle of `blob_count` blobs
/// (`built` may have been read without them, `sszgate_engine::blob_answer`): its lists line
/// up and its commitments give the versioned hashes of the payload's blob transactions.
pub fn check_bundle_lists(built: &BuiltPayload, blob_count: usize) -> Result<(), Failure> {
    let Some((transactions, commitments, proofs, _, cells)) = bundle_of(built) else {
        return Ok(());
    };
    let per_blob = if cells { CELLS_PER_BLOB } else { 1 };
    if blob_count != commitments.len() || proofs.len() != blob_count * per_blob {
        return Err(Failure::new(
            Check::Commitments,
            format!(
                "blobsBundle has {blob_count} blobs, {} commitments and {} proofs ({per_blob} proof(s) per blob expected)",
                commitments.len(),
                proofs.len()
            ),
        ));
    }
    let expected = blob_versioned_hashes(transactions)
        .map_err(|e| Failure::new(Check::Transactions, e.to_string()))?;
    let bundled: Vec<B256> = commitments
        .iter()
        .map(|c| kzg_to_versioned_hash(c.as_slice()))
        .collect();
    if bundled != expected {
        let at = bundled
            .iter()
            .zip(&expected)
            .position(|(a, b)| a != b)
            .map(|i| format!(" (first difference at blobsBundle.commitments[{i}])"))
            .unwrap_or_default();
        return Err(Failure::new(
            Check::Commitments,
            format!(
                "the bundle's {} commitments do not give the {} versioned hashes of the payload's blob transactions{at}",
                bundled.len(),
                expected.len()
            ),
        ));
    }
    Ok(())
}

fn verify_blob_proofs(
    kzg: &KzgSettings,
    blobs: &[&FixedBytes<131072>],
    commitments: &[Bytes48],
    proofs: &[Bytes48],
    what: &str,
) -> Result<(), Failure> {
    let blobs: Vec<c_kzg::Blob> = blobs
        .iter()
        .enumerate()
        .map(|(i, b)| kzg_blob(b, &format!("{what}.blobs[{i}]")))
        .collect::<Result<_, _>>()?;
    let commitments: Vec<c_kzg::Bytes48> = commitments
        .iter()
        .map(|c| c_kzg::Bytes48::from(c.0))
        .collect();
    let proofs: Vec<c_kzg::Bytes48> = proofs.iter().map(|p| c_kzg::Bytes48::from(p.0)).collect();
    match kzg.verify_blob_kzg_proof_batch(&blobs, &commitments, &proofs) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Failure::new(
            Check::BlobProofs,
            format!(
                "{what}: the blob proofs of {} blobs do not verify",
                blobs.len()
            ),
        )),
        Err(e) => Err(Failure::new(Check::BlobProofs, format!("{what}: {e:?}"))),
    }
}

/// Verifies `CELLS_PER_BLOB` cell proofs per blob in one batch; the cells are recomputed from
/// the blobs.
fn verify_cells(
    kzg: &KzgSettings,
    blobs: &[&FixedBytes<131072>],
    commitments: &[Bytes48],
    proofs: &[Bytes48],
    what: &str,
) -> Result<(), Failure> {
    let mut cells = Vec::with_capacity(blobs.len() * CELLS_PER_BLOB);
    let mut cell_commitments = Vec::with_capacity(blobs.len() * CELLS_PER_BLOB);
    let mut indices = Vec::with_capacity(blobs.len() * CELLS_PER_BLOB);
    for (i, blob) in blobs.iter().enumerate() {
        let blob = kzg_blob(blob, &format!("{what}.blobs[{i}]"))?;
        let computed = kzg
            .compute_cells(&blob)
            .map_err(|e| Failure::new(Check::CellProofs, format!("{what}.blobs[{i}]: {e:?}")))?;
        cells.extend(computed.iter().cloned());
        cell_commitments.extend(std::iter::repeat_n(
            c_kzg::Bytes48::from(commitments[i].0),
            CELLS_PER_BLOB,
        ));
        indices.extend(0..CELLS_PER_BLOB as u64);
    }
    let proofs: Vec<c_kzg::Bytes48> = proofs.iter().map(|p| c_kzg::Bytes48::from(p.0)).collect();
    match kzg.verify_cell_kzg_proof_batch(&cell_commitments, &indices, &cells, &proofs) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Failure::new(
            Check::CellProofs,
            format!(
                "{what}: the {} cell proofs of {} blobs do not verify",
                proofs.len(),
                blobs.len()
            ),
        )),
        Err(e) => Err(Failure::new(Check::CellProofs, format!("{what}: {e:?}"))),
    }
}

/// The commitment of a blob, recomputed.
fn commitment(
    kzg: &KzgSettings,
    blob: &FixedBytes<131072>,
    what: &str,
) -> Result<Bytes48, Failure> {
    let blob = kzg_blob(blob, what)?;
    let c = kzg
        .blob_to_kzg_commitment(&blob)
        .map_err(|e| Failure::new(Check::BlobsAnswer, format!("{what}: {e:?}")))?;
    Ok(Bytes48::from(c.to_bytes().into_inner()))
}

/// The entries of a decoded getBlobs answer as [`check_answer_shape`] sees them; `None` for a
/// version not checked here (V4).
pub fn shape_of(answer: &Blobs) -> Option<BlobsShape> {
    let v2 = |items: &mut dyn Iterator<Item = Option<&BlobAndProofV2>>| {
        items.map(|b| b.map(|b| b.proofs.len())).collect()
    };
    Some(match answer {
        Blobs::V1(items) => BlobsShape {
            cell_proofs: false,
            entries: Some(items.iter().map(|b| b.as_ref().map(|_| 1)).collect()),
        },
        Blobs::V2(items) => BlobsShape {
            cell_proofs: true,
            entries: items.as_ref().map(|items| v2(&mut items.iter().map(Some))),
        },
        Blobs::V3(items) => BlobsShape {
            cell_proofs: true,
            entries: items
                .as_ref()
                .map(|items| v2(&mut items.iter().map(Option::as_ref))),
        },
        Blobs::V4(_) => return None,
    })
}

/// The checks of a getBlobs answer that need no blob contents: as many entries as versioned
/// hashes asked for (`asked`), and `CELLS_PER_BLOB` cell proofs with each blob (V2, V3). A
/// `null` answer (not every blob available) passes.
pub fn check_answer_shape(asked: usize, shape: &BlobsShape) -> Result<(), Failure> {
    let Some(entries) = &shape.entries else {
        return Ok(());
    };
    if entries.len() != asked {
        return Err(Failure::new(
            Check::BlobsAnswer,
            format!(
                "{} entries for {asked} versioned hashes asked for",
                entries.len()
            ),
        ));
    }
    if shape.cell_proofs
        && let Some((i, n)) = entries
            .iter()
            .enumerate()
            .find_map(|(i, proofs)| proofs.filter(|n| *n != CELLS_PER_BLOB).map(|n| (i, n)))
    {
        return Err(Failure::new(
            Check::BlobsAnswer,
            format!("[{i}]: {n} cell proofs, {CELLS_PER_BLOB} expected"),
        ));
    }
    Ok(())
}

/// A getBlobs answer for `asked`: [`check_answer_shape`], and when `verify` each blob's
/// recomputed commitment gives the hash asked for at its place and its proofs verify. Returns
/// whether the KZG part ran.
pub fn check_answer(
    kzg: &KzgSettings,
    asked: &[B256],
    answer: &Blobs,
    verify: bool,
) -> Result<bool, Failure> {
    let Some(shape) = shape_of(answer) else {
        return Ok(false);
    };
    check_answer_shape(asked.len(), &shape)?;
    if !verify {
        return Ok(false);
    }
    match answer {
        Blobs::V1(items) => {
            let mut blobs = Vec::new();
            let mut commitments = Vec::new();
            let mut proofs = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let Some(item) = item else { continue };
                commitments.push(matching_commitment(kzg, &item.blob, asked[i], i)?);
                blobs.push(&*item.blob);
                proofs.push(item.proof);
            }
            if !blobs.is_empty() {
                verify_blob_proofs(kzg, &blobs, &commitments, &proofs, "getBlobs answer")?;
            }
            Ok(true)
        }
        Blobs::V2(Some(items)) => {
            let refs: Vec<Option<&BlobAndProofV2>> = items.iter().map(Some).collect();
            verify_v2_items(kzg, asked, &refs)
        }
        Blobs::V3(Some(items)) => {
            let refs: Vec<Option<&BlobAndProofV2>> = items.iter().map(Option::as_ref).collect();
            verify_v2_items(kzg, asked, &refs)
        }
        Blobs::V2(None) | Blobs::V3(None) | Blobs::V4(_) => Ok(false),
    }
}

/// The KZG part for V2/V3 entries whose shape was checked.
fn verify_v2_items(
    kzg: &KzgSettings,
    asked: &[B256],
    items: &[Option<&BlobAndProofV2>],
) -> Result<bool, Failure> {
    let mut blobs = Vec::new();
    let mut commitments = Vec::new();
    let mut proofs = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let Some(item) = item else { continue };
        commitments.push(matching_commitment(kzg, &item.blob, asked[i], i)?);
        blobs.push(&*item.blob);
        proofs.extend_from_slice(&item.proofs);
    }
    if !blobs.is_empty() {
        verify_cells(kzg, &blobs, &commitments, &proofs, "getBlobs answer")?;
    }
    Ok(true)
}

fn matching_commitment(
    kzg: &KzgSettings,
    blob: &FixedBytes<131072>,
    asked: B256,
    i: usize,
) -> Result<Bytes48, Failure> {
    let c = commitment(kzg, blob, &format!("[{i}].blob"))?;
    let hash = kzg_to_versioned_hash(c.as_slice());
    if hash != asked {
        return Err(Failure::new(
            Check::BlobsAnswer,
            format!("[{i}]: the blob's versioned hash is {hash}, {asked} was asked for"),
        ));
    }
    Ok(c)
}
