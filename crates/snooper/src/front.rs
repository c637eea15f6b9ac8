//! The rpc-snooper-compatible front on sszgate's relay port, and the separate API server
//! (`--api-port`). The front answers `/_snooper/*` (unless `--no-api`) and refuses calls
//! while the flow is stopped or their route blocked (rpc-snooper's 503, recorded); every
//! relayed call it sees is numbered (`#N`, rpc-snooper's call index) and handed to one
//! worker through a queue bounded in calls and in body bytes, never waited for: past either
//! bound, calls are dropped from the log and counted ([`SnooperFront::dropped`]), the relay
//! goes on. The worker is a thread of its own, off tokio's workers: reading and re-indenting
//! a 20 MB answer must not hold up the relay's tasks, and it reads a call only once
//! `sszgate_record::AFTER_CALL` has passed since its end, while the client is still draining
//! the answer's last megabytes from the sockets. It runs at the relay's priority: a
//! lowered one (nice 10) starved it on a loaded machine, and calls were dropped (the bench's
//! sustained load: 8 of 120 events reached the xatu server).
//!
//! Not here: the API's answers (`api`), the log lines (`log`), the xatu events (`xatu`).

use std::{
    convert::Infallible,
    future::Future,
    sync::{
        Arc, Weak,
        atomic::{AtomicU64, Ordering},
        mpsc,
    },
    time::{Instant, SystemTime},
};

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use hyper::{body::Incoming, service::service_fn};
use hyper_util::rt::TokioIo;
use sszgate_gateway::{Exchange, Front, FrontBody, ProxyConfig};
use sszgate_record::{Capture, ErrorSide, Recorder, Transport};
use tokio::net::TcpListener;

use crate::{
    api::{self, API_PREFIX, Flow},
    cli::LogSettings,
    modules::{self, CONTROL_PATH, Hub},
    pretty::LazyJson,
    xatu::Xatu,
};

/// Calls waiting for the worker at most; past it they are dropped from the log and counted.
pub const QUEUE: usize = 4096;
/// Body bytes (request and answer) the calls waiting for the worker may hold alive at most;
/// past it they are dropped and counted as past [`QUEUE`]. Twelve 72-blob answers (20 MB
/// each); the recorder's queue has the same default bound and holds the same frames.
pub const QUEUE_BYTES: u64 = 256 << 20;

/// A call waiting for the worker.
struct Queued {
    n: u64,
    exchange: Exchange,
    ended: SystemTime,
    /// When it was queued (its end), to wait [`sszgate_record::AFTER_CALL`] from.
    queued: Instant,
    bytes: u64,
}

/// The relay's end of the worker's queue.
struct Queue {
    calls: mpsc::SyncSender<Queued>,
    /// Body bytes of the calls queued now.
    bytes: Arc<AtomicU64>,
    limit: u64,
}

impl Queue {
    /// Queues a call unless the queue is full in calls or in bytes; false when it is.
    fn offer(&self, n: u64, exchange: Exchange, ended: SystemTime) -> bool {
        let kept: usize = exchange.response.iter().map(|f| f.len()).sum();
        let bytes = (exchange.request.len() + kept) as u64;
        let before = self.bytes.fetch_add(bytes, Ordering::AcqRel);
        let call = Queued {
            n,
            exchange,
            ended,
            queued: Instant::now(),
            bytes,
        };
        if before + bytes > self.limit || self.calls.try_send(call).is_err() {
            self.bytes.fetch_sub(bytes, Ordering::AcqRel);
            return false;
        }
        true
    }
}

/// The front: flow state, call numbers and the queue to the worker.
pub struct SnooperFront {
    config: Weak<ProxyConfig>,
    recorder: Arc<Recorder>,
    flow: Flow,
    api_on_proxy_port: bool,
    calls: AtomicU64,
    dropped: AtomicU64,
    queue: Queue,
    hub: Arc<Hub>,
}

