//! The snooping relay: one port for JSON-RPC (`POST /`, single and batch), REST-SSZ
//! (`/engine/v1/...`) and WebSocket upgrades, over HTTP/1.1 and h2c.

use std::{
    convert::Infallible,
    future::Future,
    sync::Arc,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited, combinators::UnsyncBoxBody};
use hyper::{body::Incoming, service::service_fn};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use sszgate_engine::{Problem, method};
use sszgate_record::{Capture, ErrorSide, Recorder, Transport};
use tokio::net::TcpListener;

use crate::{
    classify::{self, Class, Refusal},
    tap::{Tap, Timing},
    upstream::{Upstream, UpstreamError},
};

/// The response body type of the relay: a tapped upstream body or a gateway answer.
type ResponseBody = UnsyncBoxBody<Bytes, hyper::Error>;

/// Limits on what a caller may hold of the proxy.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Time a client has to send a request's headers (HTTP/1.1); then the connection closes.
    pub header_timeout: Duration,
    /// Time a client has to send a request's body once its headers are in; then a 408.
    pub body_timeout: Duration,
    /// Calls handled at once; a call beyond that is answered 503 at once (0: no limit).
    pub max_in_flight: usize,
    /// Bytes of a request's head (request line and header fields) accepted; a larger head is
    /// answered 431. The HTTP layer itself buffers at most four times this (HTTP/1.1) and
    /// takes an h2 header list of at most four times this.
    pub max_header_bytes: usize,
    /// Bytes of an EL's answer the gateway reads into memory at most (the bridge, which
    /// translates whole answers) and decodes to at most (the recorder); relayed answers
    /// stream through whatever their size.
    pub max_answer_bytes: usize,
}

/// The default of [`Limits::max_answer_bytes`]: four times the spec's request cap, past the
/// largest legal answer (a getBlobsV2 answer for 128 blobs is about 35 MB of JSON).
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 256 << 20;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_in_flight: 256,
            max_header_bytes: 8 << 10,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        }
    }
}

/// Resolved settings of `sszgate proxy`.
pub struct ProxyConfig {
    /// Timeouts and the in-flight cap.
    pub limits: Limits,
    /// The EL.
    pub upstream: Upstream,
    /// Largest request body accepted, bytes (the spec's `MAX_REQUEST_BODY_SIZE` by default):
    /// the global cap over the per-resource and per-method limits of [`crate::sizes`].
    pub max_body: usize,
    /// The CL name recorded when it sends no `X-Engine-Client-Version`.
    pub cl_label: Option<String>,
    /// What the upstream speaks: REST-SSZ calls to a JSON-RPC upstream are bridged.
    pub upstream_transport: crate::TransportChoice,
    /// The JWT secret: signs the gateway's own upstream calls, verifies the CL's bridged calls.
    pub jwt: Option<crate::JwtSecret>,
    /// `--verify-enforce`: refuse a newPayload whose payload fails verification (a testing
    /// aid; the one case where the forward path decodes a body).
    pub verify_enforce: bool,
    /// `--auth verify`: check every call's JWT against `jwt` (401 otherwise, before the body is
    /// read) and sign upstream calls with the gateway's own token; `false` relays the CL's
    /// token untouched and lets the EL decide.
    pub verify_jwt: bool,
}

