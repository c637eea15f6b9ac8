//! The record of a spliced answer: a reader on tokio's blocking pool takes the copy's full
//! pipes (`copy`) as the pump hands them over, reads them into one buffer (up to what the
//! recorder keeps) once the answer has ended, and, when the relay says how it ended,
//! completes the call's record — a chunked answer's data cut out of its framing as slices of
//! that buffer, not copied again. Recording happens on that thread, never on the relay's.
//!
//! Not here: moving the answer (`pump`), filling the pipes (`copy`).

use std::{collections::VecDeque, io::Read, sync::mpsc, time::Instant};

use bytes::Bytes;
use sszgate_record::ErrorSide;

use super::{
    copy::{DEFERRED, ON_THE_WAY, Segment},
    pump::{Moved, chunk_line},
    wire::Framing,
};
use crate::tap::Recording;

/// The most the reader allocates ahead for an answer's announced length: a 72-blob
/// getPayloadV5 answer (about 20 MB) fits.
const PRESIZE_MAX: u64 = 32 << 20;

/// How a spliced answer ended, as the relay tells the reader.
pub(super) struct Ended {
    /// When its last byte went to the CL (or it failed).
    pub(super) at: Instant,
    /// What moved of it.
    pub(super) moved: Moved,
    /// Why it stopped early, and whose doing that was.
    pub(super) failure: Option<(ErrorSide, String)>,
}

/// Starts the reader of one answer's copy: the pump sends it the copy's pipes on the first
/// channel returned (closed when no more come), the relay how the answer ended on the second.
/// Should the relay go away without a word, the record says so. `alive` is held until the
/// record is made: the port's shutdown waits for it, so no record of an answer that ended is
/// lost.
///
/// Records of one connection are made in the order of its calls: the record waits for the
/// connection's `previous` one, and the returned [`Recorded`] resolves once it is made.
pub(super) fn start(
    recording: Recording,
    framing: Framing,
    alive: tokio::sync::mpsc::Sender<()>,
    previous: Option<Recorded>,
) -> (mpsc::SyncSender<Segment>, mpsc::SyncSender<Ended>, Recorded) {
    let (segments, to_read) = mpsc::sync_channel(ON_THE_WAY);
    let (tell, told) = mpsc::sync_channel(1);
    let (recorded, done) = tokio::sync::oneshot::channel();
    // Counted as a waiting capture from before the CL has a byte of the answer until it is
    // recorded: whoever waits for the records of the calls answered so far waits for it.
    let copying = recording.recorder.copying();
    tokio::task::spawn_blocking(move || {
        let limit = recording.recorder.max_capture_bytes();
        let completed = keep(to_read, framing, limit, told);
        if let Some(previous) = previous {
            let _ = previous.blocking_recv();
        }
        completed.apply(recording);
        let _ = recorded.send(());
        drop((copying, alive));
    });
    (segments, tell, done)
}

/// Resolves once a spliced call's record has been made (or its reader has failed).
pub(super) type Recorded = tokio::sync::oneshot::Receiver<()>;

/// What the copy and the relay said of an answer, for its record.
struct Completed {
    frames: Vec<Bytes>,
    not_kept: Option<u64>,
    ended: Ended,
}

impl Completed {
    fn apply(self, mut recording: Recording) {
        if self.not_kept.is_some() {
            recording.capture.response_not_kept = self.not_kept;
        }
        let Ended {
            at, moved, failure, ..
        } = self.ended;
        recording.complete(self.frames, moved.body, at, failure);
    }
}

/// The answer as it came on the wire, read from the copy's pipes, at most `budget` bytes.
struct Wire {
    bytes: Vec<u8>,
    budget: u64,
    /// False once a pipe could not be read whole, or the budget cut it.
    whole: bool,
}

impl Wire {
    /// Reads one full pipe after the others.
    fn read(&mut self, segment: Segment) {
        let mut pipe = std::fs::File::from(segment.read);
        let room = self.budget.saturating_sub(self.bytes.len() as u64);
        let before = self.bytes.len();
        let read = (&mut pipe).take(room).read_to_end(&mut self.bytes);
        if read.is_err() || self.bytes.len() - before != segment.len {
            self.whole = false;
        }
    }
}