impl SnooperFront {
    /// A front for the proxy whose config `config` will be (built with
    /// `Arc::new_cyclic`), with its worker writing the log to stderr and handing calls to
    /// `xatu` when given. Needs a runtime.
    pub fn start(
        config: Weak<ProxyConfig>,
        recorder: Arc<Recorder>,
        api_on_proxy_port: bool,
        log: LogSettings,
        xatu: Option<Arc<Xatu>>,
    ) -> Arc<SnooperFront> {
        let hub = Arc::new(Hub::default());
        let queue = start_worker(
            QUEUE,
            QUEUE_BYTES,
            Worker {
                log,
                hub: hub.clone(),
                xatu,
                joined: Vec::new(),
            },
        );
        Arc::new(SnooperFront {
            config,
            recorder,
            flow: Flow::default(),
            api_on_proxy_port,
            calls: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            queue,
            hub,
        })
    }

    /// Calls left out of the log and module events because the worker was behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The registered modules.
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// A management call (a path under `/_snooper/`).
    fn manage(&self, request: Request<Incoming>) -> Response<FrontBody> {
        if request.uri().path() == CONTROL_PATH {
            return modules::accept(request, self.hub.clone());
        }
        let Some(config) = self.config.upgrade() else {
            return api::not_found();
        };
        let uri = request.uri();
        api::answer(
            request.method(),
            uri.path(),
            uri.query(),
            &config.control,
            &self.flow,
        )
    }

    /// rpc-snooper's 503 for a call the flow refuses, recorded as sszgate records a paused
    /// call.
    fn refuse(&self, request: &Request<Incoming>, why: api::Refused) -> Response<FrontBody> {
        let response = api::refusal(why);
        self.recorder.record(Capture {
            arrival_unix_us: now_unix_us(),
            transport: Some(Transport::Other),
            http_version: "HTTP/1.1",
            target: request.uri().to_string(),
            status: StatusCode::SERVICE_UNAVAILABLE.as_u16(),
            error_side: Some(ErrorSide::Gateway),
            injected: Some(format!("{why:?} by the rpc-snooper API: refused")),
            mode: "snoop",
            ..Capture::default()
        });
        response
    }
}

#[allow(clippy::result_large_err)] // the trait's shape: see sszgate_gateway::Front
impl Front for SnooperFront {
    fn intercept(
        &self,
        request: Request<Incoming>,
    ) -> Result<Response<FrontBody>, Request<Incoming>> {
        match self.claim(request.uri().path()) {
            Some(Claim::Manage) => Ok(self.manage(request)),
            Some(Claim::Refuse(why)) => Ok(self.refuse(&request, why)),
            None => Err(request),
        }
    }

    fn passes(&self, head: &Request<()>) -> bool {
        self.claim(head.uri().path()).is_none()
    }

    fn observe(&self, exchange: Exchange) {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if !self.queue.offer(n, exchange, SystemTime::now()) {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(
                    call = n,
                    dropped_total = dropped,
                    "log worker behind: call left out of the log, the modules and xatu"
                );
            }
        }
    }
}

/// Why the front answers a call itself.
enum Claim {
    /// One of rpc-snooper's management endpoints on the relay port.
    Manage,
    /// A call refused while the flow is stopped or its path blocked.
    Refuse(api::Refused),
}

impl SnooperFront {
    /// Whether the front answers a call to `path` itself, and why: the one decision behind
    /// both [`Front::intercept`] and [`Front::passes`].
    fn claim(&self, path: &str) -> Option<Claim> {
        if self.api_on_proxy_port && path.starts_with(API_PREFIX) {
            return Some(Claim::Manage);
        }
        let config = self.config.upgrade()?;
        self.flow.refuses(path, &config.control).map(Claim::Refuse)
    }
}

