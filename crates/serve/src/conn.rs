//! Serving one connection under the limits: [`Limits`] (header and body timeouts, the
//! in-flight cap, the head's bytes), the hyper builder every accepted connection is served
//! with (a timer, so that the header timeout is on; the read buffer and h2 header list
//! capped), and [`InFlight`], the cap on requests handled at once.
//!
//! Not here: what a request is answered with (the gateway's relay, the JSON-RPC server), how
//! a body is read (`body`).

use std::{sync::Arc, time::Duration};

use hyper_util::{
    rt::{TokioExecutor, TokioTimer},
    server::conn::auto,
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Limits on what a client may hold of a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Time a client has to send a request's headers (HTTP/1.1); then the connection closes.
    pub header_timeout: Duration,
    /// Time a client has to send a request's body once its headers are in; then a 408.
    pub body_timeout: Duration,
    /// Requests handled at once; a request beyond that is answered 503 at once (0: no limit).
    pub max_in_flight: usize,
    /// Bytes of a request's head (request line and header fields) accepted; a larger head is
    /// answered 431. The HTTP layer itself buffers at most [`HARD_HEAD_FACTOR`] times this
    /// (HTTP/1.1) and takes an h2 header list of at most that.
    pub max_header_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_in_flight: 256,
            max_header_bytes: 8 << 10,
        }
    }
}

/// The hard cap on an h2 header list, and the least of the HTTP/1.1 read buffer, as a
/// multiple of the checked limit: heads between the limit and the cap get a 431 in the
/// caller's shape from the server; beyond the cap the HTTP layer answers 431 itself.
pub const HARD_HEAD_FACTOR: usize = 4;

/// hyper's own default for its HTTP/1.1 read buffer (8 KiB + 100 × 4 KiB), kept as the floor:
/// request bodies are read through the same buffer, and a smaller one would only cost reads.
pub const MIN_HTTP1_BUFFER: usize = 8192 + 4096 * 100;

/// The floor of the h2 header list cap (hyper's default).
pub const MIN_H2_HEADER_LIST: usize = 16 << 10;

impl Limits {
    /// The HTTP/1.1 read buffer's size: what the HTTP layer buffers of a head at most.
    pub fn http1_buffer(&self) -> usize {
        self.hard_head().max(MIN_HTTP1_BUFFER)
    }

    fn hard_head(&self) -> usize {
        self.max_header_bytes.saturating_mul(HARD_HEAD_FACTOR)
    }

    /// The builder an accepted connection is served with: HTTP/1.1 and h2c, a timer so that
    /// a head not in within [`Limits::header_timeout`] closes the connection (hyper has no
    /// header timeout without one), the read buffer and h2 header list capped.
    pub fn builder(&self) -> auto::Builder<TokioExecutor> {
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(self.header_timeout)
            .max_buf_size(self.http1_buffer());
        builder.http2().max_header_list_size(
            u32::try_from(self.hard_head().max(MIN_H2_HEADER_LIST)).unwrap_or(u32::MAX),
        );
        builder
    }

    /// The in-flight cap these limits name.
    pub fn in_flight(&self) -> InFlight {
        InFlight::new(self.max_in_flight)
    }
}

/// The cap on requests handled at once: a permit per request, taken without waiting.
#[derive(Clone, Debug)]
pub struct InFlight {
    permits: Arc<Semaphore>,
    max: usize,
}

impl InFlight {
    /// At most `max` at once (0: no limit).
    pub fn new(max: usize) -> InFlight {
        let permits = match max {
            0 => Semaphore::MAX_PERMITS,
            n => n,
        };
        InFlight {
            permits: Arc::new(Semaphore::new(permits)),
            max,
        }
    }

    /// A permit, held until the request's answer is handed to the HTTP layer; `None` when
    /// all are taken (the caller answers 503 at once, see [`InFlight::busy_message`]).
    pub fn try_enter(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().try_acquire_owned().ok()
    }

    /// What a request refused for want of a permit is told.
    pub fn busy_message(&self) -> String {
        format!("{} calls in flight already: try again", self.max)
    }
}

/// Bytes of a request's head as it would appear on an HTTP/1.1 wire: the request line and
/// each header field (`name: value\r\n`), the blank line included. h2 heads are measured the
/// same way, so one limit means the same for both.
pub fn head_bytes<B>(request: &http::Request<B>) -> usize {
    let target = request
        .uri()
        .path_and_query()
        .map_or(1, |pq| pq.as_str().len());
    let line = request.method().as_str().len() + 1 + target + " HTTP/1.1\r\n".len();
    request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + 2 + value.len() + 2)
        .sum::<usize>()
        + line
        + 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_in_flight_cap_refuses_past_its_permits_and_frees_them_when_dropped() {
        let cap = InFlight::new(2);
        let (a, b) = (cap.try_enter(), cap.try_enter());
        assert!(a.is_some() && b.is_some());
        assert!(cap.try_enter().is_none(), "a third beyond a cap of 2");
        drop(a);
        assert!(cap.try_enter().is_some(), "a permit freed is taken again");
        assert!(cap.busy_message().starts_with("2 calls in flight"));
        let open = InFlight::new(0);
        let held: Vec<_> = (0..1000).map(|_| open.try_enter()).collect();
        assert!(held.iter().all(Option::is_some), "0 is no limit");
    }

    #[test]
    fn a_head_is_measured_as_its_http1_wire_form() {
        let request = http::Request::post("/a?b")
            .header("x", "yz")
            .body(())
            .unwrap();
        // "POST /a?b HTTP/1.1\r\n" + "x: yz\r\n" + "\r\n"
        assert_eq!(head_bytes(&request), 20 + 7 + 2);
    }
}
