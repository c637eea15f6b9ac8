//! rpc-snooper's management API (`/_snooper/status|start|stop|block|unblock`), answered with
//! its exact status codes and JSON bodies (Go's encoder: keys sorted, a newline after), over
//! sszgate's pause: `stop` pauses forwarding (calls refused with rpc-snooper's 503), `start`
//! resumes it, `status` reports it (an `sszgate ctl pause` shows as stopped too). Basic auth
//! (`--api-auth`) for the separate API server.
//!
//! Not here: the WebSocket upgrade of `/_snooper/control` (`modules`), serving (`front`).

use std::sync::Mutex;

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode, header};
use sszgate_gateway::{ControlPoint, FrontBody, inject::PauseMode};
use subtle::ConstantTimeEq;

/// Where management calls start.
pub const API_PREFIX: &str = "/_snooper/";

/// The flow state rpc-snooper keeps beside sszgate's pause: the blocked route prefixes.
#[derive(Debug, Default)]
pub struct Flow {
    blocked: Mutex<Vec<String>>,
}

/// Why a proxied call is refused by the flow state, if it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// `/_snooper/stop` (or any reject pause) is in force.
    Disabled,
    /// The path starts with a blocked prefix.
    Blocked,
}

impl Flow {
    /// Whether a call to `path` is refused now, and why (blocked wins, as in rpc-snooper).
    pub fn refuses(&self, path: &str, control: &ControlPoint) -> Option<Refused> {
        let blocked = self.lock().iter().any(|p| path.starts_with(p.as_str()));
        match (blocked, control.paused()) {
            (true, _) => Some(Refused::Blocked),
            (false, Some(PauseMode::Reject)) => Some(Refused::Disabled),
            _ => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<String>> {
        self.blocked.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// rpc-snooper's 503 body for a refused call.
pub fn refusal(why: Refused) -> Response<FrontBody> {
    let message = match why {
        Refused::Disabled => "Proxy flow is currently disabled",
        Refused::Blocked => "Proxy flow is currently blocked",
    };
    json(
        StatusCode::SERVICE_UNAVAILABLE,
        serde_json::json!({"message": message, "status": "error"}),
    )
}

/// Answers one management call (`path` under [`API_PREFIX`], but not `control`).
pub fn answer(
    method: &Method,
    path: &str,
    query: Option<&str>,
    control: &ControlPoint,
    flow: &Flow,
) -> Response<FrontBody> {
    let route = path.strip_prefix(API_PREFIX).unwrap_or("");
    let ok = |body: serde_json::Value| json(StatusCode::OK, body);
    match (method, route) {
        (&Method::GET, "status") => {
            let enabled = control.paused().is_none();
            let message = if enabled {
                "Flow is enabled"
            } else {
                "Flow is disabled"
            };
            ok(serde_json::json!({"enabled": enabled, "message": message, "status": "success"}))
        }
        (&Method::POST, "start") => {
            control.resume();
            tracing::info!("Flow started - proxy requests enabled");
            ok(serde_json::json!({"enabled": true, "message": "Flow started", "status": "success"}))
        }
        (&Method::POST, "stop") => {
            control.pause(PauseMode::Reject);
            tracing::info!("Flow stopped - proxy requests disabled");
            ok(
                serde_json::json!({"enabled": false, "message": "Flow stopped", "status": "success"}),
            )
        }
        (&Method::GET, "block" | "unblock") => {
            let Some(prefix) = route_param(query) else {
                return bare(StatusCode::BAD_REQUEST, "application/json", "");
            };
            let mut blocked = flow.lock();
            blocked.retain(|p| *p != prefix);
            let message = if route == "block" {
                blocked.push(prefix);
                "Flow blocked"
            } else {
                "Flow unblocked"
            };
            ok(serde_json::json!({"message": message, "status": "success"}))
        }
        _ => not_found(),
    }
}

/// The `route` parameter of a query, percent-decoded; `None` when absent or empty.
fn route_param(query: Option<&str>) -> Option<String> {
    let value = query?
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(k, _)| *k == "route")?
        .1;
    let decoded = percent_decode(value);
    (!decoded.is_empty()).then_some(decoded)
}

/// `%XX` and `+` decoded as a query value is; a bad escape is kept as it is.
fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b'+', _) => {
                out.push(b' ');
                i += 1;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Go's `http.NotFound`, which rpc-snooper answers for an unknown path or a wrong method.
pub fn not_found() -> Response<FrontBody> {
    bare(
        StatusCode::NOT_FOUND,
        "text/plain; charset=utf-8",
        "404 page not found\n",
    )
}

/// True when `headers` carry `Authorization: Basic` credentials among `users` (compared in
/// constant time); always true when no credentials are configured.
pub fn authorized(headers: &HeaderMap, users: &[(String, String)]) -> bool {
    if users.is_empty() {
        return true;
    }
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
        .and_then(|raw| String::from_utf8(raw).ok());
    let Some((user, password)) = given.as_deref().and_then(|c| c.split_once(':')) else {
        return false;
    };
    users
        .iter()
        .any(|(u, p)| u == user && bool::from(p.as_bytes().ct_eq(password.as_bytes())))
}

/// rpc-snooper's 401 (its content type is Go's sniffed one: the header is set too late).
pub fn unauthorized() -> Response<FrontBody> {
    let mut response = json(
        StatusCode::UNAUTHORIZED,
        serde_json::json!({"message": "Unauthorized", "status": "error"}),
    );
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static("Basic realm=\"Snooper API\""),
    );
    response
}

/// A JSON answer as Go's encoder writes a map: keys sorted, then a newline.
fn json(status: StatusCode, body: serde_json::Value) -> Response<FrontBody> {
    // Callers write keys in sorted order, as Go sorts map keys, so the text is the same
    // whether or not serde_json preserves insertion order.
    let text = format!("{body}\n");
    bare(status, "application/json", &text)
}

fn bare(status: StatusCode, content_type: &'static str, body: &str) -> Response<FrontBody> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(FrontBody::new(Bytes::from(body.to_string())))
        .expect("a valid response")
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn body(response: Response<FrontBody>) -> (u16, String) {
        let status = response.status().as_u16();
        let bytes = futures_util::FutureExt::now_or_never(response.into_body().collect())
            .unwrap()
            .unwrap()
            .to_bytes();
        (status, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[test]
    fn stop_start_and_status_map_onto_the_pause_with_rpc_snoopers_bodies() {
        let (control, flow) = (ControlPoint::default(), Flow::default());
        let call = |m: Method, p: &str| body(answer(&m, p, None, &control, &flow));
        assert_eq!(
            call(Method::GET, "/_snooper/status"),
            (
                200,
                "{\"enabled\":true,\"message\":\"Flow is enabled\",\"status\":\"success\"}\n"
                    .into()
            )
        );
        assert_eq!(
            call(Method::POST, "/_snooper/stop"),
            (
                200,
                "{\"enabled\":false,\"message\":\"Flow stopped\",\"status\":\"success\"}\n".into()
            )
        );
        assert_eq!(control.paused(), Some(PauseMode::Reject));
        assert_eq!(flow.refuses("/", &control), Some(Refused::Disabled));
        assert_eq!(
            body(refusal(Refused::Disabled)),
            (
                503,
                "{\"message\":\"Proxy flow is currently disabled\",\"status\":\"error\"}\n".into()
            )
        );
        assert!(
            call(Method::GET, "/_snooper/status")
                .1
                .contains("\"Flow is disabled\"")
        );
        assert_eq!(call(Method::POST, "/_snooper/start").0, 200);
        assert_eq!(control.paused(), None);
        assert_eq!(
            call(Method::GET, "/_snooper/start"),
            (404, "404 page not found\n".into())
        );
        assert_eq!(call(Method::GET, "/_snooper/nope").0, 404);
    }

    #[test]
    fn block_and_unblock_take_a_route_prefix() {
        let (control, flow) = (ControlPoint::default(), Flow::default());
        let call = |q: Option<&str>, p: &str| body(answer(&Method::GET, p, q, &control, &flow));
        assert_eq!(call(None, "/_snooper/block"), (400, String::new()));
        assert_eq!(call(Some("route="), "/_snooper/block").0, 400);
        assert_eq!(
            call(Some("route=%2Fblocked"), "/_snooper/block"),
            (
                200,
                "{\"message\":\"Flow blocked\",\"status\":\"success\"}\n".into()
            )
        );
        assert_eq!(flow.refuses("/blocked/x", &control), Some(Refused::Blocked));
        assert_eq!(flow.refuses("/other", &control), None);
        assert_eq!(call(Some("route=/blocked"), "/_snooper/unblock").0, 200);
        assert_eq!(flow.refuses("/blocked/x", &control), None);
    }

    #[test]
    fn basic_auth_takes_only_configured_credentials() {
        let users = vec![("alice".to_string(), "s3cret".to_string())];
        let with = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::AUTHORIZATION, value.parse().unwrap());
            authorized(&h, &users)
        };
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        assert!(with(&format!("Basic {}", b64("alice:s3cret"))));
        assert!(!with(&format!("Basic {}", b64("alice:wrong"))));
        assert!(!with(&format!("Basic {}", b64("bob:s3cret"))));
        assert!(!with(&format!("Basic {}", b64("alice"))));
        assert!(!with("Basic !!!"));
        assert!(!with("Bearer x"));
        assert!(!authorized(&HeaderMap::new(), &users));
        assert!(authorized(&HeaderMap::new(), &[]));
        let (status, text) = body(unauthorized());
        assert_eq!(
            (status, text.as_str()),
            (401, "{\"message\":\"Unauthorized\",\"status\":\"error\"}\n")
        );
    }
}
