//! The registered modules and what each is sent for a call: rpc-snooper's four module types
//! (`request_snooper`, `response_snooper`, `request_counter`, `response_tracer`) fed from
//! the front's [`Exchange`]s. Each connection has an [`Outbox`] bounded in frames and bytes;
//! an event that does not fit is dropped and counted, never waited for.
//!
//! Not here: reading frames and registering (`socket`), the frames' JSON (`protocol`).

use std::sync::{
    Arc, RwLock,
    atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering},
};

use bytes::Bytes;
use serde::Serialize;
use sszgate_gateway::Exchange;
use tokio::sync::mpsc;

use super::{
    filter::Filters,
    protocol::{CounterEvent, Envelope, HookEvent, TracerEvent, now_ns},
};
use crate::jq::Query;

/// Frames waiting for one connection at most.
pub const OUTBOX_FRAMES: usize = 256;
/// Bytes waiting for one connection at most.
pub const OUTBOX_BYTES: usize = 64 << 20;

/// What the writer of a connection sends.
#[derive(Debug)]
pub enum Frame {
    /// A text frame.
    Text(String),
    /// A text frame and the binary frame that belongs to it.
    WithBinary(String, Bytes),
}

impl Frame {
    fn len(&self) -> usize {
        match self {
            Frame::Text(text) => text.len(),
            Frame::WithBinary(text, body) => text.len() + body.len(),
        }
    }
}

/// One connection's queue to its writer.
#[derive(Clone, Debug)]
pub struct Outbox {
    frames: mpsc::Sender<Frame>,
    queued: Arc<AtomicUsize>,
    dropped: Arc<AtomicU64>,
}

impl Outbox {
    /// A queue, and its receiving end for the writer.
    pub fn new() -> (Outbox, OutboxReceiver) {
        let (frames, receiver) = mpsc::channel(OUTBOX_FRAMES);
        let queued = Arc::new(AtomicUsize::new(0));
        let outbox = Outbox {
            frames,
            queued: queued.clone(),
            dropped: Arc::new(AtomicU64::new(0)),
        };
        (outbox, OutboxReceiver { receiver, queued })
    }

