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

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use hyper::service::service_fn;
    use serde_json::{Value, json};
    use tokio::{
        io::{AsyncReadExt, AsyncWriteExt},
        net::{TcpListener, TcpStream},
    };
    use tokio_tungstenite::client_async;

    use super::*;
    use crate::testing::exchange;

    type Client = WebSocketStream<TcpStream>;

    /// Serves `accept` on an ephemeral port.
    async fn server(hub: Arc<Hub>) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let hub = hub.clone();
                let service = service_fn(move |request| {
                    std::future::ready(Ok::<_, std::convert::Infallible>(accept(
                        request,
                        hub.clone(),
                    )))
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades(),
                );
            }
        });
        addr
    }

    async fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect(addr).await.unwrap();
        let url = format!("ws://{addr}/_snooper/control");
        client_async(url, stream).await.unwrap().0
    }

    async fn ask(client: &mut Client, request: Value) -> Value {
        client
            .send(Message::text(request.to_string()))
            .await
            .unwrap();
        match client.next().await {
            Some(Ok(Message::Text(text))) => serde_json::from_str(text.as_str()).unwrap(),
            other => panic!("no answer: {other:?}"),
        }
    }

    /// True when the server ends the connection (a close frame, an error or the end).
    async fn closed(client: &mut Client) -> bool {
        let next = tokio::time::timeout(Duration::from_secs(10), client.next()).await;
        matches!(next, Ok(None | Some(Err(_)) | Some(Ok(Message::Close(_)))))
    }

    #[tokio::test]
    async fn unknown_types_and_methods_get_errors_and_the_connection_goes_on() {
        let hub = Arc::new(Hub::default());
        let mut client = connect(server(hub.clone()).await).await;
        let register = |reqid: u64, kind: &str| json!({"reqid": reqid, "method": "register_module", "data": {"type": kind, "name": "t"}});
        let answer = ask(&mut client, register(1, "counter")).await;
        assert_eq!(answer["rspid"], 1);
        assert_eq!(answer["error"], "Unknown module type: counter");
        let answer = ask(&mut client, json!({"reqid": 2, "method": "subscribe"})).await;
        assert_eq!(answer["error"], "Unknown method: subscribe");
        let answer = ask(&mut client, register(3, "request_counter")).await;
        assert_eq!(
            answer["data"],
            json!({"success": true, "module_id": 1, "message": "Module request_counter registered successfully"})
        );
        assert_eq!(hub.len(), 1);
        let answer = ask(
            &mut client,
            json!({"reqid": 4, "method": "unregister_module", "data": 1}),
        )
        .await;
        assert_eq!(
            answer["data"],
            json!({"message": "Module unregistered successfully", "success": true})
        );
        assert!(hub.is_empty());
    }

    #[tokio::test]
    async fn a_malformed_frame_ends_the_connection_and_its_modules() {
        let hub = Arc::new(Hub::default());
        let addr = server(hub.clone()).await;
        let mut client = connect(addr).await;
        let register =
            json!({"reqid": 1, "method": "register_module", "data": {"type": "request_snooper"}});
        assert_eq!(ask(&mut client, register).await["data"]["success"], true);
        client.send(Message::text("{not json")).await.unwrap();
        assert!(closed(&mut client).await);
        for _ in 0..100 {
            if hub.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(hub.is_empty(), "the connection's module is removed");
        let mut other = connect(addr).await;
        let answer = ask(&mut other, json!({"reqid": 1, "method": "x"})).await;
        assert_eq!(answer["error"], "Unknown method: x", "the server goes on");
    }

    #[tokio::test]
    async fn a_frame_announcing_2_pow_62_bytes_ends_the_connection_before_allocating() {
        let addr = server(Arc::new(Hub::default())).await;
        let mut client = connect(addr).await;
        let stream = client.get_mut();
        // FIN + binary, masked, 64-bit length 2^62, a mask, then a few bytes.
        let mut frame = vec![0x82, 0xff];
        frame.extend_from_slice(&(1u64 << 62).to_be_bytes());
        frame.extend_from_slice(&[1, 2, 3, 4, 0, 0, 0, 0]);
        stream.write_all(&frame).await.unwrap();
        let mut rest = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut rest));
        assert!(read.await.is_ok(), "the server closes the connection");
        // A message over the bound as many small frames is refused too.
        let mut client = connect(addr).await;
        let big = "x".repeat(MAX_MESSAGE + 1);
        let _ = client.send(Message::text(big)).await;
        assert!(closed(&mut client).await);
    }

    #[tokio::test]
    async fn a_client_that_never_reads_costs_drops_not_waits() {
        let hub = Arc::new(Hub::default());
        let mut client = connect(server(hub.clone()).await).await;
        let register =
            json!({"reqid": 1, "method": "register_module", "data": {"type": "request_snooper"}});
        assert_eq!(ask(&mut client, register).await["data"]["success"], true);
        // From here on the client reads nothing: its socket buffers and then its outbox
        // fill, and every further event is dropped and counted; delivering never waits.
        let mut big = exchange("{}");
        big.request = Bytes::from(vec![b' '; 1 << 20]);
        let mut n = 0;
        while hub.dropped() == 0 {
            n += 1;
            assert!(n < 10_000, "nothing dropped after {n} calls");
            hub.deliver(n, &big);
            tokio::task::yield_now().await;
        }
        let before = hub.dropped();
        for k in 0..100 {
            hub.deliver(n + k, &big);
        }
        assert_eq!(hub.dropped(), before + 100);
        drop(client);
    }

    #[tokio::test]
    async fn a_request_that_is_not_a_handshake_is_refused_as_gorilla_refuses_it() {
        let addr = server(Arc::new(Hub::default())).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let head = "GET /_snooper/control HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n";
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut answer = String::new();
        // A refusal is a few lines: read at most 64 KiB of it.
        (&mut stream)
            .take(64 << 10)
            .read_to_string(&mut answer)
            .await
            .unwrap();
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(answer.ends_with("\r\n\r\nBad Request\n"), "{answer}");
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let mut headers = HeaderMap::new();
        headers.insert(header::CONNECTION, "Upgrade".parse().unwrap());
        headers.insert(header::UPGRADE, "websocket".parse().unwrap());
        headers.insert(header::SEC_WEBSOCKET_VERSION, "13".parse().unwrap());
        assert_eq!(
            handshake_key(&Method::GET, &headers),
            Err(StatusCode::BAD_REQUEST)
        );
        headers.insert(header::SEC_WEBSOCKET_KEY, key.parse().unwrap());
        assert_eq!(
            handshake_key(&Method::POST, &headers),
            Err(StatusCode::METHOD_NOT_ALLOWED)
        );
        assert_eq!(handshake_key(&Method::GET, &headers).as_deref(), Ok(key));
    }
}
