//! The checks: one row per check with its id, its area and the sentence of the spec
//! (`engine-rest-ssz.md`) it enforces, quoted. The one list every report, the docs and the
//! tests are made from.
//!
//! Not here: how a check is run (`el`, `cl`) or reported (`report`).

/// What part of the spec a check belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Area {
    /// `GET /capabilities`, `GET /identity`.
    Discovery,
    /// The hot-path resources with real messages.
    Resources,
    /// Response headers: `Content-Type`, `Cache-Control`.
    Headers,
    /// `Eth-Execution-Version` handling.
    Fork,
    /// The error contract: statuses and problem types.
    Errors,
    /// Authentication.
    Auth,
    /// The same call over REST-SSZ and JSON-RPC.
    Equivalence,
    /// HTTP/1.1 keep-alive, h2c, compression.
    Transport,
    /// What a consensus client sends.
    Client,
}

impl Area {
    /// The area's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Area::Discovery => "discovery",
            Area::Resources => "resources",
            Area::Headers => "headers",
            Area::Fork => "fork",
            Area::Errors => "errors",
            Area::Auth => "auth",
            Area::Equivalence => "equivalence",
            Area::Transport => "transport",
            Area::Client => "client",
        }
    }
}

/// One check: its id, area and the spec's sentence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    /// A stable id, `area.what`.
    pub id: &'static str,
    /// The part of the spec.
    pub area: Area,
    /// The spec's sentence, quoted from `engine-rest-ssz.md`.
    pub rule: &'static str,
}

const fn check(id: &'static str, area: Area, rule: &'static str) -> Check {
    Check { id, area, rule }
}

use Area::*;

