//! Where records go: SQLite (the default, one file per node), JSON lines, and ClickHouse.
//!
//! SQLite: WAL mode, one transaction per batch, the schema versioned with `PRAGMA
//! user_version` and applied by ordered migrations, so a newer sszgate upgrades an older file
//! in place. JSON lines: one record per line, to stdout (`jsonl:-`) or a file (appended).
//! ClickHouse: records are appended to a local spool and shipped by their own thread
//! (`clickhouse`), so a write here never waits for the server.

use std::{
    fs::OpenOptions,
    io::{BufWriter, Write},
    path::PathBuf,
    sync::Arc,
    time::Duration,
};

use rusqlite::{Connection, params};

use crate::{
    Error, Result,
    clickhouse::{self, ClickHouseUrl, Identity, Shipper},
    record::Record,
    spool::{Spool, SpoolStats},
};

/// A parsed `--store` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SinkSpec {
    /// `sqlite:PATH`.
    Sqlite(String),
    /// `jsonl:PATH`, `jsonl:-` for stdout.
    Jsonl(String),
    /// `clickhouse:http://[USER[:PASSWORD]@]HOST:PORT/DB`.
    ClickHouse(ClickHouseUrl),
    /// `none`: metrics only.
    None,
}

impl std::str::FromStr for SinkSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<SinkSpec> {
        match s.split_once(':') {
            Some(("sqlite", path)) if !path.is_empty() => Ok(SinkSpec::Sqlite(path.to_string())),
            Some(("jsonl", path)) if !path.is_empty() => Ok(SinkSpec::Jsonl(path.to_string())),
            Some(("clickhouse", url)) => url
                .parse()
                .map(SinkSpec::ClickHouse)
                .map_err(|detail| Error::BadSpec(format!("{s}: {detail}"))),
            None if s == "none" => Ok(SinkSpec::None),
            _ => Err(Error::BadSpec(s.to_string())),
        }
    }
}

/// How sinks that keep rows for a remote server are set up.
#[derive(Clone, Debug)]
pub struct SinkOptions {
    /// The directory spools are kept in (one subdirectory per remote sink).
    pub spool_dir: PathBuf,
    /// Bytes a spool may hold on disk before new rows are refused (and counted).
    pub spool_max_bytes: u64,
    /// Who writes the rows (stamped on each).
    pub identity: Identity,
    /// How long the shipper goes on sending at shutdown before leaving rows for the next start.
    pub drain: Duration,
    /// Per-request timeout towards the remote server.
    pub timeout: Duration,
}

impl Default for SinkOptions {
    fn default() -> SinkOptions {
        SinkOptions {
            spool_dir: PathBuf::from("sszgate-spool"),
            spool_max_bytes: 1 << 30,
            identity: Identity::new(None, None),
            drain: Duration::from_secs(5),
            timeout: Duration::from_secs(30),
        }
    }
}

/// Figures of a sink that ships to a remote server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RemoteStats {
    /// The spool's figures.
    pub spool: SpoolStats,
    /// Rows the server took.
    pub shipped: u64,
    /// Failed tries.
    pub errors: u64,
}

/// An open sink.
pub enum Sink {
    /// A SQLite database.
    Sqlite {
        /// The file.
        path: String,
        /// The connection (owned by the recorder's worker thread).
        conn: Box<Connection>,
    },
    /// A JSON lines stream.
    Jsonl {
        /// The file, or `-`.
        path: String,
        /// Bytes of each body written with the record (0: none).
        body_bytes: usize,
        /// The writer.
        out: BufWriter<Box<dyn Write + Send>>,
    },
    /// A ClickHouse database, through a local spool.
    ClickHouse {
        /// The address (without password).
        name: String,
        /// Who writes the rows.
        identity: Identity,
        /// Rows waiting for the server.
        spool: Arc<Spool>,
        /// The thread that sends them.
        shipper: Shipper,
    },
}

