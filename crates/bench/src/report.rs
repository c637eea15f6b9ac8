//! Output of the codec and compression studies: Markdown tables shaped like the studies' own,
//! a CSV of every measurement, and SVG charts (plotters). Measuring is elsewhere
//! ([`crate::codec`], [`crate::compress`]).

use std::{collections::BTreeMap, fmt::Write as _, path::Path};

use plotters::prelude::*;

use crate::{codec::CodecRow, compress::CompressRow};

/// Errors writing a report.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The CSV writer failed.
    #[error("{path}: {source}")]
    Csv {
        /// The file.
        path: String,
        /// Why.
        source: csv::Error,
    },
    /// A chart could not be drawn.
    #[error("chart {path}: {message}")]
    Chart {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Writes `rows` as CSV to `path`.
pub fn write_csv<T: serde::Serialize>(path: &Path, rows: &[T]) -> Result<(), ReportError> {
    let name = path.display().to_string();
    let csv_error = |source| ReportError::Csv {
        path: name.clone(),
        source,
    };
    let mut writer = csv::Writer::from_path(path).map_err(csv_error)?;
    for row in rows {
        writer.serialize(row).map_err(csv_error)?;
    }
    writer.flush().map_err(|source| ReportError::Io {
        path: name.clone(),
        source,
    })
}

fn ms(us: f64) -> String {
    if us < 10.0 {
        format!("{:.4}", us / 1e3)
    } else {
        format!("{:.3}", us / 1e3)
    }
}

/// The codec study as Markdown: the blob-carrying answers by blob count (sizes and the six
/// operations), then every other message, then the newPayload of the real blocks summarised.
pub fn codec_markdown(rows: &[CodecRow]) -> String {
    // message, data -> operation -> row
    let mut by_message: BTreeMap<(usize, String, String), BTreeMap<&str, &CodecRow>> =
        BTreeMap::new();
    let mut order = Vec::new();
    for r in rows {
        let key = (r.blobs, r.message.clone(), r.data.clone());
        if !by_message.contains_key(&key) {
            order.push(key.clone());
        }
        by_message.entry(key).or_default().insert(r.operation, r);
    }
    let mut out = String::new();
    let header = "| message | data | JSON bytes | SSZ bytes | size × | JSON enc ms | JSON dec ms | SSZ enc ms | SSZ dec ms | JSON→SSZ ms | SSZ→JSON ms |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    let line = |ops: &BTreeMap<&str, &CodecRow>| {
        let any = ops.values().next().expect("six operations");
        let t = |op: &str| {
            ops.get(op)
                .map(|r| format!("{} ({}–{})", ms(r.median_us), ms(r.p10_us), ms(r.p90_us)))
                .unwrap_or_default()
        };
        format!(
            "| {} | {} | {} | {} | {:.2} | {} | {} | {} | {} | {} | {} |\n",
            any.message,
            any.data,
            any.json_bytes,
            any.ssz_bytes,
            any.json_bytes as f64 / any.ssz_bytes.max(1) as f64,
            t("json-encode"),
            t("json-decode"),
            t("ssz-encode"),
            t("ssz-decode"),
            t("json-to-ssz"),
            t("ssz-to-json"),
        )
    };
    let _ = writeln!(
        out,
        "### Engine API messages: sizes and the six operations (median, p10–p90 in brackets)\n"
    );
    out.push_str(header);
    for key in &order {
        if key.1.starts_with("newPayload") {
            continue;
        }
        out.push_str(&line(&by_message[key]));
    }
    let payloads: Vec<_> = order
        .iter()
        .filter(|k| k.1.starts_with("newPayload"))
        .collect();
    if !payloads.is_empty() {
        let _ = writeln!(
            out,
            "\n### newPayload requests of {} real mainnet payloads: medians over the payloads\n",
            payloads.len()
        );
        out.push_str("| operation | median of medians ms | largest payload ms | JSON/SSZ time ratio (median) |\n|---|---:|---:|---:|\n");
        let largest = payloads
            .iter()
            .max_by_key(|k| by_message[**k].values().next().map_or(0, |r| r.ssz_bytes))
            .expect("not empty");
        for (json_op, ssz_op) in [
            ("json-encode", "ssz-encode"),
            ("json-decode", "ssz-decode"),
            ("json-to-ssz", "ssz-to-json"),
        ] {
            for op in [json_op, ssz_op] {
                let mut times: Vec<f64> = payloads
                    .iter()
                    .filter_map(|k| by_message[*k].get(op).map(|r| r.median_us))
                    .collect();
                let mut ratios: Vec<f64> = payloads
                    .iter()
                    .filter_map(|k| {
                        let ops = &by_message[*k];
                        Some(ops.get(json_op)?.median_us / ops.get(ssz_op)?.median_us)
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "| {op} | {} | {} | {} |",
                    ms(median(&mut times)),
                    by_message[*largest]
                        .get(op)
                        .map(|r| ms(r.median_us))
                        .unwrap_or_default(),
                    if op == json_op && !op.contains("-to-") {
                        format!("{:.2}", median(&mut ratios))
                    } else {
                        String::new()
                    }
                );
            }
        }
    }
    out
}

/// The study's size ranges, 250 KB wide: the index of the range of `bytes`.
pub fn size_range(bytes: usize) -> usize {
    (bytes.saturating_sub(1) / 250_000).min(9)
}

/// The label of size range `i` (`0000-0250` … `2251-2500`, the last open-ended).
pub fn range_label(i: usize) -> String {
    let from = if i == 0 { 0 } else { i * 250 + 1 };
    let to = (i + 1) * 250;
    if i == 9 {
        format!("{from:04}+ KB")
    } else {
        format!("{from:04}-{to:04} KB")
    }
}

/// The compression study as Markdown: per kind and size range, the snappy figures shaped like
/// the snappy study (samples, median ratio, compress and decompress ms); then every codec over
/// everything; then the incompressible items, listed rather than averaged away.
pub fn compress_markdown(rows: &[CompressRow]) -> String {
    let mut out = String::new();
    // Kinds in the order first met.
    let mut kinds: Vec<String> = Vec::new();
    for r in rows {
        if !kinds.contains(&r.kind) {
            kinds.push(r.kind.clone());
        }
    }
    let _ = writeln!(
        out,
        "### Snappy (block format) by size range, as in the snappy study\n"
    );
    out.push_str("| data | size range | samples | median ratio | median compress ms | median decompress ms |\n|---|---|---:|---:|---:|---:|\n");
    for kind in &kinds {
        let mut ranges: BTreeMap<usize, Vec<&CompressRow>> = BTreeMap::new();
        for r in rows
            .iter()
            .filter(|r| &r.kind == kind && r.codec == "snappy")
        {
            ranges.entry(size_range(r.raw_bytes)).or_default().push(r);
        }
        for (range, group) in ranges {
            let mut ratio: Vec<f64> = group.iter().map(|r| r.ratio).collect();
            let mut c: Vec<f64> = group.iter().map(|r| r.compress_us).collect();
            let mut d: Vec<f64> = group.iter().map(|r| r.decompress_us).collect();
            let _ = writeln!(
                out,
                "| {kind} | {} | {} | {:.3} | {} | {} |",
                range_label(range),
                group.len(),
                median(&mut ratio),
                ms(median(&mut c)),
                ms(median(&mut d))
            );
        }
    }
    let _ = writeln!(
        out,
        "\n### Every codec: medians over the items of each kind\n"
    );
    out.push_str("| data | codec | items | median ratio | ratio without incompressible (< 1.1) | median compress ms | median decompress ms | compress MB/s | decompress MB/s |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for kind in &kinds {
        for codec in crate::compress::Codec::ALL {
            let group: Vec<&CompressRow> = rows
                .iter()
                .filter(|r| &r.kind == kind && r.codec == codec.name())
                .collect();
            if group.is_empty() {
                continue;
            }
            let col = |f: fn(&CompressRow) -> f64| {
                let mut v: Vec<f64> = group.iter().map(|r| f(r)).collect();
                median(&mut v)
            };
            let mut compressible: Vec<f64> = group
                .iter()
                .filter(|r| r.ratio >= 1.1)
                .map(|r| r.ratio)
                .collect();
            let _ = writeln!(
                out,
                "| {kind} | {} | {} | {:.3} | {:.3} | {} | {} | {:.0} | {:.0} |",
                codec.name(),
                group.len(),
                col(|r| r.ratio),
                median(&mut compressible),
                ms(col(|r| r.compress_us)),
                ms(col(|r| r.decompress_us)),
                col(|r| r.compress_mb_s),
                col(|r| r.decompress_mb_s),
            );
        }
    }
    let incompressible: Vec<&CompressRow> = rows
        .iter()
        .filter(|r| r.codec == "snappy" && r.ratio < 1.1)
        .collect();
    let _ = writeln!(
        out,
        "\n### Incompressible with snappy (ratio < 1.1): {} items\n",
        incompressible.len()
    );
    if !incompressible.is_empty() {
        out.push_str(
            "| data | item | bytes | snappy ratio | zstd-3 ratio |\n|---|---|---:|---:|---:|\n",
        );
        for r in incompressible {
            let zstd = rows
                .iter()
                .find(|z| z.kind == r.kind && z.item == r.item && z.codec == "zstd-3")
                .map_or(f64::NAN, |z| z.ratio);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.3} | {:.3} |",
                r.kind, r.item, r.raw_bytes, r.ratio, zstd
            );
        }
    }
    out
}

