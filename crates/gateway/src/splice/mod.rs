//! The spliced relay (Linux): a connection's plain calls — HTTP/1.1 `POST`s with a
//! `Content-Length`, relayed unchanged to an HTTP/1.1 EL — are served here, their answers'
//! bodies moved socket to socket with `splice(2)` (`pump`), their pages referenced again in
//! pipes (`copy`) that another thread copies into the record once the answer has ended
//! (`keep`); answers of 64 KiB or less go through memory (`Small`). Every other call, and the rest of its connection, goes to hyper
//! (`proxy::Connection::serve_http`) with what was read of it put back (`rewind`): a front's
//! own endpoints, a paused or ruled control point, a bridged call, `--verify-enforce`, a JWT
//! that does not check, a call refused at admission, WebSocket, h2c, a chunked request. The
//! decisions are the general path's own (`Call`, `classify`, `bridge::direction`), taken
//! before anything is sent upstream, so a call is relayed here exactly when the general path
//! would relay it unchanged; its record, its front's view and its refusals are the same.
//!
//! Not here: the general path (`proxy`), heads (`wire`), the body (`pump`), the record's copy
//! (`copy`, `keep`), connections to the EL (`pool`).

mod copy;
mod keep;
mod pool;
mod pump;
mod rewind;
mod wire;

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use sszgate_record::{ErrorSide, Transport};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    sync::OwnedSemaphorePermit,
};

use crate::{
    ProxyConfig,
    call::{Call, header_str},
    proxy::Connection,
    tap::{Recording, Timing},
    upstream::UpstreamError,
};
use pump::{Pipe, PumpError};
use wire::{AnswerHead, Framing, Parsed, RequestHead};

/// The longest answer head read from the EL.
const MAX_ANSWER_HEAD: usize = 64 << 10;

/// Answers of at most this many bytes (most calls' answers) are read into memory, recorded
/// and written on: splicing saves nothing worth a pipe and a thread there, and their record
/// is made before the CL has a byte of them.
const SMALL_ANSWER: u64 = 64 << 10;

/// Answers spliced at once, at most. Each holds two threads of tokio's blocking pool (the
/// pump and the copy's reader) for as long as its body moves, which a CL that reads slowly
/// can make long; past this, calls take the general path, which holds no thread.
const MAX_SPLICED: usize = 64;

/// What a relay port needs to splice: its own connections to the EL, and the bodies it may
/// move at once.
pub(crate) struct Spliced {
    pool: pool::Pool,
    bodies: std::sync::Arc<tokio::sync::Semaphore>,
}

impl Spliced {
    /// The spliced relay for `config`, when it asks for one and its EL speaks HTTP/1.1.
    pub(crate) fn for_config(config: &ProxyConfig) -> Option<Spliced> {
        (config.splice && config.upstream.is_http1()).then(|| Spliced {
            pool: pool::Pool::new(config.upstream.authority()),
            bodies: std::sync::Arc::new(tokio::sync::Semaphore::new(MAX_SPLICED)),
        })
    }
}

/// What becomes of a connection after a call.
enum After {
    /// The next call, here.
    KeepAlive,
    /// Closed.
    Close,
    /// The call goes to hyper, with the rest of the connection; the bytes of its head and
    /// body when they were taken from the buffer.
    Elsewhere(Option<Bytes>),
}

/// Serves one connection: its plain calls spliced, the rest (from the first other call on)
/// through hyper.
pub(crate) async fn serve_connection(mut stream: TcpStream, mut conn: Connection) {
    let mut buf = BytesMut::with_capacity(16 << 10);
    let mut state = State::default();
    loop {
        let head = match next_head(&mut stream, &mut buf, &mut conn).await {
            Some(Parsed::Head(head)) => head,
            Some(Parsed::Elsewhere) => return hand_over(conn, stream, None, buf, state).await,
            Some(Parsed::Partial) | None => return,
        };
        match call(&mut stream, &mut buf, head, &conn, &mut state).await {
            After::KeepAlive => continue,
            After::Close => return,
            After::Elsewhere(taken) => return hand_over(conn, stream, taken, buf, state).await,
        }
    }
}

