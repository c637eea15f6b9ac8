//! The body of the metadata-scanner fuzz target (`sszgate_record::meta`): the facts the
//! recorder reads from the bodies of every call, JSON-RPC or REST-SSZ, on its own thread. A
//! body of any shape must leave facts empty rather than panic, since a panic there would stop
//! the recording of every later call.
//!
//! A plain function so that `crates/record/tests/fuzz_corpus.rs` replays the corpus on stable.

use sszgate_engine::Fork;
use sszgate_record::meta;

use crate::layout::{RESOURCES, Target, meta_mode, split_two};

/// The record targets by name, as `fuzz/fuzz_targets/<name>.rs` and `fuzz/corpus/<name>/`.
pub const TARGETS: [Target; 1] = [("meta", meta_scan)];

/// `json_call`, `problem` or `rest_call` on the bodies of the input, by its first byte (see
/// [`crate::layout::meta_mode`]).
pub fn meta_scan(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        meta_mode::JSON => {
            let (request, response) = split_two(rest);
            let _ = meta::json_call(request, response);
        }
        meta_mode::PROBLEM => {
            let _ = meta::problem(rest);
        }
        _ => {
            let [resource, fork, s0, s1, id @ ..] = rest else {
                return;
            };
            let Some(id) = id.get(..8) else {
                return;
            };
            let bodies = &rest[12..];
            let resource = RESOURCES[*resource as usize % RESOURCES.len()];
            let fork = Fork::ALL
                .get(*fork as usize % (Fork::ALL.len() + 1))
                .copied();
            let status = u16::from_le_bytes([*s0, *s1]);
            let payload_id = (resource == sszgate_engine::Resource::GetPayload)
                .then(|| id.try_into().expect("8 bytes"));
            let (request, response) = split_two(bodies);
            let _ = meta::rest_call(resource, fork, payload_id, request, status, response);
            let _ = meta::rest_method(resource, fork);
        }
    }
}
