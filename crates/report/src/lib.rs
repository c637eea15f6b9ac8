//! `sszgate report`: the call records turned into the answers people look for — latency per
//! method, the end-to-end latency a CL sees per group (direct vs proxied, one EL vs another),
//! the proxy's overhead by EL client and by blob count (the rpc-snooper study's analyses), the
//! bridge's translation time and bytes saved, and the verification verdicts.
//!
//! - [`load`]: records from a SQLite store (the proxy's and the driver's schema), filtered by
//!   time; [`load_clickhouse`]: the same from a ClickHouse database (a fleet's `sszgate_calls`);
//! - [`build`]: the analyses, as [`Section`]s of tables with charts;
//! - [`e2e`]: the end-to-end section of `sszgate bench e2e` (a real CL's own timings with
//!   its link direct, through sszgate and through rpc-snooper);
//! - [`Report::markdown`] and [`Report::html`] (self-contained: inline CSS and SVG, no script);
//! - [`ssz_study`]: the sections of the SSZ Engine API study on a real chain
//!   (`sszgate bench ssz-chain`), built from its rows rather than from records.
//!
//! Writing files and the CLI are the binary's job.

mod chart;
pub mod e2e;
pub mod ssz_study;

use std::collections::BTreeMap;

pub use chart::{Chart, PALETTE};

/// Errors reading records.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The store could not be read.
    #[error("{path}: {source}")]
    Sqlite {
        /// The database.
        path: String,
        /// Why.
        source: rusqlite::Error,
    },
    /// The file holds no `calls` table.
    #[error("{0}: not an sszgate store (no calls table)")]
    NotAStore(String),
    /// ClickHouse could not be read.
    #[error("clickhouse {url}: {source}")]
    ClickHouse {
        /// The database.
        url: String,
        /// Why.
        source: sszgate_record::clickhouse::ClickHouseError,
    },
}

/// One call record, as the report needs it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Call {
    /// `proxy` or `driver`.
    pub source: String,
    /// Arrival, µs since the epoch.
    pub arrival_unix_us: i64,
    /// JSON-RPC method (or the method a REST resource stands for).
    pub method: String,
    /// `json-rpc`, `rest-ssz`, …
    pub transport: String,
    /// `snoop`, `bridge` or `driver`.
    pub mode: String,
    /// HTTP status.
    pub status: i64,
    /// Whether it was answered with an error.
    pub error: bool,
    /// Total time at the recorder's side, µs.
    pub total_us: f64,
    /// The proxy's own time, µs.
    pub overhead_us: Option<f64>,
    /// Blobs in the call.
    pub blob_count: Option<i64>,
    /// The EL client.
    pub el_client: Option<String>,
    /// Response bytes (what the CL got).
    pub response_bytes: i64,
    /// Bridge: request translation, µs.
    pub translate_request_us: Option<f64>,
    /// Bridge: response translation, µs.
    pub translate_response_us: Option<f64>,
    /// Bridge: request bytes on the EL's side.
    pub upstream_request_bytes: Option<i64>,
    /// Request bytes (what the CL sent).
    pub request_bytes: i64,
    /// Bridge: response bytes on the EL's side.
    pub upstream_response_bytes: Option<i64>,
    /// Verification verdict.
    pub verdict: Option<String>,
    /// The failed check (or `kzg`).
    pub verify_check: Option<String>,
    /// The user's labels.
    pub labels: BTreeMap<String, String>,
    /// CL client, as the proxy named it.
    pub cl_client: Option<String>,
}

/// Which records to read.
#[derive(Clone, Debug, Default)]
pub struct Query {
    /// Only calls that arrived at or after this time, µs since the epoch.
    pub since_us: Option<i64>,
    /// Only calls that arrived before this time, µs since the epoch.
    pub until_us: Option<i64>,
}