/// What a connection keeps from call to call.
#[derive(Default)]
struct State {
    /// The relay pipe, once made.
    pipe: Option<Pipe>,
    /// The last spliced call's record, until it is made.
    last_record: Option<keep::Recorded>,
}

impl State {
    /// Makes a record now, or, while the connection's last spliced call's record is still
    /// to come, after it on a blocking thread (the answer is not held up for it).
    fn record_in_order(&mut self, record: impl FnOnce() + Send + 'static) {
        let Some(previous) = self.last_record.take() else {
            return record();
        };
        let (recorded, done) = tokio::sync::oneshot::channel();
        tokio::task::spawn_blocking(move || {
            let _ = previous.blocking_recv();
            record();
            let _ = recorded.send(());
        });
        self.last_record = Some(done);
    }

    /// Waits for the last spliced call's record: a record made here, or a connection that
    /// another path goes on with, comes after it.
    async fn settle(&mut self) {
        if let Some(recorded) = self.last_record.take() {
            let _ = recorded.await;
        }
    }
}

/// Hands the connection to hyper once the records of its spliced calls are made.
async fn hand_over(
    conn: Connection,
    stream: TcpStream,
    taken: Option<Bytes>,
    buf: BytesMut,
    mut state: State,
) {
    state.settle().await;
    conn.serve_http(rewind::Rewind::new(stream, taken, buf))
        .await;
}

/// The next call's head: waits for its first byte as long as the connection is idle (not
/// past the port's shutdown), then for the rest within the header timeout. `None`: closed.
async fn next_head(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
    conn: &mut Connection,
) -> Option<Parsed> {
    if *conn.stopping.borrow() {
        return None;
    }
    if buf.is_empty() {
        tokio::select! {
            read = stream.read_buf(buf) => if !matches!(read, Ok(n) if n > 0) { return None },
            _ = conn.stopping.wait_for(|stopping| *stopping) => return None,
        }
    }
    let limits = &conn.shared.limits;
    let deadline = tokio::time::Instant::now() + limits.header_timeout;
    loop {
        match wire::request_head(buf, limits.max_header_bytes) {
            Parsed::Partial => {}
            parsed => return Some(parsed),
        }
        match tokio::time::timeout_at(deadline, stream.read_buf(buf)).await {
            Ok(Ok(n)) if n > 0 => {}
            // Closed, failed, or too slow: hyper closes such a connection too.
            _ => return None,
        }
    }
}

/// One call: admitted as the general path admits it, then relayed here, or handed over.
async fn call(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
    head: RequestHead,
    conn: &Connection,
    state: &mut State,
) -> After {
    let config = &conn.shared.config;
    let from = conn.from();
    let mut call = Call::from_head(&head.request, config, Some(&from));
    if !takes(&call, &head, config) {
        return After::Elsewhere(None);
    }
    let Some(permit) = conn.shared.in_flight.try_enter() else {
        return After::Elsewhere(None);
    };
    let spliced = conn.shared.spliced.as_ref().expect("a spliced port");
    let Ok(body_slot) = spliced.bodies.clone().try_acquire_owned() else {
        return After::Elsewhere(None);
    };
    // At most the call's body limit, checked above.
    let whole = head.len + head.body_len as usize;
    match read_to(stream, buf, whole, conn.shared.limits.body_timeout).await {
        Some(true) => {}
        Some(false) => return After::Elsewhere(None),
        None => return After::Close,
    }
    let taken = buf.split_to(whole).freeze();
    call.body = taken.slice(head.len..);
    if crate::classify::classify(&mut call, head.request.headers()).is_err() {
        return After::Elsewhere(Some(taken));
    }
    call.learn_cl(Some(&from));
    let transport = &config.upstream_transport;
    transport
        .refresh(&config.upstream, config.jwt.as_ref())
        .await;
    let bridged = crate::bridge::direction(&call, transport.get()).is_some();
    if bridged || !config.control.idle() {
        return After::Elsewhere(Some(taken));
    }
    if relay_pipe(&mut state.pipe).is_err() {
        return After::Elsewhere(Some(taken));
    }
    let after = relay(stream, call, head, conn, state, permit).await;
    drop(body_slot);
    after
}

