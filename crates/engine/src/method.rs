//! The one table that maps every JSON-RPC Engine API method to its REST-SSZ resource.
//!
//! Each row of [`METHODS`] names a JSON-RPC method and version, the forks it serves, the REST
//! resource that replaces it (HTTP method, path, fork-scoped or independently versioned) and
//! the request and response messages on both sides. Routing, translation, recording and the
//! driver read this table; none of them keeps its own list. What the messages look like on the
//! wire lives in [`crate::message`]; the SSZ containers per fork in [`crate::ssz`].
//!
//! Sources: `engine-rest-ssz.md` § Mapping from old → new and § Resource model, and the
//! JSON-RPC method list per fork of ethereum/execution-apis `src/engine/*.md`.

use std::fmt;

use crate::{
    error::{Error, Result},
    fork::Fork,
};

/// The base path of every REST-SSZ resource.
pub const REST_BASE: &str = "/engine/v1";

/// The request header that selects the fork of a fork-scoped REST call.
pub const FORK_HEADER: &str = "Eth-Execution-Version";

/// The request header a CL identifies itself with on REST calls.
pub const CLIENT_VERSION_HEADER: &str = "X-Engine-Client-Version";

/// Content type of SSZ bodies.
pub const SSZ_CONTENT_TYPE: &str = "application/octet-stream";

/// Content type of JSON bodies (JSON-RPC and the REST diagnostic endpoints).
pub const JSON_CONTENT_TYPE: &str = "application/json";

/// Content type of REST error bodies.
pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

/// A family of methods: what the call does, whatever its version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// `engine_newPayloadVn`.
    NewPayload,
    /// `engine_forkchoiceUpdatedVn`.
    ForkchoiceUpdated,
    /// `engine_getPayloadVn`.
    GetPayload,
    /// `engine_getPayloadBodiesByHashVn`.
    BodiesByHash,
    /// `engine_getPayloadBodiesByRangeVn`.
    BodiesByRange,
    /// `engine_getBlobsVn`.
    GetBlobs,
    /// `engine_exchangeCapabilities`.
    ExchangeCapabilities,
    /// `engine_getClientVersionV1`.
    GetClientVersion,
}

/// The HTTP method of a REST resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HttpMethod {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
}

impl HttpMethod {
    /// The method as it appears on the request line.
    pub const fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
        }
    }
}

/// How a REST resource chooses the shape of its bodies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    /// By the `Eth-Execution-Version` header.
    ForkScoped,
    /// By a `/vN` revision in the path (the header is ignored).
    Versioned,
    /// Neither: one shape for all forks (JSON diagnostic endpoints).
    Unscoped,
}

/// A REST-SSZ resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resource {
    /// `POST /engine/v1/payloads`.
    SubmitPayload,
    /// `GET /engine/v1/payloads/{payloadId}`.
    GetPayload,
    /// `POST /engine/v1/forkchoice`.
    Forkchoice,
    /// `POST /engine/v1/bodies/hash`.
    BodiesByHash,
    /// `GET /engine/v1/bodies?from=N&count=M`.
    BodiesByRange,
    /// `POST /engine/v1/blobs/vN`.
    Blobs(u8),
    /// `GET /engine/v1/capabilities`.
    Capabilities,
    /// `GET /engine/v1/identity`.
    Identity,
}

impl Resource {
    /// The HTTP method of the resource.
    pub const fn http_method(self) -> HttpMethod {
        match self {
            Resource::GetPayload
            | Resource::BodiesByRange
            | Resource::Capabilities
            | Resource::Identity => HttpMethod::Get,
            _ => HttpMethod::Post,
        }
    }

    /// How the resource picks its body shapes.
    pub const fn scope(self) -> Scope {
        match self {
            Resource::Blobs(_) => Scope::Versioned,
            Resource::Capabilities | Resource::Identity => Scope::Unscoped,
            _ => Scope::ForkScoped,
        }
    }

