//! Block tags and eth_getLogs filters against recorded proofs: `latest` answered only at the
//! recording's time (never by today's clock), `finalized`/`safe`/`earliest`/`pending` refused
//! when the verifier cannot show them, and a logs proof of another block than the filter
//! names refused.

mod common;

use common::{clock_for, expected, proof_bytes, trust_for};
use serde_json::{Value, json};
use sszgate_proof::tags::Clock;
use sszgate_proof::{Check, ProofError};

/// Verifies `case`'s proof for its method with `params`, the verifier's clock at `clock`.
fn verify_with(case: &str, params: &Value, clock: Clock) -> Result<Value, ProofError> {
    let e = expected(case);
    let mut trust = trust_for(case);
    trust.freshness.clock = clock;
    sszgate_proof::verify(
        &proof_bytes(case),
        e["method"].as_str().unwrap(),
        params,
        &mut trust,
    )
}

/// The recorded cases that ask for `latest` (or eth_blockNumber, which means it).
const LATEST: [&str; 8] = [
    "eth_blockNumber_electra",
    "eth_call1",
    "eth_getBalance1",
    "eth_getBlockByNumber_electra",
    "eth_getProof1",
    "eth_getStorageAt1",
    "eth_getTransactionCount1",
    "trusted_block1",
];

fn seconds(clock: Clock) -> u64 {
    match clock {
        Clock::Fixed(at) => at,
        Clock::System => panic!("a recorded case with a signature slot"),
    }
}

fn is_check(r: &Result<Value, ProofError>, check: Check) -> bool {
    matches!(r, Err(e) if e.check() == Some(check))
}

#[test]
fn latest_is_answered_at_the_recordings_time_and_refused_by_todays_clock() {
    for case in LATEST {
        let params = &expected(case)["params"];
        let then = seconds(clock_for(case));
        let at_its_time = verify_with(case, params, Clock::Fixed(then));
        assert!(at_its_time.is_ok(), "{case}: {:?}", at_its_time.err());
        // The clock is one slot after the header: two slots later it is three slots behind,
        // still fresh by default; three slots later four behind, refused.
        let fresh = verify_with(case, params, Clock::Fixed(then + 2 * 12));
        assert!(fresh.is_ok(), "{case}: {:?}", fresh.err());
        let stale = verify_with(case, params, Clock::Fixed(then + 3 * 12));
        assert!(is_check(&stale, Check::Tag), "{case}: {stale:?}");
        let today = verify_with(case, params, Clock::System);
        assert!(is_check(&today, Check::Tag), "{case}: {today:?}");
        // A clock well before the header: the header is from the future.
        let early = verify_with(case, params, Clock::Fixed(then - 5 * 12));
        assert!(is_check(&early, Check::Tag), "{case}: {early:?}");
    }
}

#[test]
fn a_relaxed_head_age_accepts_an_older_latest() {
    let case = "eth_getBalance1";
    let e = expected(case);
    let mut trust = trust_for(case);
    let then = seconds(clock_for(case));
    trust.freshness.clock = Clock::Fixed(then + 100 * 12);
    trust.freshness.max_head_age = 101;
    let r = sszgate_proof::verify(
        &proof_bytes(case),
        "eth_getBalance",
        &e["params"],
        &mut trust,
    );
    assert_eq!(r.unwrap(), e["result"]);
}

/// `case`'s params with its block argument (the last one) replaced by `tag`.
fn with_tag(case: &str, tag: &str) -> Value {
    let mut params = expected(case)["params"].clone();
    let a = params.as_array_mut().unwrap();
    *a.last_mut().unwrap() = json!(tag);
    params
}

#[test]
fn tags_the_verifier_cannot_show_are_refused_as_unprovable() {
    for case in ["eth_getBalance1", "eth_getStorageAt1", "eth_call1"] {
        for tag in ["finalized", "safe", "earliest", "pending"] {
            let r = verify_with(case, &with_tag(case, tag), clock_for(case));
            assert!(
                matches!(&r, Err(ProofError::Unprovable(w)) if w.contains(tag)),
                "{case} {tag}: {r:?}"
            );
        }
    }
    let r = verify_with(
        "eth_getBlockByNumber_electra",
        &json!(["finalized", false]),
        clock_for("eth_getBlockByNumber_electra"),
    );
    assert!(matches!(r, Err(ProofError::Unprovable(_))), "{r:?}");
}

#[test]
fn finalized_is_refused_for_a_block_after_the_finalized_header_held() {
    // The update of this proof's sync data finalizes a header of period 1392; a proof of a
    // period-1393 block for `finalized` is then refused, naming the header held.
    let e = expected("syncdata_deneb_update_only");
    let mut trust = trust_for("syncdata_deneb_update_only");
    let r = sszgate_proof::verify(
        &proof_bytes("syncdata_deneb_update_only"),
        "eth_getTransactionReceipt",
        &e["params"],
        &mut trust,
    );
    assert!(r.is_ok(), "{r:?}");
    let held = trust
        .finalized()
        .expect("a finalized header from the update");
    let period = trust.spec.period(held.slot);
    assert_eq!(period, 1392);
    let case = "eth_getBalance1";
    trust.freshness.clock = clock_for(case);
    let r = sszgate_proof::verify(
        &proof_bytes(case),
        "eth_getBalance",
        &with_tag(case, "finalized"),
        &mut trust,
    );
    assert!(
        matches!(&r, Err(ProofError::Unprovable(w)) if w.contains(&format!("slot {}", held.slot))),
        "{r:?}"
    );
}