/// Reads the copy's pipes (once the answer has ended, unless too many wait) and what the
/// relay says of the answer's end: what its record gets.
fn keep(
    to_read: mpsc::Receiver<Segment>,
    framing: Framing,
    limit: u64,
    told: mpsc::Receiver<Ended>,
) -> Completed {
    // What is read of the copy is bounded by what the recorder keeps (as the general path's
    // tap is), whatever the EL says: a chunked answer gets a 64th more for its framing (a
    // few bytes per chunk; an answer of tiny chunks past it is recorded by its size only).
    // Only a length the EL announced is allocated ahead, up to `PRESIZE_MAX`: a forged
    // `Content-Length` reserves no more than that, the rest grows as bytes really come.
    let budget = match framing {
        Framing::Chunked => limit.saturating_add(limit / 64),
        Framing::Length(_) | Framing::UntilClose => limit,
    };
    let expected = match framing {
        Framing::Length(n) => n.min(budget).min(PRESIZE_MAX),
        Framing::Chunked | Framing::UntilClose => 0,
    };
    let mut wire = Wire {
        bytes: Vec::with_capacity(usize::try_from(expected).unwrap_or(0)),
        budget,
        whole: true,
    };
    // The pipes wait until the answer has ended, unless too many do.
    let mut waiting = VecDeque::new();
    for segment in to_read {
        waiting.push_back(segment);
        if waiting.len() > DEFERRED {
            wire.read(waiting.pop_front().expect("one waits"));
        }
    }
    let ended = told.recv().unwrap_or_else(|_| Ended {
        at: Instant::now(),
        moved: Moved::default(),
        failure: Some((
            ErrorSide::Gateway,
            "the relay stopped before the answer ended".into(),
        )),
    });
    // When the relay is done, megabytes of the answer can still be in the CL's socket
    // buffer: the copy waits until the CL has most likely read them (as the recorder does).
    if !waiting.is_empty() {
        sszgate_record::wait_after_call(ended.at);
    }
    for segment in waiting {
        wire.read(segment);
    }
    let bytes = wire.bytes;
    let whole = wire.whole && ended.moved.copied_whole && bytes.len() as u64 == ended.moved.wire;
    let frames = match (whole, framing) {
        (false, _) => Vec::new(),
        (true, Framing::Chunked) => dechunk(Bytes::from(bytes)),
        (true, _) if bytes.is_empty() => Vec::new(),
        (true, _) => vec![Bytes::from(bytes)],
    };
    let not_kept = (!whole && ended.moved.body > 0).then_some(ended.moved.body);
    Completed {
        frames,
        not_kept,
        ended,
    }
}

/// The data of each chunk of a chunked body, as slices of it; what a cut-short body has of
/// its last chunk is included.
fn dechunk(wire: Bytes) -> Vec<Bytes> {
    let mut frames = Vec::new();
    let mut at = 0;
    while at < wire.len() {
        let Ok(Some((line, size))) = chunk_line(&wire[at..]) else {
            break;
        };
        if size == 0 {
            break;
        }
        let start = at + line;
        let end = usize::try_from(size)
            .ok()
            .and_then(|size| start.checked_add(size))
            .map_or(wire.len(), |end| end.min(wire.len()));
        frames.push(wire.slice(start..end));
        at = end + 2;
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_body_is_cut_into_its_chunks_data_without_framing() {
        let wire = Bytes::from_static(b"3\r\nabc\r\n1;ext=1\r\nd\r\n0\r\nT: x\r\n\r\n");
        assert_eq!(
            dechunk(wire),
            vec![Bytes::from_static(b"abc"), Bytes::from_static(b"d")]
        );
        let cut = Bytes::from_static(b"3\r\nabc\r\n5\r\nde");
        assert_eq!(
            dechunk(cut),
            vec![Bytes::from_static(b"abc"), Bytes::from_static(b"de")]
        );
        assert!(dechunk(Bytes::from_static(b"0\r\n\r\n")).is_empty());
    }

    /// The copy of an answer of `body` in one pipe, read under `limit`.
    fn kept(body: &[u8], framing: Framing, limit: u64) -> Completed {
        use std::io::Write;
        let pipe = super::super::pump::Pipe::for_copy().unwrap();
        let mut write = std::fs::File::from(pipe.write);
        write.write_all(body).unwrap();
        drop(write);
        let (segments, to_read) = mpsc::sync_channel(4);
        segments
            .send(Segment {
                read: pipe.read,
                len: body.len(),
            })
            .unwrap();
        drop(segments);
        let (tell, told) = mpsc::sync_channel(1);
        let moved = Moved {
            wire: body.len() as u64,
            body: body.len() as u64,
            copied_whole: true,
        };
        tell.send(Ended {
            at: Instant::now(),
            moved,
            failure: None,
        })
        .unwrap();
        keep(to_read, framing, limit, told)
    }

    #[test]
    fn the_copy_is_read_up_to_the_recorders_limit_and_no_further() {
        let body = vec![7u8; 5000];
        let within = kept(&body, Framing::Length(5000), 5000);
        assert_eq!(within.frames, vec![Bytes::from(body.clone())]);
        assert_eq!(within.not_kept, None);
        let over = kept(&body, Framing::Length(5000), 4999);
        assert!(over.frames.is_empty());
        assert_eq!(over.not_kept, Some(5000), "recorded by its size only");
        // A length the EL claims is allocated ahead only up to 32 MiB (ahead by the claim,
        // a terabyte under this limit would abort the process): the two bytes that came.
        let forged = kept(b"{}", Framing::Length(u64::MAX), 1 << 40);
        assert_eq!(forged.frames, vec![Bytes::from_static(b"{}")]);
    }

    #[test]
    fn any_cut_of_a_chunked_body_or_a_lying_size_gives_frames_within_it() {
        let wire: &[u8] = b"3\r\nabc\r\nffffffffffffffff\r\nde\r\n0\r\n\r\n";
        for cut in 0..=wire.len() {
            let frames = dechunk(Bytes::copy_from_slice(&wire[..cut]));
            let total: usize = frames.iter().map(Bytes::len).sum();
            assert!(total <= cut, "cut {cut}: {total} bytes of frames");
        }
    }
}
