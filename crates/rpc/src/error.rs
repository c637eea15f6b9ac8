//! The errors of verified RPC: which check failed on which field, what the upstream did wrong,
//! why a block could not be anchored, and their JSON-RPC codes.
//!
//! Not here: the checks themselves (`verify`, `blocks`, `receipts`) or the server.

use serde_json::{Value, json};

/// A verification check; its name appears in errors and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Check {
    /// The header rebuilt from the upstream's fields hashes to the anchored block hash.
    BlockHash,
    /// The beacon block served for an anchor is that anchor's: its recomputed root is the
    /// anchor's beacon root.
    BeaconRoot,
    /// A header's parent hash links it to the anchored block above it.
    ParentHash,
    /// The block is close enough to an anchored block to be chained back to it.
    AnchorDistance,
    /// The account proof walks from the header's state root to the claimed account.
    AccountProof,
    /// The storage proof walks from the account's storage root to the claimed value.
    StorageProof,
    /// The proof answers for the address or slots asked for.
    ProofSubject,
    /// The code hashes to the proven code hash.
    CodeHash,
    /// The transactions rebuild the header's transactions root.
    TransactionsRoot,
    /// The transaction at the index has the hash asked for.
    TransactionHash,
    /// The withdrawals rebuild the header's withdrawals root.
    WithdrawalsRoot,
    /// The receipts rebuild the header's receipts root.
    ReceiptsRoot,
    /// One receipt per transaction.
    ReceiptCount,
    /// Each receipt of its transaction's type.
    ReceiptType,
    /// The header's logs bloom covers the logs found.
    LogsBloom,
    /// A transaction's signature yields a sender.
    Sender,
    /// A check of an SSZ proof from a prover, by the proof verifier's name for it
    /// (`signature`, `body_root`, `account_proof` …).
    Proof(&'static str),
}

impl Check {
    /// The check's name, as in errors and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Check::BlockHash => "block_hash",
            Check::BeaconRoot => "beacon_root",
            Check::ParentHash => "parent_hash",
            Check::AnchorDistance => "anchor_distance",
            Check::AccountProof => "account_proof",
            Check::StorageProof => "storage_proof",
            Check::ProofSubject => "proof_subject",
            Check::CodeHash => "code_hash",
            Check::TransactionsRoot => "transactions_root",
            Check::TransactionHash => "transaction_hash",
            Check::WithdrawalsRoot => "withdrawals_root",
            Check::ReceiptsRoot => "receipts_root",
            Check::ReceiptCount => "receipt_count",
            Check::ReceiptType => "receipt_type",
            Check::LogsBloom => "logs_bloom",
            Check::Sender => "sender",
            Check::Proof(name) => name,
        }
    }
}

/// A failed check: the upstream's answer is not what the anchored block commits to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("verification failed: {} ({field}): {detail}", check.name())]
pub struct Mismatch {
    /// The check that failed.
    pub check: Check,
    /// The answer field it failed on (`balance`, `accountProof[3]`, `receipts[7].status` …).
    pub field: String,
    /// What was found against what was expected.
    pub detail: String,
}

impl Mismatch {
    /// A failed `check` on `field`.
    pub fn new(check: Check, field: impl Into<String>, detail: impl Into<String>) -> Mismatch {
        Mismatch {
            check,
            field: field.into(),
            detail: detail.into(),
        }
    }
}

/// Why the anchor source has no anchor for a block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnchorError {
    /// No verified beacon header carries this block.
    #[error("no verified beacon header anchors {0}")]
    NotAnchored(String),
    /// The anchor source cannot answer now (not synced, its own upstream down …).
    #[error("the anchor source is unavailable: {0}")]
    Unavailable(String),
}

