//! `--verify-enforce`: a newPayload whose payload fails verification (block hash, transactions,
//! limits, versioned hashes) is answered with an error instead of being relayed.
//!
//! A testing aid, off by default: it is the one place where the forward path decodes a body.
//! A body that does not decode is relayed as it is (the EL answers it); only a payload that
//! decodes and fails a check is refused.

use bytes::Bytes;
use http::HeaderMap;
use sszgate_engine::{
    Fork, Message, Problem,
    method::{self, Family, Resource},
    scan,
};

use crate::classify::{Class, Refusal};

/// The refusal for a newPayload that fails verification, if `class` is one.
pub(crate) fn check(class: &Class, headers: &HeaderMap, body: &Bytes) -> Option<Refusal> {
    let (message, id) = match class {
        Class::JsonRpc { method: Some(name) } => {
            let m = method::by_name(name).ok()?;
            if m.family != Family::NewPayload {
                return None;
            }
            // A batch is relayed as it is: enforcement looks at single calls.
            let envelope = scan::envelope(body)?;
            let params = envelope.params?;
            let message = Message::from_json(m, m.latest_fork(), m.request, params).ok()?;
            (message, envelope.id.map(Bytes::copy_from_slice))
        }
        Class::Rest(route) if route.resource == Resource::SubmitPayload => {
            let fork: Fork = headers
                .get(method::FORK_HEADER)?
                .to_str()
                .ok()?
                .parse()
                .ok()?;
            let m = method::for_resource(route.resource, fork).ok()?;
            (Message::from_ssz(m, fork, m.request, body).ok()?, None)
        }
        _ => return None,
    };
    let Message::NewPayload(payload) = message else {
        return None;
    };
    let failure = sszgate_verify::payload::check_new_payload(&payload).err()?;
    Some(Refusal {
        problem: Problem::InvalidBody,
        message: format!("verify-enforce: refused, not relayed: {failure}"),
        id,
    })
}
