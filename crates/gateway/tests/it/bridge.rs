//! The bridge: a REST-SSZ CL in front of a JSON-RPC EL. Answers are checked byte for byte
//! against encodings built independently from the same data with the engine crate; the EL's
//! side is checked for the exact JSON-RPC call and a token signed by the gateway.

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use sszgate_engine::{
    Fork, Message, MessageKind,
    message::{BuiltPayload, NewPayload},
    method,
};
use sszgate_fixtures::{Fixtures, blobs_v2_response, built_payload, testdata_dir};
use sszgate_gateway::JwtSecret;

use crate::{
    Proxy,
    fake_el::{Answer, FakeEl},
    send,
};

const SECRET: &str = "4242424242424242424242424242424242424242424242424242424242424242";

fn rest(
    proxy: &Proxy,
    method: &str,
    path: &str,
    fork: Option<&str>,
    body: Vec<u8>,
) -> Request<Full<Bytes>> {
    let token = JwtSecret::from_hex(SECRET).unwrap().token();
    let mut r = Request::builder()
        .method(method)
        .uri(format!("{}{path}", proxy.url()))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/octet-stream")
        .header("x-engine-client-version", "LH/v8");
    if let Some(fork) = fork {
        r = r.header("eth-execution-version", fork);
    }
    r.body(Full::new(Bytes::from(body))).unwrap()
}

struct Data {
    np: NewPayload,
    built: BuiltPayload,
    blobs_v3: String,
}

fn data() -> Data {
    let fixtures = Fixtures::load(&testdata_dir()).unwrap();
    let blobs = fixtures.blobs().unwrap();
    let (block, payload) = fixtures.reference_payload().unwrap();
    let two = blobs_v2_response(&blobs, 1);
    let blobs_v3 = String::from_utf8(
        Message::Blobs(sszgate_engine::message::Blobs::V3(Some(vec![
            Some(two[0].clone()),
            None,
        ])))
        .to_json()
        .unwrap(),
    )
    .unwrap();
    Data {
        np: block.new_payload().unwrap(),
        built: built_payload(Fork::Osaka, &payload, &blobs, 6).unwrap(),
        blobs_v3,
    }
}

