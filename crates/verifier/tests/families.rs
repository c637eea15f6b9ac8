//! The method families a build answers (`METHODS`, the cargo features) and no other: under any
//! feature set, every colibri vector of a method in `METHODS` verifies to its expected result
//! and every other is refused as unsupported, naming the method. `cargo test -p
//! sszgate-verifier` runs it with all families; `--no-default-features` as receipts only.

mod common;

use common::{json, read, vectors};
use serde_json::Value;
use sszgate_verifier::{METHODS, Verifier, VerifierError};

/// A verifier holding the vector's committee keys, its clock at the vector's signature.
fn verifier_for(dir: &std::path::Path, expected: &Value) -> Verifier {
    let slot = expected["decoded"]["checks"]["signature"]["signed_slot"].as_u64();
    let now = slot.map_or(0, |s| 1_606_824_023 + (s + 1) * 12);
    let options = serde_json::json!({
        "network": "mainnet",
        "checkpoint": format!("0x{}", "11".repeat(32)),
        "now": now,
    });
    let mut v = Verifier::new(&options.to_string(), None).unwrap();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        let period = name
            .strip_prefix("sync_committee_")
            .and_then(|n| n.strip_suffix(".pubkeys"));
        if let Some(period) = period {
            let keys = read(&entry.path());
            v.add_committee_keys(period.parse().unwrap(), &keys)
                .unwrap();
        }
    }
    v
}

#[test]
fn a_build_answers_its_families_and_refuses_the_others_by_name() {
    let (mut answered, mut refused) = (0, 0);
    // Vectors that verify from committee keys alone (eth_getLogs1 is colibri's incomplete
    // form, eth_call1 leaves its code out; both are tested in tests/vectors.rs and js/test),
    // with the field compared where sszgate renders differently from colibri on purpose
    // (crates/proof/README.md), else the whole result.
    for (case, field) in [
        ("eth_blockNumber_electra", None),
        ("eth_getBalance1", None),
        ("eth_getBlockByHash1", Some("hash")),
        ("eth_getTransactionByHash1", Some("hash")),
        ("eth_getTransactionReceipt1", Some("transactionHash")),
        ("eth_call1_include_code", None),
    ] {
        let dir = vectors().join(case);
        let expected = json(&dir.join("expected.json"));
        let method = expected["method"].as_str().unwrap();
        let proof = read(&dir.join("proof.ssz"));
        let mut v = verifier_for(&dir, &expected);
        let got = v.verify(method, &expected["params"].to_string(), &proof, 0);
        if METHODS.contains(&method) {
            let answer: Value = serde_json::from_str(&got.unwrap()).unwrap();
            let expected = &expected["result"];
            match field {
                Some(f) => {
                    assert!(answer[f].is_string(), "{case}: {f} answered");
                    assert_eq!(answer[f], expected[f], "{case}");
                }
                None => assert_eq!(&answer, expected, "{case}"),
            }
            answered += 1;
        } else {
            let err = got.unwrap_err();
            assert!(
                matches!(&err, VerifierError::Refused { check: None, .. }),
                "{case}: {err:?}"
            );
            assert!(err.to_string().contains(method), "{case}: {err}");
            refused += 1;
        }
    }
    assert!(METHODS.contains(&"eth_getTransactionReceipt"));
    assert!(
        answered >= 1,
        "eth_getTransactionReceipt at least ({refused} refused)"
    );
}

/// A proof option of a family this build leaves out is not even decoded (its decoder is not
/// linked): given to a method the build answers, it is refused naming the option and the
/// cargo feature. With the family built, the same proof is refused by the proof-kind check.
#[test]
fn a_proof_option_left_out_is_refused_by_name() {
    let dir = vectors().join("eth_getBalance1");
    let expected = json(&dir.join("expected.json"));
    let proof = read(&dir.join("proof.ssz"));
    let mut v = verifier_for(&dir, &expected);
    let params = r#"["0x0000000000000000000000000000000000000000000000000000000000000001"]"#;
    let err = v
        .verify("eth_getTransactionReceipt", params, &proof, 0)
        .unwrap_err();
    let text = err.to_string();
    if METHODS.contains(&"eth_getBalance") {
        assert!(
            matches!(&err, VerifierError::Refused { check: Some(c), .. } if c == "proof_kind"),
            "{err:?}"
        );
        assert!(text.contains("AccountProof"), "{text}");
    } else {
        assert!(
            matches!(&err, VerifierError::Refused { check: None, .. }),
            "{err:?}"
        );
        assert!(
            text.contains("ProofUnion.Account")
                && text.contains("not built into this verifier")
                && text.contains("`accounts`"),
            "{text}"
        );
    }
}
