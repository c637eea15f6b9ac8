//! The REST-SSZ containers of `engine-rest-ssz-containers.md` as data, one per fork.
//!
//! Field order and limits are copied from the spec text; the tests of [`crate::message`] check
//! that alloy's encodings walk cleanly against these schemas, so a disagreement between alloy
//! and the spec shows up as a failing test rather than as bytes on the wire.

use crate::fork::Fork;

/// An SSZ type, enough of it to validate layout and limits.
#[derive(Debug)]
pub enum Ty {
    /// A fixed-size value of this many bytes (`uintN`, `ByteVector[N]`, `Bitvector[N]`).
    Fixed(usize),
    /// A `boolean` (one byte, 0 or 1).
    Bool,
    /// A `uint8` enumeration with values `0..n`.
    Tag(u8),
    /// `ByteList[N]`.
    Bytes(usize),
    /// `List[T, N]`.
    List(&'static Ty, usize),
    /// A container: named fields in wire order.
    Container(&'static str, &'static [Field]),
}

/// A named field of a container.
#[derive(Debug)]
pub struct Field {
    /// The field name, as in the spec.
    pub name: &'static str,
    /// The field type.
    pub ty: &'static Ty,
}

impl Ty {
    /// The size of a fixed-size type, `None` for variable-size types.
    pub fn fixed_size(&self) -> Option<usize> {
        match self {
            Ty::Fixed(n) => Some(*n),
            Ty::Bool | Ty::Tag(_) => Some(1),
            Ty::Bytes(_) | Ty::List(..) => None,
            Ty::Container(_, fields) => fields
                .iter()
                .try_fold(0usize, |sum, f| f.ty.fixed_size().map(|n| sum + n)),
        }
    }

