//! The end-to-end section (`sszgate bench e2e`): Engine API calls as a real consensus client
//! timed them, with the CL's Engine link going direct, through `sszgate proxy` and through
//! rpc-snooper in alternating windows of one chain — the rpc-snooper study's three tables
//! (CL-perceived duration per middle, its difference against direct, the overhead per call
//! over the EL-side time) with their charts, per method and blob count.
//!
//! Not here: running the chain, scraping the CL or joining the calls (the bench does that and
//! hands over [`CallSample`]s).

use std::collections::BTreeMap;

use crate::{Chart, Section, Table, quantile};

/// One Engine API call as the CL perceived it, in one window.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CallSample {
    /// The middle on the CL's link in its window (`direct`, `sszgate`, `rpc-snooper`, …).
    pub middle: String,
    /// The JSON-RPC method.
    pub method: String,
    /// The beacon slot the call fell in.
    pub slot: u64,
    /// Blobs of that slot's block (`None`: no block, or unknown).
    pub blobs: Option<usize>,
    /// The CL-perceived duration, µs.
    pub cl_us: f64,
    /// The EL-side duration of the same call as the middle recorded it, µs (`None`: not
    /// recorded by the middle, or not joined).
    pub el_us: Option<f64>,
}

/// The blob-count bin of `blobs`: the largest of `bins` (sorted) at or below it.
pub fn blob_bin(blobs: usize, bins: &[usize]) -> Option<usize> {
    bins.iter().rev().find(|&&b| b <= blobs).copied()
}

/// Samples grouped by (method, blob bin, middle), in order.
type Groups<'a> = BTreeMap<(String, usize, String), Vec<&'a CallSample>>;

fn groups<'a>(samples: &'a [CallSample], bins: &[usize]) -> Groups<'a> {
    let mut out: Groups<'a> = BTreeMap::new();
    for s in samples {
        if let Some(bin) = s.blobs.and_then(|b| blob_bin(b, bins)) {
            out.entry((s.method.clone(), bin, s.middle.clone()))
                .or_default()
                .push(s);
        }
    }
    out
}

fn ms(us: f64) -> String {
    if us.is_finite() {
        format!("{:.3}", us / 1e3)
    } else {
        "-".into()
    }
}

fn p50_cl(samples: &[&CallSample]) -> f64 {
    let values: Vec<f64> = samples.iter().map(|s| s.cl_us).collect();
    quantile(&values, 0.5)
}

/// The (method, bin) pairs present, in order.
fn method_bins(groups: &Groups<'_>) -> Vec<(String, usize)> {
    let mut pairs: Vec<(String, usize)> = groups.keys().map(|(m, b, _)| (m.clone(), *b)).collect();
    pairs.dedup();
    pairs
}

/// The three sections of the end-to-end comparison. `middles` are the middles in the order
/// shown, the first being the baseline (direct) the others are compared with; `bins` the blob
/// counts the rows are binned by (a block counts in the largest bin at or below its count).
pub fn e2e_sections(samples: &[CallSample], middles: &[String], bins: &[usize]) -> Vec<Section> {
    let mut bins = bins.to_vec();
    bins.sort_unstable();
    bins.dedup();
    let groups = groups(samples, &bins);
    vec![
        perceived(&groups, middles),
        against_baseline(&groups, middles),
        overhead(&groups, middles),
    ]
}

