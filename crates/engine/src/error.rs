//! Errors of the Engine API model, and the one place where they meet the spec's error table.
//!
//! [`Problem`] is the REST-SSZ error model (`problem+json` `type`, HTTP status) together with
//! the JSON-RPC code each type replaces (`engine-rest-ssz.md` § Error model). Every mapping
//! between the two transports goes through it; nothing else in the workspace hard-codes a
//! JSON-RPC error code or a problem type string.

use std::fmt;

use crate::{fork::Fork, ssz::SszError};

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while classifying, decoding, encoding or translating a message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An `Eth-Execution-Version` value (or `--fork`) that names no fork.
    #[error(
        "unknown fork {0:?} (expected one of paris, shanghai, cancun, prague, osaka, amsterdam)"
    )]
    UnknownFork(String),
    /// A JSON-RPC method name that is not in the method table.
    #[error("unknown Engine API method {0:?}")]
    UnknownMethod(String),
    /// A method that exists, used with a fork that does not have it.
    #[error("{method} does not serve fork {fork} (it serves {serves})")]
    ForkNotSupported {
        /// The JSON-RPC method.
        method: &'static str,
        /// The fork asked for.
        fork: Fork,
        /// The forks the method serves, comma separated.
        serves: String,
    },
    /// A message of one fork where another fork's was asked for (a Paris payload from
    /// getPayloadV2 under a Shanghai header, say).
    #[error("{what} is a {found} message, not {expected}")]
    WrongFork {
        /// The message.
        what: &'static str,
        /// The fork asked for.
        expected: Fork,
        /// The fork of the message.
        found: Fork,
    },
    /// A REST request whose method and path match no resource.
    #[error("no Engine API resource at {method} {path}")]
    NoSuchResource {
        /// The HTTP method.
        method: String,
        /// The request path.
        path: String,
    },
    /// A REST request that matched a resource but is malformed (path segment, query, header).
    #[error("bad request to {resource}: {detail}")]
    BadRequest {
        /// The resource that was addressed.
        resource: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// A message that has no form on the asked-for side (e.g. a JSON-only endpoint as SSZ).
    #[error("{what} has no {form} form")]
    NoForm {
        /// The message.
        what: String,
        /// The missing form ("SSZ", "REST", "JSON-RPC").
        form: &'static str,
    },
    /// JSON that does not parse into the message it should be, with the JSON path of the fault.
    #[error("invalid JSON for {what} at {path}: {detail}")]
    Json {
        /// The message being decoded (e.g. `engine_newPayloadV3 params`).
        what: String,
        /// JSON path of the offending value (`.` for the root).
        path: String,
        /// The parser's message.
        detail: String,
    },
    /// SSZ bytes that do not decode into the container they should be.
    #[error(transparent)]
    Ssz(#[from] SszError),
    /// Input that decoded but breaks a rule of the spec (lengths that must agree, a field a fork
    /// must or must not have, a status not allowed here).
    #[error("invalid {what}: {detail}")]
    Invalid {
        /// The message or field.
        what: String,
        /// The rule that is broken.
        detail: String,
    },
    /// A JSON-RPC error or a problem+json answer carried through translation.
    #[error("{problem} error: {detail}")]
    Remote {
        /// The problem type.
        problem: Problem,
        /// The remote's message.
        detail: String,
    },
}

impl Error {
    /// The problem type this error is reported as, on either transport.
    pub fn problem(&self) -> Problem {
        match self {
            Error::UnknownFork(_) | Error::ForkNotSupported { .. } | Error::WrongFork { .. } => {
                Problem::UnsupportedFork
            }
            Error::UnknownMethod(_) | Error::NoSuchResource { .. } | Error::NoForm { .. } => {
                Problem::MethodNotFound
            }
            Error::BadRequest { .. } => Problem::InvalidRequest,
            Error::Json { .. } => Problem::InvalidBody,
            Error::Ssz(_) => Problem::SszDecodeError,
            Error::Invalid { .. } => Problem::InvalidBody,
            Error::Remote { problem, .. } => *problem,
        }
    }

    pub(crate) fn invalid(what: impl Into<String>, detail: impl Into<String>) -> Self {
        Error::Invalid {
            what: what.into(),
            detail: detail.into(),
        }
    }
}

/// The REST-SSZ problem types, each with its HTTP status and the JSON-RPC code it replaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Problem {
    /// Body is not valid JSON / SSZ (400, -32700).
    ParseError,
    /// Request shape is wrong (400, -32600).
    InvalidRequest,
    /// SSZ decode failed (400, REST only).
    SszDecodeError,
    /// `Eth-Execution-Version` missing, unknown or unsupported (400, -38005).
    UnsupportedFork,
    /// URL or method matches no endpoint (404, -32601).
    MethodNotFound,
    /// `payloadId` does not exist (404, -38001).
    UnknownPayload,
    /// Forkchoice state is inconsistent (409, -38002).
    InvalidForkchoice,
    /// Reorg depth exceeds the EL's limit (409, -38006).
    ReorgTooDeep,
    /// Body exceeds an advertised limit (413, -38004).
    RequestTooLarge,
    /// Wrong `Content-Type` (415, REST only).
    UnsupportedMediaType,
    /// Body decoded but has invalid values (422, -32602).
    InvalidBody,
    /// `payload_attributes` validation failed (422, -38003).
    InvalidAttributes,
    /// Unrecoverable server error (500, -32603 / -32000).
    Internal,
}

