//! Admission: what a request is, decided once. A [`Call`] is built from the request head
//! (transport, target, route, body limit, fork, CL client) and completed from its body once
//! read (the JSON-RPC envelope of its first call, by [`crate::classify`]); everything after —
//! relay, bridge, refusal, record — reads the `Call`, never the request again. The transport
//! is decided here ([`transport_of`]) and the record's [`Capture`] is made here
//! ([`Call::into_capture`]).
//!
//! Not here: what is refused and how a refusal is shaped (`classify`), sending anything
//! (`proxy`, `bridge`, `ws`).

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, header};
use sszgate_engine::method::{self, Route};
use sszgate_record::{Capture, Transport};

use crate::{
    ProxyConfig,
    classify::Refusal,
    identify::{self, Peer},
};

/// One call as the gateway knows it: from its head, then from its body.
pub(crate) struct Call {
    /// When the head arrived (for durations).
    pub(crate) arrived: Instant,
    /// When the head arrived, wall clock, microseconds since the Unix epoch.
    pub(crate) arrival_unix_us: i64,
    /// `HTTP/1.1`, `HTTP/2` or `HTTP/1.0`.
    pub(crate) http_version: &'static str,
    /// What the caller speaks (see [`transport_of`]).
    pub(crate) transport: Transport,
    /// The HTTP method.
    pub(crate) method: Method,
    /// Path and query, as sent.
    pub(crate) target: String,
    /// REST-SSZ only: the resource the path names, or the refusal of a path naming none.
    pub(crate) route: Option<Result<Route, Refusal>>,
    /// The `Eth-Execution-Version` header.
    pub(crate) fork: Option<String>,
    /// The CL, as `identify` names it.
    pub(crate) cl_client: Option<String>,
    /// The request's `Content-Encoding` header, as sent.
    pub(crate) content_encoding: Option<String>,
    /// Largest body accepted: the resource's for REST-SSZ, the global cap otherwise (a
    /// JSON-RPC call is held to its own method's limit once scanned).
    pub(crate) body_limit: usize,
    /// The body, once read (empty before).
    pub(crate) body: Bytes,
    /// JSON-RPC only, once the body is scanned: its envelope.
    pub(crate) rpc: Option<RpcEnvelope>,
    /// What the control point did to the call (`faults`), for its record.
    pub(crate) injected: Option<String>,
}

/// The envelope of a JSON-RPC body, scanned once (params are never parsed here). The raw
/// JSON pieces are slices of the body: no copy.
#[derive(Clone, Debug, Default)]
pub(crate) struct RpcEnvelope {
    /// The method of the first call (a batch has several).
    pub(crate) method: Option<String>,
    /// The id of the first call, raw JSON: echoed in an error about the body.
    pub(crate) id: Option<Bytes>,
    /// The `params` of a single call, raw JSON; `None` for a batch or a call without any.
    pub(crate) params: Option<Bytes>,
    /// True for a single call, false for a batch.
    pub(crate) single: bool,
}

/// The transport a request speaks, from its method, path and headers: a WebSocket upgrade is
/// `websocket`, `POST /` is `json-rpc`, a path under `/engine/v1/` is `rest-ssz`, anything
/// else `other`. The only place that decides it.
pub(crate) fn transport_of(method: &Method, path: &str, headers: &HeaderMap) -> Transport {
    if is_websocket_upgrade(headers) {
        Transport::WebSocket
    } else if is_json_rpc(method, path) {
        Transport::JsonRpc
    } else if path
        .strip_prefix(method::REST_BASE)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    {
        Transport::RestSsz
    } else {
        Transport::Other
    }
}

/// True for the JSON-RPC request target, `POST /`.
fn is_json_rpc(method: &Method, path: &str) -> bool {
    method == Method::POST && (path == "/" || path.is_empty())
}

fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    let has = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        })
    };
    has(header::CONNECTION, "upgrade") && has(header::UPGRADE, "websocket")
}

impl Call {
    /// The call as its head describes it. A REST-SSZ route is parsed here, once.
    pub(crate) fn from_head<B>(
        request: &Request<B>,
        config: &ProxyConfig,
        peer: Option<&Peer>,
    ) -> Call {
        let headers = request.headers();
        let target = request
            .uri()
            .path_and_query()
            .map_or("/".into(), |pq| pq.as_str().to_string());
        let transport = transport_of(request.method(), request.uri().path(), headers);
        let route = (transport == Transport::RestSsz).then(|| {
            Route::parse(request.method().as_str(), &target)
                .map_err(|e| crate::classify::refuse(e.problem(), e.to_string()))
        });
        let body_limit = match &route {
            Some(Ok(route)) => crate::sizes::rest_body_limit(route.resource).min(config.max_body),
            _ => config.max_body,
        };
        Call {
            arrived: Instant::now(),
            arrival_unix_us: now_unix_us(),
            http_version: http_version(request.version()),
            transport,
            method: request.method().clone(),
            target,
            route,
            fork: header_str(headers, method::FORK_HEADER),
            cl_client: identify::from_head(headers, config.cl_label.as_deref(), peer),
            content_encoding: header_str(headers, "content-encoding"),
            body_limit,
            body: Bytes::new(),
            rpc: None,
            injected: None,
        }
    }