    /// A stable short name, used in records, metrics and errors (`payloads`, `blobs/v2`, …).
    pub const fn name(self) -> &'static str {
        match self {
            Resource::SubmitPayload => "payloads",
            Resource::GetPayload => "payloads/{payloadId}",
            Resource::Forkchoice => "forkchoice",
            Resource::BodiesByHash => "bodies/hash",
            Resource::BodiesByRange => "bodies",
            Resource::Blobs(1) => "blobs/v1",
            Resource::Blobs(2) => "blobs/v2",
            Resource::Blobs(3) => "blobs/v3",
            Resource::Blobs(4) => "blobs/v4",
            Resource::Blobs(_) => "blobs/v?",
            Resource::Capabilities => "capabilities",
            Resource::Identity => "identity",
        }
    }

    /// True when the REST bodies of this resource are JSON rather than SSZ.
    pub const fn is_json(self) -> bool {
        matches!(self, Resource::Capabilities | Resource::Identity)
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}/{}",
            self.http_method().as_str(),
            REST_BASE,
            self.name()
        )
    }
}

/// The messages that cross the link, named as `sszgate convert --message` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MessageKind {
    /// newPayload params / `ExecutionPayloadEnvelope`.
    NewPayload,
    /// newPayload result / `PayloadStatus`.
    PayloadStatus,
    /// forkchoiceUpdated params / `ForkchoiceUpdate`.
    Forkchoice,
    /// forkchoiceUpdated result / `ForkchoiceUpdateResponse`.
    ForkchoiceResponse,
    /// getPayload params (a payload id, in the REST path).
    PayloadId,
    /// getPayload result / `BuiltPayload`.
    BuiltPayload,
    /// getPayloadBodiesByHash params / `BodiesByHashRequest`.
    BodiesByHashRequest,
    /// getPayloadBodiesByRange params (`from`, `count`, in the REST query).
    BodiesByRangeRequest,
    /// getPayloadBodies result / `BodiesResponse`.
    Bodies,
    /// getBlobs params / `BlobsVnRequest`.
    BlobsRequest,
    /// getBlobs result / `BlobsVnResponse` (or 204).
    Blobs,
    /// exchangeCapabilities params and result / the capabilities document.
    Capabilities,
    /// getClientVersionV1 params and result / `ClientVersion[]`.
    ClientVersion,
}

impl MessageKind {
    /// Every message kind.
    pub const ALL: [MessageKind; 13] = [
        MessageKind::NewPayload,
        MessageKind::PayloadStatus,
        MessageKind::Forkchoice,
        MessageKind::ForkchoiceResponse,
        MessageKind::PayloadId,
        MessageKind::BuiltPayload,
        MessageKind::BodiesByHashRequest,
        MessageKind::BodiesByRangeRequest,
        MessageKind::Bodies,
        MessageKind::BlobsRequest,
        MessageKind::Blobs,
        MessageKind::Capabilities,
        MessageKind::ClientVersion,
    ];

    /// The command-line name of the message.
    pub const fn name(self) -> &'static str {
        match self {
            MessageKind::NewPayload => "new-payload",
            MessageKind::PayloadStatus => "payload-status",
            MessageKind::Forkchoice => "forkchoice",
            MessageKind::ForkchoiceResponse => "forkchoice-response",
            MessageKind::PayloadId => "payload-id",
            MessageKind::BuiltPayload => "built-payload",
            MessageKind::BodiesByHashRequest => "bodies-by-hash",
            MessageKind::BodiesByRangeRequest => "bodies-by-range",
            MessageKind::Bodies => "bodies",
            MessageKind::BlobsRequest => "blobs-request",
            MessageKind::Blobs => "blobs-response",
            MessageKind::Capabilities => "capabilities",
            MessageKind::ClientVersion => "client-version",
        }
    }

    /// Parses a command-line name.
    pub fn from_name(name: &str) -> Option<MessageKind> {
        MessageKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
    }

    /// True for the messages whose JSON string values are all hex DATA or QUANTITY (no status
    /// words, error texts or client names).
    pub const fn is_all_hex(self) -> bool {
        !matches!(
            self,
            MessageKind::PayloadStatus
                | MessageKind::ForkchoiceResponse
                | MessageKind::Capabilities
                | MessageKind::ClientVersion
        )
    }

    /// True for the messages a CL sends; false for the answers.
    pub const fn is_request(self) -> bool {
        matches!(
            self,
            MessageKind::NewPayload
                | MessageKind::Forkchoice
                | MessageKind::PayloadId
                | MessageKind::BodiesByHashRequest
                | MessageKind::BodiesByRangeRequest
                | MessageKind::BlobsRequest
        )
    }
}

