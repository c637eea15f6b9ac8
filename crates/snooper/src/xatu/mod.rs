//! rpc-snooper's xatu output (`--xatu-*`): the `engine_newPayload*` and `engine_getBlobs*`
//! calls the proxy relays become xatu `DecoratedEvent`s (`EXECUTION_ENGINE_NEW_PAYLOAD`,
//! `EXECUTION_ENGINE_GET_BLOBS`) with rpc-snooper's fields, sent to every output. As in
//! rpc-snooper, events wait for nothing and are dropped until the EL's name and version are
//! known: from its `engine_getClientVersionV1` answer, asked for at start (signed with
//! `--jwt-secret`, retried 2 s … 30 s apart, refreshed every 60 s) or seen in a relayed call.
//!
//! Not here: reading calls (`event`), encodings (`wire`), queues and exports (`sink`).

pub mod event;
pub mod settings;
pub mod sink;
pub mod version;
pub mod wire;

use std::{
    sync::{Arc, RwLock, atomic::Ordering},
    time::SystemTime,
};

use sszgate_gateway::Exchange;

use crate::pretty::LazyJson;

use self::{
    event::Seen,
    sink::{Bounds, Output, Sink},
    wire::{ClientMeta, Event, Execution},
};

/// `--xatu-*`, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XatuSettings {
    /// `--xatu-name`.
    pub name: String,
    /// `--xatu-network-name`.
    pub network_name: String,
    /// `--xatu-network-id`.
    pub network_id: u64,
    /// `--xatu-output`, in order.
    pub outputs: Vec<Output>,
    /// `--xatu-label`, sorted by key.
    pub labels: Vec<(String, String)>,
    /// `--xatu-header`.
    pub headers: Vec<(String, String)>,
    /// Queue and batch bounds.
    pub bounds: Bounds,
}

/// Totals over all outputs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Events the outputs' servers accepted.
    pub exported: u64,
    /// Events dropped: queue full, export failed.
    pub dropped: u64,
    /// Events not made because the EL's version was not known yet (as rpc-snooper does).
    pub before_version: u64,
}

/// The publisher: the sender's metadata and the outputs.
pub struct Xatu {
    meta: RwLock<Arc<ClientMeta>>,
    sinks: Vec<Sink>,
    before_version: std::sync::atomic::AtomicU64,
}

impl Xatu {
    /// Starts one sink per output. Needs a runtime.
    pub fn start(settings: &XatuSettings) -> Arc<Xatu> {
        let meta = ClientMeta {
            name: settings.name.clone(),
            version: format!("sszgate-{}", env!("CARGO_PKG_VERSION")),
            implementation: "sszgate".into(),
            network_name: settings.network_name.clone(),
            network_id: settings.network_id,
            execution: None,
            labels: settings.labels.clone(),
        };
        let sinks = settings
            .outputs
            .iter()
            .map(|o| Sink::start(o.clone(), settings.bounds.clone(), settings.headers.clone()))
            .collect();
        Arc::new(Xatu {
            meta: RwLock::new(Arc::new(meta)),
            sinks,
            before_version: Default::default(),
        })
    }

    /// Reads one relayed call that ended at `ended`, whose answer is `answer`; never waits.
    pub fn observe(&self, exchange: &Exchange, answer: &LazyJson<'_>, ended: SystemTime) {
        if exchange.response_encoding.is_some() {
            return; // compressed answers are not read (the Engine API does not compress)
        }
        match event::read(&exchange.request, answer) {
            Some(Seen::ClientVersion(execution)) => self.set_execution(execution),
            Some(Seen::Event(data)) => self.publish(data, exchange, ended),
            None => {}
        }
    }

    /// Records the EL's name and version for the events to come.
    pub fn set_execution(&self, execution: Execution) {
        let mut meta = self.meta.write().unwrap_or_else(|e| e.into_inner());
        if meta.execution.as_ref() != Some(&execution) {
            let mut next = ClientMeta::clone(&meta);
            next.execution = Some(execution);
            *meta = Arc::new(next);
        }
    }

    fn publish(&self, data: wire::EventData, exchange: &Exchange, ended: SystemTime) {
        let duration = exchange.duration;
        let client = self.meta.read().unwrap_or_else(|e| e.into_inner()).clone();
        if client.execution.is_none() {
            self.before_version.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let event = Event {
            client,
            id: uuid::Uuid::new_v4().to_string(),
            date_time: ended,
            requested_at: ended.checked_sub(duration).unwrap_or(ended),
            duration_ms: duration.as_millis() as u64,
            data,
            facts: facts(exchange),
        };
        for sink in &self.sinks {
            sink.offer(event.clone());
        }
    }

    /// The counts over all outputs.
    pub fn totals(&self) -> Totals {
        let mut t = Totals {
            before_version: self.before_version.load(Ordering::Relaxed),
            ..Totals::default()
        };
        for sink in &self.sinks {
            let c = &sink.counts;
            t.exported += c.exported.load(Ordering::Relaxed);
            t.dropped += c.dropped_full.load(Ordering::Relaxed);
            t.dropped += c.dropped_failed.load(Ordering::Relaxed);
        }
        t
    }
}

/// sszgate's facts of a call for its event's labels (see [`wire::Event::facts`]): the
/// request's and the answer's bytes, the round trip in µs, the HTTP status.
fn facts(exchange: &Exchange) -> Vec<(String, String)> {
    [
        ("sszgate_request_bytes", exchange.request.len().to_string()),
        ("sszgate_response_bytes", exchange.response_len.to_string()),
        (
            "sszgate_duration_us",
            exchange.duration.as_micros().to_string(),
        ),
        ("sszgate_http_status", exchange.status.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}