fn perceived(groups: &Groups<'_>, middles: &[String]) -> Section {
    let mut headers = vec!["method".to_string(), "blobs".to_string()];
    for m in middles {
        headers.extend([
            format!("{m} p50 ms"),
            format!("{m} p95 ms"),
            format!("{m} n"),
        ]);
    }
    let mut rows = Vec::new();
    let mut bars: Vec<(String, Vec<f64>)> = middles.iter().map(|m| (m.clone(), vec![])).collect();
    let mut categories = Vec::new();
    for (method, bin) in method_bins(groups) {
        let mut row = vec![method.clone(), bin.to_string()];
        let payload = method.starts_with("engine_getPayload");
        if payload {
            categories.push(format!("{bin} blobs"));
        }
        for (i, m) in middles.iter().enumerate() {
            let group = groups
                .get(&(method.clone(), bin, m.clone()))
                .map_or(&[][..], Vec::as_slice);
            let values: Vec<f64> = group.iter().map(|s| s.cl_us).collect();
            row.extend([
                ms(quantile(&values, 0.5)),
                ms(quantile(&values, 0.95)),
                values.len().to_string(),
            ]);
            if payload {
                bars[i].1.push(quantile(&values, 0.5) / 1e3);
            }
        }
        rows.push(row);
    }
    Section {
        title: "End to end: CL-perceived duration per middle".into(),
        note: "Each Engine API call's duration as the consensus client timed it (its own request-time histogram, read per call), by the middle on its Engine link in that window and the blob count of the slot's block.".into(),
        table: Table { headers, rows },
        chart: (!categories.is_empty()).then(|| Chart::Bars {
            title: "getPayload p50 as the CL perceived it".into(),
            categories,
            series: bars,
            y_label: "ms".into(),
        }),
    }
}

fn against_baseline(groups: &Groups<'_>, middles: &[String]) -> Section {
    let (baseline, others) = middles
        .split_first()
        .map_or(("", &[][..]), |(b, o)| (b.as_str(), o));
    let mut headers = vec![
        "method".to_string(),
        "blobs".to_string(),
        format!("{baseline} p50 ms"),
    ];
    for m in others {
        headers.extend([format!("{m} Δp50 ms"), format!("{m} Δp50 %")]);
    }
    let mut rows = Vec::new();
    let mut lines: Vec<(String, Vec<(f64, f64)>)> =
        others.iter().map(|m| (m.clone(), vec![])).collect();
    for (method, bin) in method_bins(groups) {
        let p50 = |m: &str| {
            groups
                .get(&(method.clone(), bin, m.to_string()))
                .map_or(f64::NAN, |g| p50_cl(g))
        };
        let base = p50(baseline);
        let mut row = vec![method.clone(), bin.to_string(), ms(base)];
        for (i, m) in others.iter().enumerate() {
            let delta = p50(m) - base;
            let pct = if base > 0.0 {
                delta / base * 100.0
            } else {
                f64::NAN
            };
            row.extend([
                ms(delta),
                if pct.is_finite() {
                    format!("{pct:+.1}")
                } else {
                    "-".into()
                },
            ]);
            if method.starts_with("engine_getPayload") && delta.is_finite() {
                lines[i].1.push((bin as f64, delta / 1e3));
            }
        }
        rows.push(row);
    }
    Section {
        title: format!("End to end: difference against {baseline}"),
        note: format!(
            "The p50 of each middle's windows minus the p50 of the {baseline} windows, for the same method and blob count (negative: faster than {baseline}, within the noise of the run)."
        ),
        table: Table { headers, rows },
        chart: lines
            .iter()
            .any(|(_, p)| !p.is_empty())
            .then(|| Chart::Lines {
                title: format!("getPayload p50 minus {baseline}, by blob count"),
                series: lines,
                x_label: "blobs".into(),
                y_label: "ms".into(),
            }),
    }
}

