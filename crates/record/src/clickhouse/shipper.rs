//! The shipper: a thread that sends the spool's rows to ClickHouse in order, a batch at a
//! time, and moves the spool's cursor only once the server holds the batch.
//!
//! While the server is down or refuses, the shipper retries with a growing pause (up to 5 s)
//! and the rows wait in the spool. After a failed try, and for the first batch after a start,
//! the batch's keys are looked up first and only the missing rows are sent (see the module
//! header of `clickhouse` for why that is exactly once). On shutdown it goes on for a bounded
//! time (`drain`) and leaves what is left in the spool for the next start.

use std::{
    collections::HashSet,
    sync::{
        Arc, Condvar, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use super::{Client, XATU_TABLES, schema};
use crate::spool::{Batch, Spool};

/// Rows per insert at most.
const MAX_ROWS: u64 = 10_000;
/// Bytes per insert, about (whole rows).
const MAX_BYTES: u64 = 8 << 20;
/// The longest pause between tries while the server fails.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Figures of a shipper.
#[derive(Default)]
pub struct ShipStats {
    /// Rows the server holds that this shipper sent.
    pub shipped: AtomicU64,
    /// Failed tries.
    pub errors: AtomicU64,
}

#[derive(Default)]
struct Signal {
    stopping: Mutex<bool>,
    wake: Condvar,
}

impl Signal {
    /// Waits up to `timeout` for a wake-up; true when stopping.
    fn wait(&self, timeout: Duration) -> bool {
        let stopping = self.stopping.lock().expect("shipper lock");
        if *stopping {
            return true;
        }
        let (stopping, _) = self
            .wake
            .wait_timeout(stopping, timeout)
            .expect("shipper lock");
        *stopping
    }
}

/// A running shipper; dropping it stops it (after the drain).
pub struct Shipper {
    signal: Arc<Signal>,
    stats: Arc<ShipStats>,
    handle: Option<JoinHandle<()>>,
}

impl Shipper {
    /// Starts shipping `spool` to the server of `client`.
    pub fn start(client: Client, spool: Arc<Spool>, drain: Duration) -> Shipper {
        let signal = Arc::new(Signal::default());
        let stats = Arc::new(ShipStats::default());
        let handle = {
            let (signal, stats) = (signal.clone(), stats.clone());
            std::thread::Builder::new()
                .name("sszgate-clickhouse".into())
                .spawn(move || run(&client, &spool, &stats, &signal, drain))
                .expect("spawning the ClickHouse shipper")
        };
        Shipper {
            signal,
            stats,
            handle: Some(handle),
        }
    }

    /// Tells the shipper new rows are there.
    pub fn wake(&self) {
        self.signal.wake.notify_one();
    }

    /// Its figures.
    pub fn stats(&self) -> &ShipStats {
        &self.stats
    }
}

impl Shipper {
    /// Stops the shipper (after its drain) and gives its figures.
    pub fn stop(mut self) -> Arc<ShipStats> {
        self.halt();
        self.stats.clone()
    }

    fn halt(&mut self) {
        *self.signal.stopping.lock().expect("shipper lock") = true;
        self.signal.wake.notify_one();
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

impl Drop for Shipper {
    fn drop(&mut self) {
        self.halt();
    }
}

fn run(client: &Client, spool: &Spool, stats: &ShipStats, signal: &Signal, drain: Duration) {
    let mut schema_ready = false;
    // The first batch after a start may have reached the server before a crash.
    let mut replay = true;
    let mut backoff = Duration::from_millis(250);
    let mut deadline: Option<Instant> = None;
    let mut last_error = String::new();
    loop {
        if deadline.is_none() && *signal.stopping.lock().expect("shipper lock") {
            deadline = Some(Instant::now() + drain);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let waiting = spool.stats().waiting;
            if waiting > 0 {
                tracing::warn!(rows = waiting, spool = %spool.dir().display(), "ClickHouse did not take every row before shutdown; they stay spooled and are sent at the next start");
            }
            return;
        }
        let step = (|| -> Result<bool, String> {
            if !schema_ready {
                schema::migrate(client).map_err(|e| e.to_string())?;
                schema_ready = true;
            }
            let Some(batch) = spool.read(MAX_ROWS, MAX_BYTES).map_err(|e| e.to_string())? else {
                return Ok(false);
            };
            ship(client, spool.id(), &batch, replay, stats).map_err(|e| e.to_string())?;
            spool.commit(batch.end).map_err(|e| e.to_string())?;
            Ok(true)
        })();
        match step {
            Ok(true) => {
                replay = false;
                backoff = Duration::from_millis(250);
                if !last_error.is_empty() {
                    tracing::info!(url = %client.url(), "ClickHouse takes rows again");
                    last_error.clear();
                }
            }
            Ok(false) => {
                if deadline.is_some() {
                    return;
                }
                signal.wait(Duration::from_millis(200));
            }
            Err(error) => {
                stats.errors.fetch_add(1, Ordering::Relaxed);
                replay = true;
                if error != last_error {
                    tracing::warn!(url = %client.url(), %error, waiting = spool.stats().waiting, "ClickHouse refused a batch; rows stay spooled and are retried");
                    last_error = error;
                }
                let pause = match deadline {
                    Some(d) => backoff.min(d.saturating_duration_since(Instant::now())),
                    None => backoff,
                };
                if deadline.is_some() {
                    std::thread::sleep(pause);
                } else {
                    signal.wait(pause);
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

/// Sends one batch: the rows of `sszgate_calls` the server lacks, then the xatu-shaped rows.
fn ship(
    client: &Client,
    spool_id: &str,
    batch: &Batch,
    replay: bool,
    stats: &ShipStats,
) -> Result<(), super::ClickHouseError> {
    let db = &client.url().database;
    let (first, last) = (batch.first_seq, batch.last_seq());
    let present: HashSet<u64> = if replay {
        client
            .execute(&format!(
                "SELECT spool_seq FROM {db}.sszgate_calls WHERE spool_id = '{spool_id}' AND spool_seq BETWEEN {first} AND {last} FORMAT TabSeparated"
            ))?
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    } else {
        HashSet::new()
    };
    let insert = format!("INSERT INTO {db}.sszgate_calls FORMAT JSONEachRow");
    if present.is_empty() {
        client.insert(&insert, &batch.data)?;
    } else if (present.len() as u64) < batch.count {
        let mut missing = Vec::with_capacity(batch.data.len());
        for (seq, row) in batch.rows().filter(|(seq, _)| !present.contains(seq)) {
            debug_assert!(seq >= first);
            missing.extend_from_slice(row);
            missing.push(b'\n');
        }
        client.insert(&insert, &missing)?;
    }
    for (table, method, columns) in XATU_TABLES {
        let skip_filled = if replay {
            format!(
                " AND spool_seq NOT IN (SELECT sszgate_spool_seq FROM {db}.{table} WHERE sszgate_spool_id = '{spool_id}' AND sszgate_spool_seq BETWEEN {first} AND {last})"
            )
        } else {
            String::new()
        };
        let sql = schema::xatu_fill(table, method, columns)
            .replace("{db}", db)
            .replace("{spool_id}", spool_id)
            .replace("{first}", &first.to_string())
            .replace("{last}", &last.to_string())
            .replace("{replay}", &skip_filled);
        client.execute(sql.trim())?;
    }
    stats
        .shipped
        .fetch_add(batch.count - present.len() as u64, Ordering::Relaxed);
    Ok(())
}
