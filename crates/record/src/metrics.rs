//! Prometheus metrics of the calls, in their own registry (one per recorder, so several
//! gateways in one process, such as tests, do not mix their figures).
//!
//! Updated by the recorder's worker from finished records, never on the forward path; only
//! the dropped-record counter and the accept-error counter are touched by the gateway (the
//! first an atomic, the second only when an accept fails).

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
    registry::Registry,
};

use crate::record::Record;

/// Labels of the per-method metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CallLabels {
    /// JSON-RPC method (or the method a REST resource stands for), `unknown` otherwise.
    pub method: String,
    /// Transport name.
    pub transport: String,
}

/// Labels of the call counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StatusLabels {
    /// Method.
    pub method: String,
    /// Transport.
    pub transport: String,
    /// HTTP status.
    pub status: String,
}

/// Labels of verification verdicts.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerifyLabels {
    /// JSON-RPC method.
    pub method: String,
    /// `ok`, `failed` or `skipped`.
    pub verdict: String,
    /// The failed check, `kzg` for an ok verdict with proofs, empty otherwise.
    pub check: String,
}

/// Labels of the recorder's caught faults.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FaultLabels {
    /// `read` (a capture becoming records) or `write` (a batch going to a sink).
    pub stage: String,
}

/// Labels of the errors a listener's accept loop got and went on from.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AcceptLabels {
    /// `engine` (the relay's port) or `control` (metrics and status).
    pub listener: String,
    /// The error's kind: `fds` (EMFILE, ENFILE), `memory` (ENOBUFS, ENOMEM), `aborted`
    /// (a connection gone before it was accepted) or `other`.
    pub kind: String,
}

/// Labels of the faults control rules injected.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct InjectLabels {
    /// The call's method (JSON-RPC name; REST calls by the method their resource stands for).
    pub method: String,
    /// The rule's action: `delay`, `rpc_error`, `http_status`, `payload_status`, `drop`,
    /// `corrupt`, or `held` (paused forwarding).
    pub action: String,
}

/// The metrics of one recorder.
pub struct Metrics {
    registry: Registry,
    calls: Family<StatusLabels, Counter>,
    errors: Family<CallLabels, Counter>,
    duration: Family<CallLabels, Histogram>,
    overhead: Family<CallLabels, Histogram>,
    request_bytes: Family<CallLabels, Histogram>,
    response_bytes: Family<CallLabels, Histogram>,
    verdicts: Family<VerifyLabels, Counter>,
    faults: Family<FaultLabels, Counter>,
    accept_errors: Family<AcceptLabels, Counter>,
    injected: Family<InjectLabels, Counter>,
    /// Bytes of body held by the records waiting.
    pub queue_bytes: Gauge,
    /// Records dropped because the queue was full.
    pub dropped: Counter,
    /// Records waiting in the queue.
    pub queue_depth: Gauge,
    /// Bytes in the spools of remote sinks.
    pub spool_bytes: Gauge,
    /// Rows in the spools of remote sinks not yet taken by their server.
    pub spool_waiting: Gauge,
    /// Rows remote servers took.
    pub shipped: Counter,
    /// Failed tries to send rows to a remote server.
    pub ship_errors: Counter,
    /// Records a sink never took (a full spool, or a failing sink past its backlog limit).
    pub lost: Counter,
}

fn seconds_buckets() -> impl Iterator<Item = f64> {
    // 10 µs .. ~21 s, doubling.
    prometheus_client::metrics::histogram::exponential_buckets(1e-5, 2.0, 22)
}

