//! SSZ: the REST-SSZ containers as schemas, and a validator that walks bytes against them.
//!
//! The wire types themselves are alloy's (`alloy_rpc_types_engine::ssz_engine_types`), checked
//! against the spec by this crate's tests. What alloy's decoders do not do, and this module does,
//! is look at the bytes *before* anything is allocated: every offset is checked to be in range
//! and non-decreasing, every list against its limit, every fixed field against its size, and a
//! failure names the field path and the absolute byte offset (`payload.transactions[3]` at byte
//! 1234). The same walk can locate a field without decoding anything, which is what metadata
//! extraction needs; [`path_at`] names the field a byte falls in. Encoding and decoding
//! proper live in [`crate::message`].

mod encode;
mod locate;
mod schema;
mod validate;

pub(crate) use encode::{SszField, encode_container};
pub use locate::path_at;
pub use schema::*;
pub(crate) use validate::container_fields;
pub use validate::{SszError, SszProblem, fields, validate};