fn fake_el_for(d: &Data) -> impl Fn(&crate::fake_el::Seen) -> Answer + Send + Sync + 'static {
    let lvh = d.np.payload_v1().block_hash.to_string();
    let built =
        String::from_utf8(Message::BuiltPayload(d.built.clone()).to_json().unwrap()).unwrap();
    let blobs_v3 = d.blobs_v3.clone();
    move |seen| {
        let call: serde_json::Value = serde_json::from_slice(&seen.body).unwrap();
        let result = match call["method"].as_str().unwrap() {
            "engine_newPayloadV4" => format!(r#"{{"status":"VALID","latestValidHash":"{lvh}","validationError":null}}"#),
            "engine_forkchoiceUpdatedV3" => r#"{"payloadStatus":{"status":"VALID","latestValidHash":null,"validationError":null},"payloadId":"0x0102030405060708"}"#.into(),
            "engine_getPayloadV5" => built.clone(),
            "engine_getBlobsV2" => "null".into(),
            "engine_getBlobsV3" => blobs_v3.clone(),
            "engine_exchangeCapabilities" => r#"["engine_newPayloadV4","engine_forkchoiceUpdatedV3","engine_getPayloadV4","engine_getPayloadV5","engine_getBlobsV2","engine_getBlobsV3","engine_getClientVersionV1"]"#.into(),
            "engine_getClientVersionV1" => r#"[{"code":"GE","name":"Geth","version":"1.17.8","commit":"deadbeef"}]"#.into(),
            _ => return Answer::ok("application/json", r#"{"jsonrpc":"2.0","id":1,"error":{"code":-38001,"message":"Unknown payload"}}"#),
        };
        Answer::ok(
            "application/json",
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#),
        )
    }
}

#[tokio::test]
async fn rest_calls_are_translated_to_json_rpc_and_back_byte_for_byte() {
    let d = data();
    let el = FakeEl::start(fake_el_for(&d)).await;
    let proxy = Proxy::start_bridge(&el.url(), SECRET).await;

    // POST /payloads (prague): the EL gets newPayloadV4 with the versioned hashes derived from
    // the payload's blob transactions, signed by the gateway; the CL gets an SSZ PayloadStatus.
    let envelope = Message::NewPayload(d.np.clone())
        .to_ssz(Fork::Prague)
        .unwrap();
    let (code, headers, body) = send(
        rest(
            &proxy,
            "POST",
            "/engine/v1/payloads",
            Some("prague"),
            envelope,
        ),
        false,
    )
    .await;
    assert_eq!(
        (code.as_u16(), headers["content-type"].to_str().unwrap()),
        (200, "application/octet-stream")
    );
    let m = method::by_name("engine_newPayloadV4").unwrap();
    let status_json = format!(
        r#"{{"status":"VALID","latestValidHash":"{}","validationError":null}}"#,
        d.np.payload_v1().block_hash
    );
    let expected = Message::from_json(
        m,
        Fork::Prague,
        MessageKind::PayloadStatus,
        status_json.as_bytes(),
    )
    .unwrap()
    .to_ssz(Fork::Prague)
    .unwrap();
    assert_eq!(body, expected.as_slice());
    let seen = el.seen();
    let call: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(call["method"], "engine_newPayloadV4");
    let params: serde_json::Value =
        serde_json::from_slice(&Message::NewPayload(d.np.clone()).to_json().unwrap()).unwrap();
    assert_eq!(
        call["params"], params,
        "the JSON-RPC params are the payload's, hashes included"
    );
    let token = seen[0].headers["authorization"]
        .to_str()
        .unwrap()
        .strip_prefix("Bearer ")
        .unwrap();
    JwtSecret::from_hex(SECRET)
        .unwrap()
        .verify(token)
        .expect("the gateway signs its own token");

    // GET /payloads/{id} (osaka): getPayloadV5, SSZ BuiltPayloadOsaka, no-store.
    let (code, headers, body) = send(
        rest(
            &proxy,
            "GET",
            "/engine/v1/payloads/0x0102030405060708",
            Some("osaka"),
            vec![],
        ),
        true,
    )
    .await;
    assert_eq!(
        (code.as_u16(), headers["cache-control"].to_str().unwrap()),
        (200, "no-store")
    );
    assert!(
        body == Message::BuiltPayload(d.built.clone())
            .to_ssz(Fork::Osaka)
            .unwrap()
            .as_slice(),
        "built payload bytes"
    );
    let call: serde_json::Value = serde_json::from_slice(&el.seen()[1].body).unwrap();
    assert_eq!(
        (call["method"].as_str(), call["params"][0].as_str()),
        (Some("engine_getPayloadV5"), Some("0x0102030405060708"))
    );

    // POST /forkchoice (cancun): forkchoiceUpdatedV3, SSZ response with the payload id.
    let z = format!("0x{}", "00".repeat(32));
    let fcu = format!(
        r#"[{{"headBlockHash":"{z}","safeBlockHash":"{z}","finalizedBlockHash":"{z}"}},null]"#
    );
    let fcu_method = method::by_name("engine_forkchoiceUpdatedV3").unwrap();
    let fcu_ssz = Message::from_json(
        fcu_method,
        Fork::Cancun,
        MessageKind::Forkchoice,
        fcu.as_bytes(),
    )
    .unwrap()
    .to_ssz(Fork::Cancun)
    .unwrap();
    let (code, _, body) = send(
        rest(
            &proxy,
            "POST",
            "/engine/v1/forkchoice",
            Some("cancun"),
            fcu_ssz,
        ),
        false,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        &body[body.len() - 8..],
        &[1, 2, 3, 4, 5, 6, 7, 8],
        "payload id at the end"
    );

    // Blobs: v2 null -> 204, v3 partial -> 200 with one available entry.
    let hashes = Message::BlobsRequest(sszgate_engine::message::BlobsRequest {
        versioned_hashes: vec![alloy_primitives::B256::repeat_byte(1); 2],
        indices: None,
    })
    .to_ssz(Fork::Osaka)
    .unwrap();
    let (code, headers, body) = send(
        rest(&proxy, "POST", "/engine/v1/blobs/v2", None, hashes.clone()),
        false,
    )
    .await;
    assert_eq!(
        (
            code.as_u16(),
            body.len(),
            headers.get("content-type").is_none()
        ),
        (204, 0, true)
    );
    let (code, _, body) = send(
        rest(&proxy, "POST", "/engine/v1/blobs/v3", None, hashes),
        false,
    )
    .await;
    assert_eq!(code, 200);
    let v3 = method::by_name("engine_getBlobsV3").unwrap();
    let expected = Message::from_json(v3, Fork::Osaka, MessageKind::Blobs, d.blobs_v3.as_bytes())
        .unwrap()
        .to_ssz(Fork::Osaka)
        .unwrap();
    assert!(body == expected.as_slice(), "blobs v3 bytes");

    // Capabilities and identity, as JSON, from the EL's own answers.
    let (code, _, body) = send(
        rest(&proxy, "GET", "/engine/v1/capabilities", None, vec![]),
        false,
    )
    .await;
    let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        (code.as_u16(), doc["supported_forks"].clone()),
        (200, serde_json::json!(["prague", "osaka"]))
    );
    assert_eq!(
        doc["independently_versioned"]["blobs"],
        serde_json::json!(["v2", "v3"])
    );
    let (_, _, body) = send(
        rest(&proxy, "GET", "/engine/v1/identity", None, vec![]),
        false,
    )
    .await;
    let identity: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(identity[0]["code"], "GE");

    // An EL error maps to its problem type: -38001 -> 404 unknown-payload.
    let (code, headers, body) = send(
        rest(
            &proxy,
            "GET",
            "/engine/v1/payloads/0x0000000000000009",
            Some("prague"),
            vec![],
        ),
        false,
    )
    .await;
    assert_eq!(
        (code.as_u16(), headers["content-type"].to_str().unwrap()),
        (404, "application/problem+json")
    );
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
        serde_json::json!({"type": "/engine-api/errors/unknown-payload", "detail": "Unknown payload"})
    );

    let calls_seen = el.seen().len();
    let (db, _dir) = proxy.finish().await;
    assert_eq!(calls_seen, 8);
    let r: (String, String, i64, i64, i64, i64, i64) = db
        .query_row(
            "SELECT mode, method, block_number, translate_request_us >= 0, translate_response_us >= 0, upstream_request_bytes > request_bytes, upstream_response_bytes FROM calls WHERE resource = 'payloads'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)),
        )
        .unwrap();
    assert_eq!(
        (r.0.as_str(), r.1.as_str(), r.2 as u64, r.3, r.4, r.5),
        (
            "bridge",
            "engine_newPayloadV4",
            d.np.payload_v1().block_number,
            1,
            1,
            1
        )
    );
    assert!(r.6 > 0);
    let blob_count: i64 = db
        .query_row(
            "SELECT blob_count FROM calls WHERE method = 'engine_getPayloadV5'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(blob_count, 6);
}

