//! Moving an answer's body from the EL's socket to the CL's without copying it into the
//! process: `splice(2)` socket → pipe → socket, and each chunk `tee(2)`d (duplicated, not
//! copied) into a second pipe, which a reader drains into the call's record (`keep`). The
//! body's framing is followed by peeking at what the EL sent (`recv` with `MSG_PEEK`): a
//! length, chunk lines, or the connection's end; every byte goes through as it came.
//!
//! Why by hand: a relay that reads an answer into memory and writes it out again copies
//! every byte twice more than the direct path, and on a loaded machine those copies are most
//! of what a relay adds to a 20 MB answer (`docs/benchmarks.md`, the splicing floor relay
//! against the copying one). No crate moves an HTTP body this way.
//!
//! Not here: heads (`wire`), the reader (`keep`).

use std::{
    io,
    os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
    time::Duration,
};

use tokio::{io::Interest, net::TcpStream};

use super::{copy::Copier, wire::Framing};

/// Bytes a pipe holds, asked with `F_SETPIPE_SZ` (Linux's default cap for unprivileged
/// processes, `/proc/sys/fs/pipe-max-size`); a system that refuses it keeps 64 KiB.
const PIPE_BYTES: usize = 1 << 20;

/// The longest chunk-size line read (its extensions included).
const MAX_CHUNK_LINE: usize = 1024;

/// The most bytes of trailer fields after the last chunk.
const MAX_TRAILERS: usize = 8192;

/// How long the EL may send nothing, or the CL take nothing, in the middle of a body before
/// the answer is cut (the pump's thread blocks in the kernel and must wake up some time).
const STALL: Duration = Duration::from_secs(30);

/// A pipe's two ends.
pub(super) struct Pipe {
    pub(super) read: OwnedFd,
    pub(super) write: OwnedFd,
}

impl Pipe {
    /// A pipe whose ends never block (the relay waits on sockets, not on it).
    pub(super) fn new() -> io::Result<Pipe> {
        let mut fds = [0; 2];
        // SAFETY: `fds` is the two ints pipe2 fills; both are owned below exactly once.
        let made = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if made != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both are open descriptors that nothing else owns.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: fcntl on a descriptor we own; a refusal leaves the default size.
        unsafe { libc::fcntl(fds[1], libc::F_SETPIPE_SZ, PIPE_BYTES as libc::c_int) };
        Ok(Pipe { read, write })
    }

    /// A pipe for the record's copy: its read end blocks (the reader is a thread of its own),
    /// its write end does not (the relay must never block on the reader).
    pub(super) fn for_copy() -> io::Result<Pipe> {
        let pipe = Pipe::new()?;
        // SAFETY: fcntl on a descriptor we own.
        let cleared = unsafe { libc::fcntl(pipe.read.as_raw_fd(), libc::F_SETFL, 0) };
        if cleared != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(pipe)
    }
}

/// Why a body stopped before its end.
#[derive(Debug)]
pub(super) enum PumpError {
    /// The EL: it closed, failed, stalled, or framed the body wrongly.
    Upstream(String),
    /// The CL: it went away or stopped reading.
    Client(String),
}

/// What moved of a body.
#[derive(Debug, Default)]
pub(super) struct Moved {
    /// Bytes on the wire, framing included.
    pub(super) wire: u64,
    /// Bytes of the body itself (chunk data, for a chunked one).
    pub(super) body: u64,
    /// True while the record's copy has every byte that went through.
    pub(super) copied_whole: bool,
}

/// Moves one answer's body from `upstream` through the connection's `pipe` to `client`,
/// duplicated into the record's `copy` while there is one, on a thread of tokio's
/// blocking pool with both sockets in blocking mode: the kernel then wakes the pump as data
/// comes, where readiness through the runtime cost a wake-up per chunk (measured: the
/// spliced relay added 40 % more than a blocking splicing relay to a 20 MB answer). The
/// thread works on duplicates of the descriptors, so a connection dropped meanwhile cannot
/// hand it another socket; the sockets are non-blocking again before this returns.
pub(super) async fn body(
    upstream: &TcpStream,
    client: &TcpStream,
    pipe: &Pipe,
    copy: Option<Copier>,
    framing: Framing,
) -> (Moved, Result<(), PumpError>) {
    let moved = Moved {
        copied_whole: copy.is_some(),
        ..Moved::default()
    };
    let pump = match Pump::new(upstream, client, pipe, copy, moved) {
        Ok(pump) => pump,
        Err(e) => return (Moved::default(), Err(client_error(e))),
    };
    let blocking = match Blocking::set(&pump.upstream, &pump.client) {
        Ok(blocking) => blocking,
        Err(e) => return (Moved::default(), Err(client_error(e))),
    };
    let joined = tokio::task::spawn_blocking(move || {
        let mut pump = pump;
        let result = pump.body(framing);
        pump.finish_copy();
        (pump.moved, result)
    })
    .await;
    drop(blocking);
    joined.unwrap_or_else(|e| {
        let why = format!("the relay's pump failed: {e}");
        (Moved::default(), Err(PumpError::Upstream(why)))
    })
}