/// The checks of `sszgate conform el`, in the order they are reported.
pub static EL_CHECKS: [Check; 45] = [
    check(
        "cap.document",
        Discovery,
        "`GET /capabilities` advertises supported forks, fork-scoped endpoints, independently-versioned endpoints (with the available `/vN` list), unscoped endpoints, and per-endpoint maximum request sizes.",
    ),
    check(
        "cap.limits",
        Discovery,
        "operators MAY advertise lower values, but MUST NOT advertise higher than the corresponding `MAX_*` constant.",
    ),
    check(
        "identity.document",
        Discovery,
        "`GET /engine/v1/identity` Returns JSON `ClientVersion[]` (same shape as today's `engine_getClientVersionV1`).",
    ),
    check(
        "unscoped.ignore-fork",
        Discovery,
        "Unscoped endpoints (`/capabilities`, `/identity`, `/blobs/vN`) MUST ignore the header if present.",
    ),
    check(
        "forkchoice.each-fork",
        Resources,
        "an FCU with `Eth-Execution-Version: <fork>` referencing a `head` from an earlier fork is **allowed**, *as long as `payload_attributes` is absent*.",
    ),
    check(
        "forkchoice.build",
        Resources,
        "`payload_id: Optional[Bytes8]` # server-assigned opaque token; set iff a build was started",
    ),
    check(
        "payloads.get",
        Resources,
        "`GET /engine/v1/payloads/{payloadId}` Response body: SSZ-encoded `BuiltPayload` ... **Field order is normative**",
    ),
    check(
        "payloads.submit",
        Resources,
        "`POST /engine/v1/payloads` HTTP status: `200 OK` for any of the four validation outcomes.",
    ),
    check(
        "bodies.hash",
        Resources,
        "Response body (both endpoints): SSZ-encoded `BodiesResponse` ... When `available=false`, the `body` field is zero-valued",
    ),
    check(
        "bodies.range",
        Resources,
        "it is **truncated at the latest known block** and is **not** padded out to `count` entries with `available=false` placeholders.",
    ),
    check(
        "blobs.partial",
        Resources,
        "Within a `200` response, per-blob misses are reported via `BlobEntry.available = false` on revisions that support partial responses.",
    ),
    check(
        "blobs.all-or-nothing",
        Resources,
        "All-or-nothing: if any requested blob is missing, the EL returns `204 No Content`.",
    ),
    check(
        "blobs.pool",
        Resources,
        "Response `BlobEntry.contents`: `BlobAndProofV1 { blob, proof }` ... `BlobAndProofV2 { blob, proofs }` ... Otherwise `200 OK` and all entries have `available=true` (the blobs and proofs of a transaction in the pool, as it was sent).",
    ),
    check(
        "header.content-type",
        Headers,
        "Hot-path response success body | `Content-Type` | `application/octet-stream` (SSZ)",
    ),
    check(
        "header.json-diagnostic",
        Headers,
        "Diagnostic endpoints MUST be served as JSON regardless of `Accept`.",
    ),
    check(
        "header.accept-loose",
        Headers,
        "Hot-path request | `Accept` | `application/octet-stream` — what a CL sends; a `GET` with `Accept: */*` or none still matches the endpoint and is served.",
    ),
    check(
        "header.no-store",
        Headers,
        "The EL **MUST** include `Cache-Control: no-store` on the response",
    ),
    check(
        "header.problem",
        Headers,
        "Error response body (any endpoint) | `Content-Type` | `application/problem+json`; `type` (required) — relative URI identifying the problem class",
    ),
    check(
        "fork.missing",
        Fork,
        "Missing or unknown header on a fork-scoped endpoint returns `400 /engine-api/errors/unsupported-fork`.",
    ),
    check(
        "fork.unknown",
        Fork,
        "Blob-parameter-only (BPO) forks do **not** get their own `Eth-Execution-Version` value. ... one it doesn't recognise ... returns `400 /engine-api/errors/unsupported-fork`.",
    ),
    check(
        "fork.unsupported",
        Fork,
        "`400 /engine-api/errors/unsupported-fork`: `Eth-Execution-Version` value missing, unknown, or unsupported by this EL",
    ),
    check(
        "auth.missing",
        Auth,
        "The token MUST be presented as `Authorization: Bearer <jwt>` on every request.",
    ),
    check(
        "auth.expired",
        Auth,
        "JWT claims: `iat` (required, unchanged from today: ±60s window)",
    ),
    check(
        "auth.wrong-key",
        Auth,
        "Unchanged in spirit: JWT (HS256, 256-bit shared secret).",
    ),
    check(
        "media.unsupported",
        Errors,
        "ELs MUST reject hot-path requests carrying any other `Content-Type` with `415 Unsupported Media Type`.",
    ),
    check(
        "size.over-limit",
        Errors,
        "413 Payload Too Large | `/engine-api/errors/request-too-large` | Body exceeds an advertised `limits.*` value",
    ),
    check(
        "ssz.truncated",
        Errors,
        "SSZ-decode failures are a canned `400 Bad Request` with `type=/engine-api/errors/ssz-decode-error` (a truncated body).",
    ),
    check(
        "ssz.bad-offset",
        Errors,
        "ELs MUST validate SSZ length prefixes and offsets against the remaining buffer size; SSZ-decode failures are a canned `400` `ssz-decode-error`.",
    ),
    check(
        "ssz.trailing",
        Errors,
        "SSZ-decode failures are a canned `400 Bad Request` with `type=/engine-api/errors/ssz-decode-error` (bytes past the value).",
    ),
    check(
        "payloads.unknown",
        Errors,
        "**404** if `payloadId` is unknown or expired. (`/engine-api/errors/unknown-payload`)",
    ),
    check(
        "payloads.malformed-id",
        Errors,
        "The EL **MUST** validate that the path segment is well-formed (8 bytes, hex) before dispatching to lookup logic; a malformed segment returns `400 invalid-request`.",
    ),
    check(
        "route.unknown",
        Errors,
        "404 Not Found | `/engine-api/errors/method-not-found` | URL does not match any endpoint",
    ),
    check(
        "route.wrong-method",
        Errors,
        "404 Not Found | `/engine-api/errors/method-not-found` | URL does not match any endpoint (a known path with another HTTP method; 405 accepted)",
    ),
    check(
        "route.old-paths",
        Errors,
        "**Base path:** `/engine/v1/...`. `/v1` is the first major REST version (a future `/v2` is reserved for breaking transport changes). — `/engine/v2/...` is a URL that does not match any endpoint: 404.",
    ),
    check(
        "eq.forkchoice",
        Equivalence,
        "`engine_forkchoiceUpdatedV{1..4}` | `POST /forkchoice` — clients run both surfaces: the same call gives the same answer.",
    ),
    check(
        "eq.submit",
        Equivalence,
        "`engine_newPayloadV{1..5}` | `POST /payloads` — clients run both surfaces: the same call gives the same answer.",
    ),
    check(
        "eq.get-payload",
        Equivalence,
        "`engine_getPayloadV{1..6}` | `GET /payloads/{id}` | poll-style, same semantics as today",
    ),
    check(
        "eq.bodies-hash",
        Equivalence,
        "`engine_getPayloadBodiesByHashV{1,2}` | `POST /bodies/hash` — clients run both surfaces: the same call gives the same answer.",
    ),
    check(
        "eq.bodies-range",
        Equivalence,
        "`engine_getPayloadBodiesByRangeV{1,2}` | `GET /bodies?from=...&count=...` — the same call gives the same answer.",
    ),
    check(
        "eq.blobs",
        Equivalence,
        "`engine_getBlobsV{1..4}` | `POST /blobs/v{1..4}` | legacy version numbers carry forward",
    ),
    check(
        "eq.identity",
        Equivalence,
        "`engine_getClientVersionV1` | `GET /identity` — Returns JSON `ClientVersion[]` (same shape as today's `engine_getClientVersionV1`).",
    ),
    check(
        "identity.unlisted-code",
        Equivalence,
        "`engine_getClientVersionV1(ClientVersionV1)`: the caller identifies itself; a `code` the list does not name yet (a newer client) is still answered.",
    ),
    check(
        "transport.keep-alive",
        Transport,
        "both **HTTP/2 and HTTP/1.1 MUST be supported** ... CLs that fall back to HTTP/1.1 SHOULD use connection pooling (several requests on one HTTP/1.1 connection).",
    ),
    check(
        "transport.h2c",
        Transport,
        "Both TCP and IPC transports use **cleartext** (h2c for HTTP/2).",
    ),
    check(
        "transport.compression",
        Transport,
        "Servers MAY support `Accept-Encoding: zstd, gzip`. ... CLs MUST tolerate uncompressed responses.",
    ),
];

