//! The SSZ Engine API study on a real chain (`sszgate bench ssz-chain`) as report sections: per
//! method, direction and blob count, the bytes on the wire as JSON and as SSZ (and SSZ
//! compressed), the bridge's translation times and the encode and decode times of each form,
//! next to the published study's figures (`../shared/seeds/ssz-engine-api-benchmarks.md`).
//!
//! Not here: running the chain and measuring (`sszgate-bench`'s `ssz_study`), the other
//! sections of a report.

use serde::{Deserialize, Serialize};

use crate::{Chart, Section, Table, strings};

/// A middle value and its spread: the median with the smallest and largest value (sizes) or
/// with the 10th and 90th percentiles (times).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The median.
    pub median: f64,
    /// The low end: the smallest value, or the 10th percentile.
    pub low: f64,
    /// The high end: the largest value, or the 90th percentile.
    pub high: f64,
}

impl Spread {
    /// The median and the smallest and largest of `values`; `None` when empty.
    pub fn of_sizes(values: &[f64]) -> Option<Spread> {
        Spread::of(values, 0.0, 1.0)
    }

    /// The median and the 10th and 90th percentiles of `values`; `None` when empty.
    pub fn of_times(values: &[f64]) -> Option<Spread> {
        Spread::of(values, 0.1, 0.9)
    }

    fn of(values: &[f64], low: f64, high: f64) -> Option<Spread> {
        (!values.is_empty()).then(|| Spread {
            median: crate::quantile(values, 0.5),
            low: crate::quantile(values, low),
            high: crate::quantile(values, high),
        })
    }
}

/// One row of the study: a method's message in one direction at one blob count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SszStudyRow {
    /// The JSON-RPC method, e.g. `engine_getPayloadV5`.
    pub method: String,
    /// `request` (CL to EL) or `answer` (EL to CL).
    pub direction: String,
    /// Blobs in the call (the bundle's, the answered blobs', the versioned hashes').
    pub blobs: u64,
    /// Calls recorded in this group on both bridges.
    pub calls: usize,
    /// Bytes as JSON-RPC, as its sender wrote them (envelope included).
    pub json_bytes: Spread,
    /// Bytes as REST-SSZ, uncompressed.
    pub ssz_bytes: Spread,
    /// Bytes on the REST-SSZ link when the bridge compressed them (zstd, as the gateway asks).
    pub ssz_zstd_bytes: Option<Spread>,
    /// Bytes of one recorded message's SSZ as framed snappy (the bridge offers it by name).
    pub ssz_snappy_bytes: Option<u64>,
    /// The bridge's JSON to SSZ translation, µs (from its records).
    pub to_ssz_us: Option<Spread>,
    /// The bridge's SSZ to JSON translation, µs (from its records).
    pub to_json_us: Option<Spread>,
    /// The sender's encoding as JSON of one recorded message, µs.
    pub json_encode_us: Option<Spread>,
    /// The sender's encoding as SSZ, µs.
    pub ssz_encode_us: Option<Spread>,
    /// The receiver's decoding of the JSON form (the CL's side for answers), µs.
    pub json_decode_us: Option<Spread>,
    /// The receiver's decoding of the SSZ form, µs.
    pub ssz_decode_us: Option<Spread>,
}

impl SszStudyRow {
    /// Whether the message carries a payload or blobs (where the study expects JSON ≈ 2×
    /// SSZ): getPayload and getBlobs answers, newPayload requests.
    pub fn carries_payload(&self) -> bool {
        let m = self.method.as_str();
        match self.direction.as_str() {
            "answer" => m.contains("getPayloadV") || m.contains("getBlobsV"),
            _ => m.contains("newPayloadV"),
        }
    }
}

/// The published study's figure for the sizes of `row`'s message, if it gives one.
pub fn published_sizes(row: &SszStudyRow) -> &'static str {
    let m = row.method.as_str();
    match (row.direction.as_str(), row.blobs) {
        ("answer", 72) if m.contains("getPayloadV") => "~9.9 MB / ~19.9 MB (2.0×)",
        ("answer", 24) if m.contains("getPayloadV") => "~3.3 MB / ~6.6 MB (2.0×)",
        ("answer", 6) if m.contains("getPayloadV") => "~837 KB / ~1.68 MB (2.0×)",
        ("answer", _) if m.contains("getPayloadV") => "837 KB – 9.9 MB / 1.68 – 19.9 MB",
        ("request", _) if m.contains("forkchoiceUpdated") => "100–200 B / 300–600 B",
        ("answer", _) if m.contains("forkchoiceUpdated") => "49–57 B / ~200 B",
        ("request", _) if m.contains("newPayload") => "603 B – 46 KB / 1.4 – 92 KB",
        _ => "-",
    }
}

