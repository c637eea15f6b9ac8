//! The control point against a real execution client (geth): each rule changes exactly the
//! calls it names, the way it says, and nothing else; removing a rule restores the relay;
//! a pause holds or refuses calls; every changed call's record names its rule.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use serde_json::{Value, json};
use sszgate_gateway::JwtSecret;

use crate::{
    CONTROL_TOKEN, Proxy,
    geth::{next_attributes, rpc, start_geth},
    send, try_send,
};

const TOKEN: &str = "control-secret";

/// A control call; its status and JSON answer.
async fn control(
    proxy: &Proxy,
    method: &str,
    path: &str,
    body: Value,
    token: bool,
) -> (u16, Value) {
    let mut request = Request::builder()
        .method(method)
        .uri(format!("http://{}{path}", proxy.control));
    if token {
        request = request.header("authorization", format!("Bearer {TOKEN}"));
    }
    let body = if body.is_null() {
        Bytes::new()
    } else {
        Bytes::from(body.to_string())
    };
    let (status, _, answer) = send(request.body(Full::new(body)).unwrap(), false).await;
    (
        status.as_u16(),
        serde_json::from_slice(&answer).unwrap_or(Value::Null),
    )
}

async fn add_rule(proxy: &Proxy, rule: Value) -> u64 {
    let (status, answer) = control(proxy, "POST", "/_sszgate/rules", rule, true).await;
    assert_eq!(status, 201, "{answer}");
    answer["id"].as_u64().unwrap()
}

