//! The control address: `GET /metrics` (Prometheus text), `GET /_sszgate/status` (JSON:
//! recorder counters, queue depth, drops, upstream health, the control point), and the
//! control point's API (`sszgate ctl` speaks it):
//!
//! - `GET /_sszgate/rules`: the pause and the rules in force;
//! - `POST /_sszgate/rules` (a JSON rule, see `inject::RuleSpec`): adds one, `201 {"id":…}`;
//! - `DELETE /_sszgate/rules/{id}`, `DELETE /_sszgate/rules`: removes one, or all;
//! - `POST /_sszgate/pause` (`{"mode":"hold"|"reject"}`), `POST /_sszgate/resume`;
//! - `GET /_sszgate/events`: the live stream of records (server-sent events, `events`).
//!
//! What changes behaviour takes `Authorization: Bearer <--control-token>` when a token is set.
//! Separate from the relay port and bound to loopback by default, so it is never exposed with
//! the Engine API.

use std::{convert::Infallible, future::Future, sync::Arc};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited, StreamBody, combinators::UnsyncBoxBody};
use hyper::{body::Incoming, service::service_fn};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use sszgate_record::Recorder;
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;

use crate::{
    ProxyConfig,
    inject::{PauseMode, RuleSpec},
};

/// Serves the control endpoints on `listener` until `shutdown` resolves.
pub async fn serve_control(
    listener: TcpListener,
    config: Arc<ProxyConfig>,
    recorder: Arc<Recorder>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut shutdown = std::pin::pin!(shutdown);
    let metrics = recorder.clone();
    let count = |listener, kind| metrics.metrics().accept_error(listener, kind);
    let mut acceptor = sszgate_serve::Acceptor::new(&listener, "control", &count);
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

/// A control answer's body: whole, or an event stream.
type ControlBody = UnsyncBoxBody<Bytes, Infallible>;

fn full(bytes: Bytes) -> ControlBody {
    Full::new(bytes).boxed_unsync()
}

/// The event stream, or why the query does not make one.
fn events(request: &Request<Incoming>, recorder: &Arc<Recorder>) -> Response<ControlBody> {
    match crate::events::Filter::parse(request.uri().query().unwrap_or("")) {
        Ok(filter) => Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .header(header::CACHE_CONTROL, "no-store")
            .body(StreamBody::new(crate::events::stream(recorder, filter)).boxed_unsync())
            .expect("a valid response"),
        Err(why) => Response::builder()
            .status(StatusCode::BAD_REQUEST)
            .header(header::CONTENT_TYPE, "application/json")
            .body(full(Bytes::from(
                serde_json::json!({ "error": why }).to_string(),
            )))
            .expect("a valid response"),
    }
}

/// Largest control request body read: a rule is a few hundred bytes.
const MAX_CONTROL_BODY: usize = 64 << 10;

async fn answer(
    request: Request<Incoming>,
    config: Arc<ProxyConfig>,
    recorder: Arc<Recorder>,
) -> Result<Response<ControlBody>, Infallible> {
    if request.uri().path() == "/_sszgate/events" {
        return Ok(events(&request, &recorder));
    }
    if request.uri().path().starts_with("/_sszgate/rules")
        || matches!(request.uri().path(), "/_sszgate/pause" | "/_sszgate/resume")
    {
        let (status, body) = control_point(request, &config).await;
        return Ok(Response::builder()
            .status(status)
            .header(header::CONTENT_TYPE, "application/json")
            .body(full(Bytes::from(body.to_string())))
            .expect("a valid response"));
    }
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
                "control": control_state(&config),
            });
            (StatusCode::OK, "application/json", status.to_string())
        }
        other => (
            StatusCode::NOT_FOUND,
            "text/plain",
            format!(
                "no control endpoint at {other} (try /metrics, /_sszgate/status or /_sszgate/rules)\n"
            ),
        ),
    };
    Ok(Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(full(Bytes::from(body)))
        .expect("a valid response"))
}

/// The pause and the rules, as JSON.
fn control_state(config: &ProxyConfig) -> serde_json::Value {
    serde_json::json!({
        "paused": config.control.paused(),
        "holding": config.control.holding(),
        "rules": config.control.list(),
    })
}

/// One call of the control point's API: its status and JSON answer.
async fn control_point(
    request: Request<Incoming>,
    config: &ProxyConfig,
) -> (StatusCode, serde_json::Value) {
    let error = |status, message: String| (status, serde_json::json!({ "error": message }));
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    if method != Method::GET && !authorized(request.headers(), config.control_token.as_deref()) {
        return error(
            StatusCode::UNAUTHORIZED,
            "this control call changes the relay: it needs Authorization: Bearer <--control-token>"
                .into(),
        );
    }
    let body = match Limited::new(request.into_body(), MAX_CONTROL_BODY)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(e) => {
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("control body not read (at most {MAX_CONTROL_BODY} bytes): {e}"),
            );
        }
    };
    let control = &config.control;
    match (method, path.as_str()) {
        (Method::GET, "/_sszgate/rules") => (StatusCode::OK, control_state(config)),
        (Method::POST, "/_sszgate/rules") => match serde_json::from_slice::<RuleSpec>(&body) {
            Err(e) => error(StatusCode::BAD_REQUEST, format!("not a rule: {e}")),
            Ok(spec) => match control.add(spec) {
                Ok(id) => (StatusCode::CREATED, serde_json::json!({ "id": id })),
                Err(why) => error(StatusCode::UNPROCESSABLE_ENTITY, why),
            },
        },
        (Method::DELETE, "/_sszgate/rules") => (
            StatusCode::OK,
            serde_json::json!({ "removed": control.clear() }),
        ),
        (Method::DELETE, rule) => {
            match rule.strip_prefix("/_sszgate/rules/").map(str::parse::<u64>) {
                Some(Ok(id)) if control.remove(id) => {
                    (StatusCode::OK, serde_json::json!({ "removed": 1 }))
                }
                Some(Ok(id)) => error(StatusCode::NOT_FOUND, format!("no rule {id} in force")),
                _ => error(
                    StatusCode::NOT_FOUND,
                    format!("no control endpoint at DELETE {rule}"),
                ),
            }
        }
        (Method::POST, "/_sszgate/pause") => {
            let mode = if body.is_empty() {
                Ok(PauseMode::Hold)
            } else {
                serde_json::from_slice::<serde_json::Value>(&body)
                    .ok()
                    .and_then(|v| serde_json::from_value::<PauseMode>(v.get("mode")?.clone()).ok())
                    .ok_or("a pause is {\"mode\":\"hold\"} or {\"mode\":\"reject\"}")
            };
            match mode {
                Ok(mode) => {
                    control.pause(mode);
                    (StatusCode::OK, control_state(config))
                }
                Err(why) => error(StatusCode::BAD_REQUEST, why.to_string()),
            }
        }
        (Method::POST, "/_sszgate/resume") => {
            control.resume();
            (StatusCode::OK, control_state(config))
        }
        (method, path) => error(
            StatusCode::METHOD_NOT_ALLOWED,
            format!(
                "{method} {path}: see GET /_sszgate/rules, POST and DELETE /_sszgate/rules, POST /_sszgate/pause and /_sszgate/resume"
            ),
        ),
    }
}

/// True when no token is set, or the request carries it as a bearer token.
fn authorized(headers: &http::HeaderMap, token: Option<&str>) -> bool {
    let Some(token) = token else { return true };
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| bool::from(given.as_bytes().ct_eq(token.as_bytes())))
}