/// True when the general path would take the call from its head and relay it unchanged:
/// JSON-RPC or a REST-SSZ resource, a body within its limit, no front of its own in the
/// way, the control point idle, no payload check, and a JWT that checks when one is asked.
fn takes(call: &Call, head: &RequestHead, config: &ProxyConfig) -> bool {
    let speaks = match call.transport {
        Transport::JsonRpc => true,
        Transport::RestSsz => call.route().is_some(),
        _ => false,
    };
    let jwt_ok = !config.verify_jwt
        || crate::jwt::authenticate(config.jwt.as_ref(), head.request.headers()).is_ok();
    let front_passes = config
        .front
        .as_ref()
        .is_none_or(|front| front.passes(&head.request));
    speaks
        && head.body_len <= call.body_limit as u64
        && !config.verify_enforce
        && config.control.idle()
        && jwt_ok
        && front_passes
}

/// Reads until `buf` holds `len` bytes, within `timeout`: `Some(false)` when too slow (the
/// general path then answers 408), `None` when the connection closed.
async fn read_to(
    stream: &mut TcpStream,
    buf: &mut BytesMut,
    len: usize,
    timeout: Duration,
) -> Option<bool> {
    buf.reserve(len.saturating_sub(buf.len()));
    let deadline = tokio::time::Instant::now() + timeout;
    while buf.len() < len {
        match tokio::time::timeout_at(deadline, stream.read_buf(buf)).await {
            Ok(Ok(n)) if n > 0 => {}
            Ok(_) => return None,
            Err(_) => return Some(false),
        }
    }
    Some(true)
}

/// The connection's relay pipe: made once, and again after a call that left bytes in it.
fn relay_pipe(pipe: &mut Option<Pipe>) -> std::io::Result<&Pipe> {
    match pipe {
        Some(relay) => Ok(relay),
        None => Ok(pipe.insert(Pipe::new()?)),
    }
}

/// Relays an admitted call: asks the EL on a connection of the pool, sends its head to the
/// CL, then splices the body; the record is completed on the copy's reader when it ends.
async fn relay(
    client: &mut TcpStream,
    call: Call,
    head: RequestHead,
    conn: &Connection,
    state: &mut State,
    permit: OwnedSemaphorePermit,
) -> After {
    let (config, recorder) = (&conn.shared.config, &conn.shared.recorder);
    let spliced = conn.shared.spliced.as_ref().expect("a spliced port");
    let request_type = header_str(head.request.headers(), "content-type");
    let token = crate::proxy::own_token(config);
    let upstream_head = wire::upstream_head(
        &head.request,
        config.upstream.base_path(),
        config.upstream.authority(),
        token.as_deref(),
        call.body.len(),
    );
    let sent = Instant::now();
    let (upstream, answer) = match ask(spliced, config, &upstream_head, &call.body).await {
        Ok(asked) => asked,
        Err(e) => {
            let method = head.request.method().clone();
            state.settle().await;
            let refused =
                crate::proxy::upstream_failed(call, e, method, request_type, config, recorder);
            return answer_self(client, refused, head.close).await;
        }
    };
    if answer.framing != Framing::Length(0)
        && let Err(refusal) = first_byte(&upstream, &answer, config).await
    {
        config.upstream_transport.mark_unreachable();
        state.settle().await;
        let refused = crate::proxy::refuse(call, refusal, recorder);
        return answer_self(client, refused, head.close).await;
    }
    let close = head.close || answer.framing == Framing::UntilClose;
    let timing = Timing {
        arrived: call.arrived,
        sent,
        head: Instant::now(),
    };
    let recording = recording(call, &head, &answer, timing, request_type, conn);
    if let Framing::Length(len) = answer.framing
        && len <= SMALL_ANSWER
    {
        let small = Small {
            answer,
            len: len as usize,
            close,
        };
        return small.relay(client, upstream, recording, conn, state).await;
    }
    let previous = state.last_record.take();
    let (segments, tell, recorded) = keep::start(recording, answer.framing, conn.alive(), previous);
    state.last_record = Some(recorded);
    let relay_pipe = state.pipe.as_ref().expect("made before the call");
    let wrote = client.write_all(&wire::client_head(&answer, close)).await;
    drop(permit);
    let (moved, result) = match wrote {
        Ok(()) => {
            let copy = Some(copy::Copier::new(segments));
            pump::body(&upstream, client, relay_pipe, copy, answer.framing).await
        }
        Err(e) => {
            let why = format!("sending the answer head to the CL: {e}");
            (pump::Moved::default(), Err(PumpError::Client(why)))
        }
    };
    let ended = keep::Ended {
        at: Instant::now(),
        moved,
        failure: None,
    };
    let (after, failure) = match result {
        Ok(()) if close => (After::Close, None),
        Ok(()) => (After::KeepAlive, None),
        Err(PumpError::Upstream(why)) => {
            let why = format!("upstream body failed: {why}");
            (After::Close, Some((ErrorSide::El, why)))
        }
        Err(PumpError::Client(why)) => (After::Close, Some((ErrorSide::Cl, why))),
    };
    if failure.is_none() && !answer.close {
        spliced.pool.give(upstream);
    }
    let cut = failure.is_some();
    let _ = tell.send(keep::Ended { failure, ..ended });
    if cut {
        // The CL sees its answer cut when the connection closes: after the record says so.
        state.settle().await;
    }
    after
}