#[tokio::test]
async fn rules_and_pauses_change_exactly_what_they_say_against_real_geth() {
    let Some(node) = start_geth().await else {
        return;
    };
    CONTROL_TOKEN.with(|t| *t.borrow_mut() = Some(TOKEN.into()));
    let proxy = Proxy::start(&format!("http://127.0.0.1:{}", node.auth_port)).await;
    let secret = JwtSecret::from_hex(&node.secret_hex).unwrap();
    let url = proxy.url();
    let call = |method: &'static str, params: Value| {
        let (url, token) = (url.clone(), secret.token());
        async move { rpc(&url, Some(&token), method, params).await }
    };

    // Changing the relay takes the token; reading does not.
    let rule = json!({"action": {"kind": "drop"}});
    assert_eq!(
        control(&proxy, "POST", "/_sszgate/rules", rule, false)
            .await
            .0,
        401
    );
    assert_eq!(
        control(&proxy, "GET", "/_sszgate/rules", Value::Null, false)
            .await
            .0,
        200
    );
    let nonsense = json!({"method": "engine_nope", "action": {"kind": "drop"}});
    assert_eq!(
        control(&proxy, "POST", "/_sszgate/rules", nonsense, true)
            .await
            .0,
        422
    );

    // 1. One failed getPayload: the CL sees the error once, then the EL's payload.
    let unknown = add_rule(
        &proxy,
        json!({"method": "engine_getPayloadV5", "count": 1,
               "action": {"kind": "rpc_error", "code": -38001, "message": "Unknown payload"}}),
    )
    .await;
    let head = node.head.clone();
    let (attributes, root) = next_attributes(node.timestamp);
    let state = json!({"headBlockHash": head, "safeBlockHash": head, "finalizedBlockHash": head});
    let (_, fcu) = call("engine_forkchoiceUpdatedV3", json!([state, attributes])).await;
    assert_eq!(fcu["result"]["payloadStatus"]["status"], "VALID", "{fcu}");
    let id = fcu["result"]["payloadId"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (_, failed) = call("engine_getPayloadV5", json!([id])).await;
    assert_eq!(
        failed["error"],
        json!({"code": -38001, "message": "Unknown payload"}),
        "{failed}"
    );
    let (_, built) = call("engine_getPayloadV5", json!([id])).await;
    let payload = built["result"]["executionPayload"].clone();
    assert_eq!(payload["blockNumber"], "0x1", "{built}");
    let requests = built["result"]["executionRequests"].clone();
    let new_head = payload["blockHash"].as_str().unwrap().to_string();

    // 2. newPayload answered SYNCING by the rule: geth never sees the block, so a
    // forkchoiceUpdated to it is SYNCING from geth itself. The rule removed, the block goes in.
    let syncing = add_rule(
        &proxy,
        json!({"method": "engine_newPayload*", "action": {"kind": "payload_status", "status": "SYNCING"}}),
    )
    .await;
    let new_payload = json!([payload, [], root, requests]);
    let (_, status) = call("engine_newPayloadV4", new_payload.clone()).await;
    assert_eq!(status["result"]["status"], "SYNCING", "{status}");
    assert!(status["result"]["latestValidHash"].is_null(), "{status}");
    let to_new = json!([{"headBlockHash": new_head, "safeBlockHash": new_head, "finalizedBlockHash": new_head}, null]);
    let (_, fcu) = call("engine_forkchoiceUpdatedV3", to_new.clone()).await;
    assert_eq!(
        fcu["result"]["payloadStatus"]["status"], "SYNCING",
        "geth has not seen it: {fcu}"
    );
    let path = format!("/_sszgate/rules/{syncing}");
    assert_eq!(
        control(&proxy, "DELETE", &path, Value::Null, true).await.0,
        200
    );
    assert_eq!(
        control(&proxy, "DELETE", &path, Value::Null, true).await.0,
        404
    );
    let (_, status) = call("engine_newPayloadV4", new_payload).await;
    assert_eq!(status["result"]["status"], "VALID", "{status}");

    // 3. A corrupted field of the EL's answer, once.
    add_rule(
        &proxy,
        json!({"method": "engine_forkchoiceUpdatedV3", "count": 1,
               "action": {"kind": "corrupt", "pointer": "/payloadStatus/status", "value": "INVALID"}}),
    )
    .await;
    let (_, fcu) = call("engine_forkchoiceUpdatedV3", to_new.clone()).await;
    assert_eq!(fcu["result"]["payloadStatus"]["status"], "INVALID", "{fcu}");
    assert_eq!(
        fcu["result"]["payloadStatus"]["latestValidHash"],
        json!(new_head),
        "only the named field changes"
    );
    let (_, fcu) = call("engine_forkchoiceUpdatedV3", to_new).await;
    assert_eq!(fcu["result"]["payloadStatus"]["status"], "VALID", "{fcu}");

    // 4. A delay, a drop and an HTTP status, each once, on exchangeCapabilities.
    let capabilities = json!([["engine_newPayloadV4"]]);
    add_rule(&proxy, json!({"method": "engine_exchangeCapabilities", "count": 1, "action": {"kind": "delay", "ms": 400}})).await;
    let started = Instant::now();
    let (status, answer) = call("engine_exchangeCapabilities", capabilities.clone()).await;
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert_eq!(status, 200, "{answer}");
    let offered = answer["result"].as_array().unwrap();
    assert!(
        offered.contains(&json!("engine_newPayloadV4")),
        "the EL's own answer: {answer}"
    );
    add_rule(
        &proxy,
        json!({"method": "engine_exchangeCapabilities", "count": 1, "action": {"kind": "drop"}}),
    )
    .await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "engine_exchangeCapabilities", "params": capabilities}).to_string();
    let dropped = try_send(
        Request::post(&url)
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {}", secret.token()))
            .body(Full::new(Bytes::from(body)))
            .unwrap(),
        false,
    )
    .await;
    assert!(
        dropped.is_err(),
        "no answer on a dropped connection: {dropped:?}"
    );
    add_rule(&proxy, json!({"method": "engine_exchangeCapabilities", "count": 1, "action": {"kind": "http_status", "status": 503}})).await;
    assert_eq!(
        call("engine_exchangeCapabilities", capabilities.clone())
            .await
            .0,
        503
    );
    assert_eq!(
        call("engine_exchangeCapabilities", capabilities.clone())
            .await
            .0,
        200
    );

    // 5. Paused: refused at once, or held until resumed.
    let pause = |mode: &str| json!({"mode": mode});
    assert_eq!(
        control(&proxy, "POST", "/_sszgate/pause", pause("reject"), true)
            .await
            .0,
        200
    );
    let (status, refused) = call("engine_exchangeCapabilities", capabilities.clone()).await;
    assert_eq!(status, 503, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("paused"),
        "{refused}"
    );
    control(&proxy, "POST", "/_sszgate/pause", pause("hold"), true).await;
    let held = tokio::spawn(call("engine_exchangeCapabilities", capabilities.clone()));
    loop {
        let (_, state) = control(&proxy, "GET", "/_sszgate/rules", Value::Null, false).await;
        if state["holding"] == 1 {
            assert_eq!(state["paused"], "hold");
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!held.is_finished(), "a held call waits");
    assert_eq!(
        control(&proxy, "POST", "/_sszgate/resume", Value::Null, true)
            .await
            .0,
        200
    );
    assert_eq!(held.await.unwrap().0, 200);
    assert_eq!(
        control(&proxy, "GET", "/_sszgate/rules", Value::Null, false)
            .await
            .1["rules"],
        json!([])
    );

    // Fourteen calls: eight of the chain, four on exchangeCapabilities, two paused.
    let metrics = proxy.metrics_after(14).await;
    for line in [
        r#"sszgate_injected_total{method="engine_getPayloadV5",action="rpc_error"} 1"#,
        r#"sszgate_injected_total{method="engine_newPayloadV4",action="payload_status"} 1"#,
        r#"sszgate_injected_total{method="engine_exchangeCapabilities",action="held"} 2"#,
    ] {
        assert!(metrics.contains(line), "{line} in {metrics}");
    }
    let (db, _dir) = proxy.finish().await;
    let mut stmt = db
        .prepare("SELECT method, injected FROM calls WHERE injected IS NOT NULL ORDER BY seq")
        .unwrap();
    let injected: Vec<(String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let expected = [
        (
            "engine_getPayloadV5",
            format!("rule {unknown}: rpc error -38001 \"Unknown payload\""),
        ),
        (
            "engine_newPayloadV4",
            format!("rule {syncing}: payload status SYNCING"),
        ),
        (
            "engine_forkchoiceUpdatedV3",
            format!(
                "rule {}: corrupt /payloadStatus/status = \"INVALID\"",
                syncing + 1
            ),
        ),
        (
            "engine_exchangeCapabilities",
            format!("rule {}: delay 400 ms", syncing + 2),
        ),
        (
            "engine_exchangeCapabilities",
            format!("rule {}: drop the connection", syncing + 3),
        ),
        (
            "engine_exchangeCapabilities",
            format!("rule {}: http status 503", syncing + 4),
        ),
        ("engine_exchangeCapabilities", "paused: refused".to_string()),
        (
            "engine_exchangeCapabilities",
            "paused: held until resumed".to_string(),
        ),
    ];
    let expected: Vec<(String, String)> = expected
        .into_iter()
        .map(|(m, n)| (m.to_string(), n))
        .collect();
    assert_eq!(injected, expected);
}

/// Opens `/_sszgate/events?{query}` on the control address; the connection, past the head.
async fn subscribe(
    proxy: &Proxy,
    query: &str,
    receive_buffer: Option<u32>,
) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    if let Some(size) = receive_buffer {
        socket.set_recv_buffer_size(size).unwrap();
    }
    let mut stream = socket.connect(proxy.control).await.unwrap();
    let head = format!("GET /_sszgate/events?{query} HTTP/1.1\r\nhost: x\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        assert_eq!(
            stream.read(&mut byte).await.unwrap(),
            1,
            "the stream's head"
        );
        seen.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&seen);
    assert!(
        head.starts_with("HTTP/1.1 200") && head.contains("text/event-stream"),
        "{head}"
    );
    stream
}