/// Headers that describe one hop and are not forwarded (RFC 9110 § 7.6.1), plus `host`, which
/// the client sets for the upstream.
const HOP_BY_HOP: [header::HeaderName; 8] = [
    header::CONNECTION,
    header::HOST,
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

fn forwardable(headers: &HeaderMap) -> impl Iterator<Item = (&header::HeaderName, &HeaderValue)> {
    headers
        .iter()
        .filter(|(name, _)| !HOP_BY_HOP.contains(name) && name.as_str() != "keep-alive")
}

/// Serves the relay on `listener` until `shutdown` resolves; an error only when the listener
/// cannot go on (transient accept errors are backed off from, see [`crate::accept`]), so the
/// caller can end the process rather than keep it alive with a dead port.
///
/// Shutdown protocol: the listener stops accepting; every open connection is told to finish
/// (hyper's graceful shutdown: a call in flight completes, an idle keep-alive connection
/// closes at once); we wait for them and for their tasks (which may still record), at most
/// 30 s. Records of the calls that finished are in the recorder's queue, which its owner
/// drains afterwards.
pub async fn serve(
    listener: TcpListener,
    config: Arc<ProxyConfig>,
    recorder: Arc<Recorder>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut shutdown = std::pin::pin!(shutdown);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let in_flight = Arc::new(tokio::sync::Semaphore::new(
        match config.limits.max_in_flight {
            0 => tokio::sync::Semaphore::MAX_PERMITS,
            n => n,
        },
    ));
    // Every connection task holds a sender; when all are dropped, every task has ended,
    // including what it records after its connection closes (a head refused by hyper).
    let (alive, mut all_ended) = tokio::sync::mpsc::channel::<()>(1);
    let mut acceptor = crate::accept::Acceptor::new(&listener, "engine", recorder.metrics());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = acceptor.accept() => accepted?,
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let (config, recorder, in_flight) = (config.clone(), recorder.clone(), in_flight.clone());
        let header_timeout = config.limits.header_timeout;
        // The HTTP layer's own caps on a head, a few times the checked limit: a head between
        // the two is answered by `handle` in the caller's shape; one past the cap never
        // becomes a request (hyper answers 431; recorded below for HTTP/1.1, where it also
        // closes the connection).
        let hard_head = config
            .limits
            .max_header_bytes
            .saturating_mul(crate::sizes::HARD_HEAD_FACTOR);
        let (h1_buffer, h2_list) = (
            hard_head.max(crate::sizes::MIN_HTTP1_BUFFER),
            hard_head.max(crate::sizes::MIN_H2_HEADER_LIST),
        );
        let connection_recorder = recorder.clone();
        let service = service_fn(move |request| {
            let (config, recorder) = (config.clone(), recorder.clone());
            // A permit per call, held until its answer is handed to hyper (streaming the
            // body goes on without it); none free: answered 503 at once.
            let permit = in_flight.clone().try_acquire_owned();
            async move {
                match permit {
                    Ok(_permit) => handle(request, config, recorder).await,
                    Err(_) => Ok(too_busy(&request, &config, &recorder)),
                }
            }
        });
        let mut builder = auto::Builder::new(TokioExecutor::new());
        builder
            .http1()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(header_timeout)
            .max_buf_size(h1_buffer);
        builder
            .http2()
            .max_header_list_size(u32::try_from(h2_list).unwrap_or(u32::MAX));
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let connection = graceful.watch(connection);
        let recorder = connection_recorder;
        let alive = alive.clone();
        tokio::spawn(async move {
            let _alive = alive;
            if let Err(e) = connection.await {
                if e.downcast_ref::<hyper::Error>()
                    .is_some_and(hyper::Error::is_parse_too_large)
                {
                    record_head_too_large(&recorder, h1_buffer);
                }
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(alive);
    let drained = async {
        graceful.shutdown().await;
        all_ended.recv().await;
    };
    let _ = tokio::time::timeout(Duration::from_secs(30), drained).await;
    Ok(())
}

/// Records a request whose head overflowed the HTTP layer's buffer: hyper answered it 431
/// and closed the connection before there was a request to hand us, so only the fact is known.
fn record_head_too_large(recorder: &Recorder, hard_head: usize) {
    recorder.record(Capture {
        arrival_unix_us: now_unix_us(),
        http_version: "HTTP/1.1",
        transport: Some(Transport::Other),
        status: StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE.as_u16(),
        error_side: Some(ErrorSide::Cl),
        error_message: Some(format!(
            "request head over the {hard_head} bytes the HTTP layer buffers, or over 100 header fields: answered 431 and closed"
        )),
        ..Capture::default()
    });
}

fn now_unix_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

fn header_str(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn http_version(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_2 => "HTTP/2",
        http::Version::HTTP_10 => "HTTP/1.0",
        _ => "HTTP/1.1",
    }
}

fn full(bytes: Bytes) -> ResponseBody {
    Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// The capture of a call as it arrives: time, request line, fork, CL client, encoding.
fn new_capture(request: &Request<Incoming>, config: &ProxyConfig) -> Capture {
    Capture {
        arrival_unix_us: now_unix_us(),
        http_version: http_version(request.version()),
        target: request
            .uri()
            .path_and_query()
            .map_or("/".into(), |pq| pq.as_str().to_string()),
        fork: header_str(request.headers(), method::FORK_HEADER),
        cl_client: header_str(request.headers(), method::CLIENT_VERSION_HEADER)
            .or_else(|| config.cl_label.clone()),
        encodings: (header_str(request.headers(), "content-encoding"), None),
        ..Capture::default()
    }
}

/// The transport a request speaks, judged from its method, path and headers only.
fn transport_of(request: &Request<Incoming>) -> Transport {
    if is_websocket_upgrade(request.headers()) {
        Transport::WebSocket
    } else if classify::is_json_rpc(request.method(), request.uri().path()) {
        Transport::JsonRpc
    } else if request.uri().path().starts_with(method::REST_BASE) {
        Transport::RestSsz
    } else {
        Transport::Other
    }
}

/// One call: read, classify, forward, and answer with a tapped body (or a gateway answer).
async fn handle(
    request: Request<Incoming>,
    config: Arc<ProxyConfig>,
    recorder: Arc<Recorder>,
) -> Result<Response<ResponseBody>, Infallible> {
    let arrived = Instant::now();
    let mut capture = new_capture(&request, &config);
    let head = crate::sizes::head_bytes(&request);
    if head > config.limits.max_header_bytes {
        let json_rpc = classify::is_json_rpc(request.method(), request.uri().path());
        capture.transport = Some(transport_of(&request));
        let refusal = classify::refuse(
            Problem::RequestTooLarge,
            format!(
                "request head of {head} bytes over the limit of {} bytes",
                config.limits.max_header_bytes
            ),
        );
        return Ok(refuse_with_status(
            refusal,
            json_rpc,
            capture,
            arrived,
            &recorder,
            ErrorSide::Cl,
            Some(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE),
        ));
    }
    if config.verify_jwt
        && let Some(refusal) = check_token(&config, request.headers())
    {
        // Refused before the body is read: nothing of an unauthenticated caller is buffered.
        let json_rpc = is_websocket_upgrade(request.headers())
            || classify::is_json_rpc(request.method(), request.uri().path());
        capture.transport = Some(if is_websocket_upgrade(request.headers()) {
            Transport::WebSocket
        } else if json_rpc {
            Transport::JsonRpc
        } else {
            Transport::RestSsz
        });
        return Ok(refuse_with_status(
            refusal,
            json_rpc,
            capture,
            arrived,
            &recorder,
            ErrorSide::Cl,
            Some(StatusCode::UNAUTHORIZED),
        ));
    }
    if is_websocket_upgrade(request.headers()) {
        return Ok(crate::proxy::websocket(request, config, recorder, capture, arrived).await);
    }
    let (parts, body) = request.into_parts();
    let json_rpc_path = classify::is_json_rpc(&parts.method, parts.uri.path());
    capture.transport = Some(if json_rpc_path {
        Transport::JsonRpc
    } else if parts.uri.path().starts_with(method::REST_BASE) {
        Transport::RestSsz
    } else {
        Transport::Other
    });

    // The body limit of this call: the resource's for REST-SSZ (known from the path), the
    // global cap for JSON-RPC (its method is inside the body; each call is held to its own
    // method's limit once scanned, in `classify`).
    let route = (!json_rpc_path)
        .then(|| method::Route::parse(parts.method.as_str(), &capture.target).ok())
        .flatten();
    let (body_limit, limit_of) = match &route {
        Some(route) => (
            crate::sizes::rest_body_limit(route.resource).min(config.max_body),
            format!(" for {} {}", parts.method, parts.uri.path()),
        ),
        None => (config.max_body, String::new()),
    };
    capture.request_limit = body_limit;
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(declared) = declared
        && declared > body_limit as u64
    {
        // Refused from the Content-Length alone: not a byte of the body is read.
        capture.route = route;
        let refusal = classify::refuse(
            Problem::RequestTooLarge,
            format!(
                "request body of {declared} bytes over the limit of {body_limit} bytes{limit_of}"
            ),
        );
        return Ok(refuse(
            refusal,
            json_rpc_path,
            capture,
            arrived,
            &recorder,
            ErrorSide::Cl,
        ));
    }

    // Read the body, bounded in size and in time: nothing over the limit is buffered or
    // forwarded, and a client that trickles its body is cut off.
    let read = tokio::time::timeout(
        config.limits.body_timeout,
        Limited::new(body, body_limit).collect(),
    )
    .await;
    let Ok(read) = read else {
        let refusal = classify::refuse(
            Problem::InvalidRequest,
            format!(
                "the request body did not arrive within {:?}",
                config.limits.body_timeout
            ),
        );
        return Ok(refuse_with_status(
            refusal,
            json_rpc_path,
            capture,
            arrived,
            &recorder,
            ErrorSide::Cl,
            Some(StatusCode::REQUEST_TIMEOUT),
        ));
    };
    let body = match read {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            // Over the limit: 413. Anything else is broken HTTP framing (a bad chunk size, a
            // body cut short): 400 in either transport, not a JSON-RPC error in a 200.
            let (problem, message, status) = if e
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                capture.route = route;
                (
                    Problem::RequestTooLarge,
                    format!("request body over the limit of {body_limit} bytes{limit_of}"),
                    None,
                )
            } else {
                (
                    Problem::InvalidRequest,
                    format!("reading the request body failed: {e}"),
                    Some(StatusCode::BAD_REQUEST),
                )
            };
            let refusal = classify::refuse(problem, message);
            return Ok(refuse_with_status(
                refusal,
                json_rpc_path,
                capture,
                arrived,
                &recorder,
                ErrorSide::Cl,
                status,
            ));
        }
    };
    capture.request = body.clone();

    // An EL chosen by asking (auto) is asked again after it was unreachable.
    config
        .upstream_transport
        .refresh(&config.upstream, config.jwt.as_ref())
        .await;
    let class = match classify::classify(&parts.method, &capture.target, &parts.headers, &body) {
        Ok(class) => class,
        Err(mut refusal) => {
            if refusal.id.is_none() && json_rpc_path {
                refusal.id = classify::first_id(&body);
            }
            return Ok(refuse(
                refusal,
                json_rpc_path,
                capture,
                arrived,
                &recorder,
                ErrorSide::Cl,
            ));
        }
    };
    capture.transport = Some(class.transport());
    match &class {
        Class::JsonRpc { method } => capture.method = method.clone(),
        Class::Rest(route) => capture.route = Some(route.clone()),
    }

    if config.verify_enforce
        && let Some(refusal) = crate::enforce::check(&class, &parts.headers, &body)
    {
        return Ok(refuse(
            refusal,
            json_rpc_path,
            capture,
            arrived,
            &recorder,
            ErrorSide::Gateway,
        ));
    }

    // The bridge, when the two sides speak different transports: the call is answered here.
    let bridged = match &class {
        Class::JsonRpc { .. }
            if config.upstream_transport.get() == crate::UpstreamTransport::Ssz =>
        {
            crate::bridge::json_to_rest(&parts.headers, &body, &config)
                .await
                .map(|(bridged, id)| crate::bridge::as_json_rpc(bridged, id.as_deref()))
        }
        Class::Rest(route) if config.upstream_transport.get() == crate::UpstreamTransport::Json => {
            Some(
                crate::bridge::rest_to_json(
                    &parts.method,
                    &capture.target,
                    &parts.headers,
                    route,
                    body.clone(),
                    &config,
                )
                .await,
            )
        }
        _ => None,
    };
    if let Some(bridged) = bridged {
        let response = crate::bridge::into_response(
            bridged,
            &mut capture,
            crate::bridge::negotiate(&parts.headers),
        );
        capture.total_us = arrived.elapsed().as_micros() as u64;
        recorder.record(capture);
        let (parts, body) = response.into_parts();
        return Ok(Response::from_parts(
            parts,
            body.map_err(|never| match never {}).boxed_unsync(),
        ));
    }

    // Forward: same method, target, headers (less hop-by-hop), body byte for byte.
    let mut upstream_request = Request::builder()
        .method(parts.method.clone())
        .uri(config.upstream.uri(&capture.target));
    for (name, value) in forwardable(&parts.headers) {
        if config.verify_jwt && name == header::AUTHORIZATION {
            continue;
        }
        upstream_request = upstream_request.header(name, value);
    }
    if let Some(token) = own_token(&config) {
        upstream_request = upstream_request.header(header::AUTHORIZATION, token);
    }
    let upstream_request = upstream_request
        .body(Full::new(body))
        .expect("a copy of a valid request");
    let sent = Instant::now();
    let response = match config.upstream.send(upstream_request).await {
        Ok(response) => response,
        Err(e) => {
            config.upstream_transport.mark_unreachable();
            let problem = match e {
                UpstreamError::Timeout(..) => Problem::Internal,
                UpstreamError::Failed(..) => Problem::Internal,
            };
            let status = match e {
                UpstreamError::Timeout(..) => StatusCode::GATEWAY_TIMEOUT,
                UpstreamError::Failed(..) => StatusCode::BAD_GATEWAY,
            };
            let id = if json_rpc_path {
                classify::first_id(&capture.request)
            } else {
                None
            };
            let refusal = Refusal {
                problem,
                message: e.to_string(),
                id,
            };
            return Ok(refuse_with_status(
                refusal,
                json_rpc_path,
                capture,
                arrived,
                &recorder,
                ErrorSide::El,
                Some(status),
            ));
        }
    };
    let head = Instant::now();
    let (mut parts, mut incoming) = response.into_parts();
    // The first body frame is awaited before the head is relayed: once the CL has a head,
    // an EL that hangs up (or goes silent) could only show as a body cut short; before it,
    // the CL gets an answer that says what happened. The first frame usually comes with the
    // head, so this costs no round trip.
    let first = if http_body::Body::is_end_stream(&incoming) {
        None
    } else {
        let failed = |message: String, status: StatusCode, capture: Capture| {
            config.upstream_transport.mark_unreachable();
            let refusal = Refusal {
                problem: Problem::Internal,
                message,
                id: json_rpc_path
                    .then(|| classify::first_id(&capture.request))
                    .flatten(),
            };
            refuse_with_status(
                refusal,
                json_rpc_path,
                capture,
                arrived,
                &recorder,
                ErrorSide::El,
                Some(status),
            )
        };
        let status = parts.status;
        match tokio::time::timeout(config.upstream.timeout(), incoming.frame()).await {
            Err(_) => {
                let message = format!(
                    "upstream {} sent its answer head ({status}) but no body within {:?}",
                    config.upstream.url(),
                    config.upstream.timeout()
                );
                return Ok(failed(message, StatusCode::GATEWAY_TIMEOUT, capture));
            }
            Ok(Some(Err(e))) => {
                let message = format!(
                    "upstream {} failed after its answer head ({status}), before any body byte: {e}",
                    config.upstream.url()
                );
                return Ok(failed(message, StatusCode::BAD_GATEWAY, capture));
            }
            Ok(Some(Ok(frame))) => Some(frame),
            Ok(None) => None,
        }
    };
    capture.status = parts.status.as_u16();
    capture.encodings.1 = header_str(&parts.headers, "content-encoding");
    for name in HOP_BY_HOP {
        parts.headers.remove(name);
    }
    let tap = Tap::new(
        incoming,
        capture,
        Timing {
            arrived,
            sent,
            head,
        },
        recorder,
    )
    .with_first(first);
    Ok(Response::from_parts(parts, tap.boxed_unsync()))
}

/// Answers a request the gateway refuses, in the caller's transport, and records it.
fn refuse(
    refusal: Refusal,
    json_rpc: bool,
    capture: Capture,
    arrived: Instant,
    recorder: &Recorder,
    side: ErrorSide,
) -> Response<ResponseBody> {
    refuse_with_status(refusal, json_rpc, capture, arrived, recorder, side, None)
}

/// As [`refuse`], with the HTTP status given by the caller (upstream failures: 502, 504)
/// rather than taken from the problem; the record carries the status the CL gets.
fn refuse_with_status(
    refusal: Refusal,
    json_rpc: bool,
    mut capture: Capture,
    arrived: Instant,
    recorder: &Recorder,
    side: ErrorSide,
    status: Option<StatusCode>,
) -> Response<ResponseBody> {
    let (problem_status, content_type, body) = if json_rpc {
        // JSON-RPC errors travel in a 200 answer, as JSON-RPC servers send them, except what
        // HTTP itself must say (too large, upstream failures: set by the caller).
        let status = if refusal.problem == Problem::RequestTooLarge {
            StatusCode::PAYLOAD_TOO_LARGE
        } else {
            StatusCode::OK
        };
        (
            status,
            method::JSON_CONTENT_TYPE,
            classify::json_rpc_error(&refusal),
        )
    } else {
        let status =
            StatusCode::from_u16(refusal.problem.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
        (
            status,
            method::PROBLEM_CONTENT_TYPE,
            classify::problem_json(&refusal),
        )
    };
    let status = status.unwrap_or(problem_status);
    capture.status = status.as_u16();
    capture.error_side = Some(side);
    capture.error_message = Some(refusal.message.clone());
    capture.response = vec![body.clone()];
    capture.total_us = arrived.elapsed().as_micros() as u64;
    recorder.record(capture);
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(full(body))
        .expect("a valid response")
}

/// The answer when every in-flight permit is taken: 503 in the caller's shape, recorded.
fn too_busy(
    request: &Request<Incoming>,
    config: &ProxyConfig,
    recorder: &Recorder,
) -> Response<ResponseBody> {
    let json_rpc = classify::is_json_rpc(request.method(), request.uri().path());
    let capture = Capture {
        transport: Some(if json_rpc {
            Transport::JsonRpc
        } else {
            Transport::RestSsz
        }),
        ..new_capture(request, config)
    };
    let refusal = classify::refuse(
        Problem::Internal,
        format!(
            "{} calls in flight already: try again",
            config.limits.max_in_flight
        ),
    );
    refuse_with_status(
        refusal,
        json_rpc,
        capture,
        Instant::now(),
        recorder,
        ErrorSide::Gateway,
        Some(StatusCode::SERVICE_UNAVAILABLE),
    )
}

/// `--auth verify`: the refusal for a call whose JWT is missing or not valid (HS256 with the
/// shared secret, `iat` within ±60 s).
fn check_token(config: &ProxyConfig, headers: &HeaderMap) -> Option<Refusal> {
    let refuse =
        |why: String| classify::refuse(Problem::InvalidRequest, format!("JWT refused: {why}"));
    let Some(secret) = &config.jwt else {
        return Some(refuse("the gateway has no secret to verify with".into()));
    };
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match token {
        None => Some(refuse("no bearer token".into())),
        Some(token) => secret.verify(token).err().map(refuse),
    }
}

/// The `Authorization` value of the gateway's own token, when it signs upstream calls.
fn own_token(config: &ProxyConfig) -> Option<String> {
    config
        .verify_jwt
        .then(|| config.jwt.as_ref().map(|s| format!("Bearer {}", s.token())))
        .flatten()
}

fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    let has = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        })
    };
    has(header::CONNECTION, "upgrade") && has(header::UPGRADE, "websocket")
}

