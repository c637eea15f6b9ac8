//! Attacks on the rpc-snooper surfaces of `sszgate snooper` (target (e)): the WebSocket
//! module protocol at `/_snooper/control` — an unknown module type, malformed frames, a
//! frame declaring 2^62 bytes, a module client that never reads while calls flow — and the
//! management API's basic auth on `--api-port` (wrong and missing credentials). Each is
//! refused or bounded; the row's invariants (alive, a normal call answered, fds, RSS) say
//! whether the relay was unaffected.

use std::{net::SocketAddr, time::Duration};

use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::{net::TcpStream, time::timeout};
use tokio_tungstenite::{WebSocketStream, client_async, tungstenite::Message};

use super::{
    Ctx, Outcome,
    wire::{self, Tally, size},
    ws::{self, FIN, TEXT},
};

/// The `user:password` the target's `--api-auth` accepts.
pub(crate) const API_USER: &str = "bench:s3cret";
/// The module protocol's path.
const CONTROL: &str = "/_snooper/control";
/// Concurrent callers while a module client reads nothing.
const CALLERS: usize = 8;
/// Hex digits of padding in each of those calls' bodies (256 KiB).
const CALL_PADDING: usize = 256 << 10;

type Socket = WebSocketStream<TcpStream>;

/// A module-protocol client on the target's proxy port (its API is open there, as in
/// rpc-snooper).
async fn control(addr: SocketAddr) -> Result<Socket, String> {
    let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let url = format!("ws://{addr}{CONTROL}");
    let (socket, _) = client_async(url, stream)
        .await
        .map_err(|e| format!("upgrade failed: {e}"))?;
    Ok(socket)
}

/// Sends `request` and reads the next text frame: its `error`, or its `data` in short.
async fn ask(socket: &mut Socket, request: Value, wait: Duration) -> String {
    if let Err(e) = socket.send(Message::text(request.to_string())).await {
        return format!("send failed: {e}");
    }
    loop {
        match timeout(wait, socket.next()).await {
            Err(_) => return "no answer".into(),
            Ok(None) => return "closed".into(),
            Ok(Some(Err(e))) => return format!("read failed: {e}"),
            Ok(Some(Ok(Message::Text(text)))) => {
                let answer: Value = serde_json::from_str(&text).unwrap_or_default();
                return match answer.get("error") {
                    Some(error) => format!("error {error}"),
                    None => format!("ok {}", answer["data"]),
                };
            }
            Ok(Some(Ok(_))) => {}
        }
    }
}

fn register(reqid: u64, kind: &str) -> Value {
    json!({"reqid": reqid, "method": "register_module", "data": {"type": kind, "name": "attack"}})
}

/// An unknown module type and an unknown method are answered with errors, and the
/// connection goes on to register a known type.
pub(crate) async fn unknown_module(ctx: Ctx) -> Outcome {
    let sent = "register `counter`, method `no_such_method`, register `request_counter`";
    let mut socket = match control(ctx.addr).await {
        Ok(socket) => socket,
        Err(why) => return Outcome::text(sent.into(), why),
    };
    let mut answers = Vec::new();
    for request in [
        register(1, "counter"),
        json!({"reqid": 2, "method": "no_such_method"}),
        register(3, "request_counter"),
    ] {
        answers.push(ask(&mut socket, request, ctx.scale.answer_wait).await);
    }
    Outcome::text(sent.into(), answers.join("; "))
}

/// One connection each: unparsable JSON, a text frame that is not UTF-8, a reserved opcode,
/// a reserved bit set, an unmasked frame; each should end its connection.
pub(crate) async fn malformed_frames(ctx: Ctx) -> Outcome {
    let unmasked = {
        let payload = br#"{"reqid":1,"method":"register_module"}"#;
        let mut f = vec![FIN | TEXT, payload.len() as u8];
        f.extend_from_slice(payload);
        f
    };
    let cases: [(&str, Vec<u8>); 5] = [
        ("unparsable JSON", ws::frame(FIN | TEXT, b"{not json")),
        ("text not UTF-8", ws::frame(FIN | TEXT, &[0xff, 0xfe, 0x80])),
        ("opcode 0x3", ws::frame(FIN | 0x3, b"{}")),
        ("RSV1 set", ws::frame(FIN | 0x40 | TEXT, b"{}")),
        ("unmasked", unmasked),
    ];
    let mut answers = Vec::new();
    for (name, bytes) in cases {
        let outcome =
            ws::attack_at(ctx.clone(), CONTROL, std::iter::once(bytes), name.into()).await;
        answers.push(format!("{name}: {}", outcome.answered));
    }
    Outcome::text(
        "5 connections, one malformed frame each".into(),
        answers.join("; "),
    )
}

