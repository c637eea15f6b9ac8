//! `--xatu-*` (and their `SNOOPER_XATU_*` variables) resolved as rpc-snooper resolves them:
//! the four required values, `type:address` outputs, `key=value` labels and headers, zero
//! meaning the default for the bounds, Go durations (`200ms`, `1m30s`).
//!
//! Not here: reading argv and the environment (`cli`).

use std::time::Duration;

use super::{
    XatuSettings,
    sink::{Bounds, Output},
};
use crate::cli::CliError;

/// The defaults rpc-snooper gives a zero value.
const DEFAULT_QUEUE: usize = 51_200;
const DEFAULT_BATCH: usize = 512;
const DEFAULT_WORKERS: usize = 5;
const DEFAULT_BATCH_TIMEOUT: Duration = Duration::from_secs(5);
const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(30);
/// xatu's gRPC keepalive defaults, on whatever `--xatu-keepalive-enabled` says.
const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(150);
const DEFAULT_KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(30);
/// A queue or batch larger than this is refused: it would hold gigabytes of events.
const MAX_COUNT: usize = 1 << 20;

/// The xatu settings from the values given (`get` by long flag name); `None` unless
/// `--xatu-enabled`.
pub fn resolve(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<XatuSettings>, CliError> {
    let on = |long: &str| get(long).as_deref().and_then(parse_bool).unwrap_or(false);
    if !on("xatu-enabled") {
        return Ok(None);
    }
    let required = |long: &str| {
        get(long)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| CliError::BadValue {
                flag: format!("--{long}"),
                value: String::new(),
                why: "required with --xatu-enabled".into(),
            })
    };
    let name = required("xatu-name")?;
    let network_name = required("xatu-network-name")?;
    let id = required("xatu-network-id")?;
    let network_id = id
        .parse::<u64>()
        .ok()
        .filter(|n| *n != 0)
        .ok_or_else(|| bad("xatu-network-id", &id, "a non-zero integer"))?;
    let tls = on("xatu-tls");
    let outputs = items(get("xatu-output"))
        .iter()
        .map(|o| output(o, tls))
        .collect::<Result<Vec<_>, _>>()?;
    if outputs.is_empty() {
        return Err(bad("xatu-output", "", "at least one output is required"));
    }
    let mut labels = pairs("xatu-label", get("xatu-label"))?;
    labels.sort();
    Ok(Some(XatuSettings {
        name,
        network_name,
        network_id,
        outputs,
        labels,
        headers: pairs("xatu-header", get("xatu-header"))?,
        bounds: bounds(get)?,
    }))
}

fn bounds(get: &dyn Fn(&str) -> Option<String>) -> Result<Bounds, CliError> {
    let count = |long: &str, default: usize| -> Result<usize, CliError> {
        let Some(v) = get(long) else {
            return Ok(default);
        };
        match v.parse::<i64>() {
            Ok(n) if n <= 0 => Ok(default),
            Ok(n) if n as u64 <= MAX_COUNT as u64 => Ok(n as usize),
            _ => Err(bad(long, &v, &format!("an integer up to {MAX_COUNT}"))),
        }
    };
    let wait = |long: &str, default: Duration| -> Result<Duration, CliError> {
        let Some(v) = get(long) else {
            return Ok(default);
        };
        let d = go_duration(&v).ok_or_else(|| bad(long, &v, "a duration such as 200ms or 5s"))?;
        Ok(if d.is_zero() { default } else { d })
    };
    Ok(Bounds {
        max_queue_size: count("xatu-max-queue-size", DEFAULT_QUEUE)?,
        max_export_batch_size: count("xatu-max-export-batch-size", DEFAULT_BATCH)?,
        workers: count("xatu-workers", DEFAULT_WORKERS)?,
        batch_timeout: wait("xatu-batch-timeout", DEFAULT_BATCH_TIMEOUT)?,
        export_timeout: wait("xatu-export-timeout", DEFAULT_EXPORT_TIMEOUT)?,
        keepalive: wait("xatu-keepalive-time", DEFAULT_KEEPALIVE)?,
        keepalive_timeout: wait("xatu-keepalive-timeout", DEFAULT_KEEPALIVE_TIMEOUT)?,
    })
}

