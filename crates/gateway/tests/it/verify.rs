//! `--verify` and `--verify-enforce` through the relay: real mainnet payloads and blobs pass;
//! a corrupted payload gets a failed verdict naming the check (and, enforced, an error for the
//! CL while the EL never sees it); the verdicts reach the metrics.

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use serde_json::{Value, json};
use sszgate_engine::{Fork, Message, message::NewPayload};
use sszgate_fixtures::{self as fixtures, Fixtures, versioned_hash};

use crate::{
    Proxy,
    fake_el::{Answer, FakeEl},
    post_json, send,
};

/// The newPayload params of a real Electra block with blobs; its gas used off by one when
/// `corrupt` (the block hash then no longer holds).
fn electra_payload(corrupt: bool) -> NewPayload {
    let fixtures = Fixtures::load(&fixtures::testdata_dir()).unwrap();
    let mut np = fixtures
        .blocks
        .iter()
        .rev()
        .map(|b| b.new_payload().unwrap())
        .find(|np| matches!(np, NewPayload::Prague(_, h, ..) if !h.is_empty()))
        .expect("an electra block with blobs");
    if corrupt && let NewPayload::Prague(p, ..) = &mut np {
        p.payload_inner.payload_inner.gas_used -= 1;
    }
    np
}

/// A newPayloadV4 call of [`electra_payload`], as JSON-RPC text.
pub(crate) fn new_payload_call(corrupt: bool) -> String {
    let params = Message::NewPayload(electra_payload(corrupt))
        .to_json_params()
        .unwrap();
    format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"engine_newPayloadV4","params":{}}}"#,
        String::from_utf8(params).unwrap()
    )
}

const VALID: &str = r#"{"jsonrpc":"2.0","id":7,"result":{"status":"VALID","latestValidHash":null,"validationError":null}}"#;

type Verdicts = Vec<(String, Option<String>, Option<String>, Option<String>)>;

async fn verdicts(proxy: Proxy) -> Verdicts {
    let (db, _dir) = proxy.finish().await;
    db.prepare("SELECT method, verdict, verify_check, verify_detail FROM calls ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The versioned hashes of testdata's real blobs, and a getBlobsV2 answer with them all; when
/// `short_proofs`, its second entry has one cell proof too few.
fn get_blobs_answer(short_proofs: bool) -> (Vec<alloy_primitives::B256>, String) {
    let items = Fixtures::load(&fixtures::testdata_dir())
        .unwrap()
        .blobs()
        .unwrap();
    let hashes = items
        .iter()
        .map(|b| versioned_hash(&b.commitment))
        .collect();
    let mut entries = fixtures::blobs_v2_response(&items, items.len());
    if short_proofs {
        entries[1].proofs.pop();
    }
    let blobs = Message::Blobs(sszgate_engine::message::Blobs::V2(Some(entries)))
        .to_json()
        .unwrap();
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":8,"result":{}}}"#,
        String::from_utf8(blobs).unwrap()
    );
    (hashes, answer)
}

#[tokio::test]
async fn sampling_checks_kzg_on_the_first_blob_call_and_the_rest_of_every_call() {
    let (hashes, good) = get_blobs_answer(false);
    let (_, short) = get_blobs_answer(true);
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let el = FakeEl::start(move |_| {
        // The third answer is one cell proof short.
        match calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            2 => Answer::ok("application/json", short.clone()),
            _ => Answer::ok("application/json", good.clone()),
        }
    })
    .await;
    // At 1 % of the wall clock, the first check (two blobs of cell proofs, tens of ms) is
    // earned back only seconds after the three calls, which are recorded as they come.
    let paced = sszgate_verify::Mode::Sample { kzg_percent: 1 };
    let proxy = Proxy::start_verifying(&el.url(), paced, false).await;
    let get_blobs =
        json!({"jsonrpc": "2.0", "id": 8, "method": "engine_getBlobsV2", "params": [hashes]});
    for _ in 0..3 {
        let (code, _, _) = send(post_json(&proxy.url(), get_blobs.to_string()), false).await;
        assert_eq!(code, 200);
    }
    let rows = verdicts(proxy).await;
    let got: Vec<_> = rows
        .iter()
        .map(|r| (r.1.as_deref(), r.2.as_deref(), r.3.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            (Some("ok"), Some("kzg"), None),
            (Some("ok"), None, None),
            (
                Some("failed"),
                Some("blobs-answer"),
                Some("[1]: 127 cell proofs, 128 expected")
            ),
        ]
    );
}

