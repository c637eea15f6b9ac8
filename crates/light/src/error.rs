//! The light client's errors: each names the check that failed and the field it concerns.
//!
//! What does not live here: the checks themselves (see `store`, `anchor`, `bls`).

use alloy_primitives::B256;

/// Why a light-client operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LightError {
    /// Bytes that do not decode as the named container.
    #[error("decode {what}: {detail}")]
    Decode {
        /// The container.
        what: &'static str,
        /// What the decoder said.
        detail: String,
    },
    /// A header whose fork has no light-client containers here (before Deneb, from Gloas on).
    #[error(
        "{what}: slot {slot} is in a fork this light client does not support (before Deneb, or from Gloas on)"
    )]
    UnsupportedFork {
        /// The container.
        what: &'static str,
        /// Its slot.
        slot: u64,
    },
    /// A chain parameter missing or malformed in the beacon node's config.
    #[error("chain config: {field} missing or malformed")]
    Config {
        /// The config key.
        field: &'static str,
    },
    /// A root that should equal a trusted one does not.
    #[error("check {check}: {field} is {got}, expected {expected}")]
    RootMismatch {
        /// The check (e.g. `bootstrap_root`).
        check: &'static str,
        /// The field compared.
        field: &'static str,
        /// The root computed.
        got: B256,
        /// The root trusted.
        expected: B256,
    },
    /// A Merkle branch that does not lead to its root.
    #[error("check {check}: branch of {field} does not lead to {root_field}")]
    InvalidBranch {
        /// The check (e.g. `next_sync_committee_branch`).
        check: &'static str,
        /// The leaf proven.
        field: &'static str,
        /// The root it should lead to.
        root_field: &'static str,
    },
    /// Too few committee members signed.
    #[error("check participation: {participants} of 512 signed, {required} required ({field})")]
    Participation {
        /// Members that signed.
        participants: usize,
        /// Members required.
        required: usize,
        /// Which aggregate.
        field: &'static str,
    },
    /// A sync-committee signature that does not verify.
    #[error(
        "check sync_aggregate_signature: {detail} (signing slot {signature_slot}, period {period})"
    )]
    Signature {
        /// What blst said or which part was malformed.
        detail: String,
        /// The slot the signature was included at.
        signature_slot: u64,
        /// The committee period used.
        period: u64,
    },
    /// A committee public key that does not decompress to a valid G1 point.
    #[error("check sync_committee_pubkey: key {index} of period {period} is invalid")]
    InvalidPublicKey {
        /// Position in the committee.
        index: usize,
        /// The committee's period.
        period: u64,
    },
    /// No committee known for the period a signature needs.
    #[error(
        "check sync_committee_known: no committee for period {period} (the store knows {known})"
    )]
    UnknownCommittee {
        /// The period needed.
        period: u64,
        /// The periods the store knows.
        known: String,
    },
    /// Slots out of the order the sync protocol requires.
    #[error("check slot_order: {detail}")]
    SlotOrder {
        /// Which slots.
        detail: String,
    },
    /// An update that is valid but carries nothing the store can use.
    #[error("check update_relevance: {detail}")]
    Irrelevant {
        /// Why.
        detail: String,
    },
    /// A field that must be empty (default) is not, or one that must match the store does not.
    #[error("check {check}: {field} {detail}")]
    FieldMismatch {
        /// The check.
        check: &'static str,
        /// The field.
        field: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// The request's upstream budget is spent: the fetch was not made.
    #[cfg(feature = "http")]
    #[error("{path}: {spent}")]
    Budget {
        /// The request path.
        path: String,
        /// Which budget, its bound and what was used.
        spent: sszgate_serve::BudgetSpent,
    },
    /// A block the light client cannot connect to a signed header.
    #[error("check block_connected: {detail}")]
    NotConnected {
        /// Why it could not be connected.
        detail: String,
    },
    /// The Beacon API has no such resource (404; e.g. a block at a missed slot).
    #[error("beacon api {path}: not found")]
    NotFound {
        /// The request path.
        path: String,
    },
    /// The Beacon API failed or answered something unusable.
    #[error("beacon api {path}: {detail}")]
    Api {
        /// The request path.
        path: String,
        /// What went wrong.
        detail: String,
    },
    /// A JSON answer with a field missing or malformed.
    #[error("beacon api {path}: JSON field {field}: {detail}")]
    Json {
        /// The request path.
        path: String,
        /// The field's path in the answer (e.g. `data.header.beacon.slot`).
        field: String,
        /// What is wrong.
        detail: String,
    },
    /// The store file could not be read or written.
    #[error("store file {path}: {detail}")]
    Persist {
        /// The file.
        path: String,
        /// What went wrong.
        detail: String,
    },
}
