//! `--verify-enforce`: a newPayload whose payload fails verification (block hash, transactions,
//! limits, versioned hashes) is answered with an error instead of being relayed.
//!
//! A testing aid, off by default: it is the one place where the forward path decodes a body.
//! A body that does not decode is relayed as it is (the EL answers it); only a payload that
//! decodes and fails a check is refused.

use sszgate_engine::{
    Fork, Message, Problem,
    method::{self, Family, Resource},
};
use sszgate_record::ErrorSide;

use crate::{call::Call, classify::Refusal};

/// The refusal for a newPayload that fails verification, if `call` is one.
pub(crate) fn check(call: &Call) -> Option<Refusal> {
    let (message, id) = if let Some(rpc) = &call.rpc {
        let m = method::by_name(rpc.method.as_deref()?).ok()?;
        if m.family != Family::NewPayload {
            return None;
        }
        // A batch is relayed as it is: enforcement looks at single calls.
        let params = rpc.params.as_ref().filter(|_| rpc.single)?;
        let message = Message::from_json(m, m.latest_fork(), m.request, params).ok()?;
        (message, rpc.id.clone())
    } else {
        let route = call.route()?;
        if route.resource != Resource::SubmitPayload {
            return None;
        }
        let fork: Fork = call.fork.as_deref()?.parse().ok()?;
        let m = method::for_resource(route.resource, fork).ok()?;
        (
            Message::from_ssz(m, fork, m.request, &call.body).ok()?,
            None,
        )
    };
    let Message::NewPayload(payload) = message else {
        return None;
    };
    let failure = sszgate_verify::payload::check_new_payload(&payload).err()?;
    Some(
        Refusal {
            id,
            ..crate::classify::refuse(
                Problem::InvalidBody,
                format!("verify-enforce: refused, not relayed: {failure}"),
            )
        }
        .by(ErrorSide::Gateway),
    )
}
