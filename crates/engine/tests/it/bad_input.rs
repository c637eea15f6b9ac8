//! A table of bad inputs: each gives a typed error that says what is wrong and where.

use sszgate_engine::{Error, Fork, Message, MessageKind, Problem, method, ssz::SszProblem};

fn ssz_err(name: &str, fork: Fork, kind: MessageKind, bytes: &[u8]) -> Error {
    let m = method::by_name(name).unwrap();
    Message::from_ssz(m, fork, kind, bytes).expect_err("bad input must be refused")
}

fn json_err(name: &str, fork: Fork, kind: MessageKind, json: &str) -> Error {
    let m = method::by_name(name).unwrap();
    Message::from_json(m, fork, kind, json.as_bytes()).expect_err("bad input must be refused")
}

/// A valid Cancun forkchoice update with attributes, to be broken in many ways.
fn fcu_cancun() -> Vec<u8> {
    let json = format!(
        r#"[{{"headBlockHash":"0x{h}","safeBlockHash":"0x{h}","finalizedBlockHash":"0x{h}"}},
        {{"timestamp":"0x10","prevRandao":"0x{h}","suggestedFeeRecipient":"0x{a}","withdrawals":[],"parentBeaconBlockRoot":"0x{h}"}}]"#,
        h = "11".repeat(32),
        a = "22".repeat(20)
    );
    let m = method::by_name("engine_forkchoiceUpdatedV3").unwrap();
    Message::from_json(m, Fork::Cancun, MessageKind::Forkchoice, json.as_bytes())
        .unwrap()
        .to_ssz(Fork::Cancun)
        .unwrap()
}

#[test]
fn ssz_faults_name_container_field_and_offset() {
    let good = fcu_cancun();
    // 96 bytes of state, the offset (100) of the attributes Optional, the Optional's own
    // offset (4, as PayloadAttributes is variable-size), then the attributes (fixed part 96).
    assert_eq!(good.len(), 100 + 4 + 96);
    struct Case {
        what: &'static str,
        bytes: Vec<u8>,
        path: &'static str,
        offset: usize,
        problem: SszProblem,
    }
    let with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        b
    };
    let cases = [
        Case {
            what: "truncated",
            bytes: good[..50].to_vec(),
            path: ".",
            offset: 0,
            problem: SszProblem::Truncated {
                needed: 100,
                got: 50,
            },
        },
        Case {
            what: "first offset wrong",
            bytes: with(&|b| b[96] = 101),
            path: "payload_attributes",
            offset: 96,
            problem: SszProblem::FirstOffset {
                expected: 100,
                got: 101,
            },
        },
        Case {
            what: "offset out of range",
            bytes: with(&|b| b[96..100].copy_from_slice(&100_000u32.to_le_bytes())),
            path: "payload_attributes",
            offset: 96,
            problem: SszProblem::FirstOffset {
                expected: 100,
                got: 100_000,
            },
        },
        Case {
            what: "attributes cut short",
            bytes: good[..150].to_vec(),
            path: "payload_attributes[0]",
            offset: 104,
            problem: SszProblem::Truncated {
                needed: 96,
                got: 46,
            },
        },
        Case {
            what: "withdrawals not whole",
            bytes: with(&|b| b.extend_from_slice(&[0; 5])),
            path: "payload_attributes[0].withdrawals",
            offset: 200,
            problem: SszProblem::NotMultiple {
                len: 5,
                element: 44,
            },
        },
        Case {
            what: "withdrawals over the limit of 16",
            bytes: with(&|b| b.extend_from_slice(&[0; 44 * 17])),
            path: "payload_attributes[0].withdrawals",
            offset: 200,
            problem: SszProblem::OverLimit { len: 17, max: 16 },
        },
        Case {
            what: "inner offset past the end",
            bytes: with(&|b| b[104 + 60..104 + 64].copy_from_slice(&999u32.to_le_bytes())),
            path: "payload_attributes[0].withdrawals",
            offset: 164,
            problem: SszProblem::FirstOffset {
                expected: 96,
                got: 999,
            },
        },
    ];
    for case in cases {
        let err = ssz_err(
            "engine_forkchoiceUpdatedV3",
            Fork::Cancun,
            MessageKind::Forkchoice,
            &case.bytes,
        );
        let Error::Ssz(e) = &err else {
            panic!("{}: {err}", case.what)
        };
        assert_eq!(e.container, "ForkchoiceUpdateCancun", "{}", case.what);
        assert_eq!(
            (e.path.as_str(), e.offset, &e.problem),
            (case.path, case.offset, &case.problem),
            "{}",
            case.what
        );
        assert_eq!(err.problem(), Problem::SszDecodeError);
        assert!(err.to_string().contains(case.path), "{}: {err}", case.what);
    }
}

