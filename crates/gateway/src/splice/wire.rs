//! HTTP/1.1 heads for the spliced relay, parsed with `httparse` and written by hand: a CL's
//! request head (and whether the spliced relay takes it at all), the EL's request and answer
//! heads, the answer's framing, and the gateway's own answers as bytes.
//!
//! Not here: moving bodies (`pump`), the stages of a call (`splice`).

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt;

use crate::proxy::ResponseBody;

/// Header fields a head may have, as hyper's default: a head with more goes the general way
/// (hyper refuses it).
const MAX_HEADERS: usize = 100;

/// A CL's request head the spliced relay takes: HTTP/1.1, `POST`, a body framed by one
/// `Content-Length`, no upgrade and no `Expect`.
pub(super) struct RequestHead {
    /// The head as `http` types (its body is the call's, read separately).
    pub(super) request: Request<()>,
    /// Bytes of the head on the wire, its blank line included.
    pub(super) len: usize,
    /// The body's length, from `Content-Length`.
    pub(super) body_len: u64,
    /// True when the CL asked to close the connection after this call.
    pub(super) close: bool,
}

/// What the bytes read so far of a connection are.
// One per call, moved once: boxing the head would allocate per call for nothing.
#[allow(clippy::large_enum_variant)]
pub(super) enum Parsed {
    /// A head the spliced relay takes.
    Head(RequestHead),
    /// Not all of a head yet.
    Partial,
    /// Something else (another version or method, a chunked body, an upgrade, a head that does
    /// not parse): served the general way, which answers or refuses it.
    Elsewhere,
}

/// Reads a CL's request head from the start of `bytes`; a head longer than `max_head` is
/// left to the general way (which refuses it in the caller's shape).
pub(super) fn request_head(bytes: &[u8], max_head: usize) -> Parsed {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Request::new(&mut fields);
    let len = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if bytes.len() < max_head => return Parsed::Partial,
        _ => return Parsed::Elsewhere,
    };
    if len > max_head || parsed.version != Some(1) || parsed.method != Some("POST") {
        return Parsed::Elsewhere;
    }
    let Some(headers) = header_map(parsed.headers) else {
        return Parsed::Elsewhere;
    };
    let body_len = match single_length(&headers) {
        Some(Ok(n)) => n,
        _ => return Parsed::Elsewhere,
    };
    let refused = [header::TRANSFER_ENCODING, header::UPGRADE, header::EXPECT];
    if refused.iter().any(|name| headers.contains_key(name)) {
        return Parsed::Elsewhere;
    }
    let close = has_token(&headers, "close");
    let mut request = Request::builder()
        .method(Method::POST)
        .version(http::Version::HTTP_11);
    match parsed.path.map(http::Uri::try_from) {
        Some(Ok(uri)) if uri.scheme().is_none() => request = request.uri(uri),
        _ => return Parsed::Elsewhere,
    }
    let Ok(mut request) = request.body(()) else {
        return Parsed::Elsewhere;
    };
    *request.headers_mut() = headers;
    Parsed::Head(RequestHead {
        request,
        len,
        body_len,
        close,
    })
}

/// The header fields as a map; `None` when a name or value is not one `http` takes.
fn header_map(fields: &[httparse::Header<'_>]) -> Option<HeaderMap> {
    let mut headers = HeaderMap::with_capacity(fields.len());
    for field in fields {
        let name = HeaderName::from_bytes(field.name.as_bytes()).ok()?;
        headers.append(name, HeaderValue::from_bytes(field.value).ok()?);
    }
    Some(headers)
}

/// The `Content-Length`: `None` without one, an error when there are several or it is not a
/// number.
fn single_length(headers: &HeaderMap) -> Option<Result<u64, ()>> {
    let mut values = headers.get_all(header::CONTENT_LENGTH).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return Some(Err(()));
    }
    let text = first.to_str().map_err(|_| ());
    Some(text.and_then(|t| t.trim().parse::<u64>().map_err(|_| ())))
}

