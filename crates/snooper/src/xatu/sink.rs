//! One xatu output (`--xatu-output`): a bounded queue that never makes the caller wait (a
//! full queue drops the event and counts it), and a task that sends the queue's events in
//! batches — when `--xatu-max-export-batch-size` are waiting or `--xatu-batch-timeout` after
//! the first — with up to `--xatu-workers` exports in flight, each bounded by
//! `--xatu-export-timeout`. A failed export drops its batch and counts it, as xatu's own
//! batch processor does: the relay is never held and memory stays bounded while a server is
//! down; publishing resumes with the next batch once it is back.
//!
//! Outputs: `xatu:HOST:PORT` (gRPC `xatu.EventIngester/CreateEvents` over HTTP/2, plaintext or,
//! with `--xatu-tls`, TLS with ALPN `h2`), `http:URL` (a POST of NDJSON, one protojson event per
//! line; `http://` or `https://`) and `stdout` (the same lines). TLS checks the server's
//! certificate against the system's roots, or `SSL_CERT_FILE` / `SSL_CERT_DIR` when set.
//!
//! Not here: what the events hold (`event`, `wire`).

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderName, HeaderValue, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use tokio::sync::{Semaphore, mpsc};

use super::wire::{self, Event};

/// Where one output sends its events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Protojson lines on stdout.
    Stdout,
    /// A POST of NDJSON to this `http://` URL.
    Http(String),
    /// gRPC to a xatu server at this `host:port`.
    Xatu(String),
    /// gRPC over TLS to a xatu server at this `host:port` (`--xatu-tls`).
    XatuTls(String),
}

impl Output {
    /// Whether the output speaks gRPC (HTTP/2 only).
    fn is_grpc(&self) -> bool {
        matches!(self, Output::Xatu(_) | Output::XatuTls(_))
    }

    /// Whether the output needs TLS.
    fn needs_tls(&self) -> bool {
        match self {
            Output::XatuTls(_) => true,
            Output::Http(url) => url.starts_with("https://"),
            Output::Xatu(_) | Output::Stdout => false,
        }
    }
}

/// The batching bounds, shared by all outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Events waiting at most (`--xatu-max-queue-size`).
    pub max_queue_size: usize,
    /// Events per export at most (`--xatu-max-export-batch-size`).
    pub max_export_batch_size: usize,
    /// Exports in flight at most (`--xatu-workers`).
    pub workers: usize,
    /// Wait for a partial batch (`--xatu-batch-timeout`).
    pub batch_timeout: Duration,
    /// One export's limit (`--xatu-export-timeout`).
    pub export_timeout: Duration,
    /// gRPC keepalive ping interval (`--xatu-keepalive-time`).
    pub keepalive: Duration,
    /// gRPC keepalive answer limit (`--xatu-keepalive-timeout`).
    pub keepalive_timeout: Duration,
}

/// An output's counts.
#[derive(Debug, Default)]
pub struct Counts {
    /// Events accepted by the server.
    pub exported: AtomicU64,
    /// Events dropped because the queue was full.
    pub dropped_full: AtomicU64,
    /// Events dropped because their export failed.
    pub dropped_failed: AtomicU64,
}

/// The sending side of one output.
pub struct Sink {
    queue: mpsc::Sender<Event>,
    /// This output's counts.
    pub counts: Arc<Counts>,
}

impl Sink {
    /// Starts the output's exporter task; `headers` go with every export. Needs a runtime.
    pub fn start(output: Output, bounds: Bounds, headers: Vec<(String, String)>) -> Sink {
        let (queue, events) = mpsc::channel(bounds.max_queue_size.max(1));
        let counts = Arc::new(Counts::default());
        let exporter = Arc::new(Exporter::new(output, headers, &bounds));
        tokio::spawn(batches(events, bounds, exporter, counts.clone()));
        Sink { queue, counts }
    }

