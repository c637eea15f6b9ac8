//! The EL's name on the records with a real geth that comes up after the proxy: unnamed
//! while nothing answers, named from geth's own `engine_getClientVersionV1` once it answers,
//! forgotten on the status endpoint while it is down, and learned again when it is back.
//!
//! Needs geth, as `geth` does (a loud skip locally, a failure under `CI=true`).

use std::{sync::Arc, time::Duration};

use serde_json::json;
use sszgate_gateway::JwtSecret;

use crate::{
    Proxy,
    geth::{free_port, rpc, start_geth_on},
};

/// Waits until the status endpoint's EL name is `Some` (`want_named`) or `None`; two minutes
/// without it is a hang.
async fn until_named(proxy: &Proxy, want_named: bool) -> Option<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let named = proxy.config.upstream.health().el_client;
        if named.is_some() == want_named {
            return named;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the EL's name stayed {named:?} for two minutes"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the recorder has written `records` records.
async fn until_recorded(proxy: &Proxy, records: u64) {
    proxy.metrics_after(records).await;
}

#[tokio::test]
async fn the_el_is_named_on_its_first_answer_and_again_after_it_was_unreachable() {
    let secret_hex = "42".repeat(32);
    let secret = JwtSecret::from_hex(&secret_hex).unwrap();
    let auth_port = free_port();
    let proxy = Proxy::start_full(
        &format!("http://127.0.0.1:{auth_port}"),
        Duration::from_secs(5),
        64 << 20,
        sszgate_gateway::UpstreamTransport::Relay,
        Some(secret.clone()),
    )
    .await;
    let keeper = sszgate_gateway::keep_el_named(
        Arc::clone(&proxy.config),
        Arc::clone(&proxy.recorder),
        secret.clone(),
    );
    // A fresh token a call: geth refuses one issued over a minute ago, and waiting for the
    // one-geth-at-a-time turn can take longer.
    let call = |method: &'static str| {
        let (url, token) = (proxy.url(), secret.token());
        async move { rpc(&url, Some(&token), method, json!([])).await }
    };

    // Nothing listens yet: the call fails at the EL's side, and its record carries no name.
    let (code, _) = call("engine_exchangeCapabilities").await;
    assert_eq!(code, 502);
    until_recorded(&proxy, 1).await;

    // geth comes up on the port the proxy was given; its first answer gets it named.
    let Some(node) = start_geth_on(auth_port).await else {
        return;
    };
    assert_eq!(node.secret_hex, secret_hex);
    let (code, _) = call("engine_exchangeCapabilities").await;
    assert_eq!(code, 200);
    let first = until_named(&proxy, true).await.unwrap();
    assert!(first.starts_with("GE/"), "{first}");
    let (code, _) = call("engine_exchangeCapabilities").await;
    assert_eq!(code, 200);

    // geth goes away: the call fails, the name is forgotten on the status endpoint; back
    // again, its first answer names it once more.
    drop(node);
    let (code, _) = call("engine_exchangeCapabilities").await;
    assert_eq!(code, 502);
    assert_eq!(until_named(&proxy, false).await, None);
    let Some(_node) = start_geth_on(auth_port).await else {
        return;
    };
    let (code, _) = call("engine_exchangeCapabilities").await;
    assert_eq!(code, 200);
    assert_eq!(until_named(&proxy, true).await.unwrap(), first);

    keeper.abort();
    let (db, _dir) = proxy.finish().await;
    let rows: Vec<(i64, Option<String>)> = db
        .prepare("SELECT status, el_client FROM calls ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let named = Some(first);
    // The first call's record was written before any EL answered; the one after the name was
    // learned carries it; a call while geth was down keeps the last name known.
    assert_eq!(rows.len(), 5, "{rows:?}");
    assert_eq!(rows[0], (502, None));
    assert_eq!(rows[2], (200, named.clone()));
    assert_eq!(rows[3], (502, named.clone()));
    assert_eq!(rows[4], (200, named));
}
