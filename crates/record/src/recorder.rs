//! The recorder: a bounded queue in front of a worker thread that turns captures into records
//! and writes them to the sinks.
//!
//! The queue is a `std::sync::mpsc::sync_channel`, bounded twice: in captures (`capacity`) and
//! in the bytes of body they hold alive (`queue_bytes`); past either a capture is dropped and
//! counted. [`Recorder::record`] uses `try_send` and takes no lock, so the forward path never
//! waits on the worker, and does not wake it: the worker looks at the queue every 10 ms, or
//! sooner when the queue is half full. It reads a capture once [`AFTER_CALL`] has passed since
//! the capture was queued (see there).
//!
//! A fault (a panic) while one capture becomes records, or while one batch is written, is
//! caught, counted (`sszgate_recorder_faults_total`), logged with the call's identity, and
//! the worker goes on with the next; the faulted call still gets a record of what the gateway
//! knew, with a note.
//!
//! Shutdown protocol: [`Recorder::shutdown`] closes the queue to new captures, waits for any
//! `record` call already under way to finish, then tells the worker, which drains what is
//! queued, writes it, and exits; `shutdown` joins it.
//!
//! Not here: the stages a capture goes through to become records (`pipeline`), what a body
//! means (`meta`), where records go (`sink`).

use std::{
    panic::AssertUnwindSafe,
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
        mpsc::{Receiver, SyncSender, sync_channel},
    },
    thread::{JoinHandle, Thread},
    time::{Duration, Instant},
};

use bytes::Bytes;
use sszgate_verify::call;

use crate::{
    events::Events,
    metrics::Metrics,
    pipeline,
    record::{Capture, Facts, Record, Transport},
    sink::Sink,
};

/// Records written per sink transaction at most.
const BATCH: usize = 256;

/// How long the worker sleeps between looks at the queue. Captures are not signalled one by
/// one: waking the worker for each call cost the forward path a futex wake-up and, on a
/// 2-core machine, a context switch in the middle of the calls that follow (measured with
/// `sszgate bench proxy`, docs/benchmarks.md). A queue past half full wakes it at once.
const TICK: Duration = Duration::from_millis(10);

/// How long the work that follows a call (recording it, the snooper's log and events) waits
/// after the call's end: the end is when the relay handed the answer's last bytes to the
/// client's connection, and on loopback megabytes of it are still in socket buffers that the
/// client drains next. Reading and decoding a 20 MB answer at that moment took a core from the
/// client and the relay on a 2-core machine: a 72-blob call through `sszgate snooper` took
/// 2–3 ms longer than through a bare copying relay, and as long with this wait (measured with
/// loopback callers, median of 60 interleaved calls). A backlog is not slowed: each call
/// waits from its own end, so calls queued longer ago are read at once.
pub const AFTER_CALL: Duration = Duration::from_millis(10);

/// Sleeps until [`AFTER_CALL`] has passed since `ended`; returns at once when it has.
pub fn wait_after_call(ended: Instant) {
    if let Some(left) = left_after_call(ended, Instant::now()) {
        std::thread::sleep(left);
    }
}

/// What is left at `now` of [`AFTER_CALL`] since `ended`; `None` once it has passed.
fn left_after_call(ended: Instant, now: Instant) -> Option<Duration> {
    AFTER_CALL
        .checked_sub(now.saturating_duration_since(ended))
        .filter(|left| !left.is_zero())
}

/// How often a partial batch is written (and writes that failed are tried again).
const FLUSH_EVERY: Duration = Duration::from_millis(50);

/// The default byte budget of the queue: a dozen 72-blob getPayload answers (20 MB each),
/// about two minutes of mainnet's busiest traffic.
pub const DEFAULT_QUEUE_BYTES: usize = 256 << 20;

/// The default bound on a body's decoded size: the REST-SSZ spec's `MAX_REQUEST_BODY_SIZE`.
pub const DEFAULT_MAX_DECODED: usize = 64 << 20;

/// Counters of a recorder, for `/_sszgate/status`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecorderStats {
    /// Captures accepted into the queue.
    pub queued: u64,
    /// Records written (a batch call gives several).
    pub recorded: u64,
    /// Captures dropped because the queue was full (in captures or in bytes).
    pub dropped: u64,
    /// Sink write failures (each retried at the next flush).
    pub sink_errors: u64,
    /// Records a sink never took: dropped after `MAX_PENDING` waited for a failing sink.
    pub lost: u64,
    /// Records kept for a failing sink (its file locked, its disk full) until it takes them
    /// (the most over the sinks); `recorded` counts them already.
    pub pending: u64,
    /// Captures waiting, and answers still being copied for their record (the spliced relay
    /// queues a capture once its copy is whole, just after the CL has the answer).
    pub queue_depth: u64,
    /// Bytes of body held by the captures waiting (and the one being read).
    pub queue_bytes: u64,
    /// Faults (panics) caught while reading a capture or writing a batch.
    pub faults: u64,
    /// Remote sinks: bytes in their spools.
    pub spool_bytes: u64,
    /// Remote sinks: rows spooled and not yet taken by the server.
    pub spool_waiting: u64,
    /// Remote sinks: rows the server took.
    pub shipped: u64,
    /// Remote sinks: failed tries (each retried).
    pub ship_errors: u64,
}