    /// Names the CL by the `ClientVersionV1` it sends when this is its
    /// `engine_getClientVersionV1` call, and remembers it for its address.
    pub(crate) fn learn_cl(&mut self, peer: Option<&Peer>) {
        let Some(rpc) = &self.rpc else { return };
        if rpc.method.as_deref() != Some("engine_getClientVersionV1") {
            return;
        }
        let Some(who) = rpc
            .params
            .as_deref()
            .and_then(identify::from_client_version_params)
        else {
            return;
        };
        if let Some(peer) = peer {
            peer.identities.remember(peer.ip, &who);
        }
        self.cl_client = Some(who);
    }

    /// The method's row: the JSON-RPC method of a single call or of a batch's first, or the
    /// one a REST resource stands for under the call's fork (its newest without one).
    pub(crate) fn method_spec(&self) -> Option<&'static method::MethodSpec> {
        if let Some(rpc) = &self.rpc {
            return method::by_name(rpc.method.as_deref()?).ok();
        }
        let route = self.route()?;
        let fork = self.fork.as_deref().and_then(|f| f.parse().ok());
        match fork {
            Some(fork) => method::for_resource(route.resource, fork).ok(),
            None => method::METHODS
                .iter()
                .rev()
                .find(|m| m.resource == route.resource),
        }
    }

    /// The call's JSON-RPC method name, as [`Call::method_spec`] finds it; for an unknown
    /// JSON-RPC method, the name it was called by.
    pub(crate) fn method_name(&self) -> Option<&str> {
        match (self.method_spec(), &self.rpc) {
            (Some(m), _) => Some(m.name),
            (None, Some(rpc)) => rpc.method.as_deref(),
            (None, None) => None,
        }
    }

    /// The route, when the path names a REST-SSZ resource.
    pub(crate) fn route(&self) -> Option<&Route> {
        self.route.as_ref().and_then(|r| r.as_ref().ok())
    }

    /// True when the gateway's own answers take the JSON-RPC shape (an error object) rather
    /// than problem+json: JSON-RPC, and WebSocket, which carries JSON-RPC.
    pub(crate) fn answers_in_json_rpc(&self) -> bool {
        matches!(self.transport, Transport::JsonRpc | Transport::WebSocket)
    }

    /// What a body-limit message adds to name the limit's resource (REST-SSZ only).
    pub(crate) fn limit_of(&self) -> String {
        match self.route() {
            Some(_) => format!(
                " for {} {}",
                self.method,
                self.target.split('?').next().unwrap_or_default()
            ),
            None => String::new(),
        }
    }

    /// The record of this call as far as the request goes; the answer's side is filled in by
    /// whoever answers (relay, bridge, refusal). The one place a `Capture` is made of a call.
    pub(crate) fn into_capture(self) -> Capture {
        let route = self.route().cloned();
        Capture {
            arrival_unix_us: self.arrival_unix_us,
            http_version: self.http_version,
            transport: Some(self.transport),
            target: self.target,
            method: self.rpc.and_then(|rpc| rpc.method),
            route,
            fork: self.fork,
            cl_client: self.cl_client,
            encodings: (self.content_encoding, None),
            request: self.body,
            request_limit: self.body_limit,
            injected: self.injected,
            ..Capture::default()
        }
    }
}

/// Now, microseconds since the Unix epoch.
pub(crate) fn now_unix_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// A header's value, when it is text.
pub(crate) fn header_str(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn http_version(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_2 => "HTTP/2",
        http::Version::HTTP_10 => "HTTP/1.0",
        _ => "HTTP/1.1",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transport(method: Method, path: &str, upgrade: bool) -> Transport {
        let mut headers = HeaderMap::new();
        if upgrade {
            headers.insert(header::CONNECTION, "keep-alive, Upgrade".parse().unwrap());
            headers.insert(header::UPGRADE, "websocket".parse().unwrap());
        }
        transport_of(&method, path, &headers)
    }

    #[test]
    fn the_transport_follows_one_rule() {
        assert_eq!(transport(Method::POST, "/", false), Transport::JsonRpc);
        assert_eq!(transport(Method::GET, "/", false), Transport::Other);
        assert_eq!(transport(Method::GET, "/", true), Transport::WebSocket);
        assert_eq!(transport(Method::POST, "/", true), Transport::WebSocket);
        let rest = [
            "/engine/v1/payloads",
            "/engine/v1/nonexistent",
            "/engine/v1",
        ];
        for path in rest {
            assert_eq!(
                transport(Method::GET, path, false),
                Transport::RestSsz,
                "{path}"
            );
        }
        for path in ["/foo", "/engine/v10/payloads", "/engine"] {
            assert_eq!(
                transport(Method::POST, path, false),
                Transport::Other,
                "{path}"
            );
        }
    }
}
