//! The short soak: `sszgate bench soak` for 40 s at ten times mainnet's rate, through the relay
//! and the bridge (two real `sszgate proxy` processes), on the repository's fixtures. No call
//! fails, every call has its record in SQLite, both proxies stop cleanly on SIGTERM, and
//! neither grows past half again its RSS after warm-up. (Memory, not time: the bound holds on
//! a slow machine too.)

use std::process::Command;

#[test]
fn forty_seconds_at_ten_times_mainnet_lose_nothing_and_do_not_grow() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("soak.json");
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata");
    let output = Command::new(env!("CARGO_BIN_EXE_sszgate"))
        .args([
            "bench",
            "soak",
            "--duration",
            "40s",
            "--rate-multiplier",
            "10",
        ])
        .args([
            "--blobs",
            "0,1,6,9",
            "--sample-every",
            "2s",
            "--warm-up",
            "10s",
        ])
        .args(["--data", data])
        .arg("--json")
        .arg(&json)
        .env("SSZGATE_LOG", "error")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let paths = report["paths"].as_array().unwrap();
    let names: Vec<&str> = paths.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["relay", "bridge"]);
    assert!(report["slots"].as_u64().unwrap() >= 10, "{stdout}");
    for path in paths {
        let calls = path["calls"].as_u64().unwrap();
        // Four calls a slot at least (forkchoice, getPayload, newPayload, forkchoice or
        // getBlobs), every one answered and recorded.
        assert!(calls >= 40, "{stdout}");
        assert_eq!(path["errors"], 0, "{stdout}");
        assert_eq!(path["records"].as_u64().unwrap(), calls, "{stdout}");
        assert_eq!(path["lost"], 0, "{stdout}");
        assert_eq!(path["dropped"], 0, "{stdout}");
        assert_eq!(path["exit_ok"], true, "{stdout}");
        let rss = &path["rss_kib"];
        let warm = rss["warm"].as_u64().unwrap();
        assert!(warm > 0, "{stdout}");
        let halves = (
            rss["median_first_half"].as_u64().unwrap(),
            rss["median_second_half"].as_u64().unwrap(),
        );
        assert!(
            halves.1 * 2 <= halves.0 * 3,
            "{} RSS median grew from {} to {} KiB after warm-up\n{stdout}",
            path["name"],
            halves.0,
            halves.1
        );
        for figure in ["end", "max_after_warm"] {
            let kib = rss[figure].as_u64().unwrap();
            assert!(
                kib * 2 <= warm * 3,
                "{} RSS {figure} {kib} KiB is over 1.5 x {warm} KiB after warm-up\n{stdout}",
                path["name"]
            );
        }
    }
}
