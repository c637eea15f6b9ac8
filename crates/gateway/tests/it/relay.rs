//! Byte-exact relay on every transport, and the records it leaves.

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use rusqlite::Connection;
use sszgate_engine::{
    Fork, Message,
    message::{Blobs, NewPayload},
};
use sszgate_fixtures::{Fixtures, blobs_v2_response, built_payload, testdata_dir};

use crate::{
    Proxy,
    fake_el::{Answer, FakeEl},
    post_json, send,
};

/// A real Electra payload's newPayloadV4 params, and the payload's facts.
pub(crate) fn new_payload() -> (NewPayload, Vec<u8>) {
    let fixtures = Fixtures::load(&testdata_dir()).unwrap();
    let np = fixtures
        .largest_block(Fork::Prague)
        .unwrap()
        .new_payload()
        .unwrap();
    let params = Message::NewPayload(np.clone()).to_json().unwrap();
    (np, params)
}

fn row(db: &Connection, sql: &str) -> Vec<Option<String>> {
    let mut stmt = db.prepare(sql).unwrap();
    let n = stmt.column_count();
    stmt.query_row([], |r| {
        Ok((0..n)
            .map(|i| {
                r.get::<_, rusqlite::types::Value>(i)
                    .ok()
                    .and_then(|v| match v {
                        rusqlite::types::Value::Null => None,
                        rusqlite::types::Value::Integer(i) => Some(i.to_string()),
                        rusqlite::types::Value::Text(t) => Some(t),
                        other => Some(format!("{other:?}")),
                    })
            })
            .collect())
    })
    .unwrap()
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

#[tokio::test]
async fn json_rpc_call_is_relayed_byte_for_byte_and_recorded_with_its_facts() {
    let (np, params) = new_payload();
    let p = np.payload_v1().clone();
    let lvh = p.block_hash.to_string();
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":7,"result":{{"status":"VALID","latestValidHash":"{lvh}","validationError":null}}}}"#
    );
    let answer_for_el = answer.clone();
    let el = FakeEl::start(move |_| Answer::ok("application/json", answer_for_el.clone())).await;
    let proxy = Proxy::start(&el.url()).await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"engine_newPayloadV4","params":{}}}"#,
        String::from_utf8(params).unwrap()
    );

    let (status, headers, got) = send(post_json(&proxy.url(), body.clone()), false).await;
    assert_eq!(status, 200);
    assert_eq!(got, answer.as_bytes(), "the CL gets the EL's bytes");
    assert_eq!(headers["content-type"], "application/json");
    let seen = el.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body, body.as_bytes(), "the EL gets the CL's bytes");
    assert_eq!(
        seen[0].headers["authorization"], "Bearer test-token",
        "the CL's token passes"
    );
    assert_eq!(seen[0].target, "/");

    let (db, _dir) = proxy.finish().await;
    let r = row(
        &db,
        "SELECT method, transport, status, block_number, block_hash, parent_hash, tx_count, gas_used, payload_status, latest_valid_hash, versioned_hash_count, request_bytes, response_bytes, rpc_id, labels, error_code, http_version FROM calls",
    );
    let expected = vec![
        s("engine_newPayloadV4"),
        s("json-rpc"),
        s("200"),
        Some(p.block_number.to_string()),
        Some(p.block_hash.to_string()),
        Some(p.parent_hash.to_string()),
        Some(p.transactions.len().to_string()),
        Some(p.gas_used.to_string()),
        s("VALID"),
        Some(lvh),
        Some(np.versioned_hashes().len().to_string()),
        Some(body.len().to_string()),
        Some(answer.len().to_string()),
        s("7"),
        s(r#"{"node":"test-1"}"#),
        None,
        s("HTTP/1.1"),
    ];
    assert_eq!(r, expected);
    let timing = row(
        &db,
        "SELECT total_us > 0, upstream_ttfb_us <= upstream_ttlb_us, overhead_us >= 0, total_us >= upstream_ttlb_us FROM calls",
    );
    assert_eq!(timing, vec![s("1"), s("1"), s("1"), s("1")]);
}

