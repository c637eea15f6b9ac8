//! A front: something that stands before the relay on its port (the rpc-snooper-compatible
//! front of `sszgate-snooper`, say). It may answer a request itself before the relay sees it
//! ([`Front::intercept`]: its own endpoints, or a refusal of its own), and it sees every
//! relayed call once its answer has ended ([`Front::observe`], called on the forward path's
//! task: it must only hand the [`Exchange`] on, never wait).
//!
//! Not here: what a front does with what it sees (its own crate).

use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;

/// The body of an answer a front gives itself.
pub type FrontBody = Full<Bytes>;

/// A front's part in each call on the relay's port.
pub trait Front: Send + Sync + 'static {
    /// Answers `request` itself (`Ok`), or hands it back to be relayed (`Err`).
    // The request goes back by value on every relayed call: boxing it would allocate per call.
    #[allow(clippy::result_large_err)]
    fn intercept(
        &self,
        request: Request<Incoming>,
    ) -> Result<Response<FrontBody>, Request<Incoming>>;

    /// True when [`Front::intercept`] would hand a request with this head back to be
    /// relayed. The spliced relay asks this before it takes a call; a front that cannot tell
    /// from the head says false, and its calls go the general way.
    fn passes(&self, _head: &Request<()>) -> bool {
        false
    }

    /// Sees one relayed call after its answer ended (or failed: an upstream that could not
    /// be reached or did not answer gives an exchange with `failure` and no response);
    /// must not block.
    fn observe(&self, exchange: Exchange);
}

/// One relayed call as a front sees it: bodies are refcounted handles of what was relayed.
#[derive(Clone, Debug)]
pub struct Exchange {
    /// The HTTP method.
    pub method: Method,
    /// Path and query, as sent.
    pub target: String,
    /// The request's `Content-Type`.
    pub request_content_type: Option<String>,
    /// The request body as relayed.
    pub request: Bytes,
    /// The answer's HTTP status.
    pub status: u16,
    /// The answer's `Content-Type`.
    pub response_content_type: Option<String>,
    /// The answer's `Content-Encoding`.
    pub response_encoding: Option<String>,
    /// The answer's frames as relayed (empty when it was too large to keep).
    pub response: Vec<Bytes>,
    /// The answer's size in bytes, kept or not.
    pub response_len: u64,
    /// From the request head to the answer's last byte.
    pub duration: Duration,
    /// Why the answer ended early, when it did.
    pub failure: Option<String>,
}

/// What the relay knows of a call's head when the answer starts: the part of an
/// [`Exchange`] that is not in the record's capture.
#[derive(Clone, Debug)]
pub(crate) struct ExchangeHead {
    pub(crate) method: Method,
    pub(crate) request_content_type: Option<String>,
    pub(crate) response_content_type: Option<String>,
}
