//! The recorder: a bounded queue in front of a worker thread that turns captures into records
//! and writes them to the sinks.
//!
//! The queue is a `std::sync::mpsc::sync_channel`; [`Recorder::record`] uses `try_send`, so
//! the forward path never blocks on it, and does not wake the worker: the worker looks at the
//! queue every 10 ms, or sooner when the queue is half full. Shutdown protocol:
//! [`Recorder::shutdown`] drops the sender and wakes the worker; the worker drains what is
//! queued, writes it, and exits; `shutdown` joins it.

use std::{
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicU64, Ordering},
        mpsc::{Receiver, SyncSender, TryRecvError, TrySendError, sync_channel},
    },
    thread::{JoinHandle, Thread},
    time::{Duration, Instant},
};

use bytes::Bytes;
use sszgate_engine::{
    Fork,
    method::{self, Family},
    scan,
    without_blobs::Digits,
};

use crate::{
    meta,
    metrics::Metrics,
    record,
    record::{Capture, Facts, Record, Transport},
    sink::Sink,
    skeleton::{self, BlobLayout},
};

/// Records written per sink transaction at most.
const BATCH: usize = 256;

/// How long the worker sleeps between looks at the queue. Captures are not signalled one by
/// one: waking the worker for each call cost the forward path a futex wake-up and, on a
/// 2-core machine, a context switch in the middle of the calls that follow (measured with
/// `sszgate bench proxy`, docs/benchmarks.md). A queue past half full wakes it at once.
const TICK: Duration = Duration::from_millis(10);

/// How often a partial batch is written (and writes that failed are tried again).
const FLUSH_EVERY: Duration = Duration::from_millis(50);

/// Counters of a recorder, for `/_sszgate/status`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecorderStats {
    /// Captures accepted into the queue.
    pub queued: u64,
    /// Records written (a batch call gives several).
    pub recorded: u64,
    /// Captures dropped because the queue was full.
    pub dropped: u64,
    /// Sink write failures (each retried at the next flush).
    pub sink_errors: u64,
    /// Records a sink never took: dropped after `MAX_PENDING` waited for a failing sink.
    pub lost: u64,
    /// Records kept for a failing sink (its file locked, its disk full) until it takes them
    /// (the most over the sinks); `recorded` counts them already.
    pub pending: u64,
    /// Captures waiting.
    pub queue_depth: u64,
    /// Remote sinks: bytes in their spools.
    pub spool_bytes: u64,
    /// Remote sinks: rows spooled and not yet taken by the server.
    pub spool_waiting: u64,
    /// Remote sinks: rows the server took.
    pub shipped: u64,
    /// Remote sinks: failed tries (each retried).
    pub ship_errors: u64,
}

#[derive(Default)]
struct Counters {
    queued: AtomicU64,
    processed: AtomicU64,
    recorded: AtomicU64,
    dropped: AtomicU64,
    sink_errors: AtomicU64,
    lost: AtomicU64,
    pending: AtomicU64,
    spool_bytes: AtomicU64,
    spool_waiting: AtomicU64,
    shipped: AtomicU64,
    ship_errors: AtomicU64,
}

/// The recorder handle, shared by every connection of a gateway.
pub struct Recorder {
    sender: Mutex<Option<SyncSender<Capture>>>,
    counters: Arc<Counters>,
    metrics: Arc<Metrics>,
    el_client: Arc<RwLock<Option<String>>>,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// The worker's thread, woken when the queue is half full and at shutdown.
    worker_thread: Thread,
    /// Queue depth at which [`Recorder::record`] wakes the worker.
    wake_depth: u64,
}

impl Recorder {
    /// Starts the worker with `sinks`, the user's `labels` and a queue of `capacity` captures.
    pub fn start(
        sinks: Vec<Sink>,
        source: &'static str,
        labels: Vec<(String, String)>,
        capacity: usize,
    ) -> Recorder {
        Recorder::start_verifying(sinks, source, labels, capacity, sszgate_verify::Mode::Off)
    }