#[test]
fn decreasing_offsets_and_big_lists_are_refused_before_allocating() {
    // A bodies-by-hash request claiming 2^30 hashes: 4 bytes of offset and a short body.
    let mut bytes = 4u32.to_le_bytes().to_vec();
    bytes.extend_from_slice(&[0u8; 32 * 33]);
    let err = ssz_err(
        "engine_getPayloadBodiesByHashV1",
        Fork::Cancun,
        MessageKind::BodiesByHashRequest,
        &bytes,
    );
    assert!(
        err.to_string()
            .contains("block_hashes at byte 4: length 33 is over the limit 32"),
        "{err}"
    );

    // Transactions list whose second offset goes backwards.
    let mut txs = Vec::new();
    txs.extend_from_slice(&12u32.to_le_bytes());
    txs.extend_from_slice(&8u32.to_le_bytes());
    txs.extend_from_slice(&20u32.to_le_bytes());
    txs.extend_from_slice(&[1; 8]);
    let entry_fixed = 1 + 4;
    let mut entry = vec![1u8];
    entry.extend_from_slice(&(entry_fixed as u32).to_le_bytes());
    entry.extend_from_slice(&4u32.to_le_bytes()); // ExecutionPayloadBodyParis: offset of transactions
    entry.extend_from_slice(&txs);
    let mut response = 4u32.to_le_bytes().to_vec();
    response.extend_from_slice(&4u32.to_le_bytes());
    response.extend_from_slice(&entry);
    let err = ssz_err(
        "engine_getPayloadBodiesByHashV1",
        Fork::Paris,
        MessageKind::Bodies,
        &response,
    );
    let Error::Ssz(e) = &err else { panic!("{err}") };
    assert_eq!(e.path, "entries[0].body.transactions[0]");
    assert_eq!(
        e.problem,
        SszProblem::OffsetDecreasing {
            previous: 12,
            got: 8
        }
    );
}

#[test]
fn wrong_fixed_sizes_and_bad_bools() {
    // A payload id of 7 bytes.
    let err = ssz_err(
        "engine_getPayloadV3",
        Fork::Cancun,
        MessageKind::PayloadId,
        &[0; 7],
    );
    assert!(err.to_string().contains("must be 8 bytes, got 7"), "{err}");
    // A forkchoice response whose payload_id Optional holds 7 bytes.
    let mut fr = vec![8, 0, 0, 0, 17, 0, 0, 0];
    fr.extend_from_slice(&[0, 9, 0, 0, 0, 9, 0, 0, 0]);
    fr.extend_from_slice(&[0; 7]);
    let err = ssz_err(
        "engine_forkchoiceUpdatedV3",
        Fork::Cancun,
        MessageKind::ForkchoiceResponse,
        &fr,
    );
    let Error::Ssz(e) = &err else { panic!("{err}") };
    assert_eq!((e.path.as_str(), e.offset), ("payload_id", 17));
    assert_eq!(e.problem, SszProblem::NotMultiple { len: 7, element: 8 });
    // A blobs/v1 entry with available = 2.
    let mut entry = vec![2u8];
    entry.extend_from_slice(&[0; 131_072 + 48]);
    let mut body = 4u32.to_le_bytes().to_vec();
    body.extend_from_slice(&entry);
    let err = ssz_err("engine_getBlobsV1", Fork::Cancun, MessageKind::Blobs, &body);
    let Error::Ssz(e) = &err else { panic!("{err}") };
    assert_eq!(
        (e.path.as_str(), e.offset, &e.problem),
        ("entries[0].available", 4, &SszProblem::InvalidBool(2))
    );
}

#[test]
fn hex_faults_name_the_json_path() {
    let state = |h: &str| {
        format!(
            r#"[{{"headBlockHash":"{h}","safeBlockHash":"0x{z}","finalizedBlockHash":"0x{z}"}}, null]"#,
            z = "00".repeat(32)
        )
    };
    let cases = [
        (state(&"11".repeat(32)), "headBlockHash", "0x prefix"),
        (
            state(&format!("0x{}1", "11".repeat(31))),
            "[0].headBlockHash",
            "odd",
        ),
        (
            state(&format!("0x{}", "11".repeat(31))),
            "[0].headBlockHash",
            "length",
        ),
        (
            state(&format!("0x{}zz", "11".repeat(31))),
            "[0].headBlockHash",
            "invalid",
        ),
    ];
    for (json, path, needle) in cases {
        let err = json_err(
            "engine_forkchoiceUpdatedV3",
            Fork::Cancun,
            MessageKind::Forkchoice,
            &json,
        );
        let Error::Json {
            path: p,
            detail,
            what,
        } = &err
        else {
            panic!("{err}")
        };
        assert_eq!(what, "engine_forkchoiceUpdatedV3 params");
        assert!(p.ends_with(path), "{path}: {err}");
        assert!(detail.to_lowercase().contains(needle), "{needle}: {err}");
        assert_eq!(err.problem(), Problem::InvalidBody);
    }
}