/// One `--xatu-output`: `stdout`, `http:URL` or `xatu:HOST:PORT` (over TLS with `tls`, as
/// rpc-snooper's `--xatu-tls` applies to its xatu outputs).
fn output(text: &str, tls: bool) -> Result<Output, CliError> {
    let flag = "xatu-output";
    if text == "stdout" {
        return Ok(Output::Stdout);
    }
    let (kind, address) = text
        .split_once(':')
        .ok_or_else(|| bad(flag, text, "type:address or stdout"))?;
    if address.is_empty() {
        return Err(bad(flag, text, "an address after the type"));
    }
    match kind {
        "xatu" if tls => Ok(Output::XatuTls(address.to_string())),
        "xatu" => Ok(Output::Xatu(address.to_string())),
        "http" if address.starts_with("http://") || address.starts_with("https://") => {
            Ok(Output::Http(address.to_string()))
        }
        "http" => Err(bad(flag, text, "an http:// or https:// URL")),
        "kafka" => Err(CliError::Refused {
            flag: format!("--{flag} {text}"),
            why: "kafka output is not implemented (rpc-snooper refuses it at start too)".into(),
        }),
        _ => Err(bad(flag, text, "an output type among stdout, http, xatu")),
    }
}

/// A comma-separated list, blanks dropped.
fn items(text: Option<String>) -> Vec<String> {
    let text = text.unwrap_or_default();
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `key=value` items; an empty key or a missing `=` is refused.
fn pairs(long: &str, text: Option<String>) -> Result<Vec<(String, String)>, CliError> {
    items(text)
        .iter()
        .map(|item| match item.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
            _ => Err(bad(long, item, "key=value")),
        })
        .collect()
}

/// Go's `time.ParseDuration` for non-negative values: decimal numbers with units `ns`,
/// `us`/`µs`, `ms`, `s`, `m`, `h`, concatenated (`1m30s`); `0` alone.
pub fn go_duration(text: &str) -> Option<Duration> {
    if text == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * seconds;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).ok()
}

fn parse_bool(value: &str) -> Option<bool> {
    crate::cli::parse_bool(value)
}

fn bad(long: &str, value: &str, why: &str) -> CliError {
    CliError::BadValue {
        flag: format!("--{long}"),
        value: value.into(),
        why: why.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(args: &[(&str, &str)]) -> Result<Option<XatuSettings>, CliError> {
        let owned: Vec<(String, String)> = args
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        resolve(&|long| {
            owned
                .iter()
                .find(|(k, _)| k == long)
                .map(|(_, v)| v.clone())
        })
    }

    const BASE: [(&str, &str); 5] = [
        ("xatu-enabled", "true"),
        ("xatu-name", "snooper-1"),
        ("xatu-network-name", "testnet"),
        ("xatu-network-id", "1337"),
        (
            "xatu-output",
            "xatu:127.0.0.1:8080,http:http://127.0.0.1:9/x",
        ),
    ];

    #[test]
    fn defaults_and_outputs() {
        let s = settings(&BASE).unwrap().unwrap();
        assert_eq!(
            s.outputs,
            [
                Output::Xatu("127.0.0.1:8080".into()),
                Output::Http("http://127.0.0.1:9/x".into())
            ]
        );
        assert_eq!(
            (
                s.bounds.max_queue_size,
                s.bounds.max_export_batch_size,
                s.bounds.workers
            ),
            (51_200, 512, 5)
        );
        assert_eq!(s.bounds.batch_timeout, Duration::from_secs(5));
        assert_eq!(settings(&[("xatu-name", "x")]).unwrap(), None);
    }

    #[test]
    fn bad_values_are_named() {
        let with = |k: &'static str, v: &'static str| {
            let mut a: Vec<(&str, &str)> = BASE.iter().copied().filter(|(n, _)| *n != k).collect();
            a.push((k, v));
            settings(&a).unwrap_err().to_string()
        };
        assert!(with("xatu-network-id", "0").contains("--xatu-network-id"));
        assert!(with("xatu-name", "").contains("--xatu-name"));
        assert!(with("xatu-output", "kafka:b:9092/t").contains("kafka"));
        assert!(with("xatu-output", "ftp:x").contains("--xatu-output"));
        assert!(with("xatu-label", "=v").contains("--xatu-label"));
        assert!(with("xatu-max-queue-size", "99999999999").contains("--xatu-max-queue-size"));
        assert!(with("xatu-batch-timeout", "5 parsecs").contains("--xatu-batch-timeout"));
        assert!(with("xatu-output", "http:ftp://h/x").contains("--xatu-output"));
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("200ms"), Some(Duration::from_millis(200)));
        assert_eq!(go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(go_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(go_duration("0"), Some(Duration::ZERO));
        assert_eq!(go_duration("5"), None);
        assert_eq!(go_duration("-1s"), None);
        assert_eq!(go_duration(""), None);
    }
}
