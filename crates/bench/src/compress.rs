//! The compression study (`sszgate bench compress`): snappy (block format, and the framed
//! format Ethereum's p2p layer uses), zstd at levels 1 and 3, and gzip, over real data — the
//! beacon blocks of the data directory as they are (SSZ, what the snappy study measured), the
//! newPayload of each in JSON and in SSZ, and Engine API answers with real blobs.
//!
//! Each item's codecs are interleaved (compress and decompress of every codec, round by
//! round); every decompression is checked to give the input back once. Grouping by size range
//! and writing tables and charts is [`crate::report`]'s job.

use std::{
    hint::black_box,
    io::{Read, Write},
};

use serde::Serialize;
use sszgate_engine::{Fork, Message, message::Blobs};
use sszgate_fixtures::{self as fixtures, FixtureError, Fixtures};

use crate::harness::{Variant, interleave};

/// A compression codec of the study.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Codec {
    /// Snappy block format (`snap::raw`).
    Snappy,
    /// Snappy framed format (`snap::write::FrameEncoder`), as Ethereum's p2p layer frames it.
    SnappyFramed,
    /// zstd level 1.
    Zstd1,
    /// zstd level 3.
    Zstd3,
    /// gzip (deflate level 6).
    Gzip,
}

impl Codec {
    /// Every codec, in report order.
    pub const ALL: [Codec; 5] = [
        Codec::Snappy,
        Codec::SnappyFramed,
        Codec::Zstd1,
        Codec::Zstd3,
        Codec::Gzip,
    ];

    /// The name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Snappy => "snappy",
            Codec::SnappyFramed => "snappy-framed",
            Codec::Zstd1 => "zstd-1",
            Codec::Zstd3 => "zstd-3",
            Codec::Gzip => "gzip",
        }
    }

    /// Compresses `input`.
    pub fn compress(self, input: &[u8]) -> Vec<u8> {
        match self {
            Codec::Snappy => snap::raw::Encoder::new()
                .compress_vec(input)
                .expect("snappy compresses any input"),
            Codec::SnappyFramed => {
                let mut w = snap::write::FrameEncoder::new(Vec::with_capacity(input.len() / 2));
                w.write_all(input).expect("writing to memory");
                w.into_inner().expect("flushing to memory")
            }
            Codec::Zstd1 => zstd::bulk::compress(input, 1).expect("zstd compresses any input"),
            Codec::Zstd3 => zstd::bulk::compress(input, 3).expect("zstd compresses any input"),
            Codec::Gzip => {
                let mut w = flate2::write::GzEncoder::new(
                    Vec::with_capacity(input.len() / 2),
                    flate2::Compression::default(),
                );
                w.write_all(input).expect("writing to memory");
                w.finish().expect("flushing to memory")
            }
        }
    }

    /// Decompresses what [`Codec::compress`] made of an input of `len` bytes.
    pub fn decompress(self, compressed: &[u8], len: usize) -> Vec<u8> {
        match self {
            Codec::Snappy => snap::raw::Decoder::new()
                .decompress_vec(compressed)
                .expect("our own snappy"),
            Codec::SnappyFramed => {
                let mut out = Vec::with_capacity(len);
                snap::read::FrameDecoder::new(compressed)
                    .read_to_end(&mut out)
                    .expect("our own framed snappy");
                out
            }
            Codec::Zstd1 | Codec::Zstd3 => {
                zstd::bulk::decompress(compressed, len).expect("our own zstd")
            }
            Codec::Gzip => {
                let mut out = Vec::with_capacity(len);
                flate2::read::GzDecoder::new(compressed)
                    .read_to_end(&mut out)
                    .expect("our own gzip");
                out
            }
        }
    }
}

/// One item through one codec.
#[derive(Clone, Debug, Serialize)]
pub struct CompressRow {
    /// What the item is: `beacon-block-ssz`, `newPayload-json`, `newPayload-ssz`,
    /// `getPayloadV5-json`, …
    pub kind: String,
    /// Which item (`mainnet block N`, `72 real blobs`).
    pub item: String,
    /// The codec.
    pub codec: &'static str,
    /// Input bytes.
    pub raw_bytes: usize,
    /// Compressed bytes.
    pub compressed_bytes: usize,
    /// raw / compressed.
    pub ratio: f64,
    /// Median compression time, µs.
    pub compress_us: f64,
    /// Median decompression time, µs.
    pub decompress_us: f64,
    /// Compression throughput at the median, MB/s of input.
    pub compress_mb_s: f64,
    /// Decompression throughput at the median, MB/s of output.
    pub decompress_mb_s: f64,
    /// Samples per operation.
    pub samples: usize,
}

/// One input of the study.
pub struct Item {
    /// See [`CompressRow::kind`].
    pub kind: String,
    /// See [`CompressRow::item`].
    pub item: String,
    /// The bytes.
    pub bytes: Vec<u8>,
}