/// eth_getLogs1's filter with `change` applied.
fn logs_filter(change: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Value {
    let mut params = expected("eth_getLogs1")["params"].clone();
    change(params[0].as_object_mut().unwrap());
    params
}

fn verify_logs(params: &Value) -> Result<Value, ProofError> {
    verify_with("eth_getLogs1", params, Clock::System)
}

/// The proven block of eth_getLogs1: number and hash.
fn logs_block() -> (u64, String) {
    let request = sszgate_proof::decode(&proof_bytes("eth_getLogs1")).unwrap();
    let sszgate_proof::types::ProofUnion::Logs(blocks) = request.proof else {
        panic!("a LogsProof")
    };
    (blocks[0].block_number, blocks[0].block_hash.to_string())
}

#[test]
fn logs_of_a_block_outside_the_asked_range_are_refused() {
    let (number, _) = logs_block();
    let truth = verify_logs(&expected("eth_getLogs1")["params"]).unwrap();
    let later = format!("{:#x}", number + 1);
    let earlier = format!("{:#x}", number - 1);
    for (from, to) in [(later.clone(), later), (earlier.clone(), earlier)] {
        let r = verify_logs(&logs_filter(|f| {
            f.insert("fromBlock".into(), json!(from));
            f.insert("toBlock".into(), json!(to));
        }));
        assert!(is_check(&r, Check::Request), "{r:?}");
    }
    // No range: `latest` to `latest`, which a block of 2025 is not by today's clock.
    let r = verify_logs(&logs_filter(|f| {
        f.remove("fromBlock");
        f.remove("toBlock");
    }));
    assert!(is_check(&r, Check::Tag), "{r:?}");
    // toBlock `finalized` with no finalized header held; fromBlock `safe` never.
    for (key, tag) in [
        ("toBlock", "finalized"),
        ("fromBlock", "safe"),
        ("toBlock", "pending"),
    ] {
        let r = verify_logs(&logs_filter(|f| {
            f.insert(key.into(), json!(tag));
        }));
        assert!(
            matches!(&r, Err(ProofError::Unprovable(w)) if w.contains(tag)),
            "{key} {tag}: {r:?}"
        );
    }
    // A wider range holding the block, and fromBlock `earliest`, are fine.
    let wide = verify_logs(&logs_filter(|f| {
        f.insert("fromBlock".into(), json!("earliest"));
        f.insert("toBlock".into(), json!(format!("{:#x}", number + 10)));
    }));
    assert_eq!(wide.unwrap(), truth);
}

#[test]
fn logs_of_another_block_than_the_block_hash_are_refused() {
    let (_, hash) = logs_block();
    let by_hash = |h: &str| {
        let h = h.to_string();
        logs_filter(move |f| {
            f.remove("fromBlock");
            f.remove("toBlock");
            f.insert("blockHash".into(), json!(h));
        })
    };
    let truth = verify_logs(&expected("eth_getLogs1")["params"]).unwrap();
    assert_eq!(verify_logs(&by_hash(&hash)).unwrap(), truth);
    let other = format!("0x{}", "11".repeat(32));
    let r = verify_logs(&by_hash(&other));
    assert!(is_check(&r, Check::Request), "{r:?}");
}

#[test]
fn filters_the_verifier_cannot_check_are_refused() {
    let (_, hash) = logs_block();
    let cases: Vec<(Value, &str)> = vec![
        (
            logs_filter(|f| {
                f.insert("blockHash".into(), json!(hash));
            }),
            "blockHash together",
        ),
        (
            logs_filter(|f| {
                f.insert("limit".into(), json!(5));
            }),
            "limit",
        ),
        (
            logs_filter(|f| {
                f.insert("address".into(), json!([1]));
            }),
            "address",
        ),
        (
            logs_filter(|f| {
                f.insert("topics".into(), json!([[7]]));
            }),
            "topic",
        ),
        (
            logs_filter(|f| {
                f.insert("topics".into(), json!([null, null, null, null, null]));
            }),
            "topics",
        ),
        (
            logs_filter(|f| {
                f.insert("fromBlock".into(), json!("0x14d7971"));
            }),
            "after toBlock",
        ),
        (
            logs_filter(|f| {
                f.insert("toBlock".into(), json!(hash));
            }),
            "toBlock",
        ),
    ];
    for (params, says) in cases {
        let r = verify_logs(&params);
        assert!(
            matches!(&r, Err(ProofError::Params(w)) if w.contains(says)),
            "{says}: {r:?}"
        );
    }
}
