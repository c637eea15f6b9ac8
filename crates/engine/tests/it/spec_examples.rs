//! The byte examples of the spec text and of execution-specs' REST-SSZ tests
//! (`shared/vectors/README.md`), through the message codecs.

use sszgate_engine::{Fork, Message, MessageKind, method};

fn payload_status(json: &str) -> Message {
    let m = method::by_name("engine_newPayloadV4").unwrap();
    Message::from_json(m, Fork::Prague, MessageKind::PayloadStatus, json.as_bytes()).unwrap()
}

#[test]
fn payload_status_example_a_valid_is_41_bytes_starting_0x00() {
    let hash = "ab".repeat(32);
    let msg = payload_status(&format!(
        r#"{{"status":"VALID","latestValidHash":"0x{hash}","validationError":null}}"#
    ));
    let ssz = msg.to_ssz(Fork::Prague).unwrap();
    assert_eq!(ssz, crate::hex(&format!("00 09000000 29000000 {hash}")));
    assert_eq!(ssz.len(), 41);
    let m = method::by_name("engine_newPayloadV4").unwrap();
    assert_eq!(
        Message::from_ssz(m, Fork::Prague, MessageKind::PayloadStatus, &ssz).unwrap(),
        msg
    );
}

#[test]
fn payload_status_example_b_invalid_with_error_is_27_bytes() {
    let msg = payload_status(
        r#"{"status":"INVALID","latestValidHash":null,"validationError":"bad state root"}"#,
    );
    let ssz = msg.to_ssz(Fork::Prague).unwrap();
    assert_eq!(
        ssz,
        crate::hex("01 09000000 09000000 04000000 62616420737461746520726f6f74")
    );
    let m = method::by_name("engine_newPayloadV4").unwrap();
    let back = Message::from_ssz(m, Fork::Prague, MessageKind::PayloadStatus, &ssz).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&back.to_json().unwrap()).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"status": "INVALID", "latestValidHash": null, "validationError": "bad state root"})
    );
}

#[test]
fn invalid_block_hash_becomes_invalid() {
    let msg = payload_status(
        r#"{"status":"INVALID_BLOCK_HASH","latestValidHash":null,"validationError":"blockhash mismatch"}"#,
    );
    assert_eq!(msg.to_ssz(Fork::Prague).unwrap()[0], 1);
}

fn hash(n: u8) -> String {
    format!("0x{}{:02x}", "00".repeat(31), n)
}

/// execution-specs `test_engine_ssz.py`: the Amsterdam envelope with `Hash(9)` as parent beacon
/// block root and one execution request `0x0011`; the expected blob versioned hashes are not on
/// the wire.
#[test]
fn amsterdam_envelope_layout_of_execution_specs() {
    let payload = format!(
        r#"{{"parentHash":"{}","feeRecipient":"0x{}02","stateRoot":"{}","receiptsRoot":"{}","logsBloom":"0x{}","prevRandao":"{}",
        "blockNumber":"0x1","gasLimit":"0x1c9c380","gasUsed":"0x0","timestamp":"0xc","extraData":"0x74657374","baseFeePerGas":"0x7",
        "blockHash":"{}","transactions":[],"withdrawals":[],"blobGasUsed":"0x0","excessBlobGas":"0x0","blockAccessList":"0xc0","slotNumber":"0x1"}}"#,
        hash(1),
        "00".repeat(19),
        hash(3),
        hash(4),
        "00".repeat(256),
        hash(5),
        hash(8)
    );
    let params = format!(r#"[{payload},["{}"],"{}",["0x0011"]]"#, hash(99), hash(9));
    let m = method::by_name("engine_newPayloadV5").unwrap();
    let msg = Message::from_json(
        m,
        Fork::Amsterdam,
        MessageKind::NewPayload,
        params.as_bytes(),
    )
    .unwrap();
    let ssz = msg.to_ssz(Fork::Amsterdam).unwrap();
    assert_eq!(&ssz[0..4], &[0x28, 0, 0, 0], "offset of payload = 40");
    assert_eq!(
        &ssz[4..36],
        &crate::hex(&hash(9)[2..])[..],
        "parent_beacon_block_root"
    );
    let end = u32::from_le_bytes(ssz[36..40].try_into().unwrap()) as usize;
    assert_eq!(
        &ssz[end..],
        &crate::hex("04000000 0011")[..],
        "execution_requests"
    );
    // The payload region is the Amsterdam payload: 540 fixed bytes, then extra_data "test".
    sszgate_engine::ssz::validate(
        sszgate_engine::ssz::execution_payload(Fork::Amsterdam),
        &ssz[40..end],
    )
    .unwrap();
    assert_eq!(&ssz[40 + 540..40 + 544], b"test");
    // Back to JSON: the versioned hashes are derived from the (empty) transactions.
    let back = Message::from_ssz(m, Fork::Amsterdam, MessageKind::NewPayload, &ssz).unwrap();
    let Message::NewPayload(sszgate_engine::message::NewPayload::Amsterdam(
        p,
        hashes,
        root,
        requests,
    )) = back
    else {
        panic!()
    };
    assert!(hashes.is_empty());
    assert_eq!(root.to_string(), hash(9));
    assert_eq!(requests.len(), 1);
    assert_eq!(p.slot_number, 1);
    assert_eq!(p.block_access_list.as_ref(), &[0xc0]);
}