/// Reads the calls of the SQLite store at `path` (opened read-only).
pub fn load(path: &std::path::Path, query: &Query) -> Result<Vec<Call>, ReportError> {
    let name = path.display().to_string();
    let err = |source| ReportError::Sqlite {
        path: name.clone(),
        source,
    };
    let conn = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(err)?;
    // Stores written by older versions lack the newer columns: they read as NULL.
    let columns: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('calls')")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .map_err(err)?;
    if columns.is_empty() {
        return Err(ReportError::NotAStore(name));
    }
    let column = |c: &str| {
        if columns.iter().any(|have| have == c) {
            c.to_string()
        } else {
            format!("NULL AS {c}")
        }
    };
    let sql = format!(
        "SELECT source, arrival_unix_us, coalesce(method, '(none)'), transport, {}, status,
                error_code IS NOT NULL OR status >= 400, total_us, overhead_us, blob_count,
                el_client, response_bytes, {}, {}, {}, request_bytes, {}, {}, {}, labels,
                cl_client
         FROM calls
         WHERE arrival_unix_us >= ?1 AND arrival_unix_us < ?2
         ORDER BY arrival_unix_us, seq",
        if columns.iter().any(|c| c == "mode") {
            "mode".to_string()
        } else {
            "'snoop' AS mode".to_string()
        },
        column("translate_request_us"),
        column("translate_response_us"),
        column("upstream_request_bytes"),
        column("upstream_response_bytes"),
        column("verdict"),
        column("verify_check"),
    );
    let mut statement = conn.prepare(&sql).map_err(err)?;
    let rows = statement
        .query_map(
            [
                query.since_us.unwrap_or(i64::MIN),
                query.until_us.unwrap_or(i64::MAX),
            ],
            |r| {
                let labels: String = r.get(19)?;
                Ok(Call {
                    source: r.get(0)?,
                    arrival_unix_us: r.get(1)?,
                    method: r.get(2)?,
                    transport: r.get(3)?,
                    mode: r.get(4)?,
                    status: r.get(5)?,
                    error: r.get(6)?,
                    total_us: r.get::<_, i64>(7)? as f64,
                    overhead_us: r.get::<_, Option<i64>>(8)?.map(|v| v as f64),
                    blob_count: r.get(9)?,
                    el_client: r.get(10)?,
                    response_bytes: r.get(11)?,
                    translate_request_us: r.get::<_, Option<i64>>(12)?.map(|v| v as f64),
                    translate_response_us: r.get::<_, Option<i64>>(13)?.map(|v| v as f64),
                    upstream_request_bytes: r.get(14)?,
                    request_bytes: r.get(15)?,
                    upstream_response_bytes: r.get(16)?,
                    verdict: r.get(17)?,
                    verify_check: r.get(18)?,
                    labels: serde_json::from_str(&labels).unwrap_or_default(),
                    cl_client: r.get(20)?,
                })
            },
        )
        .map_err(err)?;
    rows.collect::<Result<_, _>>().map_err(err)
}

/// A row of `sszgate_calls` as the report reads it (aliases differ from the column names:
/// ClickHouse resolves an alias before a column of the same name).
#[derive(serde::Deserialize)]
struct ClickHouseCall {
    source: String,
    arrival_unix_us: i64,
    method_name: String,
    transport: String,
    mode: String,
    status: i64,
    is_error: u8,
    total_us: f64,
    overhead_us: Option<f64>,
    blob_count: Option<i64>,
    el_client: Option<String>,
    response_bytes: i64,
    translate_request_us: Option<f64>,
    translate_response_us: Option<f64>,
    upstream_request_bytes: Option<i64>,
    request_bytes: i64,
    upstream_response_bytes: Option<i64>,
    verdict: Option<String>,
    verify_check: Option<String>,
    labels: String,
    node: String,
    network: String,
    cl_client: Option<String>,
}

