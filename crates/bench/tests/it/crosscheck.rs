//! Cross-check against an independent SSZ implementation: `remerkleable` (Python), driven by
//! `scripts/crosscheck_ssz.py`. For one message of every container family and fork, this test
//! (synthetic, and real mainnet payloads and blobs from testdata/) writes our JSON-RPC form and
//! our SSZ bytes; the script builds the container from the JSON
//! with remerkleable's own types (from the spec text), serializes it and compares bytes, then
//! decodes our bytes and re-serializes them.
//!
//! Needs `python3` with remerkleable (`pip install -r scripts/requirements.txt`). Locally a
//! missing tool skips with a loud message; under `CI=true` it is a failure.

use std::{path::PathBuf, process::Command};

use alloy_eips::eip4844::{Blob, BlobAndProofV1, BlobAndProofV2, Bytes48};
use alloy_primitives::{B256, Bytes, U256};
use alloy_rpc_types_engine::{
    BlobsBundleV1, BlobsBundleV2, ExecutionPayloadEnvelopeV2, ExecutionPayloadEnvelopeV3,
    ExecutionPayloadEnvelopeV4, ExecutionPayloadEnvelopeV5, ExecutionPayloadEnvelopeV6,
    ExecutionPayloadFieldV2, ExecutionPayloadV1, ExecutionPayloadV2, ExecutionPayloadV3,
    ExecutionPayloadV4, ForkchoiceState, ForkchoiceUpdated, PayloadAttributes, PayloadId,
    PayloadStatus, PayloadStatusEnum,
};
use sszgate_engine::{
    Fork, Message,
    message::{Blobs, BlobsRequest, Bodies, BuiltPayload, Forkchoice, NewPayload},
    method,
};

fn payload_v1(seed: u8) -> ExecutionPayloadV1 {
    ExecutionPayloadV1 {
        parent_hash: B256::repeat_byte(seed),
        fee_recipient: [seed.wrapping_add(1); 20].into(),
        state_root: B256::repeat_byte(seed.wrapping_add(2)),
        receipts_root: B256::repeat_byte(seed.wrapping_add(3)),
        logs_bloom: [seed; 256].into(),
        prev_randao: B256::repeat_byte(seed.wrapping_add(4)),
        block_number: 21_000_000 + seed as u64,
        gas_limit: 36_000_000,
        gas_used: 12_345_678,
        timestamp: 1_750_000_000 + seed as u64,
        extra_data: Bytes::from_static(b"sszgate"),
        base_fee_per_gas: U256::from(1_234_567_890u64),
        block_hash: B256::repeat_byte(seed.wrapping_add(5)),
        transactions: vec![
            Bytes::from(vec![0x02, 0xf8, seed, 0x01]),
            Bytes::from(vec![0x01; 40]),
            Bytes::from_static(&[0xc0]),
        ],
    }
}

fn payload_v3(seed: u8) -> ExecutionPayloadV3 {
    let withdrawals = (0..3)
        .map(|i| alloy_eips::eip4895::Withdrawal {
            index: i,
            validator_index: 1000 + i,
            address: [i as u8; 20].into(),
            amount: 32_000_000_000 + i,
        })
        .collect();
    ExecutionPayloadV3 {
        payload_inner: ExecutionPayloadV2 {
            payload_inner: payload_v1(seed),
            withdrawals,
        },
        blob_gas_used: 131_072,
        excess_blob_gas: 65_536,
    }
}

fn payload_v4(seed: u8) -> ExecutionPayloadV4 {
    ExecutionPayloadV4 {
        payload_inner: payload_v3(seed),
        block_access_list: Bytes::from_static(&[0xc1, 0xc0]),
        slot_number: 12_345_678,
    }
}

fn blob(seed: u8) -> Blob {
    let mut b = Blob::ZERO;
    for (i, byte) in b.iter_mut().enumerate() {
        *byte = if i % 32 == 0 {
            0
        } else {
            (i as u8).wrapping_add(seed)
        };
    }
    b
}

fn requests() -> alloy_eips::eip7685::Requests {
    vec![Bytes::from(vec![0x00; 193]), Bytes::from(vec![0x01; 77])].into()
}

fn attributes(fork: Fork) -> PayloadAttributes {
    PayloadAttributes {
        timestamp: 1_750_000_012,
        prev_randao: B256::repeat_byte(7),
        suggested_fee_recipient: [9; 20].into(),
        withdrawals: fork
            .has_withdrawals()
            .then(|| payload_v3(1).payload_inner.withdrawals),
        parent_beacon_block_root: fork.has_blobs().then_some(B256::repeat_byte(8)),
        slot_number: (fork == Fork::Amsterdam).then_some(12_345_679),
        target_gas_limit: (fork == Fork::Amsterdam).then_some(60_000_000),
    }
}