    /// The container name, or a description of the type.
    pub fn name(&self) -> String {
        match self {
            Ty::Fixed(n) => format!("ByteVector[{n}]"),
            Ty::Bool => "boolean".into(),
            Ty::Tag(_) => "uint8".into(),
            Ty::Bytes(max) => format!("ByteList[{max}]"),
            Ty::List(elem, max) => format!("List[{}, {max}]", elem.name()),
            Ty::Container(name, _) => (*name).into(),
        }
    }
}

const fn field(name: &'static str, ty: &'static Ty) -> Field {
    Field { name, ty }
}

// Limits (engine-rest-ssz-containers.md § MAX_* constants).
/// `MAX_BYTES_PER_TX`.
pub const MAX_BYTES_PER_TX: usize = 1 << 30;
/// `MAX_TXS_PER_PAYLOAD`.
pub const MAX_TXS_PER_PAYLOAD: usize = 1 << 20;
/// `MAX_WITHDRAWALS_PER_PAYLOAD`.
pub const MAX_WITHDRAWALS_PER_PAYLOAD: usize = 16;
/// `MAX_EXTRA_DATA_BYTES`.
pub const MAX_EXTRA_DATA_BYTES: usize = 32;
/// `MAX_BLOB_COMMITMENTS_PER_BLOCK`.
pub const MAX_BLOB_COMMITMENTS_PER_BLOCK: usize = 4096;
/// `BYTES_PER_BLOB`.
pub const BYTES_PER_BLOB: usize = 131_072;
/// `CELLS_PER_EXT_BLOB`.
pub const CELLS_PER_EXT_BLOB: usize = 128;
/// `BYTES_PER_CELL`.
pub const BYTES_PER_CELL: usize = 2048;
/// `MAX_BAL_BYTES` (a placeholder in the spec: `MAX_BYTES_PER_TX`).
pub const MAX_BAL_BYTES: usize = MAX_BYTES_PER_TX;
/// `MAX_EXECUTION_REQUESTS_PER_PAYLOAD`.
pub const MAX_EXECUTION_REQUESTS_PER_PAYLOAD: usize = 256;
/// `MAX_BYTES_PER_EXECUTION_REQUEST` (a placeholder in the spec: `MAX_BYTES_PER_TX`).
pub const MAX_BYTES_PER_EXECUTION_REQUEST: usize = MAX_BYTES_PER_TX;
/// `MAX_BLOBS_REQUEST`.
pub const MAX_BLOBS_REQUEST: usize = 128;
/// `MAX_BODIES_REQUEST`.
pub const MAX_BODIES_REQUEST: usize = 32;
/// `MAX_REQUEST_BODY_SIZE` (advertised as `limits.payload.max_bytes`).
pub const MAX_REQUEST_BODY_SIZE: usize = 1 << 26;
/// `MAX_ERROR_BYTES`.
pub const MAX_ERROR_BYTES: usize = 1024;

const U64: Ty = Ty::Fixed(8);
const U256: Ty = Ty::Fixed(32);
const HASH: Ty = Ty::Fixed(32);
const ADDRESS: Ty = Ty::Fixed(20);
const BYTES48: Ty = Ty::Fixed(48);
const BITVECTOR_128: Ty = Ty::Fixed(16);
const TX: Ty = Ty::Bytes(MAX_BYTES_PER_TX);
const TXS: Ty = Ty::List(&TX, MAX_TXS_PER_PAYLOAD);
const EXTRA_DATA: Ty = Ty::Bytes(MAX_EXTRA_DATA_BYTES);
const BAL: Ty = Ty::Bytes(MAX_BAL_BYTES);

/// `Withdrawal`.
pub static WITHDRAWAL: Ty = Ty::Container(
    "Withdrawal",
    &[
        field("index", &U64),
        field("validator_index", &U64),
        field("address", &ADDRESS),
        field("amount", &U64),
    ],
);
const WITHDRAWALS: Ty = Ty::List(&WITHDRAWAL, MAX_WITHDRAWALS_PER_PAYLOAD);
const REQUEST: Ty = Ty::Bytes(MAX_BYTES_PER_EXECUTION_REQUEST);
const REQUESTS: Ty = Ty::List(&REQUEST, MAX_EXECUTION_REQUESTS_PER_PAYLOAD);

macro_rules! payload_fields {
    ($($extra:expr),*) => {
        &[
            field("parent_hash", &HASH),
            field("fee_recipient", &ADDRESS),
            field("state_root", &HASH),
            field("receipts_root", &HASH),
            field("logs_bloom", &Ty::Fixed(256)),
            field("prev_randao", &HASH),
            field("block_number", &U64),
            field("gas_limit", &U64),
            field("gas_used", &U64),
            field("timestamp", &U64),
            field("extra_data", &EXTRA_DATA),
            field("base_fee_per_gas", &U256),
            field("block_hash", &HASH),
            field("transactions", &TXS),
            $($extra),*
        ]
    };
}

/// `ExecutionPayloadParis`.
pub static PAYLOAD_PARIS: Ty = Ty::Container("ExecutionPayloadParis", payload_fields!());
/// `ExecutionPayloadShanghai`.
pub static PAYLOAD_SHANGHAI: Ty = Ty::Container(
    "ExecutionPayloadShanghai",
    payload_fields!(field("withdrawals", &WITHDRAWALS)),
);
/// `ExecutionPayloadCancun` (= Prague = Osaka).
pub static PAYLOAD_CANCUN: Ty = Ty::Container(
    "ExecutionPayloadCancun",
    payload_fields!(
        field("withdrawals", &WITHDRAWALS),
        field("blob_gas_used", &U64),
        field("excess_blob_gas", &U64)
    ),
);
/// `ExecutionPayloadAmsterdam`.
pub static PAYLOAD_AMSTERDAM: Ty = Ty::Container(
    "ExecutionPayloadAmsterdam",
    payload_fields!(
        field("withdrawals", &WITHDRAWALS),
        field("blob_gas_used", &U64),
        field("excess_blob_gas", &U64),
        field("block_access_list", &BAL),
        field("slot_number", &U64)
    ),
);

/// `ExecutionPayload{Fork}`.
pub fn execution_payload(fork: Fork) -> &'static Ty {
    match fork {
        Fork::Paris => &PAYLOAD_PARIS,
        Fork::Shanghai => &PAYLOAD_SHANGHAI,
        Fork::Cancun | Fork::Prague | Fork::Osaka => &PAYLOAD_CANCUN,
        Fork::Amsterdam => &PAYLOAD_AMSTERDAM,
    }
}

