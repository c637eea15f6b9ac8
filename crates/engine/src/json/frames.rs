//! The reader of a body over the frames it arrived in: a blob-carrying JSON-RPC answer joined
//! from its frames without its blobs' digits. Each blob's `"0x"` and closing quote are kept,
//! the 262,144 digits between are left out, their width checked and, under
//! [`BlobMode::Validate`], their digits checked in place (hex). The facts and the checks that
//! never look inside a blob read this skeleton, a few hundred KB, instead of a 20 MB copy of
//! the answer (measured: joining a 72-blob answer's frames was 15% of the proxy's CPU,
//! docs/benchmarks.md).
//!
//! Where the blobs are is found from the answer's own tokens: the `"blob":"0x` of each getBlobs
//! entry, the `"blobs":[` array of a getPayload bundle. That is sound only when no string has
//! an escaped quote, so an answer with any backslash outside the blobs is refused, as is a blob
//! of another width or an array of another layout; the caller then joins the answer whole.
//! Under [`BlobMode::Skip`] the digits are not checked, so a blob holding a quote at the right
//! width is not noticed: only the facts read the skeleton then, and they step over blobs at
//! their width anyway (`scan::fixed_first_string_objects`).
//!
//! Nothing here decides what the answer means: the readers of the skeleton
//! ([`crate::blob_answer`]) do, as they would on the whole answer.

use crate::{blob_answer::BlobMode, ssz::BYTES_PER_BLOB};

/// Hex digits of a blob.
const DIGITS: usize = 2 * BYTES_PER_BLOB;

/// Where an answer keeps its blobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BlobLayout {
    /// getBlobs: each entry an object whose `blob` member holds one.
    Entries,
    /// getPayload: the `blobs` array of the bundle.
    Bundle,
}

/// An answer's frames seen as one byte string.
struct Frames<'a, B> {
    frames: &'a [B],
    /// Where each frame starts in the whole.
    starts: Vec<usize>,
    len: usize,
}

