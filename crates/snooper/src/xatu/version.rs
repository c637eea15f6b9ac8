//! Asking the EL for its name and version (`engine_getClientVersionV1`) for the xatu
//! metadata, as rpc-snooper does at start: signed with `--jwt-secret` when given, retried
//! 2 s, 4 s, … 30 s apart until it answers, then asked again every 60 s.
//!
//! Not here: reading the answer (`event`), what the publisher does with it (`Xatu`).

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use sszgate_client::jwt::JwtSecret;

use super::{Xatu, event};
use crate::pretty::LazyJson;

/// The question, identifying the asker as rpc-snooper's does itself.
const QUESTION: &str = r#"{"jsonrpc":"2.0","method":"engine_getClientVersionV1","params":[{"code":"SG","name":"sszgate","version":"v0.0.0","commit":"00000000"}],"id":1}"#;
/// An answer larger than this is not a client version.
const ANSWER_LIMIT: usize = 64 * 1024;

/// Reads `--jwt-secret` as rpc-snooper does: a file when it starts with `/`, `./` or `../`,
/// else hex.
pub fn jwt_secret(value: &str) -> Result<JwtSecret, String> {
    let value = value.trim();
    let is_path = ["/", "./", "../"].iter().any(|p| value.starts_with(p));
    let hex = if is_path {
        // 64 hex digits, perhaps a 0x and a newline: more than 1 KiB is not a secret.
        let mut text = String::new();
        let file = std::fs::File::open(value).map_err(|e| format!("--jwt-secret {value}: {e}"))?;
        std::io::Read::read_to_string(&mut std::io::Read::take(file, 1024), &mut text)
            .map_err(|e| format!("--jwt-secret {value}: {e}"))?;
        text
    } else {
        value.to_string()
    };
    JwtSecret::from_hex(&hex).map_err(|e| format!("--jwt-secret: {e}"))
}

/// Keeps `xatu`'s EL version current by asking `target`. Runs until the runtime ends.
pub async fn keep_asking(xatu: Arc<Xatu>, target: String, jwt: Option<JwtSecret>) {
    let mut retry = Duration::from_secs(2);
    loop {
        match ask(&target, jwt.as_ref()).await {
            Ok(execution) => {
                tracing::info!(implementation = %execution.implementation, version = %execution.version, "fetched execution metadata");
                xatu.set_execution(execution);
                retry = Duration::from_secs(2);
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            Err(why) => {
                tracing::warn!(error = %why, next_retry = ?retry, "failed to fetch execution metadata, retrying...");
                tokio::time::sleep(retry).await;
                retry = (retry * 2).min(Duration::from_secs(30));
            }
        }
    }
}

async fn ask(target: &str, jwt: Option<&JwtSecret>) -> Result<super::wire::Execution, String> {
    let client = Client::builder(TokioExecutor::new()).build_http();
    let mut request = Request::post(target)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from_static(QUESTION.as_bytes())))
        .map_err(|e| e.to_string())?;
    if let Some(jwt) = jwt {
        let bearer = format!("Bearer {}", jwt.token());
        let value = http::HeaderValue::try_from(bearer).map_err(|e| e.to_string())?;
        request
            .headers_mut()
            .insert(http::header::AUTHORIZATION, value);
    }
    let call = client.request(request);
    let response = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .map_err(|_| "no answer within 5 s".to_string())?
        .map_err(|e| e.to_string())?;
    if response.status() != http::StatusCode::OK {
        return Err(format!(
            "unexpected status code: {}",
            response.status().as_u16()
        ));
    }
    let body = Limited::new(response.into_body(), ANSWER_LIMIT)
        .collect()
        .await;
    let body = body.map_err(|e| e.to_string())?.to_bytes();
    match event::read(QUESTION.as_bytes(), &LazyJson::new(&body)) {
        Some(event::Seen::ClientVersion(execution)) => Ok(execution),
        _ => Err("no client version in the answer".into()),
    }
}