static ENVELOPE_PARIS: Ty = Ty::Container(
    "ExecutionPayloadEnvelopeParis",
    &[field("payload", &PAYLOAD_PARIS)],
);
static ENVELOPE_SHANGHAI: Ty = Ty::Container(
    "ExecutionPayloadEnvelopeShanghai",
    &[field("payload", &PAYLOAD_SHANGHAI)],
);
static ENVELOPE_CANCUN: Ty = Ty::Container(
    "ExecutionPayloadEnvelopeCancun",
    &[
        field("payload", &PAYLOAD_CANCUN),
        field("parent_beacon_block_root", &HASH),
    ],
);
static ENVELOPE_PRAGUE: Ty = Ty::Container(
    "ExecutionPayloadEnvelopePrague",
    &[
        field("payload", &PAYLOAD_CANCUN),
        field("parent_beacon_block_root", &HASH),
        field("execution_requests", &REQUESTS),
    ],
);
static ENVELOPE_OSAKA: Ty = Ty::Container(
    "ExecutionPayloadEnvelopeOsaka",
    &[
        field("payload", &PAYLOAD_CANCUN),
        field("parent_beacon_block_root", &HASH),
        field("execution_requests", &REQUESTS),
    ],
);
static ENVELOPE_AMSTERDAM: Ty = Ty::Container(
    "ExecutionPayloadEnvelopeAmsterdam",
    &[
        field("payload", &PAYLOAD_AMSTERDAM),
        field("parent_beacon_block_root", &HASH),
        field("execution_requests", &REQUESTS),
    ],
);

/// `ExecutionPayloadEnvelope{Fork}`, the body of `POST /payloads`.
pub fn payload_envelope(fork: Fork) -> &'static Ty {
    match fork {
        Fork::Paris => &ENVELOPE_PARIS,
        Fork::Shanghai => &ENVELOPE_SHANGHAI,
        Fork::Cancun => &ENVELOPE_CANCUN,
        Fork::Prague => &ENVELOPE_PRAGUE,
        Fork::Osaka => &ENVELOPE_OSAKA,
        Fork::Amsterdam => &ENVELOPE_AMSTERDAM,
    }
}

const OPT_HASH: Ty = Ty::List(&HASH, 1);
const ERROR_STRING: Ty = Ty::Bytes(MAX_ERROR_BYTES);
const OPT_ERROR: Ty = Ty::List(&ERROR_STRING, 1);

/// `PayloadStatus` (fork-invariant), the answer of `POST /payloads`.
pub static PAYLOAD_STATUS: Ty = Ty::Container(
    "PayloadStatus",
    &[
        field("status", &Ty::Tag(4)),
        field("latest_valid_hash", &OPT_HASH),
        field("validation_error", &OPT_ERROR),
    ],
);

/// `ForkchoiceState` (fork-invariant).
pub static FORKCHOICE_STATE: Ty = Ty::Container(
    "ForkchoiceState",
    &[
        field("head_block_hash", &HASH),
        field("safe_block_hash", &HASH),
        field("finalized_block_hash", &HASH),
    ],
);

static ATTRIBUTES_PARIS: Ty = Ty::Container(
    "PayloadAttributesParis",
    &[
        field("timestamp", &U64),
        field("prev_randao", &HASH),
        field("suggested_fee_recipient", &ADDRESS),
    ],
);
static ATTRIBUTES_SHANGHAI: Ty = Ty::Container(
    "PayloadAttributesShanghai",
    &[
        field("timestamp", &U64),
        field("prev_randao", &HASH),
        field("suggested_fee_recipient", &ADDRESS),
        field("withdrawals", &WITHDRAWALS),
    ],
);
static ATTRIBUTES_CANCUN: Ty = Ty::Container(
    "PayloadAttributesCancun",
    &[
        field("timestamp", &U64),
        field("prev_randao", &HASH),
        field("suggested_fee_recipient", &ADDRESS),
        field("withdrawals", &WITHDRAWALS),
        field("parent_beacon_block_root", &HASH),
    ],
);
static ATTRIBUTES_AMSTERDAM: Ty = Ty::Container(
    "PayloadAttributesAmsterdam",
    &[
        field("timestamp", &U64),
        field("prev_randao", &HASH),
        field("suggested_fee_recipient", &ADDRESS),
        field("withdrawals", &WITHDRAWALS),
        field("parent_beacon_block_root", &HASH),
        field("slot_number", &U64),
        field("target_gas_limit", &U64),
    ],
);

