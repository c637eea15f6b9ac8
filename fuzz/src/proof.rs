//! The bodies of the colibri-proof fuzz targets (`sszgate_proof`): the `C4Request` decoder and
//! the verifier, which read what a remote prover sends.
//!
//! - `proof_decode`: any input either fails to decode or decodes to a request that encodes
//!   back to the input byte for byte (the decoder accepts only canonical SSZ) and decodes again
//!   to the same request.
//! - `proof_verify`: byte 0 picks the method (and a params set taken from the vectors); the
//!   rest is the proof, verified with no committee keys known, so every decode, Merkle,
//!   Patricia, transaction and receipt check before the signature runs. It must return, never
//!   panic; with no keys it must never accept.
//! - `proof_request`: a body POSTed to the prover endpoint (`sszgate rpc --serve-proofs`)
//!   either is refused with a message or parses to a request whose own body parses back to
//!   it; the same for the `c4` client state's bytes.
//!
//! Plain functions so that `crates/proof/tests/fuzz_corpus.rs` replays the corpus on stable.

use serde_json::{Value, json};
use ssz::Encode;
use sszgate_light::ChainSpec;
use sszgate_proof::{TrustedState, decode, verify};

use crate::layout::Target;

/// The proof targets by name, as `fuzz/fuzz_targets/<name>.rs` and `fuzz/corpus/<name>/`.
pub const TARGETS: [Target; 3] = [
    ("proof_decode", proof_decode),
    ("proof_verify", proof_verify),
    ("proof_request", proof_request),
];

/// A prover endpoint's request body, and the input as a client state's bytes: each refused
/// with a message, or parsed to a value that round-trips.
pub fn proof_request(data: &[u8]) {
    use sszgate_proof::prover::endpoint::ProofRequest;
    use sszgate_proof::trust::ClientState;
    match ProofRequest::parse(data) {
        Ok(request) => {
            let again = ProofRequest::parse(request.to_body().as_bytes());
            assert_eq!(
                again.as_ref(),
                Ok(&request),
                "a request's own body parses back to it"
            );
        }
        Err(why) => assert!(!why.is_empty(), "a refusal says why"),
    }
    if let Ok(state) = ClientState::from_bytes(data) {
        assert_eq!(ClientState::from_bytes(&state.to_bytes()), Ok(state));
    }
}

/// Decodes; a decoded request re-encodes to the input and decodes to itself.
pub fn proof_decode(data: &[u8]) {
    let Ok(request) = decode(data) else {
        return;
    };
    let bytes = request.as_ssz_bytes();
    assert_eq!(bytes, data, "a decoded request encodes to other bytes");
    assert_eq!(decode(&bytes).expect("its own encoding decodes"), request);
}

/// One request per method the verifier answers, with params of the vectors' shape.
pub fn requests() -> Vec<(&'static str, Value)> {
    let address = "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48";
    let hash = "0x1c6a9f182ee398a34d6e4a28bbb55f8f5b10101d60589279b26cec199f021d99";
    vec![
        ("eth_blockNumber", json!([])),
        ("eth_getBlockByNumber", json!(["latest", false])),
        ("eth_getBlockByHash", json!([hash, true])),
        ("eth_getTransactionByHash", json!([hash])),
        (
            "eth_getTransactionByBlockHashAndIndex",
            json!([hash, "0x1"]),
        ),
        (
            "eth_getTransactionByBlockNumberAndIndex",
            json!(["0x152afdd", "0x1"]),
        ),
        ("eth_getTransactionReceipt", json!([hash])),
        (
            "eth_getLogs",
            json!([{"address": [address], "fromBlock": "0x14d7970", "toBlock": "0x14d7970"}]),
        ),
        ("eth_getBalance", json!([address, "latest"])),
        ("eth_getTransactionCount", json!([address, "0x152afdd"])),
        ("eth_getStorageAt", json!([address, "0x1", "latest"])),
        ("eth_getCode", json!([address, hash])),
        ("eth_getProof", json!([address, ["0x1", "0x2"], "latest"])),
        (
            "eth_call",
            json!([{"to": address, "data": "0x70a08231"}, "latest"]),
        ),
    ]
}

/// Verifies the proof after byte 0 for the method byte 0 picks, with no keys: never accepted.
pub fn proof_verify(data: &[u8]) {
    let Some((&pick, proof)) = data.split_first() else {
        return;
    };
    let requests = requests();
    let (method, params) = &requests[pick as usize % requests.len()];
    let mut trust = TrustedState::new(ChainSpec::mainnet());
    let outcome = verify(proof, method, params, &mut trust);
    assert!(
        outcome.is_err(),
        "a proof accepted with no committee keys known"
    );
}
