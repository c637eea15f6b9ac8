//! The snooping relay: one port for JSON-RPC (`POST /`, single and batch), REST-SSZ
//! (`/engine/v1/...`) and WebSocket upgrades, over HTTP/1.1 and h2c. Here: serving
//! connections, the stages of a call (`handle`), relaying, and answering refusals.
//!
//! Not here: what a call is (`call` from its head, `classify` from its body), translating
//! between transports (`bridge`), the WebSocket message relay (`ws`).

use std::{
    future::Future,
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use hyper::{body::Incoming, service::service_fn};
use hyper_util::rt::TokioIo;
use sszgate_engine::{Problem, method};
use sszgate_record::{Capture, ErrorSide, Recorder, Transport};
use tokio::net::TcpListener;

use crate::{
    call::{Call, header_str, now_unix_us},
    classify::{self, Refusal},
    faults::Stage,
    identify::{ClIdentities, Peer},
    jwt::Denied,
    tap::{Tap, Timing},
    upstream::{Upstream, UpstreamError},
};

/// The response body type of the relay: a tapped upstream body or a gateway answer.
pub(crate) type ResponseBody = UnsyncBoxBody<Bytes, hyper::Error>;

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
    /// answered 431. The HTTP layer itself takes an h2 header list of at most four times
    /// this, and refuses an HTTP/1.1 head once it has buffered four times this; as it checks
    /// between reads and its buffer grows by doubling, a head that arrives in one read can be
    /// parsed whole up to twice that, and is then refused by the proxy's own check.
    pub max_header_bytes: usize,
    /// Bytes of an EL's answer the gateway reads into memory at most (the bridge, which
    /// translates whole answers) and decodes to at most (the recorder); relayed answers
    /// stream through whatever their size.
    pub max_answer_bytes: usize,
}

/// The default of [`Limits::max_answer_bytes`] (the client's bound on an EL's answer).
pub const DEFAULT_MAX_ANSWER_BYTES: usize = sszgate_client::DEFAULT_MAX_ANSWER_BYTES;

impl Default for Limits {
    fn default() -> Limits {
        let serve = sszgate_serve::Limits::default();
        Limits {
            header_timeout: serve.header_timeout,
            body_timeout: serve.body_timeout,
            max_in_flight: serve.max_in_flight,
            max_header_bytes: serve.max_header_bytes,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        }
    }
}