/// Both sockets in blocking mode with [`STALL`] as their timeouts, until dropped.
struct Blocking {
    upstream: OwnedFd,
    client: OwnedFd,
}

impl Blocking {
    fn set(upstream: &OwnedFd, client: &OwnedFd) -> io::Result<Blocking> {
        let blocking = Blocking {
            upstream: upstream.try_clone()?,
            client: client.try_clone()?,
        };
        for fd in [&blocking.upstream, &blocking.client] {
            let socket = socket2::SockRef::from(fd);
            socket.set_read_timeout(Some(STALL))?;
            socket.set_write_timeout(Some(STALL))?;
            socket.set_nonblocking(false)?;
        }
        Ok(blocking)
    }
}

impl Drop for Blocking {
    fn drop(&mut self) {
        for fd in [&self.upstream, &self.client] {
            let socket = socket2::SockRef::from(fd);
            let _ = socket.set_nonblocking(true);
            let _ = socket.set_read_timeout(None);
            let _ = socket.set_write_timeout(None);
        }
    }
}

/// The pump's own descriptors: duplicates of the sockets' and the pipe's.
struct Pump {
    upstream: OwnedFd,
    client: OwnedFd,
    pipe_read: OwnedFd,
    pipe_write: OwnedFd,
    copy: Option<Copier>,
    moved: Moved,
}

impl Pump {
    fn new(
        upstream: &TcpStream,
        client: &TcpStream,
        pipe: &Pipe,
        copy: Option<Copier>,
        moved: Moved,
    ) -> io::Result<Pump> {
        use std::os::fd::AsFd;
        Ok(Pump {
            upstream: upstream.as_fd().try_clone_to_owned()?,
            client: client.as_fd().try_clone_to_owned()?,
            pipe_read: pipe.read.try_clone()?,
            pipe_write: pipe.write.try_clone()?,
            copy,
            moved,
        })
    }

    /// Moves the body as `framing` says it ends.
    fn body(&mut self, framing: Framing) -> Result<(), PumpError> {
        match framing {
            Framing::Length(n) => {
                self.exactly(n)?;
                self.moved.body = n;
            }
            Framing::UntilClose => {
                while self.some(PIPE_BYTES as u64)? > 0 {}
                self.moved.body = self.moved.wire;
            }
            Framing::Chunked => self.chunks()?,
        }
        Ok(())
    }

    /// Moves a chunked body: each chunk's line is read by peeking, then the line, the data
    /// and its CRLF go through as they came; after the last chunk, its trailers.
    fn chunks(&mut self) -> Result<(), PumpError> {
        loop {
            let (line, size) = self.peek(MAX_CHUNK_LINE, chunk_line)?;
            if size == 0 {
                let end = self.peek(MAX_TRAILERS, trailers_end)?;
                return self.exactly(end as u64);
            }
            let framed = (line as u64)
                .checked_add(size)
                .and_then(|n| n.checked_add(2))
                .ok_or_else(|| PumpError::Upstream(format!("a chunk of {size} bytes")))?;
            self.exactly(framed)?;
            self.moved.body += size;
        }
    }

    /// Moves exactly `n` bytes; the EL closing before them is an error.
    fn exactly(&mut self, mut n: u64) -> Result<(), PumpError> {
        while n > 0 {
            match self.some(n.min(PIPE_BYTES as u64))? {
                0 => {
                    return Err(PumpError::Upstream(format!(
                        "the EL closed the connection with {n} bytes of the answer still to come"
                    )));
                }
                moved => n -= moved as u64,
            }
        }
        Ok(())
    }

    /// Moves what the EL has sent, at most `max` bytes, once it has sent any: 0 when it
    /// closed.
    fn some(&mut self, max: u64) -> Result<usize, PumpError> {
        let (from, to) = (self.upstream.as_raw_fd(), self.pipe_write.as_raw_fd());
        let n = retry(|| splice(from, to, max as usize)).map_err(|e| stalled(e, upstream))?;
        self.drain(n)?;
        self.moved.wire += n as u64;
        Ok(n)
    }

