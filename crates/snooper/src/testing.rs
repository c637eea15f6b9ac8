//! Test fixtures shared by the crate's unit tests: a relayed JSON-RPC call.
//!
//! Not here: any test itself.

use std::time::Duration;

use bytes::Bytes;
use http::Method;
use sszgate_gateway::Exchange;

/// A relayed JSON call with body `request`, answered `{"jsonrpc":"2.0","id":1,"result":"0x1"}`
/// in two frames after 7 ms.
pub(crate) fn exchange(request: &str) -> Exchange {
    Exchange {
        method: Method::POST,
        target: "/".into(),
        request_content_type: Some("application/json".into()),
        request: Bytes::from(request.to_string()),
        status: 200,
        response_content_type: Some("application/json".into()),
        response_encoding: None,
        response: vec![
            Bytes::from_static(b"{\"jsonrpc\":\"2.0\",\"id\":1,"),
            Bytes::from_static(b"\"result\":\"0x1\"}"),
        ],
        response_len: 39,
        duration: Duration::from_millis(7),
        failure: None,
    }
}
