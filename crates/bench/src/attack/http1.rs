//! HTTP/1.1 attacks: connection floods, slowloris (a head, a body and a chunked body trickled
//! a byte at a time) and malformed requests (bad chunk sizes, conflicting lengths, obfuscated
//! `Transfer-Encoding`, a CL.TE smuggling shape, a huge request line, thousands of fields).

use std::{sync::Arc, time::Duration};

use tokio::{
    io::AsyncWriteExt,
    net::TcpStream,
    sync::Semaphore,
    time::{Instant, sleep},
};

use super::{
    Ctx, Outcome,
    el::HIDDEN_METHOD,
    wire::{Answer, Tally, exchange, head, read_answer, size},
};

/// Requests in flight at once in the one-request-each flood: the relay's upstream pool keeps
/// an idle connection per concurrent call (up to 32), which is not a leak; a few keep the fd
/// count comparable before and after.
const FLOOD_IN_FLIGHT: usize = 6;
/// Time between two trickled bytes.
const TRICKLE_EVERY: Duration = Duration::from_millis(200);

/// A small JSON-RPC call with a valid JWT and `Connection: keep-alive`.
pub(crate) fn normal_call(ctx: &Ctx) -> Vec<u8> {
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"engine_exchangeCapabilities","params":[[]]}"#;
    let mut bytes = head(
        "POST / HTTP/1.1",
        &[
            "Content-Type: application/json".into(),
            format!("Content-Length: {}", body.len()),
            format!("Authorization: Bearer {}", ctx.token),
        ],
    );
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

/// Opens `n` connections at once, holds them, and closes them without a request.
pub(crate) async fn open_and_close(ctx: Ctx) -> Outcome {
    let n = ctx.scale.flood;
    let (streams, mut tally) = connect_all(&ctx, n).await;
    sleep(Duration::from_millis(200)).await;
    tally.add(format!("connected and closed by us ({})", streams.len()));
    drop(streams);
    Outcome::with_tally(format!("{n} conns, 0 B"), tally)
}

/// How long one flood connection may take to be accepted by the kernel: past the listener's
/// backlog the SYN is dropped and a blocking connect would wait out the kernel's retries.
const CONNECT_WAIT: Duration = Duration::from_secs(1);

/// Opens `n` connections at once (each attempt in flight together, each bounded by
/// [`CONNECT_WAIT`]); those that did not connect are tallied by why.
async fn connect_all(ctx: &Ctx, n: usize) -> (Vec<TcpStream>, Tally) {
    let attempts: Vec<_> = (0..n)
        .map(|_| {
            tokio::spawn(tokio::time::timeout(
                CONNECT_WAIT,
                TcpStream::connect(ctx.addr),
            ))
        })
        .collect();
    let (mut streams, mut tally) = (Vec::with_capacity(n), Tally::default());
    for attempt in attempts {
        match attempt.await {
            Ok(Ok(Ok(stream))) => streams.push(stream),
            Ok(Ok(Err(e))) => tally.add(Answer::refused(e)),
            Ok(Err(_)) | Err(_) => tally.add(Answer::refused(std::io::Error::from(
                std::io::ErrorKind::TimedOut,
            ))),
        }
    }
    (streams, tally)
}

/// Opens `n` connections at once; each then makes one normal call (a few at a time) and reads
/// its answer; all are closed at the end.
pub(crate) async fn one_request_each(ctx: Ctx) -> Outcome {
    let n = ctx.scale.flood;
    let (streams, mut tally) = connect_all(&ctx, n).await;
    let request = Arc::new(normal_call(&ctx));
    let gate = Arc::new(Semaphore::new(FLOOD_IN_FLIGHT));
    let wait = ctx.scale.answer_wait;
    let calls: Vec<_> = streams
        .into_iter()
        .map(|stream| {
            let (request, gate) = (request.clone(), gate.clone());
            tokio::spawn(async move {
                let _permit = gate.acquire_owned().await;
                let (mut reader, mut writer) = stream.into_split();
                let _ = writer.write_all(&request).await;
                let answer = read_answer(&mut reader, wait).await;
                (answer, reader, writer)
            })
        })
        .collect();
    let mut open = Vec::new();
    for call in calls {
        if let Ok((answer, reader, writer)) = call.await {
            tally.add(
                answer
                    .statuses
                    .first()
                    .cloned()
                    .unwrap_or(answer.to_string()),
            );
            open.push((reader, writer));
        }
    }
    drop(open);
    let bytes = n as u64 * request.len() as u64;
    Outcome::with_tally(format!("{n} conns, {}", size(bytes)), tally)
}