/// What went wrong talking to the untrusted execution RPC or Beacon API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// No answer within the timeout.
    #[error("{what}: no answer within {millis} ms")]
    Timeout {
        /// The request.
        what: String,
        /// The timeout.
        millis: u64,
    },
    /// The connection or the HTTP exchange failed.
    #[error("{what}: {detail}")]
    Transport {
        /// The request.
        what: String,
        /// The cause.
        detail: String,
    },
    /// An HTTP status other than 200.
    #[error("{what}: HTTP status {status}")]
    Status {
        /// The request.
        what: String,
        /// The status.
        status: u16,
    },
    /// The answer is larger than the bound.
    #[error("{what}: answer larger than {limit} bytes")]
    TooLarge {
        /// The request.
        what: String,
        /// The bound.
        limit: usize,
    },
    /// The request's upstream budget is spent: the fetch was not made.
    #[error("{what}: {spent}")]
    Budget {
        /// The request.
        what: String,
        /// Which budget, its bound and what was used.
        spent: sszgate_serve::BudgetSpent,
    },
    /// The answer is not what the method returns.
    #[error("{what}: malformed answer: {detail}")]
    Malformed {
        /// The request.
        what: String,
        /// What is wrong.
        detail: String,
    },
    /// The upstream answered with a JSON-RPC error.
    #[error("{what}: upstream error {code}: {message}")]
    Rpc {
        /// The request.
        what: String,
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
    },
}

/// An error answered to a client, with its JSON-RPC code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    /// Not a JSON-RPC request (code -32600).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// Body not JSON (code -32700).
    #[error("parse error: {0}")]
    Parse(String),
    /// No such method (code -32601).
    #[error("method not found: {0}")]
    MethodNotFound(String),
    /// Bad parameters, or a request beyond a bound (code -32602).
    #[error("invalid params: {0}")]
    InvalidParams(String),
    /// A method that exists but is not verified, and not allowed unverified (code -32090).
    #[error("{0} cannot be verified; it is not passed through unless allowed unverified")]
    Unverifiable(String),
    /// Something the answer depends on cannot be proven (code -32091).
    #[error("cannot be proven: {0}")]
    Unprovable(String),
    /// The block cannot be anchored (code -32098).
    #[error(transparent)]
    Anchor(#[from] AnchorError),
    /// The upstream failed (code -32097).
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The upstream's answer failed a check (code -32099).
    #[error(transparent)]
    Verification(#[from] Mismatch),
    /// The call, run over proven state, reverted (code 3, the revert data in `data`).
    #[error("execution reverted")]
    Reverted(alloy_primitives::Bytes),
    /// The call, run over proven state, halted (code -32000).
    #[error("execution halted: {0}")]
    Halted(String),
}

impl RpcError {
    /// The JSON-RPC error code.
    pub fn code(&self) -> i64 {
        match self {
            RpcError::Parse(_) => -32700,
            RpcError::InvalidRequest(_) => -32600,
            RpcError::MethodNotFound(_) => -32601,
            RpcError::InvalidParams(_) => -32602,
            RpcError::Unverifiable(_) => -32090,
            RpcError::Unprovable(_) => -32091,
            RpcError::Upstream(_) => -32097,
            RpcError::Anchor(_) => -32098,
            RpcError::Verification(_) => -32099,
            RpcError::Reverted(_) => 3,
            RpcError::Halted(_) => -32000,
        }
    }

    /// The outcome label of this error in metrics.
    pub fn outcome(&self) -> &'static str {
        match self {
            RpcError::Verification(_) => "refused",
            RpcError::Reverted(_) | RpcError::Halted(_) => "verified",
            RpcError::Parse(_)
            | RpcError::InvalidRequest(_)
            | RpcError::MethodNotFound(_)
            | RpcError::InvalidParams(_)
            | RpcError::Unverifiable(_) => "invalid",
            RpcError::Unprovable(_) | RpcError::Anchor(_) | RpcError::Upstream(_) => "failed",
        }
    }

    /// The JSON-RPC `error` object.
    pub fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code(), "message": self.to_string()});
        match self {
            RpcError::Verification(m) => {
                error["data"] =
                    json!({"check": m.check.name(), "field": m.field, "detail": m.detail});
            }
            RpcError::Reverted(data) => error["data"] = json!(data),
            RpcError::Upstream(UpstreamError::Budget { spent, .. }) => {
                error["data"] =
                    json!({"budget": spent.what, "limit": spent.limit, "used": spent.used});
            }
            _ => {}
        }
        error
    }
}

/// Shorthand for a failed check.
pub(crate) fn mismatch<T>(
    check: Check,
    field: impl Into<String>,
    detail: impl Into<String>,
) -> Result<T, RpcError> {
    Err(RpcError::Verification(Mismatch::new(check, field, detail)))
}
