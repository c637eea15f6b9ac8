//! The call record: one per Engine API call (one per element of a JSON-RPC batch).

use bytes::Bytes;
use serde::Serialize;

/// The transport a call used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// JSON-RPC over HTTP `POST /`.
    JsonRpc,
    /// REST-SSZ under `/engine/v1/`.
    RestSsz,
    /// JSON-RPC over a WebSocket.
    WebSocket,
    /// Anything else that was relayed (unknown paths).
    Other,
}

impl Transport {
    /// The name stored in records and metric labels.
    pub fn name(self) -> &'static str {
        match self {
            Transport::JsonRpc => "json-rpc",
            Transport::RestSsz => "rest-ssz",
            Transport::WebSocket => "websocket",
            Transport::Other => "other",
        }
    }
}

/// Which side an error came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorSide {
    /// The consensus client sent something wrong (bad envelope, too large, no such path).
    Cl,
    /// The execution client answered an error or failed (refused, reset, timed out).
    El,
    /// The gateway itself.
    Gateway,
}

impl ErrorSide {
    /// The name stored in records.
    pub fn name(self) -> &'static str {
        match self {
            ErrorSide::Cl => "cl",
            ErrorSide::El => "el",
            ErrorSide::Gateway => "gateway",
        }
    }
}

/// What the gateway hands to the recorder: classification, timings and the raw bodies
/// (refcounted, never copied). Facts are extracted from it off the forward path.
#[derive(Clone, Debug, Default)]
pub struct Capture {
    /// Arrival time, microseconds since the Unix epoch.
    pub arrival_unix_us: i64,
    /// The transport.
    pub transport: Option<Transport>,
    /// `HTTP/1.1` or `HTTP/2`.
    pub http_version: &'static str,
    /// The HTTP method and path (REST) or `POST /`.
    pub target: String,
    /// The JSON-RPC method, or the method a REST resource stands for.
    pub method: Option<String>,
    /// The REST route (resource, payload id, range), for REST calls.
    pub route: Option<sszgate_engine::method::Route>,
    /// The fork (`Eth-Execution-Version`), if any.
    pub fork: Option<String>,
    /// The CL client (`X-Engine-Client-Version`).
    pub cl_client: Option<String>,
    /// The HTTP status answered.
    pub status: u16,
    /// Where an error came from, when the gateway knows (else facts decide).
    pub error_side: Option<ErrorSide>,
    /// A gateway-side error message.
    pub error_message: Option<String>,
    /// The request body as sent upstream.
    pub request: Bytes,
    /// The response body as answered, in the frames it was relayed in (joined off the
    /// forward path, by the recorder).
    pub response: Vec<Bytes>,
    /// `Content-Encoding` of the request and of the response, if any.
    pub encodings: (Option<String>, Option<String>),
    /// Upstream time to the first response byte, µs.
    pub upstream_ttfb_us: Option<u64>,
    /// Upstream time to the last response byte, µs.
    pub upstream_ttlb_us: Option<u64>,
    /// Total time at the proxy, from request head to last response byte, µs.
    pub total_us: u64,
    /// `snoop` (relayed as it is) or `bridge` (translated between transports).
    pub mode: &'static str,
    /// Bridge: time to translate the request, µs.
    pub translate_request_us: Option<u64>,
    /// Bridge: time to translate the answer, µs.
    pub translate_response_us: Option<u64>,
    /// Bridge: request bytes on the upstream's transport.
    pub upstream_request_bytes: Option<u64>,
    /// Bridge: response bytes on the upstream's transport.
    pub upstream_response_bytes: Option<u64>,
    /// The bound on the request body's decoded size (its resource's or method's body limit),
    /// when it has a content coding; 0: the recorder's own bound.
    pub request_limit: usize,
    /// The fault a rule injected into this call (`rule 3: delay 500 ms`), when one did.
    pub injected: Option<String>,
    /// The answer's size when its frames were not kept: it was larger than the recorder
    /// holds (`--queue-bytes`), so only its size is recorded.
    pub response_not_kept: Option<u64>,
}

impl Capture {
    /// Bytes of body this capture holds alive (request and kept answer frames): what it
    /// costs the recorder's queue.
    pub fn held_bytes(&self) -> u64 {
        self.request.len() as u64 + self.kept_answer_bytes()
    }

    /// The answer's size as it came: its kept frames, or the size noted when none was kept.
    pub fn answer_len(&self) -> u64 {
        self.response_not_kept
            .unwrap_or_else(|| self.kept_answer_bytes())
    }

    fn kept_answer_bytes(&self) -> u64 {
        self.response.iter().map(|f| f.len() as u64).sum()
    }
}

/// The Engine API facts of a call, taken from its bodies.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Facts {
    /// JSON-RPC request id (as JSON text).
    pub rpc_id: Option<String>,
    /// Index within a JSON-RPC batch.
    pub batch_index: Option<u32>,
    /// JSON-RPC error code of the answer.
    pub error_code: Option<i64>,
    /// JSON-RPC error message, or problem+json detail.
    pub error_message: Option<String>,
    /// problem+json `type` of a REST error.
    pub problem_type: Option<String>,
    /// Block number of the payload sent or returned.
    pub block_number: Option<u64>,
    /// Block hash of the payload.
    pub block_hash: Option<String>,
    /// Parent hash of the payload.
    pub parent_hash: Option<String>,
    /// Transactions in the payload.
    pub tx_count: Option<u64>,
    /// Gas used by the payload.
    pub gas_used: Option<u64>,
    /// Blobs in a bundle or getBlobs answer.
    pub blob_count: Option<u64>,
    /// Versioned hashes sent (newPayload) or requested (getBlobs).
    pub versioned_hash_count: Option<u64>,
    /// Payload status (`VALID`, `INVALID`, …).
    pub payload_status: Option<String>,
    /// Latest valid hash of the status.
    pub latest_valid_hash: Option<String>,
    /// Validation error of an INVALID status.
    pub validation_error: Option<String>,
    /// Payload id (forkchoiceUpdated answer, getPayload request).
    pub payload_id: Option<String>,
    /// getBlobs: blobs requested.
    pub blobs_requested: Option<u64>,
    /// getBlobs: blobs returned.
    pub blobs_returned: Option<u64>,
    /// getBlobs: indices of the missing blobs, comma separated.
    pub blobs_missing: Option<String>,
    /// Verification: `ok`, `failed` or `skipped` (none: not verified, or nothing to verify).
    pub verdict: Option<String>,
    /// Verification: the check that failed, or `kzg` when an ok verdict included the proofs.
    pub verify_check: Option<String>,
    /// Verification: what the failed check found, or why it was skipped.
    pub verify_detail: Option<String>,
    /// Verification: time spent, µs (on the recorder's thread, never the call's).
    pub verify_us: Option<u64>,
}

