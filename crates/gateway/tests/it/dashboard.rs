//! The Grafana dashboard in docs/grafana queries only metrics the proxy exposes: every
//! `sszgate_*` series named in a panel appears in a live proxy's `/metrics` after a few calls.

use crate::{
    Proxy,
    fake_el::{Answer, FakeEl},
    post_json, send,
};

#[tokio::test]
async fn every_series_the_dashboard_queries_is_exposed() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/grafana/sszgate-dashboard.json"
    );
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().unwrap().clone())
        .map(|t| t["expr"].as_str().unwrap().to_string())
        .collect();
    assert!(exprs.len() >= 8);
    let mut names: Vec<String> = Vec::new();
    for expr in &exprs {
        let mut rest = expr.as_str();
        while let Some(at) = rest.find("sszgate_") {
            let name: String = rest[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[at + name.len()..];
            names.push(name);
        }
    }
    names.sort();
    names.dedup();

    // A call of each kind the panels count: a good one (verified) and an error.
    let el = FakeEl::start(|seen| {
        if seen.body.windows(10).any(|w| w == b"newPayload") {
            Answer::ok(
                "application/json",
                r#"{"jsonrpc":"2.0","id":7,"result":{"status":"VALID","latestValidHash":null,"validationError":null}}"#,
            )
        } else {
            Answer::ok(
                "application/json",
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#,
            )
        }
    })
    .await;
    let proxy = Proxy::start_verifying(&el.url(), sszgate_verify::Mode::All, false).await;
    for call in [
        crate::verify::new_payload_call(false),
        r#"{"jsonrpc":"2.0","id":1,"method":"engine_exchangeCapabilities","params":[[]]}"#.into(),
    ] {
        send(post_json(&proxy.url(), call), false).await;
    }
    let metrics = proxy.metrics_after(2).await;
    for name in &names {
        assert!(
            metrics.contains(&format!("{name}{{")) || metrics.contains(&format!("{name} ")),
            "the dashboard queries {name}, which the proxy does not expose:\n{metrics}"
        );
    }
    assert!(names.contains(&"sszgate_call_duration_seconds_bucket".to_string()));
    proxy.finish().await;
}
