//! Inputs the fuzz targets (`fuzz/`) found wrong, each kept as a test of the normal suite.

use sszgate_engine::{Fork, Message, method};

fn result(method_name: &str, fork: Fork, json: &[u8]) -> sszgate_engine::Result<Message> {
    let m = method::by_name(method_name).expect("a method of the table");
    Message::from_json(m, fork, m.response, json)
}

/// `bulk_json` found the getBlobs fast path taking form feed (0x0c) for whitespace, as
/// `u8::is_ascii_whitespace` does; JSON does not, and serde refuses such a document. The
/// fast path must refuse what the serde route refuses.
#[test]
fn form_feed_is_not_json_whitespace_in_the_get_blobs_fast_path() {
    // The fuzzer's input: a getBlobsV3 `null` answer followed by whitespace and a form feed.
    let err = result("engine_getBlobsV3", Fork::Osaka, b"null\n\n\n\n\x0c").unwrap_err();
    assert!(err.to_string().contains("getBlobsV3"), "{err}");
    for (name, fork, json) in [
        ("engine_getBlobsV1", Fork::Cancun, &b"[null]\x0c"[..]),
        ("engine_getBlobsV1", Fork::Cancun, &b"[\x0cnull]"[..]),
        ("engine_getBlobsV2", Fork::Osaka, &b"\x0c[]"[..]),
        ("engine_getBlobsV3", Fork::Osaka, &b"[null,\x0cnull]"[..]),
    ] {
        assert!(
            result(name, fork, json).is_err(),
            "{name} accepted {json:?}"
        );
        // The same document with a real blank is fine.
        let blank: Vec<u8> = json
            .iter()
            .map(|&b| if b == 0x0c { b' ' } else { b })
            .collect();
        assert!(
            result(name, fork, &blank).is_ok(),
            "{name} refused {blank:?}"
        );
    }
}

/// The same rule in the getPayload fast path, which splices the blob list out of the bundle.
#[test]
fn form_feed_is_not_json_whitespace_in_the_get_payload_fast_path() {
    let h = |b: u8| format!("\"0x{}\"", const_hex::encode([b; 32]));
    let envelope = |blobs: &str| {
        format!(
            r#"{{"executionPayload":{{"parentHash":{},"feeRecipient":"0x{}","stateRoot":{},"receiptsRoot":{},"logsBloom":"0x{}","prevRandao":{},"blockNumber":"0x1","gasLimit":"0x1c9c380","gasUsed":"0x0","timestamp":"0xc","extraData":"0x","baseFeePerGas":"0x7","blockHash":{},"transactions":[],"withdrawals":[],"blobGasUsed":"0x0","excessBlobGas":"0x0"}},"blockValue":"0x1","blobsBundle":{{"commitments":[],"proofs":[],"blobs":{blobs}}},"shouldOverrideBuilder":false}}"#,
            h(1),
            "02".repeat(20),
            h(3),
            h(4),
            "00".repeat(256),
            h(5),
            h(8),
        )
    };
    assert!(
        result(
            "engine_getPayloadV3",
            Fork::Cancun,
            envelope("[ ]").as_bytes()
        )
        .is_ok()
    );
    let err = result(
        "engine_getPayloadV3",
        Fork::Cancun,
        envelope("[\x0c]").as_bytes(),
    );
    assert!(err.is_err(), "a form feed in the blob list was accepted");
}