/// One stored record: the capture's classification and timings with the facts.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Record {
    /// Sequence number within this recorder.
    pub seq: u64,
    /// `proxy` or `driver`.
    pub source: &'static str,
    /// Arrival time, µs since the Unix epoch.
    pub arrival_unix_us: i64,
    /// The transport.
    pub transport: &'static str,
    /// `HTTP/1.1` or `HTTP/2`.
    pub http_version: &'static str,
    /// JSON-RPC method (or the method a REST resource stands for).
    pub method: Option<String>,
    /// REST resource.
    pub resource: Option<&'static str>,
    /// Fork.
    pub fork: Option<String>,
    /// HTTP status.
    pub status: u16,
    /// Where an error came from.
    pub error_side: Option<&'static str>,
    /// Request body bytes.
    pub request_bytes: u64,
    /// Response body bytes.
    pub response_bytes: u64,
    /// Content encodings (request, response).
    pub request_encoding: Option<String>,
    /// Content encoding of the response.
    pub response_encoding: Option<String>,
    /// Request body size after removing its content encoding, when it had one.
    pub request_decoded_bytes: Option<u64>,
    /// Response body size after removing its content encoding, when it had one.
    pub response_decoded_bytes: Option<u64>,
    /// `snoop` or `bridge`.
    pub mode: &'static str,
    /// Bridge: time to translate the request, µs.
    pub translate_request_us: Option<u64>,
    /// Bridge: time to translate the answer, µs.
    pub translate_response_us: Option<u64>,
    /// Bridge: request bytes on the upstream's transport.
    pub upstream_request_bytes: Option<u64>,
    /// Bridge: response bytes on the upstream's transport.
    pub upstream_response_bytes: Option<u64>,
    /// Upstream time to first byte, µs.
    pub upstream_ttfb_us: Option<u64>,
    /// Upstream time to last byte, µs.
    pub upstream_ttlb_us: Option<u64>,
    /// Total time at the proxy, µs.
    pub total_us: u64,
    /// Proxy overhead: total minus upstream time, µs.
    pub overhead_us: Option<u64>,
    /// CL client.
    pub cl_client: Option<String>,
    /// EL client.
    pub el_client: Option<String>,
    /// The user's labels, as a JSON object.
    pub labels: String,
    /// What the recorder could not read of the call's bodies, and why (a content coding that
    /// does not decode or decodes past its bound, an answer too large to hold, a fault while
    /// reading it); the facts it would have given are left empty.
    pub capture_note: Option<String>,
    /// The fault a control rule injected into this call, and which rule (`rule 3: delay 500
    /// ms`): the answer the CL saw was not (only) the EL's.
    pub injected: Option<String>,
    /// The Engine API facts.
    #[serde(flatten)]
    pub facts: Facts,
    /// The request body, truncated, for sinks that keep bodies (JSON text, else 0x-hex).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_body: Option<String>,
    /// The response body, truncated likewise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_body: Option<String>,
}

impl Record {
    /// The heap and inline bytes this record holds, about: what keeping it costs.
    pub fn approx_bytes(&self) -> usize {
        let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        let f = &self.facts;
        std::mem::size_of::<Record>()
            + self.labels.len()
            + [
                &self.method,
                &self.fork,
                &self.request_encoding,
                &self.response_encoding,
                &self.cl_client,
                &self.el_client,
                &self.capture_note,
                &self.injected,
                &self.request_body,
                &self.response_body,
                &f.rpc_id,
                &f.error_message,
                &f.problem_type,
                &f.block_hash,
                &f.parent_hash,
                &f.payload_status,
                &f.latest_valid_hash,
                &f.validation_error,
                &f.payload_id,
                &f.blobs_missing,
                &f.verdict,
                &f.verify_check,
                &f.verify_detail,
            ]
            .into_iter()
            .map(text)
            .sum::<usize>()
    }
}

/// A body for a record: UTF-8 text as it is, anything else as 0x-hex, cut at `limit` bytes
/// with a note of what was left out.
pub(crate) fn body_text(body: &[u8], limit: usize) -> String {
    let cut = &body[..body.len().min(limit)];
    let mut text = match std::str::from_utf8(cut) {
        Ok(t) => t.to_string(),
        // A cut may split a UTF-8 character: keep the valid prefix when the body is text.
        Err(e) if e.error_len().is_none() && std::str::from_utf8(body).is_ok() => {
            String::from_utf8_lossy(&cut[..e.valid_up_to()]).into_owned()
        }
        Err(_) => const_hex::encode_prefixed(cut),
    };
    if body.len() > cut.len() {
        text.push_str(&format!("…(+{} bytes)", body.len() - cut.len()));
    }
    text
}