#[test]
fn fork_without_the_method_is_unsupported_fork() {
    let err = json_err(
        "engine_getPayloadV4",
        Fork::Osaka,
        MessageKind::BuiltPayload,
        "{}",
    );
    assert_eq!(
        err.to_string(),
        "engine_getPayloadV4 does not serve fork osaka (it serves prague)"
    );
    assert_eq!(err.problem(), Problem::UnsupportedFork);
    let err = ssz_err(
        "engine_newPayloadV3",
        Fork::Amsterdam,
        MessageKind::NewPayload,
        &[],
    );
    assert_eq!(err.problem(), Problem::UnsupportedFork);
}

#[test]
fn attributes_of_the_wrong_fork_are_refused_with_the_field() {
    let json = format!(
        r#"[{{"headBlockHash":"0x{h}","safeBlockHash":"0x{h}","finalizedBlockHash":"0x{h}"}},
        {{"timestamp":"0x10","prevRandao":"0x{h}","suggestedFeeRecipient":"0x{a}","withdrawals":[]}}]"#,
        h = "11".repeat(32),
        a = "22".repeat(20)
    );
    let m = method::by_name("engine_forkchoiceUpdatedV3").unwrap();
    let msg =
        Message::from_json(m, Fork::Cancun, MessageKind::Forkchoice, json.as_bytes()).unwrap();
    let err = msg.to_ssz(Fork::Cancun).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid cancun payload attributes: missing required payload attributes field: parent_beacon_block_root"
    );
}

#[test]
fn blob_bundle_lengths_must_agree() {
    use alloy_rpc_types_engine::{BlobsBundleV2, ExecutionPayloadV3, ssz_engine_types as wire};
    use ssz::Encode;
    // JSON: alloy's serde already refuses a V2 bundle without 128 proofs per blob.
    let m = method::by_name("engine_getPayloadV5").unwrap();
    let payload = format!(
        r#"{{"parentHash":"0x{h}","feeRecipient":"0x{a}","stateRoot":"0x{h}","receiptsRoot":"0x{h}","logsBloom":"0x{bloom}","prevRandao":"0x{h}","blockNumber":"0x1","gasLimit":"0x1","gasUsed":"0x0","timestamp":"0x1","extraData":"0x","baseFeePerGas":"0x1","blockHash":"0x{h}","transactions":[],"withdrawals":[],"blobGasUsed":"0x0","excessBlobGas":"0x0"}}"#,
        h = "00".repeat(32),
        a = "00".repeat(20),
        bloom = "00".repeat(256),
    );
    let json = format!(
        r#"{{"executionPayload":{payload},
        "blockValue":"0x0","blobsBundle":{{"commitments":["0x{c}"],"proofs":["0x{c}"],"blobs":["0x{blob}"]}},"shouldOverrideBuilder":false,"executionRequests":[]}}"#,
        c = "00".repeat(48),
        blob = "00".repeat(131_072)
    );
    let err =
        Message::from_json(m, Fork::Osaka, MessageKind::BuiltPayload, json.as_bytes()).unwrap_err();
    assert!(
        matches!(&err, Error::Json { path, .. } if path == "blobsBundle"),
        "{err}"
    );
    // SSZ: the layout is fine, the lengths are not; checked after the walk, before any use.
    let built = wire::BuiltPayloadOsaka {
        payload: serde_json::from_str::<ExecutionPayloadV3>(&payload).unwrap(),
        block_value: Default::default(),
        blobs_bundle: BlobsBundleV2 {
            commitments: vec![Default::default()],
            proofs: vec![Default::default()],
            blobs: vec![Default::default()],
        },
        execution_requests: Default::default(),
        should_override_builder: false,
    };
    let err = Message::from_ssz(
        m,
        Fork::Osaka,
        MessageKind::BuiltPayload,
        &built.as_ssz_bytes(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid blobs_bundle: 1 commitments, 1 blobs and 1 proofs: needs equal commitments and blobs and 128 proof(s) per blob"
    );
    // And the other way: a bundle built by hand with the wrong number of proofs is not encoded.
    let msg = Message::BuiltPayload(sszgate_engine::message::BuiltPayload::V5(built.into()));
    let err = msg.to_ssz(Fork::Osaka).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid blobs_bundle: 1 commitments, 1 blobs and 1 proofs: needs equal commitments and blobs and 128 proof(s) per blob"
    );
}
