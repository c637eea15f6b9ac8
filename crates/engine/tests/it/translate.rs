//! Translation between JSON-RPC calls and REST requests, results and errors.

use sszgate_engine::{
    Fork, Problem,
    method::HttpMethod,
    translate::{self, RpcError},
};

const Z32: &str = "0x0000000000000000000000000000000000000000000000000000000000000000";

#[test]
fn get_payload_goes_to_the_path_and_back() {
    let rest =
        translate::request_to_rest("engine_getPayloadV5", br#"["0x0102030405060708"]"#, None)
            .unwrap();
    assert_eq!(rest.method, HttpMethod::Get);
    assert_eq!(rest.target, "/engine/v1/payloads/0x0102030405060708");
    assert_eq!(rest.fork, Some(Fork::Osaka));
    assert!(rest.body.is_empty() && rest.content_type().is_none());
    let call = translate::request_from_rest("GET", &rest.target, Some("osaka"), &[]).unwrap();
    assert_eq!(call.method.name, "engine_getPayloadV5");
    assert_eq!(call.params, br#"["0x0102030405060708"]"#);
}

#[test]
fn forkchoice_translates_with_the_fork_header() {
    let params = format!(
        r#"[{{"headBlockHash":"{Z32}","safeBlockHash":"{Z32}","finalizedBlockHash":"{Z32}"}},null]"#
    );
    let rest = translate::request_to_rest(
        "engine_forkchoiceUpdatedV3",
        params.as_bytes(),
        Some(Fork::Prague),
    )
    .unwrap();
    assert_eq!(
        (rest.method, rest.target.as_str(), rest.fork),
        (
            HttpMethod::Post,
            "/engine/v1/forkchoice",
            Some(Fork::Prague)
        )
    );
    assert_eq!(rest.body.len(), 100);
    let call =
        translate::request_from_rest("POST", "/engine/v1/forkchoice", Some("prague"), &rest.body)
            .unwrap();
    assert_eq!(call.method.name, "engine_forkchoiceUpdatedV3");
    assert_eq!(String::from_utf8(call.params).unwrap(), params);
    // Missing or unknown header on a fork-scoped resource: unsupported-fork.
    for header in [None, Some("bogota")] {
        let err = translate::request_from_rest("POST", "/engine/v1/forkchoice", header, &rest.body)
            .unwrap_err();
        assert_eq!(err.problem(), Problem::UnsupportedFork, "{header:?}");
    }
    // A fork the method does not serve.
    let err = translate::request_to_rest(
        "engine_forkchoiceUpdatedV3",
        params.as_bytes(),
        Some(Fork::Amsterdam),
    )
    .unwrap_err();
    assert_eq!(err.problem(), Problem::UnsupportedFork);
}

#[test]
fn results_map_to_status_codes_and_headers() {
    let m = sszgate_engine::method::by_name("engine_getBlobsV2").unwrap();
    let r = translate::result_to_rest(m, Fork::Osaka, b"null").unwrap();
    assert_eq!((r.status, r.content_type, r.body.len()), (204, None, 0));
    let r = translate::result_to_rest(m, Fork::Osaka, b"[]").unwrap();
    assert_eq!(
        (r.status, r.content_type, r.body.as_slice()),
        (200, Some("application/octet-stream"), &[4u8, 0, 0, 0][..])
    );
    assert_eq!(
        translate::result_from_rest(m, Fork::Osaka, 204, &[], 3)
            .unwrap()
            .unwrap(),
        b"null"
    );
    let v1 = sszgate_engine::method::by_name("engine_getBlobsV1").unwrap();
    assert_eq!(
        translate::result_from_rest(v1, Fork::Cancun, 204, &[], 2)
            .unwrap()
            .unwrap(),
        b"[null,null]"
    );
    let get = sszgate_engine::method::by_name("engine_getPayloadV2").unwrap();
    assert!(translate::result_from_rest(get, Fork::Shanghai, 204, &[], 0).is_err());
}

#[test]
fn errors_map_both_ways_through_the_table() {
    let r = translate::error_to_problem(&RpcError {
        code: -38001,
        message: "Unknown payload".into(),
    });
    assert_eq!(r.status, 404);
    assert_eq!(r.content_type, Some("application/problem+json"));
    assert_eq!(
        r.body,
        br#"{"type":"/engine-api/errors/unknown-payload","detail":"Unknown payload"}"#
    );
    let back = translate::error_from_problem(r.status, &r.body);
    assert_eq!(
        back,
        RpcError {
            code: -38001,
            message: "Unknown payload".into()
        }
    );
    // A canned error without detail, and a non-problem body: the status decides.
    assert_eq!(
        translate::error_from_problem(400, br#"{"type":"/engine-api/errors/ssz-decode-error"}"#)
            .code,
        -32700
    );
    let e = translate::error_from_problem(409, b"<html>conflict</html>");
    assert_eq!(e.code, -38002);
    assert!(e.message.contains("HTTP 409"));
}

#[test]
fn capabilities_and_identity_are_json_on_rest() {
    let m = sszgate_engine::method::by_name("engine_exchangeCapabilities").unwrap();
    let r = translate::result_to_rest(m, Fork::Cancun, br#"["engine_newPayloadV3","engine_forkchoiceUpdatedV3","engine_getPayloadV3","engine_getBlobsV1"]"#).unwrap();
    assert_eq!(r.content_type, Some("application/json"));
    let doc: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(doc["supported_forks"], serde_json::json!(["cancun"]));
    assert_eq!(
        doc["independently_versioned"]["blobs"],
        serde_json::json!(["v1"])
    );
    let call = translate::request_from_rest("GET", "/engine/v1/identity", None, &[]).unwrap();
    assert_eq!(call.method.name, "engine_getClientVersionV1");
}