    /// As [`Recorder::start`], with every finished call verified in `verify` mode on the
    /// worker's thread (a verdict per call in the records and the metrics).
    pub fn start_verifying(
        sinks: Vec<Sink>,
        source: &'static str,
        labels: Vec<(String, String)>,
        capacity: usize,
        verify: sszgate_verify::Mode,
    ) -> Recorder {
        let capacity = capacity.max(1);
        let (sender, receiver) = sync_channel(capacity);
        let counters = Arc::new(Counters::default());
        let metrics = Arc::new(Metrics::new());
        let el_client = Arc::new(RwLock::new(None));
        let labels = serde_json::to_string(
            &labels
                .into_iter()
                .collect::<std::collections::BTreeMap<_, _>>(),
        )
        .expect("labels serialize");
        let body_bytes = sinks.iter().map(Sink::body_bytes).max().unwrap_or(0);
        let worker = Worker {
            pending: sinks.iter().map(|_| Vec::new()).collect(),
            receiver,
            verifier: (verify != sszgate_verify::Mode::Off)
                .then(|| sszgate_verify::Verifier::new(verify)),
            sinks,
            body_bytes,
            scratch: Vec::new(),
            source,
            labels,
            counters: counters.clone(),
            metrics: metrics.clone(),
            el_client: el_client.clone(),
            seq: 0,
        };
        let handle = std::thread::Builder::new()
            .name("sszgate-recorder".into())
            // Facts are scanned from bodies of up to tens of MB; keep room for the SSZ walk.
            .stack_size(16 << 20)
            .spawn(move || worker.run())
            .expect("spawning the recorder thread");
        Recorder {
            worker_thread: handle.thread().clone(),
            wake_depth: (capacity as u64).div_ceil(2),
            sender: Mutex::new(Some(sender)),
            counters,
            metrics,
            el_client,
            worker: Mutex::new(Some(handle)),
        }
    }

