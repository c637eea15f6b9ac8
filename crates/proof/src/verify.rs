//! The verifier's entry: a `C4Request` decoded, its version and sync data taken in, its proof
//! matched to the method and checked by the method's module, the result returned as JSON.
//!
//! Differences from colibri: the version must be `00 00 01 xx` (colibri checks byte 0 only,
//! §15 item 3); data a verifier builds itself is never taken from the prover (§15 item 1: such
//! data does not even decode, see `types`), and data the method does not use must be `None`.
//! eth_getLogs: sszgate's `LogsRangeProof` (complete); colibri's `LogsProof` only with
//! `TrustedState::accept_incomplete_logs`, as it cannot show that no block was left out.
//!
//! What does not live here: the checks (the method modules).

use serde_json::Value;
use ssz::Decode;

use crate::error::{Check, ProofError, ensure, fail};
use crate::receipts;
use crate::ssz::describe;
use crate::trust::TrustedState;
use crate::types::{C4Request, DataUnion, ProofUnion, SyncDataUnion};

/// The methods this verifier answers: eth_getTransactionReceipt always, the others as the
/// method-family features it was built with (`blocks`, `transactions`, `logs`, `accounts`,
/// `call`) say. A method left out is refused as unsupported and its code is not linked.
pub const METHODS: &[&str] = &[
    #[cfg(feature = "blocks")]
    "eth_blockNumber",
    #[cfg(feature = "blocks")]
    "eth_getBlockByNumber",
    #[cfg(feature = "blocks")]
    "eth_getBlockByHash",
    #[cfg(feature = "transactions")]
    "eth_getTransactionByHash",
    #[cfg(feature = "transactions")]
    "eth_getTransactionByBlockHashAndIndex",
    #[cfg(feature = "transactions")]
    "eth_getTransactionByBlockNumberAndIndex",
    "eth_getTransactionReceipt",
    #[cfg(feature = "logs")]
    "eth_getLogs",
    #[cfg(feature = "accounts")]
    "eth_getBalance",
    #[cfg(feature = "accounts")]
    "eth_getTransactionCount",
    #[cfg(feature = "accounts")]
    "eth_getStorageAt",
    #[cfg(feature = "accounts")]
    "eth_getCode",
    #[cfg(feature = "accounts")]
    "eth_getProof",
    #[cfg(feature = "call")]
    "eth_call",
];

/// Decodes `bytes` as a `C4Request` (errors name the field).
pub fn decode(bytes: &[u8]) -> Result<C4Request, ProofError> {
    C4Request::from_ssz_bytes(bytes).map_err(|e| ProofError::Decode(describe(&e)))
}

/// Verifies the proof `bytes` for `method(params)`: the result, or why the proof is refused.
/// Sync data in the proof adds committee keys to `trust`. A method this verifier does not
/// answer is refused before the proof is read (its proof option may not even be built in).
pub fn verify(
    bytes: &[u8],
    method: &str,
    params: &Value,
    trust: &mut TrustedState,
) -> Result<Value, ProofError> {
    check_method(method)?;
    verify_request(&decode(bytes)?, method, params, trust)
}

/// `method` is one of [`METHODS`], else it is refused as unsupported.
fn check_method(method: &str) -> Result<(), ProofError> {
    if METHODS.contains(&method) {
        return Ok(());
    }
    Err(ProofError::Unsupported(format!(
        "method {method} (this verifier answers {})",
        METHODS.join(", ")
    )))
}

/// The name of a proof option, for errors.
fn proof_name(p: &ProofUnion) -> &'static str {
    match p {
        ProofUnion::None => "None",
        ProofUnion::Account(_) => "AccountProof",
        ProofUnion::Transaction(_) => "TransactionProof",
        ProofUnion::Receipt(_) => "ReceiptProof",
        ProofUnion::Logs(_) => "LogsProof",
        ProofUnion::Call(_) => "CallProof",
        ProofUnion::Sync(_) => "SyncProof",
        ProofUnion::Block(_) => "BlockProof",
        ProofUnion::BlockNumber(_) => "BlockNumberProof",
        ProofUnion::Witness(_) => "WitnessProof",
        ProofUnion::LogsRange(_) => "LogsRangeProof",
    }
}

