//! rpc-snooper's WebSocket envelope and event bodies, field for field as its Go structs
//! encode them (declared field order, `omitempty` fields left out when zero, a newline after
//! each text, as gorilla's `WriteJSON` writes).
//!
//! Not here: what is sent when (`hub`), the socket (`socket`).

use serde::{Deserialize, Serialize};

/// One text frame: a request, an answer or an event.
#[derive(Debug, Serialize)]
pub struct Envelope<'a, D: Serialize> {
    /// The client's request id (never set by the server).
    #[serde(skip_serializing_if = "is_zero")]
    pub reqid: u64,
    /// The request this answers.
    #[serde(skip_serializing_if = "is_zero")]
    pub rspid: u64,
    /// The module an event is for.
    #[serde(skip_serializing_if = "is_zero")]
    pub modid: u64,
    /// What the frame is.
    pub method: &'a str,
    /// The payload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<D>,
    /// Why a request failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Unix time in nanoseconds.
    pub time: i64,
    /// A binary frame follows.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
}

impl<D: Serialize> Envelope<'_, D> {
    /// The frame's text, as rpc-snooper writes it.
    pub fn text(&self) -> String {
        let mut text = serde_json::to_string(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A text frame from a client, as rpc-snooper reads one (unknown fields ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Incoming {
    /// The request id to answer with.
    pub reqid: u64,
    /// Set on answers to server requests (which sszgate never makes).
    pub rspid: u64,
    /// The request.
    pub method: String,
    /// Its argument.
    pub data: serde_json::Value,
    /// A binary frame follows.
    pub binary: bool,
}

/// `register_module`'s argument.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Registration {
    /// The module type.
    #[serde(rename = "type")]
    pub kind: String,
    /// A name, for logs.
    pub name: String,
    /// Filters and type options.
    pub config: Option<serde_json::Map<String, serde_json::Value>>,
}

/// `register_module`'s answer.
#[derive(Debug, Serialize)]
pub struct Registered {
    /// Always true (failures are `error`s).
    pub success: bool,
    /// The new module's id.
    pub module_id: u64,
    /// `Module T registered successfully`.
    pub message: String,
}

/// `unregister_module`'s answer (a Go map: keys sorted).
#[derive(Debug, Serialize)]
pub struct Unregistered {
    /// `Module unregistered successfully`.
    pub message: &'static str,
    /// Always true.
    pub success: bool,
}

/// `hook_event`: a body follows in a binary frame.
#[derive(Debug, Serialize)]
pub struct HookEvent<'a> {
    /// The module.
    pub module_id: u64,
    /// `request` or `response`.
    pub hook_type: &'static str,
    /// The call's number.
    pub request_id: u64,
    /// Always null.
    pub data: (),
    /// The body's `Content-Type` (empty when none).
    pub content_type: &'a str,
}

/// `counter_event`.
#[derive(Debug, Serialize)]
pub struct CounterEvent<'a> {
    /// The module.
    pub module_id: u64,
    /// Calls this module has counted.
    pub count: i64,
    /// The HTTP method.
    pub request_type: &'a str,
}

/// `tracer_event`.
#[derive(Debug, Serialize)]
pub struct TracerEvent {
    /// The module.
    pub module_id: u64,
    /// The call's number.
    pub request_id: u64,
    /// The call's duration.
    pub duration_ms: u64,
    /// The response body's size as modules see it (hex text for binary bodies).
    pub response_size: u64,
    /// The request body's size, likewise.
    pub request_size: u64,
    /// The HTTP status.
    pub status_code: u16,
    /// `request_select`'s result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_data: Option<serde_json::Value>,
    /// `response_select`'s result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_data: Option<serde_json::Value>,
}

/// Now as Unix nanoseconds.
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_leave_out_zero_fields_in_gos_order() {
        let answer = Envelope {
            reqid: 0,
            rspid: 1,
            modid: 0,
            method: "register_module",
            data: Some(Registered {
                success: true,
                module_id: 5,
                message: "Module request_snooper registered successfully".into(),
            }),
            error: None,
            time: 7,
            binary: false,
        };
        assert_eq!(
            answer.text(),
            "{\"rspid\":1,\"method\":\"register_module\",\"data\":{\"success\":true,\"module_id\":5,\"message\":\"Module request_snooper registered successfully\"},\"time\":7}\n"
        );
        let event = Envelope {
            reqid: 0,
            rspid: 0,
            modid: 5,
            method: "hook_event",
            data: Some(HookEvent {
                module_id: 5,
                hook_type: "request",
                request_id: 7,
                data: (),
                content_type: "application/json",
            }),
            error: None,
            time: 9,
            binary: true,
        };
        assert_eq!(
            event.text(),
            "{\"modid\":5,\"method\":\"hook_event\",\"data\":{\"module_id\":5,\"hook_type\":\"request\",\"request_id\":7,\"data\":null,\"content_type\":\"application/json\"},\"time\":9,\"binary\":true}\n"
        );
    }
}