    /// Hands a capture to the worker without waiting; counts a drop when the queue is full.
    pub fn record(&self, capture: Capture) {
        let sender = self.sender.lock().expect("recorder lock").clone();
        let Some(sender) = sender else { return };
        match sender.try_send(capture) {
            Ok(()) => {
                let queued = self.counters.queued.fetch_add(1, Ordering::Relaxed) + 1;
                let processed = self.counters.processed.load(Ordering::Relaxed);
                if queued.saturating_sub(processed) >= self.wake_depth {
                    self.worker_thread.unpark();
                }
            }
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                self.metrics.dropped.inc();
            }
        }
    }

    /// Sets the EL client name stamped on every following record.
    pub fn set_el_client(&self, client: Option<String>) {
        *self.el_client.write().expect("el client lock") = client;
    }

    /// The counters.
    pub fn stats(&self) -> RecorderStats {
        let c = &self.counters;
        let queued = c.queued.load(Ordering::Relaxed);
        RecorderStats {
            queued,
            recorded: c.recorded.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            sink_errors: c.sink_errors.load(Ordering::Relaxed),
            lost: c.lost.load(Ordering::Relaxed),
            pending: c.pending.load(Ordering::Relaxed),
            queue_depth: queued.saturating_sub(c.processed.load(Ordering::Relaxed)),
            spool_bytes: c.spool_bytes.load(Ordering::Relaxed),
            spool_waiting: c.spool_waiting.load(Ordering::Relaxed),
            shipped: c.shipped.load(Ordering::Relaxed),
            ship_errors: c.ship_errors.load(Ordering::Relaxed),
        }
    }

    /// The metrics registry.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Stops accepting captures, writes everything queued, and waits for the worker.
    pub fn shutdown(&self) {
        self.sender.lock().expect("recorder lock").take();
        self.worker_thread.unpark();
        if let Some(handle) = self.worker.lock().expect("recorder lock").take() {
            let _ = handle.join();
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// One call of a capture: method, facts, and the request and response bytes of that call.
type Call<'a> = (Option<String>, Facts, &'a [u8], &'a [u8]);

/// Records kept per failing sink before the oldest are dropped.
const MAX_PENDING: usize = 200_000;

struct Worker {
    receiver: Receiver<Capture>,
    /// Per sink, the records it failed to take, retried first at every flush.
    pending: Vec<Vec<Record>>,
    /// Checks of what crossed the link, when asked for.
    verifier: Option<sszgate_verify::Verifier>,
    sinks: Vec<Sink>,
    /// Bytes of each body to keep with a record (the largest any sink wants).
    body_bytes: usize,
    /// The buffer answers are joined into, kept across records.
    scratch: Vec<u8>,
    source: &'static str,
    labels: String,
    counters: Arc<Counters>,
    metrics: Arc<Metrics>,
    el_client: Arc<RwLock<Option<String>>>,
    seq: u64,
}

impl Worker {
    fn run(mut self) {
        let mut batch = Vec::with_capacity(BATCH);
        let mut flushed = Instant::now();
        loop {
            let closed = loop {
                match self.receiver.try_recv() {
                    Ok(capture) => {
                        self.counters.processed.fetch_add(1, Ordering::Relaxed);
                        self.records(capture, &mut batch);
                        if batch.len() >= BATCH {
                            self.flush(&mut batch);
                            flushed = Instant::now();
                        }
                    }
                    Err(TryRecvError::Empty) => break false,
                    Err(TryRecvError::Disconnected) => break true,
                }
            };
            if closed {
                self.flush(&mut batch);
                // A sink that still fails gets a little longer before the records are
                // given up (and counted).
                let deadline = Instant::now() + Duration::from_secs(10);
                while self.pending.iter().any(|p| !p.is_empty()) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(200));
                    self.flush(&mut batch);
                }
                let left: usize = self.pending.iter().map(Vec::len).sum();
                lose(&self.counters, &self.metrics, left as u64);
                // Remote sinks send what they can now; their last figures are kept.
                let closed = self.sinks.drain(..).filter_map(Sink::close).collect();
                self.publish_remote(closed);
                return;
            }
            if flushed.elapsed() >= FLUSH_EVERY {
                self.flush(&mut batch);
                flushed = Instant::now();
            }
            let depth = self
                .counters
                .queued
                .load(Ordering::Relaxed)
                .saturating_sub(self.counters.processed.load(Ordering::Relaxed));
            // Records kept for a failing sink are waiting to be written too.
            let pending = self.counters.pending.load(Ordering::Relaxed);
            self.metrics.queue_depth.set((depth + pending) as i64);
            self.publish_remote(self.sinks.iter().filter_map(Sink::remote_stats).collect());
            std::thread::park_timeout(TICK);
        }
    }

    /// Copies the remote sinks' figures into the counters and metrics.
    fn publish_remote(&self, remote: Vec<crate::RemoteStats>) {
        let mut sum = crate::RemoteStats::default();
        let mut any = false;
        for stats in remote {
            any = true;
            sum.spool.bytes += stats.spool.bytes;
            sum.spool.waiting += stats.spool.waiting;
            sum.shipped += stats.shipped;
            sum.errors += stats.errors;
        }
        if !any {
            return;
        }
        let c = &self.counters;
        c.spool_bytes.store(sum.spool.bytes, Ordering::Relaxed);
        c.spool_waiting.store(sum.spool.waiting, Ordering::Relaxed);
        self.metrics.spool_bytes.set(sum.spool.bytes as i64);
        self.metrics.spool_waiting.set(sum.spool.waiting as i64);
        let shipped = c.shipped.swap(sum.shipped, Ordering::Relaxed);
        self.metrics
            .shipped
            .inc_by(sum.shipped.saturating_sub(shipped));
        let errors = c.ship_errors.swap(sum.errors, Ordering::Relaxed);
        self.metrics
            .ship_errors
            .inc_by(sum.errors.saturating_sub(errors));
    }

    /// Writes `batch` to every sink. A sink that fails (its file locked past the busy
    /// timeout, its disk full) keeps the records and is retried, older ones first, at every
    /// flush; past `MAX_PENDING` records for one sink the oldest are dropped and counted.
    fn flush(&mut self, batch: &mut Vec<Record>) {
        let pending_any = self.pending.iter().any(|p| !p.is_empty());
        if batch.is_empty() && !pending_any {
            return;
        }
        for (sink, pending) in self.sinks.iter_mut().zip(self.pending.iter_mut()) {
            if !pending.is_empty() {
                match sink.write(pending) {
                    Ok(refused) => {
                        lose(&self.counters, &self.metrics, refused);
                        tracing::info!(sink = %sink.name(), records = pending.len(), "written after earlier failures");
                        pending.clear();
                    }
                    Err(e) => {
                        self.counters.sink_errors.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(sink = %sink.name(), error = %e, waiting = pending.len() + batch.len(), "writing records failed again; kept for the next try");
                        pending.extend(batch.iter().cloned());
                        let over = pending.len().saturating_sub(MAX_PENDING);
                        if over > 0 {
                            pending.drain(..over);
                            lose(&self.counters, &self.metrics, over as u64);
                        }
                        continue;
                    }
                }
            }
            if batch.is_empty() {
                continue;
            }
            match sink.write(batch) {
                Ok(refused) => {
                    lose(&self.counters, &self.metrics, refused);
                }
                Err(e) => {
                    self.counters.sink_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(sink = %sink.name(), error = %e, records = batch.len(), "writing records failed; kept for the next try");
                    pending.extend(batch.iter().cloned());
                }
            }
        }
        self.counters
            .recorded
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        batch.clear();
        let pending = self.pending.iter().map(Vec::len).max().unwrap_or(0);
        self.counters
            .pending
            .store(pending as u64, Ordering::Relaxed);
    }

    /// The records of one capture: one per call, one per element of a JSON-RPC batch.
    fn records(&mut self, mut c: Capture, out: &mut Vec<Record>) {
        // Frames are joined into a buffer kept across records: a fresh 20 MB buffer per call
        // would be page-faulted in every time (measured: page zeroing was 7% of the proxy's
        // CPU on 72-blob answers). A single frame needs no copy, and a blob-carrying answer
        // whose blobs nothing here reads is joined without their digits.
        let frames = std::mem::take(&mut c.response);
        let answer_len: usize = frames.iter().map(Bytes::len).sum();
        let mut scratch = std::mem::take(&mut self.scratch);
        // The digits are checked only for the checks; the facts never read them.
        let check_digits = self.verifier.is_some();
        let digits_left_out = frames.len() > 1
            && self.blob_layout(&c).is_some_and(|layout| {
                skeleton::join_without_blob_digits(&frames, layout, check_digits, &mut scratch)
            });
        let raw_response: &[u8] = match frames.as_slice() {
            [] => &[],
            [one] => one,
            _ if digits_left_out => &scratch,
            many => {
                scratch.clear();
                for frame in many {
                    scratch.extend_from_slice(frame);
                }
                &scratch
            }
        };
        let digits = if digits_left_out {
            Digits::LeftOut
        } else {
            Digits::Present
        };
        // Facts are read from the bodies as the endpoints meant them: without their
        // content encoding (the relay passed the encoded bytes on untouched).
        let (request_body, request_decoded) = decoded(&c.request, c.encodings.0.as_deref());
        let (response, response_decoded) = decoded(raw_response, c.encodings.1.as_deref());
        let transport = c.transport.unwrap_or(Transport::Other);
        let request: &[u8] = &request_body;
        let per_call: Vec<Call<'_>> = match transport {
            Transport::JsonRpc | Transport::WebSocket => {
                let requests = scan::calls(request).unwrap_or_default();
                let responses = scan::calls(&response).unwrap_or_default();
                let batch = is_batch(request);
                if requests.is_empty() {
                    // Refused before it was read (too large, not JSON): the answer says why.
                    vec![(
                        None,
                        meta::json_call(b"", &response),
                        request,
                        &response[..],
                    )]
                } else {
                    requests
                        .iter()
                        .enumerate()
                        .map(|(i, req)| {
                            let envelope = scan::envelope(req).unwrap_or_default();
                            // Batch answers may come in any order: match them by id. A single
                            // call's answer is the whole body, and is not walked for its id
                            // (a pass over 20 MB, measured: 5% of the proxy's CPU).
                            let by_id = || {
                                responses.iter().find(|r| {
                                    envelope.id.is_some()
                                        && scan::envelope(r).and_then(|e| e.id) == envelope.id
                                })
                            };
                            let resp = batch
                                .then(by_id)
                                .flatten()
                                .or(responses.get(i))
                                .copied()
                                .unwrap_or_default();
                            let mut facts = meta::json_call(req, resp);
                            facts.batch_index = batch.then_some(i as u32);
                            let method = envelope.method.map(str::to_string);
                            // A single call owns the whole bodies (even when the answer does not scan).
                            if batch {
                                (method, facts, *req, resp)
                            } else {
                                (method, facts, request, &response[..])
                            }
                        })
                        .collect()
                }
            }
            Transport::RestSsz if c.route.is_some() => {
                let route = c.route.as_ref().expect("checked");
                let fork = c.fork.as_deref().and_then(|f| f.parse::<Fork>().ok());
                let facts = meta::rest_call(
                    route.resource,
                    fork,
                    route.payload_id,
                    request,
                    c.status,
                    &response,
                );
                let method = meta::rest_method(route.resource, fork).map(|m| m.name.to_string());
                vec![(method, facts, request, &response[..])]
            }
            Transport::RestSsz | Transport::Other => {
                vec![(None, meta::problem(&response), request, &response[..])]
            }
        };
        let el_client = self.el_client.read().expect("el client lock").clone();
        let upstream = c.upstream_ttlb_us;
        let body_bytes = self.body_bytes;
        let body = |b: &[u8]| (body_bytes > 0).then(|| record::body_text(b, body_bytes));
        let mut records = Vec::with_capacity(per_call.len());
        let fork = c.fork.as_deref().and_then(|f| f.parse::<Fork>().ok());
        for (method, mut facts, req, resp) in per_call {
            if let Some(verifier) = &mut self.verifier {
                let shape = crate::verify::CallShape {
                    transport,
                    method: method.as_deref().or(c.method.as_deref()),
                    route: c.route.as_ref(),
                    fork,
                    status: c.status,
                    digits,
                };
                if crate::verify::verify(verifier, &shape, req, resp, &mut facts).is_err() {
                    // The skeleton was not enough (an answer of an unusual shape): the whole
                    // answer, then, as it came.
                    let whole: Vec<u8> = frames.concat();
                    let shape = crate::verify::CallShape {
                        digits: Digits::Present,
                        ..shape
                    };
                    let verified = crate::verify::verify(verifier, &shape, req, &whole, &mut facts);
                    debug_assert!(verified.is_ok(), "a whole answer is always verified");
                }
            }
            if facts.error_message.is_none() {
                facts.error_message = c.error_message.clone();
            }
            let error_side = c.error_side.or_else(|| {
                (facts.error_code.is_some() || c.status >= 400).then_some(crate::ErrorSide::El)
            });
            records.push(Record {
                seq: 0,
                source: self.source,
                arrival_unix_us: c.arrival_unix_us,
                transport: transport.name(),
                http_version: c.http_version,
                method: method.or_else(|| c.method.clone()),
                resource: c.route.as_ref().map(|r| r.resource.name()),
                fork: c.fork.clone(),
                status: c.status,
                error_side: error_side.map(|s| s.name()),
                request_bytes: if request_decoded.is_some() {
                    c.request.len() as u64
                } else {
                    req.len() as u64
                },
                // A call's answer as it came (encoded, or joined without its blobs' digits), or
                // its element of a batch answer.
                response_bytes: if response_decoded.is_some() || facts.batch_index.is_none() {
                    answer_len as u64
                } else {
                    resp.len() as u64
                },
                request_decoded_bytes: request_decoded,
                response_decoded_bytes: response_decoded,
                mode: if c.mode.is_empty() { "snoop" } else { c.mode },
                translate_request_us: c.translate_request_us,
                translate_response_us: c.translate_response_us,
                upstream_request_bytes: c.upstream_request_bytes,
                upstream_response_bytes: c.upstream_response_bytes,
                request_encoding: c.encodings.0.clone(),
                response_encoding: c.encodings.1.clone(),
                upstream_ttfb_us: c.upstream_ttfb_us,
                upstream_ttlb_us: upstream,
                total_us: c.total_us,
                overhead_us: upstream.map(|u| c.total_us.saturating_sub(u)),
                cl_client: c.cl_client.clone(),
                el_client: el_client.clone(),
                labels: self.labels.clone(),
                facts,
                request_body: body(req),
                response_body: body(resp),
            });
        }
        for mut record in records {
            self.seq += 1;
            record.seq = self.seq;
            self.metrics.observe(&record);
            out.push(record);
        }
        // Keep the buffer for the next answer, unless it grew past any answer worth keeping.
        if scratch.capacity() <= 64 << 20 {
            self.scratch = scratch;
        }
    }
}