/// The published study's encoding times (SSZ / JSON) for `row`'s message, if it gives them.
pub fn published_times(row: &SszStudyRow) -> &'static str {
    let m = row.method.as_str();
    match (row.direction.as_str(), row.blobs) {
        ("answer", 72) if m.contains("getPayloadV") => {
            "worst, geth + Lodestar: 36 ms / 446 ms; all pairs 5–36 / 63–446 ms"
        }
        ("answer", _) if m.contains("getPayloadV") => "1.1–25.6 ms / 16–211 ms (Erigon + Prysm)",
        ("request", _) if m.contains("forkchoiceUpdated") => "<1 µs / <1 µs",
        ("request", _) if m.contains("newPayload") => "15–45 µs / 60–4,978 µs",
        _ => "-",
    }
}

fn bytes(s: &Spread) -> String {
    if s.low == s.high {
        format!("{:.0}", s.median)
    } else {
        format!("{:.0} ({:.0}–{:.0})", s.median, s.low, s.high)
    }
}

fn ms(s: &Option<Spread>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s.median < 10.0 => format!(
            "{:.4} ({:.4}–{:.4})",
            s.median / 1e3,
            s.low / 1e3,
            s.high / 1e3
        ),
        Some(s) => format!(
            "{:.3} ({:.3}–{:.3})",
            s.median / 1e3,
            s.low / 1e3,
            s.high / 1e3
        ),
    }
}

fn ratio(json: Option<&Spread>, ssz: Option<&Spread>) -> String {
    match (json, ssz) {
        (Some(j), Some(s)) if s.median > 0.0 => format!("{:.2}", j.median / s.median),
        _ => "-".into(),
    }
}

fn short(method: &str) -> &str {
    method.trim_start_matches("engine_")
}

/// A table of `rows`: method, direction and blobs, then `headers` filled by `cells`.
fn table(
    headers: &[&str],
    rows: &[SszStudyRow],
    cells: impl Fn(&SszStudyRow) -> Vec<String>,
) -> Table {
    let mut all = strings(&["method", "direction", "blobs"]);
    all.extend(strings(headers));
    Table {
        headers: all,
        rows: rows
            .iter()
            .map(|r| {
                let mut row = vec![
                    short(&r.method).to_string(),
                    r.direction.clone(),
                    r.blobs.to_string(),
                ];
                row.extend(cells(r));
                row
            })
            .collect(),
    }
}

/// The study's two sections: wire sizes, then times, each with a chart of the blob-carrying
/// answers by blob count.
pub fn sections(rows: &[SszStudyRow]) -> Vec<Section> {
    vec![sizes(rows), times(rows)]
}

fn sizes(rows: &[SszStudyRow]) -> Section {
    let table = table(
        &[
            "calls",
            "JSON bytes (min–max)",
            "SSZ bytes (min–max)",
            "JSON / SSZ",
            "SSZ+zstd on the link",
            "SSZ+snappy (framed)",
            "study: SSZ / JSON",
        ],
        rows,
        |r| {
            vec![
                r.calls.to_string(),
                bytes(&r.json_bytes),
                bytes(&r.ssz_bytes),
                ratio(Some(&r.json_bytes), Some(&r.ssz_bytes)),
                r.ssz_zstd_bytes.as_ref().map_or("-".into(), bytes),
                r.ssz_snappy_bytes.map_or("-".into(), |b| b.to_string()),
                published_sizes(r).to_string(),
            ]
        },
    );
    let carried: Vec<&SszStudyRow> = rows.iter().filter(|r| r.carries_payload()).collect();
    Section {
        title: "SSZ Engine API on a real chain: bytes per method and blob count".into(),
        note: "Every call of a Lodestar v1.38 + geth (Osaka, BPO1 48/72) chain through two bridges back to back (JSON-RPC on the CL's and the EL's links, REST-SSZ between): JSON as its sender wrote it, SSZ as the middle link carried it before and after compression, median with the smallest and largest; the study's figures beside.".into(),
        table,
        chart: (!carried.is_empty()).then(|| Chart::Bars {
            title: "blob-carrying messages, JSON vs SSZ, MB (median)".into(),
            categories: carried
                .iter()
                .map(|r| format!("{} {}", short(&r.method), r.blobs))
                .collect(),
            series: vec![
                (
                    "JSON".into(),
                    carried.iter().map(|r| r.json_bytes.median / 1e6).collect(),
                ),
                (
                    "SSZ".into(),
                    carried.iter().map(|r| r.ssz_bytes.median / 1e6).collect(),
                ),
                (
                    "SSZ+zstd".into(),
                    carried
                        .iter()
                        .map(|r| r.ssz_zstd_bytes.map_or(f64::NAN, |s| s.median / 1e6))
                        .collect(),
                ),
            ],
            y_label: "MB".into(),
        }),
    }
}

