//! The embeddable verifier on colibri's recorded mainnet proofs: made from a checkpoint, it
//! learns the committee from a proof's sync data, answers as the vector says, saves its state,
//! and a verifier made from that state alone answers again (also from a state saved in the
//! earlier form); lies, a damaged state and misuse are refused by name. The vectors are of
//! the method families the build holds (`--no-default-features`: receipts only).

mod common;

use std::path::PathBuf;

use serde_json::Value;
use ssz_types::FixedVector;
use sszgate_light::bls::CommitteeKeys;
use sszgate_light::types::{BlsPublicKey, SyncCommittee};
use sszgate_verifier::{Verifier, VerifierError};

fn case_dir(case: &str) -> PathBuf {
    common::vectors().join(case)
}

fn expected(case: &str) -> Value {
    common::json(&case_dir(case).join("expected.json"))
}

fn proof(case: &str) -> Vec<u8> {
    common::read(&case_dir(case).join("proof.ssz"))
}

/// The time the case was fresh at: the start of the slot after its (newest block's) signature.
fn now_for(case: &str) -> u64 {
    let checks = &expected(case)["decoded"]["checks"];
    let signature = match checks["blocks"].as_array() {
        Some(blocks) => &blocks.last().unwrap()["signature"],
        None => &checks["signature"],
    };
    let slot = signature["signed_slot"].as_u64().unwrap();
    1_606_824_023 + (slot + 1) * 12
}

fn options(case: &str) -> String {
    let checkpoint = expected(case)["trusted_checkpoint"].clone();
    serde_json::json!({"network": "mainnet", "checkpoint": checkpoint}).to_string()
}

fn verify(v: &mut Verifier, case: &str, bytes: &[u8]) -> Result<Value, VerifierError> {
    let e = expected(case);
    let method = e["method"].as_str().unwrap();
    let answer = v.verify(method, &e["params"].to_string(), bytes, now_for(case))?;
    Ok(serde_json::from_str(&answer).unwrap())
}

/// A proof with sync data of a family this build holds: eth_blockNumber, else (receipts only)
/// eth_getTransactionReceipt.
const CASE: &str = if cfg!(feature = "blocks") {
    "syncdata_electra_blocknumber"
} else {
    "syncdata_deneb_receipt"
};

fn assert_recorded(case: &str, answer: &Value) {
    common::recorded::assert_recorded(case, &expected(case), answer);
}