impl Worker {
    /// Where the blobs of `c`'s answer are, when it is worth joining without their digits: a
    /// single JSON-RPC getPayload (V3..V5) or getBlobs (V1..V3) call, not content-encoded,
    /// whose blobs nothing here reads (no body is kept, no KZG check is due).
    fn blob_layout(&self, c: &Capture) -> Option<BlobLayout> {
        let encoded = content_encoding(c.encodings.1.as_deref()).is_some();
        let kzg_due = self
            .verifier
            .as_ref()
            .is_some_and(sszgate_verify::Verifier::kzg_on_next_blob_call);
        if c.transport != Some(Transport::JsonRpc)
            || is_batch(&c.request)
            || encoded
            || kzg_due
            || self.body_bytes > 0
        {
            return None;
        }
        let name = match &c.method {
            Some(name) => name.as_str(),
            None => scan::envelope(&c.request)?.method?,
        };
        let m = method::by_name(name).ok()?;
        match (m.family, m.version) {
            (Family::GetPayload, 3..=5) => Some(BlobLayout::Bundle),
            (Family::GetBlobs, 1..=3) => Some(BlobLayout::Entries),
            _ => None,
        }
    }
}

/// Counts records no sink will ever take, in the stats and the metrics. A free function:
/// `flush` calls it while it holds the sinks mutably.
fn lose(counters: &Counters, metrics: &Metrics, n: u64) {
    if n > 0 {
        counters.lost.fetch_add(n, Ordering::Relaxed);
        metrics.lost.inc_by(n);
    }
}