/// What the worker does with each call.
struct Worker {
    log: LogSettings,
    hub: Arc<Hub>,
    xatu: Option<Arc<Xatu>>,
    /// The buffer an answer's frames are joined into, kept from call to call: a fresh 20 MB
    /// buffer per 72-blob answer was faulted in and zeroed by the kernel each time, which
    /// profiled at over half of the worker's time.
    joined: Vec<u8>,
}

impl Worker {
    /// Writes the log lines of a call, queues its module events and its xatu event. The
    /// answer's frames are joined once here and it is read as JSON at most once, so that
    /// each reader sees one slice and one tree.
    fn handle(&mut self, n: u64, mut exchange: Exchange, ended: SystemTime) {
        use std::io::Write;
        // Modules keep what they are sent, so for them the answer becomes one owned frame;
        // otherwise the frames are joined into the worker's own buffer.
        if exchange.response.len() > 1 && !self.hub.is_empty() {
            exchange.response = vec![Bytes::from(exchange.response.concat())];
        }
        let answer = LazyJson::new(joined(&exchange.response, &mut self.joined));
        if let Some(lines) = crate::log::call_lines(n, &exchange, &answer, &self.log) {
            let _ = std::io::stderr().lock().write_all(lines.as_bytes());
        }
        self.hub.deliver(n, &exchange);
        if let Some(xatu) = &self.xatu {
            xatu.observe(&exchange, &answer, ended);
        }
    }
}

/// An answer's frames as one slice: the frame itself when there is one, else the frames
/// copied into `buffer` (emptied first).
fn joined<'a>(frames: &'a [Bytes], buffer: &'a mut Vec<u8>) -> &'a [u8] {
    match frames {
        [] => &[],
        [one] => one,
        frames => {
            buffer.clear();
            for frame in frames {
                buffer.extend_from_slice(frame);
            }
            buffer
        }
    }
}

/// Starts the worker's thread (in the current runtime's context) and returns its queue:
/// `calls` and `bytes` at most.
fn start_worker(calls: usize, bytes: u64, worker: Worker) -> Queue {
    let (sender, receiver) = mpsc::sync_channel::<Queued>(calls);
    let queued = Arc::new(AtomicU64::new(0));
    let (runtime, in_queue) = (tokio::runtime::Handle::current(), queued.clone());
    let spawned = std::thread::Builder::new()
        .name("snooper-log".into())
        .spawn(move || {
            let mut worker = worker;
            let _runtime = runtime.enter();
            // Ends when the front (the only sender) is gone.
            while let Ok(call) = receiver.recv() {
                // Not while the client is still taking the answer (see AFTER_CALL).
                sszgate_record::wait_after_call(call.queued);
                worker.handle(call.n, call.exchange, call.ended);
                in_queue.fetch_sub(call.bytes, Ordering::AcqRel);
            }
        });
    if let Err(e) = spawned {
        // Without a worker every call is dropped and counted; the relay goes on.
        tracing::error!(error = %e, "could not start the snooper's log worker");
    }
    Queue {
        calls: sender,
        bytes: queued,
        limit: bytes,
    }
}

/// Serves the management API alone on `listener` (`--api-port`), behind basic auth when
/// `users` are given; other paths are 404 (after auth), as in rpc-snooper.
pub async fn serve_api(
    listener: TcpListener,
    front: Arc<SnooperFront>,
    users: Arc<Vec<(String, String)>>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut shutdown = std::pin::pin!(shutdown);
    let metrics = front.recorder.clone();
    let count = |listener, kind| metrics.metrics().accept_error(listener, kind);
    let mut acceptor = sszgate_serve::Acceptor::new(&listener, "snooper-api", &count);
    loop {
        let (stream, _) = tokio::select! {
            accepted = acceptor.accept() => accepted?,
            () = &mut shutdown => return Ok(()),
        };
        let (front, users) = (front.clone(), users.clone());
        let service = service_fn(move |request: Request<Incoming>| {
            let answer = if !api::authorized(request.headers(), &users) {
                api::unauthorized()
            } else if request.uri().path().starts_with(API_PREFIX) {
                front.manage(request)
            } else {
                api::not_found()
            };
            std::future::ready(Ok::<_, Infallible>(answer))
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades()
                .await;
        });
    }
}

