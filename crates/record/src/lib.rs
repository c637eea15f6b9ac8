//! Call records of sszgate: what is recorded about each Engine API call, and where it goes.
//!
//! # Persistence model
//! Recording never sits on the forward path. The gateway hands a [`Capture`] (the call's
//! classification, timings and refcounted body buffers, never copies) to the [`Recorder`] with
//! a non-blocking `try_send` into a bounded queue; when the queue is full the record is dropped
//! and the drop is counted, the CL's call is never held. A worker thread drains the queue every
//! 10 ms (sooner when it is half full; the forward path does not wake it per call) and puts each
//! capture through a pipeline of stages: its answer joined from its frames (a blob answer
//! without its blobs' digits when nothing decodes them), the bodies' content codings removed
//! (bounded), a batch split into its calls, the Engine API facts of each read with a scanner
//! ([`meta`]; not a full parse), each call checked when `--verify` asks
//! (`sszgate_verify::call`), its record made; it updates the Prometheus metrics and writes the
//! records to the sinks in batches (SQLite in
//! one transaction per batch, JSON lines, ClickHouse through a local spool). On shutdown the queue is drained and the sinks are
//! flushed before [`Recorder::shutdown`] returns.
//!
//! Not here: HTTP, the relay itself, or what a message means beyond the facts (that is
//! `sszgate-engine`).

pub mod clickhouse;
pub mod events;
pub mod meta;
pub mod metrics;
mod pipeline;
mod record;
mod recorder;
pub mod sink;
pub mod spool;

pub use record::{Capture, ErrorSide, Facts, Record, Transport};
pub use recorder::{
    AFTER_CALL, Copying, DEFAULT_MAX_DECODED, DEFAULT_QUEUE_BYTES, Recorder, RecorderConfig,
    RecorderStats, wait_after_call,
};
pub use sink::{RemoteStats, Sink, SinkOptions, SinkSpec};

/// Errors of the record crate (opening or writing sinks).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// SQLite refused something.
    #[error("sqlite {path}: {source}")]
    Sqlite {
        /// The database file.
        path: String,
        /// The cause.
        source: rusqlite::Error,
    },
    /// A file could not be opened or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A `--store` value that names no sink.
    #[error(
        "invalid store {0:?} (expected sqlite:PATH, jsonl:PATH, jsonl:-, clickhouse:http://HOST:PORT/DB or none)"
    )]
    BadSpec(String),
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
