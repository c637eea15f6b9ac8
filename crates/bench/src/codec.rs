//! The codec study (`sszgate bench codec`): every Engine API message of the current forks, on
//! real mainnet data, through the six operations a transport needs — JSON encode and decode,
//! SSZ encode and decode, JSON → SSZ and SSZ → JSON — with sizes, medians and spread.
//!
//! Messages: the newPayload request of every real payload of the data directory; a
//! forkchoiceUpdated with attributes per fork; getPayload answers in the V3, V4 and V5 shapes
//! (the largest real Electra payload with 0..N real blobs); getBlobsV1/V2 answers; payload
//! bodies of the real blocks. Each message's six operations are interleaved; rounds scale with
//! the message size. Writing tables and charts is [`crate::report`]'s job.

use std::hint::black_box;

use serde::Serialize;
use sszgate_engine::{
    Fork, Message, MessageKind, MethodSpec,
    message::{Blobs, Bodies},
    method::{self, Family},
};
use sszgate_fixtures::{self as fixtures, FixtureError, Fixtures};

use crate::harness::{Summary, Variant, interleave};

/// One measured operation on one message.
#[derive(Clone, Debug, Serialize)]
pub struct CodecRow {
    /// The message, e.g. `getPayloadV5 response`.
    pub message: String,
    /// Where the data comes from, honestly (e.g. `mainnet block 12889937 + 6 real blobs`).
    pub data: String,
    /// Blobs in the message (0 where it has none).
    pub blobs: usize,
    /// The operation: `json-encode`, `json-decode`, `ssz-encode`, `ssz-decode`,
    /// `json-to-ssz`, `ssz-to-json`.
    pub operation: &'static str,
    /// JSON size, bytes.
    pub json_bytes: usize,
    /// SSZ size, bytes.
    pub ssz_bytes: usize,
    /// Median, µs.
    pub median_us: f64,
    /// 10th percentile, µs.
    pub p10_us: f64,
    /// 90th percentile, µs.
    pub p90_us: f64,
    /// Samples taken.
    pub samples: usize,
}

/// What to measure and how long.
#[derive(Clone, Debug)]
pub struct CodecOptions {
    /// Blob counts for the blob-carrying messages.
    pub blobs: Vec<usize>,
    /// Bytes of message to push through each operation per variant (rounds = this / size,
    /// within `min_rounds..=max_rounds`).
    pub budget_bytes: usize,
    /// Fewest rounds per message.
    pub min_rounds: usize,
    /// Most rounds per message.
    pub max_rounds: usize,
}

impl Default for CodecOptions {
    fn default() -> CodecOptions {
        CodecOptions {
            blobs: vec![0, 6, 24, 48, 72],
            budget_bytes: 400 << 20,
            min_rounds: 15,
            max_rounds: 300,
        }
    }
}

/// One message to measure (also built from recorded calls by [`crate::ssz_study`]).
pub(crate) struct Case {
    pub(crate) message: String,
    pub(crate) data: String,
    pub(crate) blobs: usize,
    pub(crate) method: &'static MethodSpec,
    pub(crate) fork: Fork,
    pub(crate) kind: MessageKind,
    pub(crate) value: Message,
}

/// The messages of the study, from the data in `fixtures`.
fn cases(fixtures: &Fixtures, options: &CodecOptions) -> Result<Vec<Case>, FixtureError> {
    let mut cases = Vec::new();
    for block in &fixtures.blocks {
        let fork = block.fork;
        let Some(m) = method::for_fork(Family::NewPayload, fork) else {
            continue;
        };
        let np = block.new_payload()?;
        cases.push(Case {
            message: format!("{} request", short(m)),
            data: format!(
                "mainnet block {} ({fork}, {} txs)",
                block.slot,
                np.transactions().len()
            ),
            blobs: np.versioned_hashes().len(),
            method: m,
            fork,
            kind: MessageKind::NewPayload,
            value: Message::NewPayload(np),
        });
    }
    for fork in [Fork::Cancun, Fork::Prague, Fork::Osaka] {
        let m = method::for_fork(Family::ForkchoiceUpdated, fork).expect("a fcu method");
        cases.push(Case {
            message: format!("{} request with attributes ({fork})", short(m)),
            data: "synthetic state and attributes (fixed-size fields, 16 withdrawals)".into(),
            blobs: 0,
            method: m,
            fork,
            kind: MessageKind::Forkchoice,
            value: Message::Forkchoice(sszgate_engine::message::Forkchoice {
                state: Default::default(),
                attributes: Some(fixtures::synthetic::attributes(fork)),
                custody_columns: None,
            }),
        });
    }
    let items = fixtures.blobs()?;
    let (block, payload) = fixtures.reference_payload()?;
    for &n in &options.blobs {
        if n > 0 && items.is_empty() {
            continue;
        }
        let real = items.len().min(n);
        let data = format!(
            "mainnet block {} ({} txs) + {n} real blobs{}",
            block.slot,
            payload.payload_inner.payload_inner.transactions.len(),
            if n > real {
                format!(" ({real} distinct, cycled)")
            } else {
                String::new()
            }
        );
        for fork in [Fork::Cancun, Fork::Prague, Fork::Osaka] {
            let m = method::for_fork(Family::GetPayload, fork).expect("a getPayload method");
            cases.push(Case {
                message: format!("{} response", short(m)),
                data: data.clone(),
                blobs: n,
                method: m,
                fork,
                kind: MessageKind::BuiltPayload,
                value: Message::BuiltPayload(fixtures::built_payload(fork, &payload, &items, n)?),
            });
        }
        if n == 0 {
            continue;
        }
        let blob_data = format!("{n} real blobs{}", if n > real { " (cycled)" } else { "" });
        let v1 = method::by_name("engine_getBlobsV1").expect("in the table");
        cases.push(Case {
            message: "getBlobsV1 response".into(),
            data: blob_data.clone(),
            blobs: n,
            method: v1,
            fork: Fork::Prague,
            kind: MessageKind::Blobs,
            value: Message::Blobs(Blobs::V1(fixtures::blobs_v1_response(&items, n))),
        });
        let v2 = method::by_name("engine_getBlobsV2").expect("in the table");
        cases.push(Case {
            message: "getBlobsV2 response".into(),
            data: blob_data,
            blobs: n,
            method: v2,
            fork: Fork::Osaka,
            kind: MessageKind::Blobs,
            value: Message::Blobs(Blobs::V2(Some(fixtures::blobs_v2_response(&items, n)))),
        });
    }
    // Bodies of the newest real blocks (up to 32), as getPayloadBodiesByHashV1 answers them.
    let bodies: Vec<_> = fixtures
        .blocks
        .iter()
        .rev()
        .filter(|b| b.fork >= Fork::Shanghai)
        .take(32)
        .map(|b| {
            let np = b.new_payload()?;
            let withdrawals = match &np {
                sszgate_engine::message::NewPayload::Shanghai(p) => Some(p.withdrawals.clone()),
                sszgate_engine::message::NewPayload::Cancun(p, ..)
                | sszgate_engine::message::NewPayload::Prague(p, ..) => {
                    Some(p.payload_inner.withdrawals.clone())
                }
                _ => None,
            };
            Ok(Some(alloy_rpc_types_engine::ExecutionPayloadBodyV1 {
                transactions: np.transactions().to_vec(),
                withdrawals,
            }))
        })
        .collect::<Result<_, FixtureError>>()?;
    if !bodies.is_empty() {
        let m = method::by_name("engine_getPayloadBodiesByHashV1").expect("in the table");
        cases.push(Case {
            message: "getPayloadBodiesByHashV1 response".into(),
            data: format!("bodies of the {} newest real blocks", bodies.len()),
            blobs: 0,
            method: m,
            fork: Fork::Prague,
            kind: MessageKind::Bodies,
            value: Message::Bodies(Bodies::V1(bodies)),
        });
    }
    Ok(cases)
}