/// `PayloadAttributes{Fork}`.
pub fn payload_attributes(fork: Fork) -> &'static Ty {
    match fork {
        Fork::Paris => &ATTRIBUTES_PARIS,
        Fork::Shanghai => &ATTRIBUTES_SHANGHAI,
        Fork::Cancun | Fork::Prague | Fork::Osaka => &ATTRIBUTES_CANCUN,
        Fork::Amsterdam => &ATTRIBUTES_AMSTERDAM,
    }
}

macro_rules! forkchoice_update {
    ($name:literal, $attrs:expr) => {
        Ty::Container(
            $name,
            &[
                field("forkchoice_state", &FORKCHOICE_STATE),
                field("payload_attributes", &Ty::List($attrs, 1)),
            ],
        )
    };
}
static FCU_PARIS: Ty = forkchoice_update!("ForkchoiceUpdateParis", &ATTRIBUTES_PARIS);
static FCU_SHANGHAI: Ty = forkchoice_update!("ForkchoiceUpdateShanghai", &ATTRIBUTES_SHANGHAI);
static FCU_CANCUN: Ty = forkchoice_update!("ForkchoiceUpdateCancun", &ATTRIBUTES_CANCUN);
static FCU_AMSTERDAM: Ty = Ty::Container(
    "ForkchoiceUpdateAmsterdam",
    &[
        field("forkchoice_state", &FORKCHOICE_STATE),
        field("payload_attributes", &Ty::List(&ATTRIBUTES_AMSTERDAM, 1)),
        field("custody_columns", &Ty::List(&BITVECTOR_128, 1)),
    ],
);

/// `ForkchoiceUpdate{Fork}`, the body of `POST /forkchoice`.
pub fn forkchoice_update(fork: Fork) -> &'static Ty {
    match fork {
        Fork::Paris => &FCU_PARIS,
        Fork::Shanghai => &FCU_SHANGHAI,
        Fork::Cancun | Fork::Prague | Fork::Osaka => &FCU_CANCUN,
        Fork::Amsterdam => &FCU_AMSTERDAM,
    }
}

/// `ForkchoiceUpdateResponse` (fork-invariant).
pub static FORKCHOICE_RESPONSE: Ty = Ty::Container(
    "ForkchoiceUpdateResponse",
    &[
        field("payload_status", &PAYLOAD_STATUS),
        field("payload_id", &Ty::List(&Ty::Fixed(8), 1)),
    ],
);

const COMMITMENTS: Ty = Ty::List(&BYTES48, MAX_BLOB_COMMITMENTS_PER_BLOCK);
const BLOB: Ty = Ty::Fixed(BYTES_PER_BLOB);
const BLOBS: Ty = Ty::List(&BLOB, MAX_BLOB_COMMITMENTS_PER_BLOCK);

/// `BlobsBundleV1`.
pub static BLOBS_BUNDLE_V1: Ty = Ty::Container(
    "BlobsBundleV1",
    &[
        field("commitments", &COMMITMENTS),
        field("proofs", &COMMITMENTS),
        field("blobs", &BLOBS),
    ],
);
/// `BlobsBundleV2`.
pub static BLOBS_BUNDLE_V2: Ty = Ty::Container(
    "BlobsBundleV2",
    &[
        field("commitments", &COMMITMENTS),
        field(
            "proofs",
            &Ty::List(
                &BYTES48,
                MAX_BLOB_COMMITMENTS_PER_BLOCK * CELLS_PER_EXT_BLOB,
            ),
        ),
        field("blobs", &BLOBS),
    ],
);