#[tokio::test]
async fn batches_give_one_record_per_call_matched_by_id() {
    let fixtures = Fixtures::load(&testdata_dir()).unwrap();
    let blobs = fixtures.blobs().unwrap();
    let NewPayload::Prague(payload, ..) = fixtures
        .largest_block(Fork::Prague)
        .unwrap()
        .new_payload()
        .unwrap()
    else {
        panic!()
    };
    let built = Message::BuiltPayload(built_payload(Fork::Osaka, &payload, &blobs, 6).unwrap())
        .to_json()
        .unwrap();
    let z = format!("0x{}", "00".repeat(32));
    let fcu_result = r#"{"payloadStatus":{"status":"VALID","latestValidHash":null,"validationError":null},"payloadId":"0x0102030405060708"}"#;
    // The EL answers the batch in reverse order.
    let answer = format!(
        r#"[{{"jsonrpc":"2.0","id":"b","result":{}}},{{"jsonrpc":"2.0","id":"a","result":{fcu_result}}}]"#,
        String::from_utf8(built).unwrap()
    );
    let answer_for_el = answer.clone();
    let el = FakeEl::start(move |_| Answer::ok("application/json", answer_for_el.clone())).await;
    let proxy = Proxy::start(&el.url()).await;
    let body = format!(
        r#"[{{"jsonrpc":"2.0","id":"a","method":"engine_forkchoiceUpdatedV3","params":[{{"headBlockHash":"{z}","safeBlockHash":"{z}","finalizedBlockHash":"{z}"}},null]}},{{"jsonrpc":"2.0","id":"b","method":"engine_getPayloadV5","params":["0x0102030405060708"]}}]"#
    );
    let (status, _, got) = send(post_json(&proxy.url(), body.clone()), true).await;
    assert_eq!((status.as_u16(), got.as_ref()), (200, answer.as_bytes()));
    let (db, _dir) = proxy.finish().await;
    let fcu = row(
        &db,
        "SELECT batch_index, method, payload_status, payload_id, block_hash, http_version FROM calls WHERE batch_index = 0",
    );
    assert_eq!(
        fcu,
        vec![
            s("0"),
            s("engine_forkchoiceUpdatedV3"),
            s("VALID"),
            s("0x0102030405060708"),
            Some(z.clone()),
            s("HTTP/2")
        ]
    );
    let get = row(
        &db,
        "SELECT batch_index, method, blob_count, block_number, tx_count, payload_id FROM calls WHERE batch_index = 1",
    );
    assert_eq!(
        get,
        vec![
            s("1"),
            s("engine_getPayloadV5"),
            s("6"),
            Some(payload.payload_inner.payload_inner.block_number.to_string()),
            Some(
                payload
                    .payload_inner
                    .payload_inner
                    .transactions
                    .len()
                    .to_string()
            ),
            s("0x0102030405060708")
        ]
    );
}

#[tokio::test]
async fn rest_ssz_calls_pass_with_their_headers_over_http1_and_h2c() {
    let (np, _) = new_payload();
    let envelope = Message::NewPayload(np.clone())
        .to_ssz(Fork::Prague)
        .unwrap();
    let mut status = vec![0u8, 9, 0, 0, 0, 41, 0, 0, 0];
    status.extend_from_slice(np.payload_v1().block_hash.as_slice());
    let status_for_el = status.clone();
    let el =
        FakeEl::start(move |_| Answer::ok("application/octet-stream", status_for_el.clone())).await;
    let proxy = Proxy::start(&el.url()).await;
    for http2 in [false, true] {
        let request = Request::post(format!("{}/engine/v1/payloads", proxy.url()))
            .header("content-type", "application/octet-stream")
            .header("accept", "application/octet-stream")
            .header("eth-execution-version", "prague")
            .header("x-engine-client-version", "LH/v8.0.0")
            .header("authorization", "Bearer t")
            .body(Full::new(Bytes::from(envelope.clone())))
            .unwrap();
        let (code, headers, got) = send(request, http2).await;
        assert_eq!(
            (code.as_u16(), got.as_ref()),
            (200, status.as_slice()),
            "http2={http2}"
        );
        assert_eq!(headers["content-type"], "application/octet-stream");
    }
    let seen = el.seen();
    assert_eq!(seen.len(), 2);
    for s in &seen {
        assert_eq!(s.body, envelope.as_slice());
        assert_eq!(
            (s.method.as_str(), s.target.as_str()),
            ("POST", "/engine/v1/payloads")
        );
        for (k, v) in [
            ("eth-execution-version", "prague"),
            ("x-engine-client-version", "LH/v8.0.0"),
            ("accept", "application/octet-stream"),
            ("content-type", "application/octet-stream"),
            ("authorization", "Bearer t"),
        ] {
            assert_eq!(s.headers[k], v, "{k}");
        }
    }
    let (db, _dir) = proxy.finish().await;
    let p = np.payload_v1();
    let r = row(
        &db,
        "SELECT count(*), min(method), min(transport), min(resource), min(fork), min(cl_client), min(block_number), min(tx_count), min(payload_status), min(block_hash) FROM calls",
    );
    assert_eq!(
        r,
        vec![
            s("2"),
            s("engine_newPayloadV4"),
            s("rest-ssz"),
            s("payloads"),
            s("prague"),
            s("LH/v8.0.0"),
            Some(p.block_number.to_string()),
            Some(p.transactions.len().to_string()),
            s("VALID"),
            Some(p.block_hash.to_string())
        ]
    );
}

