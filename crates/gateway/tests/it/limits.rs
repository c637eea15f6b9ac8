//! Limits: a client that trickles its body gets a 408 and is cut off, one that trickles its
//! headers is disconnected, calls beyond the in-flight cap get a 503 at once, a body over its
//! resource's or method's limit a 413 (from its Content-Length, before it is read, or while it
//! is read), a head over the header limit a 431; each is recorded, nothing half-read reaches
//! the EL, and the proxy keeps serving.

use std::time::{Duration, Instant};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use crate::{
    LIMITS, Proxy,
    fake_el::{Answer, FakeEl},
    post_json, send,
};

const CALL: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"engine_exchangeCapabilities","params":[[]]}"#;
const ANSWER: &str = r#"{"jsonrpc":"2.0","id":1,"result":[]}"#;

fn with_limits(limits: sszgate_gateway::Limits) {
    LIMITS.with(|l| *l.borrow_mut() = limits);
}

/// Reads until the server closes the connection (or 5 s pass).
async fn read_to_close(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn a_trickling_body_gets_a_408_and_a_trickling_head_is_cut_off() {
    let el = FakeEl::start(|_| Answer::ok("application/json", ANSWER)).await;
    with_limits(sszgate_gateway::Limits {
        header_timeout: Duration::from_millis(400),
        body_timeout: Duration::from_millis(400),
        max_in_flight: 8,
        ..sszgate_gateway::Limits::default()
    });
    let proxy = Proxy::start(&el.url()).await;
    let addr = proxy.url().trim_start_matches("http://").to_string();

    // Headers at once, then one byte of body every 100 ms.
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(
            format!(
                "POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                CALL.len()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let started = Instant::now();
    let trickle = async {
        for byte in CALL.as_bytes() {
            if stream.write_all(&[*byte]).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_millis(700), trickle).await;
    let answer = read_to_close(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(3));

    // A head that never ends: the connection is closed.
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(b"POST / HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let _ = read_to_close(&mut stream).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "closed after the header timeout, not left open"
    );

    // The proxy keeps serving, and the EL saw only this call.
    let (code, _, body) = send(post_json(&proxy.url(), CALL), false).await;
    assert_eq!((code.as_u16(), body.as_ref()), (200, ANSWER.as_bytes()));
    assert_eq!(el.seen.lock().unwrap().len(), 1);
    let (db, _dir) = proxy.finish().await;
    let rows = crate::status_and_side(&db);
    assert_eq!(rows, [(408, Some("cl".into())), (200, None)]);
}

#[tokio::test]
async fn calls_beyond_the_in_flight_cap_get_a_503_at_once() {
    let el = FakeEl::start(|_| {
        let mut answer = Answer::ok("application/json", ANSWER);
        answer.delay = Duration::from_millis(3000);
        answer
    })
    .await;
    with_limits(sszgate_gateway::Limits {
        max_in_flight: 1,
        ..sszgate_gateway::Limits::default()
    });
    let proxy = Proxy::start(&el.url()).await;
    let url = proxy.url();
    let slow = tokio::spawn({
        let url = url.clone();
        async move { send(post_json(&url, CALL), false).await }
    });
    // The slow call holds the only permit once the EL has it.
    el.wait_seen(1).await;
    let started = Instant::now();
    let (code, _, body) = send(post_json(&url, CALL), false).await;
    assert_eq!(code, 503);
    // At once: before the slow call's answer is due, so not queued behind it (a bound of
    // the behaviour, 3 s, not of the machine's speed).
    assert!(
        started.elapsed() < Duration::from_millis(3000),
        "the refusal waited for the slow call: {:?}",
        started.elapsed()
    );
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("calls in flight"),
        "{answer}"
    );
    assert_eq!(slow.await.unwrap().0, 200);
    // The permit is back: the next call goes through.
    assert_eq!(send(post_json(&url, CALL), false).await.0, 200);
    assert_eq!(el.seen.lock().unwrap().len(), 2);
    let (db, _dir) = proxy.finish().await;
    let statuses: Vec<i64> = db
        .prepare("SELECT status FROM calls ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut sorted = statuses.clone();
    sorted.sort();
    assert_eq!(sorted, [200, 200, 503], "{statuses:?}");
}

/// Reads one HTTP/1.1 answer (head and a Content-Length body) without waiting for the
/// connection to close: the proxy answers a refused body without reading it, and the test
/// must not depend on when the connection goes.
async fn read_answer(stream: &mut TcpStream) -> (String, String) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&seen[..end]).into_owned();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if seen.len() >= end + 4 + length {
                let body = String::from_utf8_lossy(&seen[end + 4..end + 4 + length]).into_owned();
                return (head, body);
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("the proxy answers")
            .unwrap();
        assert!(
            n > 0,
            "closed before an answer: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
}

/// One record's (status, error side, error code, resource, method, error message).
type Row = (
    i64,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn rows(db: &rusqlite::Connection) -> Vec<Row> {
    db.prepare(
        "SELECT status, error_side, error_code, resource, method, error_message FROM calls ORDER BY seq",
    )
    .unwrap()
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// One record's (status, error side, transport, error message).
type HeadRow = (i64, Option<String>, Option<String>, Option<String>);

fn some(s: &str) -> Option<String> {
    Some(s.to_string())
}

#[tokio::test]
async fn bodies_over_their_resources_limit_get_a_413_before_they_are_read() {
    use sszgate_engine::Resource;
    let el = FakeEl::start(|_| Answer::ok("application/json", ANSWER)).await;
    with_limits(sszgate_gateway::Limits::default());
    // A global cap of 1 MiB: a newPayload may use all of it, a forkchoiceUpdated a few KB.
    let proxy = Proxy::start_with(&el.url(), Duration::from_secs(5), 1 << 20).await;
    let addr = proxy.url().trim_start_matches("http://").to_string();
    let fcu = sszgate_gateway::rest_body_limit(Resource::Forkchoice);
    let blobs = sszgate_gateway::rest_body_limit(Resource::Blobs(2));
    let fcu_json = sszgate_gateway::json_call_limit("engine_forkchoiceUpdatedV3");
    assert!(
        fcu < 2048 && blobs < 8192 && fcu_json < 32 << 10,
        "{fcu} {blobs} {fcu_json}"
    );

    // 1. A REST forkchoice that declares 500,000 bytes and sends none of them: answered at
    // once from the Content-Length (the test would hang here if the proxy waited for them).
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(b"POST /engine/v1/forkchoice HTTP/1.1\r\nhost: x\r\neth-execution-version: osaka\r\ncontent-type: application/octet-stream\r\ncontent-length: 500000\r\n\r\n")
        .await
        .unwrap();
    let (head, body) = read_answer(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    assert!(head.contains("application/problem+json"), "{head}");
    let problem: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(problem["type"], "/engine-api/errors/request-too-large");
    let fcu_message = format!(
        "request body of 500000 bytes over the limit of {fcu} bytes for POST /engine/v1/forkchoice"
    );
    assert_eq!(problem["detail"], fcu_message.as_str());

    // 2. A chunked getBlobs body (no Content-Length) over its limit: cut off while read.
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(b"POST /engine/v1/blobs/v2 HTTP/1.1\r\nhost: x\r\ncontent-type: application/octet-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        .await
        .unwrap();
    for _ in 0..4 {
        let chunk = [0u8; 4096];
        stream.write_all(b"1000\r\n").await.unwrap();
        stream.write_all(&chunk).await.unwrap();
        stream.write_all(b"\r\n").await.unwrap();
    }
    let (head, body) = read_answer(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    let problem: serde_json::Value = serde_json::from_str(&body).unwrap();
    let blobs_message =
        format!("request body over the limit of {blobs} bytes for POST /engine/v1/blobs/v2");
    assert_eq!(problem["detail"], blobs_message.as_str());

    // 3. A GET with a body: a GET's limit is no body at all.
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(b"GET /engine/v1/payloads/0x0000000000000001 HTTP/1.1\r\nhost: x\r\neth-execution-version: osaka\r\ncontent-length: 1\r\n\r\n")
        .await
        .unwrap();
    let (head, _) = read_answer(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");

    // 4. A JSON-RPC forkchoiceUpdated padded to 100 KB: the method is in the body, so the
    // call is held to its method's limit once scanned; the id is echoed.
    let padded = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"engine_forkchoiceUpdatedV3","params":[{{}},null]{}}}"#,
        " ".repeat(100_000)
    );
    let (code, _, body) = send(post_json(&proxy.url(), padded.clone()), false).await;
    assert_eq!(code, 413);
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let rpc_message = format!(
        "call 0 is {} bytes, over the limit of {fcu_json} bytes for engine_forkchoiceUpdatedV3",
        padded.len()
    );
    assert_eq!(
        answer,
        serde_json::json!({"jsonrpc":"2.0","id":7,"error":{"code":-38004,"message":rpc_message}})
    );

    // 5. Any JSON-RPC call over the global cap, from its Content-Length alone.
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    stream
        .write_all(b"POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2000000\r\n\r\n")
        .await
        .unwrap();
    let (head, body) = read_answer(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["error"]["code"], -38004);
    let cap_message = "request body of 2000000 bytes over the limit of 1048576 bytes";
    assert_eq!(answer["error"]["message"], cap_message);

    // 6. A 500 KB newPayload is legal (its limit is the global cap) and relayed; so is a
    // small REST forkchoice.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"engine_newPayloadV4","params":[{{"x":"{}"}}]}}"#,
        "a".repeat(500_000)
    );
    let (code, _, body) = send(post_json(&proxy.url(), big.clone()), false).await;
    assert_eq!((code.as_u16(), body.as_ref()), (200, ANSWER.as_bytes()));
    let small = http::Request::post(format!("{}/engine/v1/forkchoice", proxy.url()))
        .header("eth-execution-version", "osaka")
        .header("content-type", "application/octet-stream")
        .body(http_body_util::Full::new(bytes::Bytes::from(vec![
            0u8;
            100
        ])))
        .unwrap();
    assert_eq!(send(small, false).await.0, 200);
    let seen: Vec<usize> = el.seen().iter().map(|s| s.body.len()).collect();
    assert_eq!(
        seen,
        [big.len(), 100],
        "only the legal calls reached the EL"
    );

    let (db, _dir) = proxy.finish().await;
    let cl = some("cl");
    assert_eq!(
        rows(&db),
        [
            (
                413,
                cl.clone(),
                Some(-38004),
                some("forkchoice"),
                some("engine_forkchoiceUpdatedV3"),
                Some(fcu_message)
            ),
            (
                413,
                cl.clone(),
                Some(-38004),
                some("blobs/v2"),
                some("engine_getBlobsV2"),
                Some(blobs_message)
            ),
            (
                413,
                cl.clone(),
                Some(-38004),
                some("payloads/{payloadId}"),
                some("engine_getPayloadV5"),
                some(
                    "request body of 1 bytes over the limit of 0 bytes for GET /engine/v1/payloads/0x0000000000000001"
                )
            ),
            (
                413,
                cl.clone(),
                Some(-38004),
                None,
                some("engine_forkchoiceUpdatedV3"),
                Some(rpc_message)
            ),
            (413, cl, Some(-38004), None, None, some(cap_message)),
            (200, None, None, None, some("engine_newPayloadV4"), None),
            (
                200,
                None,
                None,
                some("forkchoice"),
                some("engine_forkchoiceUpdatedV3"),
                None
            ),
        ]
    );
}

#[tokio::test]
async fn heads_over_the_header_limit_get_a_431_and_a_record() {
    let el = FakeEl::start(|_| Answer::ok("application/json", ANSWER)).await;
    let limits = sszgate_gateway::Limits {
        max_header_bytes: 2048,
        ..sszgate_gateway::Limits::default()
    };
    with_limits(limits);
    let proxy = Proxy::start(&el.url()).await;
    let addr = proxy.url().trim_start_matches("http://").to_string();
    let pad = "p".repeat(3000);

    // JSON-RPC over HTTP/1.1: a JSON-RPC error object, status 431.
    let request = http::Request::post(proxy.url())
        .header("content-type", "application/json")
        .header("x-pad", &pad)
        .body(http_body_util::Full::new(bytes::Bytes::from_static(
            CALL.as_bytes(),
        )))
        .unwrap();
    let (code, _, body) = send(request, false).await;
    assert_eq!(code, 431);
    let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["error"]["code"], -38004);
    let message = answer["error"]["message"].as_str().unwrap().to_string();
    assert!(
        message.starts_with("request head of ")
            && message.ends_with(" bytes over the limit of 2048 bytes"),
        "{message}"
    );

    // REST over h2: problem+json, status 431.
    let request = http::Request::get(format!("{}/engine/v1/capabilities", proxy.url()))
        .header("x-pad", &pad)
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .unwrap();
    let (code, headers, body) = send(request, true).await;
    assert_eq!(
        (code.as_u16(), headers["content-type"].to_str().unwrap()),
        (431, "application/problem+json")
    );
    let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(problem["type"], "/engine-api/errors/request-too-large");

    // A head past what the HTTP layer can hold never becomes a request: the HTTP layer
    // answers 431 and closes, and the fact is recorded. hyper checks its buffer cap (four
    // times the limit, at least its default of 408 KiB) between reads, and its buffer grows
    // by doubling, so one read can take it up to twice the cap: a head below that which
    // arrives in one read is parsed whole and refused by the proxy's own check instead (a
    // JSON-RPC 431, as above). Only a head over twice the cap always meets the HTTP layer's.
    let layer_cap = limits.connection().http1_buffer();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let huge = format!(
        "POST / HTTP/1.1\r\nhost: x\r\nx-pad: {}\r\n\r\n",
        "p".repeat(2 * layer_cap)
    );
    let _ = stream.write_all(huge.as_bytes()).await;
    let answer = read_to_close(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");

    // The proxy keeps serving; the EL saw only the good call.
    let (code, _, body) = send(post_json(&proxy.url(), CALL), false).await;
    assert_eq!((code.as_u16(), body.as_ref()), (200, ANSWER.as_bytes()));
    assert_eq!(el.seen().len(), 1);
    let (db, _dir) = proxy.finish().await;
    let mut rows: Vec<HeadRow> = db
        .prepare("SELECT status, error_side, transport, error_message FROM calls ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // The HTTP layer's refusal is recorded when its connection ends: sorted, the 200 comes
    // first, then the 431s by transport (json-rpc, other, rest-ssz).
    rows.sort();
    assert_eq!(rows.len(), 4, "{rows:#?}");
    assert_eq!(rows[0], (200, None, some("json-rpc"), None));
    let cl = some("cl");
    assert_eq!(rows[1], (431, cl.clone(), some("json-rpc"), Some(message)));
    assert_eq!(
        rows[2],
        (
            431,
            cl.clone(),
            some("other"),
            some(
                "request head over the 417792 bytes the HTTP layer buffers, or over 100 header fields: answered 431 and closed"
            )
        )
    );
    let rest = &rows[3];
    assert_eq!(
        (rest.0, &rest.1, rest.2.as_deref()),
        (431, &cl, Some("rest-ssz"))
    );
    assert!(
        rest.3
            .as_deref()
            .unwrap()
            .ends_with("over the limit of 2048 bytes"),
        "{rest:?}"
    );
}

/// Broken HTTP framing in a body (a chunk size that is not hex, or past 2^64) is answered
/// 400 in the caller's shape, recorded, and never reaches the EL.
#[tokio::test]
async fn a_body_with_broken_framing_gets_a_400_and_never_reaches_the_el() {
    let el = FakeEl::start(|_| Answer::ok("application/json", ANSWER)).await;
    with_limits(sszgate_gateway::Limits::default());
    let proxy = Proxy::start(&el.url()).await;
    let addr = proxy.url().trim_start_matches("http://").to_string();
    for size in ["zz", "10000000000000000"] {
        let mut stream = TcpStream::connect(&addr).await.unwrap();
        let request = format!(
            "POST / HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n{size}\r\n{CALL}\r\n0\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let answer = read_to_close(&mut stream).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{size}: {answer}");
        assert!(
            answer.contains("reading the request body failed"),
            "{size}: {answer}"
        );
    }
    let (code, _, _) = send(post_json(&proxy.url(), CALL), false).await;
    assert_eq!(code, 200);
    assert_eq!(el.seen().len(), 1);
    let (db, _dir) = proxy.finish().await;
    let statuses: Vec<i64> = rows(&db).iter().map(|r| r.0).collect();
    assert_eq!(statuses, [400, 400, 200]);
}
