//! `sszgate ctl` against a running `sszgate proxy`, as an operator would use them: a rule
//! added from the command line changes the next call and ends after its count; the token is
//! asked; a pause refuses calls until resumed. (The rules' effect on a real EL is tested in
//! the gateway's tests, against geth.)

mod common;

use std::{process::Command, sync::Arc};

use common::{CountingEl, KillOnDrop, request, start_proxy_under, terminate};

const TOKEN: &str = "ctl-token-1";

/// Runs `sszgate ctl` for `proxy_metrics`; exit success, stdout, stderr.
fn ctl(metrics: &str, token: Option<&str>, args: &[&str]) -> (bool, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sszgate"));
    command.args(["ctl", "--control", metrics]);
    if let Some(token) = token {
        command.args(["--token", token]);
    }
    let out = command
        .args(args)
        .env_remove("SSZGATE_CONTROL_TOKEN")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn rules_and_pauses_are_set_from_the_command_line() {
    let answer = br#"{"jsonrpc":"2.0","id":1,"result":["engine_newPayloadV4"]}"#.to_vec();
    let el = CountingEl::start(
        "content-type: application/json\r\n",
        Arc::new(answer.clone()),
    );
    let proxy = start_proxy_under(
        &[],
        el.addr,
        &[
            "--control-token".into(),
            TOKEN.into(),
            "--store".into(),
            "none".into(),
        ],
    );
    let _guard = KillOnDrop::of(&proxy);
    let call = || {
        request(
            &proxy.listen,
            "POST",
            "/",
            &[("content-type", "application/json")],
            br#"{"jsonrpc":"2.0","id":1,"method":"engine_exchangeCapabilities","params":[[]]}"#,
        )
    };

    let (ok, _, err) = ctl(&proxy.metrics, None, &["add", "--drop"]);
    assert!(
        !ok && err.contains("401") && err.contains("control-token"),
        "{err}"
    );
    let (ok, out, err) = ctl(
        &proxy.metrics,
        Some(TOKEN),
        &[
            "add",
            "--method",
            "engine_exchangeCapabilities",
            "--rpc-error",
            "-32000:boom",
            "--count",
            "1",
        ],
    );
    assert!(ok, "{err}");
    let id = serde_json::from_str::<serde_json::Value>(&out).unwrap()["id"]
        .as_u64()
        .unwrap();
    let (_, out, _) = ctl(&proxy.metrics, None, &["rules"]);
    let rules: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rules["rules"][0]["id"], id, "{rules}");
    assert_eq!(rules["rules"][0]["action"]["kind"], "rpc_error", "{rules}");

    let (status, body) = call();
    assert_eq!(status, 200);
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        body["error"],
        serde_json::json!({"code": -32000, "message": "boom"})
    );
    assert_eq!(el.requests(), 0, "an answered call does not reach the EL");
    let (status, body) = call();
    assert_eq!(
        (status, body),
        (200, answer.clone()),
        "the rule ended after one call"
    );
    assert_eq!(el.requests(), 1);

    let (ok, _, err) = ctl(
        &proxy.metrics,
        Some(TOKEN),
        &["add", "--method", "engine_nope", "--drop"],
    );
    assert!(!ok && err.contains("no Engine API method"), "{err}");
    let (ok, _, err) = ctl(&proxy.metrics, Some(TOKEN), &["rm", "99"]);
    assert!(!ok && err.contains("no rule 99"), "{err}");

    assert!(ctl(&proxy.metrics, Some(TOKEN), &["pause", "--reject"]).0);
    assert_eq!(call().0, 503);
    assert!(ctl(&proxy.metrics, Some(TOKEN), &["resume"]).0);
    assert_eq!(call(), (200, answer));
    terminate(proxy.child);
}