static BUILT_PARIS: Ty = Ty::Container(
    "BuiltPayloadParis",
    &[
        field("payload", &PAYLOAD_PARIS),
        field("block_value", &U256),
    ],
);
static BUILT_SHANGHAI: Ty = Ty::Container(
    "BuiltPayloadShanghai",
    &[
        field("payload", &PAYLOAD_SHANGHAI),
        field("block_value", &U256),
    ],
);
static BUILT_CANCUN: Ty = Ty::Container(
    "BuiltPayloadCancun",
    &[
        field("payload", &PAYLOAD_CANCUN),
        field("block_value", &U256),
        field("blobs_bundle", &BLOBS_BUNDLE_V1),
        field("should_override_builder", &Ty::Bool),
    ],
);
static BUILT_PRAGUE: Ty = Ty::Container(
    "BuiltPayloadPrague",
    &[
        field("payload", &PAYLOAD_CANCUN),
        field("block_value", &U256),
        field("blobs_bundle", &BLOBS_BUNDLE_V1),
        field("execution_requests", &REQUESTS),
        field("should_override_builder", &Ty::Bool),
    ],
);
static BUILT_OSAKA: Ty = Ty::Container(
    "BuiltPayloadOsaka",
    &[
        field("payload", &PAYLOAD_CANCUN),
        field("block_value", &U256),
        field("blobs_bundle", &BLOBS_BUNDLE_V2),
        field("execution_requests", &REQUESTS),
        field("should_override_builder", &Ty::Bool),
    ],
);
static BUILT_AMSTERDAM: Ty = Ty::Container(
    "BuiltPayloadAmsterdam",
    &[
        field("payload", &PAYLOAD_AMSTERDAM),
        field("block_value", &U256),
        field("blobs_bundle", &BLOBS_BUNDLE_V2),
        field("execution_requests", &REQUESTS),
        field("should_override_builder", &Ty::Bool),
    ],
);

/// `BuiltPayload{Fork}`, the answer of `GET /payloads/{id}`.
pub fn built_payload(fork: Fork) -> &'static Ty {
    match fork {
        Fork::Paris => &BUILT_PARIS,
        Fork::Shanghai => &BUILT_SHANGHAI,
        Fork::Cancun => &BUILT_CANCUN,
        Fork::Prague => &BUILT_PRAGUE,
        Fork::Osaka => &BUILT_OSAKA,
        Fork::Amsterdam => &BUILT_AMSTERDAM,
    }
}

/// `BodiesByHashRequest`.
pub static BODIES_BY_HASH_REQUEST: Ty = Ty::Container(
    "BodiesByHashRequest",
    &[field("block_hashes", &Ty::List(&HASH, MAX_BODIES_REQUEST))],
);

static BODY_PARIS: Ty = Ty::Container("ExecutionPayloadBodyParis", &[field("transactions", &TXS)]);
static BODY_SHANGHAI: Ty = Ty::Container(
    "ExecutionPayloadBodyShanghai",
    &[
        field("transactions", &TXS),
        field("withdrawals", &WITHDRAWALS),
    ],
);
static BODY_AMSTERDAM: Ty = Ty::Container(
    "ExecutionPayloadBodyAmsterdam",
    &[
        field("transactions", &TXS),
        field("withdrawals", &WITHDRAWALS),
        field("block_access_list", &BAL),
    ],
);

/// `ExecutionPayloadBody{Fork}`.
pub fn payload_body(fork: Fork) -> &'static Ty {
    match fork {
        Fork::Paris => &BODY_PARIS,
        Fork::Shanghai | Fork::Cancun | Fork::Prague | Fork::Osaka => &BODY_SHANGHAI,
        Fork::Amsterdam => &BODY_AMSTERDAM,
    }
}

macro_rules! bodies_response {
    ($name:literal, $body:expr) => {
        Ty::Container(
            $name,
            &[field(
                "entries",
                &Ty::List(
                    &Ty::Container(
                        "BodyEntry",
                        &[field("available", &Ty::Bool), field("body", $body)],
                    ),
                    MAX_BODIES_REQUEST,
                ),
            )],
        )
    };
}
static BODIES_PARIS: Ty = bodies_response!("BodiesResponseParis", &BODY_PARIS);
static BODIES_SHANGHAI: Ty = bodies_response!("BodiesResponseShanghai", &BODY_SHANGHAI);
static BODIES_AMSTERDAM: Ty = bodies_response!("BodiesResponseAmsterdam", &BODY_AMSTERDAM);

/// `BodiesResponse` with the body of `fork`.
pub fn bodies_response(fork: Fork) -> &'static Ty {
    match fork {
        Fork::Paris => &BODIES_PARIS,
        Fork::Shanghai | Fork::Cancun | Fork::Prague | Fork::Osaka => &BODIES_SHANGHAI,
        Fork::Amsterdam => &BODIES_AMSTERDAM,
    }
}

