//! The `sszgate` binary as a user runs it: real process, stdin/stdout, exit codes.

use std::{
    io::Write,
    process::{Command, Output, Stdio},
};

fn sszgate(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sszgate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sszgate starts");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn version_and_help() {
    let out = sszgate(&["--version"], b"");
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("sszgate {}", env!("CARGO_PKG_VERSION"))
    );
    let out = sszgate(&["--help"], b"");
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        help.contains("convert") && help.contains("Planned, not yet available"),
        "{help}"
    );
}

#[test]
fn payload_status_json_to_hex_and_back() {
    let json = br#"{"status":"INVALID","latestValidHash":null,"validationError":"bad state root"}"#;
    let out = sszgate(
        &["convert", "--message", "payload-status", "--to", "hex"],
        json,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        "0x0109000000090000000400000062616420737461746520726f6f74"
    );
    let out = sszgate(
        &["convert", "--message", "payload-status"],
        b"0x010900000009000000040000006261642073746174652072 6f6f74",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        back,
        serde_json::json!({"status": "INVALID", "latestValidHash": null, "validationError": "bad state root"})
    );
}

#[test]
fn method_name_picks_version_and_binary_ssz_goes_to_stdout() {
    let z = format!("0x{}", "00".repeat(32));
    let params = format!(
        r#"[{{"headBlockHash":"{z}","safeBlockHash":"{z}","finalizedBlockHash":"{z}"}},null]"#
    );
    let out = sszgate(
        &["convert", "--message", "engine_forkchoiceUpdatedV3"],
        params.as_bytes(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut expected = vec![0u8; 96];
    expected.extend_from_slice(&100u32.to_le_bytes());
    assert_eq!(out.stdout, expected, "stdout is a pipe: raw SSZ");
    let out = sszgate(
        &[
            "convert",
            "--message",
            "engine_forkchoiceUpdatedV3",
            "--fork",
            "cancun",
            "--from",
            "ssz",
        ],
        &expected,
    );
    let back: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let sent: serde_json::Value = serde_json::from_str(&params).unwrap();
    assert_eq!(back, sent);
}

#[test]
fn bad_input_fails_with_a_precise_message() {
    // Truncated SSZ payload status.
    let out = sszgate(
        &["convert", "--message", "payload-status", "--from", "ssz"],
        &[0, 9, 0, 0, 0],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("sszgate: error: converting standard input"),
        "{err}"
    );
    assert!(
        err.contains(
            "invalid SSZ PayloadStatus: . at byte 0: truncated: needs at least 9 bytes, got 5"
        ),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "nothing half-done on stdout");
    // A fork the method does not serve.
    let out = sszgate(
        &[
            "convert",
            "--message",
            "engine_getPayloadV4",
            "--fork",
            "osaka",
            "--response",
        ],
        b"{}",
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("engine_getPayloadV4 does not serve fork osaka")
    );
    // Unknown message name.
    let out = sszgate(&["convert", "--message", "nope"], b"{}");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("unknown message \"nope\"")
    );
    // A missing file names the file.
    let out = sszgate(
        &[
            "convert",
            "--message",
            "payload-status",
            "/nonexistent/x.ssz",
        ],
        b"",
    );
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("reading /nonexistent/x.ssz")
    );
}