impl<'a, B: AsRef<[u8]>> Frames<'a, B> {
    fn new(frames: &'a [B]) -> Frames<'a, B> {
        let mut starts = Vec::with_capacity(frames.len());
        let mut len = 0;
        for f in frames {
            starts.push(len);
            len += f.as_ref().len();
        }
        Frames {
            frames,
            starts,
            len,
        }
    }

    /// The frame holding `pos` and the offset of `pos` in it (`pos < len`).
    fn locate(&self, pos: usize) -> (usize, usize) {
        // The last frame starting at or before `pos`; empty frames share their start with
        // the next one, so step over any that remain.
        let mut i = self.starts.partition_point(|s| *s <= pos) - 1;
        while pos - self.starts[i] >= self.frames[i].as_ref().len() {
            i += 1;
        }
        (i, pos - self.starts[i])
    }

    /// The pieces of frames covering `range`, in order.
    fn pieces(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = &'a [u8]> + '_ {
        let (first, offset) = if range.is_empty() {
            (self.frames.len(), 0)
        } else {
            self.locate(range.start)
        };
        let mut left = range.len();
        let mut offset = offset;
        self.frames[first.min(self.frames.len())..]
            .iter()
            .map_while(move |f| {
                if left == 0 {
                    return None;
                }
                let f = f.as_ref();
                let piece = &f[offset..(offset + left).min(f.len())];
                offset = 0;
                left -= piece.len();
                Some(piece)
            })
    }

    /// Appends the bytes of `range` to `out`.
    fn copy_to(&self, range: std::ops::Range<usize>, out: &mut Vec<u8>) {
        for piece in self.pieces(range) {
            out.extend_from_slice(piece);
        }
    }

    /// Whether the bytes at `pos` are `token`.
    fn has_at(&self, pos: usize, token: &[u8]) -> bool {
        pos + token.len() <= self.len
            && self
                .pieces(pos..pos + token.len())
                .scan(0, |at, piece| {
                    let same = token[*at..*at + piece.len()] == *piece;
                    *at += piece.len();
                    Some(same)
                })
                .all(|same| same)
    }

    /// Whether every byte of `range` is a hex digit. Pieces may split a digit pair, so the
    /// digits are checked one by one where a piece is odd.
    fn all_hex(&self, range: std::ops::Range<usize>) -> bool {
        self.pieces(range).all(|piece| {
            let even = piece.len() & !1;
            const_hex::check(&piece[..even]).is_ok()
                && piece[even..].iter().all(u8::is_ascii_hexdigit)
        })
    }

    /// The first `needle` at or after `from`.
    fn find(&self, needle: &[u8], from: usize) -> Option<usize> {
        if from >= self.len {
            return None;
        }
        let (first, offset) = self.locate(from);
        let finder = memchr::memmem::Finder::new(needle);
        let mut offset = offset;
        for i in first..self.frames.len() {
            let frame = self.frames[i].as_ref();
            if let Some(at) = finder.find(&frame[offset.min(frame.len())..]) {
                return Some(self.starts[i] + offset + at);
            }
            // A needle across the end of this frame: look at the seam.
            let seam_start = (self.starts[i] + frame.len())
                .saturating_sub(needle.len() - 1)
                .max(self.starts[i] + offset);
            let seam_end = (self.starts[i] + frame.len() + needle.len() - 1).min(self.len);
            let mut seam = Vec::with_capacity(seam_end - seam_start);
            self.copy_to(seam_start..seam_end, &mut seam);
            if let Some(at) = finder.find(&seam) {
                return Some(seam_start + at);
            }
            offset = 0;
        }
        None
    }
}

/// Joins `frames` into `out` (cleared first) without the digits of the blobs laid out as
/// `layout` says, checking that they are hex under [`BlobMode::Validate`] (measured: 5% of
/// the proxy's CPU on 72-blob answers, so only when verification will read the skeleton);
/// `false` when the answer is not of that shape (see the module header) or the mode decodes
/// blobs, and `out` is then of no use.
pub(crate) fn join_without_blob_digits<B: AsRef<[u8]>>(
    frames: &[B],
    layout: BlobLayout,
    mode: BlobMode,
    out: &mut Vec<u8>,
) -> bool {
    out.clear();
    let check_digits = match mode {
        BlobMode::Decode => return false,
        BlobMode::Validate => true,
        BlobMode::Skip => false,
    };
    let all = Frames::new(frames);
    let mut copied = 0;
    // Keeps what comes before the digits starting at `digits` and steps over them; `false`
    // when they are not a blob's.
    let mut blob_at = |digits: usize, out: &mut Vec<u8>| {
        let end = digits + DIGITS;
        // The closing quote, then what may follow a value in either layout.
        let closed = all.has_at(end, b"\"")
            && [b",", b"}", b"]"]
                .iter()
                .any(|next| all.has_at(end + 1, *next));
        if !closed || (check_digits && !all.all_hex(digits..end)) {
            return false;
        }
        all.copy_to(copied..digits, out);
        copied = end;
        true
    };
    match layout {
        BlobLayout::Entries => {
            const KEY: &[u8] = b"\"blob\":\"0x";
            let mut from = 0;
            while let Some(at) = all.find(KEY, from) {
                if !blob_at(at + KEY.len(), out) {
                    return false;
                }
                from = at + KEY.len() + DIGITS;
            }
        }
        BlobLayout::Bundle => {
            const KEY: &[u8] = b"\"blobs\":[";
            let Some(at) = all.find(KEY, 0) else {
                return false;
            };
            let mut p = at + KEY.len();
            if !all.has_at(p, b"]") {
                loop {
                    if !all.has_at(p, b"\"0x") || !blob_at(p + 3, out) {
                        return false;
                    }
                    p += 3 + DIGITS + 1;
                    if all.has_at(p, b"]") {
                        break;
                    }
                    if !all.has_at(p, b",") {
                        return false;
                    }
                    p += 1;
                }
            }
        }
    }
    all.copy_to(copied..all.len, out);
    // With no backslash anywhere, every quote delimits a string, so the tokens found above
    // are the answer's own (the left-out digits are hex).
    memchr::memchr(b'\\', out).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blob(digit: char) -> String {
        format!("\"0x{}\"", digit.to_string().repeat(DIGITS))
    }

    /// `doc` cut into frames at `cuts`.
    fn framed(doc: &str, cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut frames = Vec::new();
        let mut at = 0;
        for &cut in cuts {
            frames.push(doc.as_bytes()[at..cut].to_vec());
            at = cut;
        }
        frames.push(doc.as_bytes()[at..].to_vec());
        frames
    }

    /// Cuts everywhere interesting: inside the tokens, inside and at the edges of the
    /// digits, with an empty frame among them.
    fn cut_points(doc: &str) -> Vec<Vec<usize>> {
        let mut points: Vec<usize> = Vec::new();
        for token in ["\"blob\":\"0x", "\"blobs\":[", "\"0x", "\",\""] {
            for (i, _) in doc.match_indices(token).take(3) {
                for d in 0..token.len() + 2 {
                    points.push(i + d);
                }
                points.push(i + token.len() + 1001);
            }
        }
        points.retain(|p| *p > 0 && *p < doc.len());
        points.sort();
        points.dedup();
        let mut cuts: Vec<Vec<usize>> = points.iter().map(|p| vec![*p]).collect();
        cuts.push(points.clone());
        if let Some(p) = points.first() {
            cuts.push(vec![*p, *p]);
        }
        cuts.push(vec![]);
        cuts
    }

    fn skeleton(doc: &str, cuts: &[usize], layout: BlobLayout) -> Option<String> {
        let mut out = Vec::new();
        join_without_blob_digits(&framed(doc, cuts), layout, BlobMode::Validate, &mut out)
            .then(|| String::from_utf8(out).unwrap())
    }

    /// `doc`'s skeleton is `expected` however its frames are cut (see [`cut_points`]).
    fn same_at_every_cut(doc: &str, layout: BlobLayout, expected: &str) {
        for cuts in cut_points(doc) {
            assert_eq!(
                skeleton(doc, &cuts, layout).as_deref(),
                Some(expected),
                "cut at {cuts:?}"
            );
        }
    }

    #[test]
    fn get_blobs_entries_lose_their_digits_wherever_the_frames_are_cut() {
        let doc = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":[{{"blob":{},"proofs":["0xab"]}},null,{{"proof":"0xcd","blob":{}}}]}}"#,
            blob('a'),
            blob('7')
        );
        let expected = r#"{"jsonrpc":"2.0","id":1,"result":[{"blob":"0x","proofs":["0xab"]},null,{"proof":"0xcd","blob":"0x"}]}"#;
        same_at_every_cut(&doc, BlobLayout::Entries, expected);
        // No blobs: the answer as it is.
        let none = r#"{"jsonrpc":"2.0","id":1,"result":null}"#;
        same_at_every_cut(none, BlobLayout::Entries, none);
    }

    #[test]
    fn a_bundle_loses_its_blobs_digits_wherever_the_frames_are_cut() {
        let doc = format!(
            r#"{{"id":1,"result":{{"executionPayload":{{"transactions":["0x02"]}},"blobsBundle":{{"commitments":["0x01"],"proofs":["0x02"],"blobs":[{},{}]}},"shouldOverrideBuilder":false}}}}"#,
            blob('F'),
            blob('0')
        );
        let expected = r#"{"id":1,"result":{"executionPayload":{"transactions":["0x02"]},"blobsBundle":{"commitments":["0x01"],"proofs":["0x02"],"blobs":["0x","0x"]},"shouldOverrideBuilder":false}}"#;
        same_at_every_cut(&doc, BlobLayout::Bundle, expected);
        let empty = r#"{"result":{"blobsBundle":{"blobs":[]}}}"#;
        same_at_every_cut(empty, BlobLayout::Bundle, empty);
    }

    #[test]
    fn random_cuts_give_the_same_skeleton_as_one_frame() {
        let entries = format!(
            r#"{{"id":1,"result":[{{"blob":{},"proofs":["0xab"]}},null,{{"blob":{},"proofs":[]}}]}}"#,
            blob('c'),
            blob('d')
        );
        let bundle = format!(
            r#"{{"id":1,"result":{{"blobsBundle":{{"commitments":[],"proofs":[],"blobs":[{},{},{}]}}}}}}"#,
            blob('1'),
            blob('2'),
            blob('3')
        );
        // xorshift64: the same cuts on every run.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |below: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % below as u64) as usize
        };
        for (doc, layout) in [(entries, BlobLayout::Entries), (bundle, BlobLayout::Bundle)] {
            let whole = skeleton(&doc, &[], layout).expect("of its shape");
            assert!(whole.len() < 200, "{whole}");
            for _ in 0..150 {
                let mut cuts: Vec<usize> = (0..next(12)).map(|_| next(doc.len())).collect();
                cuts.sort();
                assert_eq!(
                    skeleton(&doc, &cuts, layout).as_deref(),
                    Some(whole.as_str()),
                    "cut at {cuts:?}"
                );
            }
        }
    }