/// Reads `stream` until it holds `events` `data:` lines; their JSON (a chunked body's
/// framing lines are skipped).
async fn read_events(stream: &mut tokio::net::TcpStream, events: usize) -> Vec<Value> {
    use tokio::io::AsyncReadExt;
    let mut text = String::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let data: Vec<Value> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if data.len() >= events {
            return data;
        }
        let n = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut buf))
            .await
            .expect("events keep coming")
            .unwrap();
        assert!(n > 0, "the stream ended");
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

#[tokio::test]
async fn the_event_stream_sends_each_record_that_passes_its_filter() {
    use crate::fake_el::{Answer, FakeEl};
    let el = FakeEl::start(|_| {
        Answer::ok(
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":[]}"#,
        )
    })
    .await;
    let proxy = Proxy::start(&el.url()).await;
    let mut all = subscribe(&proxy, "", None).await;
    let mut some = subscribe(&proxy, "method=engine_getClientVersion*&status=200", None).await;
    let (status, _, bad) = send(
        Request::get(format!(
            "http://{}/_sszgate/events?colour=red",
            proxy.control
        ))
        .body(Full::new(Bytes::new()))
        .unwrap(),
        false,
    )
    .await;
    assert_eq!(status, 400, "{bad:?}");
    for i in 0..30 {
        let method = if i % 3 == 0 {
            "engine_getClientVersionV1"
        } else {
            "engine_exchangeCapabilities"
        };
        let body = format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"{method}","params":[]}}"#);
        let (status, _, _) = send(crate::post_json(&proxy.url(), body), false).await;
        assert_eq!(status, 200);
    }
    let everything = read_events(&mut all, 30).await;
    let ids: Vec<&str> = everything
        .iter()
        .map(|e| e["rpc_id"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..30).map(|i| i.to_string()).collect();
    assert_eq!(ids, expected, "every call, in order");
    let filtered = read_events(&mut some, 10).await;
    let ids: Vec<&str> = filtered
        .iter()
        .map(|e| e["rpc_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["0", "3", "6", "9", "12", "15", "18", "21", "24", "27"]
    );
    assert!(
        filtered
            .iter()
            .all(|e| e["method"] == "engine_getClientVersionV1" && e["status"] == 200)
    );
}

#[tokio::test]
async fn a_stalled_subscriber_skips_events_and_never_slows_the_relay() {
    use crate::fake_el::{Answer, FakeEl};
    let el = FakeEl::start(|_| {
        Answer::ok(
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":[]}"#,
        )
    })
    .await;
    let proxy = Proxy::start(&el.url()).await;
    // Subscribed with a tiny receive buffer, then never read while the calls pass: far more
    // events than the broadcast keeps and the sockets hold.
    let mut stalled = subscribe(&proxy, "", Some(4096)).await;
    let calls = 8000;
    for i in 0..calls {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"engine_exchangeCapabilities","params":[[]]}}"#
        );
        let (status, _, _) = send(crate::post_json(&proxy.url(), body), false).await;
        assert_eq!(status, 200);
    }
    proxy.metrics_after(calls).await;
    let stats = proxy.recorder.stats();
    assert_eq!(
        (stats.recorded, stats.dropped),
        (calls, 0),
        "the recorder kept up: {stats:?}"
    );
    // Now read: what the sockets held, then the notice of what was skipped.
    use tokio::io::AsyncReadExt;
    let mut text = String::new();
    let mut buf = vec![0u8; 64 << 10];
    while !text.contains("event: lagged") {
        let n = tokio::time::timeout(Duration::from_secs(30), stalled.read(&mut buf))
            .await
            .expect("the stream goes on")
            .unwrap();
        assert!(n > 0, "the stream ended without a lag notice");
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let at = text.find("event: lagged\ndata: ").unwrap();
    let skipped: u64 = text[at + 20..]
        .split('}')
        .next()
        .unwrap()
        .trim_start_matches("{\"skipped\":")
        .parse()
        .unwrap();
    assert!(skipped > 0 && skipped < calls, "{skipped}");
}
