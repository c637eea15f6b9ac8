//! The relay with a fake EL on loopback: byte-exact relay for every transport, the records
//! written for each message kind (values checked), the metrics, and the faults.

mod auth;
mod bridge;
mod clickhouse;
mod control;
mod dashboard;
mod el_name;
mod fake_el;
mod faults;
mod geth;
mod limits;
mod relay;
mod splice;
mod transport;
mod verify;

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use sszgate_gateway::{ProxyConfig, Upstream};
use sszgate_record::{Recorder, Sink, SinkSpec};
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};

/// A running proxy in front of `upstream`, recording into a SQLite file of its own.
pub(crate) struct Proxy {
    pub(crate) addr: SocketAddr,
    pub(crate) control: SocketAddr,
    pub(crate) db: PathBuf,
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) config: Arc<ProxyConfig>,
    stop: Option<(oneshot::Sender<()>, oneshot::Sender<()>)>,
    tasks: Vec<JoinHandle<std::io::Result<()>>>,
    _dir: tempfile::TempDir,
}

thread_local! {
    /// The limits of the next proxy this thread starts (tests of the limits set them).
    pub(crate) static LIMITS: std::cell::RefCell<sszgate_gateway::Limits> =
        std::cell::RefCell::new(sszgate_gateway::Limits::default());
    /// Where the next proxy this thread starts keeps its database (the fault tests put it on
    /// a small file system of their own); a fresh temporary directory when unset.
    pub(crate) static DB_DIR: std::cell::RefCell<Option<PathBuf>> =
        const { std::cell::RefCell::new(None) };
    /// The control token of the next proxy this thread starts.
    pub(crate) static CONTROL_TOKEN: std::cell::RefCell<Option<String>> =
        const { std::cell::RefCell::new(None) };
    /// Sinks the next proxy this thread starts writes to besides its SQLite file.
    pub(crate) static EXTRA_SINKS: std::cell::RefCell<Vec<Sink>> =
        const { std::cell::RefCell::new(Vec::new()) };
    /// Whether the next proxy this thread starts splices plain calls' answers (the default,
    /// as `sszgate proxy`'s); tests of the general path turn it off.
    pub(crate) static SPLICE: std::cell::RefCell<bool> = const { std::cell::RefCell::new(true) };
}

impl Proxy {
    pub(crate) async fn start(upstream: &str) -> Proxy {
        Self::start_with(upstream, Duration::from_secs(5), 64 << 20).await
    }

    pub(crate) async fn start_with(upstream: &str, timeout: Duration, max_body: usize) -> Proxy {
        Self::start_full(
            upstream,
            timeout,
            max_body,
            sszgate_gateway::UpstreamTransport::Relay,
            None,
        )
        .await
    }

    /// A proxy that bridges REST-SSZ calls to a JSON-RPC upstream, with this JWT secret.
    pub(crate) async fn start_bridge(upstream: &str, secret: &str) -> Proxy {
        let jwt = sszgate_gateway::JwtSecret::from_hex(secret).unwrap();
        Self::start_full(
            upstream,
            Duration::from_secs(5),
            64 << 20,
            sszgate_gateway::UpstreamTransport::Json,
            Some(jwt),
        )
        .await
    }

    /// A proxy whose transport was found by asking the EL (`auto`), as `probed`.
    pub(crate) async fn start_auto(
        upstream: &str,
        probed: sszgate_gateway::UpstreamTransport,
        secret: &str,
    ) -> Proxy {
        let jwt = sszgate_gateway::JwtSecret::from_hex(secret).unwrap();
        Self::start_choice(
            upstream,
            Duration::from_secs(5),
            64 << 20,
            sszgate_gateway::TransportChoice::auto(probed),
            Some(jwt),
        )
        .await
    }

    pub(crate) async fn start_full(
        upstream: &str,
        timeout: Duration,
        max_body: usize,
        upstream_transport: sszgate_gateway::UpstreamTransport,
        jwt: Option<sszgate_gateway::JwtSecret>,
    ) -> Proxy {
        Self::start_choice(
            upstream,
            timeout,
            max_body,
            sszgate_gateway::TransportChoice::fixed(upstream_transport),
            jwt,
        )
        .await
    }

    pub(crate) async fn start_choice(
        upstream: &str,
        timeout: Duration,
        max_body: usize,
        upstream_transport: sszgate_gateway::TransportChoice,
        jwt: Option<sszgate_gateway::JwtSecret>,
    ) -> Proxy {
        Self::start_configured(
            upstream,
            timeout,
            max_body,
            upstream_transport,
            jwt,
            sszgate_verify::Mode::Off,
            false,
            false,
        )
        .await
    }

    /// A relaying proxy with `--auth verify` and `secret`.
    pub(crate) async fn start_auth(upstream: &str, secret: &str) -> Proxy {
        Self::start_configured(
            upstream,
            Duration::from_secs(5),
            64 << 20,
            sszgate_gateway::TransportChoice::fixed(sszgate_gateway::UpstreamTransport::Relay),
            Some(sszgate_gateway::JwtSecret::from_hex(secret).unwrap()),
            sszgate_verify::Mode::Off,
            false,
            true,
        )
        .await
    }

