//! Bad input and upstream faults: each gets an answer shaped for the caller's transport and a
//! record, nothing half-done reaches the EL, and the proxy keeps serving.

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;

use crate::{
    Proxy,
    fake_el::{Answer, FakeEl},
    post_json, send,
};

fn json(bytes: &Bytes) -> serde_json::Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)))
}

const GOOD: &str =
    r#"{"jsonrpc":"2.0","id":9,"method":"engine_exchangeCapabilities","params":[[]]}"#;

#[tokio::test]
async fn bad_input_is_answered_by_the_proxy_and_never_reaches_the_el() {
    let el = FakeEl::start(|_| {
        Answer::ok(
            "application/json",
            r#"{"jsonrpc":"2.0","id":9,"result":[]}"#,
        )
    })
    .await;
    let proxy = Proxy::start_with(&el.url(), Duration::from_secs(5), 1000).await;
    // Not JSON.
    let (code, _, body) = send(post_json(&proxy.url(), "{not json"), false).await;
    assert_eq!(code, 200);
    assert_eq!(
        json(&body),
        serde_json::json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"request body is not valid JSON"}})
    );
    // No method: the id is echoed.
    let (_, _, body) = send(
        post_json(&proxy.url(), r#"{"jsonrpc":"2.0","id":42,"params":[]}"#),
        false,
    )
    .await;
    assert_eq!(json(&body)["id"], 42);
    assert_eq!(json(&body)["error"]["code"], -32600);
    // Over the body limit.
    let (code, _, body) = send(
        post_json(
            &proxy.url(),
            format!(
                r#"{{"id":1,"method":"x","params":["{}"]}}"#,
                "a".repeat(2000)
            ),
        ),
        false,
    )
    .await;
    assert_eq!(code, 413);
    assert_eq!(
        json(&body)["error"]["message"],
        "request body over the limit of 1000 bytes"
    );
    // An unknown path, and a malformed REST payload id: problem+json.
    let (code, headers, body) = send(
        Request::get(format!("{}/nope", proxy.url()))
            .body(Full::new(Bytes::new()))
            .unwrap(),
        false,
    )
    .await;
    assert_eq!(
        (code.as_u16(), headers["content-type"].to_str().unwrap()),
        (404, "application/problem+json")
    );
    assert_eq!(json(&body)["type"], "/engine-api/errors/method-not-found");
    let (code, _, body) = send(
        Request::get(format!("{}/engine/v1/payloads/0x12", proxy.url()))
            .body(Full::new(Bytes::new()))
            .unwrap(),
        false,
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(json(&body)["type"], "/engine-api/errors/invalid-request");
    assert!(el.seen().is_empty(), "nothing reached the EL");
    // And the proxy still serves.
    let (code, _, body) = send(post_json(&proxy.url(), GOOD), false).await;
    assert_eq!(
        (code.as_u16(), json(&body)["result"].clone()),
        (200, serde_json::json!([]))
    );
    let (db, _dir) = proxy.finish().await;
    let counts: Vec<(String, Option<i64>, i64)> = db
        .prepare("SELECT coalesce(error_side, '-'), error_code, status FROM calls ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        counts,
        vec![
            ("cl".into(), Some(-32700), 200),
            ("cl".into(), Some(-32600), 200),
            ("cl".into(), Some(-38004), 413),
            ("cl".into(), Some(-32601), 404),
            ("cl".into(), Some(-32600), 400),
            ("-".into(), None, 200),
        ]
    );
}

#[tokio::test]
async fn upstream_refused_and_timeout_are_502_and_504_in_the_callers_shape() {
    // A port with nothing listening.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let proxy = Proxy::start(&format!("http://{closed}")).await;
    let (code, _, body) = send(post_json(&proxy.url(), GOOD), false).await;
    assert_eq!(code, 502);
    let body = json(&body);
    assert_eq!(
        (body["id"].clone(), body["error"]["code"].clone()),
        (serde_json::json!(9), serde_json::json!(-32603))
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Connection refused"),
        "{body}"
    );
    let rest = Request::post(format!("{}/engine/v1/forkchoice", proxy.url()))
        .header("eth-execution-version", "osaka")
        .body(Full::new(Bytes::from_static(&[0; 100])))
        .unwrap();
    let (code, headers, body) = send(rest, false).await;
    assert_eq!(
        (code.as_u16(), headers["content-type"].to_str().unwrap()),
        (502, "application/problem+json")
    );
    assert_eq!(json(&body)["type"], "/engine-api/errors/internal");
    let (db, _dir) = proxy.finish().await;
    // The records carry the status the CL got, not the problem's usual one.
    assert_eq!(
        crate::status_and_side(&db),
        [(502, Some("el".into())), (502, Some("el".into()))]
    );

    // An EL that does not answer in time.
    let el = FakeEl::start(|_| {
        let mut a = Answer::ok("application/json", GOOD);
        a.delay = Duration::from_secs(3);
        a
    })
    .await;
    let proxy = Proxy::start_with(&el.url(), Duration::from_millis(300), 1 << 20).await;
    let started = std::time::Instant::now();
    let (code, _, body) = send(post_json(&proxy.url(), GOOD), false).await;
    assert_eq!(code, 504);
    assert!(
        json(&body)["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not answer within 300ms")
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the CL is answered at the timeout"
    );
    let (db, _dir) = proxy.finish().await;
    let status: i64 = db
        .query_row("SELECT status FROM calls", [], |r| r.get(0))
        .unwrap();
    assert_eq!(status, 504);
}

#[tokio::test]
async fn el_errors_pass_through_unchanged_and_are_recorded() {
    let answer = r#"{"jsonrpc":"2.0","id":5,"error":{"code":-38001,"message":"Unknown payload"}}"#;
    let el = FakeEl::start(move |_| Answer::ok("application/json", answer)).await;
    let proxy = Proxy::start(&el.url()).await;
    let (code, _, body) = send(post_json(&proxy.url(), r#"{"jsonrpc":"2.0","id":5,"method":"engine_getPayloadV5","params":["0x0000000000000001"]}"#), false).await;
    assert_eq!((code.as_u16(), body.as_ref()), (200, answer.as_bytes()));
    let (db, _dir) = proxy.finish().await;
    let r: (i64, String, String, String) = db
        .query_row(
            "SELECT error_code, error_message, error_side, payload_id FROM calls",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!(
        r,
        (
            -38001,
            "Unknown payload".into(),
            "el".into(),
            "0x0000000000000001".into()
        )
    );
}

#[tokio::test]
async fn upstream_reset_mid_body_is_seen_by_the_cl_and_recorded_and_the_proxy_goes_on() {
    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // An EL that promises 100,000 bytes, sends 1,000 and closes; the next connection is fine.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let el = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for attempt in 0.. {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let mut buf = vec![0u8; 65536];
            let mut seen = Vec::new();
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = stream.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                seen.extend_from_slice(&buf[..n]);
            }
            if attempt == 0 {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n";
                stream.write_all(head.as_bytes()).await.unwrap();
                stream.write_all(&[b' '; 1000]).await.unwrap();
                drop(stream);
            } else {
                let body = r#"{"jsonrpc":"2.0","id":9,"result":[]}"#;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                stream.write_all(answer.as_bytes()).await.unwrap();
            }
        }
    });
    let proxy = Proxy::start(&format!("http://{el}")).await;
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let response = client
        .request(post_json(&proxy.url(), GOOD))
        .await
        .expect("the head arrives");
    assert_eq!(response.status(), 200);
    let body = response.into_body().collect().await;
    assert!(
        body.is_err(),
        "the CL sees the body cut short, not a complete answer"
    );
    let (code, _, body) = send(post_json(&proxy.url(), GOOD), false).await;
    assert_eq!(
        (code.as_u16(), json(&body)["result"].clone()),
        (200, serde_json::json!([]))
    );
    let (db, _dir) = proxy.finish().await;
    let rows: Vec<(String, String, i64)> = db
        .prepare("SELECT coalesce(error_side, '-'), coalesce(error_message, '-'), response_bytes FROM calls ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].0, "el", "{rows:?}");
    assert!(rows[0].1.starts_with("upstream body failed"), "{rows:?}");
    assert_eq!(rows[0].2, 1000, "the bytes that did cross");
    assert_eq!(rows[1].0, "-");
}