const VERSIONED_HASHES: Ty = Ty::List(&HASH, MAX_BLOBS_REQUEST);
/// `BlobsV1Request` (= V2 = V3).
pub static BLOBS_REQUEST: Ty = Ty::Container(
    "BlobsV1Request",
    &[field("versioned_hashes", &VERSIONED_HASHES)],
);
/// `BlobsV4Request`.
pub static BLOBS_V4_REQUEST: Ty = Ty::Container(
    "BlobsV4Request",
    &[
        field("versioned_hashes", &VERSIONED_HASHES),
        field("indices_bitarray", &BITVECTOR_128),
    ],
);

/// The request body of `POST /blobs/v{revision}`.
pub fn blobs_request(revision: u8) -> &'static Ty {
    if revision >= 4 {
        &BLOBS_V4_REQUEST
    } else {
        &BLOBS_REQUEST
    }
}

static BLOB_AND_PROOF_V1: Ty = Ty::Container(
    "BlobAndProofV1",
    &[field("blob", &BLOB), field("proof", &BYTES48)],
);
static BLOB_AND_PROOF_V2: Ty = Ty::Container(
    "BlobAndProofV2",
    &[
        field("blob", &BLOB),
        field("proofs", &Ty::List(&BYTES48, CELLS_PER_EXT_BLOB)),
    ],
);
static BLOB_CELLS_AND_PROOFS: Ty = Ty::Container(
    "BlobCellsAndProofs",
    &[
        field(
            "blob_cells",
            &Ty::List(&Ty::List(&Ty::Fixed(BYTES_PER_CELL), 1), CELLS_PER_EXT_BLOB),
        ),
        field(
            "proofs",
            &Ty::List(&Ty::List(&BYTES48, 1), CELLS_PER_EXT_BLOB),
        ),
    ],
);

macro_rules! blobs_response {
    ($name:literal, $entry:literal, $contents:expr) => {
        Ty::Container(
            $name,
            &[field(
                "entries",
                &Ty::List(
                    &Ty::Container(
                        $entry,
                        &[field("available", &Ty::Bool), field("contents", $contents)],
                    ),
                    MAX_BLOBS_REQUEST,
                ),
            )],
        )
    };
}
static BLOBS_V1_RESPONSE: Ty =
    blobs_response!("BlobsV1Response", "BlobV1Entry", &BLOB_AND_PROOF_V1);
static BLOBS_V2_RESPONSE: Ty =
    blobs_response!("BlobsV2Response", "BlobV2Entry", &BLOB_AND_PROOF_V2);
static BLOBS_V3_RESPONSE: Ty =
    blobs_response!("BlobsV3Response", "BlobV2Entry", &BLOB_AND_PROOF_V2);
static BLOBS_V4_RESPONSE: Ty =
    blobs_response!("BlobsV4Response", "BlobV4Entry", &BLOB_CELLS_AND_PROOFS);

/// The `200` body of `POST /blobs/v{revision}`.
pub fn blobs_response(revision: u8) -> &'static Ty {
    match revision {
        1 => &BLOBS_V1_RESPONSE,
        2 => &BLOBS_V2_RESPONSE,
        3 => &BLOBS_V3_RESPONSE,
        _ => &BLOBS_V4_RESPONSE,
    }
}

/// The SSZ container of a message `kind` of `method` under `fork` (`None` for the messages
/// with no SSZ body: a payload id or a range travels in the URL, capabilities and identity are
/// JSON). The one place a message kind is matched to its schema for callers outside the codec.
pub fn of_message(
    method: &crate::MethodSpec,
    kind: crate::MessageKind,
    fork: Fork,
) -> Option<&'static Ty> {
    use crate::MessageKind as K;
    Some(match kind {
        K::NewPayload => payload_envelope(fork),
        K::PayloadStatus => &PAYLOAD_STATUS,
        K::Forkchoice => forkchoice_update(fork),
        K::ForkchoiceResponse => &FORKCHOICE_RESPONSE,
        K::BuiltPayload => built_payload(fork),
        K::BodiesByHashRequest => &BODIES_BY_HASH_REQUEST,
        K::Bodies => bodies_response(fork),
        K::BlobsRequest => blobs_request(method.version),
        K::Blobs => blobs_response(method.version),
        K::PayloadId | K::BodiesByRangeRequest | K::Capabilities | K::ClientVersion => {
            return None;
        }
    })
}