    /// Queues `frame`, or drops and counts it when the queue is full; true when queued.
    pub fn offer(&self, frame: Frame) -> bool {
        let len = frame.len();
        let queued = self.queued.fetch_add(len, Ordering::AcqRel);
        if queued + len > OUTBOX_BYTES || self.frames.try_send(frame).is_err() {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Frames dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The writer's end of an [`Outbox`].
#[derive(Debug)]
pub struct OutboxReceiver {
    receiver: mpsc::Receiver<Frame>,
    queued: Arc<AtomicUsize>,
}

impl OutboxReceiver {
    /// The next frame; `None` when every [`Outbox`] is gone.
    pub async fn next(&mut self) -> Option<Frame> {
        let frame = self.receiver.recv().await?;
        self.queued.fetch_sub(frame.len(), Ordering::AcqRel);
        Some(frame)
    }
}

/// A module type and its options.
#[derive(Debug)]
pub enum Kind {
    /// Each request body.
    RequestSnooper,
    /// Each response body.
    ResponseSnooper,
    /// A running count of requests.
    RequestCounter,
    /// One summary per call, with optional selections from the bodies.
    ResponseTracer {
        /// `request_select`.
        request: Option<Query>,
        /// `response_select`.
        response: Option<Query>,
    },
}

impl Kind {
    /// The type named `name` configured by `config`, or rpc-snooper's error.
    pub fn read(
        name: &str,
        config: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Kind, String> {
        match name {
            "request_snooper" => Ok(Kind::RequestSnooper),
            "response_snooper" => Ok(Kind::ResponseSnooper),
            "request_counter" => Ok(Kind::RequestCounter),
            "response_tracer" => {
                let select = |key: &str| match config.get(key) {
                    Some(serde_json::Value::String(code)) if !code.is_empty() => {
                        Query::compile(code).map(Some).map_err(|e| {
                            format!("Failed to configure module: failed to parse {key} query: {e}")
                        })
                    }
                    _ => Ok(None),
                };
                Ok(Kind::ResponseTracer {
                    request: select("request_select")?,
                    response: select("response_select")?,
                })
            }
            other => Err(format!("Unknown module type: {other}")),
        }
    }
}

/// A registered module.
#[derive(Debug)]
pub struct Module {
    /// Its id (global, from 1).
    pub id: u64,
    /// Its type.
    pub kind: Kind,
    /// Its filters.
    pub filters: Filters,
    /// Its connection's queue.
    pub outbox: Outbox,
    count: AtomicI64,
}

/// All registered modules.
#[derive(Debug, Default)]
pub struct Hub {
    last_id: AtomicU64,
    modules: RwLock<Vec<Arc<Module>>>,
    dropped: AtomicU64,
}

impl Hub {
    /// Registers a module; returns its id.
    pub fn register(&self, kind: Kind, filters: Filters, outbox: Outbox) -> u64 {
        let id = self.last_id.fetch_add(1, Ordering::Relaxed) + 1;
        let module = Module {
            id,
            kind,
            filters,
            outbox,
            count: AtomicI64::new(0),
        };
        self.write().push(Arc::new(module));
        id
    }

    /// Removes module `id` (any connection's, as in rpc-snooper; none is fine).
    pub fn unregister(&self, id: u64) {
        self.write().retain(|m| m.id != id);
    }

    /// Modules registered now.
    pub fn len(&self) -> usize {
        self.modules.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// True when no module is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Events dropped so far because their connection's outbox was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Arc<Module>>> {
        self.modules.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends every module its events for call number `n`.
    pub fn deliver(&self, n: u64, exchange: &Exchange) {
        let modules = self
            .modules
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if modules.is_empty() {
            return;
        }
        let call = Call::of(n, exchange);
        for module in modules {
            let admitted = module
                .filters
                .admits(&call.method, call.request_type, &call.request);
            if admitted && !module.deliver(&call) {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// A call as modules see it: bodies as rpc-snooper hands them to modules.
struct Call<'a> {
    n: u64,
    method: String,
    request_type: &'a str,
    request: Bytes,
    response_type: &'a str,
    response: Bytes,
    status: u16,
    duration_ms: u64,
    answered: bool,
}

impl<'a> Call<'a> {
    fn of(n: u64, exchange: &'a Exchange) -> Call<'a> {
        let request_type = exchange.request_content_type.as_deref().unwrap_or("");
        let response_type = exchange.response_content_type.as_deref().unwrap_or("");
        let response = match exchange.response.as_slice() {
            [one] => one.clone(),
            many => Bytes::from(many.concat()),
        };
        Call {
            n,
            method: exchange.method.to_string(),
            request_type,
            request: module_body(exchange.request.clone(), request_type),
            response_type,
            response: module_body(response, response_type),
            status: exchange.status,
            duration_ms: u64::try_from(exchange.duration.as_millis()).unwrap_or(u64::MAX),
            answered: exchange.failure.is_none(),
        }
    }
}

/// A body as rpc-snooper gives it to modules: `application/octet-stream` as hex text.
fn module_body(body: Bytes, content_type: &str) -> Bytes {
    if content_type.contains("application/octet-stream") {
        Bytes::from(const_hex::encode(&body))
    } else {
        body
    }
}

impl Module {
    /// Queues the module's event for `call`, if it has one; false when it was dropped.
    fn deliver(&self, call: &Call<'_>) -> bool {
        match &self.kind {
            Kind::RequestSnooper => self.hook("request", call.n, call.request_type, &call.request),
            Kind::ResponseSnooper if call.answered => {
                self.hook("response", call.n, call.response_type, &call.response)
            }
            Kind::RequestCounter => {
                let count = self.count.fetch_add(1, Ordering::Relaxed) + 1;
                let event = CounterEvent {
                    module_id: self.id,
                    count,
                    request_type: &call.method,
                };
                self.outbox
                    .offer(Frame::Text(self.event("counter_event", event, false)))
            }
            Kind::ResponseTracer { request, response } if call.answered => {
                let select = |query: &Option<Query>, content_type: &str, body: &[u8]| {
                    query
                        .as_ref()
                        .filter(|_| content_type.contains("json"))
                        .and_then(|q| q.select(body))
                };
                let event = TracerEvent {
                    module_id: self.id,
                    request_id: call.n,
                    duration_ms: call.duration_ms,
                    response_size: call.response.len() as u64,
                    request_size: call.request.len() as u64,
                    status_code: call.status,
                    request_data: select(request, call.request_type, &call.request),
                    response_data: select(response, call.response_type, &call.response),
                };
                self.outbox
                    .offer(Frame::Text(self.event("tracer_event", event, false)))
            }
            Kind::ResponseSnooper | Kind::ResponseTracer { .. } => true,
        }
    }

    fn hook(&self, hook_type: &'static str, n: u64, content_type: &str, body: &Bytes) -> bool {
        let event = HookEvent {
            module_id: self.id,
            hook_type,
            request_id: n,
            data: (),
            content_type,
        };
        let text = self.event("hook_event", event, true);
        self.outbox.offer(Frame::WithBinary(text, body.clone()))
    }

    fn event<D: Serialize>(&self, method: &str, data: D, binary: bool) -> String {
        Envelope {
            reqid: 0,
            rspid: 0,
            modid: self.id,
            method,
            data: Some(data),
            error: None,
            time: now_ns(),
            binary,
        }
        .text()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::testing::exchange;

    const CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"engine_newPayloadV4","params":[]}"#;

    fn register(hub: &Hub, kind: &str, config: Value) -> (u64, OutboxReceiver) {
        let config = config.as_object().cloned().unwrap_or_default();
        let (outbox, receiver) = Outbox::new();
        let kind = Kind::read(kind, &config).unwrap();
        let filters = Filters::read(&config).unwrap();
        (hub.register(kind, filters, outbox), receiver)
    }

    /// The queued frames: each text parsed, `time` checked and removed, and its binary.
    fn drain(receiver: &mut OutboxReceiver) -> Vec<(Value, Option<Bytes>)> {
        let mut frames = Vec::new();
        while let Some(Some(frame)) = futures_util::FutureExt::now_or_never(receiver.next()) {
            let (text, body) = match frame {
                Frame::Text(text) => (text, None),
                Frame::WithBinary(text, body) => (text, Some(body)),
            };
            assert!(text.ends_with('\n'));
            let mut value: Value = serde_json::from_str(&text).unwrap();
            let time = value.as_object_mut().unwrap().remove("time").unwrap();
            assert!(time.as_i64().unwrap() > 1_700_000_000_000_000_000);
            frames.push((value, body));
        }
        frames
    }

    #[test]
    fn each_module_type_sends_rpc_snoopers_event() {
        let hub = Hub::default();
        let (req, mut req_rx) = register(&hub, "request_snooper", json!({}));
        let (rsp, mut rsp_rx) = register(&hub, "response_snooper", json!({}));
        let (cnt, mut cnt_rx) = register(&hub, "request_counter", json!({}));
        let (trc, mut trc_rx) = register(
            &hub,
            "response_tracer",
            json!({"request_select": ".method", "response_select": ".result"}),
        );
        assert_eq!((req, rsp, cnt, trc), (1, 2, 3, 4));
        hub.deliver(7, &exchange(CALL));
        hub.deliver(8, &exchange(CALL));
        let hook = |id: u64, hook_type: &str, n: u64| {
            json!({"modid": id, "method": "hook_event", "binary": true, "data": {
                "module_id": id, "hook_type": hook_type, "request_id": n, "data": null,
                "content_type": "application/json"}})
        };
        let request = Some(Bytes::from(CALL));
        let response = Some(Bytes::from_static(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x1\"}",
        ));
        assert_eq!(
            drain(&mut req_rx),
            vec![
                (hook(1, "request", 7), request.clone()),
                (hook(1, "request", 8), request)
            ]
        );
        assert_eq!(drain(&mut rsp_rx)[1], (hook(2, "response", 8), response));
        let counts: Vec<_> = drain(&mut cnt_rx).into_iter().map(|f| f.0).collect();
        assert_eq!(
            counts[1],
            json!({"modid": 3, "method": "counter_event",
                   "data": {"module_id": 3, "count": 2, "request_type": "POST"}})
        );
        assert_eq!(
            drain(&mut trc_rx)[0].0,
            json!({"modid": 4, "method": "tracer_event", "data": {
                "module_id": 4, "request_id": 7, "duration_ms": 7, "response_size": 39,
                "request_size": CALL.len(), "status_code": 200,
                "request_data": "engine_newPayloadV4", "response_data": "0x1"}})
        );
    }

    #[test]
    fn a_refused_request_gives_no_event_and_binary_bodies_go_as_hex() {
        let hub = Hub::default();
        let filter = json!({"request_filter": {"json_query": ".method == \"eth_call\""}});
        let (_, mut rx) = register(&hub, "response_snooper", filter);
        let (_, mut ssz_rx) = register(&hub, "request_snooper", json!({}));
        hub.deliver(1, &exchange(CALL));
        assert!(drain(&mut rx).is_empty());
        let mut ssz = exchange("");
        ssz.request_content_type = Some("application/octet-stream".into());
        ssz.request = Bytes::from_static(&[1, 2, 0xff]);
        hub.deliver(2, &ssz);
        let frames = drain(&mut ssz_rx);
        assert_eq!(frames[1].1.as_deref(), Some(&b"0102ff"[..]));
    }

    #[test]
    fn a_failed_call_gives_request_events_only() {
        let hub = Hub::default();
        let (_, mut req_rx) = register(&hub, "request_counter", json!({}));
        let (_, mut trc_rx) = register(&hub, "response_tracer", json!({}));
        let mut failed = exchange(CALL);
        failed.failure = Some("connection refused".into());
        hub.deliver(1, &failed);
        assert_eq!(drain(&mut req_rx).len(), 1);
        assert!(drain(&mut trc_rx).is_empty());
    }

    #[test]
    fn a_full_outbox_drops_and_counts_without_waiting() {
        let hub = Hub::default();
        let (outbox, mut receiver) = Outbox::new();
        hub.register(Kind::RequestSnooper, Filters::default(), outbox.clone());
        let mut big = exchange(CALL);
        big.request = Bytes::from(vec![b' '; 1 << 20]);
        // Nobody reads: the queue fills by bytes (64 MiB) long before 1000 calls.
        for n in 0..1000 {
            hub.deliver(n, &big);
        }
        assert_eq!(outbox.dropped(), 1000 - (OUTBOX_BYTES as u64 >> 20) + 1);
        assert_eq!(hub.dropped(), outbox.dropped());
        assert_eq!(drain(&mut receiver).len() as u64, 1000 - outbox.dropped());
        hub.deliver(1001, &big);
        assert_eq!(drain(&mut receiver).len(), 1, "room again once read");
    }

    #[test]
    fn unknown_types_and_bad_selects_are_refused_with_rpc_snoopers_messages() {
        let none = serde_json::Map::new();
        assert_eq!(
            Kind::read("counter", &none).unwrap_err(),
            "Unknown module type: counter"
        );
        let config = json!({"request_select": ".["});
        let e = Kind::read("response_tracer", config.as_object().unwrap()).unwrap_err();
        assert!(
            e.starts_with("Failed to configure module: failed to parse request_select query: "),
            "{e}"
        );
    }
}
