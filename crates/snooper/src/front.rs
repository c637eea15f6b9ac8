//! The rpc-snooper-compatible front on sszgate's relay port, and the separate API server
//! (`--api-port`). The front answers `/_snooper/*` (unless `--no-api`) and refuses calls
//! while the flow is stopped or their route blocked (rpc-snooper's 503, recorded); every
//! relayed call it sees is numbered (`#N`, rpc-snooper's call index) and handed to one
//! worker through a bounded queue, never waited for: past the bound, calls are dropped from
//! the log and counted ([`SnooperFront::dropped`]), the relay goes on.
//!
//! Not here: the API's answers (`api`), the log lines (`log`), the xatu events (`xatu`).

use std::{
    convert::Infallible,
    future::Future,
    sync::{
        Arc, Weak,
        atomic::{AtomicU64, Ordering},
    },
    time::SystemTime,
};

use http::{Request, Response, StatusCode};
use hyper::{body::Incoming, service::service_fn};
use hyper_util::rt::TokioIo;
use sszgate_gateway::{Exchange, Front, FrontBody, ProxyConfig};
use sszgate_record::{Capture, ErrorSide, Recorder, Transport};
use tokio::{net::TcpListener, sync::mpsc};

use crate::{
    api::{self, API_PREFIX, Flow},
    cli::LogSettings,
    modules::{self, CONTROL_PATH, Hub},
    xatu::Xatu,
};

/// Calls waiting for the worker at most; past it they are dropped from the log and counted.
pub const QUEUE: usize = 4096;

/// The front: flow state, call numbers and the queue to the worker.
pub struct SnooperFront {
    config: Weak<ProxyConfig>,
    recorder: Arc<Recorder>,
    flow: Flow,
    api_on_proxy_port: bool,
    calls: AtomicU64,
    dropped: AtomicU64,
    queue: mpsc::Sender<(u64, Exchange, SystemTime)>,
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
        let (queue, calls) = mpsc::channel(QUEUE);
        let hub = Arc::new(Hub::default());
        tokio::spawn(worker(calls, log, hub.clone(), xatu));
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
        let path = request.uri().path();
        if self.api_on_proxy_port && path.starts_with(API_PREFIX) {
            return Ok(self.manage(request));
        }
        let Some(config) = self.config.upgrade() else {
            return Err(request);
        };
        match self.flow.refuses(path, &config.control) {
            Some(why) => Ok(self.refuse(&request, why)),
            None => Err(request),
        }
    }

    fn observe(&self, exchange: Exchange) {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if self
            .queue
            .try_send((n, exchange, SystemTime::now()))
            .is_err()
        {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Writes the log lines of each call, queues its module events and its xatu event, in the
/// order the calls ended.
async fn worker(
    mut calls: mpsc::Receiver<(u64, Exchange, SystemTime)>,
    log: LogSettings,
    hub: Arc<Hub>,
    xatu: Option<Arc<Xatu>>,
) {
    use std::io::Write;
    while let Some((n, exchange, ended)) = calls.recv().await {
        if let Some(lines) = crate::log::call_lines(n, &exchange, &log) {
            let _ = std::io::stderr().lock().write_all(lines.as_bytes());
        }
        hub.deliver(n, &exchange);
        if let Some(xatu) = &xatu {
            xatu.observe(&exchange, ended);
        }
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
