//! The HTTP side of sszgate: the snooping Engine API relay, its upstream client, and the
//! control endpoints (`/metrics`, `/_sszgate/status`).
//!
//! # Hot-path rules
//! 1. Never parse what is only relayed. A JSON-RPC request is checked with a scanner that reads
//!    the envelope (`method`, `id`) and skips `params`; a REST request by its path and headers.
//!    Responses are streamed back frame by frame, unparsed.
//! 2. Never wait for recording. The response body is wrapped in a tap that keeps refcounted
//!    handles (`bytes::Bytes`) of the frames it forwards; when the body ends (or the CL goes
//!    away) the tap hands one capture to the recorder's bounded queue with `try_send`. On
//!    Linux a plain call's answer does not even enter the process while it moves: the spliced
//!    relay (`splice`) moves it socket to socket, and its pages, referenced again in pipes,
//!    are copied into the record on another thread once the answer has ended; a copy that
//!    cannot go on is given up (the record says so), never waited for.
//! 3. One pooled upstream client for every call (and, for the spliced relay, one pool of its
//!    own connections); no per-call client.
//!
//! Two opt-in exceptions to rule 1, where parsing is the point: the bridge (`bridge`, when
//! the two sides speak different transports) and `--verify-enforce` (`enforce`, which decodes
//! newPayload requests to refuse a bad payload before the EL sees it). Verification itself
//! (`--verify`) runs on the recorder's thread.
//!
//! Listeners never die silently: `sszgate_serve::Acceptor` backs off from errors a listener can go on from
//! (out of file descriptors, say) and ends the serve loop on any other, for the process to exit.
//!
//! Call lifecycle: accept → admit (`call`: from the head, a `Call` with its transport,
//! route, body limit and, under `--auth verify`, its JWT checked; `classify`: from the body,
//! read once and bounded, its JSON-RPC envelope scanned) → dispatch (relay with the pooled
//! client, the bridge either way, or WebSocket) → respond (streamed through the tap) → record
//! (once, failures included; the record is made of the `Call` in one place). The transport is
//! decided in one function (`call::transport_of`), a JWT checked in one (`jwt::authenticate`),
//! and a refusal answered in one (`proxy::refuse`). Errors the gateway answers itself (bad
//! envelope, body too large, unknown path, upstream refused or timed out) are shaped for the
//! caller's transport: a JSON-RPC error object, or problem+json for REST.
//!
//! Not here: what the messages mean (`sszgate-engine`), what is recorded and where
//! (`sszgate-record`).

mod bridge;
mod call;
mod classify;
mod control;
mod el_name;
mod enforce;
mod events;
mod faults;
mod front;
mod identify;
pub mod inject;
mod jwt;
mod proxy;
mod sizes;
#[cfg(target_os = "linux")]
mod splice;
#[cfg(not(target_os = "linux"))]
mod splice {
    //! The spliced relay needs Linux's `splice(2)`: elsewhere every call takes the general path.
    pub(crate) enum Spliced {}
    impl Spliced {
        pub(crate) fn for_config(_: &crate::ProxyConfig) -> Option<Spliced> {
            None
        }
    }
    pub(crate) async fn serve_connection(
        stream: tokio::net::TcpStream,
        conn: crate::proxy::Connection,
    ) {
        conn.serve_http(stream).await;
    }
}
mod tap;
mod upstream;
mod ws;

pub use bridge::{TransportChoice, UpstreamTransport};
pub use control::serve_control;
pub use el_name::keep_el_named;
pub use front::{Exchange, Front, FrontBody};
pub use inject::ControlPoint;
pub use proxy::{DEFAULT_MAX_ANSWER_BYTES, Limits, ProxyConfig, serve};
pub use sizes::{json_call_limit, rest_body_limit};
pub use sszgate_client::JwtSecret;
pub use upstream::{Upstream, UpstreamHealth};

/// Errors that stop the gateway from starting (not per-call errors, which are answered).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The upstream URL is not usable.
    #[error("invalid upstream URL {url:?}: {detail}")]
    Upstream {
        /// The URL given.
        url: String,
        /// What is wrong.
        detail: String,
    },
    /// A socket error.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}
