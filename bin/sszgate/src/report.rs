//! `sszgate report`: records from one or more stores → Markdown and a self-contained HTML page
//! with the analyses and their charts.

use std::{
    path::PathBuf,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::{Context, Result, bail};
use clap::Args;
use sszgate_record::SinkSpec;

use crate::flags;

/// Arguments of `sszgate report`.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  sszgate report --store sqlite:sszgate.db --out report
  sszgate report --store sqlite:dn/records.db --store sqlite:dn/driver.db --group-by way --out report
  sszgate report --store sqlite:sszgate.db --since 2h --out last-two-hours
  sszgate report --store clickhouse:http://127.0.0.1:8123/sszgate --group-by node --out fleet")]
pub(crate) struct ReportArgs {
    /// A store to read: sqlite:PATH (the proxy's or the driver's records) or
    /// clickhouse:http://[USER[:PASSWORD]@]HOST:PORT/DB (every node's records; node and
    /// network can be grouped by); repeatable or comma separated, the calls of all of them are
    /// reported together.
    #[arg(
        long = "store",
        env = flags::STORE_ENV,
        value_delimiter = ',',
        value_parser = flags::parse_store,
        required = true
    )]
    stores: Vec<SinkSpec>,
    /// Only calls since this time: RFC 3339 (2026-11-23T14:00:00Z) or an age (2h, 30m).
    #[arg(long)]
    since: Option<String>,
    /// Only calls before this time: RFC 3339 or an age.
    #[arg(long)]
    until: Option<String>,
    /// The groups compared end to end: a label key (way, node, cl, …) or source, mode,
    /// transport, el_client; default: the `way` label when present, else the transport.
    #[arg(long)]
    group_by: Option<String>,
    /// The directory the report goes to (report.md, report.html).
    #[arg(long, default_value = "sszgate-report")]
    out: PathBuf,
}

/// A time given as RFC 3339 or as an age before now, in µs since the epoch.
fn instant(text: &str) -> Result<i64> {
    let at = match humantime::parse_rfc3339_weak(text) {
        Ok(at) => at,
        Err(_) => {
            let age: Duration = humantime::parse_duration(text).with_context(|| {
                format!("{text:?} is neither a time (2026-11-23T14:00:00Z) nor an age (2h)")
            })?;
            SystemTime::now() - age
        }
    };
    Ok(at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64))
}

pub(crate) fn run(args: ReportArgs) -> Result<()> {
    let query = sszgate_report::Query {
        since_us: args.since.as_deref().map(instant).transpose()?,
        until_us: args.until.as_deref().map(instant).transpose()?,
    };
    let mut calls = Vec::new();
    let mut read = Vec::new();
    for store in &args.stores {
        let shown = flags::store_text(store);
        let path = match store {
            SinkSpec::ClickHouse(url) => {
                let client =
                    sszgate_record::clickhouse::Client::new(url.clone(), Duration::from_secs(120));
                let found = sszgate_report::load_clickhouse(&client, &query)?;
                read.push(format!("clickhouse {url} ({} calls)", found.len()));
                calls.extend(found);
                continue;
            }
            SinkSpec::Sqlite(path) => PathBuf::from(path),
            _ => bail!(
                "--store {shown:?}: reports read sqlite:PATH or clickhouse:http://HOST:PORT/DB"
            ),
        };
        if !path.exists() {
            bail!("--store {shown:?}: {} does not exist", path.display());
        }
        let found = sszgate_report::load(&path, &query)?;
        read.push(format!("{} ({} calls)", path.display(), found.len()));
        calls.extend(found);
    }
    if calls.is_empty() {
        bail!("no calls in {} for that period", read.join(", "));
    }
    calls.sort_by_key(|c| c.arrival_unix_us);
    let span = |us: i64| {
        humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_micros(us.max(0) as u64))
            .to_string()
    };
    let source = format!(
        "{} calls from {}, {} to {}.",
        calls.len(),
        read.join(", "),
        span(calls[0].arrival_unix_us),
        span(calls[calls.len() - 1].arrival_unix_us)
    );
    let report = sszgate_report::build(&calls, args.group_by.as_deref(), source);
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let md = args.out.join("report.md");
    let html = args.out.join("report.html");
    std::fs::write(&md, report.markdown()).with_context(|| format!("writing {}", md.display()))?;
    std::fs::write(&html, report.html()).with_context(|| format!("writing {}", html.display()))?;
    println!("{}", report.markdown());
    eprintln!(
        "sszgate report: {} sections; wrote {} and {}",
        report.sections.len(),
        md.display(),
        html.display()
    );
    Ok(())
}
