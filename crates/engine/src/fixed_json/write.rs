//! Writers of the JSON of fixed-shape Engine API parts: hex strings and lists, quantities,
//! withdrawals, execution payloads V1..V3, the whole newPayload and forkchoiceUpdated
//! params and getPayloadBodiesV1 results, byte for byte as alloy's serde impls write them
//! (key order included; the tests compare the two on every real payload of the data set).
//! The parts without a writer (Amsterdam payloads) go through serde into the same buffer
//! ([`push_serde`]).
//!
//! Why not serde: measured on the 96 real payloads (`sszgate bench codec`), the serde route
//! allocates a hex `String` per transaction and scans it again for characters to escape, and
//! took 2.2× the SSZ encode of the same newPayload; a forkchoiceUpdated took 2.6–2.8×.

use alloy_eips::eip4895::Withdrawal;
use alloy_primitives::U256;
use alloy_rpc_types_engine::{
    ExecutionPayloadBodyV1, ExecutionPayloadV1, ExecutionPayloadV2, ExecutionPayloadV3,
    ExecutionPayloadV4, ForkchoiceState, PayloadAttributes,
};
use serde::Serialize;

use crate::{
    error::{Error, Result},
    message::NewPayload,
};

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends `"0x<hex>"` for `bytes`.
pub(crate) fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(b"\"0x");
    let start = out.len();
    out.resize(start + bytes.len() * 2, 0);
    const_hex::encode_to_slice(bytes, &mut out[start..]).expect("buffer sized to twice the input");
    out.push(b'"');
}

/// Appends a JSON array of hex strings.
pub(crate) fn push_hex_list<B: AsRef<[u8]>>(out: &mut Vec<u8>, items: &[B]) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_hex(out, item.as_ref());
    }
    out.push(b']');
}

/// Bytes the hex strings of `items` take in a JSON list, with quotes, `0x` and commas.
pub(crate) fn hex_len<B: AsRef<[u8]>>(items: &[B]) -> usize {
    items.iter().map(|i| i.as_ref().len() * 2 + 5).sum()
}

/// Appends a quantity: `"0x"` and the lowercase hex digits without leading zeros (`"0x0"`).
pub(crate) fn push_u64(out: &mut Vec<u8>, n: u64) {
    let digits = if n == 0 {
        1
    } else {
        16 - n.leading_zeros() as usize / 4
    };
    out.extend_from_slice(b"\"0x");
    for i in (0..digits).rev() {
        out.push(HEX_DIGITS[(n >> (4 * i)) as usize & 0xf]);
    }
    out.push(b'"');
}

/// Appends a `U256` quantity, in the same form as [`push_u64`].
pub(crate) fn push_u256(out: &mut Vec<u8>, n: &U256) {
    let mut hex = [0u8; 64];
    const_hex::encode_to_slice(n.to_be_bytes::<32>(), &mut hex).expect("64 digits for 32 bytes");
    let first = hex.iter().position(|&d| d != b'0').unwrap_or(63);
    out.extend_from_slice(b"\"0x");
    out.extend_from_slice(&hex[first..]);
    out.push(b'"');
}

/// Appends a list of withdrawals.
fn push_withdrawals(out: &mut Vec<u8>, withdrawals: &[Withdrawal]) {
    out.push(b'[');
    for (i, w) in withdrawals.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"index\":");
        push_u64(out, w.index);
        out.extend_from_slice(b",\"validatorIndex\":");
        push_u64(out, w.validator_index);
        out.extend_from_slice(b",\"address\":");
        push_hex(out, w.address.as_slice());
        out.extend_from_slice(b",\"amount\":");
        push_u64(out, w.amount);
        out.push(b'}');
    }
    out.push(b']');
}