/// The schema migrations, in order; `user_version` counts how many are applied.
const MIGRATIONS: &[&str] = &[
    "CREATE TABLE calls (
        seq INTEGER NOT NULL,
        source TEXT NOT NULL,
        arrival_unix_us INTEGER NOT NULL,
        transport TEXT NOT NULL,
        http_version TEXT NOT NULL,
        method TEXT,
        resource TEXT,
        fork TEXT,
        status INTEGER NOT NULL,
        error_side TEXT,
        error_code INTEGER,
        error_message TEXT,
        problem_type TEXT,
        rpc_id TEXT,
        batch_index INTEGER,
        request_bytes INTEGER NOT NULL,
        response_bytes INTEGER NOT NULL,
        request_encoding TEXT,
        response_encoding TEXT,
        upstream_ttfb_us INTEGER,
        upstream_ttlb_us INTEGER,
        total_us INTEGER NOT NULL,
        overhead_us INTEGER,
        block_number INTEGER,
        block_hash TEXT,
        parent_hash TEXT,
        tx_count INTEGER,
        gas_used INTEGER,
        blob_count INTEGER,
        versioned_hash_count INTEGER,
        payload_status TEXT,
        latest_valid_hash TEXT,
        validation_error TEXT,
        payload_id TEXT,
        blobs_requested INTEGER,
        blobs_returned INTEGER,
        blobs_missing TEXT,
        cl_client TEXT,
        el_client TEXT,
        labels TEXT NOT NULL
    );
    CREATE INDEX calls_arrival ON calls (arrival_unix_us);
    CREATE INDEX calls_method ON calls (method);",
    "ALTER TABLE calls ADD COLUMN request_decoded_bytes INTEGER;
    ALTER TABLE calls ADD COLUMN response_decoded_bytes INTEGER;",
    "ALTER TABLE calls ADD COLUMN mode TEXT NOT NULL DEFAULT 'snoop';
    ALTER TABLE calls ADD COLUMN translate_request_us INTEGER;
    ALTER TABLE calls ADD COLUMN translate_response_us INTEGER;
    ALTER TABLE calls ADD COLUMN upstream_request_bytes INTEGER;
    ALTER TABLE calls ADD COLUMN upstream_response_bytes INTEGER;",
    "ALTER TABLE calls ADD COLUMN verdict TEXT;
    ALTER TABLE calls ADD COLUMN verify_check TEXT;
    ALTER TABLE calls ADD COLUMN verify_detail TEXT;
    ALTER TABLE calls ADD COLUMN verify_us INTEGER;",
    "ALTER TABLE calls ADD COLUMN capture_note TEXT;",
    "ALTER TABLE calls ADD COLUMN injected TEXT;",
];

impl Sink {
    /// Opens (and creates or migrates) a sink, with the default [`SinkOptions`].
    pub fn open(spec: &SinkSpec) -> Result<Option<Sink>> {
        Sink::open_with(spec, &SinkOptions::default())
    }

    /// Opens (and creates or migrates) a sink.
    pub fn open_with(spec: &SinkSpec, options: &SinkOptions) -> Result<Option<Sink>> {
        Ok(match spec {
            SinkSpec::None => None,
            SinkSpec::ClickHouse(url) => {
                // One spool per server and database, so two such sinks never share one.
                let name: String = format!(
                    "{}_{}",
                    url.endpoint.trim_start_matches("http://"),
                    url.database
                )
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
                let spool = Arc::new(Spool::open(
                    &options.spool_dir.join(name),
                    options.spool_max_bytes,
                )?);
                let client = clickhouse::Client::new(url.clone(), options.timeout);
                let shipper = Shipper::start(client, spool.clone(), options.drain);
                Some(Sink::ClickHouse {
                    name: url.to_string(),
                    identity: options.identity.clone(),
                    spool,
                    shipper,
                })
            }
            SinkSpec::Sqlite(path) => {
                let err = |source| Error::Sqlite {
                    path: path.clone(),
                    source,
                };
                let conn = Connection::open(path).map_err(err)?;
                conn.pragma_update(None, "journal_mode", "WAL")
                    .map_err(err)?;
                conn.pragma_update(None, "synchronous", "NORMAL")
                    .map_err(err)?;
                conn.busy_timeout(std::time::Duration::from_secs(5))
                    .map_err(err)?;
                let applied: usize = conn
                    .pragma_query_value(None, "user_version", |r| r.get(0))
                    .map_err(err)?;
                for (i, migration) in MIGRATIONS.iter().enumerate().skip(applied) {
                    conn.execute_batch(migration).map_err(err)?;
                    conn.pragma_update(None, "user_version", i + 1)
                        .map_err(err)?;
                }
                Some(Sink::Sqlite {
                    path: path.clone(),
                    conn: Box::new(conn),
                })
            }
            SinkSpec::Jsonl(path) => {
                let out: Box<dyn Write + Send> = if path == "-" {
                    Box::new(std::io::stdout())
                } else {
                    Box::new(
                        OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(path)
                            .map_err(|source| Error::Io {
                                path: path.clone(),
                                source,
                            })?,
                    )
                };
                Some(Sink::Jsonl {
                    body_bytes: 0,
                    path: path.clone(),
                    out: BufWriter::new(out),
                })
            }
        })
    }

