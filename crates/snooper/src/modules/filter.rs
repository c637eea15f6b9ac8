//! A module's `request_filter` / `response_filter`, read as leniently as rpc-snooper reads
//! them (a value of the wrong type is left out or zero), and the request filter's rule.
//! The response filter is read and its query compiled (so a bad one is refused as in
//! rpc-snooper) but never applied: in rpc-snooper only modules that take responses reach
//! it, and those always ask for the response first, which skips it.
//!
//! Not here: the jq engine (`jq`), delivery (`hub`).

use serde_json::{Map, Value};

use crate::jq::Query;

/// One filter of a module config.
#[derive(Debug, Default)]
pub struct Filter {
    /// Substrings of the `Content-Type`, one of which must occur.
    pub content_types: Vec<String>,
    /// HTTP methods (case-insensitive), one of which must match.
    pub methods: Vec<String>,
    /// Statuses (read, never applied; see the module header).
    pub status_codes: Vec<i64>,
    /// A jq query on a JSON body whose first non-null, non-false output lets it through.
    pub json_query: Option<Query>,
}

/// The request and response filters of a config, compiled.
#[derive(Debug, Default)]
pub struct Filters {
    /// `request_filter`.
    pub request: Option<Filter>,
    /// `response_filter`.
    pub response: Option<Filter>,
}

impl Filters {
    /// Reads `config`'s filters; a query that does not compile is refused with
    /// rpc-snooper's message.
    pub fn read(config: &Map<String, Value>) -> Result<Filters, String> {
        let read = |key: &str, side: &str| -> Result<Option<Filter>, String> {
            let Some(Value::Object(object)) = config.get(key) else {
                return Ok(None);
            };
            Filter::read(object)
                .map(Some)
                .map_err(|e| format!("Failed to compile {side} filter: {e}"))
        };
        Ok(Filters {
            request: read("request_filter", "request")?,
            response: read("response_filter", "response")?,
        })
    }

    /// Whether a call with this HTTP method, request `Content-Type` and body reaches the
    /// module.
    pub fn admits(&self, method: &str, content_type: &str, body: &[u8]) -> bool {
        let Some(filter) = &self.request else {
            return true;
        };
        if !filter.methods.is_empty()
            && !filter
                .methods
                .iter()
                .any(|m| m.eq_ignore_ascii_case(method))
        {
            return false;
        }
        if !filter.content_types.is_empty()
            && !filter
                .content_types
                .iter()
                .any(|t| content_type.contains(t.as_str()))
        {
            return false;
        }
        match &filter.json_query {
            Some(query) if content_type.contains("json") => query.matches(body),
            _ => true,
        }
    }
}

impl Filter {
    fn read(object: &Map<String, Value>) -> Result<Filter, String> {
        let strings = |key| match object.get(key) {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect(),
            _ => Vec::new(),
        };
        let status_codes = match object.get("status_codes") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_f64().map_or(0, |f| f as i64))
                .collect(),
            _ => Vec::new(),
        };
        let json_query = match object.get("json_query") {
            Some(Value::String(code)) if !code.is_empty() => Some(Query::compile(code)?),
            _ => None,
        };
        Ok(Filter {
            content_types: strings("content_types"),
            methods: strings("methods"),
            status_codes,
            json_query,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn filters(config: Value) -> Result<Filters, String> {
        Filters::read(config.as_object().unwrap())
    }

    const CALL: &[u8] = br#"{"method":"engine_newPayloadV4"}"#;

    #[test]
    fn a_request_filter_checks_method_content_type_and_query() {
        let f = filters(json!({"request_filter": {
            "methods": ["post"],
            "content_types": ["json"],
            "json_query": ".method == \"engine_newPayloadV4\"",
        }}))
        .unwrap();
        assert!(f.admits("POST", "application/json", CALL));
        assert!(!f.admits("GET", "application/json", CALL));
        assert!(!f.admits("POST", "application/octet-stream", CALL));
        assert!(!f.admits("POST", "application/json", br#"{"method":"eth_call"}"#));
        // The query applies to JSON content types only.
        let g = filters(json!({"request_filter": {"json_query": ".method == \"x\""}})).unwrap();
        assert!(g.admits("POST", "text/plain", CALL));
        assert!(!g.admits("POST", "application/json", CALL));
    }

    #[test]
    fn no_filter_or_a_wrongly_typed_one_admits_everything() {
        assert!(filters(json!({})).unwrap().admits("POST", "", b""));
        assert!(
            filters(json!({"request_filter": "nope"}))
                .unwrap()
                .admits("GET", "", b"")
        );
        // A non-string content type reads as "", which every content type contains.
        let f = filters(json!({"request_filter": {"content_types": [1]}})).unwrap();
        assert!(f.admits("POST", "application/json", CALL));
    }

    #[test]
    fn a_bad_query_is_refused_with_rpc_snoopers_prefix() {
        let e = filters(json!({"request_filter": {"json_query": ".["}})).unwrap_err();
        assert!(e.starts_with("Failed to compile request filter: "), "{e}");
        let e = filters(json!({"response_filter": {"json_query": "env"}})).unwrap_err();
        assert!(e.starts_with("Failed to compile response filter: "), "{e}");
    }
}