/// A body without its content encoding (gzip, deflate, zstd, framed snappy), with its decoded size; the body
/// as it is when it has none, or one that cannot be decoded (the facts then stay empty).
/// Whether a JSON-RPC body is a batch (an array of calls).
fn is_batch(body: &[u8]) -> bool {
    body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
}

/// The content encoding a body is in, `None` for none or `identity`.
fn content_encoding(header: Option<&str>) -> Option<&str> {
    header
        .map(str::trim)
        .filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity"))
}

fn decoded<'a>(
    body: &'a [u8],
    encoding: Option<&str>,
) -> (std::borrow::Cow<'a, [u8]>, Option<u64>) {
    use std::io::Read;
    let Some(encoding) = content_encoding(encoding) else {
        return (std::borrow::Cow::Borrowed(body), None);
    };
    let mut out = Vec::new();
    let result = match encoding.to_ascii_lowercase().as_str() {
        "gzip" | "x-gzip" => flate2::read::GzDecoder::new(body)
            .read_to_end(&mut out)
            .map(|_| ()),
        "deflate" => flate2::read::ZlibDecoder::new(body)
            .read_to_end(&mut out)
            .map(|_| ()),
        "zstd" => zstd::stream::read::Decoder::new(body)
            .and_then(|mut d| d.read_to_end(&mut out))
            .map(|_| ()),
        "snappy" => snap::read::FrameDecoder::new(body)
            .read_to_end(&mut out)
            .map(|_| ()),
        _ => return (std::borrow::Cow::Borrowed(body), None),
    };
    match result {
        Ok(()) => {
            let size = out.len() as u64;
            (std::borrow::Cow::Owned(out), Some(size))
        }
        Err(e) => {
            tracing::debug!(%encoding, error = %e, "a body does not decode; facts left empty");
            (std::borrow::Cow::Borrowed(body), None)
        }
    }
}