fn short(m: &MethodSpec) -> &'static str {
    m.name.trim_start_matches("engine_")
}

fn micros(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Runs the study on the data in `dir`; `progress` is told each message as it starts (with
/// its index and the total).
pub fn run(
    dir: &std::path::Path,
    options: &CodecOptions,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<Vec<CodecRow>, FixtureError> {
    let fixtures = Fixtures::load(dir)?;
    let cases = cases(&fixtures, options)?;
    let mut rows = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        progress(i, cases.len(), &format!("{} ({})", case.message, case.data));
        rows.extend(measure(case, options));
    }
    progress(cases.len(), cases.len(), "done");
    Ok(rows)
}

/// The six operations of `case`, interleaved (its JSON and SSZ forms must decode alike).
pub(crate) fn measure(case: &Case, options: &CodecOptions) -> Vec<CodecRow> {
    let (m, fork, kind) = (case.method, case.fork, case.kind);
    let is_request = kind == m.request;
    let to_json = |msg: &Message| {
        if is_request {
            msg.to_json_params()
        } else {
            msg.to_json()
        }
        .expect("a fixture message encodes")
    };
    let json = to_json(&case.value);
    let ssz = case.value.to_ssz(fork).expect("a fixture message encodes");
    // Both forms decode to the same message: the measured paths are the right ones.
    assert_eq!(
        Message::from_json(m, fork, kind, &json).expect("its own JSON decodes"),
        Message::from_ssz(m, fork, kind, &ssz).expect("its own SSZ decodes"),
        "{}: JSON and SSZ decode to different messages",
        case.message
    );
    let rounds = (options.budget_bytes / json.len().max(1)).clamp(
        options.min_rounds,
        options.max_rounds.max(options.min_rounds),
    );
    let mut variants = vec![
        Variant::new("json-encode", || drop(black_box(to_json(&case.value)))),
        Variant::new("json-decode", || {
            drop(black_box(Message::from_json(m, fork, kind, &json).unwrap()))
        }),
        Variant::new("ssz-encode", || {
            drop(black_box(case.value.to_ssz(fork).unwrap()))
        }),
        Variant::new("ssz-decode", || {
            drop(black_box(Message::from_ssz(m, fork, kind, &ssz).unwrap()))
        }),
        Variant::new("json-to-ssz", || {
            let msg = Message::from_json(m, fork, kind, &json).unwrap();
            drop(black_box(msg.to_ssz(fork).unwrap()))
        }),
        Variant::new("ssz-to-json", || {
            let msg = Message::from_ssz(m, fork, kind, &ssz).unwrap();
            drop(black_box(to_json(&msg)))
        }),
    ];
    let summaries: Vec<Summary> = interleave(&mut variants, 2, rounds);
    const OPERATIONS: [&str; 6] = [
        "json-encode",
        "json-decode",
        "ssz-encode",
        "ssz-decode",
        "json-to-ssz",
        "ssz-to-json",
    ];
    summaries
        .iter()
        .zip(OPERATIONS)
        .map(|(s, operation)| CodecRow {
            message: case.message.clone(),
            data: case.data.clone(),
            blobs: case.blobs,
            operation,
            json_bytes: json.len(),
            ssz_bytes: ssz.len(),
            median_us: micros(s.median()),
            p10_us: micros(s.quantile(0.1)),
            p90_us: micros(s.quantile(0.9)),
            samples: s.samples.len(),
        })
        .collect()
}