#[tokio::test]
async fn bad_rest_calls_are_refused_before_the_el() {
    let d = data();
    let el = FakeEl::start(fake_el_for(&d)).await;
    let proxy = Proxy::start_bridge(&el.url(), SECRET).await;
    let envelope = Message::NewPayload(d.np.clone())
        .to_ssz(Fork::Prague)
        .unwrap();
    let problem = |body: &Bytes| {
        serde_json::from_slice::<serde_json::Value>(body).unwrap()["type"]
            .as_str()
            .unwrap()
            .to_string()
    };

    // Undecodable SSZ.
    let (code, _, body) = send(
        rest(
            &proxy,
            "POST",
            "/engine/v1/payloads",
            Some("prague"),
            envelope[..100].to_vec(),
        ),
        false,
    )
    .await;
    assert_eq!(
        (code.as_u16(), problem(&body)),
        (400, "/engine-api/errors/ssz-decode-error".into())
    );
    // No fork header; an unknown fork.
    for fork in [None, Some("bogota")] {
        let (code, _, body) = send(
            rest(
                &proxy,
                "POST",
                "/engine/v1/payloads",
                fork,
                envelope.clone(),
            ),
            false,
        )
        .await;
        assert_eq!(
            (code.as_u16(), problem(&body)),
            (400, "/engine-api/errors/unsupported-fork".into()),
            "{fork:?}"
        );
    }
    // Wrong content type.
    let mut request = rest(
        &proxy,
        "POST",
        "/engine/v1/payloads",
        Some("prague"),
        envelope.clone(),
    );
    request
        .headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    let (code, _, body) = send(request, false).await;
    assert_eq!(
        (code.as_u16(), problem(&body)),
        (415, "/engine-api/errors/unsupported-media-type".into())
    );
    // No token, a token of another secret, an old token.
    let other = JwtSecret::from_hex(&"01".repeat(32)).unwrap();
    let old = JwtSecret::from_hex(SECRET).unwrap().token_at(1_000_000);
    for token in [None, Some(other.token()), Some(old)] {
        let mut request = rest(
            &proxy,
            "POST",
            "/engine/v1/payloads",
            Some("prague"),
            envelope.clone(),
        );
        match &token {
            Some(t) => request
                .headers_mut()
                .insert("authorization", format!("Bearer {t}").parse().unwrap()),
            None => request.headers_mut().remove("authorization"),
        };
        let (code, _, body) = send(request, false).await;
        assert_eq!(code, 401, "{token:?}");
        assert!(String::from_utf8_lossy(&body).contains("JWT refused"));
    }
    // More versioned hashes than blobs.max_versioned_hashes (128): 413.
    let mut hashes = 4u32.to_le_bytes().to_vec();
    hashes.extend_from_slice(&[0x01; 32 * 129]);
    let (code, _, body) = send(
        rest(&proxy, "POST", "/engine/v1/blobs/v3", None, hashes),
        false,
    )
    .await;
    assert_eq!(
        (code.as_u16(), problem(&body)),
        (413, "/engine-api/errors/request-too-large".into())
    );
    assert!(
        el.seen().is_empty(),
        "nothing half-translated reached the EL"
    );
    let (db, _dir) = proxy.finish().await;
    let n: i64 = db
        .query_row(
            "SELECT count(*) FROM calls WHERE mode = 'bridge' AND status >= 400",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 7, "every refusal of the bridge is recorded");
    // The oversized getBlobs never reached the bridge: refused by its size limit, unread.
    let too_large: (String, i64, String) = db
        .query_row(
            "SELECT mode, status, error_message FROM calls WHERE status = 413",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        too_large,
        (
            "snoop".into(),
            413,
            "request body of 4132 bytes over the limit of 4100 bytes for POST /engine/v1/blobs/v3"
                .into()
        )
    );
}

