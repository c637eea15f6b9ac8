//! The control address: `GET /metrics` (Prometheus text) and `GET /_sszgate/status` (JSON:
//! recorder counters, queue depth, drops, upstream health). Separate from the relay port and
//! bound to loopback by default, so it is never exposed with the Engine API.

use std::{convert::Infallible, future::Future, sync::Arc};

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::{body::Incoming, service::service_fn};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use sszgate_record::Recorder;
use tokio::net::TcpListener;

use crate::ProxyConfig;

/// Serves the control endpoints on `listener` until `shutdown` resolves.
pub async fn serve_control(
    listener: TcpListener,
    config: Arc<ProxyConfig>,
    recorder: Arc<Recorder>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut shutdown = std::pin::pin!(shutdown);
    let metrics = recorder.clone();
    let mut acceptor = crate::accept::Acceptor::new(&listener, "control", metrics.metrics());
    loop {
        let (stream, _) = tokio::select! {
            accepted = acceptor.accept() => accepted?,
            () = &mut shutdown => return Ok(()),
        };
        let config = config.clone();
        let recorder = recorder.clone();
        tokio::spawn(async move {
            let service =
                service_fn(move |request| answer(request, config.clone(), recorder.clone()));
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(
    request: Request<Incoming>,
    config: Arc<ProxyConfig>,
    recorder: Arc<Recorder>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, content_type, body) = match request.uri().path() {
        "/metrics" => (
            StatusCode::OK,
            "text/plain; version=0.0.4",
            recorder.metrics().render(),
        ),
        "/_sszgate/status" => {
            let status = serde_json::json!({
                "upstream": config.upstream.url(),
                "upstream_health": config.upstream.health(),
                "records": recorder.stats(),
            });
            (StatusCode::OK, "application/json", status.to_string())
        }
        other => (
            StatusCode::NOT_FOUND,
            "text/plain",
            format!("no control endpoint at {other} (try /metrics or /_sszgate/status)\n"),
        ),
    };
    Ok(Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("a valid response"))
}
