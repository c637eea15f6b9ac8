//! The record's copy of a spliced answer: a reader on tokio's blocking pool drains the copy
//! pipe into one buffer (up to what the recorder keeps) while the answer moves, and, once the
//! relay says how the answer ended, completes the call's record — a chunked answer's data
//! cut out of its framing as slices of that buffer, not copied again. Recording happens on
//! that thread, never on the relay's.
//!
//! Not here: moving the answer (`pump`).

use std::{io::Read, os::fd::OwnedFd, sync::mpsc, time::Instant};

use bytes::Bytes;
use sszgate_record::ErrorSide;

use super::{
    pump::{Moved, chunk_line},
    wire::Framing,
};
use crate::tap::Recording;

/// How a spliced answer ended, as the relay tells the reader.
pub(super) struct Ended {
    /// When its last byte went to the CL (or it failed).
    pub(super) at: Instant,
    /// What moved of it.
    pub(super) moved: Moved,
    /// Why it stopped early, and whose doing that was.
    pub(super) failure: Option<(ErrorSide, String)>,
}

/// Starts the reader of `copy` (the copy pipe's read end) for one answer; the relay sends
/// how the answer ended on the returned channel once it has closed the pipe's write end.
/// Should the relay go away without a word, the record says so. `alive` is held until the
/// record is made: the port's shutdown waits for it, so no record of an answer that ended is
/// lost.
pub(super) fn start(
    copy: OwnedFd,
    recording: Recording,
    framing: Framing,
    alive: tokio::sync::mpsc::Sender<()>,
) -> mpsc::SyncSender<Ended> {
    let (tell, told) = mpsc::sync_channel(1);
    // Counted as a waiting capture from before the CL has a byte of the answer until it is
    // recorded: whoever waits for the records of the calls answered so far waits for it.
    let copying = recording.recorder.copying();
    tokio::task::spawn_blocking(move || {
        keep(copy, recording, framing, told);
        drop((copying, alive));
    });
    tell
}

fn keep(copy: OwnedFd, mut recording: Recording, framing: Framing, told: mpsc::Receiver<Ended>) {
    let limit = recording.recorder.max_capture_bytes();
    // A chunked answer's framing comes with its data: twice the limit holds any answer the
    // recorder would keep unless its chunks are tiny.
    let (budget, expected) = match framing {
        Framing::Length(n) => (limit, n.min(limit)),
        Framing::Chunked => (limit.saturating_mul(2), 0),
        Framing::UntilClose => (limit, 0),
    };
    let mut pipe = std::fs::File::from(copy);
    let mut wire = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
    let read = (&mut pipe).take(budget).read_to_end(&mut wire);
    // Past the budget (or after a read error) the rest is drained, so that the relay never
    // waits on a full pipe.
    let _ = std::io::copy(&mut pipe, &mut std::io::sink());
    let ended = told.recv().unwrap_or_else(|_| Ended {
        at: Instant::now(),
        moved: Moved::default(),
        failure: Some((
            ErrorSide::Gateway,
            "the relay stopped before the answer ended".into(),
        )),
    });
    let whole = read.is_ok() && ended.moved.copied_whole && wire.len() as u64 == ended.moved.wire;
    let frames = match (whole, framing) {
        (false, _) => Vec::new(),
        (true, Framing::Chunked) => dechunk(Bytes::from(wire)),
        (true, _) if wire.is_empty() => Vec::new(),
        (true, _) => vec![Bytes::from(wire)],
    };
    if !whole && ended.moved.body > 0 {
        recording.capture.response_not_kept = Some(ended.moved.body);
    }
    recording.complete(frames, ended.moved.body, ended.at, ended.failure);
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
}