/// The checks of `sszgate conform cl`, in the order they are reported.
pub static CL_CHECKS: [Check; 8] = [
    check(
        "cl.route",
        Client,
        "All endpoints live under `/engine/v1/...` (a known resource with its HTTP method).",
    ),
    check(
        "cl.jwt",
        Client,
        "The token MUST be presented as `Authorization: Bearer <jwt>` on every request. `iat` (required, unchanged from today: ±60s window)",
    ),
    check(
        "cl.fork-header",
        Client,
        "every hot-path request MUST carry `Eth-Execution-Version: <fork>`. CLs MUST map a BPO era onto its base named fork when constructing the header.",
    ),
    check(
        "cl.content-type",
        Client,
        "Hot-path request body (`/payloads`, `/forkchoice`, `/bodies`, `/blobs/vN`) | `Content-Type` | `application/octet-stream` (SSZ)",
    ),
    check(
        "cl.accept",
        Client,
        "Hot-path request | `Accept` | `application/octet-stream`",
    ),
    check(
        "cl.container",
        Client,
        "Hot-path bodies use SSZ: the request is the resource's container for the header's fork, exactly.",
    ),
    check(
        "cl.client-version",
        Client,
        "The CL identifies itself with a `X-Engine-Client-Version` header on every request.",
    ),
    check(
        "cl.forkchoice-serial",
        Client,
        "Only one `POST /forkchoice` may be in flight at a time.",
    ),
];

/// The row of `id`, among both lists.
pub fn by_id(id: &str) -> Option<&'static Check> {
    EL_CHECKS
        .iter()
        .chain(CL_CHECKS.iter())
        .find(|c| c.id == id)
}

/// `docs/conformance.md`'s table of checks: id, area and the spec sentence, one row each.
pub fn markdown_table(checks: &[Check]) -> String {
    let mut out =
        String::from("| check | area | rule it enforces (engine-rest-ssz.md) |\n|---|---|---|\n");
    for c in checks {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            c.id,
            c.area.name(),
            c.rule.replace('|', "\\|")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_named_by_area() {
        let all: Vec<&Check> = EL_CHECKS.iter().chain(CL_CHECKS.iter()).collect();
        for (i, c) in all.iter().enumerate() {
            assert!(all[..i].iter().all(|o| o.id != c.id), "{} twice", c.id);
            assert!(!c.rule.is_empty() && c.id.contains('.'), "{}", c.id);
            assert_eq!(by_id(c.id), Some(*c));
        }
    }

    /// `docs/conformance.md` lists every check with its sentence, as the catalogue has them.
    #[test]
    fn the_docs_list_every_check() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/conformance.md");
        let docs = std::fs::read_to_string(path).unwrap();
        for table in [markdown_table(&EL_CHECKS), markdown_table(&CL_CHECKS)] {
            assert!(
                docs.contains(&table),
                "docs/conformance.md is out of date; its tables are:\n{table}"
            );
        }
    }
}