/// True when the `Connection` header names `token`.
fn has_token(headers: &HeaderMap, token: &str) -> bool {
    headers.get_all(header::CONNECTION).iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    })
}

/// The request head the EL gets: the CL's method and target under the EL's base path, its
/// header fields less the hop-by-hop ones (and its `Authorization` when the gateway signs
/// with its own `token`), the EL's `Host`, and the body's length.
pub(super) fn upstream_head(
    request: &Request<()>,
    base_path: &str,
    authority: &str,
    token: Option<&str>,
    body_len: usize,
) -> Vec<u8> {
    let target = request.uri().path_and_query().map_or("/", |pq| pq.as_str());
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(
        format!("POST {base_path}{target} HTTP/1.1\r\nhost: {authority}\r\n").as_bytes(),
    );
    for (name, value) in crate::proxy::forwardable(request.headers()) {
        let own = token.is_some() && name == header::AUTHORIZATION;
        if own || name == header::CONTENT_LENGTH {
            continue;
        }
        field(&mut head, name.as_str(), value.as_bytes());
    }
    if let Some(token) = token {
        field(&mut head, "authorization", token.as_bytes());
    }
    field(&mut head, "content-length", body_len.to_string().as_bytes());
    head.extend_from_slice(b"\r\n");
    head
}

fn field(head: &mut Vec<u8>, name: &str, value: &[u8]) {
    head.extend_from_slice(name.as_bytes());
    head.extend_from_slice(b": ");
    head.extend_from_slice(value);
    head.extend_from_slice(b"\r\n");
}

/// How an answer's body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Framing {
    /// After this many bytes.
    Length(u64),
    /// At its last chunk (HTTP/1.1 chunked coding, relayed as it comes).
    Chunked,
    /// When the EL closes the connection.
    UntilClose,
}

/// The EL's answer head.
pub(super) struct AnswerHead {
    /// Its status.
    pub(super) status: StatusCode,
    /// Its header fields as sent.
    pub(super) headers: HeaderMap,
    /// Bytes of the head on the wire.
    pub(super) len: usize,
    /// How its body ends.
    pub(super) framing: Framing,
    /// True when the EL closes the connection after it.
    pub(super) close: bool,
}

/// Reads the EL's answer head from the start of `bytes`: `Ok(None)` when not all of it is
/// there yet, an error naming what is wrong with it.
pub(super) fn answer_head(bytes: &[u8]) -> Result<Option<AnswerHead>, String> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut parsed = httparse::Response::new(&mut fields);
    let len = match parsed.parse(bytes) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("an answer head that does not parse: {e}")),
    };
    let code = parsed.code.unwrap_or_default();
    let status = StatusCode::from_u16(code).map_err(|_| format!("status {code}"))?;
    let headers =
        header_map(parsed.headers).ok_or("an answer header field `http` does not take")?;
    let chunked = headers.get_all(header::TRANSFER_ENCODING).iter().any(|v| {
        v.to_str()
            .is_ok_and(|v| v.to_ascii_lowercase().contains("chunked"))
    });
    let framing = if status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        Framing::Length(0)
    } else if chunked {
        Framing::Chunked
    } else {
        match single_length(&headers) {
            Some(Ok(n)) => Framing::Length(n),
            Some(Err(())) => return Err("an answer with a bad or repeated Content-Length".into()),
            None => Framing::UntilClose,
        }
    };
    let close = parsed.version == Some(0) || has_token(&headers, "close");
    Ok(Some(AnswerHead {
        status,
        close: close || framing == Framing::UntilClose,
        headers,
        len,
        framing,
    }))
}