#[tokio::test]
async fn built_payload_keeps_no_store_and_blob_facts_are_recorded() {
    let fixtures = Fixtures::load(&testdata_dir()).unwrap();
    let blobs = fixtures.blobs().unwrap();
    let NewPayload::Prague(payload, ..) = fixtures
        .largest_block(Fork::Prague)
        .unwrap()
        .new_payload()
        .unwrap()
    else {
        panic!()
    };
    let ssz = Message::BuiltPayload(built_payload(Fork::Osaka, &payload, &blobs, 6).unwrap())
        .to_ssz(Fork::Osaka)
        .unwrap();
    let ssz_for_el = ssz.clone();
    let el = FakeEl::start(move |_| {
        let mut a = Answer::ok("application/octet-stream", ssz_for_el.clone());
        a.headers.push(("cache-control", "no-store".into()));
        a
    })
    .await;
    let proxy = Proxy::start(&el.url()).await;
    let request = Request::get(format!(
        "{}/engine/v1/payloads/0x0102030405060708",
        proxy.url()
    ))
    .header("eth-execution-version", "osaka")
    .body(Full::new(Bytes::new()))
    .unwrap();
    let (code, headers, got) = send(request, false).await;
    assert_eq!(code, 200);
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(got.len(), ssz.len());
    assert!(got == ssz.as_slice(), "bytes relayed unchanged");
    let (db, _dir) = proxy.finish().await;
    let r = row(
        &db,
        "SELECT method, resource, blob_count, payload_id, block_number, response_bytes FROM calls",
    );
    assert_eq!(
        r,
        vec![
            s("engine_getPayloadV5"),
            s("payloads/{payloadId}"),
            s("6"),
            s("0x0102030405060708"),
            Some(payload.payload_inner.payload_inner.block_number.to_string()),
            Some(ssz.len().to_string())
        ]
    );
}

#[tokio::test]
async fn get_blobs_records_requested_returned_and_missing() {
    let fixtures = Fixtures::load(&testdata_dir()).unwrap();
    let blobs = fixtures.blobs().unwrap();
    let two = blobs_v2_response(&blobs, 2);
    let result = Message::Blobs(Blobs::V3(Some(vec![
        Some(two[0].clone()),
        None,
        Some(two[1].clone()),
    ])))
    .to_json()
    .unwrap();
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":3,"result":{}}}"#,
        String::from_utf8(result).unwrap()
    );
    let answer_for_el = answer.clone();
    let el = FakeEl::start(move |_| Answer::ok("application/json", answer_for_el.clone())).await;
    let proxy = Proxy::start(&el.url()).await;
    let h = |b: u8| format!("\"0x01{}\"", format!("{b:02x}").repeat(31));
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"engine_getBlobsV3","params":[[{},{},{}]]}}"#,
        h(1),
        h(2),
        h(3)
    );
    let (_, _, got) = send(post_json(&proxy.url(), body), false).await;
    assert_eq!(got, answer.as_bytes());
    let (db, _dir) = proxy.finish().await;
    let r = row(
        &db,
        "SELECT blobs_requested, blobs_returned, blobs_missing, blob_count, versioned_hash_count FROM calls",
    );
    assert_eq!(r, vec![s("3"), s("2"), s("1"), s("2"), s("3")]);
}