/// The record of a relayed call as far as its answer's head, and the front that sees it.
fn recording(
    call: Call,
    head: &RequestHead,
    answer: &AnswerHead,
    timing: Timing,
    request_type: Option<String>,
    conn: &Connection,
) -> Recording {
    let mut capture = call.into_capture();
    capture.status = answer.status.as_u16();
    capture.encodings.1 = header_str(&answer.headers, "content-encoding");
    let observer = conn.shared.config.front.clone().map(|front| {
        let head = crate::front::ExchangeHead {
            method: head.request.method().clone(),
            request_content_type: request_type,
            response_content_type: header_str(&answer.headers, "content-type"),
        };
        (front, head)
    });
    Recording {
        capture,
        timing,
        recorder: conn.shared.recorder.clone(),
        observer,
    }
}

/// Why an exchange with the EL failed, and whether the EL saw nothing of it (a kept
/// connection it had closed: the call may go again on a new one).
struct Unanswered {
    why: String,
    nothing_back: bool,
}

/// Sends the call to the EL and reads its answer head, within the upstream timeout: on a
/// kept connection, and once more on a new one when the kept one turns out closed before
/// any answer byte.
async fn ask(
    spliced: &Spliced,
    config: &ProxyConfig,
    head: &[u8],
    body: &Bytes,
) -> Result<(TcpStream, AnswerHead), UpstreamError> {
    let upstream = &config.upstream;
    let url = upstream.url().to_string();
    let asked = tokio::time::timeout(upstream.timeout(), async {
        let (stream, reused) = spliced.pool.take().await.map_err(connect_failed)?;
        match exchange(stream, head, body).await {
            Err(e) if reused && e.nothing_back => {
                let stream = spliced.pool.fresh().await.map_err(connect_failed)?;
                exchange(stream, head, body).await
            }
            done => done,
        }
    })
    .await;
    let result = match asked {
        Ok(Ok(answered)) => Ok(answered),
        Ok(Err(e)) => Err(UpstreamError::Failed(url, e.why)),
        Err(_) => Err(UpstreamError::Timeout(url, upstream.timeout())),
    };
    upstream.note(result.as_ref().map(|_| ()));
    result
}

fn connect_failed(e: std::io::Error) -> Unanswered {
    Unanswered {
        why: format!("connecting: {e}"),
        nothing_back: false,
    }
}

