//! A blob-carrying answer read once, with a [`BlobMode`] saying what happens to its blobs:
//! decoded (the KZG checks need them), validated without being decoded (the checks that never
//! look inside a blob: counts, the bundle's commitments against the payload's versioned
//! hashes, the payload and its block hash), or skipped (only the facts read the answer).
//!
//! An [`Answer`] is the JSON-RPC answer as its readers need it: joined from the frames it
//! arrived in, whole, or without its blobs' digits when the mode does not decode them
//! ([`crate::json::frames`]; digits checked there under [`BlobMode::Validate`]). Which of the
//! two it holds is the answer's own business: [`Answer::read_without_blobs`] reads either.
//! Which methods carry blobs, and in which layout, is the method table's
//! ([`crate::method::AnswerBlobs`]).
//!
//! Measured (`sszgate bench proxy`, docs/benchmarks.md): decoding every blob of every answer
//! was most of what `--verify sample` added to the proxy's CPU on calls whose KZG proofs were
//! sampled out, and joining a 72-blob answer's frames 15% of it.

use crate::{
    bulk,
    error::Result,
    json::frames::{self, BlobLayout},
    message::BuiltPayload,
    method::{AnswerBlobs, MethodSpec},
    scan,
};

/// What happens to the blobs of an answer, decided once from what its readers need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlobMode {
    /// Each blob decoded from hex: the KZG checks are due, or the answer's body is kept.
    Decode,
    /// Each blob's width, quotes and hex digits checked, nothing decoded: checks without KZG.
    Validate,
    /// Blobs not read: nothing checks the answer, the facts step over blobs at their width.
    Skip,
}

/// A getBlobs answer without its blobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobsShape {
    /// Whether each blob comes with 128 cell proofs (V2, V3) rather than one proof (V1).
    pub cell_proofs: bool,
    /// Per entry, `None` for a missing blob or the number of proofs that came with it; `None`
    /// for a `null` answer (V2, V3: not every blob is available).
    pub entries: Option<Vec<Option<usize>>>,
}

/// A blob-carrying answer read without its blobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WithoutBlobs {
    /// A getPayload answer with an empty `blobs` list, and how many blobs it held.
    Payload(Box<BuiltPayload>, usize),
    /// A getBlobs answer's entries.
    Blobs(BlobsShape),
}

/// A JSON-RPC answer's body as its readers need it: whole, or without its blobs' digits.
#[derive(Clone, Copy, Debug)]
pub struct Answer<'a> {
    bytes: &'a [u8],
    /// Each blob reduced to `"0x"` (its digits checked when they were left out, unless the
    /// mode was [`BlobMode::Skip`]).
    digits_left_out: bool,
}

impl<'a> Answer<'a> {
    /// An answer held whole, in one slice.
    pub fn whole(bytes: &'a [u8]) -> Answer<'a> {
        Answer {
            bytes,
            digits_left_out: false,
        }
    }

    /// The answer of a call of `method` (`None`: unknown, or not one call) from the frames it
    /// arrived in: a single frame as it is; the answer of a blob-carrying method whose blobs
    /// `mode` does not decode joined into `scratch` without their digits; else joined whole
    /// into `scratch`, a buffer the caller keeps across answers (a fresh 20 MB buffer per
    /// answer would be page-faulted in every time: page zeroing was measured at 7% of the
    /// proxy's CPU).
    pub fn join<B: AsRef<[u8]>>(
        frames: &'a [B],
        method: Option<&MethodSpec>,
        mode: BlobMode,
        scratch: &'a mut Vec<u8>,
    ) -> Answer<'a> {
        let left_out = frames.len() > 1
            && method.and_then(layout).is_some_and(|layout| {
                frames::join_without_blob_digits(frames, layout, mode, scratch)
            });
        if left_out {
            return Answer {
                bytes: scratch,
                digits_left_out: true,
            };
        }
        let bytes: &[u8] = match frames {
            [] => &[],
            [one] => one.as_ref(),
            many => {
                scratch.clear();
                for frame in many {
                    scratch.extend_from_slice(frame.as_ref());
                }
                scratch
            }
        };
        Answer::whole(bytes)
    }

    /// The answer's bytes, as the facts read them.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Whether the answer still holds its blobs' digits (what a full decode needs).
    pub fn has_blob_digits(&self) -> bool {
        !self.digits_left_out
    }

    /// The `result` of the answer of a call of `m` read without its blobs (each checked, not
    /// decoded): the fixed-shape reader first, then serde with each blob checked. `None` when
    /// `m`'s answer carries no blobs in a bundle or entries, or the answer has no result or a
    /// `null` one that the method's shape does not allow (a full decode reads no answer
    /// there either); an error when serde's full decode would refuse the answer too.
    pub fn read_without_blobs(&self, m: &MethodSpec) -> Option<Result<WithoutBlobs>> {
        let left_out = self.digits_left_out;
        let shape = |entries| {
            WithoutBlobs::Blobs(BlobsShape {
                cell_proofs: m.cell_proofs(),
                entries,
            })
        };
        let fixed = |result: &[u8]| match m.blobs {
            AnswerBlobs::Bundle => bulk::built_payload_without_blobs(m, result, left_out)
                .map(|(built, n)| WithoutBlobs::Payload(Box::new(built), n)),
            AnswerBlobs::Entries { .. } => {
                bulk::blobs_without_blobs(m, result, left_out).map(shape)
            }
            AnswerBlobs::None | AnswerBlobs::Cells => None,
        };
        if matches!(m.blobs, AnswerBlobs::None | AnswerBlobs::Cells) {
            return None;
        }
        // The answer's `result` is its last member (what ELs send), found without a walk; the
        // fixed-shape reader refuses it when it is not (its slice runs on then).
        if let Some(read) = scan::last_value(self.bytes, "result").and_then(fixed) {
            return Some(Ok(read));
        }
        let result = scan::envelope(self.bytes)?.result?;
        if let Some(read) = fixed(result) {
            return Some(Ok(read));
        }
        if result == b"null" {
            return None;
        }
        let what = format!("{} result", m.name);
        Some(match m.blobs {
            AnswerBlobs::Bundle => {
                bulk::built_payload_serde_without_blobs(&what, m, result, left_out)
                    .map(|(built, n)| WithoutBlobs::Payload(Box::new(built), n))
            }
            _ => bulk::blobs_serde_without_blobs(&what, m, result, left_out).map(shape),
        })
    }
}

/// Where the answers of `m` keep blobs whose digits can be left out when joining.
fn layout(m: &MethodSpec) -> Option<BlobLayout> {
    match m.blobs {
        // The bundles whose payload the fixed-shape reader reads (V3: Cancun to Osaka).
        AnswerBlobs::Bundle if !m.latest_fork().has_block_access_list() => Some(BlobLayout::Bundle),
        AnswerBlobs::Entries { .. } => Some(BlobLayout::Entries),
        _ => None,
    }
}