/// Reads the calls of a ClickHouse database (`sszgate_calls`, every node's). Each call's
/// labels also hold its `node` and `network`, so a report can be grouped by them.
pub fn load_clickhouse(
    client: &sszgate_record::clickhouse::Client,
    query: &Query,
) -> Result<Vec<Call>, ReportError> {
    let db = &client.url().database;
    let sql = format!(
        "SELECT source, arrival_unix_us, ifNull(method, '(none)') AS method_name, transport, mode,
                status, isNotNull(error_code) OR status >= 400 AS is_error, total_us, overhead_us,
                blob_count, el_client, response_bytes, translate_request_us, translate_response_us,
                upstream_request_bytes, request_bytes, upstream_response_bytes, verdict,
                verify_check, labels, node, network, cl_client
         FROM {db}.sszgate_calls
         WHERE arrival_unix_us >= {} AND arrival_unix_us < {}
         ORDER BY arrival_unix_us, node, seq",
        query.since_us.unwrap_or(i64::MIN),
        query.until_us.unwrap_or(i64::MAX),
    );
    let rows: Vec<ClickHouseCall> =
        client
            .rows(&sql)
            .map_err(|source| ReportError::ClickHouse {
                url: client.url().to_string(),
                source,
            })?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let mut labels: BTreeMap<String, String> =
                serde_json::from_str(&r.labels).unwrap_or_default();
            labels.entry("node".into()).or_insert(r.node);
            labels.entry("network".into()).or_insert(r.network);
            Call {
                source: r.source,
                arrival_unix_us: r.arrival_unix_us,
                method: r.method_name,
                transport: r.transport,
                mode: r.mode,
                status: r.status,
                error: r.is_error != 0,
                total_us: r.total_us,
                overhead_us: r.overhead_us,
                blob_count: r.blob_count,
                el_client: r.el_client,
                response_bytes: r.response_bytes,
                translate_request_us: r.translate_request_us,
                translate_response_us: r.translate_response_us,
                upstream_request_bytes: r.upstream_request_bytes,
                request_bytes: r.request_bytes,
                upstream_response_bytes: r.upstream_response_bytes,
                verdict: r.verdict,
                verify_check: r.verify_check,
                labels,
                cl_client: r.cl_client,
            }
        })
        .collect())
}

/// A table: a header row and the rows, as text.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Column names.
    pub headers: Vec<String>,
    /// Cells.
    pub rows: Vec<Vec<String>>,
}

/// One analysis: a title, what it shows, its table and (when there is something to draw) a
/// chart.
#[derive(Clone, Debug)]
pub struct Section {
    /// The heading.
    pub title: String,
    /// One or two sentences on what the table holds.
    pub note: String,
    /// The figures.
    pub table: Table,
    /// The chart next to it.
    pub chart: Option<Chart>,
}

/// A whole report.
#[derive(Clone, Debug)]
pub struct Report {
    /// What was read (store, period, counts).
    pub source: String,
    /// The analyses, in order.
    pub sections: Vec<Section>,
}