#[tokio::test]
async fn bridged_answers_are_compressed_as_the_cl_asks_and_recorded_both_sizes() {
    use std::io::Read;
    let d = data();
    let el = FakeEl::start(fake_el_for(&d)).await;
    let proxy = Proxy::start_bridge(&el.url(), SECRET).await;
    let expected = Message::BuiltPayload(d.built.clone())
        .to_ssz(Fork::Osaka)
        .unwrap();
    for (accept, encoding) in [
        ("zstd, gzip", Some("zstd")),
        ("gzip", Some("gzip")),
        ("br, zstd;q=0", None),
    ] {
        let mut request = rest(
            &proxy,
            "GET",
            "/engine/v1/payloads/0x0102030405060708",
            Some("osaka"),
            vec![],
        );
        request
            .headers_mut()
            .insert("accept-encoding", accept.parse().unwrap());
        let (code, headers, body) = send(request, false).await;
        assert_eq!(code, 200);
        assert_eq!(
            headers.get("content-encoding").map(|v| v.to_str().unwrap()),
            encoding,
            "{accept}"
        );
        let mut plain = Vec::new();
        match encoding {
            Some("zstd") => {
                zstd::stream::read::Decoder::new(&body[..])
                    .unwrap()
                    .read_to_end(&mut plain)
                    .unwrap();
            }
            Some(_) => {
                flate2::read::GzDecoder::new(&body[..])
                    .read_to_end(&mut plain)
                    .unwrap();
            }
            None => plain = body.to_vec(),
        }
        assert!(plain == expected, "{accept}: decoded bytes are the SSZ");
        if encoding.is_some() {
            assert!(
                body.len() < expected.len(),
                "{accept}: real blobs compress a little"
            );
        }
    }
    let (db, _dir) = proxy.finish().await;
    let (encoding, bytes, decoded): (String, i64, i64) = db
        .query_row("SELECT response_encoding, response_bytes, response_decoded_bytes FROM calls ORDER BY seq LIMIT 1", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    assert_eq!(
        (encoding.as_str(), decoded as usize),
        ("zstd", expected.len())
    );
    assert!(bytes < decoded);
}

/// One row of the per-fork table: family, REST method, path, request SSZ, the params the EL
/// must see, the EL's result, the message the CL must get.
type Case = (
    sszgate_engine::method::Family,
    &'static str,
    String,
    Vec<u8>,
    Vec<u8>,
    String,
    Message,
);

/// Every fork-scoped resource, every fork from Paris to Amsterdam: the EL gets the method the
/// table names for that fork with the params of the message, and the CL gets the SSZ of the
/// EL's answer, each checked against an encoding built independently from the same message.
#[tokio::test]
async fn every_fork_scoped_resource_in_every_fork() {
    use std::sync::{Arc, Mutex};

    use sszgate_engine::{
        message::{BlobsRequest, Forkchoice},
        method::{Family, for_fork},
    };
    use sszgate_fixtures::synthetic;

    let next: Arc<Mutex<String>> = Arc::new(Mutex::new(String::new()));
    let answer = next.clone();
    let el = FakeEl::start(move |_| {
        Answer::ok(
            "application/json",
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#,
                answer.lock().unwrap()
            ),
        )
    })
    .await;
    let proxy = Proxy::start_bridge(&el.url(), SECRET).await;
    let mut calls = 0;
    for fork in Fork::ALL {
        let name = fork.name();
        let np = Message::NewPayload(synthetic::new_payload(fork, 3));
        let status = r#"{"status":"VALID","latestValidHash":"0x1111111111111111111111111111111111111111111111111111111111111111","validationError":null}"#;
        let fcu = Message::Forkchoice(Forkchoice {
            state: alloy_rpc_types_engine::ForkchoiceState::default(),
            attributes: Some(synthetic::attributes(fork)),
            custody_columns: None,
        });
        let fcu_answer = r#"{"payloadStatus":{"status":"VALID","latestValidHash":null,"validationError":null},"payloadId":"0x0a0b0c0d0e0f1011"}"#;
        let get = for_fork(Family::GetPayload, fork).unwrap();
        let built = Message::BuiltPayload(synthetic::built_payload(fork, get.version));
        let by_hash = for_fork(Family::BodiesByHash, fork).unwrap();
        let bodies = Message::Bodies(synthetic::bodies(fork, by_hash.version));
        let hashes = Message::BodiesByHash(vec![alloy_primitives::B256::repeat_byte(7); 3]);
        let cases: Vec<Case> = vec![
            (
                Family::NewPayload,
                "POST",
                "/engine/v1/payloads".into(),
                np.to_ssz(fork).unwrap(),
                np.to_json().unwrap(),
                status.into(),
                Message::PayloadStatus(serde_json::from_str(status).unwrap()),
            ),
            (
                Family::ForkchoiceUpdated,
                "POST",
                "/engine/v1/forkchoice".into(),
                fcu.to_ssz(fork).unwrap(),
                fcu.to_json().unwrap(),
                fcu_answer.into(),
                Message::ForkchoiceResponse(serde_json::from_str(fcu_answer).unwrap()),
            ),
            (
                Family::GetPayload,
                "GET",
                "/engine/v1/payloads/0x0102030405060708".into(),
                vec![],
                br#"["0x0102030405060708"]"#.to_vec(),
                String::from_utf8(built.to_json().unwrap()).unwrap(),
                built.clone(),
            ),
            (
                Family::BodiesByHash,
                "POST",
                "/engine/v1/bodies/hash".into(),
                hashes.to_ssz(fork).unwrap(),
                hashes.to_json().unwrap(),
                String::from_utf8(bodies.to_json().unwrap()).unwrap(),
                bodies.clone(),
            ),
            (
                Family::BodiesByRange,
                "GET",
                "/engine/v1/bodies?from=100&count=3".into(),
                vec![],
                br#"["0x64","0x3"]"#.to_vec(),
                String::from_utf8(bodies.to_json().unwrap()).unwrap(),
                bodies.clone(),
            ),
        ];
        for (family, verb, path, body, params, result, expected) in cases {
            *next.lock().unwrap() = result;
            let (code, headers, got) =
                send(rest(&proxy, verb, &path, Some(name), body), false).await;
            assert_eq!(
                code,
                200,
                "{name} {path}: {}",
                String::from_utf8_lossy(&got)
            );
            assert_eq!(
                headers.get("cache-control").is_some(),
                family == Family::GetPayload,
                "{name} {path}: no-store"
            );
            assert!(
                got == expected.to_ssz(fork).unwrap().as_slice(),
                "{name} {path}: answer bytes"
            );
            let seen = el.seen();
            calls += 1;
            assert_eq!(seen.len(), calls);
            let call: serde_json::Value = serde_json::from_slice(&seen[calls - 1].body).unwrap();
            assert_eq!(
                call["method"],
                for_fork(family, fork).unwrap().name,
                "{name} {path}"
            );
            assert_eq!(
                call["params"],
                serde_json::from_slice::<serde_json::Value>(&params).unwrap(),
                "{name} {path}: params"
            );
        }
        // Blobs: the revision of the fork, hashes in, entries out.
        let blobs_method = for_fork(Family::GetBlobs, fork);
        if let Some(m) = blobs_method {
            let request = Message::BlobsRequest(BlobsRequest {
                versioned_hashes: vec![alloy_primitives::B256::repeat_byte(1)],
                indices: (m.version >= 4).then(|| alloy_primitives::B128::repeat_byte(0xff)),
            });
            *next.lock().unwrap() = if m.version >= 2 {
                "null".into()
            } else {
                "[null]".into()
            };
            let (code, _, got) = send(
                rest(
                    &proxy,
                    "POST",
                    &format!("/engine/v1/blobs/v{}", m.version),
                    None,
                    request.to_ssz(fork).unwrap(),
                ),
                false,
            )
            .await;
            calls += 1;
            let expected = if m.version >= 2 {
                (204, 0)
            } else {
                (200, 4 + (1 + 131_072 + 48))
            };
            assert_eq!(
                (code.as_u16(), got.len()),
                expected,
                "{name} blobs v{}",
                m.version
            );
        }
    }
    proxy.finish().await;
}