/// Appends the fields of a V1 payload, without the braces.
fn push_payload_v1_fields(out: &mut Vec<u8>, p: &ExecutionPayloadV1) {
    let fixed: [(&[u8], &[u8]); 6] = [
        (b"\"parentHash\":", p.parent_hash.as_slice()),
        (b",\"feeRecipient\":", p.fee_recipient.as_slice()),
        (b",\"stateRoot\":", p.state_root.as_slice()),
        (b",\"receiptsRoot\":", p.receipts_root.as_slice()),
        (b",\"logsBloom\":", p.logs_bloom.as_slice()),
        (b",\"prevRandao\":", p.prev_randao.as_slice()),
    ];
    for (key, bytes) in fixed {
        out.extend_from_slice(key);
        push_hex(out, bytes);
    }
    let quantities: [(&[u8], u64); 4] = [
        (b",\"blockNumber\":", p.block_number),
        (b",\"gasLimit\":", p.gas_limit),
        (b",\"gasUsed\":", p.gas_used),
        (b",\"timestamp\":", p.timestamp),
    ];
    for (key, n) in quantities {
        out.extend_from_slice(key);
        push_u64(out, n);
    }
    out.extend_from_slice(b",\"extraData\":");
    push_hex(out, &p.extra_data);
    out.extend_from_slice(b",\"baseFeePerGas\":");
    push_u256(out, &p.base_fee_per_gas);
    out.extend_from_slice(b",\"blockHash\":");
    push_hex(out, p.block_hash.as_slice());
    out.extend_from_slice(b",\"transactions\":");
    push_hex_list(out, &p.transactions);
}

/// Appends the fields of a V2 payload, without the braces.
fn push_payload_v2_fields(out: &mut Vec<u8>, p: &ExecutionPayloadV2) {
    push_payload_v1_fields(out, &p.payload_inner);
    out.extend_from_slice(b",\"withdrawals\":");
    push_withdrawals(out, &p.withdrawals);
}

/// Appends a V3 payload (Cancun to Osaka).
pub(crate) fn push_payload_v3(out: &mut Vec<u8>, p: &ExecutionPayloadV3) {
    out.push(b'{');
    push_payload_v2_fields(out, &p.payload_inner);
    out.extend_from_slice(b",\"blobGasUsed\":");
    push_u64(out, p.blob_gas_used);
    out.extend_from_slice(b",\"excessBlobGas\":");
    push_u64(out, p.excess_blob_gas);
    out.push(b'}');
}

/// Bytes a payload's JSON takes, about (at least): hex doubles every byte of the
/// transactions and the extra data; a withdrawal takes under 256 bytes; the fixed fields fit
/// in 8 KiB. A buffer reserved to this is never copied to grow.
pub(crate) fn payload_json_len(v1: &ExecutionPayloadV1, withdrawals: usize) -> usize {
    hex_len(&v1.transactions) + v1.extra_data.len() * 2 + withdrawals * 256 + 8 * 1024
}

/// Bytes an Amsterdam payload's JSON takes, about (at least): the V3 part and the block
/// access list's hex.
pub(crate) fn payload_v4_json_len(p: &ExecutionPayloadV4) -> usize {
    let v2 = &p.payload_inner.payload_inner;
    payload_json_len(&v2.payload_inner, v2.withdrawals.len()) + p.block_access_list.len() * 2
}

/// Appends the serde JSON of `value` straight into `out` (no buffer of its own to grow and
/// copy: measured, that was a third of the time outside the blobs on a 72-blob answer).
pub(crate) fn push_serde<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<()> {
    sonic_rs::to_writer(&mut *out, value).map_err(|e| Error::invalid("JSON output", e.to_string()))
}

/// The JSON-RPC params of a newPayloadV1..V5. Amsterdam's payload (V4, with its block access
/// list) has no writer here: serde writes it, into the same buffer; the rest of its params is
/// written as for Prague.
pub(crate) fn new_payload_json(np: &NewPayload) -> Result<Vec<u8>> {
    let (payload, hashes, requests) = match np {
        NewPayload::Paris(p) => (payload_json_len(p, 0), &[][..], None),
        NewPayload::Shanghai(p) => (
            payload_json_len(&p.payload_inner, p.withdrawals.len()),
            &[][..],
            None,
        ),
        NewPayload::Cancun(p, h, _) => (v3_json_len(p), &h[..], None),
        NewPayload::Prague(p, h, _, q) => (v3_json_len(p), &h[..], Some(q)),
        NewPayload::Amsterdam(p, h, _, q) => (payload_v4_json_len(p), &h[..], Some(q)),
    };
    let mut out =
        Vec::with_capacity(payload + hashes.len() * 70 + requests.map_or(0, |q| hex_len(q)) + 128);
    out.push(b'[');
    match np {
        NewPayload::Paris(p) => {
            out.push(b'{');
            push_payload_v1_fields(&mut out, p);
            out.push(b'}');
        }
        NewPayload::Shanghai(p) => {
            out.push(b'{');
            push_payload_v2_fields(&mut out, p);
            out.push(b'}');
        }
        NewPayload::Cancun(p, ..) | NewPayload::Prague(p, ..) => push_payload_v3(&mut out, p),
        NewPayload::Amsterdam(p, ..) => push_serde(&mut out, p)?,
    }
    if let NewPayload::Cancun(_, _, root)
    | NewPayload::Prague(_, _, root, _)
    | NewPayload::Amsterdam(_, _, root, _) = np
    {
        out.push(b',');
        push_hex_list(&mut out, hashes);
        out.push(b',');
        push_hex(&mut out, root.as_slice());
    }
    if let Some(requests) = requests {
        out.push(b',');
        push_hex_list(&mut out, requests);
    }
    out.push(b']');
    Ok(out)
}