fn chart_error(path: &Path) -> impl Fn(String) -> ReportError + '_ {
    move |message| ReportError::Chart {
        path: path.display().to_string(),
        message,
    }
}

use sszgate_report::PALETTE;

/// A chart with lines and markers: x = size in MB, y = time in ms, one series per name (the
/// report crate's chart, written to `path`).
fn size_time_chart(
    path: &Path,
    title: &str,
    series: &BTreeMap<String, Vec<(f64, f64)>>,
) -> Result<(), ReportError> {
    let chart = sszgate_report::Chart::Lines {
        title: title.to_string(),
        series: series
            .iter()
            .map(|(name, points)| {
                let mut points = points.clone();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                (name.clone(), points)
            })
            .collect(),
        x_label: "message size, MB".into(),
        y_label: "time, ms (median)".into(),
    };
    let svg = chart.svg().map_err(chart_error(path))?;
    std::fs::write(path, svg).map_err(|source| ReportError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// The codec charts: time against size for each operation, JSON and SSZ, over the blob-carrying
/// getPayloadV5 answers and over the real newPayload requests. Returns the files written.
pub fn codec_charts(dir: &Path, rows: &[CodecRow]) -> Result<Vec<String>, ReportError> {
    let mut written = Vec::new();
    for (file, title, filter) in [
        (
            "codec-getpayload-v5.svg",
            "getPayloadV5 response: time vs size (0..N real blobs)",
            (|r: &CodecRow| r.message == "getPayloadV5 response") as fn(&CodecRow) -> bool,
        ),
        (
            "codec-newpayload.svg",
            "newPayload request of every real mainnet payload: time vs size",
            |r: &CodecRow| r.message.starts_with("newPayload"),
        ),
    ] {
        let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for r in rows.iter().filter(|r| filter(r)) {
            let (label, bytes) = match r.operation {
                "json-encode" => ("JSON encode", r.json_bytes),
                "json-decode" => ("JSON decode", r.json_bytes),
                "ssz-encode" => ("SSZ encode", r.ssz_bytes),
                "ssz-decode" => ("SSZ decode", r.ssz_bytes),
                _ => continue,
            };
            series
                .entry(label.to_string())
                .or_default()
                .push((bytes as f64 / 1e6, r.median_us / 1e3));
        }
        if series.is_empty() {
            continue;
        }
        let path = dir.join(file);
        size_time_chart(&path, title, &series)?;
        written.push(path.display().to_string());
    }
    Ok(written)
}

/// The compression charts: snappy's ratio per size range as box plots (beacon blocks as SSZ,
/// the study's data; newPayload as JSON and SSZ), and compress time against size per codec.
pub fn compress_charts(dir: &Path, rows: &[CompressRow]) -> Result<Vec<String>, ReportError> {
    let mut written = Vec::new();
    let path = dir.join("compress-ratio-by-size.svg");
    {
        let fail = chart_error(&path);
        let kinds = ["beacon-block-ssz", "newPayload-ssz", "newPayload-json"];
        let ranges: Vec<usize> = {
            let mut r: Vec<usize> = rows
                .iter()
                .filter(|r| kinds.contains(&r.kind.as_str()))
                .map(|r| size_range(r.raw_bytes))
                .collect();
            r.sort();
            r.dedup();
            r
        };
        let labels: Vec<String> = ranges.iter().map(|r| range_label(*r)).collect();
        let max_ratio = rows
            .iter()
            .filter(|r| r.codec == "snappy")
            .map(|r| r.ratio)
            .fold(1.0, f64::max)
            * 1.1;
        let root = SVGBackend::new(&path, (1000, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "snappy compression ratio per size range (box: quartiles, whiskers: min-max)",
                ("sans-serif", 20),
            )
            .margin(16)
            .x_label_area_size(50)
            .y_label_area_size(50)
            .build_cartesian_2d(labels.as_slice().into_segmented(), 0.8f32..max_ratio as f32)
            .map_err(|e| fail(e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("raw size range")
            .y_desc("ratio (raw / compressed)")
            .draw()
            .map_err(|e| fail(e.to_string()))?;
        for (k, kind) in kinds.iter().enumerate() {
            let color = PALETTE[k];
            let mut boxes = Vec::new();
            for (label, range) in labels.iter().zip(&ranges) {
                let values: Vec<f64> = rows
                    .iter()
                    .filter(|r| {
                        r.codec == "snappy" && r.kind == *kind && size_range(r.raw_bytes) == *range
                    })
                    .map(|r| r.ratio)
                    .collect();
                if values.is_empty() {
                    continue;
                }
                let quartiles = Quartiles::new(&values);
                boxes.push(
                    Boxplot::new_vertical(SegmentValue::CenterOf(label), &quartiles)
                        .width(14)
                        .whisker_width(0.5)
                        .style(color)
                        .offset(k as f64 * 18.0 - 18.0),
                );
            }
            chart
                .draw_series(boxes)
                .map_err(|e| fail(e.to_string()))?
                .label(*kind)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled())
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| fail(e.to_string()))?;
        root.present().map_err(|e| fail(e.to_string()))?;
    }
    written.push(path.display().to_string());
    for (file, kind) in [
        ("compress-time-beacon-blocks.svg", "beacon-block-ssz"),
        ("compress-time-newpayload-json.svg", "newPayload-json"),
    ] {
        let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for r in rows.iter().filter(|r| r.kind == kind) {
            series
                .entry(r.codec.to_string())
                .or_default()
                .push((r.raw_bytes as f64 / 1e6, r.compress_us / 1e3));
        }
        if series.is_empty() {
            continue;
        }
        let path = dir.join(file);
        size_time_chart(&path, &format!("compression time vs size: {kind}"), &series)?;
        written.push(path.display().to_string());
    }
    Ok(written)
}
