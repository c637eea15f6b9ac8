//! The record's copy of a spliced answer, kept in pipes until the answer has ended: the pump
//! `tee(2)`s each chunk into the current pipe (the chunk's pages referenced again, not its
//! bytes copied) and, when that pipe is full, hands it to the record's reader and starts
//! another. The reader copies the pipes into memory only once the answer has ended, so that
//! the one copy of the answer into the process competes with nothing of the call (on two
//! cores, a copy made while the answer moves takes time from the EL and the CL); only when
//! more than [`DEFERRED`] pipes wait (an answer over about 24 MiB, or a system that keeps
//! pipes small) does it start on the oldest while the answer still moves. The pump never
//! waits for the reader: a copy that cannot go on is given up, and the record says the
//! answer was not kept.
//!
//! Not here: moving the answer (`pump`), completing the record (`keep`).

use std::{
    io,
    os::fd::{AsRawFd, OwnedFd, RawFd},
    sync::mpsc,
};

use super::pump::{Pipe, retry, tee};

/// Full pipes the reader leaves until the answer has ended.
pub(super) const DEFERRED: usize = 24;

/// Full pipes on their way to the reader at most; past them the copy is given up.
pub(super) const ON_THE_WAY: usize = 64;

/// A full pipe of the copy: its read end and how many bytes it holds.
pub(super) struct Segment {
    pub(super) read: OwnedFd,
    pub(super) len: usize,
}

/// The pump's side of the copy.
pub(super) struct Copier {
    current: Option<(Pipe, usize)>,
    to_reader: mpsc::SyncSender<Segment>,
}

impl Copier {
    /// A copy whose pipes go to the reader on `to_reader`.
    pub(super) fn new(to_reader: mpsc::SyncSender<Segment>) -> Copier {
        Copier {
            current: None,
            to_reader,
        }
    }

    /// Duplicates what is first in the pipe `from`, up to `n` bytes: how many it did (at
    /// least one), or `Err` when the copy cannot go on.
    pub(super) fn duplicate(&mut self, from: RawFd, n: usize) -> Result<usize, ()> {
        loop {
            let (pipe, held) = match &mut self.current {
                Some(current) => current,
                None => self.current.insert((Pipe::for_copy().map_err(drop)?, 0)),
            };
            match retry(|| tee(from, pipe.write.as_raw_fd(), n)) {
                Ok(done) if done > 0 => {
                    *held += done;
                    return Ok(done);
                }
                // Full: on to the next pipe.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && *held > 0 => {
                    self.hand_over()?;
                }
                _ => return Err(()),
            }
        }
    }

    /// Hands the current pipe, if it holds anything, to the reader.
    pub(super) fn hand_over(&mut self) -> Result<(), ()> {
        let Some((pipe, len)) = self.current.take() else {
            return Ok(());
        };
        if len == 0 {
            return Ok(());
        }
        drop(pipe.write);
        let segment = Segment {
            read: pipe.read,
            len,
        };
        self.to_reader.try_send(segment).map_err(drop)
    }
}
