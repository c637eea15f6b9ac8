//! Every real mainnet block of `testdata/` (and of the shared data set when present) through
//! the codecs: the payload bytes inside the beacon block are exactly what our SSZ produces, the
//! JSON and SSZ forms convert into each other unchanged, and the block hash recomputed from the
//! payload is the block's own — proof that the fixture and the codecs are both right.

use std::path::{Path, PathBuf};

use ssz::Encode;
use sszgate_bench::fixtures::{self, BeaconBlock, Fixtures, built_payload, versioned_hash};
use sszgate_engine::{
    Fork, Message, MessageKind,
    message::NewPayload,
    method::{self, Family},
};

fn dirs() -> Vec<PathBuf> {
    let mut dirs = vec![fixtures::testdata_dir()];
    let data = fixtures::data_dir();
    if data.canonicalize().ok() != dirs[0].canonicalize().ok() {
        dirs.push(data);
    } else {
        eprintln!(
            "note: only testdata/ checked (set SSZGATE_DATA or provide ../shared/data for the full set)"
        );
    }
    dirs
}

fn block_hash(np: &NewPayload) -> (alloy_primitives::B256, alloy_primitives::B256) {
    let (mut header, expected) = match np {
        NewPayload::Paris(p) => (p.clone().into_block_raw().unwrap().header, p.block_hash),
        NewPayload::Shanghai(p) => (
            p.clone().into_block_raw().unwrap().header,
            p.payload_inner.block_hash,
        ),
        NewPayload::Cancun(p, _, _) | NewPayload::Prague(p, _, _, _) => (
            p.clone().into_block_raw().unwrap().header,
            p.payload_inner.payload_inner.block_hash,
        ),
        NewPayload::Amsterdam(..) => unreachable!("no amsterdam blocks on mainnet"),
    };
    match np {
        NewPayload::Cancun(_, _, root) => header.parent_beacon_block_root = Some(*root),
        NewPayload::Prague(_, _, root, requests) => {
            header.parent_beacon_block_root = Some(*root);
            header.requests_hash = Some(requests.requests_hash());
        }
        _ => {}
    }
    (header.hash_slow(), expected)
}

fn payload_ssz(np: &NewPayload) -> Vec<u8> {
    match np {
        NewPayload::Paris(p) => p.as_ssz_bytes(),
        NewPayload::Shanghai(p) => p.as_ssz_bytes(),
        NewPayload::Cancun(p, ..) | NewPayload::Prague(p, ..) => p.as_ssz_bytes(),
        NewPayload::Amsterdam(p, ..) => p.as_ssz_bytes(),
    }
}

fn check_block(path: &Path) -> Fork {
    let name = path.display().to_string();
    let block = BeaconBlock::read(path).unwrap_or_else(|e| panic!("{e}"));
    let np = block.new_payload().unwrap_or_else(|e| panic!("{e}"));
    // 1. Our SSZ of the payload is the payload inside the beacon block.
    assert_eq!(
        payload_ssz(&np),
        block.payload_ssz,
        "{name}: payload re-encoding"
    );
    // 2. The block hash recomputed from the payload matches.
    let (computed, expected) = block_hash(&np);
    assert_eq!(computed, expected, "{name}: block hash");
    // 3. Versioned hashes from the transactions = kzg_to_versioned_hash(block commitments).
    let derived: Vec<_> = block.blob_commitments.iter().map(versioned_hash).collect();
    assert_eq!(
        np.versioned_hashes(),
        derived.as_slice(),
        "{name}: versioned hashes"
    );
    // 4. JSON -> SSZ -> JSON and SSZ -> JSON -> SSZ, per fork (Prague payloads under Osaka too).
    let forks: &[Fork] = if block.fork == Fork::Prague {
        &[Fork::Prague, Fork::Osaka]
    } else {
        std::slice::from_ref(&block.fork)
    };
    for &fork in forks {
        let m = method::for_fork(Family::NewPayload, fork).unwrap();
        let msg = Message::NewPayload(np.clone());
        let json = msg.to_json().unwrap();
        let ssz = Message::from_json(m, fork, MessageKind::NewPayload, &json)
            .unwrap()
            .to_ssz(fork)
            .unwrap();
        let back = Message::from_ssz(m, fork, MessageKind::NewPayload, &ssz)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(back, msg, "{name} ({fork}): JSON -> SSZ -> typed");
        assert_eq!(
            back.to_json().unwrap(),
            json,
            "{name} ({fork}): JSON -> SSZ -> JSON"
        );
        assert_eq!(
            Message::from_json(m, fork, MessageKind::NewPayload, &back.to_json().unwrap())
                .unwrap()
                .to_ssz(fork)
                .unwrap(),
            ssz,
            "{name} ({fork}): SSZ -> JSON -> SSZ"
        );
        // 5. The envelope's payload field is the payload inside the beacon block.
        let offset = u32::from_le_bytes(ssz[0..4].try_into().unwrap()) as usize;
        let end = if fork >= Fork::Prague {
            u32::from_le_bytes(ssz[36..40].try_into().unwrap()) as usize
        } else {
            ssz.len()
        };
        assert_eq!(
            &ssz[offset..end],
            block.payload_ssz.as_slice(),
            "{name} ({fork}): envelope payload"
        );
    }
    block.fork
}

#[test]
fn every_real_payload_round_trips_and_hashes_to_its_block_hash() {
    for dir in dirs() {
        let mut blocks: Vec<_> = std::fs::read_dir(dir.join("blocks"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        blocks.sort();
        let mut per_fork = std::collections::BTreeMap::new();
        for path in &blocks {
            *per_fork.entry(check_block(path)).or_insert(0) += 1;
        }
        eprintln!(
            "{}: {} real payloads round-tripped: {per_fork:?}",
            dir.display(),
            blocks.len()
        );
        for fork in [Fork::Paris, Fork::Shanghai, Fork::Cancun, Fork::Prague] {
            assert!(
                per_fork.get(&fork).copied().unwrap_or(0) >= 2,
                "{}: fewer than 2 {fork} blocks",
                dir.display()
            );
        }
    }
}

#[test]
fn real_blob_bundles_round_trip_in_every_blob_fork() {
    let fixtures = Fixtures::load(&fixtures::testdata_dir()).unwrap();
    let blobs = fixtures.blobs().unwrap();
    assert!(blobs.len() >= 6, "testdata holds {} blobs", blobs.len());
    let block = fixtures.largest_block(Fork::Prague).unwrap();
    let NewPayload::Prague(payload, ..) = block.new_payload().unwrap() else {
        panic!()
    };
    for (fork, name) in [
        (Fork::Cancun, "engine_getPayloadV3"),
        (Fork::Prague, "engine_getPayloadV4"),
        (Fork::Osaka, "engine_getPayloadV5"),
    ] {
        for n in [0, 1, 6, 9] {
            let msg = Message::BuiltPayload(built_payload(fork, &payload, &blobs, n).unwrap());
            let m = method::by_name(name).unwrap();
            let json = msg.to_json().unwrap();
            let ssz = msg.to_ssz(fork).unwrap();
            assert_eq!(
                Message::from_ssz(m, fork, MessageKind::BuiltPayload, &ssz).unwrap(),
                msg,
                "{name} {n} blobs: SSZ"
            );
            assert_eq!(
                Message::from_json(m, fork, MessageKind::BuiltPayload, &json).unwrap(),
                msg,
                "{name} {n} blobs: JSON"
            );
            // Size check: the bundle's blobs alone are n * 131072 bytes of the SSZ.
            assert!(ssz.len() > n * 131_072, "{name}");
        }
    }
}