#[tokio::test]
async fn websocket_calls_are_relayed_and_recorded_one_by_one() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message as Ws;
    // A WebSocket EL that answers each call with its id.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let el = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_async(stream).await.unwrap();
        while let Some(Ok(msg)) = ws.next().await {
            if let Ws::Text(text) = msg {
                let call: serde_json::Value = serde_json::from_str(&text).unwrap();
                let answer = serde_json::json!({"jsonrpc": "2.0", "id": call["id"], "result": ["engine_newPayloadV4"]});
                ws.send(Ws::text(answer.to_string())).await.unwrap();
            }
        }
    });
    let proxy = Proxy::start(&format!("http://{el}")).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/", proxy.addr))
        .await
        .expect("upgrade through the proxy");
    for id in [1, 2] {
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"engine_exchangeCapabilities","params":[[]]}}"#
        );
        ws.send(Ws::text(call)).await.unwrap();
        let answer = ws.next().await.unwrap().unwrap();
        assert_eq!(
            answer.into_text().unwrap().as_str(),
            format!(r#"{{"id":{id},"jsonrpc":"2.0","result":["engine_newPayloadV4"]}}"#)
        );
    }
    ws.close(None).await.unwrap();
    drop(ws);
    let (db, _dir) = proxy.finish().await;
    let mut stmt = db.prepare("SELECT transport, method, status, rpc_id, request_bytes, response_bytes FROM calls ORDER BY seq").unwrap();
    let rows: Vec<(String, String, i64, String, i64, i64)> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (i, row) in rows.iter().enumerate() {
        let id = (i + 1).to_string();
        assert_eq!(
            (row.0.as_str(), row.1.as_str(), row.2, row.3.as_str()),
            ("websocket", "engine_exchangeCapabilities", 200, id.as_str())
        );
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"engine_exchangeCapabilities","params":[[]]}}"#
        );
        let answer = format!(r#"{{"id":{id},"jsonrpc":"2.0","result":["engine_newPayloadV4"]}}"#);
        assert_eq!((row.4, row.5), (call.len() as i64, answer.len() as i64));
    }
}

