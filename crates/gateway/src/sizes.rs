//! Request size limits: the largest body each REST-SSZ resource and each JSON-RPC method can
//! legally carry, derived from the spec's `MAX_*` constants through the SSZ schemas, always
//! under the global `--max-body` cap; and the size of a request's head.
//!
//! A newPayload can be tens of MB, so it keeps the global cap; a forkchoiceUpdated or a
//! getBlobs request is at most a few KB, and a GET carries no body at all. Refusing anything
//! larger before it is read keeps a caller from making the gateway buffer megabytes it could
//! never relay to a well-behaved EL.

use sszgate_engine::{
    Fork, Resource,
    method::{self, Family},
    ssz::{self, Ty},
};

/// Bytes allowed on top of three times a call's largest SSZ form for its JSON-RPC form: the
/// envelope, field names, quotes, `0x` prefixes and whitespace (hex itself doubles the bytes).
const JSON_SLACK: usize = 16 << 10;

/// The largest SSZ encoding of `ty`, saturating (a payload's bound, a million transactions of
/// up to 1 GiB, is past any real cap: such a body is bounded by `--max-body` only).
fn max_ssz(ty: &Ty) -> usize {
    let field = |ty: &Ty| match ty.fixed_size() {
        Some(n) => n,
        // A variable-size field costs its 4-byte offset besides its bytes.
        None => max_ssz(ty).saturating_add(4),
    };
    match ty {
        Ty::Fixed(n) | Ty::Bytes(n) => *n,
        Ty::Bool | Ty::Tag(_) => 1,
        Ty::List(elem, n) => field(elem).saturating_mul(*n),
        Ty::Container(_, fields) => fields
            .iter()
            .fold(0usize, |sum, f| sum.saturating_add(field(f.ty))),
    }
}

/// The largest legal request body of a REST-SSZ resource, bytes (before the global cap).
/// Computed once per resource of the method table: the schema walk on every call was
/// measured at about 1% of the proxy's CPU on small calls.
pub fn rest_body_limit(resource: Resource) -> usize {
    static LIMITS: std::sync::OnceLock<Vec<(Resource, usize)>> = std::sync::OnceLock::new();
    LIMITS
        .get_or_init(|| {
            method::METHODS
                .iter()
                .map(|m| (m.resource, schema_body_limit(m.resource)))
                .collect()
        })
        .iter()
        .find(|(r, _)| *r == resource)
        .map_or_else(|| schema_body_limit(resource), |(_, limit)| *limit)
}

/// [`rest_body_limit`], from the schemas.
fn schema_body_limit(resource: Resource) -> usize {
    match resource {
        Resource::SubmitPayload => Fork::ALL
            .iter()
            .map(|f| max_ssz(ssz::payload_envelope(*f)))
            .max()
            .unwrap_or(usize::MAX),
        Resource::Forkchoice => Fork::ALL
            .iter()
            .map(|f| max_ssz(ssz::forkchoice_update(*f)))
            .max()
            .unwrap_or(usize::MAX),
        Resource::BodiesByHash => max_ssz(&ssz::BODIES_BY_HASH_REQUEST),
        Resource::Blobs(revision) => max_ssz(ssz::blobs_request(revision)),
        // GETs: the request is its path.
        Resource::GetPayload
        | Resource::BodiesByRange
        | Resource::Capabilities
        | Resource::Identity => 0,
    }
}

/// The largest JSON-RPC call accepted for `method` (one call; each call of a batch is held to
/// its own method's limit), bytes (before the global cap). Methods outside the Engine API
/// table keep the global cap: the relay passes them on without knowing their shape.
pub fn json_call_limit(method: &str) -> usize {
    let Ok(spec) = method::by_name(method) else {
        return usize::MAX;
    };
    match spec.family {
        Family::NewPayload => usize::MAX,
        // exchangeCapabilities and getClientVersion have no SSZ body (their REST forms are
        // GETs): their params, a list of at most 64 names of 64 bytes or one client version,
        // fit the slack.
        _ => rest_body_limit(spec.resource)
            .saturating_mul(3)
            .saturating_add(JSON_SLACK),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_follow_the_spec_constants() {
        // ForkchoiceState (96) + offset (4) + one Amsterdam PayloadAttributes with 16
        // withdrawals + offset, + one custody bitvector + offset.
        let fcu = rest_body_limit(Resource::Forkchoice);
        assert!((900..2048).contains(&fcu), "{fcu}");
        // BlobsRequest: 128 versioned hashes behind an offset (V4 adds its index list).
        assert!(rest_body_limit(Resource::Blobs(2)) >= 4 + 128 * 32);
        assert!(rest_body_limit(Resource::Blobs(2)) < 8 << 10);
        assert_eq!(rest_body_limit(Resource::BodiesByHash), 4 + 32 * 32);
        assert_eq!(rest_body_limit(Resource::GetPayload), 0);
        // A payload's bound (a million transactions of up to 1 GiB) is past any real cap:
        // newPayload bodies are held to the global cap only.
        assert!(rest_body_limit(Resource::SubmitPayload) > 1 << 40);
        assert_eq!(json_call_limit("engine_newPayloadV4"), usize::MAX);
        assert_eq!(json_call_limit("eth_chainId"), usize::MAX);
        assert_eq!(json_call_limit("engine_getPayloadV5"), JSON_SLACK);
        assert_eq!(
            json_call_limit("engine_forkchoiceUpdatedV3"),
            3 * fcu + JSON_SLACK
        );
    }
}
