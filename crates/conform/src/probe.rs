//! Sending what a check needs and keeping all of the answer: status, headers and body (read
//! bounded and without its content coding by `sszgate_client::answer`). A [`Call`] is a REST
//! request as the spec wants it (built by `sszgate_client::request`), which a check then
//! breaks in one place: a header dropped, a body cut, a token signed with the wrong key.
//!
//! Not here: judging answers (`el`), the typed client for the CL side (`sszgate-client`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri, header};
use http_body_util::Full;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::{TokioExecutor, TokioIo},
};
use serde_json::Value;
use sszgate_client::{
    DEFAULT_MAX_ANSWER_BYTES, JwtSecret, answer,
    request::{self, CallHeaders},
};
use sszgate_engine::{Fork, Message, MethodSpec, method, translate};

/// The token a call carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    /// A fresh token signed with the shared secret.
    Good,
    /// No `Authorization` header.
    Missing,
    /// A token whose `iat` is two minutes old.
    Expired,
    /// A fresh token signed with another key.
    WrongKey,
}

/// One HTTP request of a check.
#[derive(Clone, Debug)]
pub struct Call {
    /// The HTTP method.
    pub method: Method,
    /// Path and query.
    pub target: String,
    /// The headers, `Authorization` aside.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
    /// The token.
    pub auth: Auth,
}

impl Call {
    /// A call with no body and no headers.
    pub fn new(method: Method, target: impl Into<String>) -> Call {
        Call {
            method,
            target: target.into(),
            headers: HeaderMap::new(),
            body: Bytes::new(),
            auth: Auth::Good,
        }
    }

    /// This call with header `name` set to `value`.
    pub fn with(mut self, name: impl AsRef<str>, value: &str) -> Call {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_ref().as_bytes()),
            HeaderValue::from_str(value),
        ) {
            self.headers.insert(name, value);
        }
        self
    }

    /// This call without header `name`.
    pub fn without(mut self, name: impl AsRef<str>) -> Call {
        self.headers.remove(name.as_ref());
        self
    }

    /// This call with `body`.
    pub fn body(mut self, body: impl Into<Bytes>) -> Call {
        self.body = body.into();
        self
    }

    /// This call with the token `auth`.
    pub fn auth(mut self, auth: Auth) -> Call {
        self.auth = auth;
        self
    }

    /// `METHOD /target`.
    pub fn line(&self) -> String {
        format!("{} {}", self.method, self.target)
    }
}

/// An answer: status, headers, body (decoded from its content coding).
#[derive(Clone, Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The headers.
    pub headers: HeaderMap,
    /// The body, without its content coding.
    pub body: Bytes,
}

impl Answer {
    /// The value of header `name`, empty when absent or not text.
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// Status, content type and the start of the body, for evidence.
    pub fn describe(&self) -> String {
        let body = if self.body.is_empty() {
            "empty body".to_string()
        } else if self.header("content-type").contains("json") {
            let text = String::from_utf8_lossy(&self.body[..self.body.len().min(160)]);
            format!("body {text}")
        } else {
            format!("{} bytes", self.body.len())
        };
        let content_type = match self.header("content-type") {
            "" => "no content-type".to_string(),
            t => format!("content-type {t}"),
        };
        format!("HTTP {}, {content_type}, {body}", self.status)
    }
}

/// Sends calls to one server.
pub struct Probe {
    base: String,
    authority: String,
    secret: JwtSecret,
    http1: Client<HttpConnector, Full<Bytes>>,
    h2: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
}

impl Probe {
    /// A probe of the server at `base` (`http://host:port`), signing with `secret`.
    pub fn new(base: &str, secret: JwtSecret) -> Result<Probe, String> {
        let base = base.trim_end_matches('/').to_string();
        let uri: Uri = base.parse().map_err(|e| format!("{base}: {e}"))?;
        let authority = uri
            .authority()
            .ok_or_else(|| format!("{base}: no host:port"))?
            .to_string();
        let mut h2 = Client::builder(TokioExecutor::new());
        h2.http2_only(true);
        Ok(Probe {
            base,
            authority,
            secret,
            http1: Client::builder(TokioExecutor::new()).build_http(),
            h2: h2.build_http(),
            timeout: Duration::from_secs(30),
        })
    }

    /// The REST call of `m` under `fork` carrying `message`, with every header the spec asks.
    pub fn rest(
        &self,
        m: &'static MethodSpec,
        fork: Fork,
        message: &Message,
    ) -> Result<Call, String> {
        let rest = translate::rest_request(m, fork, message).map_err(|e| e.to_string())?;
        let target = rest.target.clone();
        let body = Bytes::from(rest.body.clone());
        let headers = CallHeaders {
            token: String::new(),
            client_version: Some(sszgate_client::identity::header_value("conform")),
            accept_encoding: None,
        };
        let built = request::rest(self.uri(&target), rest, m.resource, &headers);
        let (parts, _) = built.into_parts();
        let mut headers = parts.headers;
        headers.remove(header::AUTHORIZATION);
        Ok(Call {
            method: parts.method,
            target,
            headers,
            body,
            auth: Auth::Good,
        })
    }