impl fmt::Display for MessageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a method's answer carries blobs: what the blob fast paths and the recorder read from
/// the table instead of testing method versions. Whether the proofs are one per blob or 128
/// cell proofs per blob is the row's fork's ([`Fork::has_cell_proofs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AnswerBlobs {
    /// No blobs.
    None,
    /// The `blobsBundle` of a built payload (getPayloadV3 on): commitments, proofs and a
    /// `blobs` array.
    Bundle,
    /// One `{blob, proof}` or `{blob, proofs}` entry per versioned hash asked for
    /// (getBlobsV1..V3).
    Entries {
        /// Whether a missing blob is a `null` entry (V1, V3).
        null_entries: bool,
        /// Whether the whole answer may be `null`: not every blob is available (V2, V3).
        null_answer: bool,
    },
    /// Cells and their proofs per blob, for the columns asked for (getBlobsV4).
    Cells,
}

/// One row of the method table.
#[derive(Debug, PartialEq, Eq)]
pub struct MethodSpec {
    /// The JSON-RPC method name, e.g. `engine_newPayloadV4`.
    pub name: &'static str,
    /// What the method does.
    pub family: Family,
    /// The method version (`Vn`), 1 for the unversioned methods.
    pub version: u8,
    /// The forks whose calls this method serves, oldest first.
    pub forks: &'static [Fork],
    /// The REST resource that replaces it.
    pub resource: Resource,
    /// The message of the request.
    pub request: MessageKind,
    /// The message of the result.
    pub response: MessageKind,
    /// Where the JSON-RPC method is specified (execution-apis `src/engine/`).
    pub spec: &'static str,
    /// Where the answer carries blobs.
    pub blobs: AnswerBlobs,
}

impl MethodSpec {
    /// True when this method serves calls of `fork`.
    pub fn serves(&self, fork: Fork) -> bool {
        self.forks.contains(&fork)
    }