impl Limits {
    /// The connection limits, as every server of sszgate applies them.
    pub fn connection(&self) -> sszgate_serve::Limits {
        sszgate_serve::Limits {
            header_timeout: self.header_timeout,
            body_timeout: self.body_timeout,
            max_in_flight: self.max_in_flight,
            max_header_bytes: self.max_header_bytes,
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
    /// Flow control and fault injection: the pause and the rules (`sszgate ctl`).
    pub control: crate::ControlPoint,
    /// The bearer token the control address asks of calls that change behaviour (pause,
    /// rules); without one, those are taken from anyone who can reach the control address
    /// (loopback by default).
    pub control_token: Option<String>,
    /// `--auth verify`: check every call's JWT against `jwt` (401 otherwise, before the body is
    /// read) and sign upstream calls with the gateway's own token; `false` relays the CL's
    /// token untouched and lets the EL decide.
    pub verify_jwt: bool,
    /// A front before the relay (its own endpoints, and a view of every relayed call), if any.
    pub front: Option<Arc<dyn crate::Front>>,
    /// Plain calls' answers moved socket to socket (`splice(2)`, Linux) instead of through
    /// hyper's buffers; every other call takes the general path either way.
    pub splice: bool,
}

/// Headers that describe one hop and are not forwarded (RFC 9110 § 7.6.1), plus `host`, which
/// the client sets for the upstream.
pub(crate) const HOP_BY_HOP: [header::HeaderName; 8] = [
    header::CONNECTION,
    header::HOST,
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// A request's headers that go on to the EL: all but [`HOP_BY_HOP`] and `keep-alive`.
pub(crate) fn forwardable(
    headers: &HeaderMap,
) -> impl Iterator<Item = (&header::HeaderName, &HeaderValue)> {
    headers
        .iter()
        .filter(|(name, _)| !HOP_BY_HOP.contains(name) && name.as_str() != "keep-alive")
}

/// Serves the relay on `listener` until `shutdown` resolves; an error only when the listener
/// cannot go on (transient accept errors are backed off from, see [`sszgate_serve::Acceptor`]), so the
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
    let (stopping, stopping_rx) = tokio::sync::watch::channel(false);
    let limits = config.limits.connection();
    // Every connection task holds a sender; when all are dropped, every task has ended,
    // including what it records after its connection closes (a head refused by hyper).
    let (alive, mut all_ended) = tokio::sync::mpsc::channel::<()>(1);
    let count = |listener, kind| recorder.metrics().accept_error(listener, kind);
    let mut acceptor = sszgate_serve::Acceptor::new(&listener, "engine", &count);
    let shared = Arc::new(Shared {
        spliced: crate::splice::Spliced::for_config(&config),
        config,
        recorder: recorder.clone(),
        in_flight: limits.in_flight(),
        limits,
        identities: Arc::new(ClIdentities::default()),
    });
    loop {
        let (stream, peer) = tokio::select! {
            accepted = acceptor.accept() => accepted?,
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let connection = Connection {
            shared: shared.clone(),
            peer,
            watcher: graceful.watcher(),
            stopping: stopping_rx.clone(),
            guard: alive.clone(),
        };
        tokio::spawn(connection.run(stream));
    }
    drop(alive);
    let _ = stopping.send(true);
    let drained = async {
        graceful.shutdown().await;
        all_ended.recv().await;
    };
    let _ = tokio::time::timeout(Duration::from_secs(30), drained).await;
    Ok(())
}

/// What every connection of one relay port shares.
pub(crate) struct Shared {
    pub(crate) config: Arc<ProxyConfig>,
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) limits: sszgate_serve::Limits,
    /// Calls handled at once: a permit per call until its answer's head is handed over.
    pub(crate) in_flight: sszgate_serve::InFlight,
    identities: Arc<ClIdentities>,
    /// The spliced relay's upstream connections, when answers' bodies are spliced.
    pub(crate) spliced: Option<crate::splice::Spliced>,
}

/// One accepted connection, until it closes.
pub(crate) struct Connection {
    pub(crate) shared: Arc<Shared>,
    pub(crate) peer: std::net::SocketAddr,
    watcher: hyper_util::server::graceful::Watcher,
    /// Turns true when the port shuts down: an idle connection then closes.
    pub(crate) stopping: tokio::sync::watch::Receiver<bool>,
    /// Held until the connection's task ends (see `serve`).
    guard: tokio::sync::mpsc::Sender<()>,
}

impl Connection {
    /// Serves the connection: spliced while its calls allow it (see `splice`), through
    /// hyper otherwise.
    async fn run(self, stream: tokio::net::TcpStream) {
        if self.shared.spliced.is_some() {
            crate::splice::serve_connection(stream, self).await;
        } else {
            self.serve_http(stream).await;
        }
    }

    /// A guard the port's shutdown waits for, for work of this connection that outlives it
    /// (the spliced relay's record of an answer, made after the answer ended).
    pub(crate) fn alive(&self) -> tokio::sync::mpsc::Sender<()> {
        self.guard.clone()
    }

    /// The caller, as `identify` knows it.
    pub(crate) fn from(&self) -> Peer {
        Peer {
            ip: self.peer.ip(),
            identities: self.shared.identities.clone(),
        }
    }

    /// Serves the rest of the connection with hyper: HTTP/1.1 and h2c, every stage of a call.
    pub(crate) async fn serve_http<I>(self, io: I)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let Connection {
            shared,
            peer,
            watcher,
            guard: _guard,
            ..
        } = self;
        let from = Peer {
            ip: peer.ip(),
            identities: shared.identities.clone(),
        };
        // The HTTP layer's own caps on a head, a few times the checked limit: a head between
        // the two is answered by `handle` in the caller's shape; one past the cap never
        // becomes a request (hyper answers 431; recorded below for HTTP/1.1, where it also
        // closes the connection).
        let h1_buffer = shared.limits.http1_buffer();
        let (config, recorder, in_flight) = (
            shared.config.clone(),
            shared.recorder.clone(),
            shared.in_flight.clone(),
        );
        let service = service_fn(move |request| {
            let (config, recorder, from) = (config.clone(), recorder.clone(), from.clone());
            // A permit per call, held until its answer is handed to hyper (streaming the
            // body goes on without it); none free: answered 503 at once.
            let permit = in_flight.try_enter();
            let busy = in_flight.busy_message();
            let request = match &config.front {
                Some(front) => match front.intercept(request) {
                    Ok(answered) => {
                        let answered = Ok(answered.map(full_front));
                        return futures_util::future::Either::Left(std::future::ready(answered));
                    }
                    Err(request) => request,
                },
                None => request,
            };
            futures_util::future::Either::Right(async move {
                match permit {
                    Some(_permit) => handle(request, config, recorder, from).await,
                    None => Ok(too_busy(&request, busy, &config, &recorder, &from)),
                }
            })
        });
        let connection = shared
            .limits
            .builder()
            .serve_connection_with_upgrades(TokioIo::new(io), service)
            .into_owned();
        if let Err(e) = watcher.watch(connection).await {
            if e.downcast_ref::<hyper::Error>()
                .is_some_and(hyper::Error::is_parse_too_large)
            {
                record_head_too_large(&shared.recorder, h1_buffer);
            }
            tracing::debug!(%peer, error = %e, "connection ended with an error");
        }
    }
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

/// A front's own answer as a relay body.
fn full_front(body: crate::front::FrontBody) -> ResponseBody {
    body.map_err(|never| match never {}).boxed_unsync()
}

fn full(bytes: Bytes) -> ResponseBody {
    Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// One call, as a sequence of stages: admitted from its head (head size, JWT), then from its
/// body (read once, bounded; classified once), then dispatched (WebSocket, bridge either way,
/// or relay). A stage that refuses the call ends it with [`refuse`].
async fn handle(
    request: Request<Incoming>,
    config: Arc<ProxyConfig>,
    recorder: Arc<Recorder>,
    peer: Peer,
) -> Result<Response<ResponseBody>, Dropped> {
    let mut call = Call::from_head(&request, &config, Some(&peer));
    if let Err(refusal) = admit_head(&request, &config) {
        return Ok(refuse(call, refusal, &recorder));
    }
    if call.transport == Transport::WebSocket {
        return Ok(websocket(request, call, config, recorder).await);
    }
    let (parts, body) = request.into_parts();
    if let Err(refusal) = admit_body(&mut call, &parts.headers, body, &config).await {
        return Ok(refuse(call, refusal, &recorder));
    }
    call.learn_cl(Some(&peer));
    let call = match crate::faults::stage(call, &config, &recorder).await {
        Stage::Go(call) => call,
        Stage::Corrupt(call, pointer, value) => {
            return Ok(relay_corrupted(call, parts, &config, &recorder, &pointer, value).await);
        }
        Stage::Answered(response) => return Ok(response),
        Stage::Drop => return Err(Dropped),
    };
    Ok(dispatch(call, parts, config, recorder).await)
}

/// A call whose connection a control rule closes without an answer: returned to the HTTP
/// layer as the service's error, which closes the connection (HTTP/1.1) or resets the
/// stream (HTTP/2).
#[derive(Debug)]
pub(crate) struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by a control rule")
    }
}

impl std::error::Error for Dropped {}

/// Relays a call whose answer a rule corrupts: the answer is read whole (bounded, decoded),
/// its `result` changed at `pointer`, and sent as plain JSON. An answer that cannot be
/// changed is sent as it came, and its record says why.
async fn relay_corrupted(
    mut call: Call,
    parts: http::request::Parts,
    config: &ProxyConfig,
    recorder: &Recorder,
    pointer: &str,
    value: serde_json::Value,
) -> Response<ResponseBody> {
    let request = upstream_request(&call, parts, config);
    let answer = match config.upstream.send(request).await {
        Ok(response) => sszgate_client::answer::read(response, config.limits.max_answer_bytes)
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let (status, answer) = match answer {
        Ok(answer) => answer,
        Err(e) => {
            let refusal = classify::refuse(Problem::Internal, e).by(ErrorSide::El);
            return refuse(call, refusal.with_status(StatusCode::BAD_GATEWAY), recorder);
        }
    };
    let body = match crate::faults::corrupt(&answer, pointer, value) {
        Ok(changed) => Bytes::from(changed),
        Err(why) => {
            if let Some(note) = &mut call.injected {
                note.push_str(&format!(" (not applied: {why})"));
            }
            answer
        }
    };
    crate::faults::answer(
        call,
        status,
        Some(method::JSON_CONTENT_TYPE),
        body,
        recorder,
    )
}

/// What the head alone can refuse: a head over the limit, and (`--auth verify`) a call
/// without a valid JWT, refused before the body is read: nothing of an unauthenticated
/// caller is buffered.
fn admit_head(request: &Request<Incoming>, config: &ProxyConfig) -> Result<(), Refusal> {
    let head = sszgate_serve::head_bytes(request);
    if head > config.limits.max_header_bytes {
        let message = format!(
            "request head of {head} bytes over the limit of {} bytes",
            config.limits.max_header_bytes
        );
        let refusal = classify::refuse(Problem::RequestTooLarge, message);
        return Err(refusal.with_status(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE));
    }
    if !config.verify_jwt {
        return Ok(());
    }
    let why = match crate::jwt::authenticate(config.jwt.as_ref(), request.headers()) {
        Ok(_) => return Ok(()),
        Err(Denied::NoSecret) => "the gateway has no secret to verify with".to_string(),
        Err(Denied::Refused(why)) => why,
    };
    let refusal = classify::refuse(Problem::InvalidRequest, format!("JWT refused: {why}"));
    Err(refusal.with_status(StatusCode::UNAUTHORIZED))
}

/// The body: refused from its `Content-Length` alone when that is over the call's limit,
/// else read (bounded in size and in time), then classified and, with `--verify-enforce`,
/// checked.
async fn admit_body(
    call: &mut Call,
    headers: &HeaderMap,
    body: Incoming,
    config: &ProxyConfig,
) -> Result<(), Refusal> {
    if let Some(declared) = sszgate_serve::declared_length(headers)
        && declared > call.body_limit as u64
    {
        // Refused from the Content-Length alone: not a byte of the body is read.
        let message = format!(
            "request body of {declared} bytes over the limit of {} bytes{}",
            call.body_limit,
            call.limit_of()
        );
        return Err(classify::refuse(Problem::RequestTooLarge, message));
    }
    call.body = read_body(call, body, config.limits.body_timeout).await?;
    // An EL chosen by asking (auto) is asked again after it was unreachable.
    config
        .upstream_transport
        .refresh(&config.upstream, config.jwt.as_ref())
        .await;
    classify::classify(call, headers)?;
    match config.verify_enforce {
        true => crate::enforce::check(call).map_or(Ok(()), Err),
        false => Ok(()),
    }
}

/// Reads a body, bounded in size and in time: nothing over the limit is buffered or
/// forwarded, and a client that trickles its body is cut off.
async fn read_body(call: &Call, body: Incoming, timeout: Duration) -> Result<Bytes, Refusal> {
    let limit = call.body_limit;
    match sszgate_serve::read_bounded(body, limit, timeout).await {
        Ok(body) => Ok(body),
        // Over the limit: 413 (its own status in either transport).
        Err(e @ sszgate_serve::BodyError::TooLarge { .. }) => {
            let message = format!("{e}{}", call.limit_of());
            Err(classify::refuse(Problem::RequestTooLarge, message))
        }
        // Too slow: 408. Broken HTTP framing (a bad chunk size, a body cut short): 400 in
        // either transport, not a JSON-RPC error in a 200.
        Err(e) => {
            Err(classify::refuse(Problem::InvalidRequest, e.to_string()).with_status(e.status()))
        }
    }
}

/// Sends an admitted call on its way: answered by the bridge when the two sides speak
/// different transports, relayed otherwise.
async fn dispatch(
    call: Call,
    parts: http::request::Parts,
    config: Arc<ProxyConfig>,
    recorder: Arc<Recorder>,
) -> Response<ResponseBody> {
    let Some(direction) = crate::bridge::direction(&call, config.upstream_transport.get()) else {
        return relay(call, parts, config, recorder).await;
    };
    let bridged = crate::bridge::answer(direction, &call, &parts.headers, &config).await;
    let arrived = call.arrived;
    let mut capture = call.into_capture();
    let encoding = crate::bridge::negotiate(&parts.headers);
    let response = crate::bridge::into_response(bridged, &mut capture, encoding);
    capture.total_us = arrived.elapsed().as_micros() as u64;
    recorder.record(capture);
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, body.map_err(|never| match never {}).boxed_unsync())
}

/// Relays a call: same method, target, headers (less hop-by-hop), body byte for byte; the
/// answer streams back through a tap that records it when it ends.
async fn relay(
    call: Call,
    parts: http::request::Parts,
    config: Arc<ProxyConfig>,
    recorder: Arc<Recorder>,
) -> Response<ResponseBody> {
    let (method_of, request_type) = (
        parts.method.clone(),
        header_str(&parts.headers, "content-type"),
    );
    let request = upstream_request(&call, parts, &config);
    let sent = Instant::now();
    let response = match config.upstream.send(request).await {
        Ok(response) => response,
        Err(e) => return upstream_failed(call, e, method_of, request_type, &config, &recorder),
    };
    let head = Instant::now();
    let (mut parts, mut incoming) = response.into_parts();
    let first = match first_frame(&mut incoming, parts.status, &config).await {
        Ok(first) => first,
        Err(refusal) => {
            config.upstream_transport.mark_unreachable();
            return refuse(call, refusal, &recorder);
        }
    };
    let arrived = call.arrived;
    let mut capture = call.into_capture();
    capture.status = parts.status.as_u16();
    capture.encodings.1 = header_str(&parts.headers, "content-encoding");
    for name in HOP_BY_HOP {
        parts.headers.remove(name);
    }
    let timing = Timing {
        arrived,
        sent,
        head,
    };
    let mut tap = Tap::new(incoming, capture, timing, recorder).with_first(first);
    if let Some(front) = &config.front {
        let head = crate::front::ExchangeHead {
            method: method_of,
            request_content_type: request_type,
            response_content_type: header_str(&parts.headers, "content-type"),
        };
        tap = tap.with_observer(front.clone(), head);
    }
    Response::from_parts(parts, tap.boxed_unsync())
}

/// The answer to a relayed call whose EL could not be reached or did not answer in time: 502
/// or 504 in the caller's shape, recorded, and shown to the front as a failed exchange.
pub(crate) fn upstream_failed(
    call: Call,
    e: UpstreamError,
    method_of: http::Method,
    request_type: Option<String>,
    config: &ProxyConfig,
    recorder: &Recorder,
) -> Response<ResponseBody> {
    config.upstream_transport.mark_unreachable();
    let status = match e {
        UpstreamError::Timeout(..) => StatusCode::GATEWAY_TIMEOUT,
        UpstreamError::Failed(..) => StatusCode::BAD_GATEWAY,
    };
    if let Some(front) = &config.front {
        front.observe(crate::front::Exchange {
            method: method_of,
            target: call.target.clone(),
            request_content_type: request_type,
            request: call.body.clone(),
            status: status.as_u16(),
            response_content_type: None,
            response_encoding: None,
            response: Vec::new(),
            response_len: 0,
            duration: call.arrived.elapsed(),
            failure: Some(e.to_string()),
        });
    }
    let refusal = classify::refuse(Problem::Internal, e.to_string());
    refuse(
        call,
        refusal.by(ErrorSide::El).with_status(status),
        recorder,
    )
}

/// The request to the EL for a relayed call: the CL's, less hop-by-hop headers, and with the
/// gateway's own token instead of the CL's under `--auth verify`.
fn upstream_request(
    call: &Call,
    parts: http::request::Parts,
    config: &ProxyConfig,
) -> Request<Full<Bytes>> {
    let mut request = Request::builder()
        .method(parts.method)
        .uri(config.upstream.uri(&call.target));
    for (name, value) in forwardable(&parts.headers) {
        if config.verify_jwt && name == header::AUTHORIZATION {
            continue;
        }
        request = request.header(name, value);
    }
    if let Some(token) = own_token(config) {
        request = request.header(header::AUTHORIZATION, token);
    }
    request
        .body(Full::new(call.body.clone()))
        .expect("a copy of a valid request")
}

/// The first body frame of an EL's answer, awaited before the head is relayed: once the CL
/// has a head, an EL that hangs up (or goes silent) could only show as a body cut short;
/// before it, the CL gets an answer that says what happened. The first frame usually comes
/// with the head, so this costs no round trip.
async fn first_frame(
    incoming: &mut Incoming,
    status: StatusCode,
    config: &ProxyConfig,
) -> Result<Option<http_body::Frame<Bytes>>, Refusal> {
    if http_body::Body::is_end_stream(incoming) {
        return Ok(None);
    }
    let timeout = config.upstream.timeout();
    match tokio::time::timeout(timeout, incoming.frame()).await {
        Ok(Some(Ok(frame))) => Ok(Some(frame)),
        Ok(None) => Ok(None),
        Err(_) => Err(no_first_byte(config, status, None)),
        Ok(Some(Err(e))) => Err(no_first_byte(config, status, Some(e.to_string()))),
    }
}

/// The refusal of an answer whose head came but whose body did not: it failed (`why`) or
/// did not start within the upstream timeout (`None`). Said the same by either relay.
pub(crate) fn no_first_byte(
    config: &ProxyConfig,
    status: StatusCode,
    why: Option<String>,
) -> Refusal {
    let (url, timeout) = (config.upstream.url(), config.upstream.timeout());
    let (message, code) = match why {
        None => (
            format!(
                "upstream {url} sent its answer head ({status}) but no body within {timeout:?}"
            ),
            StatusCode::GATEWAY_TIMEOUT,
        ),
        Some(e) => (
            format!(
                "upstream {url} failed after its answer head ({status}), before any body byte: {e}"
            ),
            StatusCode::BAD_GATEWAY,
        ),
    };
    let refusal = classify::refuse(Problem::Internal, message);
    refusal.by(ErrorSide::El).with_status(code)
}

/// Answers a call the gateway refuses, in the shape of the call's transport, and records it:
/// the one place a refusal is answered. A refusal of a scanned JSON-RPC call echoes the id of
/// its first call unless it names its own.
pub(crate) fn refuse(call: Call, refusal: Refusal, recorder: &Recorder) -> Response<ResponseBody> {
    let id = refusal
        .id
        .clone()
        .or_else(|| call.rpc.as_ref().and_then(|rpc| rpc.id.clone()));
    let refusal = Refusal { id, ..refusal };
    let (problem_status, content_type, body) = if call.answers_in_json_rpc() {
        // JSON-RPC errors travel in a 200 answer, as JSON-RPC servers send them, except what
        // HTTP itself must say (too large here; upstream failures and the like: the refusal's).
        let status = if refusal.problem == Problem::RequestTooLarge {
            StatusCode::PAYLOAD_TOO_LARGE
        } else {
            StatusCode::OK
        };
        let body = classify::json_rpc_error(&refusal);
        (status, method::JSON_CONTENT_TYPE, body)
    } else {
        let status =
            StatusCode::from_u16(refusal.problem.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
        let body = classify::problem_json(&refusal);
        (status, method::PROBLEM_CONTENT_TYPE, body)
    };
    let status = refusal.status.unwrap_or(problem_status);
    let arrived = call.arrived;
    let mut capture = call.into_capture();
    capture.status = status.as_u16();
    capture.error_side = Some(refusal.side);
    capture.error_message = Some(refusal.message);
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
    message: String,
    config: &ProxyConfig,
    recorder: &Recorder,
    peer: &Peer,
) -> Response<ResponseBody> {
    let refusal = classify::refuse(Problem::Internal, message)
        .by(ErrorSide::Gateway)
        .with_status(StatusCode::SERVICE_UNAVAILABLE);
    refuse(
        Call::from_head(request, config, Some(peer)),
        refusal,
        recorder,
    )
}

/// The `Authorization` value of the gateway's own token, when it signs upstream calls.
pub(crate) fn own_token(config: &ProxyConfig) -> Option<String> {
    config
        .verify_jwt
        .then(|| config.jwt.as_ref().map(|s| format!("Bearer {}", s.token())))
        .flatten()
}

/// Relays a WebSocket upgrade: the handshake goes upstream (without `Sec-WebSocket-Extensions`,
/// so both sides speak plain frames the relay can read); after both sides switch protocols,
/// messages are relayed one by one, unchanged, and every JSON-RPC call on the socket is
/// recorded when its answer passes (matched by id).
async fn websocket(
    request: Request<Incoming>,
    call: Call,
    config: Arc<ProxyConfig>,
    recorder: Arc<Recorder>,
) -> Response<ResponseBody> {
    let mut upstream_request = Request::builder()
        .method(request.method().clone())
        .uri(config.upstream.uri(&call.target));
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
            let refusal = classify::refuse(Problem::Internal, e.to_string())
                .by(ErrorSide::El)
                .with_status(StatusCode::BAD_GATEWAY);
            return refuse(call, refusal, &recorder);
        }
    };
    let arrived = call.arrived;
    let mut capture = call.into_capture();
    capture.status = response.status().as_u16();
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        // The EL refused the upgrade (401 without a token, say): relay its answer as it is.
        let (parts, body) = response.into_parts();
        let sent = Instant::now();
        let timing = Timing {
            arrived,
            sent,
            head: sent,
        };
        let tap = Tap::new(body, capture, timing, recorder);
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