fn now_unix_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::exchange;

    /// A call whose request is `len` bytes (at least 14: `{"method":"m"}` and blanks) and
    /// whose answer is none.
    fn call_of(len: usize) -> Exchange {
        let mut request = br#"{"method":"m"}"#.to_vec();
        request.resize(len.max(request.len()), b' ');
        let mut call = exchange("{}");
        (call.request, call.response) = (Bytes::from(request), Vec::new());
        call
    }

    /// A queue of `calls` and `limit` bytes whose worker never reads.
    fn queue(calls: usize, limit: u64) -> (Queue, mpsc::Receiver<Queued>) {
        let (calls, receiver) = mpsc::sync_channel(calls);
        let bytes = Arc::default();
        (
            Queue {
                calls,
                bytes,
                limit,
            },
            receiver,
        )
    }

    /// The buffer is reused: a shorter answer after a longer one is exactly itself.
    #[test]
    fn frames_are_joined_into_the_reused_buffer_without_what_came_before() {
        let mut buffer = Vec::new();
        let long = [
            Bytes::from_static(b"{\"a\":"),
            Bytes::from_static(b"\"0x0102\"}"),
        ];
        assert_eq!(joined(&long, &mut buffer), br#"{"a":"0x0102"}"#);
        let short = [Bytes::from_static(b"[1,"), Bytes::from_static(b"2]")];
        assert_eq!(joined(&short, &mut buffer), b"[1,2]");
        let one = [Bytes::from_static(b"null")];
        assert_eq!(joined(&one, &mut buffer), b"null");
        assert_eq!(joined(&[], &mut buffer), b"");
    }

    #[test]
    fn the_queue_is_bounded_in_bytes_and_in_calls() {
        let now = SystemTime::now();
        let (bytes_bound, _held) = queue(10, 100);
        assert!(bytes_bound.offer(1, call_of(60), now));
        assert!(!bytes_bound.offer(2, call_of(41), now), "101 bytes queued");
        assert!(bytes_bound.offer(3, call_of(40), now), "exactly the bound");
        assert_eq!(bytes_bound.bytes.load(Ordering::Acquire), 100);
        assert!(!bytes_bound.offer(4, call_of(14), now));
        assert_eq!(
            bytes_bound.bytes.load(Ordering::Acquire),
            100,
            "refused hold none"
        );
        // The answer's kept frames count too (2 + 39 bytes).
        let (answer_bound, _held) = queue(10, 40);
        assert!(!answer_bound.offer(5, exchange("{}"), now));
        let (count_bound, _held) = queue(2, u64::MAX);
        assert!(count_bound.offer(6, call_of(14), now) && count_bound.offer(7, call_of(14), now));
        assert!(!count_bound.offer(8, call_of(14), now), "a third call");
        assert_eq!(count_bound.bytes.load(Ordering::Acquire), 28);
    }

    #[tokio::test]
    async fn the_worker_thread_takes_every_call_and_gives_its_bytes_back() {
        let log = LogSettings {
            color: false,
            truncate: true,
            hide_bodies: true,
            skip: vec!["*".into()],
            verbose: false,
        };
        let hub = Arc::new(Hub::default());
        let queue = start_worker(
            8,
            1 << 20,
            Worker {
                log,
                hub,
                xatu: None,
                joined: Vec::new(),
            },
        );
        let now = SystemTime::now();
        let mut offered = 0;
        while offered < 100 {
            if queue.offer(offered, call_of(1000), now) {
                offered += 1;
            } else {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        }
        for _ in 0..10_000 {
            if queue.bytes.load(Ordering::Acquire) == 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        panic!(
            "the worker left {} bytes queued",
            queue.bytes.load(Ordering::Acquire)
        );
    }
}
