//! The spliced relay: answers go through byte for byte (chunk framing, extensions and
//! trailers included, which only a relay that does not re-frame keeps), are recorded whole
//! and decoded, and a connection moves to the general path at the first call the spliced
//! relay does not take. Against an EL and a CL speaking raw HTTP/1.1, so that every byte on
//! either side is seen.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

use crate::{Proxy, SPLICE};

/// What the raw EL does with a request: the bytes it answers with, then whether it closes.
type Script = dyn Fn(usize, &[u8]) -> (Vec<u8>, bool) + Send + Sync;

/// An EL speaking raw HTTP/1.1: every request (its head and `Content-Length` body) on any
/// connection is numbered and answered by `script`. Returns its address and a count of the
/// connections it accepted.
async fn raw_el(script: Arc<Script>) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (requests, connections) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let accepted = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            accepted.fetch_add(1, Ordering::SeqCst);
            let (script, requests) = (script.clone(), requests.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                while let Some(request) = read_request(&mut stream, &mut buf).await {
                    let n = requests.fetch_add(1, Ordering::SeqCst);
                    let (answer, close) = script(n, &request);
                    if write_paced(&mut stream, &answer).await.is_err() || close {
                        return;
                    }
                }
            });
        }
    });
    (addr, connections)
}

/// Where a raw EL's answer pauses: written up to it, then the rest 50 ms later.
const PAUSE: &[u8] = b"<PAUSE>";

/// Writes `answer`, pausing at each [`PAUSE`] (which is not sent).
async fn write_paced(stream: &mut TcpStream, mut answer: &[u8]) -> std::io::Result<()> {
    while let Some(at) = find(answer, PAUSE) {
        stream.write_all(&answer[..at]).await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
        answer = &answer[at + PAUSE.len()..];
    }
    stream.write_all(answer).await
}

/// One request (head and body) from `stream`, `buf` holding what was read past it.
async fn read_request(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let head = fill_until(stream, buf, |b| find(b, b"\r\n\r\n").map(|at| at + 4)).await?;
    let text = String::from_utf8_lossy(&buf[..head]).to_ascii_lowercase();
    let length: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    fill_until(stream, buf, |b| {
        (b.len() >= head + length).then_some(head + length)
    })
    .await?;
    Some(buf.drain(..head + length).collect())
}

