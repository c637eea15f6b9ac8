//! JSON-RPC over WebSocket: messages relayed both ways as they are, and one record per call,
//! made when the answer with the call's id passes (the envelope is scanned, never parsed).

use std::{collections::HashMap, sync::Arc, time::Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use sszgate_engine::scan;
use sszgate_record::{Capture, Recorder};
use tokio_tungstenite::{
    WebSocketStream,
    tungstenite::{Message, protocol::Role},
};

/// A call waiting for its answer.
struct Pending {
    request: Bytes,
    method: Option<String>,
    arrived: Instant,
    arrival_unix_us: i64,
}

fn now_unix_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// Relays until either side closes. `template` carries what the upgrade request said (CL
/// client, target); each record is a copy with the call's bodies and times.
pub(crate) async fn relay(
    client: Upgraded,
    upstream: Upgraded,
    template: Capture,
    recorder: Arc<Recorder>,
) {
    let client = WebSocketStream::from_raw_socket(TokioIo::new(client), Role::Server, None).await;
    let upstream =
        WebSocketStream::from_raw_socket(TokioIo::new(upstream), Role::Client, None).await;
    let (mut to_client, mut from_client) = client.split();
    let (mut to_upstream, mut from_upstream) = upstream.split();
    let mut pending: HashMap<Vec<u8>, Pending> = HashMap::new();
    loop {
        tokio::select! {
            message = from_client.next() => {
                let Some(Ok(message)) = message else { break };
                if let Some(body) = payload(&message)
                    && let Some(envelope) = scan::envelope(&body)
                    && let Some(id) = envelope.id
                {
                    let method = envelope.method.map(str::to_string);
                    pending.insert(id.to_vec(), Pending { request: body.clone(), method, arrived: Instant::now(), arrival_unix_us: now_unix_us() });
                }
                let closing = message.is_close();
                if to_upstream.send(message).await.is_err() || closing {
                    break;
                }
            }
            message = from_upstream.next() => {
                let Some(Ok(message)) = message else { break };
                if let Some(body) = payload(&message)
                    && let Some(id) = scan::envelope(&body).and_then(|e| e.id)
                    && let Some(call) = pending.remove(id)
                {
                    let elapsed = call.arrived.elapsed().as_micros() as u64;
                    let mut capture = template.clone();
                    capture.arrival_unix_us = call.arrival_unix_us;
                    capture.method = call.method;
                    capture.status = 200;
                    capture.request = call.request;
                    capture.response = vec![body];
                    capture.upstream_ttlb_us = Some(elapsed);
                    capture.total_us = elapsed;
                    recorder.record(capture);
                }
                let closing = message.is_close();
                if to_client.send(message).await.is_err() || closing {
                    break;
                }
            }
        }
    }
    let _ = to_client.close().await;
    let _ = to_upstream.close().await;
}

/// The bytes of a data message.
fn payload(message: &Message) -> Option<Bytes> {
    match message {
        Message::Text(text) => Some(Bytes::copy_from_slice(text.as_bytes())),
        Message::Binary(bytes) => Some(bytes.clone()),
        _ => None,
    }
}
