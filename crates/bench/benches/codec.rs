//! The codec benchmark: a getPayloadV5 response with real blobs (derived from the largest real
//! Electra payload in the data directory and the real blobs of its blob transactions) through
//! sszgate's codecs and through the plain alloy routes (serde_json, `ssz` derive), interleaved.
//!
//! `cargo bench -p sszgate-bench --bench codec [-- --blobs 0,6,24,72 --rounds 200]`
//! Data: `$SSZGATE_DATA`, else ../shared/data/mainnet, else testdata/. Prints a Markdown
//! report (machine, sizes, median / p10 / p90 per operation).

use std::hint::black_box;

use alloy_rpc_types_engine::{ExecutionPayloadEnvelopeV5, ssz_engine_types as wire};
use ssz::{Decode, Encode};
use sszgate_bench::harness::{Variant, flag, interleave, machine, markdown_table};
use sszgate_engine::{
    Fork, Message, MessageKind, Resource,
    blob_answer::{Answer, BlobMode},
    message::BuiltPayload,
    method,
};
use sszgate_fixtures::{self as fixtures, Fixtures, built_payload};

// The allocator of the sszgate binary too: large buffers are reused instead of being mapped
// and faulted in on every call (measured: SSZ encode of a 72-blob bundle 7.4 ms -> 0.8 ms).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let blob_counts: Vec<usize> = flag("--blobs")
        .unwrap_or_else(|| "0,6,24,72".into())
        .split(',')
        .map(|n| n.trim().parse().expect("--blobs takes numbers"))
        .collect();
    let rounds: usize =
        flag("--rounds").map_or(150, |r| r.parse().expect("--rounds takes a number"));
    let dir = fixtures::data_dir();
    let fixtures = Fixtures::load(&dir).expect("fixtures load");
    let blobs = fixtures.blobs().expect("blobs load");
    let (block, payload) = fixtures.reference_payload().expect("a reference payload");
    let m = method::by_name("engine_getPayloadV5").unwrap();

    println!("## Codec: getPayloadV5 response, JSON-RPC vs REST-SSZ\n");
    println!("Machine: {}", machine());
    println!(
        "Data: derived from mainnet block {} (Electra, {} txs) + {} real blobs from {} blob transactions in {} (cycled beyond {}); mimalloc; {rounds} interleaved rounds after 3 warm-up runs.\n",
        block.slot,
        payload.payload_inner.payload_inner.transactions.len(),
        blobs.len(),
        fixtures.blob_txs.len(),
        dir.display(),
        blobs.len()
    );

    // newPayload with the largest real mainnet payload of the data set, both ways.
    let largest = fixtures
        .blocks
        .iter()
        .filter(|b| b.fork >= Fork::Cancun)
        .max_by_key(|b| b.payload_ssz.len())
        .expect("a cancun+ block");
    let (np_fork, np) = (
        if largest.fork == Fork::Cancun {
            Fork::Cancun
        } else {
            Fork::Prague
        },
        largest.new_payload().expect("payload"),
    );
    let np_method =
        sszgate_engine::method::for_fork(sszgate_engine::method::Family::NewPayload, np_fork)
            .unwrap();
    let np_msg = Message::NewPayload(np);
    let np_json = np_msg.to_json().unwrap();
    let np_ssz = np_msg.to_ssz(np_fork).unwrap();
    println!(
        "### newPayload of mainnet block {} ({}, {} txs): JSON params {} bytes, SSZ envelope {} bytes\n",
        largest.slot,
        np_fork,
        np_msg_tx_count(&np_msg),
        np_json.len(),
        np_ssz.len()
    );
    // The floor under any JSON decode: the transactions' hex digits decoded, against the
    // floor under an SSZ decode: the same bytes copied (each into a list of its own, as the
    // decoders do).
    let txs: Vec<Vec<u8>> = np_msg_txs(&np_msg);
    let txs_hex: Vec<String> = txs.iter().map(const_hex::encode).collect();
    let mut variants = vec![
        Variant::new("newPayload JSON decode", || {
            drop(black_box(
                Message::from_json(np_method, np_fork, MessageKind::NewPayload, &np_json).unwrap(),
            ))
        }),
        Variant::new("newPayload SSZ decode", || {
            drop(black_box(
                Message::from_ssz(np_method, np_fork, MessageKind::NewPayload, &np_ssz).unwrap(),
            ))
        }),
        Variant::new("floor of JSON decode: hex-decode the transactions", || {
            drop(black_box(
                txs_hex
                    .iter()
                    .map(|h| const_hex::decode(h).unwrap())
                    .collect::<Vec<_>>(),
            ))
        }),
        Variant::new("floor of SSZ decode: copy the transactions", || {
            drop(black_box(
                txs.iter().map(|t| t.to_vec()).collect::<Vec<_>>(),
            ))
        }),
        Variant::new("newPayload JSON -> SSZ (translate)", || {
            drop(black_box(
                Message::from_json(np_method, np_fork, MessageKind::NewPayload, &np_json)
                    .unwrap()
                    .to_ssz(np_fork)
                    .unwrap(),
            ))
        }),
        Variant::new("newPayload SSZ -> JSON (translate, hashes derived)", || {
            drop(black_box(
                Message::from_ssz(np_method, np_fork, MessageKind::NewPayload, &np_ssz)
                    .unwrap()
                    .to_json()
                    .unwrap(),
            ))
        }),
    ];
    println!(
        "{}",
        markdown_table(&interleave(&mut variants, 3, rounds * 4))
    );

    for n in blob_counts {
        let BuiltPayload::V5(env) = built_payload(Fork::Osaka, &payload, &blobs, n).unwrap() else {
            unreachable!()
        };
        let msg = Message::BuiltPayload(BuiltPayload::V5(env.clone()));
        let json = msg.to_json().unwrap();
        let ssz = msg.to_ssz(Fork::Osaka).unwrap();
        let wire_value = wire::BuiltPayloadOsaka::from(env.clone());
        // The whole JSON-RPC answer and request, as the recorder sees them.
        let request = br#"{"jsonrpc":"2.0","id":1,"method":"engine_getPayloadV5","params":["0x0000000000000001"]}"#.to_vec();
        let mut rpc_answer = br#"{"jsonrpc":"2.0","id":1,"result":"#.to_vec();
        rpc_answer.extend_from_slice(&json);
        rpc_answer.push(b'}');
        // The answer as the recorder holds it: the frames it arrived in, and a buffer kept
        // across answers.
        let frames: Vec<&[u8]> = rpc_answer.chunks(64 << 10).collect();
        let mut scratch = Vec::new();
        let facts = sszgate_record::meta::json_call(&request, &rpc_answer);
        assert_eq!(
            facts.blob_count,
            Some(n as u64),
            "the scanner counts the blobs"
        );
        assert_eq!(
            json,
            serde_json::to_vec(&env).unwrap(),
            "fast JSON = serde JSON"
        );
        assert_eq!(ssz, wire_value.as_ssz_bytes(), "one-pass SSZ = derived SSZ");
        println!(
            "### {n} blobs: JSON {} bytes, SSZ {} bytes ({:.2}x)\n",
            json.len(),
            ssz.len(),
            json.len() as f64 / ssz.len() as f64
        );
        let mut variants = vec![
            Variant::new("sszgate JSON encode", || {
                drop(black_box(msg.to_json().unwrap()))
            }),
            Variant::new("sszgate JSON decode", || {
                drop(black_box(
                    Message::from_json(m, Fork::Osaka, MessageKind::BuiltPayload, &json).unwrap(),
                ))
            }),
            Variant::new("sszgate SSZ encode", || {
                drop(black_box(msg.to_ssz(Fork::Osaka).unwrap()))
            }),
            Variant::new("sszgate SSZ decode", || {
                drop(black_box(
                    Message::from_ssz(m, Fork::Osaka, MessageKind::BuiltPayload, &ssz).unwrap(),
                ))
            }),
            Variant::new("sszgate JSON -> SSZ (translate)", || {
                drop(black_box(
                    Message::from_json(m, Fork::Osaka, MessageKind::BuiltPayload, &json)
                        .unwrap()
                        .to_ssz(Fork::Osaka)
                        .unwrap(),
                ))
            }),
            Variant::new("sszgate SSZ -> JSON (translate)", || {
                drop(black_box(
                    Message::from_ssz(m, Fork::Osaka, MessageKind::BuiltPayload, &ssz)
                        .unwrap()
                        .to_json()
                        .unwrap(),
                ))
            }),
            Variant::new("alloy + serde_json JSON encode", || {
                drop(black_box(serde_json::to_vec(&env).unwrap()))
            }),
            Variant::new("alloy + serde_json JSON decode", || {
                drop(black_box(
                    serde_json::from_slice::<ExecutionPayloadEnvelopeV5>(&json).unwrap(),
                ))
            }),
            Variant::new("alloy SSZ encode (derive)", || {
                drop(black_box(wire_value.as_ssz_bytes()))
            }),
            Variant::new("record: facts of the JSON answer (scan)", || {
                drop(black_box(sszgate_record::meta::json_call(
                    &request,
                    &rpc_answer,
                )))
            }),
            Variant::new(
                "record: JSON answer read without its blobs (check, KZG sampled out)",
                || {
                    let read = Answer::whole(&rpc_answer).read_without_blobs(m);
                    drop(black_box(read.expect("a blob answer").expect("read")))
                },
            ),
            Variant::new(
                "record: 64 KiB frames joined without blob digits, read without blobs",
                || {
                    let answer = Answer::join(&frames, Some(m), BlobMode::Validate, &mut scratch);
                    assert!(!answer.has_blob_digits() || n == 0);
                    let read = answer.read_without_blobs(m);
                    drop(black_box(read.expect("a blob answer").expect("read")))
                },
            ),
            Variant::new("record: facts of the SSZ answer (schema walk)", || {
                drop(black_box(sszgate_record::meta::rest_call(
                    Resource::GetPayload,
                    Some(Fork::Osaka),
                    Some([0; 8]),
                    &[],
                    200,
                    &ssz,
                )))
            }),
            Variant::new("alloy SSZ decode (derive)", || {
                drop(black_box(
                    wire::BuiltPayloadOsaka::from_ssz_bytes(&ssz).unwrap(),
                ))
            }),
        ];
        let summaries = interleave(&mut variants, 3, if n >= 24 { rounds } else { rounds * 4 });
        println!("{}", markdown_table(&summaries));
    }
}

fn np_msg_tx_count(msg: &Message) -> usize {
    match msg {
        Message::NewPayload(np) => np.transactions().len(),
        _ => 0,
    }
}

fn np_msg_txs(msg: &Message) -> Vec<Vec<u8>> {
    match msg {
        Message::NewPayload(np) => np.transactions().iter().map(|t| t.to_vec()).collect(),
        _ => Vec::new(),
    }
}