    /// Sends the `n` bytes in the pipe to the CL, duplicating into the copy what goes.
    fn drain(&mut self, mut n: usize) -> Result<(), PumpError> {
        let (from, to) = (self.pipe_read.as_raw_fd(), self.client.as_raw_fd());
        while n > 0 {
            let copied = self.duplicate(n);
            let mut left = copied;
            while left > 0 {
                match retry(|| splice(from, to, left)).map_err(|e| stalled(e, client_error))? {
                    0 => return Err(PumpError::Client("the CL's socket took nothing".into())),
                    sent => left -= sent,
                }
            }
            n -= copied;
        }
        Ok(())
    }

    /// Duplicates into the copy what is first in the pipe, up to `n` bytes, and says how many
    /// may now go to the CL: all `n` once there is no copy (or no longer one).
    fn duplicate(&mut self, n: usize) -> usize {
        let Some(copy) = &mut self.copy else { return n };
        match copy.duplicate(self.pipe_read.as_raw_fd(), n) {
            Ok(copied) => copied,
            Err(()) => {
                self.give_up_copy();
                n
            }
        }
    }

    /// Hands the copy's last pipe to the reader, once the body has ended (or failed).
    fn finish_copy(&mut self) {
        if let Some(copy) = &mut self.copy
            && copy.hand_over().is_err()
        {
            self.give_up_copy();
        }
        // Dropping the copier tells the reader that no more pipes come.
        self.copy = None;
    }

    /// The rest of this answer goes without a copy, and its record says it was not kept.
    fn give_up_copy(&mut self) {
        self.copy = None;
        self.moved.copied_whole = false;
    }

    /// Peeks at what the EL has sent until `find` says where what it looks for ends (up to
    /// `max` bytes), without taking any of it.
    fn peek<T>(
        &self,
        max: usize,
        find: fn(&[u8]) -> Result<Option<T>, String>,
    ) -> Result<T, PumpError> {
        let mut seen = vec![0u8; max];
        let fd = self.upstream.as_raw_fd();
        let mut want = 1;
        loop {
            // Blocks until `want` bytes are there (or the timeout, or the end: then fewer).
            let there = retry(|| recv(fd, &mut seen[..want], libc::MSG_PEEK | libc::MSG_WAITALL))
                .map_err(|e| stalled(e, upstream))?;
            if there < want {
                return Err(PumpError::Upstream(
                    "the EL closed the connection inside a chunked answer".into(),
                ));
            }
            let n = retry(|| recv(fd, &mut seen, libc::MSG_PEEK | libc::MSG_DONTWAIT))
                .map_err(upstream)?;
            match find(&seen[..n]) {
                Ok(Some(found)) => return Ok(found),
                Ok(None) if n < max => want = n + 1,
                Ok(None) => {
                    let why = format!("a bad chunked body: no end within {max} bytes");
                    return Err(PumpError::Upstream(why));
                }
                Err(why) => return Err(PumpError::Upstream(format!("a bad chunked body: {why}"))),
            }
        }
    }
}

/// Runs a system call again when a signal interrupted it.
pub(super) fn retry(mut call: impl FnMut() -> io::Result<usize>) -> io::Result<usize> {
    loop {
        match call() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            done => return done,
        }
    }
}

/// A blocking socket's timeout ([`STALL`]) as the error of whoever stalled.
fn stalled(e: io::Error, side: fn(io::Error) -> PumpError) -> PumpError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => side(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("nothing moved for {STALL:?}"),
        )),
        _ => side(e),
    }
}

fn upstream(e: io::Error) -> PumpError {
    PumpError::Upstream(format!("reading the EL's answer: {e}"))
}

fn client_error(e: io::Error) -> PumpError {
    PumpError::Client(format!("sending the answer to the CL: {e}"))
}

/// A chunk's line at the start of `bytes`: its length with the CRLF, and the chunk's size.
pub(super) fn chunk_line(bytes: &[u8]) -> Result<Option<(usize, u64)>, String> {
    let Some(end) = bytes.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line = &bytes[..end];
    let digits = line.split(|&b| b == b';').next().unwrap_or_default();
    let digits = std::str::from_utf8(digits).map_err(|_| "a chunk size that is not text")?;
    let digits = digits.trim_matches([' ', '\t']);
    if digits.is_empty() || digits.len() > 16 {
        return Err(format!("a chunk size of {} hex digits", digits.len()));
    }
    let size = u64::from_str_radix(digits, 16).map_err(|_| format!("chunk size {digits:?}"))?;
    Ok(Some((end + 2, size)))
}