/// An answer being copied for its record: counted as a waiting capture until dropped.
pub struct Copying(Arc<Recorder>);

impl Drop for Copying {
    fn drop(&mut self) {
        self.0.counters.copying.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Counters {
    queued: AtomicU64,
    processed: AtomicU64,
    queued_bytes: AtomicU64,
    recorded: AtomicU64,
    dropped: AtomicU64,
    sink_errors: AtomicU64,
    lost: AtomicU64,
    pending: AtomicU64,
    /// Answers being copied for their record (see [`Recorder::copying`]).
    copying: AtomicU64,
    faults: AtomicU64,
    spool_bytes: AtomicU64,
    spool_waiting: AtomicU64,
    shipped: AtomicU64,
    ship_errors: AtomicU64,
}

/// How a recorder is set up.
#[derive(Clone, Debug)]
pub struct RecorderConfig {
    /// `proxy` or `driver`, stamped on every record.
    pub source: &'static str,
    /// The user's labels, stamped on every record.
    pub labels: Vec<(String, String)>,
    /// Captures queued at most.
    pub capacity: usize,
    /// Bytes of body the queued captures may hold alive at most (see [`DEFAULT_QUEUE_BYTES`]).
    pub queue_bytes: usize,
    /// The bound on a body's decoded size when a capture gives none (answers, and requests
    /// without their own limit).
    pub max_decoded: usize,
    /// Verification of every finished call, on the worker's thread.
    pub verify: sszgate_verify::Mode,
}

impl Default for RecorderConfig {
    fn default() -> RecorderConfig {
        RecorderConfig {
            source: "proxy",
            labels: Vec::new(),
            capacity: 65_536,
            queue_bytes: DEFAULT_QUEUE_BYTES,
            max_decoded: DEFAULT_MAX_DECODED,
            verify: sszgate_verify::Mode::Off,
        }
    }
}

/// The recorder handle, shared by every connection of a gateway.
pub struct Recorder {
    /// Captures with the instant each was queued.
    sender: SyncSender<(Instant, Capture)>,
    /// Set once by `shutdown`: no capture is taken after it.
    closing: AtomicBool,
    /// `record` calls under way, so `shutdown` knows when no capture can still arrive.
    entering: AtomicUsize,
    /// Told to the worker once nothing can arrive any more: drain, write, exit.
    done: Arc<AtomicBool>,
    /// The byte budget of the queue.
    queue_bytes: u64,
    counters: Arc<Counters>,
    metrics: Arc<Metrics>,
    events: Arc<Events>,
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
        Recorder::with_config(
            sinks,
            RecorderConfig {
                source,
                labels,
                capacity,
                verify,
                ..RecorderConfig::default()
            },
        )
    }

    /// Starts the worker with `sinks` as `config` says.
    pub fn with_config(sinks: Vec<Sink>, config: RecorderConfig) -> Recorder {
        #[cfg(test)]
        return Recorder::with_config_and_faults(sinks, config, Faults::default());
        #[cfg(not(test))]
        Recorder::start_worker(sinks, config, |w| w)
    }

    /// As [`Recorder::with_config`], with faults injected into the worker.
    #[cfg(test)]
    fn with_config_and_faults(
        sinks: Vec<Sink>,
        config: RecorderConfig,
        faults: Faults,
    ) -> Recorder {
        Recorder::start_worker(sinks, config, |mut w| {
            w.faults = faults;
            w
        })
    }

    /// Starts the worker, set up by `setup`, and the handle in front of it.
    fn start_worker(
        sinks: Vec<Sink>,
        config: RecorderConfig,
        setup: impl FnOnce(Worker) -> Worker,
    ) -> Recorder {
        let capacity = config.capacity.max(1);
        let (sender, receiver) = sync_channel(capacity);
        let counters = Arc::new(Counters::default());
        let metrics = Arc::new(Metrics::new());
        let events = Arc::new(Events::default());
        let el_client = Arc::new(RwLock::new(None));
        let done = Arc::new(AtomicBool::new(false));
        let worker = setup(Worker::new(
            sinks,
            receiver,
            &config,
            WorkerShared {
                done: done.clone(),
                counters: counters.clone(),
                metrics: metrics.clone(),
                events: events.clone(),
                el_client: el_client.clone(),
            },
        ));
        let handle = std::thread::Builder::new()
            .name("sszgate-recorder".into())
            // Facts are scanned from bodies of up to tens of MB; keep room for the SSZ walk.
            .stack_size(16 << 20)
            .spawn(move || worker.run())
            .expect("spawning the recorder thread");
        Recorder {
            worker_thread: handle.thread().clone(),
            wake_depth: (capacity as u64).div_ceil(2),
            sender,
            closing: AtomicBool::new(false),
            entering: AtomicUsize::new(0),
            done,
            queue_bytes: config.queue_bytes as u64,
            counters,
            metrics,
            events,
            el_client,
            worker: Mutex::new(Some(handle)),
        }
    }

    /// Hands a capture to the worker without waiting and without a lock; counts a drop when
    /// the queue is full, in captures or in bytes, or closed.
    pub fn record(&self, capture: Capture) {
        // SeqCst pairs with `shutdown`: either this call sees `closing`, or `shutdown` sees
        // it under way and waits for it before the worker's last drain.
        self.entering.fetch_add(1, Ordering::SeqCst);
        if !self.closing.load(Ordering::SeqCst) {
            self.enqueue(capture);
        } else {
            self.count_drop();
        }
        self.entering.fetch_sub(1, Ordering::SeqCst);
    }

    fn enqueue(&self, capture: Capture) {
        let size = capture.held_bytes();
        let held = self
            .counters
            .queued_bytes
            .fetch_add(size, Ordering::Relaxed)
            + size;
        if held > self.queue_bytes {
            self.counters
                .queued_bytes
                .fetch_sub(size, Ordering::Relaxed);
            return self.count_drop();
        }
        match self.sender.try_send((Instant::now(), capture)) {
            Ok(()) => {
                let queued = self.counters.queued.fetch_add(1, Ordering::Relaxed) + 1;
                let processed = self.counters.processed.load(Ordering::Relaxed);
                if queued.saturating_sub(processed) >= self.wake_depth {
                    self.worker_thread.unpark();
                }
            }
            Err(_) => {
                self.counters
                    .queued_bytes
                    .fetch_sub(size, Ordering::Relaxed);
                self.count_drop();
            }
        }
    }

    fn count_drop(&self) {
        self.counters.dropped.fetch_add(1, Ordering::Relaxed);
        self.metrics.dropped.inc();
    }

    /// Counts a capture as waiting while its answer is still being copied (the spliced relay's
    /// record is queued after the CL has the answer): whoever waits for the queue to drain
    /// waits for it too, until the returned guard is dropped (after the capture is recorded).
    pub fn copying(self: &Arc<Self>) -> Copying {
        self.counters.copying.fetch_add(1, Ordering::SeqCst);
        Copying(self.clone())
    }

    /// The largest capture the queue can hold, bytes: the tap keeps no more of an answer.
    pub fn max_capture_bytes(&self) -> u64 {
        self.queue_bytes
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
            queue_depth: queued.saturating_sub(c.processed.load(Ordering::Relaxed))
                + c.copying.load(Ordering::Relaxed),
            queue_bytes: c.queued_bytes.load(Ordering::Relaxed),
            faults: c.faults.load(Ordering::Relaxed),
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

    /// The live stream of records, each as it is made (see [`crate::events`]).
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// Stops accepting captures, writes everything queued, and waits for the worker.
    pub fn shutdown(&self) {
        self.closing.store(true, Ordering::SeqCst);
        while self.entering.load(Ordering::SeqCst) != 0 {
            std::thread::yield_now();
        }
        self.done.store(true, Ordering::SeqCst);
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
/// Records kept per failing sink before the oldest are dropped.
const MAX_PENDING: usize = 200_000;

/// What the worker shares with the handle.
struct WorkerShared {
    done: Arc<AtomicBool>,
    counters: Arc<Counters>,
    metrics: Arc<Metrics>,
    events: Arc<Events>,
    el_client: Arc<RwLock<Option<String>>>,
}

/// Records kept for one failing sink, and their approximate bytes.
#[derive(Default)]
struct Pending {
    records: Vec<Record>,
    bytes: usize,
}

/// Faults injected in tests: called with each capture before it is read, and with each
/// batch before it is written.
#[cfg(test)]
#[derive(Default)]
struct Faults {
    read: Option<ReadFault>,
    write: Option<WriteFault>,
}

/// A fault injected before a capture is read.
#[cfg(test)]
type ReadFault = Box<dyn FnMut(&Capture) + Send>;

/// A fault injected before a batch is written.
#[cfg(test)]
type WriteFault = Box<dyn FnMut(&[Record]) + Send>;

struct Worker {
    /// Captures with the instant each was queued.
    receiver: Receiver<(Instant, Capture)>,
    /// Set by the handle once no capture can arrive any more.
    done: Arc<AtomicBool>,
    /// Per sink, the records it failed to take, retried first at every flush.
    pending: Vec<Pending>,
    /// Bytes of records kept for one failing sink at most (the queue's budget).
    pending_bytes: usize,
    /// Checks of what crossed the link, when asked for.
    verifier: Option<sszgate_verify::Verifier>,
    sinks: Vec<Sink>,
    /// Bytes of each body to keep with a record (the largest any sink wants).
    body_bytes: usize,
    /// The bound on a decoded body when its capture gives none.
    max_decoded: usize,
    /// The buffer answers are joined into, kept across records.
    scratch: Vec<u8>,
    source: &'static str,
    labels: String,
    counters: Arc<Counters>,
    metrics: Arc<Metrics>,
    events: Arc<Events>,
    el_client: Arc<RwLock<Option<String>>>,
    seq: u64,
    #[cfg(test)]
    faults: Faults,
}

impl Worker {
    fn new(
        sinks: Vec<Sink>,
        receiver: Receiver<(Instant, Capture)>,
        config: &RecorderConfig,
        shared: WorkerShared,
    ) -> Worker {
        let labels = serde_json::to_string(
            &config
                .labels
                .iter()
                .cloned()
                .collect::<std::collections::BTreeMap<_, _>>(),
        )
        .expect("labels serialize");
        Worker {
            pending: sinks.iter().map(|_| Pending::default()).collect(),
            pending_bytes: config.queue_bytes,
            body_bytes: sinks.iter().map(Sink::body_bytes).max().unwrap_or(0),
            receiver,
            done: shared.done,
            verifier: (config.verify != sszgate_verify::Mode::Off)
                .then(|| sszgate_verify::Verifier::new(config.verify)),
            sinks,
            max_decoded: config.max_decoded,
            scratch: Vec::new(),
            source: config.source,
            labels,
            counters: shared.counters,
            metrics: shared.metrics,
            events: shared.events,
            el_client: shared.el_client,
            seq: 0,
            #[cfg(test)]
            faults: Faults::default(),
        }
    }

    fn run(mut self) {
        let mut batch = Vec::with_capacity(BATCH);
        let mut flushed = Instant::now();
        loop {
            // Read before draining: once set, nothing more can arrive, so this drain is the last.
            let finishing = self.done.load(Ordering::SeqCst);
            while let Ok((queued, capture)) = self.receiver.try_recv() {
                if !finishing {
                    wait_after_call(queued);
                }
                self.take(capture, &mut batch);
                if batch.len() >= BATCH {
                    self.flush(&mut batch);
                    flushed = Instant::now();
                }
            }
            if finishing {
                return self.finish(batch);
            }
            if flushed.elapsed() >= FLUSH_EVERY {
                self.flush(&mut batch);
                flushed = Instant::now();
            }
            self.publish_depth();
            self.publish_remote(self.sinks.iter().filter_map(Sink::remote_stats).collect());
            std::thread::park_timeout(TICK);
        }
    }

    /// The last flush at shutdown: a sink that still fails gets a little longer before its
    /// records are given up (and counted); remote sinks send what they can.
    fn finish(mut self, mut batch: Vec<Record>) {
        self.flush(&mut batch);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.pending.iter().any(|p| !p.records.is_empty()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(200));
            self.flush(&mut batch);
        }
        let left: usize = self.pending.iter().map(|p| p.records.len()).sum();
        lose(&self.counters, &self.metrics, left as u64);
        let closed = self.sinks.drain(..).filter_map(Sink::close).collect();
        self.publish_remote(closed);
    }

    /// One capture off the queue: its records into `batch`, its bytes given back to the
    /// queue's budget once it has been read.
    fn take(&mut self, capture: Capture, batch: &mut Vec<Record>) {
        let size = capture.held_bytes();
        self.counters.processed.fetch_add(1, Ordering::Relaxed);
        self.records_guarded(capture, batch);
        self.counters
            .queued_bytes
            .fetch_sub(size, Ordering::Relaxed);
    }

    /// [`Worker::records`], with a fault caught: counted, logged with the call's identity,
    /// and the call recorded with what the gateway knew of it.
    fn records_guarded(&mut self, capture: Capture, out: &mut Vec<Record>) {
        let before = out.len();
        // What the gateway knew, kept aside without the bodies (cheap: no body is copied).
        let (request_bytes, answer_len) = (capture.request.len() as u64, capture.answer_len());
        let bare = Capture {
            request: Bytes::new(),
            response: Vec::new(),
            ..capture.clone()
        };
        let read = std::panic::catch_unwind(AssertUnwindSafe(|| self.records(capture, out)));
        if let Err(panic) = read {
            out.truncate(before);
            let why = panic_message(&*panic);
            self.fault("read", &call_identity(&bare), &why);
            let mut record = self.base_record(&bare, request_bytes, answer_len);
            record.capture_note = Some(format!("recorder fault while reading this call: {why}"));
            self.push(record, out);
        }
    }

    /// Counts and logs one caught fault.
    fn fault(&self, stage: &'static str, call: &str, why: &str) {
        self.counters.faults.fetch_add(1, Ordering::Relaxed);
        self.metrics.fault(stage);
        tracing::error!(
            stage,
            call,
            fault = why,
            "recorder fault caught; recording goes on"
        );
    }

    fn publish_depth(&self) {
        let depth = self
            .counters
            .queued
            .load(Ordering::Relaxed)
            .saturating_sub(self.counters.processed.load(Ordering::Relaxed));
        // Records kept for a failing sink are waiting to be written too, and so are answers
        // still being copied for theirs.
        let pending = self.counters.pending.load(Ordering::Relaxed)
            + self.counters.copying.load(Ordering::Relaxed);
        self.metrics.queue_depth.set((depth + pending) as i64);
        self.metrics
            .queue_bytes
            .set(self.counters.queued_bytes.load(Ordering::Relaxed) as i64);
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
    /// flush; past `MAX_PENDING` records, or the queue's byte budget, for one sink the oldest
    /// are dropped and counted. A sink that faults (panics) on a batch loses that batch,
    /// counted, and takes the next.
    fn flush(&mut self, batch: &mut Vec<Record>) {
        let pending_any = self.pending.iter().any(|p| !p.records.is_empty());
        if batch.is_empty() && !pending_any {
            return;
        }
        for i in 0..self.sinks.len() {
            if !self.pending[i].records.is_empty() {
                let waiting = std::mem::take(&mut self.pending[i]);
                match self.write_guarded(i, &waiting.records) {
                    Ok(refused) => {
                        lose(&self.counters, &self.metrics, refused);
                        tracing::info!(sink = %self.sinks[i].name(), records = waiting.records.len(), "written after earlier failures");
                    }
                    Err(e) => {
                        self.pending[i] = waiting;
                        tracing::warn!(sink = %self.sinks[i].name(), error = %e, waiting = self.pending[i].records.len() + batch.len(), "writing records failed again; kept for the next try");
                        self.keep(i, batch);
                        continue;
                    }
                }
            }
            if batch.is_empty() {
                continue;
            }
            match self.write_guarded(i, batch) {
                Ok(refused) => lose(&self.counters, &self.metrics, refused),
                Err(e) => {
                    tracing::warn!(sink = %self.sinks[i].name(), error = %e, records = batch.len(), "writing records failed; kept for the next try");
                    self.keep(i, batch);
                }
            }
        }
        self.counters
            .recorded
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        batch.clear();
        let pending = self
            .pending
            .iter()
            .map(|p| p.records.len())
            .max()
            .unwrap_or(0);
        self.counters
            .pending
            .store(pending as u64, Ordering::Relaxed);
    }

    /// Keeps `batch` for sink `i`, which failed; the oldest kept go past the bounds.
    fn keep(&mut self, i: usize, batch: &[Record]) {
        let pending = &mut self.pending[i];
        pending.records.extend(batch.iter().cloned());
        pending.bytes += batch.iter().map(Record::approx_bytes).sum::<usize>();
        let mut over = pending.records.len().saturating_sub(MAX_PENDING);
        let mut bytes = pending.bytes;
        while bytes > self.pending_bytes && over < pending.records.len() {
            bytes -= pending.records[over].approx_bytes();
            over += 1;
        }
        if over > 0 {
            let gone: usize = pending
                .records
                .drain(..over)
                .map(|r| r.approx_bytes())
                .sum();
            pending.bytes -= gone;
            lose(&self.counters, &self.metrics, over as u64);
        }
    }

    /// Writes `records` to sink `i`; a failure is counted, and so is a fault (a panic), which
    /// loses the records (writing them again would fault again) and is reported as `Ok`.
    fn write_guarded(&mut self, i: usize, records: &[Record]) -> crate::Result<u64> {
        #[cfg(test)]
        if let Some(hook) = &mut self.faults.write
            && let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| hook(records)))
        {
            return Ok(self.sink_fault(records, &panic_message(&*panic)));
        }
        let sink = &mut self.sinks[i];
        match std::panic::catch_unwind(AssertUnwindSafe(|| sink.write(records))) {
            Ok(Err(e)) => {
                self.counters.sink_errors.fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
            Ok(written) => written,
            Err(panic) => Ok(self.sink_fault(records, &panic_message(&*panic))),
        }
    }

    /// A sink that panicked on `records`: counted as a fault, its records as lost.
    fn sink_fault(&self, records: &[Record], why: &str) -> u64 {
        let first = records.first().map_or(0, |r| r.seq);
        let call = format!("records {first}..{}", first + records.len() as u64);
        self.fault("write", &call, why);
        records.len() as u64
    }

    /// The records of one capture: one per call, one per element of a JSON-RPC batch, made
    /// by the stages of [`pipeline`]: join, bounded decode, split, facts, check, record.
    fn records(&mut self, mut c: Capture, out: &mut Vec<Record>) {
        #[cfg(test)]
        if let Some(hook) = &mut self.faults.read {
            hook(&c);
        }
        let answer_len = c.answer_len();
        let frames = std::mem::take(&mut c.response);
        let mut scratch = std::mem::take(&mut self.scratch);
        let keeps_bodies = self.body_bytes > 0;
        let mode = call::blob_mode(self.verifier.as_ref());
        let answer = pipeline::join(&c, &frames, mode, keeps_bodies, &mut scratch);
        // Facts are read from the bodies as the endpoints meant them: without their content
        // coding (the relay passed the coded bytes on untouched), each bounded.
        let bodies = pipeline::decode(&c, answer, self.max_decoded, self.max_decoded);
        let transport = c.transport.unwrap_or(Transport::Other);
        for call in pipeline::split(transport, &bodies.request.body, &bodies.response.body) {
            let mut facts = pipeline::facts(&c, transport, &call);
            if let Some(verifier) = &mut self.verifier {
                pipeline::check(verifier, &c, &call, &bodies, &mut facts);
            }
            let base = self.base_record(&c, c.request.len() as u64, answer_len);
            let record = pipeline::record(base, &c, &call, &bodies, self.body_bytes, facts);
            self.push(record, out);
        }
        drop(bodies);
        // Keep the buffer for the next answer, unless it grew past any answer worth keeping.
        if scratch.capacity() <= 64 << 20 {
            self.scratch = scratch;
        }
    }

    /// A record of `c` with what the gateway knew: no facts, `request_bytes` of request and
    /// `answer_len` of answer as they came; [`Worker::records`] fills in the rest per call.
    fn base_record(&self, c: &Capture, request_bytes: u64, answer_len: u64) -> Record {
        let upstream = c.upstream_ttlb_us;
        Record {
            seq: 0,
            source: self.source,
            arrival_unix_us: c.arrival_unix_us,
            transport: c.transport.unwrap_or(Transport::Other).name(),
            http_version: c.http_version,
            method: c.method.clone(),
            resource: c.route.as_ref().map(|r| r.resource.name()),
            fork: c.fork.clone(),
            status: c.status,
            error_side: c.error_side.map(|s| s.name()),
            request_bytes,
            response_bytes: answer_len,
            request_decoded_bytes: None,
            response_decoded_bytes: None,
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
            el_client: self.el_client.read().expect("el client lock").clone(),
            labels: self.labels.clone(),
            capture_note: None,
            injected: c.injected.clone(),
            facts: Facts {
                error_message: c.error_message.clone(),
                ..Facts::default()
            },
            request_body: None,
            response_body: None,
        }
    }

    /// Numbers `record`, counts it in the metrics and adds it to `out`.
    fn push(&mut self, mut record: Record, out: &mut Vec<Record>) {
        self.seq += 1;
        record.seq = self.seq;
        self.metrics.observe(&record);
        self.events.publish(&record);
        out.push(record);
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

/// What a caught panic said.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
}

/// A call's identity for the log: arrival time, transport, target and method.
fn call_identity(c: &Capture) -> String {
    format!(
        "{} {} {} {}",
        c.arrival_unix_us,
        c.transport.unwrap_or(Transport::Other).name(),
        c.target,
        c.method.as_deref().unwrap_or("-")
    )
}

#[cfg(test)]
mod tests_support {
    use super::*;

    /// A worker with `sinks`, verifying in `mode`, fed by hand.
    pub(super) fn worker_with(mode: sszgate_verify::Mode, sinks: Vec<Sink>) -> Worker {
        let (_, receiver) = sync_channel(1);
        let config = RecorderConfig {
            verify: mode,
            ..RecorderConfig::default()
        };
        let shared = WorkerShared {
            done: Arc::default(),
            counters: Arc::default(),
            metrics: Arc::new(Metrics::new()),
            events: Arc::default(),
            el_client: Arc::default(),
        };
        let mut worker = Worker::new(sinks, receiver, &config, shared);
        // A clock that stands still: a KZG check is never earned back within a test, so which
        // calls have theirs due does not depend on how fast the machine is.
        let hand = sszgate_verify::pace::HandClock::default();
        worker.verifier = (mode != sszgate_verify::Mode::Off)
            .then(|| sszgate_verify::Verifier::with_clock(mode, hand.clock()));
        worker
    }
}

#[cfg(test)]
mod tests {
    use sszgate_engine::{blob_answer::Answer, ssz::BYTES_PER_BLOB};

    use super::*;

    /// A worker with no sinks, verifying in `mode`, fed by hand.
    fn worker(mode: sszgate_verify::Mode) -> Worker {
        super::tests_support::worker_with(mode, Vec::new())
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
    fn a_batch_element_is_recorded_with_its_own_bytes_and_method() {
        let status = r#"{"jsonrpc":"2.0","id":1,"method":"engine_newPayloadV4","params":[]}"#;
        let request = format!("[{status}]");
        let response = r#"[{"jsonrpc":"2.0","id":1,"result":{"status":"VALID"}}]"#;
        let c = capture(&request, response, 100_000);
        let answer = Answer::whole(response.as_bytes());
        let bodies = pipeline::decode(&c, answer, 1 << 20, 1 << 20);
        let calls = pipeline::split(
            Transport::JsonRpc,
            &bodies.request.body,
            &bodies.response.body,
        );
        let w = worker(sszgate_verify::Mode::Off);
        let base = w.base_record(&c, 999, 999);
        let facts = pipeline::facts(&c, Transport::JsonRpc, &calls[0]);
        let record = pipeline::record(base, &c, &calls[0], &bodies, 0, facts);
        assert_eq!(record.method.as_deref(), Some("engine_newPayloadV4"));
        assert_eq!(record.request_bytes, status.len() as u64);
        assert_eq!(record.response_bytes, response.len() as u64 - 2);
        assert_eq!(
            (record.request_body, record.facts.batch_index),
            (None, Some(0))
        );
    }

    #[test]
    fn an_answer_the_fixed_shape_readers_refuse_is_checked_once_as_joined() {
        // An entry with a member the fixed-shape readers do not know: its digits are left out,
        // and the checks read it through serde as joined, without joining it again; the
        // verdict is the one of the whole answer (joined whole when bodies are kept).
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
        // Joined without digits (the skeleton is what stays in the buffer), against joined
        // whole.
        let (verdict, joined, bytes) = verdict_of(0);
        assert!(joined < 40_000, "{joined}");
        let (whole_verdict, whole_joined, whole_bytes) = verdict_of(100);
        assert_eq!(whole_joined, odd.len());
        assert_eq!(verdict, whole_verdict);
        assert_eq!((bytes, whole_bytes), (odd.len() as u64, odd.len() as u64));
        assert_eq!(verdict.0.as_deref(), Some("ok"), "{verdict:?}");
    }
}

#[cfg(test)]
mod fault_tests {
    use std::sync::mpsc;

    use super::*;
    use crate::SinkSpec;

    /// A one-call capture of a newPayloadV1 answered VALID, at `target`.
    fn call(target: &str) -> Capture {
        Capture {
            transport: Some(Transport::JsonRpc),
            target: target.to_string(),
            status: 200,
            request: Bytes::from_static(
                br#"{"jsonrpc":"2.0","id":1,"method":"engine_newPayloadV1","params":[{}]}"#,
            ),
            response: vec![Bytes::from_static(
                br#"{"jsonrpc":"2.0","id":1,"result":{"status":"VALID","latestValidHash":null,"validationError":null}}"#,
            )],
            ..Capture::default()
        }
    }

    fn sqlite(dir: &tempfile::TempDir) -> (Sink, std::path::PathBuf) {
        let path = dir.path().join("calls.db");
        let spec = SinkSpec::Sqlite(path.display().to_string());
        (Sink::open(&spec).unwrap().unwrap(), path)
    }

    fn rows(path: &std::path::Path) -> Vec<(String, Option<String>, Option<String>)> {
        let conn = rusqlite::Connection::open(path).unwrap();
        let mut q = conn
            .prepare("SELECT labels, payload_status, capture_note FROM calls ORDER BY seq")
            .unwrap();
        q.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn a_fault_while_reading_a_call_is_caught_counted_and_the_next_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let (sink, path) = sqlite(&dir);
        let mut w = super::tests_support::worker_with(sszgate_verify::Mode::Off, vec![sink]);
        w.faults.read = Some(Box::new(|c: &Capture| {
            assert!(c.target != "/boom", "injected fault reading {}", c.target);
        }));
        let mut batch = Vec::new();
        for target in ["/one", "/boom", "/three"] {
            w.take(call(target), &mut batch);
        }
        w.flush(&mut batch);
        let rows = rows(&path);
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!(rows[0].1.as_deref(), Some("VALID"));
        assert_eq!(rows[2].1.as_deref(), Some("VALID"));
        // The faulted call is recorded with what the gateway knew, and a note saying why.
        assert_eq!(rows[1].1, None);
        assert_eq!(
            rows[1].2.as_deref(),
            Some("recorder fault while reading this call: injected fault reading /boom")
        );
        let conn = rusqlite::Connection::open(&path).unwrap();
        let sizes: (i64, i64) = conn
            .query_row(
                "SELECT request_bytes, response_bytes FROM calls WHERE capture_note IS NOT NULL",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        let c = call("/boom");
        assert_eq!(
            sizes,
            (c.request.len() as i64, c.response[0].len() as i64),
            "its sizes as they came"
        );
        assert_eq!(w.counters.faults.load(Ordering::Relaxed), 1);
        assert!(
            w.metrics
                .render()
                .contains(r#"sszgate_recorder_faults_total{stage="read"} 1"#),
            "{}",
            w.metrics.render()
        );
    }

    #[test]
    fn a_fault_while_writing_loses_that_batch_only_and_recording_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let (sink, path) = sqlite(&dir);
        let mut w = super::tests_support::worker_with(sszgate_verify::Mode::Off, vec![sink]);
        let mut faulted = false;
        w.faults.write = Some(Box::new(move |records: &[Record]| {
            if !faulted {
                faulted = true;
                panic!("injected fault writing {} records", records.len());
            }
        }));
        let mut batch = Vec::new();
        w.take(call("/lost-1"), &mut batch);
        w.take(call("/lost-2"), &mut batch);
        w.flush(&mut batch);
        w.take(call("/kept"), &mut batch);
        w.flush(&mut batch);
        assert_eq!(rows(&path).len(), 1);
        assert_eq!(w.counters.faults.load(Ordering::Relaxed), 1);
        assert_eq!(w.counters.lost.load(Ordering::Relaxed), 2);
        assert!(
            w.metrics
                .render()
                .contains(r#"sszgate_recorder_faults_total{stage="write"} 1"#)
        );
    }

    #[test]
    fn the_queue_holds_at_most_its_byte_budget_and_calls_never_wait() {
        // The worker is held on its first capture, so what is queued is known exactly.
        let (release, held) = mpsc::channel::<()>();
        let held = Mutex::new(held);
        let faults = Faults {
            read: Some(Box::new(move |c: &Capture| {
                if c.target == "/first" {
                    let _ = held.lock().unwrap().recv();
                }
            })),
            write: None,
        };
        let config = RecorderConfig {
            queue_bytes: 1_000,
            ..RecorderConfig::default()
        };
        let recorder = Recorder::with_config_and_faults(Vec::new(), config, faults);
        let sized = |target: &str, bytes: usize| Capture {
            target: target.to_string(),
            request: Bytes::from(vec![b' '; bytes]),
            ..Capture::default()
        };
        recorder.record(sized("/first", 600));
        // Over the budget while the first is still held: dropped at once.
        recorder.record(sized("/second", 600));
        recorder.record(sized("/third", 300));
        // Larger than the whole budget: never queued.
        recorder.record(sized("/huge", 5_000));
        let stats = recorder.stats();
        assert_eq!((stats.queued, stats.dropped), (2, 2));
        assert_eq!(stats.queue_bytes, 900);
        release.send(()).unwrap();
        recorder.shutdown();
        let stats = recorder.stats();
        assert_eq!((stats.queued, stats.dropped, stats.queue_bytes), (2, 2, 0));
        // After shutdown, a capture is counted as dropped, never lost silently.
        recorder.record(sized("/late", 10));
        assert_eq!(recorder.stats().dropped, 3);
    }

    #[test]
    fn a_capture_is_read_once_after_call_has_passed_since_it_was_queued() {
        let now = Instant::now();
        assert_eq!(left_after_call(now, now), Some(AFTER_CALL));
        assert_eq!(
            left_after_call(now, now + AFTER_CALL / 4),
            Some(AFTER_CALL - AFTER_CALL / 4)
        );
        // A backlog queued long ago is read at once.
        assert_eq!(left_after_call(now, now + AFTER_CALL), None);
        assert_eq!(left_after_call(now, now + 3 * AFTER_CALL), None);

        let (read_tx, read_rx) = mpsc::channel::<Instant>();
        let read_tx = Mutex::new(read_tx);
        let faults = Faults {
            read: Some(Box::new(move |_: &Capture| {
                let _ = read_tx.lock().unwrap().send(Instant::now());
            })),
            write: None,
        };
        let recorder =
            Recorder::with_config_and_faults(Vec::new(), RecorderConfig::default(), faults);
        let queued = Instant::now();
        recorder.record(Capture::default());
        let read = read_rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert!(
            read.duration_since(queued) >= AFTER_CALL,
            "read {:?} after it was queued",
            read.duration_since(queued)
        );
        recorder.shutdown();
        assert_eq!(recorder.stats().queued, 1);
    }
}