    /// Queues `event`, or drops and counts it when the queue is full. Never waits.
    pub fn offer(&self, event: Event) {
        if self.queue.try_send(event).is_err() {
            self.counts.dropped_full.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Collects batches and hands each to an export task, `workers` at a time.
async fn batches(
    mut events: mpsc::Receiver<Event>,
    bounds: Bounds,
    exporter: Arc<Exporter>,
    counts: Arc<Counts>,
) {
    let workers = Arc::new(Semaphore::new(bounds.workers.max(1)));
    let size = bounds.max_export_batch_size.max(1);
    while let Some(first) = events.recv().await {
        let mut batch = vec![first];
        let deadline = tokio::time::Instant::now() + bounds.batch_timeout;
        while batch.len() < size {
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Ok(Some(event)) => batch.push(event),
                _ => break,
            }
        }
        let Ok(permit) = workers.clone().acquire_owned().await else {
            return;
        };
        let (exporter, counts) = (exporter.clone(), counts.clone());
        let limit = bounds.export_timeout;
        tokio::spawn(async move {
            let n = batch.len() as u64;
            let result = match tokio::time::timeout(limit, exporter.export(&batch)).await {
                Ok(result) => result,
                Err(_) => Err(format!("no answer within {limit:?}")),
            };
            match result {
                Ok(()) => counts.exported.fetch_add(n, Ordering::Relaxed),
                Err(why) => {
                    let dropped = counts.dropped_failed.fetch_add(n, Ordering::Relaxed) + n;
                    tracing::warn!(output = %exporter.name(), error = %why, events = n, dropped_total = dropped, "Failed to send events upstream: batch dropped");
                    dropped
                }
            };
            drop(permit);
        });
    }
}

/// Sends one batch to one output.
struct Exporter {
    output: Output,
    headers: Vec<(HeaderName, HeaderValue)>,
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl Exporter {
    fn new(output: Output, headers: Vec<(String, String)>, bounds: &Bounds) -> Exporter {
        let headers = headers
            .iter()
            .filter_map(|(k, v)| {
                let name = HeaderName::try_from(k.to_ascii_lowercase()).ok()?;
                Some((name, HeaderValue::try_from(v.as_str()).ok()?))
            })
            .collect();
        let mut builder = Client::builder(TokioExecutor::new());
        builder
            .http2_only(output.is_grpc())
            .timer(hyper_util::rt::TokioTimer::new())
            .http2_keep_alive_interval(bounds.keepalive)
            .http2_keep_alive_timeout(bounds.keepalive_timeout);
        let connector = connector(&output);
        Exporter {
            output,
            headers,
            client: builder.build(connector),
        }
    }

    fn name(&self) -> String {
        match &self.output {
            Output::Stdout => "stdout".into(),
            Output::Http(url) => format!("http:{url}"),
            Output::Xatu(addr) => format!("xatu:{addr}"),
            Output::XatuTls(addr) => format!("xatu:{addr} (TLS)"),
        }
    }

    async fn export(&self, batch: &[Event]) -> Result<(), String> {
        match &self.output {
            Output::Stdout => {
                use std::io::Write;
                let lines = ndjson(batch);
                std::io::stdout()
                    .lock()
                    .write_all(&lines)
                    .map_err(|e| e.to_string())
            }
            Output::Http(url) => self.post(url, "application/x-ndjson", ndjson(batch)).await,
            Output::Xatu(addr) => self.grpc(&format!("http://{addr}"), batch).await,
            Output::XatuTls(addr) => self.grpc(&format!("https://{addr}"), batch).await,
        }
    }

    /// One POST; any 2xx is success.
    async fn post(&self, url: &str, content_type: &str, body: Vec<u8>) -> Result<(), String> {
        let response = self.send(url, content_type, body).await?;
        if !response.status().is_success() {
            return Err(format!("HTTP status {}", response.status()));
        }
        let _ = response.into_body().collect().await;
        Ok(())
    }

    async fn send(
        &self,
        url: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Result<http::Response<hyper::body::Incoming>, String> {
        let uri: Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
        let mut request = Request::post(uri)
            .header(http::header::CONTENT_TYPE, content_type)
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        for (name, value) in &self.headers {
            request.headers_mut().insert(name.clone(), value.clone());
        }
        if content_type == GRPC {
            request
                .headers_mut()
                .insert("te", HeaderValue::from_static("trailers"));
        }
        self.client.request(request).await.map_err(|e| {
            let source = std::error::Error::source(&e).map(|s| format!(": {s}"));
            format!("{e}{}", source.unwrap_or_default())
        })
    }

    /// One `CreateEvents` call to the server at `base` (`http://` or `https://` and
    /// `host:port`); the answer's `grpc-status` (trailer, or header for a trailers-only
    /// answer) must be 0.
    async fn grpc(&self, base: &str, batch: &[Event]) -> Result<(), String> {
        let message = wire::create_events_request(batch);
        let mut framed = BytesMut::with_capacity(5 + message.len());
        framed.put_u8(0);
        framed.put_u32(u32::try_from(message.len()).map_err(|_| "batch over 4 GiB")?);
        framed.put_slice(&message);
        let url = format!("{base}/xatu.EventIngester/CreateEvents");
        let response = self.send(&url, GRPC, framed.to_vec()).await?;
        if !response.status().is_success() {
            return Err(format!("HTTP status {}", response.status()));
        }
        let head = response.headers().clone();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?;
        let trailers = body.trailers().cloned().unwrap_or_default();
        let field = |name: &str| {
            let value = trailers.get(name).or_else(|| head.get(name));
            value.and_then(|v| v.to_str().ok()).map(str::to_string)
        };
        match field("grpc-status").as_deref() {
            Some("0") => Ok(()),
            Some(code) => Err(format!(
                "gRPC status {code}: {}",
                field("grpc-message").unwrap_or_default()
            )),
            None => Err("no grpc-status in the answer".into()),
        }
    }
}

const GRPC: &str = "application/grpc";

/// The connector of an output: plain TCP, and TLS for `https://` (ALPN `h2` for gRPC,
/// `http/1.1` for NDJSON posts) against the system's roots. An output that needs no TLS
/// gets an empty root store: it never makes a TLS connection, and reads no certificates.
fn connector(output: &Output) -> HttpsConnector<HttpConnector> {
    let roots = match output.needs_tls() {
        true => system_roots(),
        false => rustls::RootCertStore::empty(),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports rustls' default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http();
    match output.is_grpc() {
        true => builder.enable_http2().wrap_connector(tcp),
        false => builder.enable_http1().wrap_connector(tcp),
    }
}

/// The system's trusted roots (`SSL_CERT_FILE` / `SSL_CERT_DIR` when set); what cannot be read
/// is said once, and an empty store then fails every TLS export with the reason in the log.
fn system_roots() -> rustls::RootCertStore {
    let found = rustls_native_certs::load_native_certs();
    for error in &found.errors {
        tracing::warn!(%error, "reading the system's TLS roots for xatu");
    }
    let mut roots = rustls::RootCertStore::empty();
    let (added, ignored) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        tracing::warn!(
            ignored,
            "no TLS roots found for xatu: TLS exports will fail"
        );
    }
    roots
}

/// Protojson lines, one per event.
fn ndjson(batch: &[Event]) -> Vec<u8> {
    let mut out = Vec::new();
    for event in batch {
        out.extend_from_slice(wire::event_json(event).to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::{SystemTime, UNIX_EPOCH};

    use super::*;
    use crate::xatu::wire::{ClientMeta, EventData, GetBlobs};

    fn event() -> Event {
        Event {
            client: Arc::new(ClientMeta::default()),
            id: "id".into(),
            date_time: UNIX_EPOCH,
            requested_at: SystemTime::now(),
            duration_ms: 1,
            data: EventData::GetBlobs(GetBlobs::default()),
            facts: Vec::new(),
        }
    }

    fn bounds(queue: usize) -> Bounds {
        Bounds {
            max_queue_size: queue,
            max_export_batch_size: 4,
            workers: 1,
            batch_timeout: Duration::from_millis(10),
            export_timeout: Duration::from_secs(1),
            keepalive: Duration::from_secs(150),
            keepalive_timeout: Duration::from_secs(30),
        }
    }

    /// A port nothing listens on (bound, then closed).
    fn dead_address() -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_full_queue_drops_and_counts_without_waiting() {
        let sink = Sink::start(Output::Xatu(dead_address()), bounds(8), Vec::new());
        // The exporter task has not run yet (one thread, no await): the queue takes 8.
        for _ in 0..20 {
            sink.offer(event());
        }
        assert_eq!(sink.counts.dropped_full.load(Ordering::Relaxed), 12);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_failed_export_drops_its_batch_and_counts_it() {
        let sink = Sink::start(
            Output::Http(format!("http://{}/", dead_address())),
            bounds(64),
            Vec::new(),
        );
        for _ in 0..6 {
            sink.offer(event());
        }
        while sink.counts.dropped_failed.load(Ordering::Relaxed) < 6 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(sink.counts.dropped_failed.load(Ordering::Relaxed), 6);
        assert_eq!(sink.counts.exported.load(Ordering::Relaxed), 0);
        assert_eq!(sink.counts.dropped_full.load(Ordering::Relaxed), 0);
    }
}