/// What a slowloris connection sends at once and what it trickles.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Trickle {
    /// The whole head, a byte at a time.
    Head,
    /// A head with `Content-Length: 1000`, then the body a byte at a time.
    Body,
    /// A chunked head, then a 1000-byte chunk a byte at a time.
    Chunked,
}

fn trickle_parts(ctx: &Ctx, what: Trickle) -> (Vec<u8>, Vec<u8>) {
    let auth = format!("Authorization: Bearer {}", ctx.token);
    let json = "Content-Type: application/json".to_string();
    match what {
        Trickle::Head => (Vec::new(), head("POST / HTTP/1.1", &[json, auth])),
        Trickle::Body => (
            head(
                "POST / HTTP/1.1",
                &[json, auth, "Content-Length: 1000".into()],
            ),
            vec![b' '; 1000],
        ),
        Trickle::Chunked => {
            let te = "Transfer-Encoding: chunked".to_string();
            let mut chunk = b"3e8\r\n".to_vec();
            chunk.extend_from_slice(&[b' '; 1000]);
            chunk.extend_from_slice(b"\r\n0\r\n\r\n");
            (head("POST / HTTP/1.1", &[json, auth, te]), chunk)
        }
    }
}

/// `slow_conns` connections at once, each trickling a byte every 200 ms until the proxy
/// answers or closes, or `slow_for` passes.
pub(crate) async fn slowloris(ctx: Ctx, what: Trickle) -> Outcome {
    let (fast, slow) = trickle_parts(&ctx, what);
    let n = ctx.scale.slow_conns;
    let tasks: Vec<_> = (0..n)
        .map(|_| tokio::spawn(trickle(ctx.clone(), fast.clone(), slow.clone())))
        .collect();
    let mut tally = Tally::default();
    let mut trickled = 0u64;
    for task in tasks {
        if let Ok((answer, sent)) = task.await {
            tally.add(answer);
            trickled += sent as u64;
        }
    }
    let sent = format!(
        "{n} conns, {} at once then {} a byte per 200 ms",
        size((fast.len() * n) as u64),
        size(trickled)
    );
    Outcome::with_tally(sent, tally)
}

/// One trickling connection: the answer, and the bytes trickled before it came.
async fn trickle(ctx: Ctx, fast: Vec<u8>, slow: Vec<u8>) -> (Answer, usize) {
    let stream = match TcpStream::connect(ctx.addr).await {
        Ok(stream) => stream,
        Err(e) => return (Answer::refused(e), 0),
    };
    let (mut reader, mut writer) = stream.into_split();
    let limit = ctx.scale.slow_for;
    let started = Instant::now();
    let reading = tokio::spawn(async move { read_answer(&mut reader, limit).await });
    let mut sent = 0;
    if writer.write_all(&fast).await.is_ok() {
        for byte in &slow {
            if reading.is_finished() || started.elapsed() >= limit {
                break;
            }
            if writer.write_all(std::slice::from_ref(byte)).await.is_err() {
                break;
            }
            sent += 1;
            sleep(TRICKLE_EVERY).await;
        }
    }
    let answer = reading.await.unwrap_or_else(|_| Answer {
        statuses: Vec::new(),
        rpc_error: None,
        end: super::wire::End::Open,
    });
    (answer, sent)
}

/// Builds the bytes of one malformed request.
pub(crate) type Build = fn(&Ctx) -> Vec<u8>;