/// [`payload_json_len`] of a V3 payload.
fn v3_json_len(p: &ExecutionPayloadV3) -> usize {
    payload_json_len(
        &p.payload_inner.payload_inner,
        p.payload_inner.withdrawals.len(),
    )
}

/// The JSON-RPC params of a forkchoiceUpdatedV1..V4: `[state, attributes|null]`.
pub(crate) fn forkchoice_json(
    state: &ForkchoiceState,
    attributes: Option<&PayloadAttributes>,
) -> Vec<u8> {
    let withdrawals = attributes
        .and_then(|a| a.withdrawals.as_ref())
        .map_or(0, Vec::len);
    let mut out = Vec::with_capacity(512 + withdrawals * 160);
    out.extend_from_slice(b"[{\"headBlockHash\":");
    push_hex(&mut out, state.head_block_hash.as_slice());
    out.extend_from_slice(b",\"safeBlockHash\":");
    push_hex(&mut out, state.safe_block_hash.as_slice());
    out.extend_from_slice(b",\"finalizedBlockHash\":");
    push_hex(&mut out, state.finalized_block_hash.as_slice());
    out.extend_from_slice(b"},");
    match attributes {
        None => out.extend_from_slice(b"null"),
        Some(a) => {
            out.extend_from_slice(b"{\"timestamp\":");
            push_u64(&mut out, a.timestamp);
            out.extend_from_slice(b",\"prevRandao\":");
            push_hex(&mut out, a.prev_randao.as_slice());
            out.extend_from_slice(b",\"suggestedFeeRecipient\":");
            push_hex(&mut out, a.suggested_fee_recipient.as_slice());
            if let Some(w) = &a.withdrawals {
                out.extend_from_slice(b",\"withdrawals\":");
                push_withdrawals(&mut out, w);
            }
            if let Some(root) = &a.parent_beacon_block_root {
                out.extend_from_slice(b",\"parentBeaconBlockRoot\":");
                push_hex(&mut out, root.as_slice());
            }
            if let Some(slot) = a.slot_number {
                out.extend_from_slice(b",\"slotNumber\":");
                push_u64(&mut out, slot);
            }
            if let Some(limit) = a.target_gas_limit {
                out.extend_from_slice(b",\"targetGasLimit\":");
                push_u64(&mut out, limit);
            }
            out.push(b'}');
        }
    }
    out.push(b']');
    out
}

/// The JSON-RPC result of a getPayloadBodiesV1: bodies or `null`s, `withdrawals` `null`
/// before Shanghai. Measured: the serde route took 4× the SSZ encode of 32 real bodies.
pub(crate) fn bodies_v1_json(bodies: &[Option<ExecutionPayloadBodyV1>]) -> Vec<u8> {
    let size = bodies
        .iter()
        .flatten()
        .map(|b| {
            hex_len(&b.transactions) + b.withdrawals.as_ref().map_or(4, |w| w.len() * 256) + 64
        })
        .sum::<usize>();
    let mut out = Vec::with_capacity(size + bodies.len() * 5 + 2);
    out.push(b'[');
    for (i, body) in bodies.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let Some(body) = body else {
            out.extend_from_slice(b"null");
            continue;
        };
        out.extend_from_slice(b"{\"transactions\":");
        push_hex_list(&mut out, &body.transactions);
        out.extend_from_slice(b",\"withdrawals\":");
        match &body.withdrawals {
            Some(w) => push_withdrawals(&mut out, w),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
    }
    out.push(b']');
    out
}