fn bytes_buckets() -> impl Iterator<Item = f64> {
    // 64 B .. 64 MiB, by 4.
    prometheus_client::metrics::histogram::exponential_buckets(64.0, 4.0, 11)
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry with every sszgate metric registered.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("sszgate");
        let calls = Family::<StatusLabels, Counter>::default();
        let errors = Family::<CallLabels, Counter>::default();
        let duration = Family::<CallLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(seconds_buckets())
        });
        let overhead = Family::<CallLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(seconds_buckets())
        });
        let request_bytes = Family::<CallLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(bytes_buckets())
        });
        let response_bytes = Family::<CallLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(bytes_buckets())
        });
        let verdicts = Family::<VerifyLabels, Counter>::default();
        let faults = Family::<FaultLabels, Counter>::default();
        let accept_errors = Family::<AcceptLabels, Counter>::default();
        let queue_bytes = Gauge::default();
        let injected = Family::<InjectLabels, Counter>::default();
        registry.register(
            "injected",
            "Calls a control rule changed (delayed, answered, dropped, corrupted) or paused forwarding held",
            injected.clone(),
        );
        registry.register(
            "recorder_faults",
            "Faults (panics) the recorder caught while reading a call or writing a batch; it went on",
            faults.clone(),
        );
        registry.register(
            "accept_errors",
            "Errors accepting a connection that the listener backed off from and went on",
            accept_errors.clone(),
        );
        registry.register(
            "record_queue_bytes",
            "Bytes of body held by the records waiting to be read (bounded by --queue-bytes)",
            queue_bytes.clone(),
        );
        let dropped = Counter::default();
        let queue_depth = Gauge::default();
        let spool_bytes = Gauge::default();
        let spool_waiting = Gauge::default();
        let shipped = Counter::default();
        let ship_errors = Counter::default();
        let lost = Counter::default();
        registry.register(
            "spool_bytes",
            "Bytes in the local spool of remote sinks (ClickHouse)",
            spool_bytes.clone(),
        );
        registry.register(
            "spool_waiting_rows",
            "Rows in the spool not yet taken by the remote server",
            spool_waiting.clone(),
        );
        registry.register(
            "clickhouse_rows",
            "Rows ClickHouse took from the spool",
            shipped.clone(),
        );
        registry.register(
            "clickhouse_errors",
            "Failed tries to send rows to ClickHouse (each retried)",
            ship_errors.clone(),
        );
        registry.register(
            "records_lost",
            "Records a sink never took: its spool full, or its backlog over the limit while it failed",
            lost.clone(),
        );
        registry.register(
            "verify",
            "Verification verdicts (--verify): ok, failed (with the check) or skipped",
            verdicts.clone(),
        );
        registry.register("calls", "Engine API calls relayed", calls.clone());
        registry.register(
            "errors",
            "Calls answered with an error (JSON-RPC error, problem+json or HTTP >= 400)",
            errors.clone(),
        );
        registry.register(
            "call_duration_seconds",
            "Time at the proxy from request head to last response byte",
            duration.clone(),
        );
        registry.register(
            "overhead_seconds",
            "Time at the proxy minus the upstream's time",
            overhead.clone(),
        );
        registry.register("request_bytes", "Request body size", request_bytes.clone());
        registry.register(
            "response_bytes",
            "Response body size",
            response_bytes.clone(),
        );
        registry.register(
            "records_dropped",
            "Records dropped because the recorder queue was full",
            dropped.clone(),
        );
        registry.register(
            "record_queue_depth",
            "Records waiting to be written",
            queue_depth.clone(),
        );
        Metrics {
            registry,
            calls,
            errors,
            duration,
            overhead,
            request_bytes,
            response_bytes,
            verdicts,
            faults,
            accept_errors,
            injected,
            queue_bytes,
            dropped,
            queue_depth,
            spool_bytes,
            spool_waiting,
            shipped,
            ship_errors,
            lost,
        }
    }

    /// Accounts one finished record.
    pub fn observe(&self, r: &Record) {
        let labels = CallLabels {
            method: r.method.clone().unwrap_or_else(|| "unknown".into()),
            transport: r.transport.to_string(),
        };
        self.calls
            .get_or_create(&StatusLabels {
                method: labels.method.clone(),
                transport: labels.transport.clone(),
                status: r.status.to_string(),
            })
            .inc();
        if r.status >= 400 || r.facts.error_code.is_some() {
            self.errors.get_or_create(&labels).inc();
        }
        self.duration
            .get_or_create(&labels)
            .observe(r.total_us as f64 / 1e6);
        if let Some(o) = r.overhead_us {
            self.overhead.get_or_create(&labels).observe(o as f64 / 1e6);
        }
        self.request_bytes
            .get_or_create(&labels)
            .observe(r.request_bytes as f64);
        self.response_bytes
            .get_or_create(&labels)
            .observe(r.response_bytes as f64);
        if let Some(verdict) = &r.facts.verdict {
            self.verdicts
                .get_or_create(&VerifyLabels {
                    method: labels.method.clone(),
                    verdict: verdict.clone(),
                    check: r.facts.verify_check.clone().unwrap_or_default(),
                })
                .inc();
        }
    }

    /// Counts one fault the recorder caught at `stage`.
    pub fn fault(&self, stage: &str) {
        self.faults
            .get_or_create(&FaultLabels {
                stage: stage.to_string(),
            })
            .inc();
    }

    /// Counts one error `listener`'s accept loop went on from.
    pub fn accept_error(&self, listener: &str, kind: &str) {
        self.accept_errors
            .get_or_create(&AcceptLabels {
                listener: listener.to_string(),
                kind: kind.to_string(),
            })
            .inc();
    }

    /// Counts a call a control rule changed with `action`.
    pub fn injected(&self, method: &str, action: &str) {
        self.injected
            .get_or_create(&InjectLabels {
                method: method.to_string(),
                action: action.to_string(),
            })
            .inc();
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }
}