/// The malformed requests, by name: each is sent on a connection of its own.
pub(crate) const MALFORMED: [(&str, Build); 12] = [
    ("chunk size `zz`", |c| chunked(c, "zz\r\nab\r\n0\r\n\r\n")),
    ("chunk size 2^64", |c| {
        chunked(c, "10000000000000000\r\nab\r\n0\r\n\r\n")
    }),
    ("chunk size -1", |c| chunked(c, "-1\r\nab\r\n0\r\n\r\n")),
    ("Content-Length + chunked", |c| {
        with_te(c, &["Content-Length: 5", "Transfer-Encoding: chunked"])
    }),
    ("two Content-Lengths", |c| two_lengths(c)),
    ("TE `xchunked`", |c| {
        with_te(c, &["Transfer-Encoding: xchunked"])
    }),
    ("TE ` chunked` (extra blank)", |c| {
        with_te(c, &["Transfer-Encoding:   chunked"])
    }),
    ("TE folded onto a 2nd line", |c| {
        with_te(c, &["Transfer-Encoding:", " chunked"])
    }),
    ("TE with a blank before the colon", |c| {
        with_te(c, &["Transfer-Encoding : chunked"])
    }),
    ("CL.TE smuggling", smuggling),
    ("100 KB request line", |_| long_request_line(100_000)),
    ("10,000 header fields", |_| many_fields(10_000)),
];

/// Sends one malformed request and reports the answer.
pub(crate) async fn malformed(ctx: Ctx, build: Build) -> Outcome {
    let bytes = build(&ctx);
    let sent = format!("{}, 1 conn", size(bytes.len() as u64));
    Outcome::new(sent, exchange(ctx.addr, bytes, ctx.scale.answer_wait).await)
}

fn call_headers(ctx: &Ctx) -> Vec<String> {
    vec![
        "Content-Type: application/json".into(),
        format!("Authorization: Bearer {}", ctx.token),
    ]
}

fn chunked(ctx: &Ctx, body: &str) -> Vec<u8> {
    let mut headers = call_headers(ctx);
    headers.push("Transfer-Encoding: chunked".into());
    let mut bytes = head("POST / HTTP/1.1", &headers);
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

/// A call whose framing headers are `framing`, followed by a valid chunked body.
fn with_te(ctx: &Ctx, framing: &[&str]) -> Vec<u8> {
    let mut headers = call_headers(ctx);
    headers.extend(framing.iter().map(|h| h.to_string()));
    let mut bytes = head("POST / HTTP/1.1", &headers);
    bytes.extend_from_slice(b"5\r\n[1,2]\r\n0\r\n\r\n");
    bytes
}

fn two_lengths(ctx: &Ctx) -> Vec<u8> {
    let mut headers = call_headers(ctx);
    headers.extend(["Content-Length: 5".into(), "Content-Length: 6".into()]);
    let mut bytes = head("POST / HTTP/1.1", &headers);
    bytes.extend_from_slice(b"[1,2]]");
    bytes
}

/// CL.TE: by its Content-Length the body holds a whole second request; by its chunked
/// framing the body ends at once and the second request follows. The hidden call must never
/// reach the EL as a call of its own.
fn smuggling(ctx: &Ctx) -> Vec<u8> {
    let hidden_body =
        format!(r#"{{"jsonrpc":"2.0","id":2,"method":"{HIDDEN_METHOD}","params":[]}}"#);
    let mut hidden = head(
        "POST / HTTP/1.1",
        &[
            "Content-Type: application/json".into(),
            format!("Content-Length: {}", hidden_body.len()),
        ],
    );
    hidden.extend_from_slice(hidden_body.as_bytes());
    let mut body = b"0\r\n\r\n".to_vec();
    body.extend_from_slice(&hidden);
    let mut headers = call_headers(ctx);
    headers.push(format!("Content-Length: {}", body.len()));
    headers.push("Transfer-Encoding: chunked".into());
    let mut bytes = head("POST / HTTP/1.1", &headers);
    bytes.extend_from_slice(&body);
    bytes
}

fn long_request_line(len: usize) -> Vec<u8> {
    head(&format!("GET /{} HTTP/1.1", "a".repeat(len)), &[])
}

fn many_fields(n: usize) -> Vec<u8> {
    let fields: Vec<String> = (0..n).map(|i| format!("X-F{i}: v")).collect();
    head("POST / HTTP/1.1", &fields)
}