fn overhead(groups: &Groups<'_>, middles: &[String]) -> Section {
    let headers = [
        "middle",
        "method",
        "blobs",
        "joined calls",
        "avg ms",
        "p50 ms",
        "p95 ms",
        "per blob ms",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for m in middles {
        for ((method, bin, middle), group) in groups.iter().filter(|((_, _, g), _)| g == m) {
            let over: Vec<f64> = group
                .iter()
                .filter_map(|s| Some(s.cl_us - s.el_us?))
                .collect();
            if over.is_empty() {
                continue;
            }
            let avg = over.iter().sum::<f64>() / over.len() as f64;
            let p50 = quantile(&over, 0.5);
            rows.push(vec![
                middle.clone(),
                method.clone(),
                bin.to_string(),
                over.len().to_string(),
                ms(avg),
                ms(p50),
                ms(quantile(&over, 0.95)),
                if *bin > 0 {
                    ms(avg / *bin as f64)
                } else {
                    "-".into()
                },
            ]);
            if method.starts_with("engine_getPayload") {
                lines
                    .entry(middle.clone())
                    .or_default()
                    .push((*bin as f64, p50 / 1e3));
            }
        }
    }
    Section {
        title: "End to end: overhead per call (CL-perceived minus EL-side)".into(),
        note: "For the calls the middle recorded and the join matched one to one: the CL's duration minus the middle's EL-side duration of the same call (sszgate: its record's total minus its own time; rpc-snooper: its own request-duration histogram, read per call). What remains is the CL's encoding and decoding, the transport and the middle.".into(),
        table: Table { headers, rows },
        chart: (!lines.is_empty()).then(|| Chart::Lines {
            title: "getPayload overhead p50 by blob count".into(),
            series: lines.into_iter().collect(),
            x_label: "blobs".into(),
            y_label: "ms".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(
        middle: &str,
        method: &str,
        blobs: usize,
        cl_ms: f64,
        el_ms: Option<f64>,
    ) -> CallSample {
        CallSample {
            middle: middle.into(),
            method: method.into(),
            slot: 1,
            blobs: Some(blobs),
            cl_us: cl_ms * 1e3,
            el_us: el_ms.map(|v| v * 1e3),
        }
    }

    #[test]
    fn blob_counts_fall_in_the_largest_bin_at_or_below_them() {
        let bins = [0, 6, 12, 24, 48, 72];
        assert_eq!(blob_bin(0, &bins), Some(0));
        assert_eq!(blob_bin(5, &bins), Some(0));
        assert_eq!(blob_bin(30, &bins), Some(24));
        assert_eq!(blob_bin(72, &bins), Some(72));
        assert_eq!(blob_bin(3, &[6, 12]), None);
    }

    #[test]
    fn the_three_tables_hold_p50_differences_and_overheads() {
        let m = "engine_getPayloadV5";
        let samples = vec![
            sample("direct", m, 72, 100.0, None),
            sample("direct", m, 72, 110.0, None),
            sample("direct", m, 72, 120.0, None),
            sample("sszgate", m, 72, 111.0, Some(101.0)),
            sample("sszgate", m, 70, 112.0, Some(100.0)),
            sample("rpc-snooper", m, 72, 160.0, Some(100.0)),
            // No block: left out of every table.
            CallSample {
                blobs: None,
                ..sample("direct", m, 0, 1.0, None)
            },
        ];
        let middles = ["direct", "sszgate", "rpc-snooper"].map(String::from);
        let sections = e2e_sections(&samples, &middles, &[0, 6, 72, 48]);
        let perceived = &sections[0].table;
        // 70 blobs bin to 48, where only sszgate has a call; the rest is at 72.
        assert_eq!(perceived.rows.len(), 2, "{perceived:?}");
        assert_eq!(
            perceived.rows[0][..6],
            ["engine_getPayloadV5", "48", "-", "-", "0", "112.000"]
        );
        assert_eq!(
            perceived.rows[1][..5],
            ["engine_getPayloadV5", "72", "110.000", "120.000", "3"]
        );
        let against = &sections[1].table;
        assert_eq!(against.rows.len(), 2, "{against:?}");
        let at_72 = against.rows.iter().find(|r| r[1] == "72").unwrap();
        assert_eq!(at_72[2..], ["110.000", "1.000", "+0.9", "50.000", "+45.5"]);
        let over = &sections[2].table;
        let snooper = over.rows.iter().find(|r| r[0] == "rpc-snooper").unwrap();
        assert_eq!(snooper[3..], ["1", "60.000", "60.000", "60.000", "0.833"]);
        assert!(
            over.rows.iter().all(|r| r[0] != "direct"),
            "direct has no EL side"
        );
        assert!(sections.iter().all(|s| s.chart.is_some()));
    }
}
