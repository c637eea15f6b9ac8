//! Accepting connections without dying silently. An error a listener can go on from (out of
//! file descriptors, out of socket buffers, a connection gone before it was accepted) is
//! counted (the caller's counter, e.g. `sszgate_accept_errors_total`), logged at most once a second, and backed off
//! from, and accepting goes on; any other error ends the loop with it, so that the process
//! exits non-zero and a supervisor restarts it. Never a live process with a dead port.
//!
//! Not here: what is served on an accepted connection (the gateway's relay and control
//! endpoints, the JSON-RPC server).

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use tokio::net::{TcpListener, TcpStream};

/// The first pause after a failed accept; doubled at each failure in a row.
const FIRST_PAUSE: Duration = Duration::from_millis(5);

/// The longest pause: short enough that a listener is back within a fifth of a second of
/// the descriptors coming free (the connections waiting meanwhile stay in the backlog).
const LONGEST_PAUSE: Duration = Duration::from_millis(200);

/// How often a run of accept errors is logged at most.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// Counts an accept error a listener goes on from: called with the listener's name and the
/// error's kind (`fds`, `memory`, `aborted`).
pub type AcceptErrorCounter<'a> = &'a (dyn Fn(&'static str, &'static str) + Send + Sync);

/// A listener's accept loop state: its name for logs and metrics, and its back-off.
pub struct Acceptor<'a> {
    listener: &'a TcpListener,
    name: &'static str,
    count: AcceptErrorCounter<'a>,
    pause: Duration,
    logged: Option<Instant>,
    unlogged: u64,
}

impl<'a> Acceptor<'a> {
    /// Accepts on `listener`, named `name` (`engine`, `control`, `rpc`) in logs and metrics;
    /// `count` is told of each error gone on from.
    pub fn new(
        listener: &'a TcpListener,
        name: &'static str,
        count: AcceptErrorCounter<'a>,
    ) -> Self {
        Acceptor {
            listener,
            name,
            count,
            pause: FIRST_PAUSE,
            logged: None,
            unlogged: 0,
        }
    }

    /// The next connection; an error only when the listener cannot go on.
    pub async fn accept(&mut self) -> std::io::Result<(TcpStream, SocketAddr)> {
        loop {
            match self.listener.accept().await {
                Ok(accepted) => {
                    self.pause = FIRST_PAUSE;
                    return Ok(accepted);
                }
                Err(e) => match transient_kind(&e) {
                    Some(kind) => self.back_off(kind, &e).await,
                    None => {
                        tracing::error!(listener = self.name, error = %e, "accepting connections failed for good");
                        return Err(e);
                    }
                },
            }
        }
    }

    /// Counts a transient error, logs it (at most once a second, with how many were not),
    /// and pauses before the next try.
    async fn back_off(&mut self, kind: &'static str, e: &std::io::Error) {
        (self.count)(self.name, kind);
        let due = self.logged.is_none_or(|at| at.elapsed() >= LOG_EVERY);
        if due {
            tracing::warn!(
                listener = self.name,
                error = %e,
                kind,
                since_last_log = self.unlogged,
                pause_ms = self.pause.as_millis() as u64,
                "accepting a connection failed; pausing and going on"
            );
            self.logged = Some(Instant::now());
            self.unlogged = 0;
        } else {
            self.unlogged += 1;
        }
        tokio::time::sleep(self.pause).await;
        self.pause = (self.pause * 2).min(LONGEST_PAUSE);
    }
}

/// The metric label of an accept error a listener can go on from; `None` for one it cannot.
pub fn transient_kind(e: &std::io::Error) -> Option<&'static str> {
    use std::io::ErrorKind;
    match e.raw_os_error() {
        Some(libc::EMFILE | libc::ENFILE) => return Some("fds"),
        Some(libc::ENOBUFS | libc::ENOMEM) => return Some("memory"),
        // Linux passes pending network errors of the new socket to accept(2) (its man page
        // says to treat them like EAGAIN), and a firewall may refuse one (EPERM).
        Some(
            libc::EPROTO
            | libc::ENOPROTOOPT
            | libc::EHOSTDOWN
            | libc::ENONET
            | libc::EHOSTUNREACH
            | libc::EOPNOTSUPP
            | libc::ENETUNREACH
            | libc::ENETDOWN
            | libc::EPERM,
        ) => return Some("aborted"),
        _ => {}
    }
    match e.kind() {
        ErrorKind::ConnectionAborted
        | ErrorKind::ConnectionReset
        | ErrorKind::Interrupted
        | ErrorKind::WouldBlock
        | ErrorKind::TimedOut => Some("aborted"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_and_buffer_exhaustion_are_gone_on_from_and_a_dead_socket_is_not() {
        let os = std::io::Error::from_raw_os_error;
        assert_eq!(transient_kind(&os(libc::EMFILE)), Some("fds"));
        assert_eq!(transient_kind(&os(libc::ENFILE)), Some("fds"));
        assert_eq!(transient_kind(&os(libc::ENOBUFS)), Some("memory"));
        assert_eq!(transient_kind(&os(libc::ECONNABORTED)), Some("aborted"));
        assert_eq!(transient_kind(&os(libc::EPROTO)), Some("aborted"));
        assert_eq!(transient_kind(&os(libc::EBADF)), None);
        assert_eq!(transient_kind(&os(libc::EINVAL)), None);
        assert_eq!(transient_kind(&os(libc::ENOTSOCK)), None);
    }
}