/// The study's inputs from the data in `dir`; `blobs` are the blob counts of the Engine API
/// answers with blobs.
pub fn items(dir: &std::path::Path, blobs: &[usize]) -> Result<Vec<Item>, FixtureError> {
    let fixtures = Fixtures::load(dir)?;
    let mut items = Vec::new();
    for block in &fixtures.blocks {
        let item = format!("mainnet block {} ({})", block.slot, block.fork);
        let bytes = std::fs::read(&block.file).map_err(|source| FixtureError::Io {
            path: block.file.clone(),
            source,
        })?;
        items.push(Item {
            kind: "beacon-block-ssz".into(),
            item: item.clone(),
            bytes,
        });
        let np = Message::NewPayload(block.new_payload()?);
        let fork = match block.fork {
            Fork::Paris | Fork::Shanghai | Fork::Cancun => block.fork,
            _ => Fork::Prague,
        };
        items.push(Item {
            kind: "newPayload-json".into(),
            item: item.clone(),
            bytes: np.to_json_params().expect("a real payload encodes"),
        });
        items.push(Item {
            kind: "newPayload-ssz".into(),
            item,
            bytes: np.to_ssz(fork).expect("a real payload encodes"),
        });
    }
    let real = fixtures.blobs()?;
    if !real.is_empty() {
        let (block, payload) = fixtures.reference_payload()?;
        for &n in blobs.iter().filter(|n| **n > 0) {
            let built =
                Message::BuiltPayload(fixtures::built_payload(Fork::Osaka, &payload, &real, n)?);
            let item = format!("mainnet block {} + {n} real blobs", block.slot);
            items.push(Item {
                kind: "getPayloadV5-json".into(),
                item: item.clone(),
                bytes: built.to_json().expect("encodes"),
            });
            items.push(Item {
                kind: "getPayloadV5-ssz".into(),
                item,
                bytes: built.to_ssz(Fork::Osaka).expect("encodes"),
            });
            let answer = Message::Blobs(Blobs::V2(Some(fixtures::blobs_v2_response(&real, n))));
            let item = format!("{n} real blobs");
            items.push(Item {
                kind: "getBlobsV2-json".into(),
                item: item.clone(),
                bytes: answer.to_json().expect("encodes"),
            });
            items.push(Item {
                kind: "getBlobsV2-ssz".into(),
                item,
                bytes: answer.to_ssz(Fork::Osaka).expect("encodes"),
            });
        }
    }
    Ok(items)
}

/// Measures every codec on every item; rounds per item scale with its size (`budget_bytes`
/// of input per operation, within `min_rounds..=max_rounds`).
pub fn run(
    items: &[Item],
    budget_bytes: usize,
    min_rounds: usize,
    max_rounds: usize,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Vec<CompressRow> {
    let mut rows = Vec::new();
    for (i, item) in items.iter().enumerate() {
        progress(i, items.len(), &format!("{} {}", item.kind, item.item));
        let input = &item.bytes;
        let compressed: Vec<Vec<u8>> = Codec::ALL.iter().map(|c| c.compress(input)).collect();
        for (codec, packed) in Codec::ALL.iter().zip(&compressed) {
            assert!(
                codec.decompress(packed, input.len()) == *input,
                "{} does not give {} {} back",
                codec.name(),
                item.kind,
                item.item
            );
        }
        let rounds =
            (budget_bytes / input.len().max(1)).clamp(min_rounds, max_rounds.max(min_rounds));
        let mut variants = Vec::new();
        for (codec, packed) in Codec::ALL.iter().zip(&compressed) {
            variants.push(Variant::new(
                format!("{} compress", codec.name()),
                move || drop(black_box(codec.compress(input))),
            ));
            variants.push(Variant::new(
                format!("{} decompress", codec.name()),
                move || drop(black_box(codec.decompress(packed, input.len()))),
            ));
        }
        let summaries = interleave(&mut variants, 1, rounds);
        for (j, (codec, packed)) in Codec::ALL.iter().zip(&compressed).enumerate() {
            let (c, d) = (&summaries[2 * j], &summaries[2 * j + 1]);
            let (c_us, d_us) = (
                c.median().as_secs_f64() * 1e6,
                d.median().as_secs_f64() * 1e6,
            );
            rows.push(CompressRow {
                kind: item.kind.clone(),
                item: item.item.clone(),
                codec: codec.name(),
                raw_bytes: input.len(),
                compressed_bytes: packed.len(),
                ratio: input.len() as f64 / packed.len() as f64,
                compress_us: c_us,
                decompress_us: d_us,
                compress_mb_s: input.len() as f64 / c_us.max(1e-3),
                decompress_mb_s: input.len() as f64 / d_us.max(1e-3),
                samples: c.samples.len(),
            });
        }
    }
    progress(items.len(), items.len(), "done");
    rows
}