/// Where the last chunk ends: its line, its trailer fields and the blank line after them.
pub(super) fn trailers_end(bytes: &[u8]) -> Result<Option<usize>, String> {
    let Some(line) = bytes.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let rest = &bytes[line + 2..];
    if rest.starts_with(b"\r\n") {
        return Ok(Some(line + 4));
    }
    Ok(rest
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| line + 2 + at + 4))
}

/// `splice(2)` of at most `len` bytes between a socket and a pipe (blocking as the socket
/// does: the pipe is never full or empty when it is called).
fn splice(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    // SAFETY: two open descriptors and null offsets (neither is a file).
    let n = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// `tee(2)`: duplicates up to `len` bytes at the head of one pipe into another.
pub(super) fn tee(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    // SAFETY: two open pipe descriptors.
    let n = unsafe { libc::tee(from, to, len, libc::SPLICE_F_NONBLOCK) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// `recv(2)` with `MSG_PEEK`: what the socket holds, left in it (never waits).
pub(super) fn peek(fd: RawFd, into: &mut [u8]) -> io::Result<usize> {
    recv(fd, into, libc::MSG_PEEK | libc::MSG_DONTWAIT)
}

/// `recv(2)` into `into` with `flags`.
fn recv(fd: RawFd, into: &mut [u8], flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: `into` is writable for its length.
    let n = unsafe { libc::recv(fd, into.as_mut_ptr().cast(), into.len(), flags) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Takes exactly `into.len()` bytes the socket is known to hold (they were peeked at).
pub(super) async fn take(stream: &TcpStream, into: &mut [u8]) -> io::Result<()> {
    let mut at = 0;
    while at < into.len() {
        stream.readable().await?;
        match stream.try_read(&mut into[at..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => at += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Peeks at `stream` until `find` recognises what it holds (`max` bytes at most); `Ok(None)`
/// when it closed first. For the EL's answer head, which is then taken with [`take`].
pub(super) async fn peek_for<T>(
    stream: &TcpStream,
    max: usize,
    find: impl Fn(&[u8]) -> Result<Option<T>, String>,
) -> io::Result<Result<Option<T>, String>> {
    let mut seen = vec![0u8; max];
    let fd = stream.as_raw_fd();
    loop {
        stream.readable().await?;
        let peeked = stream.try_io(Interest::READABLE, || {
            let n = peek(fd, &mut seen)?;
            if n == 0 {
                return Ok(Ok(None));
            }
            match find(&seen[..n]) {
                Ok(Some(found)) => Ok(Ok(Some(found))),
                Ok(None) if n < max => Err(io::ErrorKind::WouldBlock.into()),
                Ok(None) => Ok(Err(format!("no end within {max} bytes"))),
                Err(e) => Ok(Err(e)),
            }
        });
        match peeked {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_lines_are_read_with_their_extensions_and_refused_past_sixteen_digits() {
        assert_eq!(chunk_line(b"1a\r\nxx"), Ok(Some((4, 26))));
        assert_eq!(chunk_line(b"FF;name=v\r\n"), Ok(Some((11, 255))));
        assert_eq!(chunk_line(b"0\r\n\r\n"), Ok(Some((3, 0))));
        assert_eq!(chunk_line(b"1a"), Ok(None));
        assert!(chunk_line(b"zz\r\n").is_err());
        assert!(chunk_line(b"\r\n").is_err());
        assert!(
            chunk_line(b"11111111111111111\r\n")
                .unwrap_err()
                .contains("17 hex digits")
        );
        assert_eq!(
            chunk_line(b"ffffffffffffffff\r\n"),
            Ok(Some((18, u64::MAX)))
        );
    }

    #[test]
    fn the_last_chunk_ends_after_its_trailers_and_a_blank_line() {
        assert_eq!(trailers_end(b"0\r\n\r\nnext"), Ok(Some(5)));
        assert_eq!(trailers_end(b"0\r\nA: b\r\nC: d\r\n\r\nnext"), Ok(Some(17)));
        assert_eq!(trailers_end(b"0\r\nA: b\r\n"), Ok(None));
        assert_eq!(trailers_end(b"0\r"), Ok(None));
    }
}