/// (case name, container, fork, method, message)
fn cases() -> Vec<(String, String, Fork, &'static str, Message)> {
    let mut out = Vec::new();
    let mut add = |container: &str, fork: Fork, method: &'static str, msg: Message| {
        out.push((
            format!("{container}-{}", out.len()),
            container.to_string(),
            fork,
            method,
            msg,
        ));
    };
    let root = B256::repeat_byte(0x42);
    add(
        "ExecutionPayloadEnvelopeParis",
        Fork::Paris,
        "engine_newPayloadV1",
        Message::NewPayload(NewPayload::Paris(payload_v1(1))),
    );
    add(
        "ExecutionPayloadEnvelopeShanghai",
        Fork::Shanghai,
        "engine_newPayloadV2",
        Message::NewPayload(NewPayload::Shanghai(payload_v3(2).payload_inner)),
    );
    add(
        "ExecutionPayloadEnvelopeCancun",
        Fork::Cancun,
        "engine_newPayloadV3",
        Message::NewPayload(NewPayload::Cancun(payload_v3(3), vec![], root)),
    );
    add(
        "ExecutionPayloadEnvelopePrague",
        Fork::Prague,
        "engine_newPayloadV4",
        Message::NewPayload(NewPayload::Prague(payload_v3(4), vec![], root, requests())),
    );
    add(
        "ExecutionPayloadEnvelopeOsaka",
        Fork::Osaka,
        "engine_newPayloadV4",
        Message::NewPayload(NewPayload::Prague(payload_v3(5), vec![], root, requests())),
    );
    add(
        "ExecutionPayloadEnvelopeAmsterdam",
        Fork::Amsterdam,
        "engine_newPayloadV5",
        Message::NewPayload(NewPayload::Amsterdam(
            payload_v4(6),
            vec![],
            root,
            requests(),
        )),
    );

    let value = U256::from(123_456_789_000_000_000u64);
    let bundle_v1 = BlobsBundleV1 {
        commitments: vec![Bytes48::repeat_byte(0xc0); 2],
        proofs: vec![Bytes48::repeat_byte(0xb0); 2],
        blobs: vec![blob(1), blob(2)],
    };
    let bundle_v2 = BlobsBundleV2 {
        commitments: vec![Bytes48::repeat_byte(0xc0)],
        proofs: (0..128).map(|i| Bytes48::repeat_byte(i as u8)).collect(),
        blobs: vec![blob(3)],
    };
    add(
        "BuiltPayloadParis",
        Fork::Paris,
        "engine_getPayloadV2",
        Message::BuiltPayload(BuiltPayload::V2(ExecutionPayloadEnvelopeV2 {
            execution_payload: ExecutionPayloadFieldV2::V1(payload_v1(7)),
            block_value: value,
        })),
    );
    add(
        "BuiltPayloadShanghai",
        Fork::Shanghai,
        "engine_getPayloadV2",
        Message::BuiltPayload(BuiltPayload::V2(ExecutionPayloadEnvelopeV2 {
            execution_payload: ExecutionPayloadFieldV2::V2(payload_v3(8).payload_inner),
            block_value: value,
        })),
    );
    let v3 = ExecutionPayloadEnvelopeV3 {
        execution_payload: payload_v3(9),
        block_value: value,
        blobs_bundle: bundle_v1,
        should_override_builder: true,
    };
    add(
        "BuiltPayloadCancun",
        Fork::Cancun,
        "engine_getPayloadV3",
        Message::BuiltPayload(BuiltPayload::V3(v3.clone())),
    );
    add(
        "BuiltPayloadPrague",
        Fork::Prague,
        "engine_getPayloadV4",
        Message::BuiltPayload(BuiltPayload::V4(ExecutionPayloadEnvelopeV4 {
            envelope_inner: v3,
            execution_requests: requests(),
        })),
    );
    add(
        "BuiltPayloadOsaka",
        Fork::Osaka,
        "engine_getPayloadV5",
        Message::BuiltPayload(BuiltPayload::V5(ExecutionPayloadEnvelopeV5 {
            execution_payload: payload_v3(10),
            block_value: value,
            blobs_bundle: bundle_v2.clone(),
            should_override_builder: false,
            execution_requests: requests(),
        })),
    );
    add(
        "BuiltPayloadAmsterdam",
        Fork::Amsterdam,
        "engine_getPayloadV6",
        Message::BuiltPayload(BuiltPayload::V6(ExecutionPayloadEnvelopeV6 {
            execution_payload: payload_v4(11),
            block_value: value,
            blobs_bundle: bundle_v2,
            should_override_builder: true,
            execution_requests: requests(),
        })),
    );

    let state = ForkchoiceState {
        head_block_hash: B256::repeat_byte(1),
        safe_block_hash: B256::repeat_byte(2),
        finalized_block_hash: B256::repeat_byte(3),
    };
    for (fork, m) in [
        (Fork::Paris, "engine_forkchoiceUpdatedV1"),
        (Fork::Shanghai, "engine_forkchoiceUpdatedV2"),
        (Fork::Cancun, "engine_forkchoiceUpdatedV3"),
        (Fork::Prague, "engine_forkchoiceUpdatedV3"),
        (Fork::Osaka, "engine_forkchoiceUpdatedV3"),
        (Fork::Amsterdam, "engine_forkchoiceUpdatedV4"),
    ] {
        let name = format!("ForkchoiceUpdate{}", capitalized(fork));
        add(
            &name,
            fork,
            m,
            Message::Forkchoice(Forkchoice {
                state,
                attributes: Some(attributes(fork)),
                custody_columns: None,
            }),
        );
    }
    add(
        "ForkchoiceUpdateCancun",
        Fork::Cancun,
        "engine_forkchoiceUpdatedV3",
        Message::Forkchoice(Forkchoice {
            state,
            attributes: None,
            custody_columns: None,
        }),
    );

    add(
        "PayloadStatus",
        Fork::Prague,
        "engine_newPayloadV4",
        Message::PayloadStatus(PayloadStatus::new(
            PayloadStatusEnum::Valid,
            Some(B256::repeat_byte(0xab)),
        )),
    );
    add(
        "PayloadStatus",
        Fork::Prague,
        "engine_newPayloadV4",
        Message::PayloadStatus(PayloadStatus::new(
            PayloadStatusEnum::Invalid {
                validation_error: "bad state root".into(),
            },
            None,
        )),
    );
    add(
        "ForkchoiceUpdateResponse",
        Fork::Cancun,
        "engine_forkchoiceUpdatedV3",
        Message::ForkchoiceResponse(ForkchoiceUpdated {
            payload_status: PayloadStatus::new(
                PayloadStatusEnum::Valid,
                Some(B256::repeat_byte(1)),
            ),
            payload_id: Some(PayloadId::new([1, 2, 3, 4, 5, 6, 7, 8])),
        }),
    );
    add(
        "ForkchoiceUpdateResponse",
        Fork::Cancun,
        "engine_forkchoiceUpdatedV3",
        Message::ForkchoiceResponse(ForkchoiceUpdated {
            payload_status: PayloadStatus::new(PayloadStatusEnum::Syncing, None),
            payload_id: None,
        }),
    );

    add(
        "BodiesByHashRequest",
        Fork::Cancun,
        "engine_getPayloadBodiesByHashV1",
        Message::BodiesByHash(vec![B256::repeat_byte(1), B256::repeat_byte(2)]),
    );
    let body = |seed| alloy_rpc_types_engine::ExecutionPayloadBodyV1 {
        transactions: payload_v1(seed).transactions,
        withdrawals: Some(payload_v3(seed).payload_inner.withdrawals),
    };
    add(
        "BodiesResponseShanghai",
        Fork::Cancun,
        "engine_getPayloadBodiesByHashV1",
        Message::Bodies(Bodies::V1(vec![Some(body(1)), None, Some(body(2))])),
    );

    let hashes = vec![B256::repeat_byte(0x01), B256::repeat_byte(0x02)];
    add(
        "BlobsV1Request",
        Fork::Osaka,
        "engine_getBlobsV1",
        Message::BlobsRequest(BlobsRequest {
            versioned_hashes: hashes.clone(),
            indices: None,
        }),
    );
    add(
        "BlobsV4Request",
        Fork::Amsterdam,
        "engine_getBlobsV4",
        Message::BlobsRequest(BlobsRequest {
            versioned_hashes: hashes,
            indices: Some(alloy_primitives::B128::from(
                0x8000_0000_0000_0000_0000_0000_0000_0005u128.to_be_bytes(),
            )),
        }),
    );
    add(
        "BlobsV1Response",
        Fork::Cancun,
        "engine_getBlobsV1",
        Message::Blobs(Blobs::V1(vec![
            Some(BlobAndProofV1 {
                blob: Box::new(blob(4)),
                proof: Bytes48::repeat_byte(5),
            }),
            None,
        ])),
    );
    let v2 = BlobAndProofV2 {
        blob: Box::new(blob(6)),
        proofs: (0..128).map(|i| Bytes48::repeat_byte(i as u8)).collect(),
    };
    add(
        "BlobsV2Response",
        Fork::Osaka,
        "engine_getBlobsV2",
        Message::Blobs(Blobs::V2(Some(vec![v2.clone()]))),
    );
    add(
        "BlobsV3Response",
        Fork::Osaka,
        "engine_getBlobsV3",
        Message::Blobs(Blobs::V3(Some(vec![None, Some(v2)]))),
    );
    out
}

