//! Limits: a client that trickles its body gets a 408 and is cut off, one that trickles its
//! headers is disconnected, and calls beyond the in-flight cap get a 503 at once; each is
//! recorded, nothing half-read reaches the EL, and the proxy keeps serving.

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
        answer.delay = Duration::from_millis(800);
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
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let (code, _, body) = send(post_json(&url, CALL), false).await;
    assert_eq!(code, 503);
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "answered at once"
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
