//! `/_snooper/control`: the WebSocket upgrade (refused as gorilla refuses a bad one) and one
//! connection's life — its requests (`register_module`, `unregister_module`) answered as
//! rpc-snooper answers them, its modules' events written from its [`Outbox`], its modules
//! removed when it ends. Bounds: frames and messages of at most [`MAX_MESSAGE`] bytes (a
//! larger announced length ends the connection before anything is allocated),
//! [`MAX_MODULES`] modules per connection, and a write that does not finish within
//! [`WRITE_TIMEOUT`] ends the connection (a client that never reads).
//!
//! Not here: what events are sent (`hub`), their JSON (`protocol`).

use std::{sync::Arc, time::Duration};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use sszgate_gateway::FrontBody;
use tokio_tungstenite::{
    WebSocketStream,
    tungstenite::{
        Message, handshake::derive_accept_key, protocol::Role, protocol::WebSocketConfig,
    },
};

use super::{
    filter::Filters,
    hub::{Frame, Hub, Kind, Outbox, OutboxReceiver},
    protocol::{Envelope, Incoming as ClientFrame, Registered, Registration, Unregistered, now_ns},
};

/// The largest frame or message a client may send.
pub const MAX_MESSAGE: usize = 1 << 20;
/// Modules one connection may hold at once.
pub const MAX_MODULES: usize = 64;
/// How long one frame may take to write before the connection is ended.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// The module types rpc-snooper knows.
const TYPES: &[&str] = &[
    "request_snooper",
    "response_snooper",
    "request_counter",
    "response_tracer",
];

/// Answers a request for `/_snooper/control`: the upgrade (and the connection served on its
/// own task), or gorilla's refusal of a request that is not a WebSocket handshake.
pub fn accept(mut request: Request<Incoming>, hub: Arc<Hub>) -> Response<FrontBody> {
    let key = match handshake_key(request.method(), request.headers()) {
        Ok(key) => key,
        Err(status) => return refusal(status),
    };
    let upgrade = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let socket =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config))
                .await;
        serve(socket, hub).await;
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(header::UPGRADE, "websocket")
        .header(header::CONNECTION, "Upgrade")
        .header(
            header::SEC_WEBSOCKET_ACCEPT,
            derive_accept_key(key.as_bytes()),
        )
        .body(FrontBody::new(Bytes::new()))
        .expect("a valid response")
}

/// The client's `Sec-WebSocket-Key`, or the status gorilla refuses the request with.
fn handshake_key(method: &Method, headers: &HeaderMap) -> Result<String, StatusCode> {
    let has_token = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str()
                .unwrap_or("")
                .split(',')
                .any(|t| t.trim().eq_ignore_ascii_case(token))
        })
    };
    if !has_token(header::CONNECTION, "upgrade") || !has_token(header::UPGRADE, "websocket") {
        return Err(StatusCode::BAD_REQUEST);
    }
    if method != Method::GET {
        return Err(StatusCode::METHOD_NOT_ALLOWED);
    }
    if !has_token(header::SEC_WEBSOCKET_VERSION, "13") {
        return Err(StatusCode::BAD_REQUEST);
    }
    match headers.get(header::SEC_WEBSOCKET_KEY).map(|v| v.to_str()) {
        Some(Ok(key)) if !key.trim().is_empty() => Ok(key.trim().to_string()),
        _ => Err(StatusCode::BAD_REQUEST),
    }
}

/// gorilla's refusal: the status text, `Sec-Websocket-Version: 13`.
fn refusal(status: StatusCode) -> Response<FrontBody> {
    let text = format!("{}\n", status.canonical_reason().unwrap_or(""));
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header(header::SEC_WEBSOCKET_VERSION, "13")
        .body(FrontBody::new(Bytes::from(text)))
        .expect("a valid response")
}

/// Serves one connection until either side ends it, then removes its modules.
async fn serve<S>(socket: WebSocketStream<S>, hub: Arc<Hub>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    tracing::info!("WebSocket connection established");
    let (sink, stream) = socket.split();
    let (outbox, receiver) = Outbox::new();
    let mut connection = Connection {
        hub,
        outbox,
        modules: Vec::new(),
    };
    tokio::select! {
        () = connection.read(stream) => {}
        () = write(sink, receiver) => {}
    }
    for id in &connection.modules {
        connection.hub.unregister(*id);
    }
    tracing::info!(
        dropped = connection.outbox.dropped(),
        "WebSocket connection closed"
    );
}

