//! `--auth verify`: every call's JWT is checked at the gateway; missing, expired, future,
//! wrong-key and wrong-algorithm tokens are all answered 401 in the caller's shape and none of
//! them reaches the EL; a good call is relayed with the gateway's own token.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use sszgate_gateway::JwtSecret;

use crate::{
    Proxy,
    fake_el::{Answer, FakeEl},
    send,
};

const SECRET: &str = "4242424242424242424242424242424242424242424242424242424242424242";
const CALL: &str =
    r#"{"jsonrpc":"2.0","id":3,"method":"engine_exchangeCapabilities","params":[[]]}"#;

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A token with any header and claims, signed with HS256 under the hex key `key` (or with
/// an empty signature).
fn forged(header: &str, claims: &str, key: Option<&str>) -> String {
    use hmac::{Hmac, Mac};
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header),
        URL_SAFE_NO_PAD.encode(claims)
    );
    let Some(key) = key else {
        return format!("{input}.");
    };
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&const_hex::decode(key).unwrap()).unwrap();
    mac.update(input.as_bytes());
    format!(
        "{input}.{}",
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    )
}

#[tokio::test]
async fn bad_tokens_are_refused_and_never_reach_the_el() {
    let el = FakeEl::start(|_| {
        Answer::ok(
            "application/json",
            r#"{"jsonrpc":"2.0","id":3,"result":[]}"#,
        )
    })
    .await;
    let proxy = Proxy::start_auth(&el.url(), SECRET).await;
    let secret = JwtSecret::from_hex(SECRET).unwrap();
    let other = JwtSecret::from_hex(&"11".repeat(32)).unwrap();
    let hs256 = r#"{"alg":"HS256","typ":"JWT"}"#;
    let bad: Vec<(&str, Option<String>)> = vec![
        ("missing", None),
        ("expired", Some(secret.token_at(now() - 120))),
        ("future", Some(secret.token_at(now() + 120))),
        ("wrong key", Some(other.token())),
        (
            "alg none",
            Some(forged(
                r#"{"alg":"none","typ":"JWT"}"#,
                &format!(r#"{{"iat":{}}}"#, now()),
                None,
            )),
        ),
        (
            "alg RS256",
            Some(forged(
                r#"{"alg":"RS256","typ":"JWT"}"#,
                &format!(r#"{{"iat":{}}}"#, now()),
                Some(SECRET),
            )),
        ),
        (
            "no iat",
            Some(forged(hs256, r#"{"id":"cl"}"#, Some(SECRET))),
        ),
        ("garbage", Some("not-a-jwt".into())),
    ];
    for (what, token) in &bad {
        let mut request = Request::post(proxy.url()).header("content-type", "application/json");
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let (code, _, body) =
            send(request.body(Full::new(Bytes::from(CALL))).unwrap(), false).await;
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(code, 401, "{what}");
        assert_eq!(
            answer["id"],
            serde_json::Value::Null,
            "{what}: the body was not read"
        );
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("JWT refused"),
            "{what}: {answer}"
        );
    }
    // REST and WebSocket upgrades are refused the same way.
    let rest = Request::post(format!("{}/engine/v1/forkchoice", proxy.url()))
        .header("eth-execution-version", "osaka")
        .body(Full::new(Bytes::from_static(&[0; 8])))
        .unwrap();
    let (code, headers, _) = send(rest, false).await;
    assert_eq!(
        (code.as_u16(), headers["content-type"].to_str().unwrap()),
        (401, "application/problem+json")
    );
    let upgrade = Request::get(proxy.url())
        .header("connection", "upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .body(Full::new(Bytes::new()))
        .unwrap();
    assert_eq!(send(upgrade, false).await.0, 401);
    assert!(
        el.seen.lock().unwrap().is_empty(),
        "a refused call reached the EL"
    );

    // A good token (with the optional id claim) is relayed, signed with the gateway's own.
    let good = forged(
        hs256,
        &format!(r#"{{"iat":{},"id":"cl-1"}}"#, now()),
        Some(SECRET),
    );
    let request = Request::post(proxy.url())
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {good}"))
        .body(Full::new(Bytes::from(CALL)))
        .unwrap();
    assert_eq!(send(request, false).await.0, 200);
    let seen = el.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let upstream = seen[0].headers["authorization"].to_str().unwrap();
    let upstream = upstream.strip_prefix("Bearer ").unwrap();
    assert_ne!(upstream, good, "re-signed, not relayed");
    secret
        .verify(upstream)
        .expect("the gateway's own token is valid");

    let (db, _dir) = proxy.finish().await;
    let rows = crate::status_and_side(&db);
    assert_eq!(rows.len(), bad.len() + 3);
    assert!(
        rows[..bad.len() + 2]
            .iter()
            .all(|r| r == &(401, Some("cl".into()))),
        "{rows:?}"
    );
    assert_eq!(rows.last().unwrap().0, 200);
}