    /// Sends `call` over a pooled HTTP/1.1 connection.
    pub async fn send(&self, call: &Call) -> Result<Answer, String> {
        self.over(&self.http1, call).await
    }

    /// Sends `call` over h2c (HTTP/2 with prior knowledge).
    pub async fn send_h2(&self, call: &Call) -> Result<Answer, String> {
        self.over(&self.h2, call).await
    }

    /// Sends `calls` one after the other on one new HTTP/1.1 connection.
    pub async fn send_on_one_connection(&self, calls: &[Call]) -> Result<Vec<Answer>, String> {
        let stream = tokio::net::TcpStream::connect(&self.authority)
            .await
            .map_err(|e| format!("connect {}: {e}", self.authority))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("HTTP/1.1 handshake: {e}"))?;
        tokio::spawn(connection);
        let mut answers = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            let nth = |e: String| format!("request {} on the connection: {e}", i + 1);
            sender.ready().await.map_err(|e| nth(e.to_string()))?;
            let response =
                tokio::time::timeout(self.timeout, sender.send_request(self.request(call)))
                    .await
                    .map_err(|_| nth("no answer in time".into()))?
                    .map_err(|e| nth(e.to_string()))?;
            answers.push(read(response).await.map_err(nth)?);
        }
        Ok(answers)
    }

    /// A JSON-RPC call of `method` with `params` on `/` of `url` (the probe's base when
    /// `None`), signed; the `result`, or the error as text.
    pub async fn json_rpc(
        &self,
        url: Option<&str>,
        method: &str,
        params: &Value,
    ) -> Result<Value, String> {
        let body = request::envelope(1, method, params.to_string().as_bytes());
        let target = url.map_or_else(|| format!("{}/", self.base), |u| u.to_string());
        let mut call = Call::new(Method::POST, "/").body(body);
        call = call.with(header::CONTENT_TYPE, method::JSON_CONTENT_TYPE);
        let mut request = self.request(&call);
        *request.uri_mut() = target.parse().map_err(|e| format!("{target}: {e}"))?;
        let answer = self.exchange(&self.http1, request).await?;
        let envelope: Value = serde_json::from_slice(&answer.body)
            .map_err(|_| format!("{method}: not JSON-RPC: {}", answer.describe()))?;
        match (&envelope["result"], &envelope["error"]) {
            (_, Value::Object(error)) => {
                Err(format!("{method}: error {}", Value::Object(error.clone())))
            }
            (result, _) => Ok(result.clone()),
        }
    }

    /// The HTTP request of `call`, its token signed now.
    pub fn request(&self, call: &Call) -> Request<Full<Bytes>> {
        let mut request = Request::builder()
            .method(call.method.clone())
            .uri(self.uri(&call.target))
            .body(Full::new(call.body.clone()))
            .expect("a request of valid parts");
        *request.headers_mut() = call.headers.clone();
        if let Some(token) = self.token(call.auth)
            && let Ok(value) = HeaderValue::from_str(&format!("Bearer {token}"))
        {
            request.headers_mut().insert(header::AUTHORIZATION, value);
        }
        request
    }

    fn token(&self, auth: Auth) -> Option<String> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        match auth {
            Auth::Good => Some(self.secret.token_at(now)),
            Auth::Missing => None,
            Auth::Expired => Some(self.secret.token_at(now.saturating_sub(120))),
            Auth::WrongKey => JwtSecret::from_hex(&"5a".repeat(32))
                .ok()
                .map(|other| other.token_at(now)),
        }
    }

    fn uri(&self, target: &str) -> Uri {
        format!("{}{target}", self.base)
            .parse()
            .unwrap_or_else(|_| Uri::from_static("http://invalid./"))
    }

    async fn over(
        &self,
        client: &Client<HttpConnector, Full<Bytes>>,
        call: &Call,
    ) -> Result<Answer, String> {
        self.exchange(client, self.request(call))
            .await
            .map_err(|e| format!("{}: {e}", call.line()))
    }

    async fn exchange(
        &self,
        client: &Client<HttpConnector, Full<Bytes>>,
        request: Request<Full<Bytes>>,
    ) -> Result<Answer, String> {
        let sent = tokio::time::timeout(self.timeout, client.request(request))
            .await
            .map_err(|_| format!("no answer within {:?}", self.timeout))?
            .map_err(|e| answer::error_chain(&e))?;
        read(sent).await
    }
}

async fn read(response: http::Response<hyper::body::Incoming>) -> Result<Answer, String> {
    let headers = response.headers().clone();
    let (status, body) = answer::read(response, DEFAULT_MAX_ANSWER_BYTES)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Answer {
        status: status.as_u16(),
        headers,
        body,
    })
}
