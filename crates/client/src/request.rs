//! The HTTP request of one Engine API call, in either transport: the JSON-RPC envelope, or the
//! REST-SSZ route, fork header and media types; with the caller's JWT, identity and accepted
//! encodings on both.
//!
//! Not here: which REST request a call becomes (`sszgate_engine::translate`), sending it.

use bytes::Bytes;
use http::{Request, Uri, header};
use http_body_util::Full;
use sszgate_engine::{method, method::Resource, translate::RestRequest};

/// The headers every call of one caller carries.
#[derive(Clone, Debug, Default)]
pub struct CallHeaders {
    /// `Authorization: Bearer` token (a fresh one per call: its `iat` is checked).
    pub token: String,
    /// `X-Engine-Client-Version`, when the caller names itself.
    pub client_version: Option<String>,
    /// `Accept-Encoding`, when the caller takes compressed answers.
    pub accept_encoding: Option<&'static str>,
}

/// The encodings a caller that decodes answers asks for: the spec's `zstd, gzip`.
pub const ACCEPT_ENCODINGS: &str = "zstd, gzip";

/// A JSON-RPC request object with `id`, `method` and `params` (raw JSON).
pub fn envelope(id: u64, method: &str, params: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(params.len() + method.len() + 48);
    body.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    body.extend_from_slice(id.to_string().as_bytes());
    body.extend_from_slice(br#","method":""#);
    body.extend_from_slice(method.as_bytes());
    body.extend_from_slice(br#"","params":"#);
    body.extend_from_slice(params);
    body.push(b'}');
    body
}

/// A JSON-RPC `POST` of `body` to `uri`.
pub fn json_rpc(uri: Uri, body: Bytes, headers: &CallHeaders) -> Request<Full<Bytes>> {
    let request = Request::post(uri).header(header::CONTENT_TYPE, method::JSON_CONTENT_TYPE);
    with_call_headers(request, headers, body)
}

/// The HTTP form of `rest` (a call of a method on `resource`) at `uri`: SSZ or JSON accepted as
/// the resource answers, the body's `Content-Type`, and `Eth-Execution-Version` where the
/// resource is fork-scoped.
pub fn rest(
    uri: Uri,
    rest: RestRequest,
    resource: Resource,
    headers: &CallHeaders,
) -> Request<Full<Bytes>> {
    let accept = if resource.is_json() {
        method::JSON_CONTENT_TYPE
    } else {
        method::SSZ_CONTENT_TYPE
    };
    let mut request = Request::builder()
        .method(rest.method.as_str())
        .uri(uri)
        .header(header::ACCEPT, accept);
    if let Some(content_type) = rest.content_type() {
        request = request.header(header::CONTENT_TYPE, content_type);
    }
    if let Some(fork) = rest.fork {
        request = request.header(method::FORK_HEADER, fork.name());
    }
    with_call_headers(request, headers, Bytes::from(rest.body))
}

fn with_call_headers(
    mut request: http::request::Builder,
    headers: &CallHeaders,
    body: Bytes,
) -> Request<Full<Bytes>> {
    request = request.header(header::AUTHORIZATION, format!("Bearer {}", headers.token));
    if let Some(version) = &headers.client_version {
        request = request.header(method::CLIENT_VERSION_HEADER, version);
    }
    if let Some(encodings) = headers.accept_encoding {
        request = request.header(header::ACCEPT_ENCODING, encodings);
    }
    request
        .body(Full::new(body))
        .expect("a request of valid parts (a URI, known header names, ASCII values)")
}

#[cfg(test)]
mod tests {
    use sszgate_engine::{Fork, translate};

    use super::*;

    fn headers() -> CallHeaders {
        CallHeaders {
            token: "t.o.k".into(),
            client_version: Some("SG-sszgate-test-0".into()),
            accept_encoding: Some(ACCEPT_ENCODINGS),
        }
    }

    #[test]
    fn an_envelope_is_json_rpc() {
        let body = envelope(7, "engine_exchangeCapabilities", b"[[]]");
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"jsonrpc":"2.0","id":7,"method":"engine_exchangeCapabilities","params":[[]]})
        );
    }

    #[test]
    fn a_rest_call_carries_the_spec_headers() {
        let id = r#"["0x0102030405060708"]"#;
        let rest = translate::request_to_rest("engine_getPayloadV4", id.as_bytes(), None).unwrap();
        let resource = method::by_name("engine_getPayloadV4").unwrap().resource;
        let uri: Uri = format!("http://127.0.0.1:1{}", rest.target)
            .parse()
            .unwrap();
        let r = super::rest(uri, rest, resource, &headers());
        assert_eq!(r.method(), http::Method::GET);
        assert_eq!(r.uri().path(), "/engine/v1/payloads/0x0102030405060708");
        let h = r.headers();
        assert_eq!(h[header::ACCEPT], method::SSZ_CONTENT_TYPE);
        assert_eq!(h[method::FORK_HEADER], Fork::Prague.name());
        assert_eq!(h[header::AUTHORIZATION], "Bearer t.o.k");
        assert_eq!(h[method::CLIENT_VERSION_HEADER], "SG-sszgate-test-0");
        assert_eq!(h[header::ACCEPT_ENCODING], ACCEPT_ENCODINGS);
        assert!(h.get(header::CONTENT_TYPE).is_none(), "a GET has no body");
    }

    #[test]
    fn a_json_rpc_call_names_only_what_it_is_given() {
        let r = json_rpc(
            "http://127.0.0.1:1/".parse().unwrap(),
            Bytes::from_static(b"{}"),
            &CallHeaders {
                token: "x".into(),
                ..CallHeaders::default()
            },
        );
        assert_eq!(r.headers()[header::CONTENT_TYPE], method::JSON_CONTENT_TYPE);
        assert!(r.headers().get(method::CLIENT_VERSION_HEADER).is_none());
        assert!(r.headers().get(header::ACCEPT_ENCODING).is_none());
    }
}