/// Real mainnet payloads (the largest block of each fork in testdata/) and real blobs.
fn real_cases() -> Vec<(String, String, Fork, &'static str, Message)> {
    use sszgate_bench::fixtures::{
        Fixtures, blobs_v1_response, blobs_v2_response, built_payload, testdata_dir,
    };
    let fixtures = Fixtures::load(&testdata_dir()).unwrap();
    let blobs = fixtures.blobs().unwrap();
    let mut out = Vec::new();
    for fork in [Fork::Paris, Fork::Shanghai, Fork::Cancun, Fork::Prague] {
        let block = fixtures.largest_block(fork).unwrap();
        let np = block.new_payload().unwrap();
        let m = method::for_fork(sszgate_engine::method::Family::NewPayload, fork)
            .unwrap()
            .name;
        out.push((
            format!("real-envelope-{fork}-{}", block.slot),
            format!("ExecutionPayloadEnvelope{}", capitalized(fork)),
            fork,
            m,
            Message::NewPayload(np.clone()),
        ));
        if fork == Fork::Prague {
            out.push((
                format!("real-envelope-osaka-{}", block.slot),
                "ExecutionPayloadEnvelopeOsaka".into(),
                Fork::Osaka,
                m,
                Message::NewPayload(np.clone()),
            ));
            let NewPayload::Prague(payload, ..) = np else {
                unreachable!()
            };
            for (fork, name) in [
                (Fork::Cancun, "engine_getPayloadV3"),
                (Fork::Prague, "engine_getPayloadV4"),
                (Fork::Osaka, "engine_getPayloadV5"),
            ] {
                let built = built_payload(fork, &payload, &blobs, 3).unwrap();
                out.push((
                    format!("real-built-{fork}"),
                    format!("BuiltPayload{}", capitalized(fork)),
                    fork,
                    name,
                    Message::BuiltPayload(built),
                ));
            }
        }
    }
    out.push((
        "real-blobs-v1".into(),
        "BlobsV1Response".into(),
        Fork::Cancun,
        "engine_getBlobsV1",
        Message::Blobs(Blobs::V1(blobs_v1_response(&blobs, 2))),
    ));
    out.push((
        "real-blobs-v2".into(),
        "BlobsV2Response".into(),
        Fork::Osaka,
        "engine_getBlobsV2",
        Message::Blobs(Blobs::V2(Some(blobs_v2_response(&blobs, 2)))),
    ));
    out
}