/// One request on `stream` and its answer head (informational answers skipped).
async fn exchange(
    mut stream: TcpStream,
    head: &[u8],
    body: &Bytes,
) -> Result<(TcpStream, AnswerHead), Unanswered> {
    let sent = async {
        stream.write_all(head).await?;
        stream.write_all(body).await
    };
    if let Err(e) = sent.await {
        return Err(Unanswered {
            why: format!("sending the call: {e}"),
            nothing_back: true,
        });
    }
    loop {
        let answer = match pump::peek_for(&stream, MAX_ANSWER_HEAD, wire::answer_head).await {
            Ok(Ok(Some(answer))) => answer,
            Ok(Ok(None)) => {
                return Err(Unanswered {
                    // hyper's words, which the general path reports
                    why: "connection closed before message completed".into(),
                    nothing_back: true,
                });
            }
            Ok(Err(why)) => {
                return Err(Unanswered {
                    why,
                    nothing_back: false,
                });
            }
            Err(e) => {
                let reset = e.kind() == std::io::ErrorKind::ConnectionReset;
                return Err(Unanswered {
                    why: format!("reading the answer: {e}"),
                    nothing_back: reset,
                });
            }
        };
        let mut taken = vec![0u8; answer.len];
        if let Err(e) = pump::take(&stream, &mut taken).await {
            let why = format!("reading the answer head: {e}");
            return Err(Unanswered {
                why,
                nothing_back: false,
            });
        }
        if !answer.status.is_informational() {
            return Ok((stream, answer));
        }
    }
}

/// Waits for the answer's first body byte before its head goes to the CL (as the general
/// path waits for its first frame), so that an EL that fails here is answered clearly.
async fn first_byte(
    upstream: &TcpStream,
    answer: &AnswerHead,
    config: &ProxyConfig,
) -> Result<(), crate::classify::Refusal> {
    let any = |bytes: &[u8]| Ok(Some(bytes.len()));
    let waited =
        tokio::time::timeout(config.upstream.timeout(), pump::peek_for(upstream, 1, any)).await;
    let why = match waited {
        Ok(Ok(Ok(Some(_)))) => return Ok(()),
        Ok(Ok(Ok(None))) => "the connection closed".to_string(),
        Ok(Ok(Err(why))) => why,
        Ok(Err(e)) => e.to_string(),
        Err(_) => return Err(crate::proxy::no_first_byte(config, answer.status, None)),
    };
    Err(crate::proxy::no_first_byte(
        config,
        answer.status,
        Some(why),
    ))
}

/// Sends an answer the gateway gave itself; the connection goes on unless it is to close.
async fn answer_self(
    client: &mut TcpStream,
    answer: http::Response<crate::proxy::ResponseBody>,
    close: bool,
) -> After {
    let bytes = wire::gateway_answer(answer, close).await;
    match client.write_all(&bytes).await {
        Ok(()) if !close => After::KeepAlive,
        _ => After::Close,
    }
}

/// A small answer, relayed through memory (see [`SMALL_ANSWER`]).
struct Small {
    answer: AnswerHead,
    len: usize,
    close: bool,
}

impl Small {
    /// Reads the body (within the upstream timeout), records the call (after the
    /// connection's spliced calls before it), then sends the head and body to the CL.
    async fn relay(
        self,
        client: &mut TcpStream,
        mut upstream: TcpStream,
        recording: Recording,
        conn: &Connection,
        state: &mut State,
    ) -> After {
        let config = &conn.shared.config;
        let mut body = vec![0u8; self.len];
        let read = tokio::time::timeout(config.upstream.timeout(), upstream.read_exact(&mut body));
        let failure = match read.await {
            Ok(Ok(_)) => None,
            Ok(Err(e)) => Some(format!("upstream body failed: {e}")),
            Err(_) => Some(format!(
                "upstream body failed: not whole within {:?}",
                config.upstream.timeout()
            )),
        };
        let ended = Instant::now();
        if let Some(why) = failure {
            // Nothing of it reached the CL: its connection closes without an answer, after
            // the record says why.
            state.settle().await;
            recording.complete(Vec::new(), 0, ended, Some((ErrorSide::El, why)));
            return After::Close;
        }
        let body = Bytes::from(body);
        let frames = vec![body.clone()];
        // Counted as waiting, and waited for at shutdown, until it is made.
        let guards = (recording.recorder.copying(), conn.alive());
        let len = self.len as u64;
        state.record_in_order(move || {
            recording.complete(frames, len, ended, None);
            drop(guards);
        });
        let mut out = wire::client_head(&self.answer, self.close);
        out.extend_from_slice(&body);
        if client.write_all(&out).await.is_err() {
            return After::Close;
        }
        if !self.answer.close {
            let spliced = conn.shared.spliced.as_ref().expect("a spliced port");
            spliced.pool.give(upstream);
        }
        match self.close {
            true => After::Close,
            false => After::KeepAlive,
        }
    }
}
