//! The colibri vectors (`testdata/colibri/`): each decodes into typed values and encodes back
//! to the same bytes.

mod common;

use common::{case_names, proof_bytes};
use ssz::{Decode, Encode};
use sszgate_proof::C4Request;

#[test]
fn every_vector_decodes_and_reencodes_byte_for_byte() {
    let names = case_names();
    assert_eq!(names.len(), 17, "the 17 vectors of the spec");
    for case in &names {
        let bytes = proof_bytes(case);
        let request = C4Request::from_ssz_bytes(&bytes)
            .unwrap_or_else(|e| panic!("{case}: {}", sszgate_proof::ssz::describe(&e)));
        assert_eq!(request.as_ssz_bytes(), bytes, "{case}: re-encoding differs");
        assert_eq!(request.version.as_slice(), [0, 0, 1, 0], "{case}: version");
    }
}