#[cfg(test)]
mod tests {
    use sszgate_engine::ssz::BYTES_PER_BLOB;

    use super::*;

    /// A worker with no sinks, verifying in `mode`, fed by hand.
    fn worker(mode: sszgate_verify::Mode) -> Worker {
        let (_, receiver) = sync_channel(1);
        Worker {
            receiver,
            pending: Vec::new(),
            verifier: (mode != sszgate_verify::Mode::Off)
                .then(|| sszgate_verify::Verifier::new(mode)),
            sinks: Vec::new(),
            body_bytes: 0,
            scratch: Vec::new(),
            source: "proxy",
            labels: String::new(),
            counters: Arc::default(),
            metrics: Arc::new(Metrics::new()),
            el_client: Arc::default(),
            seq: 0,
        }
    }

    /// A capture of `request` answered with `response`, cut into frames of `frame` bytes.
    fn capture(request: &str, response: &str, frame: usize) -> Capture {
        Capture {
            transport: Some(Transport::JsonRpc),
            status: 200,
            request: Bytes::copy_from_slice(request.as_bytes()),
            response: response
                .as_bytes()
                .chunks(frame)
                .map(Bytes::copy_from_slice)
                .collect(),
            ..Capture::default()
        }
    }

    fn hex_string(byte: &str, bytes: usize) -> String {
        format!("\"0x{}\"", byte.repeat(bytes))
    }