#[test]
fn a_checkpoint_and_a_proofs_sync_data_answer_and_the_state_round_trips() {
    let mut v = Verifier::new(&options(CASE), None).unwrap();
    assert_eq!(
        v.client_state()[0],
        2,
        "a checkpoint-only verifier says so to a prover"
    );
    assert!(v.periods().is_empty());
    let answer = verify(&mut v, CASE, &proof(CASE)).unwrap();
    assert_recorded(CASE, &answer);
    assert!(
        !v.periods().is_empty(),
        "the bootstrap's committee was learned"
    );
    assert_eq!(v.client_state()[0], 1, "now it names its periods");
    let state = v.save_state();
    let mut again = Verifier::new(r#"{"network":"mainnet"}"#, Some(&state)).unwrap();
    assert_eq!(again.periods(), v.periods());
    assert_eq!(again.save_state(), state);
    assert_eq!(verify(&mut again, CASE, &proof(CASE)).unwrap(), answer);
}

#[test]
fn a_changed_proof_a_wrong_checkpoint_and_an_old_clock_are_refused_by_name() {
    let mut bytes = proof(CASE);
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    let mut v = Verifier::new(&options(CASE), None).unwrap();
    let err = verify(&mut v, CASE, &bytes).unwrap_err();
    assert!(matches!(&err, VerifierError::Refused { .. }), "{err}");
    let other = r#"{"network":"mainnet","checkpoint":"0x1111111111111111111111111111111111111111111111111111111111111111"}"#;
    let mut v = Verifier::new(other, None).unwrap();
    let err = verify(&mut v, CASE, &proof(CASE)).unwrap_err();
    let VerifierError::Refused { check, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(check.as_deref(), Some("sync_data"), "{err}");
    if !cfg!(feature = "blocks") {
        return; // a receipt is asked by hash: no `latest` to be fresh
    }
    // The same proof an hour later: `latest` is no longer fresh.
    let late = options(CASE).replace('}', &format!(",\"now\":{}}}", now_for(CASE) + 3600));
    let mut v = Verifier::new(&late, None).unwrap();
    let err = verify(&mut v, CASE, &proof(CASE)).unwrap_err();
    assert!(err.to_string().contains("latest"), "{err}");
}

#[test]
fn misuse_is_an_error_naming_what() {
    for (options, says) in [
        (r#"{"network":"mainnet"}"#, "checkpoint"),
        (r#"{"network":"goerli","checkpoint":"0x00"}"#, "goerli"),
        (r#"{"checkpoint":"0x12"}"#, "checkpoint"),
        (r#"[1]"#, "object"),
        (
            r#"{"network":{"config":{}},"checkpoint":"0x00"}"#,
            "network",
        ),
        (
            r#"{"network":"mainnet","maxHeadAge":-1,"checkpoint":"0x1111111111111111111111111111111111111111111111111111111111111111"}"#,
            "maxHeadAge",
        ),
        (
            r#"{"network":"mainnet","acceptIncompleteLogs":"yes","checkpoint":"0x1111111111111111111111111111111111111111111111111111111111111111"}"#,
            "acceptIncompleteLogs",
        ),
    ] {
        let err = Verifier::new(options, None).unwrap_err();
        assert!(err.to_string().contains(says), "{options}: {err}");
    }
    let err = Verifier::new(r#"{"network":"mainnet"}"#, Some(b"not a state")).unwrap_err();
    assert!(err.to_string().contains("state"), "{err}");
    let mut v = Verifier::new(&options(CASE), None).unwrap();
    let err = v
        .verify("eth_sendRawTransaction", "[]", &proof(CASE), 0)
        .unwrap_err();
    assert!(err.to_string().contains("eth_sendRawTransaction"), "{err}");
    let err = v
        .verify("eth_blockNumber", "{", &proof(CASE), 0)
        .unwrap_err();
    assert!(matches!(err, VerifierError::Params(_)), "{err}");
}

#[test]
fn a_damaged_state_is_refused_naming_why() {
    let mut v = Verifier::new(&options(CASE), None).unwrap();
    verify(&mut v, CASE, &proof(CASE)).unwrap();
    // The committee trusted anew for a period no other test names: an entry this process has
    // not read before (one it has is known by its digest, see the next test).
    let keys = &v.save_state()[74 + 8..74 + 8 + 512 * 48];
    let mut unread = Verifier::new(&options(CASE), None).unwrap();
    unread.add_committee_keys(987_654, keys).unwrap();
    let state = unread.save_state();
    let mainnet = r#"{"network":"mainnet"}"#;
    // A byte of a key changed, of the checkpoint changed, the state cut short by a byte, a
    // byte added.
    let mut changed = state.clone();
    changed[74 + 8 + 513 * 48 + 1000] ^= 1;
    let mut checkpoint = state.clone();
    checkpoint[20] ^= 1;
    let cut = state[..state.len() - 1].to_vec();
    let longer = [state.as_slice(), &[0]].concat();
    for (bad, says) in [
        (changed, "entry 0: its SHA-256 does not match"),
        (checkpoint, "head: its SHA-256 does not match"),
        (cut, "truncated"),
        (longer, "1 bytes after the last entry"),
    ] {
        let err = Verifier::new(mainnet, Some(&bad)).unwrap_err();
        assert!(err.to_string().contains(says), "{err}");
    }
}

#[test]
fn an_entry_read_before_is_known_by_its_digest_and_keeps_its_keys() {
    let mut v = Verifier::new(&options(CASE), None).unwrap();
    verify(&mut v, CASE, &proof(CASE)).unwrap();
    let state = v.save_state();
    let mainnet = r#"{"network":"mainnet","maxHeadAge":1073741824}"#;
    Verifier::new(mainnet, Some(&state)).unwrap();
    // A key's bytes damaged under the entry's intact digest: the process read that entry, so
    // it takes the keys it read then, not the damaged bytes, and answers as the state did.
    let mut damaged = state.clone();
    damaged[74 + 8 + 513 * 48 + 1000] ^= 1;
    damaged[74 + 8 + 100] ^= 1;
    let mut again = Verifier::new(mainnet, Some(&damaged)).unwrap();
    assert_eq!(again.save_state(), state);
    let answer = verify(&mut again, CASE, &proof(CASE)).unwrap();
    assert_recorded(CASE, &answer);
}

#[test]
fn a_state_saved_in_the_earlier_form_loads_checked_and_answers() {
    // Two vectors signed by period 1393's committee; the receipt one for a receipts-only build.
    let case = if cfg!(feature = "accounts") {
        "eth_getBalance1"
    } else {
        "eth_getTransactionReceipt1"
    };
    let keys = common::read(&case_dir(case).join("sync_committee_1393.pubkeys"));
    let committee = SyncCommittee {
        pubkeys: FixedVector::new(keys.chunks(48).map(BlsPublicKey::from_slice).collect()).unwrap(),
        aggregate_pubkey: BlsPublicKey::ZERO,
    };
    // SZGTRST1: magic, no checkpoint, one entry of period, committee (SSZ), uncompressed keys.
    let mut earlier = b"SZGTRST1".to_vec();
    earlier.extend([0u8; 33]);
    earlier.push(1);
    earlier.extend(1393u64.to_le_bytes());
    earlier.extend_from_slice(&keys);
    earlier.extend([0u8; 48]);
    earlier.extend(
        CommitteeKeys::new(&committee, 1393)
            .unwrap()
            .to_uncompressed(),
    );
    let mainnet = r#"{"network":"mainnet","maxHeadAge":1073741824}"#;
    let mut v = Verifier::new(mainnet, Some(&earlier)).unwrap();
    assert_eq!(v.periods(), [1393]);
    let e = expected(case);
    let answer = v
        .verify(
            e["method"].as_str().unwrap(),
            &e["params"].to_string(),
            &proof(case),
            now_for(case),
        )
        .unwrap();
    assert_recorded(case, &serde_json::from_str::<Value>(&answer).unwrap());
    // Saved again in the current form, its entry equal to that of a state given the same
    // keys directly (the heads differ: that one has a checkpoint).
    let checkpoint = format!("0x{}", "11".repeat(32));
    let options = serde_json::json!({"network": "mainnet", "checkpoint": checkpoint});
    let mut direct = Verifier::new(&options.to_string(), None).unwrap();
    direct.add_committee_keys(1393, &keys).unwrap();
    let entry = |state: Vec<u8>| state[74..].to_vec();
    assert_eq!(entry(v.save_state()), entry(direct.save_state()));
    // The earlier form's keys are still checked against their committee.
    let mut changed = earlier.clone();
    changed[42 + 8 + 513 * 48 + 96 * 3 + 40] ^= 1;
    let err = Verifier::new(mainnet, Some(&changed)).unwrap_err();
    assert!(err.to_string().contains("entry 0"), "{err}");
}

/// colibri's eth_getLogs form cannot show that no block of the range was left out: refused
/// naming `completeness` unless the options take it (`acceptIncompleteLogs`, as `sszgate rpc
/// --accept-incomplete-logs`); taken, its logs are the recorded ones, and a changed log is
/// still refused by the receipt proofs.
#[cfg(feature = "logs")]
#[test]
fn colibri_logs_are_refused_as_incomplete_unless_the_options_take_them() {
    let case = "eth_getLogs1";
    let recorded = expected(case)["result"].clone();
    let keys = common::read(&case_dir(case).join("sync_committee_1351.pubkeys"));
    for accept in [None, Some(false), Some(true)] {
        let mut options = serde_json::json!({
            "network": "mainnet",
            "checkpoint": format!("0x{}", "11".repeat(32)),
        });
        if let Some(accept) = accept {
            options["acceptIncompleteLogs"] = accept.into();
        }
        let mut v = Verifier::new(&options.to_string(), None).unwrap();
        v.add_committee_keys(1351, &keys).unwrap();
        let got = verify(&mut v, case, &proof(case));
        if accept != Some(true) {
            let err = got.unwrap_err();
            assert!(
                matches!(&err, VerifierError::Refused { check: Some(c), .. } if c == "completeness"),
                "{accept:?}: {err:?}"
            );
            continue;
        }
        let logs = got.unwrap();
        let (logs, recorded) = (logs.as_array().unwrap(), recorded.as_array().unwrap());
        assert_eq!(logs.len(), recorded.len());
        for (ours, theirs) in logs.iter().zip(recorded) {
            for field in [
                "blockHash",
                "blockNumber",
                "transactionHash",
                "address",
                "topics",
                "data",
            ] {
                assert_eq!(ours[field], theirs[field], "{field}");
            }
        }
        // The emitting contract's address in the last receipt the proof carries, changed.
        let address = const_hex::decode(recorded[0]["address"].as_str().unwrap()).unwrap();
        let mut changed = proof(case);
        let at = changed
            .windows(address.len())
            .rposition(|w| w == address.as_slice())
            .expect("the address is in a proven receipt");
        changed[at] ^= 1;
        let err = verify(&mut v, case, &changed).unwrap_err();
        assert!(
            matches!(&err, VerifierError::Refused { check: Some(_), .. }),
            "{err:?}"
        );
    }
}
