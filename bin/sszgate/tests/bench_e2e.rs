//! `sszgate bench e2e` on a real chain, short: one round of windows of three slots (direct,
//! sszgate, rpc-snooper, a second forwarder) on the lodestar-fulu kit's Fulu chain with a
//! follower pair, a blob load of real mainnet blobs. Checks that every middle has CL-perceived
//! calls with durations above zero, that the join found sszgate's and rpc-snooper's record of
//! calls, and that the Markdown and HTML reports hold the three tables.
//!
//! Needs geth (`SSZGATE_GETH`, `.tools/bin/geth`), the Lodestar v1.38 build
//! (`SSZGATE_LODESTAR_FULU`, `$HOME/.cache/lodestar-v1.38`) and rpc-snooper
//! (`SSZGATE_RPC_SNOOPER`, `$HOME/.cache/rpc-snooper-6452c11`). Locally a missing one skips
//! loudly; under `CI=true` it fails.

mod common;

use std::{path::PathBuf, process::Command};

use common::chain::{ONE_CHAIN, fulu_tools};
use serde_json::Value;

/// rpc-snooper's build directory, or a loud skip (a failure under CI).
fn rpc_snooper() -> Option<PathBuf> {
    let dir = std::env::var_os("SSZGATE_RPC_SNOOPER")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/rpc-snooper-6452c11"))
        })
        .filter(|d| d.join("bin/snooper").exists());
    if dir.is_none() {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        let install = "bash ../shared/tools/rpc-snooper/build.sh, or SSZGATE_RPC_SNOOPER";
        assert!(!in_ci, "rpc-snooper is missing under CI: {install}");
        eprintln!("\n!!!!!!!! SKIPPED: bench e2e: no rpc-snooper ({install}) !!!!!!!!\n");
    }
    dir
}

#[test]
fn a_short_run_has_cl_timed_calls_for_every_middle_and_joins_the_middles_records() {
    let Some((geth, lodestar)) = fulu_tools() else {
        return;
    };
    let Some(snooper) = rpc_snooper() else {
        return;
    };
    let _one = ONE_CHAIN.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let (md, json) = (dir.path().join("e2e.md"), dir.path().join("e2e.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_sszgate"))
        .args(["bench", "e2e", "--windows", "1", "--slots-per-window", "4"])
        .arg("--geth")
        .arg(&geth)
        .arg("--lodestar")
        .arg(&lodestar)
        .arg("--rpc-snooper")
        .arg(&snooper)
        .arg("--out")
        .arg(&md)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr.matches("sszgate bench e2e: window ").count(),
        4,
        "a progress line per window: {stderr}"
    );
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let samples = report["samples"].as_array().unwrap();
    for middle in ["direct", "sszgate", "rpc-snooper", "2nd forwarder"] {
        let timed: Vec<&Value> = samples
            .iter()
            .filter(|s| s["middle"] == middle && s["cl_us"].as_f64().unwrap() > 0.0)
            .collect();
        assert!(
            timed.iter().any(|s| s["method"] == "engine_getPayloadV5"),
            "{middle}: no getPayloadV5 timed by the CL: {timed:?}"
        );
        assert!(
            timed
                .iter()
                .any(|s| s["method"] == "engine_newPayloadV4 · follower"),
            "{middle}: no follower call timed: {timed:?}"
        );
    }
    for middle in ["sszgate", "rpc-snooper"] {
        let joined: Vec<&Value> = samples
            .iter()
            .filter(|s| s["middle"] == middle && s["el_us"].as_f64().is_some_and(|v| v > 0.0))
            .collect();
        assert!(!joined.is_empty(), "{middle}: the join found no call");
        // What the CL perceived includes what the EL took (and the middle, and the parse).
        let sane = joined
            .iter()
            .filter(|s| s["cl_us"].as_f64() >= s["el_us"].as_f64())
            .count();
        assert!(sane * 2 > joined.len(), "{middle}: {joined:?}");
    }
    for middle in ["direct", "2nd forwarder"] {
        assert!(
            samples
                .iter()
                .all(|s| s["middle"] != middle || s["el_us"].is_null()),
            "{middle} has no EL-side record"
        );
    }
    let markdown = common::read_log(&md).unwrap();
    for title in [
        "CL-perceived duration per middle",
        "difference against direct",
        "overhead per call",
    ] {
        assert!(markdown.contains(title), "{title}: {markdown}");
    }
    let html = common::read_log(md.with_extension("html")).unwrap();
    assert!(html.contains("<svg"), "the HTML report has charts");
}