    /// Writes a batch of records; returns how many it refused for good (a full spool).
    pub fn write(&mut self, records: &[Record]) -> Result<u64> {
        match self {
            Sink::ClickHouse {
                identity,
                spool,
                shipper,
                ..
            } => {
                let spool_id = spool.id().to_string();
                let refused = spool.append(records, |record, seq, out| {
                    clickhouse::call_row(record, identity, &spool_id, seq, out)
                })?;
                shipper.wake();
                Ok(refused)
            }
            Sink::Sqlite { path, conn } => {
                let err = |source| Error::Sqlite {
                    path: path.clone(),
                    source,
                };
                let tx = conn.transaction().map_err(err)?;
                {
                    let mut insert = tx
                        .prepare_cached(
                            "INSERT INTO calls VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,
                             ?21,?22,?23,?24,?25,?26,?27,?28,?29,?30,?31,?32,?33,?34,?35,?36,?37,?38,?39,?40,?41,?42,?43,?44,?45,?46,?47,?48,?49,?50,?51,?52,?53)",
                        )
                        .map_err(err)?;
                    for r in records {
                        let f = &r.facts;
                        insert
                            .execute(params![
                                r.seq as i64,
                                r.source,
                                r.arrival_unix_us,
                                r.transport,
                                r.http_version,
                                r.method,
                                r.resource,
                                r.fork,
                                r.status,
                                r.error_side,
                                f.error_code,
                                f.error_message,
                                f.problem_type,
                                f.rpc_id,
                                f.batch_index,
                                r.request_bytes as i64,
                                r.response_bytes as i64,
                                r.request_encoding,
                                r.response_encoding,
                                r.upstream_ttfb_us.map(|v| v as i64),
                                r.upstream_ttlb_us.map(|v| v as i64),
                                r.total_us as i64,
                                r.overhead_us.map(|v| v as i64),
                                f.block_number.map(|v| v as i64),
                                f.block_hash,
                                f.parent_hash,
                                f.tx_count.map(|v| v as i64),
                                f.gas_used.map(|v| v as i64),
                                f.blob_count.map(|v| v as i64),
                                f.versioned_hash_count.map(|v| v as i64),
                                f.payload_status,
                                f.latest_valid_hash,
                                f.validation_error,
                                f.payload_id,
                                f.blobs_requested.map(|v| v as i64),
                                f.blobs_returned.map(|v| v as i64),
                                f.blobs_missing,
                                r.cl_client,
                                r.el_client,
                                r.labels,
                                r.request_decoded_bytes.map(|v| v as i64),
                                r.response_decoded_bytes.map(|v| v as i64),
                                r.mode,
                                r.translate_request_us.map(|v| v as i64),
                                r.translate_response_us.map(|v| v as i64),
                                r.upstream_request_bytes.map(|v| v as i64),
                                r.upstream_response_bytes.map(|v| v as i64),
                                f.verdict,
                                f.verify_check,
                                f.verify_detail,
                                f.verify_us.map(|v| v as i64),
                                r.capture_note,
                                r.injected
                            ])
                            .map_err(err)?;
                    }
                }
                tx.commit().map_err(err).map(|()| 0)
            }
            Sink::Jsonl { path, out, .. } => {
                let err = |source| Error::Io {
                    path: path.clone(),
                    source,
                };
                for r in records {
                    serde_json::to_writer(&mut *out, r).map_err(|e| err(e.into()))?;
                    out.write_all(b"\n").map_err(err)?;
                }
                out.flush().map_err(err).map(|()| 0)
            }
        }
    }

    /// Keeps the first `limit` bytes of each body in the records this sink writes (JSON
    /// lines only; SQLite keeps facts, not bodies).
    pub fn with_body_bytes(mut self, limit: usize) -> Sink {
        if let Sink::Jsonl { body_bytes, .. } = &mut self {
            *body_bytes = limit;
        }
        self
    }

    /// Bytes of each body this sink keeps.
    pub fn body_bytes(&self) -> usize {
        match self {
            Sink::Jsonl { body_bytes, .. } => *body_bytes,
            Sink::Sqlite { .. } | Sink::ClickHouse { .. } => 0,
        }
    }

    /// The sink's name, for logs.
    pub fn name(&self) -> String {
        match self {
            Sink::Sqlite { path, .. } => format!("sqlite:{path}"),
            Sink::Jsonl { path, .. } => format!("jsonl:{path}"),
            Sink::ClickHouse { name, .. } => format!("clickhouse:{name}"),
        }
    }

    /// Closes the sink: a remote one sends what it can within its drain time (the rest stays
    /// spooled for the next start) and gives its last figures.
    pub fn close(self) -> Option<RemoteStats> {
        match self {
            Sink::ClickHouse { spool, shipper, .. } => {
                let shipped = shipper.stop();
                Some(remote_stats(&spool, &shipped))
            }
            Sink::Sqlite { .. } | Sink::Jsonl { .. } => None,
        }
    }

    /// The figures of a sink that ships to a remote server (none for local sinks).
    pub fn remote_stats(&self) -> Option<RemoteStats> {
        match self {
            Sink::ClickHouse { spool, shipper, .. } => Some(remote_stats(spool, shipper.stats())),
            Sink::Sqlite { .. } | Sink::Jsonl { .. } => None,
        }
    }
}

/// The figures of a spool and its shipper.
fn remote_stats(spool: &Spool, shipped: &clickhouse::ShipStats) -> RemoteStats {
    use std::sync::atomic::Ordering::Relaxed;
    RemoteStats {
        spool: spool.stats(),
        shipped: shipped.shipped.load(Relaxed),
        errors: shipped.errors.load(Relaxed),
    }
}