    fn get_blobs() -> (String, String) {
        let hashes = vec![hex_string("01", 32); 3].join(",");
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"engine_getBlobsV3","params":[[{hashes}]]}}"#
        );
        let entry = format!(
            r#"{{"blob":{},"proofs":[{}]}}"#,
            hex_string("02", BYTES_PER_BLOB),
            vec![hex_string("ab", 48); 128].join(",")
        );
        let response = format!(r#"{{"jsonrpc":"2.0","id":1,"result":[{entry},null,{entry}]}}"#);
        (request, response)
    }

    fn get_payload() -> (String, String) {
        let request = r#"{"jsonrpc":"2.0","id":2,"method":"engine_getPayloadV5","params":["0x0000000000000007"]}"#;
        let h = "12".repeat(32);
        let payload = format!(
            r#"{{"parentHash":"0x{h}","feeRecipient":"0x{a}","stateRoot":"0x{h}","receiptsRoot":"0x{h}","logsBloom":"0x{bloom}","prevRandao":"0x{h}","blockNumber":"0x2a","gasLimit":"0x1","gasUsed":"0x0","timestamp":"0x1","extraData":"0x","baseFeePerGas":"0x1","blockHash":"0x{h}","transactions":["0x02aa"],"withdrawals":[],"blobGasUsed":"0x0","excessBlobGas":"0x0"}}"#,
            a = "34".repeat(20),
            bloom = "00".repeat(256)
        );
        let blobs = vec![hex_string("03", BYTES_PER_BLOB); 2].join(",");
        let response = format!(
            r#"{{"jsonrpc":"2.0","id":2,"result":{{"executionPayload":{payload},"blockValue":"0x1","blobsBundle":{{"commitments":[{c},{c}],"proofs":[{p}],"blobs":[{blobs}]}},"shouldOverrideBuilder":false,"executionRequests":[]}}}}"#,
            c = hex_string("cd", 48),
            p = vec![hex_string("ef", 48); 256].join(","),
        );
        (request.to_string(), response)
    }

    #[test]
    fn blob_answers_whose_blobs_nothing_reads_are_joined_without_their_digits() {
        for (request, response) in [get_blobs(), get_payload()] {
            let mut w = worker("sample".parse().unwrap());
            let mut out = Vec::new();
            // The first blob call has its KZG proofs due: its answer is joined whole.
            w.records(capture(&request, &response, 100_000), &mut out);
            assert_eq!(w.scratch.len(), response.len());
            // The next are joined without the digits, frames cut anywhere.
            for frame in [100_000, 4_099, 262_147] {
                w.records(capture(&request, &response, frame), &mut out);
                assert!(w.scratch.len() < 40_000, "{}", w.scratch.len());
            }
            let first = &out[0];
            assert_eq!(first.response_bytes, response.len() as u64);
            let without_verdict = |f: &Facts| Facts {
                verdict: None,
                verify_check: None,
                verify_detail: None,
                verify_us: None,
                ..f.clone()
            };
            for other in &out[1..] {
                // Facts and sizes alike; verdicts alike between the calls without KZG.
                assert_eq!(other.response_bytes, first.response_bytes);
                assert_eq!(without_verdict(&other.facts), without_verdict(&first.facts));
                assert_eq!(
                    (&other.facts.verdict, &other.facts.verify_detail),
                    (&out[1].facts.verdict, &out[1].facts.verify_detail)
                );
            }
            let f = &out[1].facts;
            if request.contains("getBlobs") {
                assert_eq!(
                    (
                        f.blobs_requested,
                        f.blobs_returned,
                        f.blobs_missing.as_deref()
                    ),
                    (Some(3), Some(2), Some("1"))
                );
                // The blobs are not those of the hashes asked for: found when KZG is due.
                assert_eq!(out[0].facts.verify_check.as_deref(), Some("blobs-answer"));
                assert_eq!(f.verdict.as_deref(), Some("ok"));
            } else {
                assert_eq!(
                    (f.block_number, f.tx_count, f.blob_count),
                    (Some(42), Some(1), Some(2))
                );
                // The transaction is not one: the same failure with or without the blobs.
                assert_eq!(f.verify_check.as_deref(), Some("transactions"));
                assert_eq!(f.verify_detail, out[0].facts.verify_detail);
            }
        }
    }

    #[test]
    fn answers_of_another_shape_are_joined_whole() {
        let (request, response) = get_blobs();
        let mut w = worker(sszgate_verify::Mode::Off);
        let mut out = Vec::new();
        w.records(capture(&request, &response, 100_000), &mut out);
        assert!(w.scratch.len() < 40_000);
        // A backslash (in the id) makes the tokens unreliable; a blob a digit short too.
        let escaped = response.replace(r#""id":1"#, r#""id":"a\\b""#);
        let short = response.replacen("0x0202", "0x020", 1);
        for odd in [escaped, short] {
            w.records(capture(&request, &odd, 100_000), &mut out);
            assert_eq!(w.scratch.len(), odd.len());
            assert_eq!(out.last().unwrap().facts.blobs_returned, Some(2));
        }
        // Kept bodies need the digits.
        w.body_bytes = 100;
        w.records(capture(&request, &response, 100_000), &mut out);
        assert_eq!(w.scratch.len(), response.len());
    }

    #[test]
    fn an_answer_the_checks_cannot_read_without_blobs_is_checked_whole() {
        // An entry with a member the fixed-shape readers do not know: its digits can be left
        // out, but the checks then need the whole answer (serde decides).
        let (request, response) = get_blobs();
        let odd = response.replacen(r#""proofs":["#, r#""x":1,"proofs":["#, 1);
        let verdict_of = |body_bytes: usize| {
            let mut w = worker("sample".parse().unwrap());
            let mut out = Vec::new();
            w.records(capture(&request, &response, 100_000), &mut out);
            w.body_bytes = body_bytes;
            w.records(capture(&request, &odd, 100_000), &mut out);
            let f = &out[1].facts;
            let verdict = (
                f.verdict.clone(),
                f.verify_check.clone(),
                f.verify_detail.clone(),
            );
            (verdict, w.scratch.len(), out[1].response_bytes)
        };
        // Joined without digits first (the skeleton is what stays in the buffer), then whole;
        // against joined whole from the start.
        let (verdict, joined, bytes) = verdict_of(0);
        assert!(joined < 40_000, "{joined}");
        let (whole_verdict, whole_joined, whole_bytes) = verdict_of(100);
        assert_eq!(whole_joined, odd.len());
        assert_eq!(verdict, whole_verdict);
        assert_eq!((bytes, whole_bytes), (odd.len() as u64, odd.len() as u64));
        assert!(verdict.0.is_some(), "{verdict:?}");
    }
}