/// A frame declaring 2^62 bytes to the module protocol.
pub(crate) async fn huge_frame(ctx: Ctx) -> Outcome {
    ws::huge_frame_at(ctx, CONTROL).await
}

/// A module client registers the request and response snoopers, then never reads, while
/// `flood` calls of 256 KiB each flow through the relay from 8 callers.
pub(crate) async fn never_reads(ctx: Ctx) -> Outcome {
    let calls = ctx.scale.flood;
    let sent = format!(
        "a module client that never reads; {calls} calls of {} through the relay",
        size(CALL_PADDING as u64)
    );
    let mut socket = match control(ctx.addr).await {
        Ok(socket) => socket,
        Err(why) => return Outcome::text(sent, why),
    };
    for (i, kind) in ["request_snooper", "response_snooper"].iter().enumerate() {
        let answer = ask(
            &mut socket,
            register(i as u64 + 1, kind),
            ctx.scale.answer_wait,
        )
        .await;
        if !answer.starts_with("ok") {
            return Outcome::text(sent, format!("registering {kind}: {answer}"));
        }
    }
    let request = call_with_padding(&ctx.token);
    let callers: Vec<_> = (0..CALLERS)
        .map(|i| {
            let (request, ctx) = (request.clone(), ctx.clone());
            let share = calls / CALLERS + usize::from(i < calls % CALLERS);
            tokio::spawn(async move {
                let mut tally = Tally::default();
                for _ in 0..share {
                    let answer =
                        wire::exchange(ctx.addr, request.clone(), ctx.scale.answer_wait).await;
                    tally.add(answer.statuses.first().map_or("no status", |s| s.as_str()));
                }
                tally
            })
        })
        .collect();
    let mut tally = Tally::default();
    for caller in callers {
        if let Ok(part) = caller.await {
            tally.merge(part);
        }
    }
    drop(socket);
    Outcome::with_tally(sent, tally)
}

/// An `engine_newPayloadV4`-shaped call with a valid JWT and a 0x-hex string of
/// [`CALL_PADDING`] digits, on a connection the client closes after the answer.
fn call_with_padding(token: &str) -> Vec<u8> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"engine_newPayloadV4","params":["0x{}"]}}"#,
        "ab".repeat(CALL_PADDING / 2)
    );
    let mut request = wire::head(
        "POST / HTTP/1.1",
        &[
            "Content-Type: application/json".into(),
            format!("Authorization: Bearer {token}"),
            format!("Content-Length: {}", body.len()),
            "Connection: close".into(),
        ],
    );
    request.extend_from_slice(body.as_bytes());
    request
}

/// The management API on `--api-port` with wrong, unknown and missing credentials: status,
/// stop (which would stop the relay: the row's normal call after shows it did not) and the
/// module protocol's upgrade.
pub(crate) async fn wrong_auth(ctx: Ctx) -> Outcome {
    let Some(api) = ctx.api else {
        return Outcome::text("nothing".into(), "the target has no API port".into());
    };
    let basic = |credentials: &str| {
        let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
        format!("Authorization: Basic {encoded}")
    };
    let upgrade = [
        "Upgrade: websocket".to_string(),
        "Connection: Upgrade".into(),
        "Sec-WebSocket-Key: c3N6Z2F0ZS1hdHRhY2stMQ==".into(),
        "Sec-WebSocket-Version: 13".into(),
    ];
    let tries: Vec<(&str, Vec<String>)> = vec![
        ("GET /_snooper/status HTTP/1.1", vec![basic("bench:wrong")]),
        ("POST /_snooper/stop HTTP/1.1", vec![basic("nobody:s3cret")]),
        ("POST /_snooper/stop HTTP/1.1", vec![]),
        (
            "POST /_snooper/stop HTTP/1.1",
            vec!["Authorization: Basic !!!".into()],
        ),
        (
            "GET /_snooper/control HTTP/1.1",
            [vec![basic("bench:")], upgrade.to_vec()].concat(),
        ),
    ];
    let sent = format!(
        "{} API calls with wrong, unknown, missing or broken basic auth",
        tries.len()
    );
    let mut tally = Tally::default();
    for (line, mut headers) in tries {
        headers.push("Connection: close".into());
        let answer = wire::exchange(api, wire::head(line, &headers), ctx.scale.answer_wait).await;
        tally.add(answer.statuses.first().map_or("no status", |s| s.as_str()));
    }
    Outcome::with_tally(sent, tally)
}