/// The answer head the CL gets: the EL's status and header fields less the hop-by-hop ones,
/// its framing as it is relayed, and `connection: close` when the connection ends after it.
pub(super) fn client_head(answer: &AnswerHead, close: bool) -> Vec<u8> {
    let mut head = Vec::with_capacity(256);
    status_line(&mut head, answer.status);
    // A length only frames a body that is relayed by its length (an EL that sends one with
    // chunks has its chunks relayed, and RFC 9112 says the chunks win).
    let length_frames = matches!(answer.framing, Framing::Length(_));
    for (name, value) in answer.headers.iter() {
        let hop = crate::proxy::HOP_BY_HOP.contains(name) || name.as_str() == "keep-alive";
        let stale_length = name == header::CONTENT_LENGTH && !length_frames;
        if !hop && !stale_length {
            field(&mut head, name.as_str(), value.as_bytes());
        }
    }
    if answer.framing == Framing::Chunked {
        field(&mut head, "transfer-encoding", b"chunked");
    }
    if close {
        field(&mut head, "connection", b"close");
    }
    head.extend_from_slice(b"\r\n");
    head
}

fn status_line(head: &mut Vec<u8>, status: StatusCode) {
    let reason = status.canonical_reason().unwrap_or("");
    head.extend_from_slice(format!("HTTP/1.1 {} {reason}\r\n", status.as_u16()).as_bytes());
}

