//! Why a proof is refused: every error names the check that failed ([`Check`]) and says which
//! field and values it concerns.
//!
//! What does not live here: the checks themselves (`verify` and its modules).

/// A check the verifier makes; its [`Check::name`] is what errors and tests name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The version bytes: chain type and protocol version.
    Version,
    /// The proof kind fits the method, the data kind fits the proof.
    ProofKind,
    /// An SSZ multiproof or branch leads to the header's body root.
    BodyRoot,
    /// Header chain or historic branch from the data header to the signed header.
    HeaderChain,
    /// Enough sync-committee members signed (at least 2/3).
    Participation,
    /// The committee keys for the signature's period are known.
    Committee,
    /// The aggregate BLS signature verifies.
    Signature,
    /// Light-client sync data (bootstrap and updates).
    SyncData,
    /// A state-trie Patricia proof.
    AccountProof,
    /// A storage-trie Patricia proof.
    StorageProof,
    /// A receipts-trie Patricia proof.
    ReceiptProof,
    /// The prover's receipt or log data equals the proven receipt.
    ReceiptData,
    /// A transaction decodes and matches what it is said to be.
    Transaction,
    /// The proof is for the request's parameters (hash, number, address, keys, index).
    Request,
    /// Contract code hashes to the proven code hash.
    Code,
    /// The proven block is what the request's block tag names (`latest`: fresh by the clock).
    Tag,
    /// An eth_getLogs proof covers every block of the range: consecutive numbers, linked by
    /// parent hashes, from the range's first block to its last (or cannot show it).
    Completeness,
}

impl Check {
    /// The check's name in errors.
    pub fn name(self) -> &'static str {
        match self {
            Check::Version => "version",
            Check::ProofKind => "proof_kind",
            Check::BodyRoot => "body_root",
            Check::HeaderChain => "header_chain",
            Check::Participation => "participation",
            Check::Committee => "committee",
            Check::Signature => "signature",
            Check::SyncData => "sync_data",
            Check::AccountProof => "account_proof",
            Check::StorageProof => "storage_proof",
            Check::ReceiptProof => "receipt_proof",
            Check::ReceiptData => "receipt_data",
            Check::Transaction => "transaction",
            Check::Request => "request",
            Check::Code => "code",
            Check::Tag => "tag",
            Check::Completeness => "completeness",
        }
    }
}

/// Why a proof was refused.
#[derive(Debug, thiserror::Error)]
pub enum ProofError {
    /// The bytes are not a `C4Request` (the message names the field path).
    #[error("decode {0}")]
    Decode(String),
    /// A check failed.
    #[error("check {}: {detail}", check.name())]
    Check {
        /// The check.
        check: Check,
        /// What was wrong, naming the field.
        detail: String,
    },
    /// The request's method or parameters are not usable.
    #[error("params: {0}")]
    Params(String),
    /// An eth_call that reads state or context the proof does not bind.
    #[error("unprovable: {0}")]
    Unprovable(String),
    /// An eth_call that reverted (its data) or halted, over proven state.
    #[error("execution reverted: {0}")]
    Reverted(String),
    /// A method, proof or option this verifier does not handle.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl ProofError {
    /// The check that failed, if a check failed.
    pub fn check(&self) -> Option<Check> {
        match self {
            ProofError::Check { check, .. } => Some(*check),
            _ => None,
        }
    }
}

/// A failed `check` with its detail.
pub(crate) fn fail<T>(check: Check, detail: impl Into<String>) -> Result<T, ProofError> {
    Err(ProofError::Check {
        check,
        detail: detail.into(),
    })
}

/// `Ok` when `ok`, else the failed `check` with the detail `detail()` builds.
pub(crate) fn ensure(
    ok: bool,
    check: Check,
    detail: impl FnOnce() -> String,
) -> Result<(), ProofError> {
    if ok { Ok(()) } else { fail(check, detail()) }
}