/// One row of the spec's error table: problem, `type` URI, HTTP status, JSON-RPC code.
struct ProblemRow(Problem, &'static str, u16, Option<i64>);

/// The spec's error table (`engine-rest-ssz.md` § Error model), in its order.
const PROBLEMS: [ProblemRow; 13] = [
    ProblemRow(
        Problem::ParseError,
        "/engine-api/errors/parse-error",
        400,
        Some(-32700),
    ),
    ProblemRow(
        Problem::InvalidRequest,
        "/engine-api/errors/invalid-request",
        400,
        Some(-32600),
    ),
    ProblemRow(
        Problem::SszDecodeError,
        "/engine-api/errors/ssz-decode-error",
        400,
        None,
    ),
    ProblemRow(
        Problem::UnsupportedFork,
        "/engine-api/errors/unsupported-fork",
        400,
        Some(-38005),
    ),
    ProblemRow(
        Problem::MethodNotFound,
        "/engine-api/errors/method-not-found",
        404,
        Some(-32601),
    ),
    ProblemRow(
        Problem::UnknownPayload,
        "/engine-api/errors/unknown-payload",
        404,
        Some(-38001),
    ),
    ProblemRow(
        Problem::InvalidForkchoice,
        "/engine-api/errors/invalid-forkchoice",
        409,
        Some(-38002),
    ),
    ProblemRow(
        Problem::ReorgTooDeep,
        "/engine-api/errors/reorg-too-deep",
        409,
        Some(-38006),
    ),
    ProblemRow(
        Problem::RequestTooLarge,
        "/engine-api/errors/request-too-large",
        413,
        Some(-38004),
    ),
    ProblemRow(
        Problem::UnsupportedMediaType,
        "/engine-api/errors/unsupported-media-type",
        415,
        None,
    ),
    ProblemRow(
        Problem::InvalidBody,
        "/engine-api/errors/invalid-body",
        422,
        Some(-32602),
    ),
    ProblemRow(
        Problem::InvalidAttributes,
        "/engine-api/errors/invalid-attributes",
        422,
        Some(-38003),
    ),
    ProblemRow(
        Problem::Internal,
        "/engine-api/errors/internal",
        500,
        Some(-32603),
    ),
];

impl Problem {
    /// Every problem type, in the order of the spec's table.
    pub const ALL: [Problem; 13] = [
        Problem::ParseError,
        Problem::InvalidRequest,
        Problem::SszDecodeError,
        Problem::UnsupportedFork,
        Problem::MethodNotFound,
        Problem::UnknownPayload,
        Problem::InvalidForkchoice,
        Problem::ReorgTooDeep,
        Problem::RequestTooLarge,
        Problem::UnsupportedMediaType,
        Problem::InvalidBody,
        Problem::InvalidAttributes,
        Problem::Internal,
    ];

    fn row(self) -> &'static ProblemRow {
        PROBLEMS
            .iter()
            .find(|row| row.0 == self)
            .expect("every problem has a row")
    }

    /// The `type` member of the problem+json body (a relative URI).
    pub fn type_uri(self) -> &'static str {
        self.row().1
    }

    /// The HTTP status of the REST answer.
    pub fn http_status(self) -> u16 {
        self.row().2
    }

    /// The JSON-RPC error code, for the problems that have one; REST-only problems
    /// (`ssz-decode-error`, `unsupported-media-type`) answer JSON-RPC callers with the code of
    /// their nearest JSON-RPC kin (parse error, invalid request).
    pub fn rpc_code(self) -> i64 {
        match self.row().3 {
            Some(code) => code,
            None if self == Problem::SszDecodeError => -32700,
            None => -32600,
        }
    }

    /// The problem a JSON-RPC error code stands for. `-32000` (generic server error) and codes
    /// the table does not know are `internal`.
    pub fn from_rpc_code(code: i64) -> Problem {
        PROBLEMS
            .iter()
            .find(|row| row.3 == Some(code))
            .map_or(Problem::Internal, |row| row.0)
    }

    /// The problem named by a problem+json `type` (absolute URIs ending in the same path match).
    pub fn from_type_uri(uri: &str) -> Option<Problem> {
        PROBLEMS
            .iter()
            .find(|row| uri.ends_with(row.1))
            .map(|row| row.0)
    }

    /// The short name (last path segment of the type URI), e.g. `unknown-payload`.
    pub fn name(self) -> &'static str {
        self.type_uri().rsplit('/').next().unwrap_or_default()
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table of `shared/vectors/README.md` (asserted by execution-specs' own test),
    /// code by code: type -> HTTP status -> legacy code.
    #[test]
    fn spec_error_table_code_by_code() {
        let expected: [(&str, u16, Option<i64>); 13] = [
            ("parse-error", 400, Some(-32700)),
            ("invalid-request", 400, Some(-32600)),
            ("ssz-decode-error", 400, None),
            ("unsupported-fork", 400, Some(-38005)),
            ("method-not-found", 404, Some(-32601)),
            ("unknown-payload", 404, Some(-38001)),
            ("invalid-forkchoice", 409, Some(-38002)),
            ("reorg-too-deep", 409, Some(-38006)),
            ("request-too-large", 413, Some(-38004)),
            ("unsupported-media-type", 415, None),
            ("invalid-body", 422, Some(-32602)),
            ("invalid-attributes", 422, Some(-38003)),
            ("internal", 500, Some(-32603)),
        ];
        for (problem, (name, status, code)) in Problem::ALL.into_iter().zip(expected) {
            assert_eq!(problem.name(), name);
            assert_eq!(problem.type_uri(), format!("/engine-api/errors/{name}"));
            assert_eq!(problem.http_status(), status, "{name}");
            if let Some(code) = code {
                assert_eq!(problem.rpc_code(), code, "{name}");
                assert_eq!(Problem::from_rpc_code(code), problem, "{name}");
            }
            assert_eq!(Problem::from_type_uri(problem.type_uri()), Some(problem));
            assert_eq!(
                Problem::from_type_uri(&format!("https://example.org{}", problem.type_uri())),
                Some(problem)
            );
        }
    }

    #[test]
    fn generic_and_unknown_codes_are_internal() {
        assert_eq!(Problem::from_rpc_code(-32000), Problem::Internal);
        assert_eq!(Problem::from_rpc_code(-31999), Problem::Internal);
        assert_eq!(Problem::from_rpc_code(42), Problem::Internal);
        assert_eq!(Problem::from_type_uri("/engine-api/errors/nope"), None);
    }
}
