//! The transport a call is recorded with follows one rule whichever stage refuses it: `POST /`
//! is json-rpc, a WebSocket upgrade is websocket, a path under `/engine/v1/` is rest-ssz,
//! anything else other.

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use sszgate_gateway::JwtSecret;

use crate::{
    LIMITS, Proxy,
    fake_el::{Answer, FakeEl},
    send,
};

const SECRET: &str = "4242424242424242424242424242424242424242424242424242424242424242";
const CALL: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"engine_exchangeCapabilities","params":[[]]}"#;

/// The calls of the test, by target, with the transport each must be recorded with.
const CALLS: [(&str, &str, &str); 4] = [
    ("POST", "/foo", "other"),
    ("GET", "/engine/v1/nonexistent", "rest-ssz"),
    ("POST", "/", "json-rpc"),
    ("GET", "/ws", "websocket"),
];

/// One of [`CALLS`], with a valid token or none.
fn request(url: &str, method: &str, target: &str, token: Option<String>) -> Request<Full<Bytes>> {
    let mut request = Request::builder()
        .method(method)
        .uri(format!("{url}{target}"))
        .header("content-type", "application/json");
    if target == "/ws" {
        request = request
            .header("connection", "Upgrade")
            .header("upgrade", "websocket")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==");
    }
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let body = if method == "POST" { CALL } else { "" };
    request.body(Full::new(Bytes::from(body))).unwrap()
}

#[tokio::test]
async fn refusals_record_the_same_transport_whichever_stage_refuses() {
    let el = FakeEl::start(|_| {
        let mut answer = Answer::ok(
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":[]}"#,
        );
        answer.delay = Duration::from_millis(3000);
        answer
    })
    .await;
    LIMITS.with(|l| {
        *l.borrow_mut() = sszgate_gateway::Limits {
            max_in_flight: 1,
            ..sszgate_gateway::Limits::default()
        }
    });
    let proxy = Proxy::start_auth(&el.url(), SECRET).await;
    let url = proxy.url();
    let secret = JwtSecret::from_hex(SECRET).unwrap();

    // Refused by the JWT check, from the head.
    for (method, target, _) in CALLS {
        let (code, _, _) = send(request(&url, method, target, None), false).await;
        assert_eq!(code, 401, "{method} {target}");
    }
    // Refused once the body is read: no such endpoint.
    for (method, target, _) in &CALLS[..2] {
        let good = Some(secret.token());
        let (code, _, _) = send(request(&url, method, target, good), false).await;
        assert_eq!(code, 404, "{method} {target}");
    }
    // Refused for want of a permit while a slow call holds the only one.
    let slow = tokio::spawn({
        let (url, token) = (url.clone(), Some(secret.token()));
        async move { send(request(&url, "POST", "/", token), false).await }
    });
    el.wait_seen(1).await;
    for (method, target, _) in CALLS {
        let good = Some(secret.token());
        let (code, _, _) = send(request(&url, method, target, good), false).await;
        assert_eq!(code, 503, "{method} {target}");
    }
    assert_eq!(slow.await.unwrap().0, 200);
    assert_eq!(
        el.seen.lock().unwrap().len(),
        1,
        "only the slow call reached the EL"
    );

    let (db, _dir) = proxy.finish().await;
    // Refusals are recorded as they are answered, so in the order of the calls above.
    let refused: Vec<(i64, String)> = db
        .prepare("SELECT status, transport FROM calls WHERE status != 200 ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let by_jwt = CALLS.iter().map(|c| (401, c.2));
    let by_route = CALLS[..2].iter().map(|c| (404, c.2));
    let by_permit = CALLS.iter().map(|c| (503, c.2));
    let expected: Vec<(i64, String)> = by_jwt
        .chain(by_route)
        .chain(by_permit)
        .map(|(status, transport)| (status, transport.to_string()))
        .collect();
    assert_eq!(refused, expected);
}