/// Reads into `buf` until `done` says how much of it is whole; `None` if the stream ended
/// first.
async fn fill_until(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    done: impl Fn(&[u8]) -> Option<usize>,
) -> Option<usize> {
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        if let Some(n) = done(buf) {
            return Some(n);
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn find(bytes: &[u8], what: &[u8]) -> Option<usize> {
    bytes.windows(what.len()).position(|w| w == what)
}

/// The rows `sql` selects from the records, each read by `row`.
fn rows<T>(
    db: &rusqlite::Connection,
    sql: &str,
    row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> Vec<T> {
    let mut statement = db.prepare(sql).unwrap();
    statement
        .query_map([], row)
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// One answer as the CL read it off the wire: its head as text, its body with its framing.
struct RawAnswer {
    head: String,
    wire_body: Vec<u8>,
}

/// Reads one answer from `stream`: `None` when the connection ends before it is whole.
async fn read_answer(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<RawAnswer> {
    let head = fill_until(stream, buf, |b| find(b, b"\r\n\r\n").map(|at| at + 4)).await?;
    let text = String::from_utf8_lossy(&buf[..head]).to_string();
    let lower = text.to_ascii_lowercase();
    let whole = if lower.contains("transfer-encoding: chunked") {
        fill_until(stream, buf, |b| chunked_len(&b[head..]).map(|n| head + n)).await?
    } else {
        let length: usize = lower
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map_or(0, |v| v.trim().parse().unwrap());
        fill_until(stream, buf, |b| {
            (b.len() >= head + length).then_some(head + length)
        })
        .await?
    };
    let answer: Vec<u8> = buf.drain(..whole).collect();
    Some(RawAnswer {
        head: text,
        wire_body: answer[head..].to_vec(),
    })
}

/// The wire length of a whole chunked body at the start of `bytes`, if it is all there.
fn chunked_len(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    loop {
        let line = find(&bytes[at..], b"\r\n")?;
        let digits = std::str::from_utf8(&bytes[at..at + line]).unwrap();
        let size = usize::from_str_radix(digits.split(';').next().unwrap(), 16).unwrap();
        at += line + 2;
        if size == 0 {
            return find(&bytes[at - 2..], b"\r\n\r\n").map(|end| at - 2 + end + 4);
        }
        at += size + 2;
        if at > bytes.len() {
            return None;
        }
    }
}

/// The data of a chunked body, without its framing.
fn dechunked(wire: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let line = find(&wire[at..], b"\r\n").unwrap();
        let digits = std::str::from_utf8(&wire[at..at + line]).unwrap();
        let size = usize::from_str_radix(digits.split(';').next().unwrap(), 16).unwrap();
        at += line + 2;
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&wire[at..at + size]);
        at += size + 2;
    }
}

fn post(target: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {target} HTTP/1.1\r\nhost: proxy\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

const GET_PAYLOAD: &str =
    r#"{"jsonrpc":"2.0","id":5,"method":"engine_getPayloadV5","params":["0x0000000000000001"]}"#;

/// An error answer split over chunks with an extension and a trailer, as an EL may send.
fn chunked_error_answer() -> (Vec<u8>, Vec<u8>) {
    let json = br#"{"jsonrpc":"2.0","id":5,"error":{"code":-38001,"message":"Unknown payload"}}"#;
    let (a, b) = json.split_at(20);
    let mut wire = format!("{:x};ext=1\r\n", a.len()).into_bytes();
    wire.extend_from_slice(a);
    wire.extend_from_slice(format!("\r\n{:X}\r\n", b.len()).as_bytes());
    wire.extend_from_slice(b);
    wire.extend_from_slice(b"\r\n0\r\nx-trailer: 1\r\n\r\n");
    let mut answer =
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec();
    answer.extend_from_slice(&wire);
    (answer, wire)
}

fn length_answer(body: &[u8]) -> Vec<u8> {
    let mut answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    answer.extend_from_slice(body);
    answer
}

#[tokio::test]
async fn a_chunked_answer_goes_through_byte_for_byte_and_is_recorded_without_its_framing() {
    let (answer, wire) = chunked_error_answer();
    let (el, _) = raw_el(Arc::new(move |_, _| (answer.clone(), false))).await;
    let proxy = Proxy::start(&format!("http://{el}")).await;
    let mut cl = TcpStream::connect(proxy.addr).await.unwrap();
    let mut buf = Vec::new();
    for _ in 0..2 {
        cl.write_all(&post("/", GET_PAYLOAD)).await.unwrap();
        let got = read_answer(&mut cl, &mut buf).await.expect("an answer");
        assert!(got.head.starts_with("HTTP/1.1 200 OK\r\n"), "{}", got.head);
        assert_eq!(
            got.wire_body, wire,
            "the EL's chunks, extension and trailer as sent"
        );
    }
    let (db, _dir) = proxy.finish().await;
    let rows: Vec<(i64, String, i64)> = rows(
        &db,
        "SELECT error_code, error_message, response_bytes FROM calls ORDER BY arrival_unix_us",
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    );
    let decoded = dechunked(&wire).len() as i64;
    assert_eq!(rows, vec![(-38001, "Unknown payload".into(), decoded); 2]);
}

#[tokio::test]
async fn a_large_answer_then_two_pipelined_calls_on_one_connection() {
    // About 20 MB, the size of a 72-blob getPayloadV5 answer in JSON.
    let message: String = (0..20_000_000u32)
        .map(|i| char::from(b'a' + (i.wrapping_mul(2_654_435_761) >> 27) as u8 % 26))
        .collect();
    let large =
        format!(r#"{{"jsonrpc":"2.0","id":5,"error":{{"code":-38001,"message":"{message}"}}}}"#);
    let small =
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":-38002,"message":"Invalid forkchoice state"}}"#;
    let answers = Arc::new([
        length_answer(large.as_bytes()),
        length_answer(small.as_bytes()),
    ]);
    let (el, connections) = raw_el(Arc::new(move |n, _| (answers[n.min(1)].clone(), false))).await;
    let proxy = Proxy::start(&format!("http://{el}")).await;
    let mut cl = TcpStream::connect(proxy.addr).await.unwrap();
    let mut buf = Vec::new();
    cl.write_all(&post("/", GET_PAYLOAD)).await.unwrap();
    let got = read_answer(&mut cl, &mut buf)
        .await
        .expect("the large answer");
    assert!(
        got.wire_body == large.as_bytes(),
        "the large answer, unchanged"
    );
    let mut two = post("/", GET_PAYLOAD);
    two.extend_from_slice(&post("/", GET_PAYLOAD));
    cl.write_all(&two).await.unwrap();
    for _ in 0..2 {
        let got = read_answer(&mut cl, &mut buf)
            .await
            .expect("a pipelined answer");
        assert_eq!(got.wire_body, small.as_bytes());
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        1,
        "one kept EL connection"
    );
    let (db, _dir) = proxy.finish().await;
    let rows: Vec<(i64, i64, i64)> = rows(
        &db,
        "SELECT error_code, length(error_message), response_bytes FROM calls ORDER BY response_bytes DESC",
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    );
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(
        rows[0].0, -38001,
        "the large answer was read whole for its record"
    );
    assert_eq!(rows[0].2, large.len() as i64);
    assert_eq!(rows[1], (-38002, 24, small.len() as i64));
    assert_eq!(rows[2], rows[1]);
}

#[tokio::test]
async fn a_connection_moves_to_the_general_path_at_the_first_call_not_spliced() {
    let (answer, wire) = chunked_error_answer();
    let (el, _) = raw_el(Arc::new(move |_, _| (answer.clone(), false))).await;
    let proxy = Proxy::start(&format!("http://{el}")).await;
    let mut cl = TcpStream::connect(proxy.addr).await.unwrap();
    let mut buf = Vec::new();
    cl.write_all(&post("/", GET_PAYLOAD)).await.unwrap();
    let spliced = read_answer(&mut cl, &mut buf).await.unwrap();
    assert_eq!(spliced.wire_body, wire, "spliced: the EL's framing");
    // Not JSON-RPC: the general path answers it (404 in problem+json), and keeps the
    // connection from then on.
    cl.write_all(b"POST /elsewhere HTTP/1.1\r\nhost: proxy\r\ncontent-length: 2\r\n\r\n{}")
        .await
        .unwrap();
    let refused = read_answer(&mut cl, &mut buf).await.unwrap();
    assert!(refused.head.starts_with("HTTP/1.1 404"), "{}", refused.head);
    cl.write_all(&post("/", GET_PAYLOAD)).await.unwrap();
    let general = read_answer(&mut cl, &mut buf).await.unwrap();
    assert!(general.head.starts_with("HTTP/1.1 200"), "{}", general.head);
    assert_ne!(general.wire_body, wire, "hyper frames the answer anew");
    assert_eq!(dechunked(&general.wire_body), dechunked(&wire));
    let (db, _dir) = proxy.finish().await;
    let count: i64 = db
        .query_row("SELECT count(*) FROM calls", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, 3);
}

#[tokio::test]
async fn the_general_path_alone_when_splicing_is_off() {
    let (answer, wire) = chunked_error_answer();
    let (el, _) = raw_el(Arc::new(move |_, _| (answer.clone(), false))).await;
    SPLICE.with(|s| *s.borrow_mut() = false);
    let proxy = Proxy::start(&format!("http://{el}")).await;
    SPLICE.with(|s| *s.borrow_mut() = true);
    let mut cl = TcpStream::connect(proxy.addr).await.unwrap();
    let mut buf = Vec::new();
    cl.write_all(&post("/", GET_PAYLOAD)).await.unwrap();
    let got = read_answer(&mut cl, &mut buf).await.unwrap();
    assert_ne!(got.wire_body, wire, "re-framed by hyper");
    assert_eq!(dechunked(&got.wire_body), dechunked(&wire));
    proxy.finish().await;
}

#[tokio::test]
async fn a_badly_chunked_answer_is_cut_recorded_as_the_els_fault_and_the_relay_goes_on() {
    let good = length_answer(br#"{"jsonrpc":"2.0","id":5,"result":null}"#);
    let bad = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nabcd\r\nzz\r\n".to_vec();
    let long_size =
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n11111111111111111\r\n".to_vec();
    let answers = Arc::new([bad, long_size, good]);
    let (el, _) = raw_el(Arc::new(move |n, _| (answers[n.min(2)].clone(), n < 2))).await;
    let proxy = Proxy::start(&format!("http://{el}")).await;
    for _ in 0..2 {
        let mut cl = TcpStream::connect(proxy.addr).await.unwrap();
        let mut buf = Vec::new();
        cl.write_all(&post("/", GET_PAYLOAD)).await.unwrap();
        assert!(
            read_answer(&mut cl, &mut buf).await.is_none(),
            "the answer is cut short"
        );
    }
    let mut cl = TcpStream::connect(proxy.addr).await.unwrap();
    let mut buf = Vec::new();
    cl.write_all(&post("/", GET_PAYLOAD)).await.unwrap();
    let got = read_answer(&mut cl, &mut buf)
        .await
        .expect("the next call is answered");
    assert!(got.head.starts_with("HTTP/1.1 200"));
    let (db, _dir) = proxy.finish().await;
    let rows: Vec<(String, String)> = rows(
        &db,
        "SELECT coalesce(error_side, '-'), coalesce(error_message, '-') FROM calls ORDER BY arrival_unix_us",
        |r| Ok((r.get(0)?, r.get(1)?)),
    );
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[0].0, "el");
    assert!(
        rows[0].1.contains("a bad chunked body: chunk size \"zz\""),
        "{rows:?}"
    );
    assert!(rows[1].1.contains("17 hex digits"), "{rows:?}");
    assert_eq!(rows[2].0, "-");
}

#[tokio::test]
async fn a_kept_el_connection_that_dies_under_a_call_is_replaced_unseen() {
    let good = length_answer(br#"{"jsonrpc":"2.0","id":5,"result":null}"#);
    // The first connection answers one call, then takes the second and hangs up without a
    // word (as an EL closing an idle connection just as a call arrives): the call goes
    // again on a new connection.
    let (el, connections) = raw_el(Arc::new(move |n, _| match n {
        1 => (Vec::new(), true),
        _ => (good.clone(), false),
    }))
    .await;
    let proxy = Proxy::start(&format!("http://{el}")).await;
    let mut cl = TcpStream::connect(proxy.addr).await.unwrap();
    let mut buf = Vec::new();
    for _ in 0..2 {
        cl.write_all(&post("/", GET_PAYLOAD)).await.unwrap();
        let got = read_answer(&mut cl, &mut buf).await.expect("answered");
        assert!(got.head.starts_with("HTTP/1.1 200"), "{}", got.head);
    }
    assert_eq!(connections.load(Ordering::SeqCst), 2);
    proxy.finish().await;
}

#[tokio::test]
async fn a_cl_that_leaves_mid_answer_is_recorded_as_gone_and_the_relay_goes_on() {
    let large = length_answer(&vec![b' '; 64 << 20]);
    let small = length_answer(br#"{"jsonrpc":"2.0","id":5,"result":null}"#);
    let answers = Arc::new([large, small]);
    let (el, _) = raw_el(Arc::new(move |n, _| (answers[n.min(1)].clone(), false))).await;
    let proxy = Proxy::start(&format!("http://{el}")).await;
    let mut cl = TcpStream::connect(proxy.addr).await.unwrap();
    cl.write_all(&post("/", GET_PAYLOAD)).await.unwrap();
    let mut some = vec![0u8; 4096];
    cl.read_exact(&mut some).await.unwrap();
    drop(cl);
    let mut cl = TcpStream::connect(proxy.addr).await.unwrap();
    let mut buf = Vec::new();
    cl.write_all(&post("/", GET_PAYLOAD)).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(30), read_answer(&mut cl, &mut buf))
        .await
        .unwrap()
        .expect("the next CL is answered");
    assert!(got.head.starts_with("HTTP/1.1 200"));
    let (db, _dir) = proxy.finish().await;
    let rows: Vec<(String, String)> = rows(
        &db,
        "SELECT coalesce(error_side, '-'), coalesce(error_message, '-') FROM calls ORDER BY seq",
        |r| Ok((r.get(0)?, r.get(1)?)),
    );
    // Either may be recorded first: the cut answer is seen cut when the relay next writes.
    let mut rows = rows;
    rows.sort();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].0, "-");
    assert_eq!(rows[1].0, "cl", "{rows:?}");
    assert!(
        rows[1].1.contains("sending the answer to the CL"),
        "{rows:?}"
    );
}

#[tokio::test]
async fn chunk_lines_that_arrive_in_pieces_are_waited_for() {
    let json = br#"{"jsonrpc":"2.0","id":5,"error":{"code":-38001,"message":"Unknown payload"}}"#;
    let size = format!("{:x}", json.len()).into_bytes();
    // The body as the CL must get it, and as the EL sends it: its size line cut after its
    // first digit and its last blank line late, each after a pause.
    let wire = [&size[..], b"\r\n", json, b"\r\n0\r\n\r\n"].concat();
    let paced = [
        &size[..1],
        PAUSE,
        &size[1..],
        b"\r\n",
        json,
        b"\r\n0\r\n",
        PAUSE,
        b"\r\n",
    ]
    .concat();
    let head =
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
    let answer = [&head[..], &paced].concat();
    let (el, _) = raw_el(Arc::new(move |_, _| (answer.clone(), false))).await;
    let proxy = Proxy::start(&format!("http://{el}")).await;
    let mut cl = TcpStream::connect(proxy.addr).await.unwrap();
    let mut buf = Vec::new();
    cl.write_all(&post("/", GET_PAYLOAD)).await.unwrap();
    let got = read_answer(&mut cl, &mut buf).await.expect("an answer");
    assert_eq!(got.wire_body, wire, "the chunks as the EL sent them");
    let (db, _dir) = proxy.finish().await;
    let code: i64 = db
        .query_row("SELECT error_code FROM calls", [], |r| r.get(0))
        .unwrap();
    assert_eq!(code, -38001);
}

#[tokio::test]
async fn a_connections_records_keep_the_order_of_its_calls() {
    // A large chunked answer (spliced, its copy read after it ended) and a small one right
    // after it on the same connection (through memory): recorded in that order.
    let message = "x".repeat(4 << 20);
    let large =
        format!(r#"{{"jsonrpc":"2.0","id":5,"error":{{"code":-38001,"message":"{message}"}}}}"#);
    let mut chunked =
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec();
    chunked.extend_from_slice(format!("{:x}\r\n", large.len()).as_bytes());
    chunked.extend_from_slice(large.as_bytes());
    chunked.extend_from_slice(b"\r\n0\r\n\r\n");
    let small =
        r#"{"jsonrpc":"2.0","id":5,"error":{"code":-38002,"message":"Invalid forkchoice state"}}"#;
    let answers = Arc::new([chunked, length_answer(small.as_bytes())]);
    let (el, _) = raw_el(Arc::new(move |n, _| (answers[n % 2].clone(), false))).await;
    let proxy = Proxy::start(&format!("http://{el}")).await;
    let mut cl = TcpStream::connect(proxy.addr).await.unwrap();
    let mut buf = Vec::new();
    for _ in 0..3 {
        for _ in 0..2 {
            cl.write_all(&post("/", GET_PAYLOAD)).await.unwrap();
            read_answer(&mut cl, &mut buf).await.expect("an answer");
        }
    }
    let (db, _dir) = proxy.finish().await;
    let codes: Vec<i64> = rows(&db, "SELECT error_code FROM calls ORDER BY seq", |r| {
        r.get(0)
    });
    assert_eq!(codes, [-38001, -38002, -38001, -38002, -38001, -38002]);
}