/// The other direction, every fork: a JSON-RPC CL talks to a gateway that sends each call as
/// REST-SSZ (`--upstream-transport ssz`) to a second gateway that bridges it back to the
/// JSON-RPC fake EL. The CL must get exactly the EL's result, and the EL exactly the CL's call.
#[tokio::test]
async fn json_rpc_calls_cross_a_rest_ssz_link_in_every_fork() {
    use std::sync::{Arc, Mutex};

    use sszgate_engine::method::{Family, for_fork};
    use sszgate_fixtures::synthetic;

    let next: Arc<Mutex<String>> = Arc::new(Mutex::new(String::new()));
    let answer = next.clone();
    let el = FakeEl::start(move |_| {
        Answer::ok(
            "application/json",
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#,
                answer.lock().unwrap()
            ),
        )
    })
    .await;
    let inner = Proxy::start_bridge(&el.url(), SECRET).await;
    let jwt = JwtSecret::from_hex(SECRET).unwrap();
    let outer = Proxy::start_full(
        &inner.url(),
        std::time::Duration::from_secs(5),
        64 << 20,
        sszgate_gateway::UpstreamTransport::Ssz,
        Some(jwt.clone()),
    )
    .await;
    let mut calls = 0;
    for fork in Fork::ALL {
        let get = for_fork(Family::GetPayload, fork).unwrap();
        let by_hash = for_fork(Family::BodiesByHash, fork).unwrap();
        let np = Message::NewPayload(synthetic::new_payload(fork, 5));
        let built = Message::BuiltPayload(synthetic::built_payload(fork, get.version));
        let bodies = Message::Bodies(synthetic::bodies(fork, by_hash.version));
        let status = r#"{"status":"SYNCING","latestValidHash":null,"validationError":null}"#;
        let fcu_params = format!(
            r#"[{{"headBlockHash":"0x{h}","safeBlockHash":"0x{h}","finalizedBlockHash":"0x{h}"}},{}]"#,
            serde_json::to_string(&synthetic::attributes(fork)).unwrap(),
            h = "33".repeat(32)
        );
        let fcu_result = r#"{"payloadStatus":{"status":"VALID","latestValidHash":null,"validationError":null},"payloadId":"0x0a0b0c0d0e0f1011"}"#;
        let mut cases: Vec<(Family, String, String)> = vec![
            (Family::ForkchoiceUpdated, fcu_params, fcu_result.into()),
            (
                Family::NewPayload,
                String::from_utf8(np.to_json().unwrap()).unwrap(),
                status.into(),
            ),
            (
                Family::GetPayload,
                r#"["0x0102030405060708"]"#.into(),
                String::from_utf8(built.to_json().unwrap()).unwrap(),
            ),
            (
                Family::BodiesByHash,
                format!(r#"[["0x{}"]]"#, "07".repeat(32)),
                String::from_utf8(bodies.to_json().unwrap()).unwrap(),
            ),
        ];
        // Blobs of the fork's revision: a miss (V1: null per blob; V2..V4: null, a 204 on the
        // REST link) and, for V1..V3, a hit.
        if let Some(m) = for_fork(Family::GetBlobs, fork) {
            let hash = format!(r#""0x01{}""#, "44".repeat(31));
            let params = if m.version >= 4 {
                format!(r#"[[{hash}],"0x{}"]"#, "ff".repeat(16))
            } else {
                format!("[[{hash}]]")
            };
            let miss = if m.version == 1 {
                "[null]".to_string()
            } else {
                "null".to_string()
            };
            cases.push((Family::GetBlobs, params.clone(), miss));
            if m.version <= 3 {
                let fixtures = Fixtures::load(&testdata_dir()).unwrap();
                let blobs = fixtures.blobs().unwrap();
                let hit = if m.version == 1 {
                    Message::Blobs(sszgate_engine::message::Blobs::V1(
                        sszgate_fixtures::blobs_v1_response(&blobs, 1),
                    ))
                } else {
                    Message::Blobs(sszgate_engine::message::Blobs::V2(Some(blobs_v2_response(
                        &blobs, 1,
                    ))))
                };
                cases.push((
                    Family::GetBlobs,
                    params,
                    String::from_utf8(hit.to_json().unwrap()).unwrap(),
                ));
            }
        }
        for (family, params, result) in cases {
            let m = for_fork(family, fork).unwrap();
            *next.lock().unwrap() = result.clone();
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":"c{calls}","method":"{}","params":{params}}}"#,
                m.name
            );
            let request = Request::post(outer.url())
                .header("content-type", "application/json")
                .header("authorization", format!("Bearer {}", jwt.token()))
                .body(Full::new(Bytes::from(body)))
                .unwrap();
            let (code, _, got) = send(request, false).await;
            assert_eq!(code, 200, "{fork} {}", m.name);
            let got: serde_json::Value = serde_json::from_slice(&got).unwrap();
            assert_eq!(got["id"], format!("c{calls}"), "{fork} {}", m.name);
            assert_eq!(
                got["result"],
                serde_json::from_str::<serde_json::Value>(&result).unwrap(),
                "{fork} {}: result",
                m.name
            );
            calls += 1;
            // The last call the EL saw is this one (a call may take several REST requests:
            // bodies asked fork by fork, a getPayloadV2 of the Paris era asked again).
            let seen = el.seen();
            let call: serde_json::Value =
                serde_json::from_slice(&seen.last().unwrap().body).unwrap();
            assert_eq!(call["method"], m.name, "{fork}");
            assert_eq!(
                call["params"],
                serde_json::from_str::<serde_json::Value>(&params).unwrap(),
                "{fork} {}: params",
                m.name
            );
        }
    }
    let (db, _a) = inner.finish().await;
    let rest: i64 = db
        .query_row(
            "SELECT count(*) FROM calls WHERE transport = 'rest-ssz' AND status = 200",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        rest as usize >= calls,
        "every call crossed the middle link as REST-SSZ ({rest} < {calls})"
    );
    outer.finish().await;
}

/// `auto` asks again after the EL was unreachable: a JSON-only EL is replaced, behind the same
/// address, by one that speaks REST-SSZ, and REST calls stop being bridged and are relayed.
#[tokio::test]
async fn auto_transport_is_asked_again_after_a_reconnect() {
    let json_only = FakeEl::start(|seen| {
        if seen.target.starts_with("/engine/v1/") {
            let mut a = Answer::ok("text/plain", "404 page not found");
            a.status = http::StatusCode::NOT_FOUND;
            return a;
        }
        Answer::ok(
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"result":["engine_getPayloadV5"]}"#,
        )
    })
    .await;
    let addr = json_only.addr;
    let proxy = Proxy::start_auto(
        &json_only.url(),
        sszgate_gateway::UpstreamTransport::Json,
        SECRET,
    )
    .await;
    let capabilities = || rest(&proxy, "GET", "/engine/v1/capabilities", None, vec![]);
    // JSON-only EL: /capabilities is bridged (answered from exchangeCapabilities).
    let (code, _, body) = send(capabilities(), false).await;
    assert_eq!(code, 200);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).unwrap()["supported_forks"],
        serde_json::json!([])
    );
    // The EL goes away: the call fails, and the proxy will ask again.
    json_only.stop();
    let (code, _, _) = send(capabilities(), false).await;
    assert_eq!(code, 500);
    // A REST-SSZ EL comes up behind the same address: the REST call is now relayed as it is.
    let rest_el = FakeEl::start_on(addr, |_| {
        Answer::ok(
            "application/json",
            r#"{"supported_forks":["osaka"],"from":"the EL"}"#,
        )
    })
    .await;
    let (code, _, body) = send(capabilities(), false).await;
    assert_eq!(code, 200);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).unwrap()["from"],
        "the EL"
    );
    assert!(
        rest_el
            .seen()
            .iter()
            .any(|s| s.target == "/engine/v1/capabilities"
                && s.headers.get("x-engine-client-version").is_some()),
        "relayed with the CL's headers"
    );
    proxy.finish().await;
}

#[tokio::test]
async fn an_el_answer_that_does_not_fit_is_500_naming_the_field() {
    let el = FakeEl::start(|_| Answer::ok("application/json", r#"{"jsonrpc":"2.0","id":1,"result":{"status":"VALID","latestValidHash":"0x12","validationError":null}}"#)).await;
    let proxy = Proxy::start_bridge(&el.url(), SECRET).await;
    let envelope = Message::NewPayload(sszgate_fixtures::synthetic::new_payload(Fork::Cancun, 1))
        .to_ssz(Fork::Cancun)
        .unwrap();
    let (code, headers, body) = send(
        rest(
            &proxy,
            "POST",
            "/engine/v1/payloads",
            Some("cancun"),
            envelope,
        ),
        false,
    )
    .await;
    assert_eq!(
        (code.as_u16(), headers["content-type"].to_str().unwrap()),
        (500, "application/problem+json")
    );
    let problem: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(problem["type"], "/engine-api/errors/internal");
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains("engine_newPayloadV3") && detail.contains("latestValidHash"),
        "{detail}"
    );
    let (db, _dir) = proxy.finish().await;
    let (status, side): (i64, String) = db
        .query_row("SELECT status, error_side FROM calls", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((status, side.as_str()), (500, "el"));
}