/// Relays a WebSocket upgrade: the handshake goes upstream (without `Sec-WebSocket-Extensions`,
/// so both sides speak plain frames the relay can read); after both sides switch protocols,
/// messages are relayed one by one, unchanged, and every JSON-RPC call on the socket is
/// recorded when its answer passes (matched by id).
async fn websocket(
    request: Request<Incoming>,
    config: Arc<ProxyConfig>,
    recorder: Arc<Recorder>,
    mut capture: Capture,
    arrived: Instant,
) -> Response<ResponseBody> {
    capture.transport = Some(Transport::WebSocket);
    let mut upstream_request = Request::builder()
        .method(request.method().clone())
        .uri(config.upstream.uri(&capture.target));
    for (name, value) in request
        .headers()
        .iter()
        .filter(|(n, _)| *n != header::HOST && n.as_str() != "sec-websocket-extensions")
        .filter(|(n, _)| !(config.verify_jwt && *n == header::AUTHORIZATION))
    {
        upstream_request = upstream_request.header(name, value);
    }
    if let Some(token) = own_token(&config) {
        upstream_request = upstream_request.header(header::AUTHORIZATION, token);
    }
    let upstream_request = upstream_request
        .body(Full::new(Bytes::new()))
        .expect("a copy of a valid request");
    let response = match config.upstream.send(upstream_request).await {
        Ok(response) => response,
        Err(e) => {
            let refusal = classify::refuse(Problem::Internal, e.to_string());
            return refuse_with_status(
                refusal,
                true,
                capture,
                arrived,
                &recorder,
                ErrorSide::El,
                Some(StatusCode::BAD_GATEWAY),
            );
        }
    };
    capture.status = response.status().as_u16();
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        // The EL refused the upgrade (401 without a token, say): relay its answer as it is.
        let (parts, body) = response.into_parts();
        let sent = Instant::now();
        let tap = Tap::new(
            body,
            capture,
            Timing {
                arrived,
                sent,
                head: sent,
            },
            recorder,
        );
        return Response::from_parts(parts, tap.boxed_unsync());
    }
    let mut answer = Response::builder().status(StatusCode::SWITCHING_PROTOCOLS);
    for (name, value) in response.headers() {
        answer = answer.header(name, value);
    }
    tokio::spawn(async move {
        match tokio::try_join!(hyper::upgrade::on(request), hyper::upgrade::on(response)) {
            Ok((client, upstream)) => crate::ws::relay(client, upstream, capture, recorder).await,
            Err(e) => tracing::debug!(error = %e, "websocket upgrade failed"),
        }
    });
    answer.body(full(Bytes::new())).expect("a valid response")
}