/// The version, the method, and whether the method uses the data the prover sent.
fn check_envelope(request: &C4Request, method: &str) -> Result<(), ProofError> {
    let v = request.version;
    ensure(v[0] == 0 && v[1] == 0 && v[2] == 1, Check::Version, || {
        format!("version {v}: chain type 0 (Ethereum) and protocol 0.1 expected")
    })?;
    check_method(method)?;
    let data = &request.data;
    let data_ok = matches!(
        (method, data),
        (_, DataUnion::None)
            | ("eth_getTransactionReceipt", DataUnion::Receipt(_))
            | ("eth_getLogs", DataUnion::Logs(_))
            | ("eth_getCode", DataUnion::Bytes(_))
    );
    ensure(data_ok, Check::ProofKind, || {
        format!("data option {} is not what {method} uses", data.selector())
    })
}

/// Verifies a decoded request (see [`verify`]).
pub fn verify_request(
    request: &C4Request,
    method: &str,
    params: &Value,
    trust: &mut TrustedState,
) -> Result<Value, ProofError> {
    check_envelope(request, method)?;
    if let SyncDataUnion::LightClient(sync) = &request.sync_data {
        trust.apply_sync_data(sync)?;
    }
    let data = &request.data;
    let trust = &*trust;
    match (&request.proof, method) {
        #[cfg(feature = "blocks")]
        (ProofUnion::BlockNumber(p), "eth_blockNumber") => {
            crate::blocks::verify_block_number(trust, p)
        }
        #[cfg(feature = "blocks")]
        (ProofUnion::Block(p), "eth_getBlockByNumber" | "eth_getBlockByHash") => {
            crate::blocks::verify_block(trust, p, params)
        }
        #[cfg(feature = "transactions")]
        (ProofUnion::Transaction(p), m) if m.starts_with("eth_getTransactionBy") => {
            crate::txs::verify_transaction(trust, p, m, params)
        }
        (ProofUnion::Receipt(p), "eth_getTransactionReceipt") => {
            let d = match data {
                DataUnion::Receipt(d) => Some(&**d),
                _ => None,
            };
            receipts::verify_receipt(trust, p, d, params)
        }
        #[cfg(feature = "logs")]
        (ProofUnion::LogsRange(p), "eth_getLogs") => {
            ensure(matches!(data, DataUnion::None), Check::ProofKind, || {
                "a LogsRangeProof carries no logs: the verifier computes them".into()
            })?;
            crate::logs::verify_logs_range(trust, p, params)
        }
        #[cfg(feature = "logs")]
        (ProofUnion::Logs(_), "eth_getLogs") if !trust.accept_incomplete_logs => fail(
            Check::Completeness,
            "a LogsProof (colibri's form) cannot show that no block of the range was left out; \
             refused unless incomplete logs are accepted (--accept-incomplete-logs)",
        ),
        #[cfg(feature = "logs")]
        (ProofUnion::Logs(p), "eth_getLogs") => {
            let logs = match data {
                DataUnion::Logs(l) => &l[..],
                _ => &[],
            };
            receipts::verify_logs(trust, p, logs, params)
        }
        #[cfg(feature = "accounts")]
        (
            ProofUnion::Account(p),
            m @ ("eth_getBalance"
            | "eth_getTransactionCount"
            | "eth_getStorageAt"
            | "eth_getCode"
            | "eth_getProof"),
        ) => crate::accounts::verify_account(trust, p, data, m, params),
        #[cfg(feature = "call")]
        (ProofUnion::Call(p), "eth_call") => crate::call::verify_call(trust, p, params),
        (p, m) => fail(
            Check::ProofKind,
            format!("a {} does not answer {m}", proof_name(p)),
        ),
    }
}