    /// Checks that this method serves `fork`, naming both when not. Methods that are not
    /// fork-scoped (blobs, capabilities, identity) serve every fork.
    pub fn check_fork(&'static self, fork: Fork) -> Result<()> {
        if self.resource.scope() != Scope::ForkScoped || self.serves(fork) {
            return Ok(());
        }
        Err(Error::ForkNotSupported {
            method: self.name,
            fork,
            serves: self
                .forks
                .iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    /// The newest fork this method serves (the default fork for a translation of it).
    pub fn latest_fork(&self) -> Fork {
        *self.forks.last().expect("every method serves a fork")
    }

    /// True when the answer's blobs come with 128 cell proofs each (EIP-7594), not one proof.
    pub fn cell_proofs(&self) -> bool {
        self.latest_fork().has_cell_proofs()
    }

    /// True when the message carries EIP-7685 execution requests (newPayload and getPayload
    /// from Prague on).
    pub fn has_requests(&self) -> bool {
        self.latest_fork().has_requests()
    }
}

use Fork::*;

const PARIS_ONLY: &[Fork] = &[Paris];
const TO_SHANGHAI: &[Fork] = &[Paris, Shanghai];
const CANCUN_ONLY: &[Fork] = &[Cancun];
const CANCUN_TO_OSAKA: &[Fork] = &[Cancun, Prague, Osaka];
const PRAGUE_ONLY: &[Fork] = &[Prague];
const PRAGUE_OSAKA: &[Fork] = &[Prague, Osaka];
const OSAKA_ONLY: &[Fork] = &[Osaka];
const AMSTERDAM_ONLY: &[Fork] = &[Amsterdam];
const TO_OSAKA: &[Fork] = &[Paris, Shanghai, Cancun, Prague, Osaka];
const CANCUN_PRAGUE: &[Fork] = &[Cancun, Prague];
const ALL_FORKS: &[Fork] = &Fork::ALL;

macro_rules! row {
    ($name:literal, $family:ident, $version:literal, $forks:expr, $resource:expr, $req:ident => $resp:ident, $spec:literal) => {
        row!($name, $family, $version, $forks, $resource, $req => $resp, $spec, AnswerBlobs::None)
    };
    ($name:literal, $family:ident, $version:literal, $forks:expr, $resource:expr, $req:ident => $resp:ident, $spec:literal, $blobs:expr) => {
        MethodSpec {
            name: $name,
            family: Family::$family,
            version: $version,
            forks: $forks,
            resource: $resource,
            request: MessageKind::$req,
            response: MessageKind::$resp,
            spec: $spec,
            blobs: $blobs,
        }
    };
}

const BUNDLE: AnswerBlobs = AnswerBlobs::Bundle;

/// The method table: every JSON-RPC Engine API method with its REST-SSZ resource.
///
/// Where two versions serve the same fork (`newPayloadV1`/`V2` for Paris), translation from
/// REST picks the newest (see [`for_resource`]); the older row still tells how a JSON-RPC
/// caller of that version is answered.
pub static METHODS: [MethodSpec; 25] = [
    row!("engine_newPayloadV1", NewPayload, 1, PARIS_ONLY, Resource::SubmitPayload, NewPayload => PayloadStatus, "paris.md#engine_newpayloadv1"),
    row!("engine_newPayloadV2", NewPayload, 2, TO_SHANGHAI, Resource::SubmitPayload, NewPayload => PayloadStatus, "shanghai.md#engine_newpayloadv2"),
    row!("engine_newPayloadV3", NewPayload, 3, CANCUN_ONLY, Resource::SubmitPayload, NewPayload => PayloadStatus, "cancun.md#engine_newpayloadv3"),
    row!("engine_newPayloadV4", NewPayload, 4, PRAGUE_OSAKA, Resource::SubmitPayload, NewPayload => PayloadStatus, "prague.md#engine_newpayloadv4"),
    row!("engine_newPayloadV5", NewPayload, 5, AMSTERDAM_ONLY, Resource::SubmitPayload, NewPayload => PayloadStatus, "amsterdam.md#engine_newpayloadv5"),
    row!("engine_forkchoiceUpdatedV1", ForkchoiceUpdated, 1, PARIS_ONLY, Resource::Forkchoice, Forkchoice => ForkchoiceResponse, "paris.md#engine_forkchoiceupdatedv1"),
    row!("engine_forkchoiceUpdatedV2", ForkchoiceUpdated, 2, TO_SHANGHAI, Resource::Forkchoice, Forkchoice => ForkchoiceResponse, "shanghai.md#engine_forkchoiceupdatedv2"),
    row!("engine_forkchoiceUpdatedV3", ForkchoiceUpdated, 3, CANCUN_TO_OSAKA, Resource::Forkchoice, Forkchoice => ForkchoiceResponse, "cancun.md#engine_forkchoiceupdatedv3"),
    row!("engine_forkchoiceUpdatedV4", ForkchoiceUpdated, 4, AMSTERDAM_ONLY, Resource::Forkchoice, Forkchoice => ForkchoiceResponse, "amsterdam.md#engine_forkchoiceupdatedv4"),
    row!("engine_getPayloadV1", GetPayload, 1, PARIS_ONLY, Resource::GetPayload, PayloadId => BuiltPayload, "paris.md#engine_getpayloadv1"),
    row!("engine_getPayloadV2", GetPayload, 2, TO_SHANGHAI, Resource::GetPayload, PayloadId => BuiltPayload, "shanghai.md#engine_getpayloadv2"),
    row!("engine_getPayloadV3", GetPayload, 3, CANCUN_ONLY, Resource::GetPayload, PayloadId => BuiltPayload, "cancun.md#engine_getpayloadv3", BUNDLE),
    row!("engine_getPayloadV4", GetPayload, 4, PRAGUE_ONLY, Resource::GetPayload, PayloadId => BuiltPayload, "prague.md#engine_getpayloadv4", BUNDLE),
    row!("engine_getPayloadV5", GetPayload, 5, OSAKA_ONLY, Resource::GetPayload, PayloadId => BuiltPayload, "osaka.md#engine_getpayloadv5", BUNDLE),
    row!("engine_getPayloadV6", GetPayload, 6, AMSTERDAM_ONLY, Resource::GetPayload, PayloadId => BuiltPayload, "amsterdam.md#engine_getpayloadv6", BUNDLE),
    row!("engine_getPayloadBodiesByHashV1", BodiesByHash, 1, TO_OSAKA, Resource::BodiesByHash, BodiesByHashRequest => Bodies, "shanghai.md#engine_getpayloadbodiesbyhashv1"),
    row!("engine_getPayloadBodiesByHashV2", BodiesByHash, 2, AMSTERDAM_ONLY, Resource::BodiesByHash, BodiesByHashRequest => Bodies, "amsterdam.md#engine_getpayloadbodiesbyhashv2"),
    row!("engine_getPayloadBodiesByRangeV1", BodiesByRange, 1, TO_OSAKA, Resource::BodiesByRange, BodiesByRangeRequest => Bodies, "shanghai.md#engine_getpayloadbodiesbyrangev1"),
    row!("engine_getPayloadBodiesByRangeV2", BodiesByRange, 2, AMSTERDAM_ONLY, Resource::BodiesByRange, BodiesByRangeRequest => Bodies, "amsterdam.md#engine_getpayloadbodiesbyrangev2"),
    row!("engine_getBlobsV1", GetBlobs, 1, CANCUN_PRAGUE, Resource::Blobs(1), BlobsRequest => Blobs, "cancun.md#engine_getblobsv1", AnswerBlobs::Entries { null_entries: true, null_answer: false }),
    row!("engine_getBlobsV2", GetBlobs, 2, OSAKA_ONLY, Resource::Blobs(2), BlobsRequest => Blobs, "osaka.md#engine_getblobsv2", AnswerBlobs::Entries { null_entries: false, null_answer: true }),
    row!("engine_getBlobsV3", GetBlobs, 3, OSAKA_ONLY, Resource::Blobs(3), BlobsRequest => Blobs, "osaka.md#engine_getblobsv3", AnswerBlobs::Entries { null_entries: true, null_answer: true }),
    row!("engine_getBlobsV4", GetBlobs, 4, AMSTERDAM_ONLY, Resource::Blobs(4), BlobsRequest => Blobs, "amsterdam.md#engine_getblobsv4", AnswerBlobs::Cells),
    row!("engine_exchangeCapabilities", ExchangeCapabilities, 1, ALL_FORKS, Resource::Capabilities, Capabilities => Capabilities, "common.md#engine_exchangecapabilities"),
    row!("engine_getClientVersionV1", GetClientVersion, 1, ALL_FORKS, Resource::Identity, ClientVersion => ClientVersion, "identification.md#engine_getclientversionv1"),
];

/// The row of a JSON-RPC method name.
pub fn by_name(name: &str) -> Result<&'static MethodSpec> {
    METHODS
        .iter()
        .find(|m| m.name == name)
        .ok_or_else(|| Error::UnknownMethod(name.to_string()))
}

/// The method a REST call of `resource` under `fork` translates to: the newest version that
/// serves the fork. `fork` is ignored for resources that are not fork-scoped.
pub fn for_resource(resource: Resource, fork: Fork) -> Result<&'static MethodSpec> {
    let rows = METHODS.iter().filter(|m| m.resource == resource);
    let chosen = match resource.scope() {
        Scope::ForkScoped => rows.filter(|m| m.serves(fork)).max_by_key(|m| m.version),
        Scope::Versioned | Scope::Unscoped => rows.max_by_key(|m| m.version),
    };
    chosen.ok_or_else(|| Error::ForkNotSupported {
        method: resource.name(),
        fork,
        serves: "no fork".to_string(),
    })
}

/// The newest method of `family` that serves `fork` (what a CL of that fork calls).
pub fn for_fork(family: Family, fork: Fork) -> Option<&'static MethodSpec> {
    METHODS
        .iter()
        .filter(|m| m.family == family && m.forks.contains(&fork))
        .max_by_key(|m| m.version)
}