    /// A relaying proxy that verifies every call (`verify`), refusing bad payloads when
    /// `verify_enforce`.
    pub(crate) async fn start_verifying(
        upstream: &str,
        verify: sszgate_verify::Mode,
        verify_enforce: bool,
    ) -> Proxy {
        Self::start_configured(
            upstream,
            Duration::from_secs(5),
            64 << 20,
            sszgate_gateway::TransportChoice::fixed(sszgate_gateway::UpstreamTransport::Relay),
            None,
            verify,
            verify_enforce,
            false,
        )
        .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn start_configured(
        upstream: &str,
        timeout: Duration,
        max_body: usize,
        upstream_transport: sszgate_gateway::TransportChoice,
        jwt: Option<sszgate_gateway::JwtSecret>,
        verify: sszgate_verify::Mode,
        verify_enforce: bool,
        verify_jwt: bool,
    ) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        let db = DB_DIR
            .with(|d| d.borrow_mut().take())
            .unwrap_or_else(|| dir.path().to_path_buf())
            .join("calls.db");
        let sink = Sink::open(&SinkSpec::Sqlite(db.display().to_string()))
            .unwrap()
            .unwrap();
        let mut sinks = vec![sink];
        sinks.extend(EXTRA_SINKS.with(|s| std::mem::take(&mut *s.borrow_mut())));
        let recorder = Arc::new(Recorder::start_verifying(
            sinks,
            "proxy",
            vec![("node".into(), "test-1".into())],
            1024,
            verify,
        ));
        let config = Arc::new(ProxyConfig {
            limits: LIMITS.with(|l| *l.borrow()),
            upstream: Upstream::new(upstream, timeout, false).unwrap(),
            max_body,
            cl_label: None,
            upstream_transport,
            verify_jwt: jwt.is_some() && verify_jwt,
            jwt,
            verify_enforce,
            control: sszgate_gateway::ControlPoint::default(),
            control_token: CONTROL_TOKEN.with(|t| t.borrow().clone()),
            front: None,
            splice: SPLICE.with(|s| *s.borrow()),
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let control = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (addr, control_addr) = (
            listener.local_addr().unwrap(),
            control.local_addr().unwrap(),
        );
        let (stop_relay, relay_rx) = oneshot::channel::<()>();
        let (stop_control, control_rx) = oneshot::channel::<()>();
        let tasks = vec![
            tokio::spawn(sszgate_gateway::serve(
                listener,
                config.clone(),
                recorder.clone(),
                async move {
                    let _ = relay_rx.await;
                },
            )),
            tokio::spawn(sszgate_gateway::serve_control(
                control,
                config.clone(),
                recorder.clone(),
                async move {
                    let _ = control_rx.await;
                },
            )),
        ];
        Proxy {
            addr,
            control: control_addr,
            db,
            recorder,
            config,
            stop: Some((stop_relay, stop_control)),
            tasks,
            _dir: dir,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The `/metrics` text once the recorder has written `records` records (records are
    /// written off the forward path, after their checks: a KZG check of a debug build under
    /// a loaded CPU takes seconds). Waits for the worker; two minutes without them is a hang.
    pub(crate) async fn metrics_after(&self, records: u64) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
        while self.recorder.stats().recorded < records {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the recorder wrote {} of {records} records in two minutes",
                self.recorder.stats().recorded
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (_, _, body) = send(
            Request::get(format!("http://{}/metrics", self.control))
                .body(Full::new(Bytes::new()))
                .unwrap(),
            false,
        )
        .await;
        String::from_utf8(body.to_vec()).unwrap()
    }

    /// Stops the proxy, waits for the records to be written, and returns the database.
    pub(crate) async fn finish(mut self) -> (rusqlite::Connection, tempfile::TempDir) {
        let (a, b) = self.stop.take().unwrap();
        let _ = a.send(());
        let _ = b.send(());
        for task in self.tasks.drain(..) {
            task.await.unwrap().unwrap();
        }
        let recorder = self.recorder.clone();
        tokio::task::spawn_blocking(move || recorder.shutdown())
            .await
            .unwrap();
        (rusqlite::Connection::open(&self.db).unwrap(), self._dir)
    }
}

/// Waits (at most `secs`) for `done`, polling; false when it never came.
pub(crate) async fn eventually(secs: u64, mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..secs * 20 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    done()
}

/// Sends one request (HTTP/1.1, or h2c when `http2`) and returns status, headers and body.
pub(crate) async fn send(
    request: Request<Full<Bytes>>,
    http2: bool,
) -> (http::StatusCode, http::HeaderMap, Bytes) {
    try_send(request, http2).await.expect("the proxy answers")
}

/// [`send`], with connection failures as errors.
pub(crate) async fn try_send(
    request: Request<Full<Bytes>>,
    http2: bool,
) -> Result<(http::StatusCode, http::HeaderMap, Bytes), hyper_util::client::legacy::Error> {
    let mut builder = Client::builder(TokioExecutor::new());
    if http2 {
        builder.http2_only(true);
    }
    let client = builder.build_http::<Full<Bytes>>();
    let response: Response<hyper::body::Incoming> = client.request(request).await?;
    let (parts, body) = response.into_parts();
    Ok((
        parts.status,
        parts.headers,
        body.collect().await.unwrap().to_bytes(),
    ))
}

/// (HTTP status, error side) of every record of `db`, in order.
pub(crate) fn status_and_side(db: &rusqlite::Connection) -> Vec<(i64, Option<String>)> {
    db.prepare("SELECT status, error_side FROM calls ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// (HTTP status, error side, error message) of every record of `db`, in order.
pub(crate) fn status_side_message(
    db: &rusqlite::Connection,
) -> Vec<(i64, Option<String>, Option<String>)> {
    db.prepare("SELECT status, error_side, error_message FROM calls ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// A JSON-RPC POST.
pub(crate) fn post_json(url: &str, body: impl Into<Bytes>) -> Request<Full<Bytes>> {
    Request::post(url)
        .header("content-type", "application/json")
        .header("authorization", "Bearer test-token")
        .body(Full::new(body.into()))
        .unwrap()
}