/// The `q` quantile of `values` (nearest rank); NaN when empty.
pub fn quantile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn ms(us: f64) -> String {
    if us.is_nan() {
        "-".into()
    } else {
        format!("{:.3}", us / 1e3)
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// The group of a call: the value of `label` (or of `source`/`mode`/`transport`, which can be
/// named like labels), `-` when it has none.
fn group_of(call: &Call, key: &str) -> String {
    match key {
        "source" => call.source.clone(),
        "mode" => call.mode.clone(),
        "transport" => call.transport.clone(),
        "el_client" => call.el_client.clone().unwrap_or_else(|| "-".into()),
        label => call
            .labels
            .get(label)
            .cloned()
            .unwrap_or_else(|| "-".into()),
    }
}

/// Builds every analysis over `calls`. `group_by` picks the groups compared end to end (a
/// label key, or source/mode/transport/el_client); by default the `way` label when the
/// driver's records carry one, else the transport.
pub fn build(calls: &[Call], group_by: Option<&str>, source: String) -> Report {
    let mut sections = vec![per_method(calls), clients(calls)];
    let driver: Vec<&Call> = calls.iter().filter(|c| c.source == "driver").collect();
    let key = group_by.map(str::to_string).unwrap_or_else(|| {
        if driver.iter().any(|c| c.labels.contains_key("way")) {
            "way".into()
        } else {
            "transport".into()
        }
    });
    if !driver.is_empty() {
        sections.push(end_to_end(&driver, &key));
    }
    let snooped: Vec<&Call> = calls
        .iter()
        .filter(|c| c.source == "proxy" && c.mode == "snoop" && c.overhead_us.is_some())
        .collect();
    if !snooped.is_empty() {
        sections.push(overhead_by_el(&snooped));
        sections.push(overhead_by_blobs(&snooped));
    }
    let bridged: Vec<&Call> = calls.iter().filter(|c| c.mode == "bridge").collect();
    if !bridged.is_empty() {
        sections.push(bridge(&bridged));
    }
    let verified: Vec<&Call> = calls.iter().filter(|c| c.verdict.is_some()).collect();
    if !verified.is_empty() {
        sections.push(verification(&verified));
    }
    Report { source, sections }
}

/// Who spoke on the link: calls per CL and EL pair, their errors, first and last seen.
fn clients(calls: &[Call]) -> Section {
    let mut groups: BTreeMap<(String, String), Vec<&Call>> = BTreeMap::new();
    let name = |c: &Option<String>| c.clone().unwrap_or_else(|| "(unknown)".into());
    for c in calls {
        groups
            .entry((name(&c.cl_client), name(&c.el_client)))
            .or_default()
            .push(c);
    }
    let mut table = Table {
        headers: strings(&["CL client", "EL client", "calls", "errors", "methods"]),
        rows: Vec::new(),
    };
    for ((cl, el), group) in &groups {
        let methods: std::collections::BTreeSet<&str> =
            group.iter().map(|c| c.method.as_str()).collect();
        table.rows.push(vec![
            cl.clone(),
            el.clone(),
            group.len().to_string(),
            group.iter().filter(|c| c.error).count().to_string(),
            methods.into_iter().collect::<Vec<_>>().join(", "),
        ]);
    }
    Section {
        title: "Clients on the link".into(),
        note: "Each call's CL (its X-Engine-Client-Version, the ClientVersionV1 it sent, the operator's label or its User-Agent) and EL (asked by the proxy).".into(),
        table,
        chart: None,
    }
}

fn per_method(calls: &[Call]) -> Section {
    let mut groups: BTreeMap<(String, String), Vec<&Call>> = BTreeMap::new();
    for c in calls {
        groups
            .entry((c.source.clone(), c.method.clone()))
            .or_default()
            .push(c);
    }
    let mut table = Table {
        headers: strings(&[
            "source", "method", "calls", "errors", "p50 ms", "p90 ms", "p99 ms", "max ms",
        ]),
        rows: Vec::new(),
    };
    let mut bars = Vec::new();
    for ((source, method), group) in &groups {
        let times: Vec<f64> = group.iter().map(|c| c.total_us).collect();
        table.rows.push(vec![
            source.clone(),
            method.clone(),
            group.len().to_string(),
            group.iter().filter(|c| c.error).count().to_string(),
            ms(quantile(&times, 0.5)),
            ms(quantile(&times, 0.9)),
            ms(quantile(&times, 0.99)),
            ms(quantile(&times, 1.0)),
        ]);
        bars.push((
            format!("{source}: {}", method.trim_start_matches("engine_")),
            quantile(&times, 0.5) / 1e3,
            quantile(&times, 0.9) / 1e3,
        ));
    }
    Section {
        title: "Calls, errors and latency per method".into(),
        note: "Every recorded call by source (the proxy's view, the driver's CL-side view) and method; times are the total at the recording side.".into(),
        table,
        chart: Some(Chart::Bars {
            title: "latency per method, ms".into(),
            categories: bars.iter().map(|b| b.0.clone()).collect(),
            series: vec![
                ("p50".into(), bars.iter().map(|b| b.1).collect()),
                ("p90".into(), bars.iter().map(|b| b.2).collect()),
            ],
            y_label: "ms".into(),
        }),
    }
}

fn end_to_end(driver: &[&Call], key: &str) -> Section {
    let groups: Vec<String> = {
        let mut g: Vec<String> = driver.iter().map(|c| group_of(c, key)).collect();
        g.sort();
        g.dedup();
        g
    };
    let methods: Vec<String> = {
        let mut m: Vec<String> = driver.iter().map(|c| c.method.clone()).collect();
        m.sort();
        m.dedup();
        m
    };
    let mut headers = vec!["method".to_string()];
    for g in &groups {
        headers.push(format!("{key}={g} p50 ms (n)"));
    }
    // Differences against a baseline: the `direct` group when there is one, else the first.
    let base = groups.iter().position(|g| g == "direct").unwrap_or(0);
    for (i, g) in groups.iter().enumerate() {
        if i != base {
            headers.push(format!("{g} − {} p50 ms", groups[base]));
        }
    }
    let mut table = Table {
        headers,
        rows: Vec::new(),
    };
    let mut series: Vec<(String, Vec<f64>)> =
        groups.iter().map(|g| (g.clone(), Vec::new())).collect();
    for method in &methods {
        let mut row = vec![method.clone()];
        let mut medians = Vec::new();
        for (i, g) in groups.iter().enumerate() {
            let times: Vec<f64> = driver
                .iter()
                .filter(|c| &c.method == method && &group_of(c, key) == g && !c.error)
                .map(|c| c.total_us)
                .collect();
            let p50 = quantile(&times, 0.5);
            row.push(format!("{} ({})", ms(p50), times.len()));
            series[i].1.push(if p50.is_nan() { 0.0 } else { p50 / 1e3 });
            medians.push(p50);
        }
        for (i, m) in medians.iter().enumerate() {
            if i != base {
                let d = m - medians[base];
                row.push(if d.is_nan() {
                    "-".into()
                } else {
                    format!("{:+.3}", d / 1e3)
                });
            }
        }
        table.rows.push(row);
    }
    Section {
        title: format!("End to end: the latency the CL sees, by {key}"),
        note: format!(
            "The driver's own records (source = driver): the CL side of every call, grouped by {key}, successful calls only. The study's end-to-end comparison."
        ),
        table,
        chart: Some(Chart::Bars {
            title: format!("CL-side p50 per method and {key}, ms"),
            categories: methods
                .iter()
                .map(|m| m.trim_start_matches("engine_").to_string())
                .collect(),
            series,
            y_label: "ms".into(),
        }),
    }
}

fn overhead_by_el(snooped: &[&Call]) -> Section {
    let mut groups: BTreeMap<String, Vec<&Call>> = BTreeMap::new();
    for c in snooped {
        groups
            .entry(c.el_client.clone().unwrap_or_else(|| "(unknown)".into()))
            .or_default()
            .push(c);
    }
    let mut table = Table {
        headers: strings(&[
            "EL client",
            "calls",
            "blobs",
            "avg overhead ms",
            "p50 overhead ms",
            "p95 overhead ms",
            "overhead per blob ms",
        ]),
        rows: Vec::new(),
    };
    let mut bars = Vec::new();
    for (el, group) in &groups {
        let overhead: Vec<f64> = group.iter().filter_map(|c| c.overhead_us).collect();
        let blobs: i64 = group.iter().filter_map(|c| c.blob_count).sum();
        let with_blobs: Vec<&&Call> = group
            .iter()
            .filter(|c| c.blob_count.unwrap_or(0) > 0)
            .collect();
        let per_blob = if blobs > 0 {
            with_blobs.iter().filter_map(|c| c.overhead_us).sum::<f64>() / blobs as f64
        } else {
            f64::NAN
        };
        let avg = overhead.iter().sum::<f64>() / overhead.len().max(1) as f64;
        table.rows.push(vec![
            el.clone(),
            group.len().to_string(),
            blobs.to_string(),
            ms(avg),
            ms(quantile(&overhead, 0.5)),
            ms(quantile(&overhead, 0.95)),
            ms(per_blob),
        ]);
        bars.push((
            el.clone(),
            quantile(&overhead, 0.5) / 1e3,
            quantile(&overhead, 0.95) / 1e3,
        ));
    }
    Section {
        title: "Proxy overhead by EL client".into(),
        note: "Relayed calls (snoop): the proxy's own time, total minus the EL's time to the last byte; per blob over the calls that carry blobs.".into(),
        table,
        chart: Some(Chart::Bars {
            title: "proxy overhead by EL client, ms".into(),
            categories: bars.iter().map(|b| b.0.clone()).collect(),
            series: vec![
                ("p50".into(), bars.iter().map(|b| b.1).collect()),
                ("p95".into(), bars.iter().map(|b| b.2).collect()),
            ],
            y_label: "ms".into(),
        }),
    }
}

fn overhead_by_blobs(snooped: &[&Call]) -> Section {
    let mut groups: BTreeMap<i64, Vec<&Call>> = BTreeMap::new();
    for c in snooped {
        if let Some(n) = c.blob_count {
            groups.entry(n).or_default().push(c);
        }
    }
    let mut table = Table {
        headers: strings(&[
            "blobs",
            "calls",
            "p50 total ms",
            "p50 overhead ms",
            "p95 overhead ms",
            "overhead per blob ms",
        ]),
        rows: Vec::new(),
    };
    let (mut p50, mut per_blob_line) = (Vec::new(), Vec::new());
    for (n, group) in &groups {
        let total: Vec<f64> = group.iter().map(|c| c.total_us).collect();
        let overhead: Vec<f64> = group.iter().filter_map(|c| c.overhead_us).collect();
        let median = quantile(&overhead, 0.5);
        let per_blob = if *n > 0 { median / *n as f64 } else { f64::NAN };
        table.rows.push(vec![
            n.to_string(),
            group.len().to_string(),
            ms(quantile(&total, 0.5)),
            ms(median),
            ms(quantile(&overhead, 0.95)),
            ms(per_blob),
        ]);
        p50.push((*n as f64, median / 1e3));
        if *n > 0 {
            per_blob_line.push((*n as f64, per_blob / 1e3));
        }
    }
    Section {
        title: "Proxy overhead by blob count".into(),
        note: "Relayed calls that carry blobs or blob counts (getPayload, getBlobs): total and per blob.".into(),
        table,
        chart: Some(Chart::Lines {
            title: "proxy overhead by blob count, ms".into(),
            series: vec![
                ("p50 overhead".into(), p50),
                ("p50 overhead per blob".into(), per_blob_line),
            ],
            x_label: "blobs".into(),
            y_label: "ms".into(),
        }),
    }
}

fn bridge(bridged: &[&Call]) -> Section {
    let mut groups: BTreeMap<String, Vec<&Call>> = BTreeMap::new();
    for c in bridged {
        groups.entry(c.method.clone()).or_default().push(c);
    }
    let mut table = Table {
        headers: strings(&[
            "method",
            "calls",
            "translate request p50 ms",
            "translate answer p50 ms",
            "CL-side bytes",
            "EL-side bytes",
            "bytes saved on the CL link",
        ]),
        rows: Vec::new(),
    };
    let mut bars = Vec::new();
    for (method, group) in &groups {
        let req: Vec<f64> = group
            .iter()
            .filter_map(|c| c.translate_request_us)
            .collect();
        let resp: Vec<f64> = group
            .iter()
            .filter_map(|c| c.translate_response_us)
            .collect();
        let cl: i64 = group
            .iter()
            .map(|c| c.request_bytes + c.response_bytes)
            .sum();
        let el: i64 = group
            .iter()
            .map(|c| c.upstream_request_bytes.unwrap_or(0) + c.upstream_response_bytes.unwrap_or(0))
            .sum();
        let saved = if el > 0 {
            format!(
                "{} ({:.0} %)",
                el - cl,
                100.0 * (el - cl) as f64 / el as f64
            )
        } else {
            "-".into()
        };
        table.rows.push(vec![
            method.clone(),
            group.len().to_string(),
            ms(quantile(&req, 0.5)),
            ms(quantile(&resp, 0.5)),
            cl.to_string(),
            el.to_string(),
            saved,
        ]);
        bars.push((
            method.trim_start_matches("engine_").to_string(),
            cl as f64 / 1e6,
            el as f64 / 1e6,
        ));
    }
    Section {
        title: "Bridged traffic: translation and bytes saved".into(),
        note: "Calls the bridge translated: time to translate each way, and bytes on the CL's link (REST-SSZ, after compression when asked) against the EL's (JSON-RPC).".into(),
        table,
        chart: Some(Chart::Bars {
            title: "bytes per method, CL side vs EL side, MB".into(),
            categories: bars.iter().map(|b| b.0.clone()).collect(),
            series: vec![
                ("CL side (SSZ)".into(), bars.iter().map(|b| b.1).collect()),
                ("EL side (JSON)".into(), bars.iter().map(|b| b.2).collect()),
            ],
            y_label: "MB".into(),
        }),
    }
}

fn verification(verified: &[&Call]) -> Section {
    let mut groups: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    for c in verified {
        *groups
            .entry((
                c.method.clone(),
                c.verdict.clone().unwrap_or_default(),
                c.verify_check.clone().unwrap_or_default(),
            ))
            .or_default() += 1;
    }
    Section {
        title: "Verification verdicts".into(),
        note: "What --verify found: ok (with kzg when the proofs were checked too), failed (with the check), skipped.".into(),
        table: Table {
            headers: strings(&["method", "verdict", "check", "calls"]),
            rows: groups
                .into_iter()
                .map(|((m, v, c), n)| vec![m, v, c, n.to_string()])
                .collect(),
        },
        chart: None,
    }
}

fn markdown_table(table: &Table) -> String {
    let mut out = format!("| {} |\n", table.headers.join(" | "));
    out.push_str(&format!(
        "|{}|\n",
        table
            .headers
            .iter()
            .map(|_| "---")
            .collect::<Vec<_>>()
            .join("|")
    ));
    for row in &table.rows {
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl Report {
    /// The report as Markdown (tables only; the charts are in the HTML and as SVG files).
    pub fn markdown(&self) -> String {
        let mut out = format!("# sszgate report\n\n{}\n", self.source);
        for s in &self.sections {
            out.push_str(&format!(
                "\n## {}\n\n{}\n\n{}",
                s.title,
                s.note,
                markdown_table(&s.table)
            ));
        }
        out
    }

    /// The report as one self-contained HTML page: tables and inline SVG charts, no script.
    pub fn html(&self) -> String {
        let mut out = String::from(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>sszgate report</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}.note{color:#444}.chart{margin:1em 0}</style>\n</head><body>\n<h1>sszgate report</h1>\n",
        );
        out.push_str(&format!("<p>{}</p>\n", escape(&self.source)));
        for (i, s) in self.sections.iter().enumerate() {
            out.push_str(&format!(
                "<section id=\"s{i}\"><h2>{}</h2>\n<p class=\"note\">{}</p>\n<table><tr>",
                escape(&s.title),
                escape(&s.note)
            ));
            for h in &s.table.headers {
                out.push_str(&format!("<th>{}</th>", escape(h)));
            }
            out.push_str("</tr>\n");
            for row in &s.table.rows {
                out.push_str("<tr>");
                for cell in row {
                    out.push_str(&format!("<td>{}</td>", escape(cell)));
                }
                out.push_str("</tr>\n");
            }
            out.push_str("</table>\n");
            if let Some(chart) = &s.chart
                && let Ok(svg) = chart.svg()
            {
                out.push_str(&format!("<div class=\"chart\">{svg}</div>\n"));
            }
            out.push_str("</section>\n");
        }
        out.push_str("</body></html>\n");
        out
    }
}