fn capitalized(fork: Fork) -> String {
    let name = fork.name();
    name[..1].to_uppercase() + &name[1..]
}

#[test]
fn remerkleable_agrees_on_every_container_family_and_fork() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("crosscheck");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut cases = cases();
    cases.extend(real_cases());
    for (name, container, fork, method_name, msg) in &cases {
        let m = method::by_name(method_name).unwrap();
        let kind = msg.kind();
        let json = if kind == m.request {
            msg.to_json_params().unwrap()
        } else {
            msg.to_json().unwrap()
        };
        // Our own codec must read back what it wrote before anyone else looks at it.
        let ssz = msg.to_ssz(*fork).unwrap();
        assert_eq!(
            &Message::from_ssz(m, *fork, kind, &ssz).unwrap(),
            msg,
            "{name}"
        );
        let case = serde_json::json!({
            "container": container,
            "fork": fork.name(),
            "method": method_name,
            "json": serde_json::from_slice::<serde_json::Value>(&json).unwrap(),
        });
        std::fs::write(
            dir.join(format!("{name}.json")),
            serde_json::to_vec(&case).unwrap(),
        )
        .unwrap();
        std::fs::write(dir.join(format!("{name}.ssz")), ssz).unwrap();
    }
    run_script(&dir, cases.len());
}

/// Runs the cross-check script over `dir` and checks it passed all `expected` cases.
pub(crate) fn run_script(dir: &std::path::Path, expected: usize) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/crosscheck_ssz.py");
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    let ready = Command::new("python3")
        .args(["-c", "import remerkleable"])
        .status()
        .is_ok_and(|s| s.success());
    if !ready || !script.exists() {
        let why = if script.exists() {
            "python3 with remerkleable is not installed (pip install -r scripts/requirements.txt)"
        } else {
            "scripts/crosscheck_ssz.py is missing"
        };
        assert!(
            !in_ci,
            "remerkleable cross-check cannot run under CI: {why}"
        );
        eprintln!("\n!!!!!!!! SKIPPED: remerkleable cross-check: {why} !!!!!!!!\n");
        return;
    }
    let out = Command::new("python3")
        .arg(&script)
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "cross-check failed:\n{stdout}\n{stderr}"
    );
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("crosscheck:"))
        .unwrap_or_default();
    assert_eq!(
        summary,
        format!("crosscheck: {expected} passed, 0 failed"),
        "{stdout}"
    );
}
