//! The measurement plumbing of the codec and compression studies on tiny inputs (the
//! repository's testdata, one or two rounds): what is measured, the sizes reported, the
//! tables, the CSV and the charts. Timings are not checked; benchmarks report them.

use sszgate_bench::{
    codec::{self, CodecOptions},
    compress::{self, Codec, Item},
    report,
};
use sszgate_engine::{Fork, Message};
use sszgate_fixtures::{self as fixtures, Fixtures};

fn tiny_codec() -> CodecOptions {
    CodecOptions {
        blobs: vec![0, 1],
        budget_bytes: 1,
        min_rounds: 1,
        max_rounds: 1,
    }
}

#[test]
fn codec_study_measures_six_operations_per_message_with_true_sizes() {
    let dir = fixtures::testdata_dir();
    let mut seen = Vec::new();
    let rows = std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            codec::run(&dir, &tiny_codec(), &mut |i, n, _| seen.push((i, n))).map(|r| (r, seen))
        })
        .unwrap()
        .join()
        .unwrap();
    let (rows, seen) = rows.unwrap();
    let fixtures = Fixtures::load(&fixtures::testdata_dir()).unwrap();
    // 14 newPayloads, 3 forkchoiceUpdated, 3 getPayload shapes × 2 blob counts, getBlobsV1/V2
    // at 1 blob, 1 bodies answer.
    let messages = fixtures.blocks.len() + 3 + 6 + 2 + 1;
    assert_eq!(rows.len(), messages * 6);
    assert_eq!(
        seen.last(),
        Some(&(messages, messages)),
        "progress ends at the total"
    );
    for chunk in rows.chunks(6) {
        let ops: Vec<&str> = chunk.iter().map(|r| r.operation).collect();
        assert_eq!(
            ops,
            [
                "json-encode",
                "json-decode",
                "ssz-encode",
                "ssz-decode",
                "json-to-ssz",
                "ssz-to-json"
            ]
        );
        assert!(chunk.iter().all(|r| r.samples == 1 && r.median_us > 0.0));
    }
    // The sizes are those of the messages themselves.
    let items = fixtures.blobs().unwrap();
    let (_, payload) = fixtures.reference_payload().unwrap();
    let v5 =
        Message::BuiltPayload(fixtures::built_payload(Fork::Osaka, &payload, &items, 1).unwrap());
    let row = rows
        .iter()
        .find(|r| r.message == "getPayloadV5 response" && r.blobs == 1)
        .unwrap();
    assert_eq!(row.json_bytes, v5.to_json().unwrap().len());
    assert_eq!(row.ssz_bytes, v5.to_ssz(Fork::Osaka).unwrap().len());
    assert!(row.data.contains("1 real blobs"), "{}", row.data);

    let out = tempfile::tempdir().unwrap();
    let markdown = report::codec_markdown(&rows);
    assert!(
        markdown.contains("| getBlobsV2 response | 1 real blobs |"),
        "{markdown}"
    );
    assert!(markdown.contains("newPayload requests of 14 real mainnet payloads"));
    let csv = out.path().join("codec.csv");
    report::write_csv(&csv, &rows).unwrap();
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(text.lines().count(), rows.len() + 1);
    assert!(text.starts_with("message,data,blobs,operation,json_bytes,ssz_bytes,"));
    let charts = report::codec_charts(out.path(), &rows).unwrap();
    assert_eq!(charts.len(), 2);
    for chart in charts {
        let svg = std::fs::read_to_string(&chart).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("SSZ decode"),
            "{chart}"
        );
    }
}

#[test]
fn compress_study_reports_true_ratios_and_lists_the_incompressible() {
    let mut items = compress::items(&fixtures::testdata_dir(), &[1]).unwrap();
    let blocks = Fixtures::load(&fixtures::testdata_dir())
        .unwrap()
        .blocks
        .len();
    assert_eq!(items.len(), blocks * 3 + 4);
    // Bytes with no redundancy (xorshift): snappy cannot shrink them.
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let noise: Vec<u8> = (0..300_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    items.push(Item {
        kind: "noise".into(),
        item: "300 KB of xorshift".into(),
        bytes: noise,
    });
    let rows = compress::run(&items, 1, 1, 1, &mut |_, _, _| {});
    assert_eq!(rows.len(), items.len() * Codec::ALL.len());
    for row in &rows {
        let item = items
            .iter()
            .find(|i| i.kind == row.kind && i.item == row.item)
            .unwrap();
        assert_eq!(row.raw_bytes, item.bytes.len());
        assert!((row.ratio - row.raw_bytes as f64 / row.compressed_bytes as f64).abs() < 1e-9);
    }
    let snappy_noise = rows
        .iter()
        .find(|r| r.kind == "noise" && r.codec == "snappy")
        .unwrap();
    assert_eq!(
        snappy_noise.compressed_bytes,
        Codec::Snappy.compress(&items.last().unwrap().bytes).len()
    );
    assert!(snappy_noise.ratio < 1.01);
    let markdown = report::compress_markdown(&rows);
    assert!(
        markdown.contains("### Incompressible with snappy (ratio < 1.1): 1 items"),
        "{markdown}"
    );
    assert!(markdown.contains("| noise | 300 KB of xorshift | 300000 |"));
    assert!(markdown.contains("| beacon-block-ssz | 0000-0250 KB |"));
    let out = tempfile::tempdir().unwrap();
    let charts = report::compress_charts(out.path(), &rows).unwrap();
    assert_eq!(charts.len(), 3);
    assert!(
        std::fs::read_to_string(&charts[0])
            .unwrap()
            .contains("newPayload-json")
    );
}

#[test]
fn size_ranges_are_the_studys() {
    assert_eq!(report::size_range(1), 0);
    assert_eq!(report::size_range(250_000), 0);
    assert_eq!(report::size_range(250_001), 1);
    assert_eq!(report::size_range(2_400_000), 9);
    assert_eq!(report::size_range(9_000_000), 9);
    assert_eq!(report::range_label(0), "0000-0250 KB");
    assert_eq!(report::range_label(1), "0251-0500 KB");
    assert_eq!(report::range_label(9), "2251+ KB");
}
