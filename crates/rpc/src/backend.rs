//! What the JSON-RPC server asks for answers: an [`Answerer`] (the local [`Verifier`], which
//! fetches and checks standard RPC data, or a client of a proof prover, which checks one SSZ
//! proof per request), and extra POST [`Route`]s mounted beside JSON-RPC (the prover endpoint).
//!
//! Not here: HTTP, batches and metrics (`server`), or any check (`verifier`, the proof crate).

use std::{future::Future, pin::Pin};

use serde_json::Value;

use crate::{AnchorSource, error::RpcError, verifier::Verifier};

/// A boxed future, for the object-safe [`Route`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Answers verified methods; the server handles everything else (batches, pass-through,
/// metrics).
pub trait Answerer: Send + Sync + 'static {
    /// The verified answer of `method(params)`; [`RpcError::Unverifiable`] for a method it
    /// does not verify (the server may then pass it through if allowed).
    fn call<'a>(
        &'a self,
        method: &'a str,
        params: &'a [Value],
    ) -> impl Future<Output = Result<Value, RpcError>> + Send + 'a;

    /// The methods it verifies (metrics label others `other`).
    fn methods(&self) -> &[&'static str];

    /// Prometheus text about its own state (a light client's slots …), appended to `/metrics`.
    fn gauges(&self) -> String {
        String::new()
    }
}

impl<A: AnchorSource> Answerer for Verifier<A> {
    fn call<'a>(
        &'a self,
        method: &'a str,
        params: &'a [Value],
    ) -> impl Future<Output = Result<Value, RpcError>> + Send + 'a {
        Verifier::call(self, method, params)
    }

    fn methods(&self) -> &[&'static str] {
        crate::verifier::METHODS
    }

    fn gauges(&self) -> String {
        self.anchors()
            .status()
            .map(|s| crate::server::light_gauges(&s))
            .unwrap_or_default()
    }
}

/// The answer of a [`Route`]: status, content type and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteAnswer {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl RouteAnswer {
    /// A JSON `{"error": message}` with `status`.
    pub fn error(status: u16, message: &str) -> RouteAnswer {
        RouteAnswer {
            status,
            content_type: "application/json",
            body: serde_json::json!({ "error": message })
                .to_string()
                .into_bytes(),
        }
    }
}

/// A POST endpoint mounted at its own path beside JSON-RPC; it gets the request body (bounded
/// by the server's request limit) and answers it whole.
pub trait Route: Send + Sync + 'static {
    /// The answer to a POSTed `body`.
    fn answer(&self, body: bytes::Bytes) -> BoxFuture<'_, RouteAnswer>;
}