/// An answer the gateway gives itself (a refusal, an EL that failed), whole, as bytes.
pub(super) async fn gateway_answer(answer: Response<ResponseBody>, close: bool) -> Vec<u8> {
    let (parts, body) = answer.into_parts();
    let body: Bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let mut head = Vec::with_capacity(256 + body.len());
    status_line(&mut head, parts.status);
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_LENGTH && name != header::CONNECTION {
            field(&mut head, name.as_str(), value.as_bytes());
        }
    }
    field(
        &mut head,
        "content-length",
        body.len().to_string().as_bytes(),
    );
    if close {
        field(&mut head, "connection", b"close");
    }
    head.extend_from_slice(b"\r\n");
    head.extend_from_slice(&body);
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Parsed {
        request_head(text.as_bytes(), 8192)
    }

    #[test]
    fn a_plain_json_rpc_post_is_taken_with_its_length_and_target() {
        let text = "POST /?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\nConnection: keep-alive, Close\r\n\r\n{}";
        let Parsed::Head(h) = head(text) else {
            panic!("not taken");
        };
        assert_eq!(h.body_len, 12);
        assert_eq!(h.len, text.len() - 2);
        assert!(h.close);
        assert_eq!(h.request.uri().path_and_query().unwrap().as_str(), "/?x=1");
        assert_eq!(h.request.headers()["host"], "a");
    }

    #[test]
    fn anything_but_a_length_framed_http11_post_goes_the_general_way() {
        for text in [
            "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            "POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: -2\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 2\r\nUpgrade: websocket\r\n\r\n",
            "POST http://elsewhere/ HTTP/1.1\r\nContent-Length: 2\r\n\r\n",
            "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
            "POST / HTTP/1.1\r\nBad Name: 1\r\n\r\n",
        ] {
            assert!(matches!(head(text), Parsed::Elsewhere), "{text:?} taken");
        }
    }

    #[test]
    fn a_head_not_all_there_waits_unless_it_is_already_too_long() {
        assert!(matches!(
            head("POST / HTTP/1.1\r\nContent-Le"),
            Parsed::Partial
        ));
        let long = format!("POST / HTTP/1.1\r\nX: {}", "a".repeat(200));
        assert!(matches!(
            request_head(long.as_bytes(), 100),
            Parsed::Elsewhere
        ));
        let whole = format!(
            "POST / HTTP/1.1\r\nContent-Length: 0\r\nX: {}\r\n\r\n",
            "a".repeat(200)
        );
        assert!(matches!(
            request_head(whole.as_bytes(), 100),
            Parsed::Elsewhere
        ));
    }

    #[test]
    fn the_els_head_is_cut_of_hop_by_hop_fields_and_keeps_the_rest() {
        let mut request = Request::builder()
            .method(Method::POST)
            .uri("/engine/v1/payloads?x")
            .body(())
            .unwrap();
        let h = request.headers_mut();
        h.insert("content-type", "application/octet-stream".parse().unwrap());
        h.insert("connection", "keep-alive".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert("host", "gateway".parse().unwrap());
        h.insert("authorization", "Bearer cl".parse().unwrap());
        h.insert("content-length", "999".parse().unwrap());
        let plain =
            String::from_utf8(upstream_head(&request, "/base", "el:8551", None, 5)).unwrap();
        assert_eq!(
            plain,
            "POST /base/engine/v1/payloads?x HTTP/1.1\r\nhost: el:8551\r\ncontent-type: application/octet-stream\r\nauthorization: Bearer cl\r\ncontent-length: 5\r\n\r\n"
        );
        let signed =
            String::from_utf8(upstream_head(&request, "", "el:1", Some("Bearer own"), 0)).unwrap();
        assert!(signed.contains("authorization: Bearer own\r\n"), "{signed}");
        assert!(!signed.contains("Bearer cl"), "{signed}");
    }

    #[test]
    fn an_answer_head_says_how_its_body_ends() {
        let framing = |text: &str| answer_head(text.as_bytes()).unwrap().unwrap().framing;
        assert_eq!(
            framing("HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n"),
            Framing::Length(7)
        );
        assert_eq!(
            framing("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 7\r\n\r\n"),
            Framing::Chunked
        );
        assert_eq!(framing("HTTP/1.1 200 OK\r\n\r\n"), Framing::UntilClose);
        assert_eq!(
            framing("HTTP/1.1 204 No Content\r\n\r\n"),
            Framing::Length(0)
        );
        assert!(
            answer_head(b"HTTP/1.1 200 OK\r\nContent-Le")
                .unwrap()
                .is_none()
        );
        let bad = answer_head(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")
            .err()
            .unwrap();
        assert!(bad.contains("Content-Length"), "{bad}");
        assert!(answer_head(b"SSH-2.0\r\n\r\n").is_err());
        let closing = answer_head(b"HTTP/1.1 200 OK\r\n\r\n").unwrap().unwrap();
        assert!(closing.close, "a body to the connection's end closes it");
    }

    #[test]
    fn the_cls_answer_head_keeps_the_els_fields_but_its_framing_is_the_relays() {
        let answer = answer_head(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\nDate: x\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        let head = String::from_utf8(client_head(&answer, true)).unwrap();
        assert_eq!(
            head,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ndate: x\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        );
        let both = answer_head(
            b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n",
        )
        .unwrap()
        .unwrap();
        let head = String::from_utf8(client_head(&both, false)).unwrap();
        assert_eq!(
            head,
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        );
        let length = answer_head(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n")
            .unwrap()
            .unwrap();
        let head = String::from_utf8(client_head(&length, false)).unwrap();
        assert_eq!(head, "HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\n");
    }
}

#[cfg(test)]
mod hostile {
    use super::*;
    use crate::splice::pump::{chunk_line, trailers_end};

    /// Every cut and every byte of a few real heads replaced by bytes a peer may send: each
    /// parser answers (taken, partial, elsewhere or an error), never panics.
    #[test]
    fn cut_and_changed_heads_are_answered_never_panicked_on() {
        let seeds: [&[u8]; 4] = [
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{}",
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n",
            b"1a;x=\"y\"\r\nabc\r\n0\r\nT: 1\r\n\r\n",
        ];
        let swaps = [0u8, b'\r', b'\n', b':', b';', b' ', b'f', 0x80, 0xff];
        let mut seen = 0;
        for seed in seeds {
            for cut in 0..=seed.len() {
                check(&seed[..cut]);
                seen += 1;
            }
            for at in 0..seed.len() {
                for swap in swaps {
                    let mut changed = seed.to_vec();
                    changed[at] = swap;
                    check(&changed);
                    seen += 1;
                }
            }
        }
        assert!(seen > 1000, "{seen} inputs");
    }

    fn check(bytes: &[u8]) {
        let _ = request_head(bytes, 64);
        let _ = request_head(bytes, 8192);
        if let Ok(Some(answer)) = answer_head(bytes) {
            let _ = client_head(&answer, false);
        }
        let _ = chunk_line(bytes);
        let _ = trailers_end(bytes);
    }
}