    #[test]
    fn answers_of_another_shape_are_refused() {
        let good = blob('b');
        let short = format!("\"0x{}\"", "b".repeat(DIGITS - 2));
        let not_hex = format!("\"0x{}g\"", "b".repeat(DIGITS - 1));
        for bad in [&short, &not_hex] {
            let doc = format!(r#"{{"result":[{{"blob":{bad},"proofs":[]}}]}}"#);
            assert_eq!(skeleton(&doc, &[100], BlobLayout::Entries), None);
            let doc = format!(r#"{{"result":{{"blobsBundle":{{"blobs":[{good},{bad}]}}}}}}"#);
            assert_eq!(skeleton(&doc, &[100], BlobLayout::Bundle), None);
        }
        // Unless the digits are not checked: only the width is, then.
        let doc = format!(r#"{{"result":[{{"blob":{not_hex},"proofs":[]}}]}}"#);
        let mut out = Vec::new();
        let frames = framed(&doc, &[100]);
        assert!(join_without_blob_digits(
            &frames,
            BlobLayout::Entries,
            BlobMode::Skip,
            &mut out
        ));
        assert_eq!(out, br#"{"result":[{"blob":"0x","proofs":[]}]}"#);
        let doc = format!(r#"{{"result":[{{"blob":{short},"proofs":[]}}]}}"#);
        let frames = framed(&doc, &[100]);
        assert!(!join_without_blob_digits(
            &frames,
            BlobLayout::Entries,
            BlobMode::Skip,
            &mut out
        ));
        // A mode that decodes the blobs needs them whole.
        let doc = format!(r#"{{"result":[{{"blob":{good},"proofs":[]}}]}}"#);
        let frames = framed(&doc, &[100]);
        assert!(!join_without_blob_digits(
            &frames,
            BlobLayout::Entries,
            BlobMode::Decode,
            &mut out
        ));
        // A backslash anywhere: the tokens found may be inside a string.
        let escaped = format!(r#"{{"result":[{{"x":"\"blob\":","blob":{good},"proofs":[]}}]}}"#);
        assert_eq!(skeleton(&escaped, &[], BlobLayout::Entries), None);
        // A bundle's blobs with blanks between them, or no blobs array at all.
        let spaced = format!(r#"{{"result":{{"blobsBundle":{{"blobs":[{good}, {good}]}}}}}}"#);
        assert_eq!(skeleton(&spaced, &[], BlobLayout::Bundle), None);
        assert_eq!(skeleton(r#"{"result":{}}"#, &[], BlobLayout::Bundle), None);
    }
}