/// Writes queued frames until the queue ends, a write fails or one takes too long.
async fn write<K>(mut sink: K, mut frames: OutboxReceiver)
where
    K: futures_util::Sink<Message> + Unpin,
{
    while let Some(frame) = frames.next().await {
        let sent = tokio::time::timeout(WRITE_TIMEOUT, async {
            match frame {
                Frame::Text(text) => sink.send(Message::text(text)).await,
                Frame::WithBinary(text, body) => {
                    sink.feed(Message::text(text)).await?;
                    sink.send(Message::Binary(body)).await
                }
            }
        })
        .await;
        if !matches!(sent, Ok(Ok(()))) {
            return;
        }
    }
}

/// One connection's state.
struct Connection {
    hub: Arc<Hub>,
    outbox: Outbox,
    modules: Vec<u64>,
}

impl Connection {
    /// Reads the client's frames until it closes, errs or sends an unparsable text frame.
    async fn read<R, E>(&mut self, mut stream: R)
    where
        R: futures_util::Stream<Item = Result<Message, E>> + Unpin,
        E: std::fmt::Display,
    {
        let mut awaiting_binary: Option<ClientFrame> = None;
        while let Some(message) = stream.next().await {
            let message = match message {
                Ok(message) => message,
                Err(e) => {
                    tracing::debug!(error = %e, "WebSocket read error");
                    return;
                }
            };
            match message {
                Message::Text(text) => {
                    let Ok(frame) = serde_json::from_str::<ClientFrame>(text.as_str()) else {
                        tracing::debug!("Failed to unmarshal JSON message");
                        return;
                    };
                    if frame.binary {
                        awaiting_binary = Some(frame);
                    } else {
                        self.handle(frame);
                    }
                }
                Message::Binary(_) => match awaiting_binary.take() {
                    Some(frame) => self.handle(frame),
                    None => tracing::warn!("Received unexpected binary message"),
                },
                Message::Close(_) => return,
                _ => {}
            }
        }
    }

    /// Answers one request (answers to server requests, which sszgate never makes, are
    /// ignored).
    fn handle(&mut self, mut frame: ClientFrame) {
        if frame.rspid != 0 {
            return;
        }
        match frame.method.as_str() {
            "register_module" => match self.register(std::mem::take(&mut frame.data)) {
                Ok(answer) => self.answer(&frame, Some(answer), None),
                Err(e) => self.answer::<()>(&frame, None, Some(e)),
            },
            "unregister_module" => {
                match serde_json::from_value::<u64>(std::mem::take(&mut frame.data)) {
                    Ok(id) => {
                        self.hub.unregister(id);
                        self.modules.retain(|m| *m != id);
                        tracing::info!(module_id = id, "Module unregistered");
                        let answer = Unregistered {
                            message: "Module unregistered successfully",
                            success: true,
                        };
                        self.answer(&frame, Some(answer), None);
                    }
                    Err(e) => {
                        self.answer::<()>(&frame, None, Some(format!("Invalid module ID: {e}")))
                    }
                }
            }
            other => {
                let error = format!("Unknown method: {other}");
                self.answer::<()>(&frame, None, Some(error));
            }
        }
    }

    /// Registers the module `data` describes, in rpc-snooper's order of checks.
    fn register(&mut self, data: serde_json::Value) -> Result<Registered, String> {
        let request: Registration = serde_json::from_value(data)
            .map_err(|e| format!("Invalid registration request: {e}"))?;
        if !TYPES.contains(&request.kind.as_str()) {
            return Err(format!("Unknown module type: {}", request.kind));
        }
        if self.modules.len() >= MAX_MODULES {
            return Err(format!(
                "Failed to register module: this connection already holds {MAX_MODULES} modules"
            ));
        }
        let config = request.config.unwrap_or_default();
        let filters = Filters::read(&config)?;
        let kind = Kind::read(&request.kind, &config)?;
        let id = self.hub.register(kind, filters, self.outbox.clone());
        self.modules.push(id);
        tracing::info!(
            module_id = id,
            module_type = %request.kind,
            module_name = %request.name,
            "Module registered"
        );
        Ok(Registered {
            success: true,
            module_id: id,
            message: format!("Module {} registered successfully", request.kind),
        })
    }

    fn answer<D: Serialize>(&self, frame: &ClientFrame, data: Option<D>, error: Option<String>) {
        let text = Envelope {
            reqid: 0,
            rspid: frame.reqid,
            modid: 0,
            method: &frame.method,
            data,
            error,
            time: now_ns(),
            binary: false,
        }
        .text();
        self.outbox.offer(Frame::Text(text));
    }
}
