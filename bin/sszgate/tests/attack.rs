//! The short attack campaign: `sszgate bench attack --short` against real `sszgate proxy`
//! processes, every attack kind once, each row held to its invariants by value: the proxy
//! lives, a normal call is answered 200 within 1 s after the attack (a behaviour bound), its
//! fds and RSS come back within their bounds, and nothing unauthenticated or hidden reaches
//! the EL.

use std::process::Command;

use serde_json::Value;

/// Every attack kind the campaign must hold (a row whose name starts so).
const KINDS: [&str; 10] = [
    "conn flood, no request",
    "conn flood, a request each",
    "slowloris",
    "HTTP/1.1: CL.TE smuggling",
    "HTTP/1.1: chunk size",
    "h2c: rapid reset",
    "h2c: CONTINUATION flood",
    "ws: ping flood",
    "bomb",
    "snooper:",
];

/// The rpc-snooper surfaces' rows against `sszgate snooper` (e), and what each must have
/// been answered: refused (an error, a closed connection, 401) or, for the module client
/// that never reads, every call relayed all the same.
const SNOOPER_ROWS: [(&str, &[&str]); 5] = [
    (
        "snooper: unknown module type",
        &[
            r#"error "Unknown module type: counter""#,
            r#"error "Unknown method: no_such_method""#,
            "ok {",
            "Module request_counter registered successfully",
        ],
    ),
    (
        "snooper: malformed frames",
        &[
            "unparsable JSON: 101; then",
            "text not UTF-8: 101; then",
            "opcode 0x3: 101; then",
            "RSV1 set: 101; then",
            "unmasked: 101; then",
        ],
    ),
    ("snooper: 2^62-byte frame", &["101; then"]),
    (
        "snooper: module client never reads",
        &["200× HTTP/1.1 200 OK"],
    ),
    (
        "snooper: wrong basic auth",
        &["5× HTTP/1.1 401 Unauthorized"],
    ),
];

/// How a row against (e) was answered, checked by value; the reasons it was not as it must be.
fn snooper_answer(rows: &[Value], name: &str, expected: &[&str]) -> Vec<String> {
    let Some(row) = rows.iter().find(|r| r["attack"] == name) else {
        return vec![format!("no row {name}")];
    };
    assert_eq!(row["target"], "Snooper", "{row}");
    let answered = row["answered"].as_str().unwrap_or("");
    let mut wrong: Vec<String> = expected
        .iter()
        .filter(|e| !answered.contains(*e))
        .map(|e| format!("{name}: `{e}` not in `{answered}`"))
        .collect();
    // A socket the server refused ends: it is never left open.
    if name != "snooper: module client never reads" && answered.contains("open") {
        wrong.push(format!("{name}: a connection left open: `{answered}`"));
    }
    wrong
}

fn field(row: &Value, name: &str) -> u64 {
    row[name]
        .as_u64()
        .unwrap_or_else(|| panic!("{name} in {row}"))
}

/// The invariants one row broke, in words.
fn broken(row: &Value) -> Vec<String> {
    let mut broken = Vec::new();
    if row["stopped_at_ceiling"] == true {
        broken.push("killed by the campaign: RSS past before + 2 GiB".to_string());
    } else if row["alive"] != true {
        broken.push("the proxy died".to_string());
    }
    match row["recovered_ms"].as_u64() {
        Some(ms) if ms <= 1000 => {}
        _ => broken.push("no normal call answered 200 within 1 s".into()),
    }
    let own_before = field(row, "fds_before") - field(row, "el_conns_before");
    let own_after = field(row, "fds_after") - field(row, "el_conns_after");
    if own_after > own_before + 8 || field(row, "el_conns_after") > 32 + 8 {
        broken.push(format!("fds {own_before} → {own_after}"));
    }
    if field(row, "rss_peak_kib") > field(row, "rss_before_kib") + (512 << 10) {
        broken.push("RSS grew past 512 MiB".into());
    }
    if row["unauthenticated"] == true
        && (field(row, "el_bytes") > 0 || field(row, "el_requests") > 0)
    {
        broken.push("an unauthenticated call reached the EL".into());
    }
    if field(row, "el_hidden") > 0 {
        broken.push("a hidden request reached the EL".into());
    }
    broken
}

#[test]
fn the_short_campaign_keeps_every_invariant() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("attack.json");
    let output = Command::new(env!("CARGO_BIN_EXE_sszgate"))
        .args(["bench", "attack", "--short", "--json"])
        .arg(&json)
        .env("SSZGATE_LOG", "error")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap_or_default())
        .unwrap_or_else(|e| {
            panic!(
                "no report ({e}):\n{stdout}\n{}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    let rows = report["rows"].as_array().expect("rows");
    for kind in KINDS {
        assert!(
            rows.iter()
                .any(|r| r["attack"].as_str().unwrap_or("").starts_with(kind)),
            "no {kind} row"
        );
    }
    // Every target is attacked, and (b) is attacked without a token.
    let wrong: Vec<String> = SNOOPER_ROWS
        .iter()
        .flat_map(|(name, expected)| snooper_answer(rows, name, expected))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    for target in ["Relay", "Verify", "Bridge", "Fds128", "Snooper"] {
        assert!(
            rows.iter().any(|r| r["target"] == target),
            "{target} never attacked"
        );
    }
    assert!(
        rows.iter()
            .any(|r| r["target"] == "Verify" && r["unauthenticated"] == true)
    );
    let failures: Vec<String> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, row)| {
            let broken = broken(row);
            (!broken.is_empty()).then(|| {
                format!(
                    "row {} {} → {}: {}",
                    i + 1,
                    row["attack"],
                    row["target"],
                    broken.join("; ")
                )
            })
        })
        .collect();
    assert!(failures.is_empty(), "{}\n\n{stdout}", failures.join("\n"));
    assert!(output.status.success(), "{stdout}");
}