fn times(rows: &[SszStudyRow]) -> Section {
    let table = table(
        &[
            "bridge JSON→SSZ ms",
            "bridge SSZ→JSON ms",
            "encode JSON ms",
            "encode SSZ ms",
            "decode JSON ms",
            "decode SSZ ms",
            "decode JSON / SSZ",
            "study: encode SSZ / JSON",
        ],
        rows,
        |r| {
            vec![
                ms(&r.to_ssz_us),
                ms(&r.to_json_us),
                ms(&r.json_encode_us),
                ms(&r.ssz_encode_us),
                ms(&r.json_decode_us),
                ms(&r.ssz_decode_us),
                ratio(r.json_decode_us.as_ref(), r.ssz_decode_us.as_ref()),
                published_times(r).to_string(),
            ]
        },
    );
    let answers: Vec<&SszStudyRow> = rows
        .iter()
        .filter(|r| r.direction == "answer" && r.method.contains("getPayloadV"))
        .collect();
    let line = |pick: fn(&SszStudyRow) -> Option<Spread>| -> Vec<(f64, f64)> {
        answers
            .iter()
            .filter_map(|r| Some((r.blobs as f64, pick(r)?.median / 1e3)))
            .collect()
    };
    Section {
        title: "SSZ Engine API on a real chain: translation, encode and decode times".into(),
        note: "The bridge's translation each way (from its records, every call), and the encoding by the message's sender and the decoding by its receiver of one recorded message per row in each form (sszgate's codecs, the ones its client decodes answers with; median, p10–p90). For answers the decode is the CL's side; the study's encode times are the EL's.".into(),
        table,
        chart: (!answers.is_empty()).then(|| Chart::Lines {
            title: "getPayload answers by blob count, ms (median)".into(),
            series: vec![
                ("decode JSON (CL)".into(), line(|r| r.json_decode_us)),
                ("decode SSZ (CL)".into(), line(|r| r.ssz_decode_us)),
                ("encode JSON (EL)".into(), line(|r| r.json_encode_us)),
                ("encode SSZ (EL)".into(), line(|r| r.ssz_encode_us)),
                ("bridge JSON→SSZ".into(), line(|r| r.to_ssz_us)),
            ],
            x_label: "blobs".into(),
            y_label: "ms".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(method: &str, direction: &str, blobs: u64, json: f64, ssz: f64) -> SszStudyRow {
        let at = |v: f64| Spread {
            median: v,
            low: v,
            high: v,
        };
        SszStudyRow {
            method: method.into(),
            direction: direction.into(),
            blobs,
            calls: 3,
            json_bytes: at(json),
            ssz_bytes: at(ssz),
            ssz_zstd_bytes: None,
            ssz_snappy_bytes: Some(7),
            to_ssz_us: Some(at(1500.0)),
            to_json_us: None,
            json_encode_us: Some(at(40_000.0)),
            ssz_encode_us: Some(at(4_000.0)),
            json_decode_us: Some(at(60_000.0)),
            ssz_decode_us: Some(at(3_000.0)),
        }
    }

    #[test]
    fn spreads_are_the_median_with_min_max_or_p10_p90() {
        let values: Vec<f64> = (1..=11).map(f64::from).collect();
        let sizes = Spread::of_sizes(&values).unwrap();
        assert_eq!((sizes.median, sizes.low, sizes.high), (6.0, 1.0, 11.0));
        let times = Spread::of_times(&values).unwrap();
        assert_eq!((times.median, times.low, times.high), (6.0, 2.0, 10.0));
        assert!(Spread::of_times(&[]).is_none());
    }

    #[test]
    fn rows_become_size_and_time_tables_with_the_studys_figures_beside() {
        let rows = [
            row(
                "engine_getPayloadV5",
                "answer",
                72,
                19_900_000.0,
                9_930_000.0,
            ),
            row("engine_forkchoiceUpdatedV3", "request", 0, 420.0, 150.0),
        ];
        let [sizes, times] = <[Section; 2]>::try_from(sections(&rows)).unwrap();
        assert_eq!(sizes.table.rows.len(), 2);
        let big = &sizes.table.rows[0];
        assert_eq!(big[..4], strings(&["getPayloadV5", "answer", "72", "3"]));
        assert_eq!(big[6], "2.00");
        assert_eq!(big[9], "~9.9 MB / ~19.9 MB (2.0×)");
        assert_eq!(sizes.table.rows[1][9], "100–200 B / 300–600 B");
        let Some(Chart::Bars { categories, .. }) = &sizes.chart else {
            panic!("a bar chart of the blob-carrying rows")
        };
        assert_eq!(categories, &["getPayloadV5 72"]);
        assert_eq!(times.table.rows[0][7], "60.000 (60.000–60.000)");
        assert_eq!(times.table.rows[0][9], "20.00");
        assert!(times.table.rows[0][10].contains("446 ms"));
        assert!(times.chart.as_ref().unwrap().svg().is_ok());
    }

    #[test]
    fn payload_carrying_means_bundles_blobs_and_new_payloads() {
        assert!(row("engine_getBlobsV2", "answer", 6, 2.0, 1.0).carries_payload());
        assert!(row("engine_newPayloadV4", "request", 6, 2.0, 1.0).carries_payload());
        assert!(!row("engine_newPayloadV4", "answer", 6, 2.0, 1.0).carries_payload());
        assert!(!row("engine_forkchoiceUpdatedV3", "request", 0, 2.0, 1.0).carries_payload());
    }
}