#[tokio::test]
async fn metrics_and_status_count_the_calls() {
    let el = FakeEl::start(|_| {
        Answer::ok(
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":["engine_newPayloadV4"]}"#,
        )
    })
    .await;
    let proxy = Proxy::start(&el.url()).await;
    for _ in 0..3 {
        send(
            post_json(
                &proxy.url(),
                r#"{"jsonrpc":"2.0","id":1,"method":"engine_exchangeCapabilities","params":[[]]}"#,
            ),
            false,
        )
        .await;
    }
    // Records are written off the forward path: wait for the worker.
    for _ in 0..100 {
        if proxy.recorder.stats().recorded == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let get = |path: &str| {
        Request::get(format!("http://{}{path}", proxy.control))
            .body(Full::new(Bytes::new()))
            .unwrap()
    };
    let (_, _, metrics) = send(get("/metrics"), false).await;
    let metrics = String::from_utf8(metrics.to_vec()).unwrap();
    assert!(metrics.contains(r#"sszgate_calls_total{method="engine_exchangeCapabilities",transport="json-rpc",status="200"} 3"#), "{metrics}");
    assert!(metrics.contains(r#"sszgate_call_duration_seconds_count{method="engine_exchangeCapabilities",transport="json-rpc"} 3"#), "{metrics}");
    assert!(
        metrics.contains("sszgate_records_dropped_total 0"),
        "{metrics}"
    );
    let (_, _, status) = send(get("/_sszgate/status"), false).await;
    let status: serde_json::Value = serde_json::from_slice(&status).unwrap();
    assert_eq!(status["records"]["recorded"], 3);
    assert_eq!(status["records"]["dropped"], 0);
    assert_eq!(status["upstream_health"]["consecutive_errors"], 0);
    let (code, _, _) = send(get("/nope"), false).await;
    assert_eq!(code, 404);
    proxy.finish().await;
}

#[tokio::test]
async fn compressed_answers_pass_encoded_and_are_recorded_decoded() {
    use std::io::Write;
    let plain = r#"{"jsonrpc":"2.0","id":4,"result":{"status":"VALID","latestValidHash":null,"validationError":null}}"#;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(plain.as_bytes()).unwrap();
    let compressed = gz.finish().unwrap();
    let for_el = compressed.clone();
    let el = FakeEl::start(move |_| {
        let mut a = Answer::ok("application/json", for_el.clone());
        a.headers.push(("content-encoding", "gzip".into()));
        a
    })
    .await;
    let proxy = Proxy::start(&el.url()).await;
    let (_, headers, got) = send(
        post_json(
            &proxy.url(),
            r#"{"jsonrpc":"2.0","id":4,"method":"engine_newPayloadV1","params":[{}]}"#,
        ),
        false,
    )
    .await;
    assert_eq!(headers["content-encoding"], "gzip");
    assert_eq!(
        got,
        compressed.as_slice(),
        "the encoded bytes pass untouched"
    );
    let (db, _dir) = proxy.finish().await;
    let r = row(
        &db,
        "SELECT response_encoding, response_bytes, response_decoded_bytes, payload_status, request_decoded_bytes FROM calls",
    );
    assert_eq!(
        r,
        vec![
            s("gzip"),
            Some(compressed.len().to_string()),
            Some(plain.len().to_string()),
            s("VALID"),
            None
        ]
    );
}

#[tokio::test]
async fn auto_transport_relays_for_a_rest_ssz_el_and_bridges_for_a_json_only_one() {
    use std::time::Duration;

    use sszgate_gateway::{Upstream, UpstreamTransport};
    let rest_el = FakeEl::start(|seen| {
        assert_eq!(seen.target, "/engine/v1/capabilities");
        Answer::ok("application/json", r#"{"supported_forks":["osaka"]}"#)
    })
    .await;
    let json_el = FakeEl::start(|_| {
        let mut a = Answer::ok("text/plain", "404 page not found");
        a.status = http::StatusCode::NOT_FOUND;
        a
    })
    .await;
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let probe = |url: String| async move {
        Upstream::new(&url, Duration::from_secs(2), false)
            .unwrap()
            .probe_transport(None)
            .await
    };
    assert_eq!(probe(rest_el.url()).await, UpstreamTransport::Relay);
    assert_eq!(probe(json_el.url()).await, UpstreamTransport::Json);
    assert_eq!(
        probe(format!("http://{closed}")).await,
        UpstreamTransport::Json
    );
}

#[tokio::test]
async fn the_cl_is_named_by_what_it_says_of_itself_on_every_later_call() {
    let el = FakeEl::start(|_| {
        Answer::ok(
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":[{"code":"GE","name":"Geth","version":"1.17.8","commit":"0x1"}]}"#,
        )
    })
    .await;
    let proxy = Proxy::start(&el.url()).await;
    let call = |method: &str, params: &str, agent: Option<&str>| {
        let mut request = post_json(
            &proxy.url(),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#),
        );
        if let Some(agent) = agent {
            request
                .headers_mut()
                .insert("user-agent", agent.parse().unwrap());
        }
        request
    };
    // Before the CL says who it is, its User-Agent names it.
    send(
        call("engine_exchangeCapabilities", "[[]]", Some("node-fetch")),
        false,
    )
    .await;
    // Lodestar's first call: its own ClientVersionV1 as the params (each `send` is a new
    // connection, so what follows is stamped from the remembered address).
    let own = r#"[{"code":"LS","name":"Lodestar","version":"v1.22.0","commit":"6de0736"}]"#;
    send(
        call("engine_getClientVersionV1", own, Some("node-fetch")),
        false,
    )
    .await;
    send(
        call("engine_exchangeCapabilities", "[[]]", Some("node-fetch")),
        false,
    )
    .await;
    let (db, _dir) = proxy.finish().await;
    let mut stmt = db
        .prepare("SELECT method, cl_client FROM calls ORDER BY seq")
        .unwrap();
    let rows: Vec<(String, Option<String>)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let lodestar = Some("LS/Lodestar/v1.22.0/6de0736".to_string());
    assert_eq!(
        rows,
        vec![
            (
                "engine_exchangeCapabilities".into(),
                Some("node-fetch".into())
            ),
            ("engine_getClientVersionV1".into(), lodestar.clone()),
            ("engine_exchangeCapabilities".into(), lodestar),
        ]
    );
}