#[tokio::test]
async fn payloads_and_blobs_are_verified_off_the_forward_path() {
    let (hashes, blobs_answer) = get_blobs_answer(false);
    let el = FakeEl::start(move |seen| {
        if seen.body.windows(15).any(|w| w == b"engine_getBlobs") {
            Answer::ok("application/json", blobs_answer.clone())
        } else {
            Answer::ok("application/json", VALID)
        }
    })
    .await;
    let proxy = Proxy::start_verifying(&el.url(), sszgate_verify::Mode::All, false).await;
    for corrupt in [false, true] {
        let (code, _, body) = send(post_json(&proxy.url(), new_payload_call(corrupt)), false).await;
        // Verification never changes the answer: both are relayed, the EL decides.
        assert_eq!((code.as_u16(), body.as_ref()), (200, VALID.as_bytes()));
    }
    let get_blobs =
        json!({"jsonrpc": "2.0", "id": 8, "method": "engine_getBlobsV2", "params": [hashes]});
    let (code, _, _) = send(post_json(&proxy.url(), get_blobs.to_string()), false).await;
    assert_eq!(code, 200);
    assert_eq!(el.seen.lock().unwrap().len(), 3);
    // Wait for the worker, then read the verdicts in the metrics.
    let metrics = proxy.metrics_after(3).await;
    for line in [
        r#"sszgate_verify_total{method="engine_newPayloadV4",verdict="ok",check=""} 1"#,
        r#"sszgate_verify_total{method="engine_newPayloadV4",verdict="failed",check="block-hash"} 1"#,
        r#"sszgate_verify_total{method="engine_getBlobsV2",verdict="ok",check="kzg"} 1"#,
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
    let rows = verdicts(proxy).await;
    assert_eq!(rows[0].1.as_deref(), Some("ok"), "{rows:?}");
    assert_eq!(
        (rows[1].1.as_deref(), rows[1].2.as_deref()),
        (Some("failed"), Some("block-hash"))
    );
    assert!(
        rows[1]
            .3
            .as_deref()
            .unwrap()
            .contains("payload.blockHash is")
    );
    assert_eq!(
        (
            rows[2].0.as_str(),
            rows[2].1.as_deref(),
            rows[2].2.as_deref()
        ),
        ("engine_getBlobsV2", Some("ok"), Some("kzg"))
    );
}

#[tokio::test]
async fn enforced_verification_refuses_a_bad_payload_before_the_el() {
    let el = FakeEl::start(|_| Answer::ok("application/json", VALID)).await;
    let proxy = Proxy::start_verifying(&el.url(), sszgate_verify::Mode::Off, true).await;
    let (code, _, body) = send(post_json(&proxy.url(), new_payload_call(true)), false).await;
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(code, 200);
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("verify-enforce") && message.contains("block-hash"),
        "{message}"
    );
    assert!(
        el.seen.lock().unwrap().is_empty(),
        "the EL saw the bad payload"
    );
    // A good payload is relayed.
    let (_, _, body) = send(post_json(&proxy.url(), new_payload_call(false)), false).await;
    assert_eq!(body.as_ref(), VALID.as_bytes());
    assert_eq!(el.seen.lock().unwrap().len(), 1);
    // The same over REST-SSZ: a bad envelope is a 422 problem, not relayed.
    let body = Message::NewPayload(electra_payload(true))
        .to_ssz(Fork::Prague)
        .unwrap();
    let rest = Request::post(format!("{}/engine/v1/payloads", proxy.url()))
        .header("content-type", "application/octet-stream")
        .header("eth-execution-version", "prague")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let (code, headers, _) = send(rest, false).await;
    assert_eq!(
        (code.as_u16(), headers["content-type"].to_str().unwrap()),
        (422, "application/problem+json")
    );
    assert_eq!(el.seen.lock().unwrap().len(), 1);
    let rows = verdicts(proxy).await;
    assert_eq!(rows.len(), 3);
}