/// A REST request line resolved against the resources: which resource, and the parameters
/// carried in the path or query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// The resource addressed.
    pub resource: Resource,
    /// The `{payloadId}` path segment of `GET /payloads/{payloadId}`, decoded.
    pub payload_id: Option<[u8; 8]>,
    /// `from` and `count` of `GET /bodies`.
    pub range: Option<(u64, u64)>,
}

impl Route {
    /// Resolves an HTTP method and a request target (path with optional `?query`).
    ///
    /// Errors say which part is wrong: an unknown path is `method-not-found`; a malformed
    /// payload id or range query is `invalid-request`, as the spec's path validation requires.
    pub fn parse(method: &str, target: &str) -> Result<Route> {
        let not_found = || Error::NoSuchResource {
            method: method.to_string(),
            path: target.to_string(),
        };
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let rest = path
            .strip_prefix(REST_BASE)
            .and_then(|p| p.strip_prefix('/'))
            .ok_or_else(not_found)?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let resource = match rest {
            "payloads" => Resource::SubmitPayload,
            "forkchoice" => Resource::Forkchoice,
            "bodies/hash" => Resource::BodiesByHash,
            "bodies" => Resource::BodiesByRange,
            "blobs/v1" => Resource::Blobs(1),
            "blobs/v2" => Resource::Blobs(2),
            "blobs/v3" => Resource::Blobs(3),
            "blobs/v4" => Resource::Blobs(4),
            "capabilities" => Resource::Capabilities,
            "identity" => Resource::Identity,
            other if other.starts_with("payloads/") => Resource::GetPayload,
            _ => return Err(not_found()),
        };
        if resource.http_method().as_str() != method {
            return Err(not_found());
        }
        let mut route = Route {
            resource,
            payload_id: None,
            range: None,
        };
        match resource {
            Resource::GetPayload => {
                let segment = &rest["payloads/".len()..];
                route.payload_id = Some(parse_payload_id(segment)?);
            }
            Resource::BodiesByRange => route.range = Some(parse_range(query)?),
            _ => {}
        }
        Ok(route)
    }

