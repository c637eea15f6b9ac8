//! `conform el` against real peers: sszgate's bridge in front of a real geth passes every
//! check (blob transactions of real mainnet blobs sent from a funded dev key); for every
//! check, a front server breaking exactly that rule makes exactly that check fail, with
//! evidence, and no other; and a server breaking one thing that many checks rest on is
//! reported as one root cause over all of them.

mod common;

use std::{sync::OnceLock, time::Duration};

use common::{Ans, Break, Net, Req, front, have_geth};
use http::{HeaderValue, header};
use sszgate_client::JwtSecret;
use sszgate_conform::{
    ElConfig, Verdict, catalogue::EL_CHECKS, el::BlobSource, report::Report, run_el,
};
use sszgate_drive::Senders;

/// The real mainnet blobs every run sends from the devnet's funded dev key.
fn blob_source() -> BlobSource {
    static SOURCE: OnceLock<BlobSource> = OnceLock::new();
    SOURCE
        .get_or_init(|| {
            BlobSource::from_data(Senders::dev(), &sszgate_fixtures::data_dir()).unwrap()
        })
        .clone()
}

async fn check(net: &Net, url: String) -> Report {
    let config = ElConfig {
        engine: url,
        secret: net.secret.clone(),
        fork: None,
        eth_rpc: Some(net.devnet.state.eth_url.clone()),
        build_time: Duration::from_millis(200),
        blob_source: Some(blob_source()),
    };
    run_el(&config).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_in_front_of_geth_passes_every_check() {
    if !have_geth() {
        return;
    }
    let _turn = common::ONE_GETH.lock().await;
    let net = Net::start().await;
    let report = check(&net, net.bridge.clone()).await;
    // The table docs/conformance-geth.md shows (`--nocapture`).
    eprintln!("{}", report.to_table());
    assert!(report.passed(), "{}", report.to_table());
    let pool = report.outcome("blobs.pool").unwrap();
    assert!(
        pool.evidence.contains("as sent"),
        "the run's blobs were asked for: {}",
        pool.evidence
    );
    // The bridge claims every fork, so there is no unclaimed fork to send.
    assert_eq!(
        report.with(Verdict::Skip),
        ["fork.unsupported"],
        "{}",
        report.to_table()
    );
    // The same through a faithful relay: the front server breaks nothing by itself.
    let relay = front(net.bridge.clone(), net.secret.clone(), None).await;
    let report = check(&net, relay).await;
    assert!(report.passed(), "{}", report.to_table());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_check_fails_alone_when_its_rule_is_broken() {
    if !have_geth() {
        return;
    }
    let _turn = common::ONE_GETH.lock().await;
    let net = Net::start().await;
    let breaks = breaks();
    for check_row in EL_CHECKS.iter() {
        assert!(
            breaks.iter().any(|b| b.check == check_row.id),
            "no break for {}",
            check_row.id
        );
    }
    let mut wrong = Vec::new();
    for rule in breaks {
        let url = front(net.bridge.clone(), net.secret.clone(), Some(rule)).await;
        let report = check(&net, url).await;
        let failed = report.with(Verdict::Fail);
        let evidence = &report.outcome(rule.check).unwrap().evidence;
        if failed != [rule.check] || evidence.is_empty() {
            let fails: Vec<String> = report
                .outcomes
                .iter()
                .filter(|o| o.verdict == Verdict::Fail)
                .map(|o| format!("  {}: {}", o.id, o.evidence))
                .collect();
            wrong.push(format!(
                "breaking {} failed {failed:?}\n{}",
                rule.check,
                fails.join("\n")
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    one_cause_is_reported_once(&net).await;
}

/// Errors served as `text/plain` fail every check that reads an error's type, each with its
/// own verdict, all under one root cause; a server on the old `/engine/v2` paths alone is
/// reported as that, not as a row of 404s.
async fn one_cause_is_reported_once(net: &Net) {
    let plain = on_answer("header.problem", |_, ans| {
        if ans.status >= 400 {
            ans.headers
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
            ans.body = b"bad request".to_vec();
        }
    });
    let url = front(net.bridge.clone(), net.secret.clone(), Some(plain)).await;
    let report = check(net, url).await;
    let failed = report.with(Verdict::Fail);
    let cause = "errors are served as text/plain, not application/problem+json";
    assert_eq!(report.causes.len(), 1, "{}", report.to_table());
    assert_eq!(report.causes[0].cause, cause, "{}", report.to_table());
    assert_eq!(report.causes[0].checks, failed, "{}", report.to_table());
    for id in [
        "header.problem",
        "fork.missing",
        "ssz.truncated",
        "route.unknown",
    ] {
        assert!(failed.contains(&id), "{id}: {}", report.to_table());
    }
    assert!(failed.len() >= 9, "{}", report.to_table());
    assert_eq!(report.to_table().matches(cause).count(), 1);

    let old_only = on_request("route.old-paths", |req, _| {
        if let Some(rest) = req.path.strip_prefix("/engine/v2/") {
            req.path = format!("/engine/v1/{rest}");
            return None;
        }
        req.path
            .starts_with("/engine/v1/")
            .then(|| Ans::problem(404, "method-not-found"))
    });
    let url = front(net.bridge.clone(), net.secret.clone(), Some(old_only)).await;
    let report = check(net, url).await;
    let group = report
        .causes
        .iter()
        .find(|g| g.cause.contains("old /engine/v2"))
        .unwrap_or_else(|| panic!("{}", report.to_table()));
    for id in ["route.old-paths", "cap.document", "forkchoice.build"] {
        assert!(group.checks.contains(&id), "{id}: {}", report.to_table());
    }
}

fn is(req: &Req, method: &str, path: &str) -> bool {
    req.method == method && req.path.starts_with(path)
}

fn none(_: &mut Req, _: &JwtSecret) -> Option<Ans> {
    None
}

fn keep(_: &Req, _: &mut Ans) {}

const fn on_answer(check: &'static str, answer: fn(&Req, &mut Ans)) -> Break {
    Break {
        check,
        request: none,
        answer,
        http1_only: false,
    }
}

const fn on_request(
    check: &'static str,
    request: fn(&mut Req, &JwtSecret) -> Option<Ans>,
) -> Break {
    Break {
        check,
        request,
        answer: keep,
        http1_only: false,
    }
}

const FCU: &str = "/engine/v1/forkchoice";
const CAPS: &str = "/engine/v1/capabilities";

/// Replaces `from` by `to` in a JSON-RPC answer to a method starting with `method`.
fn rpc_answer(req: &Req, ans: &mut Ans, method: &str, from: &str, to: &str) {
    let named =
        std::str::from_utf8(&req.body).is_ok_and(|b| b.contains(&format!("\"method\":\"{method}")));
    if req.path == "/" && named {
        ans.body = String::from_utf8_lossy(&ans.body)
            .replacen(from, to, 1)
            .into_bytes();
    }
}

/// Adds a transaction to the first body of a JSON-RPC bodies answer to `method`, whether the
/// block has transactions (the run's blob transactions) or none.
fn add_transaction(req: &Req, ans: &mut Ans, method: &str) {
    let body = String::from_utf8_lossy(&ans.body);
    if body.contains("\"transactions\":[]") {
        rpc_answer(
            req,
            ans,
            method,
            "\"transactions\":[]",
            "\"transactions\":[\"0x02\"]",
        );
    } else {
        rpc_answer(
            req,
            ans,
            method,
            "\"transactions\":[\"",
            "\"transactions\":[\"0x02\",\"",
        );
    }
}

fn set_fork(req: &mut Req, fork: &'static str) {
    req.headers
        .insert("eth-execution-version", HeaderValue::from_static(fork));
}

fn fresh_token(req: &mut Req, secret: &JwtSecret) {
    let value = format!("Bearer {}", secret.token());
    req.headers.insert(
        header::AUTHORIZATION,
        HeaderValue::from_str(&value).unwrap(),
    );
}

fn token_error(req: &Req, secret: &JwtSecret) -> Option<String> {
    let token = req
        .headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")?;
    secret.verify(token).err()
}

/// Reverses the versioned hashes of a blobs request of several, REST (after the container's
/// fixed part) and JSON-RPC alike: a server that hands back each other's blobs, the same way
/// on both surfaces.
fn swap_blob_hashes(req: &mut Req) {
    if is(req, "POST", "/engine/v1/blobs/") && req.body.len() >= 4 {
        let fixed = u32::from_le_bytes(req.body[..4].try_into().unwrap()) as usize;
        let Some(hashes) = req.body.get(fixed..).map(<[u8]>::to_vec) else {
            return;
        };
        let reversed: Vec<u8> = hashes.chunks(32).rev().flatten().copied().collect();
        req.body.truncate(fixed);
        req.body.extend(reversed);
    }
    let body = String::from_utf8_lossy(&req.body);
    if req.path == "/" && body.contains("engine_getBlobs") {
        let mut call: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
        if let Some(hashes) = call["params"][0].as_array_mut() {
            hashes.reverse();
        }
        req.body = serde_json::to_vec(&call).unwrap();
    }
}

fn breaks() -> Vec<Break> {
    let mut all = discovery_breaks();
    all.extend(resource_breaks());
    all.extend(header_breaks());
    all.extend(error_breaks());
    all.extend(equivalence_breaks());
    all.extend(transport_breaks());
    all
}

fn discovery_breaks() -> Vec<Break> {
    vec![
        on_answer("cap.document", |req, ans| {
            if is(req, "GET", CAPS) {
                ans.body = String::from_utf8_lossy(&ans.body)
                    .replace("\"capabilities\"", "\"caps\"")
                    .into_bytes();
            }
        }),
        on_answer("cap.limits", |req, ans| {
            if is(req, "GET", CAPS) {
                ans.body = String::from_utf8_lossy(&ans.body)
                    .replace("\"bodies.max_count\":32", "\"bodies.max_count\":64")
                    .into_bytes();
            }
        }),
        on_answer("identity.document", |req, ans| {
            if is(req, "GET", "/engine/v1/identity") {
                ans.body = br#"{"not":"a list"}"#.to_vec();
            }
        }),
        on_request("unscoped.ignore-fork", |req, _| {
            (is(req, "GET", CAPS) && req.headers.contains_key("eth-execution-version"))
                .then(|| Ans::problem(400, "unsupported-fork"))
        }),
        on_answer("fork.unsupported", |req, ans| {
            if is(req, "GET", CAPS) {
                ans.body = String::from_utf8_lossy(&ans.body)
                    .replace("\"paris\",", "")
                    .into_bytes();
            }
        }),
    ]
}

fn resource_breaks() -> Vec<Break> {
    vec![
        on_request("forkchoice.each-fork", |req, _| {
            let paris = req
                .headers
                .get("eth-execution-version")
                .is_some_and(|v| v == "paris");
            (is(req, "POST", FCU) && paris).then(|| Ans::problem(400, "unsupported-fork"))
        }),
        on_answer("forkchoice.build", |req, ans| {
            // With attributes the body is longer than the state and its offsets (104 bytes at most).
            if is(req, "POST", FCU) && req.body.len() > 104 && ans.status == 200 {
                ans.body[8] = 2; // SYNCING
            }
        }),
        on_answer("payloads.get", |req, ans| {
            // A byte past the container (the payload carries the run's blobs, so its last
            // byte is blob data: changing it would change the answer, not break its form).
            if is(req, "GET", "/engine/v1/payloads/") && ans.status == 200 {
                ans.body.push(0);
            }
        }),
        on_answer("payloads.submit", |req, ans| {
            if is(req, "POST", "/engine/v1/payloads") && ans.status == 200 {
                ans.body.push(0);
            }
        }),
        on_answer("bodies.hash", |req, ans| {
            if is(req, "POST", "/engine/v1/bodies/hash") && ans.status == 200 {
                ans.body.push(0);
            }
        }),
        on_answer("bodies.range", |req, ans| {
            if is(req, "GET", "/engine/v1/bodies?") && ans.status == 200 {
                ans.body.push(0);
            }
        }),
        on_answer("blobs.partial", |req, ans| {
            // A miss alone asks one hash: a 36-byte body (52 with /v4's cell selection).
            if is(req, "POST", "/engine/v1/blobs/")
                && !req.path.ends_with("v2")
                && req.body.len() <= 52
                && ans.status == 200
            {
                ans.body.push(0);
            }
        }),
        on_request("blobs.pool", |req, _| {
            swap_blob_hashes(req);
            None
        }),
        on_answer("blobs.all-or-nothing", |req, ans| {
            if is(req, "POST", "/engine/v1/blobs/v2") && ans.status == 204 {
                ans.status = 200;
                ans.body = vec![4, 0, 0, 0];
                ans.headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/octet-stream"),
                );
            }
        }),
    ]
}

fn header_breaks() -> Vec<Break> {
    vec![
        on_answer("header.content-type", |req, ans| {
            if is(req, "POST", FCU) && ans.status == 200 {
                ans.headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/ssz"),
                );
            }
        }),
        on_answer("header.json-diagnostic", |req, ans| {
            let octet = req
                .headers
                .get(header::ACCEPT)
                .is_some_and(|v| v == "application/octet-stream");
            if is(req, "GET", CAPS) && octet {
                ans.headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/octet-stream"),
                );
            }
        }),
        on_request("header.accept-loose", |req, _| {
            let loose = req
                .headers
                .get(header::ACCEPT)
                .is_none_or(|v| v.as_bytes() == b"*/*");
            let known = req.path.starts_with("/engine/v1/") && !req.path.contains("no-such");
            (req.method == "GET" && known && loose).then(|| Ans::problem(406, "invalid-request"))
        }),
        on_answer("header.no-store", |req, ans| {
            if is(req, "GET", "/engine/v1/payloads/") {
                ans.headers.remove(header::CACHE_CONTROL);
            }
        }),
        on_answer("header.problem", |_, ans| {
            if ans.status >= 400 {
                ans.headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
            }
        }),
    ]
}

fn error_breaks() -> Vec<Break> {
    vec![
        on_request("fork.missing", |req, _| {
            let scoped = ["forkchoice", "payloads", "bodies"]
                .iter()
                .any(|r| req.path.starts_with(&format!("/engine/v1/{r}")));
            if scoped && !req.headers.contains_key("eth-execution-version") {
                set_fork(req, "osaka");
            }
            None
        }),
        on_request("fork.unknown", |req, _| {
            if req
                .headers
                .get("eth-execution-version")
                .is_some_and(|v| v == "bpo1" || v == "london")
            {
                set_fork(req, "osaka");
            }
            None
        }),
        on_request("auth.missing", |req, secret| {
            if !req.headers.contains_key(header::AUTHORIZATION) {
                fresh_token(req, secret);
            }
            None
        }),
        on_request("auth.expired", |req, secret| {
            if token_error(req, secret).is_some_and(|e| e.contains("60 s")) {
                fresh_token(req, secret);
            }
            None
        }),
        on_request("auth.wrong-key", |req, secret| {
            if token_error(req, secret).is_some_and(|e| e.contains("signature")) {
                fresh_token(req, secret);
            }
            None
        }),
        on_request("media.unsupported", |req, _| {
            if req
                .headers
                .get(header::CONTENT_TYPE)
                .is_some_and(|v| v == "application/json")
                && req.path != "/"
            {
                req.headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/octet-stream"),
                );
            }
            None
        }),
        on_request("size.over-limit", |req, _| {
            (is(req, "POST", "/engine/v1/blobs/") && req.body.len() > 4100)
                .then(|| Ans::problem(400, "ssz-decode-error"))
        }),
        on_request("ssz.truncated", |req, _| {
            (is(req, "POST", FCU) && req.body.len() == 99).then(|| Ans::problem(500, "internal"))
        }),
        on_request("ssz.bad-offset", |req, _| {
            (is(req, "POST", FCU) && req.body.get(96..100) == Some(&[0xff; 4][..]))
                .then(|| Ans::problem(422, "invalid-body"))
        }),
        on_request("ssz.trailing", |req, _| {
            if is(req, "POST", FCU) && req.body.len() == 101 {
                req.body.pop();
            }
            None
        }),
        on_answer("payloads.unknown", |req, ans| {
            if is(req, "GET", "/engine/v1/payloads/") && ans.status == 404 {
                ans.status = 400;
            }
        }),
        on_request("payloads.malformed-id", |req, _| {
            (is(req, "GET", "/engine/v1/payloads/")
                && req.path.len() < "/engine/v1/payloads/0x".len() + 16)
                .then(|| Ans::problem(404, "unknown-payload"))
        }),
        on_request("route.unknown", |req, _| {
            is(req, "GET", "/engine/v1/no-such").then(|| Ans::problem(400, "invalid-request"))
        }),
        on_request("route.wrong-method", |req, _| {
            (req.method == "PUT").then(|| Ans::problem(400, "invalid-request"))
        }),
        on_request("route.old-paths", |req, _| {
            // Serves an earlier draft's paths beside the spec's.
            if let Some(rest) = req.path.strip_prefix("/engine/v2/") {
                req.path = format!("/engine/v1/{rest}");
            }
            None
        }),
    ]
}

fn equivalence_breaks() -> Vec<Break> {
    vec![
        on_answer("eq.forkchoice", |req, ans| {
            rpc_answer(
                req,
                ans,
                "engine_forkchoiceUpdated",
                "\"VALID\"",
                "\"SYNCING\"",
            )
        }),
        on_answer("eq.submit", |req, ans| {
            rpc_answer(req, ans, "engine_newPayload", "\"VALID\"", "\"ACCEPTED\"")
        }),
        on_answer("eq.get-payload", |req, ans| {
            rpc_answer(
                req,
                ans,
                "engine_getPayload",
                "\"shouldOverrideBuilder\":false",
                "\"shouldOverrideBuilder\":true",
            )
        }),
        on_answer("eq.bodies-hash", |req, ans| {
            add_transaction(req, ans, "engine_getPayloadBodiesByHash")
        }),
        on_answer("eq.bodies-range", |req, ans| {
            add_transaction(req, ans, "engine_getPayloadBodiesByRange")
        }),
        on_answer("eq.blobs", |req, ans| {
            rpc_answer(
                req,
                ans,
                "engine_getBlobs",
                "\"result\":[null]",
                "\"result\":null",
            )
        }),
        on_request("identity.unlisted-code", |req, _| {
            let body = String::from_utf8_lossy(&req.body);
            let refused = req.path == "/"
                && body.contains("engine_getClientVersionV1")
                && body.contains("\"code\":\"SG\"");
            refused.then(|| {
                let mut headers = http::HeaderMap::new();
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                Ans {
                    status: 200,
                    headers,
                    body: br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown client code SG"}}"#.to_vec(),
                }
            })
        }),
        on_answer("eq.identity", |req, ans| {
            rpc_answer(
                req,
                ans,
                "engine_getClientVersionV1",
                "go-ethereum",
                "other-el",
            )
        }),
    ]
}

fn transport_breaks() -> Vec<Break> {
    vec![
        on_answer("transport.keep-alive", |req, ans| {
            if is(req, "GET", CAPS) {
                ans.headers
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
        }),
        Break {
            check: "transport.h2c",
            request: none,
            answer: keep,
            http1_only: true,
        },
        on_answer("transport.compression", |req, ans| {
            if req.headers.contains_key(header::ACCEPT_ENCODING) && ans.status == 200 {
                ans.headers
                    .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            }
        }),
    ]
}
