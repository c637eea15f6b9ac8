//! Integration tests of the Engine API model: golden vectors, the spec's byte examples,
//! bad input, property round trips and translation.

mod bad_input;
mod blob_answer;
mod golden;
mod props;
mod spec_examples;
mod translate;
mod wire_equivalence;

use std::path::PathBuf;

use alloy_eips::eip4844::{Blob, Bytes48};
use alloy_rpc_types_engine::ExecutionPayloadV3;

/// The repository's `testdata/` directory.
pub fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// Hex (with or without blanks) to bytes.
pub fn hex(s: &str) -> Vec<u8> {
    const_hex::decode(s.split_whitespace().collect::<String>()).expect("test hex")
}

/// A blob whose bytes follow from `seed`.
pub fn blob(seed: u8) -> Blob {
    let mut b = Blob::ZERO;
    for (i, byte) in b.iter_mut().enumerate() {
        *byte = (i as u8).wrapping_mul(31).wrapping_add(seed);
    }
    b
}

/// A proof of `seed` bytes.
pub fn proof(seed: u8) -> Bytes48 {
    Bytes48::repeat_byte(seed)
}

/// A Cancun payload with two transactions and a withdrawal.
pub fn payload() -> ExecutionPayloadV3 {
    let mut p: ExecutionPayloadV3 = serde_json::from_str(&format!(
        r#"{{"parentHash":"0x{h}","feeRecipient":"0x{a}","stateRoot":"0x{h}","receiptsRoot":"0x{h}","logsBloom":"0x{bloom}","prevRandao":"0x{h}","blockNumber":"0x1","gasLimit":"0x1","gasUsed":"0x0","timestamp":"0x1","extraData":"0x01","baseFeePerGas":"0x1","blockHash":"0x{h}","transactions":["0x02aa","0x01bbcc"],"withdrawals":[{{"index":"0x1","validatorIndex":"0x2","address":"0x{a}","amount":"0x3"}}],"blobGasUsed":"0x20000","excessBlobGas":"0x0"}}"#,
        h = "12".repeat(32),
        a = "34".repeat(20),
        bloom = "00".repeat(256),
    ))
    .unwrap();
    p.payload_inner.payload_inner.gas_used = 21_000;
    p
}
