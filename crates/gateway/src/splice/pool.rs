//! The spliced relay's connections to the EL: plain TCP streams (the relay speaks HTTP/1.1 on
//! them itself), kept open between calls like the pooled client's, and checked before reuse.
//!
//! Not here: what is sent on them (`splice`, `wire`).

use std::{
    sync::Mutex,
    time::{Duration, Instant},
};

use tokio::net::TcpStream;

/// Idle connections kept at most, as the pooled client's `pool_max_idle_per_host`.
const MAX_IDLE: usize = 32;

/// How long an idle connection is kept: under the 120 s after which geth closes one, so that
/// a call seldom meets a connection the EL is closing.
const IDLE_FOR: Duration = Duration::from_secs(90);

/// Open connections to the EL, each kept since an instant.
pub(super) struct Pool {
    authority: String,
    idle: Mutex<Vec<(TcpStream, Instant)>>,
}

impl Pool {
    /// A pool of connections to `authority` (`host:port`).
    pub(super) fn new(authority: &str) -> Pool {
        Pool {
            authority: authority.to_string(),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// An idle connection that is still open and quiet, with `true`; else a new one, with
    /// `false`.
    pub(super) async fn take(&self) -> std::io::Result<(TcpStream, bool)> {
        while let Some((stream, since)) = self.pop() {
            if since.elapsed() < IDLE_FOR && quiet(&stream) {
                return Ok((stream, true));
            }
        }
        let stream = TcpStream::connect(&self.authority).await?;
        let _ = stream.set_nodelay(true);
        Ok((stream, false))
    }

    /// A new connection, never an idle one (for a call retried after a kept one failed).
    pub(super) async fn fresh(&self) -> std::io::Result<TcpStream> {
        let stream = TcpStream::connect(&self.authority).await?;
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    /// Keeps a connection whose last answer ended cleanly.
    pub(super) fn give(&self, stream: TcpStream) {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push((stream, Instant::now()));
        }
    }

    fn pop(&self) -> Option<(TcpStream, Instant)> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop()
    }
}

/// True when an idle connection has nothing to read: not closed by the EL and holding no
/// stray bytes (either would make it unusable for the next answer).
fn quiet(stream: &TcpStream) -> bool {
    use std::os::fd::AsRawFd;
    // Asked of the socket itself: tokio's readiness may not have seen the EL's FIN yet.
    let mut byte = [0u8; 1];
    match super::pump::peek(stream.as_raw_fd(), &mut byte) {
        Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
        Ok(_) => false,
    }
}