    /// The request target (path and query) of this route.
    pub fn target(&self) -> String {
        match (self.resource, self.payload_id, self.range) {
            (Resource::GetPayload, Some(id), _) => {
                format!("{REST_BASE}/payloads/{}", const_hex::encode_prefixed(id))
            }
            (Resource::BodiesByRange, _, Some((from, count))) => {
                format!("{REST_BASE}/bodies?from={from}&count={count}")
            }
            (resource, _, _) => format!("{REST_BASE}/{}", resource.name()),
        }
    }
}

fn parse_payload_id(segment: &str) -> Result<[u8; 8]> {
    let bad = |detail: String| Error::BadRequest {
        resource: "payloads/{payloadId}",
        detail,
    };
    let hex = segment
        .strip_prefix("0x")
        .ok_or_else(|| bad(format!("payload id {segment:?} must be 0x-prefixed hex")))?;
    if hex.len() != 16 {
        return Err(bad(format!(
            "payload id {segment:?} must be 8 bytes (16 hex digits), got {} digits",
            hex.len()
        )));
    }
    let mut id = [0u8; 8];
    const_hex::decode_to_slice(hex, &mut id)
        .map_err(|e| bad(format!("payload id {segment:?} is not hex: {e}")))?;
    Ok(id)
}

fn parse_range(query: &str) -> Result<(u64, u64)> {
    let bad = |detail: String| Error::BadRequest {
        resource: "bodies",
        detail,
    };
    let (mut from, mut count) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| bad(format!("{key}={value:?} is not a decimal u64")))
        };
        match key {
            "from" => from = Some(number()?),
            "count" => count = Some(number()?),
            _ => return Err(bad(format!("unknown query parameter {key:?}"))),
        }
    }
    match (from, count) {
        (Some(from), Some(count)) => Ok((from, count)),
        _ => Err(bad(format!(
            "query {query:?} needs both from=N and count=M"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_covers_every_method_of_the_issue() {
        let mut expected = Vec::new();
        expected.extend((1..=5).map(|v| format!("engine_newPayloadV{v}")));
        expected.extend((1..=4).map(|v| format!("engine_forkchoiceUpdatedV{v}")));
        expected.extend((1..=6).map(|v| format!("engine_getPayloadV{v}")));
        expected.extend((1..=2).map(|v| format!("engine_getPayloadBodiesByHashV{v}")));
        expected.extend((1..=2).map(|v| format!("engine_getPayloadBodiesByRangeV{v}")));
        expected.extend((1..=4).map(|v| format!("engine_getBlobsV{v}")));
        expected.push("engine_exchangeCapabilities".into());
        expected.push("engine_getClientVersionV1".into());
        let names: Vec<_> = METHODS.iter().map(|m| m.name.to_string()).collect();
        assert_eq!(names, expected);
        for m in &METHODS {
            assert!(
                m.name.ends_with(&format!("V{}", m.version))
                    || m.family == Family::ExchangeCapabilities
            );
            assert!(!m.forks.is_empty());
        }
    }

    #[test]
    fn where_answers_carry_blobs_agrees_with_the_families_and_forks() {
        for m in &METHODS {
            let bundle = m.family == Family::GetPayload && m.latest_fork().has_blobs();
            assert_eq!(m.blobs == AnswerBlobs::Bundle, bundle, "{}", m.name);
            let entries = matches!(m.blobs, AnswerBlobs::Entries { .. });
            let cells = m.blobs == AnswerBlobs::Cells;
            if entries || cells {
                assert_eq!(m.family, Family::GetBlobs, "{}", m.name);
                assert_eq!(cells, m.latest_fork().has_block_access_list(), "{}", m.name);
            }
        }
        let shape = |name| by_name(name).unwrap();
        assert!(!shape("engine_getBlobsV1").cell_proofs());
        assert!(shape("engine_getBlobsV2").cell_proofs());
        assert!(!shape("engine_getPayloadV3").has_requests());
        assert!(shape("engine_getPayloadV4").has_requests());
        assert_eq!(
            shape("engine_getBlobsV2").blobs,
            AnswerBlobs::Entries {
                null_entries: false,
                null_answer: true
            }
        );
    }

    #[test]
    fn every_fork_has_one_method_per_fork_scoped_resource() {
        let expected = [
            (
                Paris,
                [
                    "engine_newPayloadV2",
                    "engine_forkchoiceUpdatedV2",
                    "engine_getPayloadV2",
                    "engine_getPayloadBodiesByHashV1",
                    "engine_getPayloadBodiesByRangeV1",
                ],
            ),
            (
                Shanghai,
                [
                    "engine_newPayloadV2",
                    "engine_forkchoiceUpdatedV2",
                    "engine_getPayloadV2",
                    "engine_getPayloadBodiesByHashV1",
                    "engine_getPayloadBodiesByRangeV1",
                ],
            ),
            (
                Cancun,
                [
                    "engine_newPayloadV3",
                    "engine_forkchoiceUpdatedV3",
                    "engine_getPayloadV3",
                    "engine_getPayloadBodiesByHashV1",
                    "engine_getPayloadBodiesByRangeV1",
                ],
            ),
            (
                Prague,
                [
                    "engine_newPayloadV4",
                    "engine_forkchoiceUpdatedV3",
                    "engine_getPayloadV4",
                    "engine_getPayloadBodiesByHashV1",
                    "engine_getPayloadBodiesByRangeV1",
                ],
            ),
            (
                Osaka,
                [
                    "engine_newPayloadV4",
                    "engine_forkchoiceUpdatedV3",
                    "engine_getPayloadV5",
                    "engine_getPayloadBodiesByHashV1",
                    "engine_getPayloadBodiesByRangeV1",
                ],
            ),
            (
                Amsterdam,
                [
                    "engine_newPayloadV5",
                    "engine_forkchoiceUpdatedV4",
                    "engine_getPayloadV6",
                    "engine_getPayloadBodiesByHashV2",
                    "engine_getPayloadBodiesByRangeV2",
                ],
            ),
        ];
        let resources = [
            Resource::SubmitPayload,
            Resource::Forkchoice,
            Resource::GetPayload,
            Resource::BodiesByHash,
            Resource::BodiesByRange,
        ];
        for (fork, names) in expected {
            for (resource, name) in resources.into_iter().zip(names) {
                assert_eq!(
                    for_resource(resource, fork).unwrap().name,
                    name,
                    "{fork} {resource}"
                );
            }
        }
        assert_eq!(
            for_resource(Resource::Blobs(3), Cancun).unwrap().name,
            "engine_getBlobsV3"
        );
        assert_eq!(
            for_fork(Family::GetBlobs, Osaka).unwrap().name,
            "engine_getBlobsV3"
        );
    }

    #[test]
    fn fork_checks_name_method_and_forks() {
        let err = by_name("engine_getPayloadV4")
            .unwrap()
            .check_fork(Osaka)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "engine_getPayloadV4 does not serve fork osaka (it serves prague)"
        );
        assert!(
            by_name("engine_getBlobsV1")
                .unwrap()
                .check_fork(Amsterdam)
                .is_ok()
        );
        assert!(matches!(
            by_name("engine_newPayloadV9"),
            Err(Error::UnknownMethod(_))
        ));
    }

    #[test]
    fn routes_parse_and_print() {
        let route = Route::parse("GET", "/engine/v1/payloads/0x1234567890abcdef").unwrap();
        assert_eq!(route.resource, Resource::GetPayload);
        assert_eq!(
            route.payload_id,
            Some([0x12, 0x34, 0x56, 0x78, 0x90, 0xab, 0xcd, 0xef])
        );
        assert_eq!(route.target(), "/engine/v1/payloads/0x1234567890abcdef");
        let route = Route::parse("GET", "/engine/v1/bodies?from=10&count=32").unwrap();
        assert_eq!(route.range, Some((10, 32)));
        assert_eq!(route.target(), "/engine/v1/bodies?from=10&count=32");
        assert_eq!(
            Route::parse("POST", "/engine/v1/blobs/v4")
                .unwrap()
                .resource,
            Resource::Blobs(4)
        );
        for resource in [
            Resource::SubmitPayload,
            Resource::Forkchoice,
            Resource::BodiesByHash,
            Resource::Capabilities,
            Resource::Identity,
            Resource::Blobs(1),
        ] {
            let route = Route {
                resource,
                payload_id: None,
                range: None,
            };
            assert_eq!(
                Route::parse(resource.http_method().as_str(), &route.target()).unwrap(),
                route
            );
        }
    }

    #[test]
    fn bad_routes_say_what_is_wrong() {
        let cases = [
            (
                "GET",
                "/engine/v1/payloads/1234567890abcdef",
                "must be 0x-prefixed hex",
            ),
            (
                "GET",
                "/engine/v1/payloads/0x1234",
                "must be 8 bytes (16 hex digits), got 4 digits",
            ),
            (
                "GET",
                "/engine/v1/payloads/0x1234567890abcdeg",
                "is not hex",
            ),
            (
                "GET",
                "/engine/v1/bodies?from=1",
                "needs both from=N and count=M",
            ),
            (
                "GET",
                "/engine/v1/bodies?from=x&count=2",
                "from=\"x\" is not a decimal u64",
            ),
            (
                "GET",
                "/engine/v1/bodies?from=1&count=2&sort=asc",
                "unknown query parameter \"sort\"",
            ),
        ];
        for (method, target, needle) in cases {
            let err = Route::parse(method, target).unwrap_err();
            assert!(err.to_string().contains(needle), "{target}: {err}");
            assert_eq!(err.problem(), crate::Problem::InvalidRequest);
        }
        for (method, target) in [
            ("GET", "/engine/v1/forkchoice"),
            ("POST", "/engine/v1/blobs/v9"),
            ("POST", "/"),
            ("GET", "/engine/v2/identity"),
        ] {
            let err = Route::parse(method, target).unwrap_err();
            assert_eq!(
                err.problem(),
                crate::Problem::MethodNotFound,
                "{method} {target}"
            );
        }
    }
}
