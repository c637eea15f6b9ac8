//! The counting fake EL: every request and every body byte it receives is counted (WebSocket
//! message bytes too), so a row can say what an attack pushed through the proxy. It answers a
//! JSON-RPC call with a small valid result and accepts WebSocket upgrades, echoing messages.
//!
//! The campaign's own recovery probe is told apart by its id and not counted, so the counts
//! are the attack's alone.

use std::{
    convert::Infallible,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, service::service_fn};
use hyper_util::{
    rt::{TokioExecutor, TokioIo},
    server::conn::auto,
};
use tokio::net::TcpListener;
use tokio_tungstenite::{
    WebSocketStream,
    tungstenite::{handshake::derive_accept_key, protocol::Role},
};

/// The JSON-RPC id of the recovery probe; requests carrying it are not counted.
pub(crate) const PROBE_ID: &str = "sszgate-attack-probe";
/// The method of a request an attack hides inside another; the EL counts each one it sees.
pub(crate) const HIDDEN_METHOD: &str = "engine_smuggledV1";

/// How much of a body is searched for the markers above (they sit near its start).
const MARKER_WINDOW: usize = 4096;

/// What the EL has received so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// Requests (WebSocket upgrades included), the probe's left out.
    pub(crate) requests: u64,
    /// Body bytes and WebSocket message bytes, the probe's left out.
    pub(crate) bytes: u64,
    /// Requests carrying [`HIDDEN_METHOD`].
    pub(crate) hidden: u64,
}

impl std::ops::Sub for Counts {
    type Output = Counts;
    fn sub(self, earlier: Counts) -> Counts {
        Counts {
            requests: self.requests.saturating_sub(earlier.requests),
            bytes: self.bytes.saturating_sub(earlier.bytes),
            hidden: self.hidden.saturating_sub(earlier.hidden),
        }
    }
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    bytes: AtomicU64,
    hidden: AtomicU64,
}

/// A running counting EL.
pub(crate) struct CountingEl {
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    counters: Arc<Counters>,
}

impl CountingEl {
    /// Starts one on an ephemeral loopback port; it runs until the runtime stops.
    pub(crate) async fn start() -> CountingEl {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding the counting EL");
        let addr = listener.local_addr().expect("local addr");
        let counters = Arc::new(Counters::default());
        let shared = counters.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let counters = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |r| answer(r, counters.clone()));
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection_with_upgrades(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        CountingEl { addr, counters }
    }

    /// The counts now.
    pub(crate) fn counts(&self) -> Counts {
        Counts {
            requests: self.counters.requests.load(Ordering::SeqCst),
            bytes: self.counters.bytes.load(Ordering::SeqCst),
            hidden: self.counters.hidden.load(Ordering::SeqCst),
        }
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

async fn answer(
    request: Request<Incoming>,
    counters: Arc<Counters>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.headers().contains_key(header::SEC_WEBSOCKET_KEY) {
        return Ok(accept_websocket(request, counters));
    }
    counters.requests.fetch_add(1, Ordering::SeqCst);
    let mut body = request.into_body();
    let (mut seen, mut start) = (0u64, Vec::new());
    // Counted frame by frame: a body cut off half-way still shows what crossed.
    while let Some(Ok(frame)) = body.frame().await {
        if let Some(data) = frame.data_ref() {
            seen += data.len() as u64;
            counters
                .bytes
                .fetch_add(data.len() as u64, Ordering::SeqCst);
            let room = MARKER_WINDOW.saturating_sub(start.len()).min(data.len());
            start.extend_from_slice(&data[..room]);
        }
    }
    if contains(&start, PROBE_ID) {
        counters.requests.fetch_sub(1, Ordering::SeqCst);
        counters.bytes.fetch_sub(seen, Ordering::SeqCst);
    }
    if contains(&start, HIDDEN_METHOD) {
        counters.hidden.fetch_add(1, Ordering::SeqCst);
    }
    let result: &str = if contains(&start, "engine_newPayload") {
        r#"{"status":"VALID","latestValidHash":null,"validationError":null}"#
    } else {
        r#"["engine_newPayloadV4","engine_forkchoiceUpdatedV3","engine_getPayloadV4"]"#
    };
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
    Ok(Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("a response"))
}

/// Answers an upgrade with 101 and echoes every data message on the upgraded connection.
fn accept_websocket(
    mut request: Request<Incoming>,
    counters: Arc<Counters>,
) -> Response<Full<Bytes>> {
    counters.requests.fetch_add(1, Ordering::SeqCst);
    let key = request.headers()[header::SEC_WEBSOCKET_KEY]
        .as_bytes()
        .to_vec();
    let upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let mut ws =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        while let Some(Ok(message)) = ws.next().await {
            counters
                .bytes
                .fetch_add(message.len() as u64, Ordering::SeqCst);
            if (message.is_text() || message.is_binary()) && ws.send(message).await.is_err() {
                return;
            }
        }
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::UPGRADE, "websocket")
        .header(header::CONNECTION, "Upgrade")
        .header(header::SEC_WEBSOCKET_ACCEPT, derive_accept_key(&key))
        .body(Full::new(Bytes::new()))
        .expect("a response")
}
