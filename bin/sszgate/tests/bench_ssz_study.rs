//! `sszgate bench ssz-chain` on a real chain, short: Lodestar v1.38 + geth (Osaka, BPO1
//! 48/72) with a follower pair, both Engine links through two bridges back to back, a block of
//! six real mainnet blobs and the blocks without a load around it. Every row of the report
//! must hold: JSON larger than SSZ for the messages that carry a payload or blobs, positive
//! encode and decode times for every recorded message, positive translation times where a
//! payload crossed; rows for the proposer's blob-carrying calls. (The follower's getBlobsV2
//! rows come when it keeps its peer; on a loaded 2-core machine it was seen to lose it
//! before its first block, so they are not required here.)
//!
//! Needs geth (`SSZGATE_GETH`, `.tools/bin/geth`) and the Lodestar v1.38 build
//! (`SSZGATE_LODESTAR_FULU` or `$HOME/.cache/lodestar-v1.38`); locally a missing one skips
//! loudly, under `CI=true` it fails.

mod common;

use std::process::Command;

use common::chain::{ONE_CHAIN, fulu_tools};
use serde_json::Value;

/// The row of `method`, `direction` and `blobs`, if the report has one.
fn row<'a>(rows: &'a [Value], method: &str, direction: &str, blobs: u64) -> Option<&'a Value> {
    rows.iter().find(|r| {
        r["method"] == method && r["direction"] == direction && r["blobs"].as_u64() == Some(blobs)
    })
}

fn median(row: &Value, field: &str) -> Option<f64> {
    row[field]["median"].as_f64()
}

#[test]
fn a_short_study_on_a_real_chain_has_json_above_ssz_and_positive_times_on_every_row() {
    let Some(tools) = fulu_tools() else { return };
    let _turn = ONE_CHAIN.lock().unwrap_or_else(|e| e.into_inner());
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_sszgate"))
        .args(["bench", "ssz-chain", "--blobs", "0,6", "--rounds", "1"])
        .args(["--codec-rounds", "3", "--out"])
        .arg(out.path())
        .env("SSZGATE_GETH", &tools.0)
        .env("SSZGATE_LODESTAR_FULU", &tools.1)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let report: Value =
        serde_json::from_str(&common::read_log(out.path().join("ssz-chain.json")).unwrap())
            .unwrap();
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(report["blocks"][0]["blobs"], 6, "{}", report["blocks"]);
    for (method, direction, blobs) in [
        ("engine_getPayloadV5", "answer", 6),
        ("engine_getPayloadV5", "answer", 0),
        ("engine_newPayloadV4", "request", 6),
        ("engine_forkchoiceUpdatedV3", "request", 0),
    ] {
        assert!(
            row(rows, method, direction, blobs).is_some(),
            "no row {method} {direction} {blobs}: {rows:?}"
        );
    }
    for r in rows {
        let what = format!("{} {} {}", r["method"], r["direction"], r["blobs"]);
        let (json, ssz) = (
            median(r, "json_bytes").unwrap(),
            median(r, "ssz_bytes").unwrap(),
        );
        let carries = match r["direction"].as_str().unwrap() {
            "answer" => ["getPayloadV", "getBlobsV"]
                .iter()
                .any(|m| r["method"].as_str().unwrap().contains(m)),
            _ => r["method"].as_str().unwrap().contains("newPayloadV"),
        };
        if carries {
            assert!(json > ssz, "{what}: JSON {json} bytes, SSZ {ssz}");
            for field in ["to_ssz_us", "to_json_us"] {
                assert!(median(r, field).unwrap() > 0.0, "{what}: {field}: {r}");
            }
        }
        for field in [
            "json_encode_us",
            "ssz_encode_us",
            "json_decode_us",
            "ssz_decode_us",
        ] {
            assert!(median(r, field).unwrap() > 0.0, "{what}: {field}: {r}");
        }
    }
    // At 6 blobs the bundle is about 0.8 MB as SSZ and twice that as JSON.
    let bundle = row(rows, "engine_getPayloadV5", "answer", 6).unwrap();
    let ratio = median(bundle, "json_bytes").unwrap() / median(bundle, "ssz_bytes").unwrap();
    assert!((1.9..2.1).contains(&ratio), "{ratio}");
    let html = common::read_log(out.path().join("ssz-chain.html")).unwrap();
    assert!(html.contains("bytes per method and blob count") && html.contains("<svg"));
}
