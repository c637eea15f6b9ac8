//! Exact per-call durations out of coarse Prometheus histograms: a histogram's `_sum` and
//! `_count` are exact, so between two scrapes in which one call of a label was counted, the
//! growth of `_sum` is that call's duration. Scraped several times a slot, calls that happen
//! once a slot (getPayload, newPayload) are each seen alone.
//!
//! Not here: what the labels mean, or joining calls across sources.

use std::collections::BTreeMap;

/// `_sum` (seconds) and `_count` of one histogram, per value of one label.
pub(crate) type Totals = BTreeMap<String, (f64, u64)>;

/// The `_sum` and `_count` of histogram `name` in a Prometheus text exposition, per value of
/// `label` (series that differ in other labels are added up); lines that do not parse are
/// left out.
pub(crate) fn histogram(text: &str, name: &str, label: &str) -> Totals {
    let (sum, count) = (format!("{name}_sum{{"), format!("{name}_count{{"));
    let key = format!("{label}=\"");
    let mut out = Totals::new();
    for line in text.lines() {
        let is_sum = line.starts_with(&sum);
        if !is_sum && !line.starts_with(&count) {
            continue;
        }
        let Some((labels, value)) = line.rsplit_once('}') else {
            continue;
        };
        let Some(value) = value
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        else {
            continue;
        };
        let Some(at) = labels.find(&key) else {
            continue;
        };
        let rest = &labels[at + key.len()..];
        let Some(end) = rest.find('"') else { continue };
        let entry = out.entry(rest[..end].to_string()).or_default();
        if is_sum {
            entry.0 += value;
        } else {
            entry.1 += value as u64;
        }
    }
    out
}

/// One call made out between two scrapes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IntervalCall {
    /// The label's value (a route or method).
    pub(crate) label: String,
    /// The earlier scrape, µs since the epoch: the call ended after it.
    pub(crate) after_us: i64,
    /// The later scrape: the call ended at or before it.
    pub(crate) by_us: i64,
    /// Its duration, µs.
    pub(crate) duration_us: f64,
}

/// What two consecutive scrapes of one source tell.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Between {
    /// The labels with exactly one call in the interval.
    pub(crate) calls: Vec<IntervalCall>,
    /// Calls left out because several of one label fell in one interval.
    pub(crate) ambiguous: u64,
}

/// The calls between scrapes `a` (at `after_us`) and `b` (at `by_us`).
pub(crate) fn between(a: &Totals, b: &Totals, after_us: i64, by_us: i64) -> Between {
    let mut out = Between::default();
    for (label, &(sum, count)) in b {
        let (sum_before, count_before) = a.get(label).copied().unwrap_or_default();
        match count.saturating_sub(count_before) {
            0 => {}
            1 => out.calls.push(IntervalCall {
                label: label.clone(),
                after_us,
                by_us,
                duration_us: (sum - sum_before) * 1e6,
            }),
            n => out.ambiguous += n,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME: &str = "lodestar_execution_engine_http_client_request_time_seconds";

    #[test]
    fn sums_and_counts_are_read_per_label() {
        let text = format!(
            "# HELP {NAME} x\n{NAME}_bucket{{routeId=\"getPayload\",le=\"0.1\"}} 1\n\
             {NAME}_sum{{routeId=\"getPayload\"}} 0.25\n{NAME}_count{{routeId=\"getPayload\"}} 2\n\
             {NAME}_sum{{routeId=\"notifyNewPayload\"}} 1e-2\n{NAME}_count{{routeId=\"notifyNewPayload\"}} 1\n\
             other_sum{{routeId=\"getPayload\"}} 9\n{NAME}_sum{{routeId=\"broken\" 1\n"
        );
        let totals = histogram(&text, NAME, "routeId");
        assert_eq!(totals.len(), 2, "{totals:?}");
        assert_eq!(totals["getPayload"], (0.25, 2));
        assert_eq!(totals["notifyNewPayload"], (0.01, 1));
    }

    #[test]
    fn series_differing_in_other_labels_add_up() {
        let text = "ngx_request_duration_seconds_sum{jrpc_method=\"engine_getPayloadV5\",status=\"200\"} 0.5\n\
                    ngx_request_duration_seconds_sum{jrpc_method=\"engine_getPayloadV5\",status=\"500\"} 0.25\n\
                    ngx_request_duration_seconds_count{jrpc_method=\"engine_getPayloadV5\",status=\"200\"} 3\n\
                    ngx_request_duration_seconds_count{jrpc_method=\"engine_getPayloadV5\",status=\"500\"} 1\n";
        let totals = histogram(text, "ngx_request_duration_seconds", "jrpc_method");
        assert_eq!(totals["engine_getPayloadV5"], (0.75, 4));
    }

    #[test]
    fn one_call_in_an_interval_is_its_sum_growth_and_several_are_ambiguous() {
        let a = Totals::from([("getPayload".into(), (1.0, 4)), ("fcu".into(), (2.0, 10))]);
        let b = Totals::from([
            ("getPayload".into(), (1.125, 5)),
            ("fcu".into(), (2.5, 12)),
            ("new".into(), (0.004, 1)),
        ]);
        let seen = between(&a, &b, 10, 20);
        assert_eq!(seen.ambiguous, 2);
        assert_eq!(seen.calls.len(), 2);
        let payload = seen.calls.iter().find(|c| c.label == "getPayload").unwrap();
        assert!((payload.duration_us - 125_000.0).abs() < 1e-6);
        assert_eq!((payload.after_us, payload.by_us), (10, 20));
        let new = seen.calls.iter().find(|c| c.label == "new").unwrap();
        assert!((new.duration_us - 4_000.0).abs() < 1e-6);
    }
}
