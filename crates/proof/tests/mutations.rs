//! Bad proofs, made from the colibri vectors: bytes flipped (60 to 300 spread over each
//! proof), truncations, extensions, union selectors with no option, proofs
//! for another request, and typed field changes. Each must be refused with an error naming the
//! check or field — or, for the few bytes the result does not depend on, leave the verified
//! result exactly as it was.

mod common;

use common::{case_names, expected, proof_bytes, trust_for};
use serde_json::Value;
use ssz::Encode;
use sszgate_proof::types::{CodeUnion, DataUnion, ProofUnion, StateBlockUnion};
use sszgate_proof::{Check, ProofError, TrustedState, decode, verify};

struct Case {
    name: String,
    bytes: Vec<u8>,
    method: String,
    params: Value,
    trust: TrustedState,
    result: Value,
}

fn case(name: &str) -> Case {
    let e = expected(name);
    let bytes = proof_bytes(name);
    let trust = trust_for(name);
    let (method, params) = (
        e["method"].as_str().unwrap().to_string(),
        e["params"].clone(),
    );
    let result = verify(&bytes, &method, &params, &mut trust.clone()).unwrap();
    Case {
        name: name.into(),
        bytes,
        method,
        params,
        trust,
        result,
    }
}

fn run(c: &Case, bytes: &[u8]) -> Result<Value, ProofError> {
    verify(bytes, &c.method, &c.params, &mut c.trust.clone())
}

fn cases() -> Vec<Case> {
    case_names().iter().map(|n| case(n)).collect()
}

/// A request with the fields the answer does not depend on zeroed: the version's patch byte,
/// the receipt's display mask, and the fields sszgate does not return because the proof does
/// not bind them (`UNBOUND_RECEIPT_FIELDS`, `UNBOUND_LOG_FIELDS`).
fn without_unbound(mut r: sszgate_proof::C4Request) -> sszgate_proof::C4Request {
    r.version.0[3] = 0;
    match &mut r.data {
        DataUnion::Receipt(d) => {
            (d.optmask, d.gas_used, d.effective_gas_price) = (0, 0, 0);
            d.logs.iter_mut().for_each(|l| l.log_index = 0);
        }
        DataUnion::Logs(logs) => logs.iter_mut().for_each(|l| l.log_index = 0),
        _ => {}
    }
    r
}

/// A flip the answer cannot depend on: only unbound fields differ from the original.
fn harmless(c: &Case, flipped: &[u8]) -> bool {
    let (original, changed) = (decode(&c.bytes).unwrap(), decode(flipped).unwrap());
    without_unbound(original) == without_unbound(changed)
}

#[test]
fn every_flipped_byte_is_refused_or_changes_nothing() {
    let mut refused = 0;
    for c in cases() {
        // About 300 evenly spread bytes (every byte of the smallest proofs); 60 of the proofs
        // over 20 kB, which re-hash a whole payload or re-check sync data on every run.
        let flips = if c.bytes.len() > 20_000 { 60 } else { 300 };
        let stride = (c.bytes.len() / flips).max(1);
        let mut unchanged = Vec::new();
        for at in (0..c.bytes.len()).step_by(stride) {
            let mut bad = c.bytes.clone();
            bad[at] ^= 0x01;
            match run(&c, &bad) {
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    refused += 1;
                }
                Ok(result) => {
                    assert_eq!(
                        result, c.result,
                        "{}: byte {at} flipped changed the verified answer",
                        c.name
                    );
                    if !harmless(&c, &bad) {
                        unchanged.push(at);
                    }
                }
            }
        }
        assert!(
            unchanged.is_empty(),
            "{}: flips of bound fields accepted at {unchanged:?}",
            c.name
        );
    }
    eprintln!("{refused} flipped bytes refused");
}

#[test]
fn truncated_and_extended_proofs_are_refused_as_undecodable() {
    for c in cases() {
        let n = c.bytes.len();
        for cut in [1, 2, 31, 32, 33, n / 2, n - 1] {
            let err = run(&c, &c.bytes[..n - cut]).expect_err(&format!("{}: cut {cut}", c.name));
            assert!(
                matches!(err, ProofError::Decode(_) | ProofError::Check { .. }),
                "{}: {err}",
                c.name
            );
        }
        for extra in [1usize, 4, 32] {
            let mut long = c.bytes.clone();
            long.extend(std::iter::repeat_n(0u8, extra));
            // Bytes appended land in the last variable-size field: undecodable, or a check fails.
            let err = run(&c, &long).expect_err(&format!("{}: +{extra}", c.name));
            assert!(
                matches!(err, ProofError::Decode(_) | ProofError::Check { .. }),
                "{}: +{extra}: {err}",
                c.name
            );
        }
    }
}

#[test]
fn union_selectors_without_an_option_are_refused_by_name() {
    let c = case("eth_getTransactionReceipt1");
    let offsets: Vec<usize> = (0..3)
        .map(|i| u32::from_le_bytes(c.bytes[4 + 4 * i..8 + 4 * i].try_into().unwrap()) as usize)
        .collect();
    for (offset, union, selectors) in [
        (
            offsets[0],
            "DataUnion",
            [4u8, 7, 8, 9, 10, 127, 255].as_slice(),
        ),
        (offsets[1], "ProofUnion", [10, 11, 200].as_slice()),
        (offsets[2], "SyncDataUnion", [2, 3, 255].as_slice()),
    ] {
        for &s in selectors {
            let mut bad = c.bytes.clone();
            bad[offset] = s;
            let err = run(&c, &bad).expect_err("selector");
            let text = err.to_string();
            assert!(
                text.contains(union) && text.contains(&format!("selector {s}")),
                "{text}"
            );
        }
    }
}

#[test]
fn a_proof_for_another_request_is_refused() {
    let all = cases();
    for proof in &all {
        for request in &all {
            let same_request = proof.method == request.method && proof.params == request.params;
            if same_request {
                continue;
            }
            let outcome = verify(
                &proof.bytes,
                &request.method,
                &request.params,
                &mut proof.trust.clone(),
            );
            // A tag ("latest") names no block a proof could be checked against: a proof of
            // another block answers it, with that block (how fresh is the caller's policy).
            let tag = request.params.to_string().contains("\"latest\"");
            if let (true, Ok(answer)) = (tag, &outcome) {
                assert_eq!(
                    answer["hash"], proof.result["hash"],
                    "{} for {}",
                    proof.name, request.name
                );
                continue;
            }
            let err = outcome.expect_err(&format!(
                "{}'s proof for {}'s request",
                proof.name, request.name
            ));
            assert!(
                matches!(err.check(), Some(Check::ProofKind | Check::Request)),
                "{} for {}: {err}",
                proof.name,
                request.name
            );
        }
    }
}

/// Re-encodes `c`'s proof after `change`, verifies it, and returns the check that failed.
fn mutated(c: &Case, change: impl FnOnce(&mut sszgate_proof::C4Request)) -> Check {
    let mut request = decode(&c.bytes).unwrap();
    change(&mut request);
    let err = run(c, &request.as_ssz_bytes()).expect_err("a changed field");
    err.check().unwrap_or_else(|| panic!("{}: {err}", c.name))
}

#[test]
fn typed_field_changes_fail_the_check_that_covers_them() {
    let tx = case("eth_getTransactionByHash1");
    let change_tx = |f: fn(&mut sszgate_proof::types::TransactionProof)| {
        mutated(&tx, |r| match &mut r.proof {
            ProofUnion::Transaction(p) => f(p),
            _ => unreachable!(),
        })
    };
    assert_eq!(change_tx(|p| p.transaction_index += 1), Check::BodyRoot);
    assert_eq!(change_tx(|p| p.block_number += 1), Check::BodyRoot);
    assert_eq!(change_tx(|p| p.base_fee_per_gas += 1), Check::BodyRoot);
    assert_eq!(change_tx(|p| p.header.slot += 1), Check::Signature);
    assert_eq!(
        change_tx(|p| p.header.proposer_index += 1),
        Check::Signature
    );
    assert_eq!(
        change_tx(|p| p.proof.push(Default::default()).unwrap()),
        Check::BodyRoot
    );
}

/// colibri's LogsProof (taken with `accept_incomplete_logs`): the returned logs must be the
/// proven receipts' matching logs, each once and none left out.
#[test]
fn colibri_logs_must_be_the_proven_matching_logs_each_once() {
    let logs = case("eth_getLogs1");
    let change_logs = |f: fn(&mut Vec<sszgate_proof::types::Log>)| {
        let mut request = decode(&logs.bytes).unwrap();
        let DataUnion::Logs(list) = &mut request.data else {
            unreachable!()
        };
        let mut all = list.to_vec();
        f(&mut all);
        request.data = DataUnion::Logs(all.try_into().unwrap());
        run(&logs, &request.as_ssz_bytes()).expect_err("changed logs")
    };
    let says = |e: ProofError, text: &str| {
        assert_eq!(e.check(), Some(Check::ReceiptData), "{e}");
        assert!(e.to_string().contains(text), "{e} does not say {text}");
    };
    says(change_logs(|l| drop(l.pop())), "but was not returned");
    says(
        change_logs(|l| l.push(l[0].clone())),
        "equals no (unreturned) log",
    );
    says(
        change_logs(|l| l[0].transaction_index = 999),
        "no proven receipt for block",
    );
}

#[test]
fn account_field_changes_fail_the_check_that_covers_them() {
    let account = case("eth_getStorageAt1");
    let change_account = |f: fn(&mut sszgate_proof::types::AccountProof)| {
        mutated(&account, |r| match &mut r.proof {
            ProofUnion::Account(p) => f(p),
            _ => unreachable!(),
        })
    };
    assert_eq!(
        change_account(|p| p.state_proof.block = StateBlockUnion::Number(1)),
        Check::Request
    );
    assert_eq!(
        change_account(|p| {
            let n = p.account_proof.len() - 1;
            p.account_proof = p.account_proof[..n].to_vec().try_into().unwrap();
        }),
        Check::AccountProof
    );
    // colibri accepts a storage proof cut to its first node and answers 0 (§9.1).
    assert_eq!(
        change_account(|p| {
            let n = p.storage_proof[0].proof[0].clone();
            p.storage_proof[0].proof = vec![n].try_into().unwrap();
        }),
        Check::StorageProof
    );
    assert_eq!(
        change_account(|p| p.storage_proof[0].key.0[31] ^= 1),
        Check::Request
    );
}

/// Unsets the first 200 bits of a block-number proof's header aggregate.
fn drop_200_signers(r: &mut sszgate_proof::C4Request) {
    match &mut r.proof {
        ProofUnion::BlockNumber(p) => match &mut p.header_proof {
            sszgate_proof::types::HeaderProofUnion::Signature(a) => {
                for i in 0..200 {
                    a.sync_committee_bits.set(i, false).unwrap();
                }
            }
            _ => unreachable!(),
        },
        _ => unreachable!(),
    }
}

#[test]
fn fewer_than_two_thirds_of_the_committee_is_not_enough() {
    let number = case("eth_blockNumber_electra");
    assert_eq!(mutated(&number, drop_200_signers), Check::Participation);
}

/// The verifier's participation rule is its own (`--min-participation` with `--prover`):
/// lowered to 100, the aggregate left with fewer than 342 signers passes the participation
/// check and is refused by its signature (its bits changed); the unchanged proof verifies.
#[test]
fn a_lowered_participation_rule_is_the_verifiers() {
    let mut number = case("eth_blockNumber_electra");
    let lowered = sszgate_light::ParticipationPolicy::new(100).unwrap();
    number.trust = number.trust.clone().with_participation(lowered);
    assert_eq!(run(&number, &number.bytes).unwrap(), number.result);
    assert_eq!(mutated(&number, drop_200_signers), Check::Signature);
}

#[test]
fn call_code_must_be_known_and_hash_to_the_proven_code_hash() {
    let shipped = case("eth_call1_include_code");
    let code_check = mutated(&shipped, |r| match &mut r.proof {
        ProofUnion::Call(p) => {
            let with_code = p
                .accounts
                .iter_mut()
                .find(|a| matches!(a.code, CodeUnion::Code(_)))
                .unwrap();
            if let CodeUnion::Code(code) = &mut with_code.code {
                code[0] ^= 1;
            }
        }
        _ => unreachable!(),
    });
    assert_eq!(code_check, Check::Code);
    // Without the code in the proof or known to the verifier, the call cannot run.
    let not_shipped = case("eth_call1");
    let mut no_codes = not_shipped.trust.clone();
    no_codes.codes.clear();
    let err = verify(
        &not_shipped.bytes,
        &not_shipped.method,
        &not_shipped.params,
        &mut no_codes,
    )
    .unwrap_err();
    assert!(matches!(err, ProofError::Unprovable(_)), "{err}");
}

/// The little-endian `u32` at `at`.
fn offset(bytes: &[u8], at: usize) -> usize {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize
}

#[test]
fn inner_union_selectors_without_an_option_are_refused_by_name() {
    // TransactionProof: the header proof's offset follows 172 fixed bytes of the container.
    let tx = case("eth_getTransactionByHash1");
    let proof = offset(&tx.bytes, 8) + 1;
    let header_proof = proof + offset(&tx.bytes, proof + 172);
    // AccountProof: the state proof's offset at 28; StateProof: the block union's at 0.
    let account = case("eth_getBalance1");
    let proof_a = offset(&account.bytes, 8) + 1;
    let state_proof = proof_a + offset(&account.bytes, proof_a + 28);
    let block = state_proof + offset(&account.bytes, state_proof);
    for (c, at, union, selectors) in [
        (&tx, header_proof, "HeaderProofUnion", [3u8, 9, 255]),
        (&account, block, "StateBlockUnion", [3, 4, 128]),
    ] {
        for s in selectors {
            let mut bad = c.bytes.clone();
            bad[at] = s;
            let text = run(c, &bad).expect_err("selector").to_string();
            assert!(
                text.contains(union) && text.contains(&format!("selector {s}")),
                "{text}"
            );
        }
    }
}

#[test]
fn a_header_chain_must_link_the_data_header_to_the_signed_one() {
    use sszgate_proof::types::{HeaderChainProof, HeaderProofUnion, ProofHeader};
    fn between(data: &sszgate_light::types::BeaconBlockHeader) -> ProofHeader {
        ProofHeader {
            slot: data.slot + 1,
            proposer_index: 7,
            state_root: Default::default(),
            body_root: Default::default(),
        }
    }
    let tx = case("eth_getTransactionByHash1");
    let chain = |link: fn(
        &sszgate_light::types::BeaconBlockHeader,
    ) -> (Vec<ProofHeader>, sszgate_light::types::BeaconBlockHeader)| {
        mutated(&tx, |r| {
            let ProofUnion::Transaction(p) = &mut r.proof else {
                unreachable!()
            };
            let HeaderProofUnion::Signature(aggregate) = &p.header_proof else {
                unreachable!()
            };
            let (headers, header) = link(&p.header);
            p.header_proof = HeaderProofUnion::Headers(Box::new(HeaderChainProof {
                headers: headers.try_into().unwrap(),
                header,
                sync_committee_bits: aggregate.sync_committee_bits.clone(),
                sync_committee_signature: aggregate.sync_committee_signature,
            }));
        })
    };
    // Linked (one header between, then a child of it): the chain holds, the signature (the
    // data block's child's) does not sign the later header.
    let linked = chain(|data| {
        let mid = between(data);
        let full = sszgate_light::types::BeaconBlockHeader {
            slot: mid.slot,
            proposer_index: mid.proposer_index,
            parent_root: data.root(),
            state_root: mid.state_root,
            body_root: mid.body_root,
        };
        let signed = sszgate_light::types::BeaconBlockHeader {
            slot: data.slot + 2,
            parent_root: full.root(),
            ..*data
        };
        (vec![mid], signed)
    });
    assert_eq!(linked, Check::Signature);
    // The signed header's parent is not the last header between: refused as a broken chain.
    let broken = chain(|data| {
        (
            vec![between(data)],
            sszgate_light::types::BeaconBlockHeader {
                slot: data.slot + 2,
                ..*data
            },
        )
    });
    assert_eq!(broken, Check::HeaderChain);
    // Slots must rise.
    let backwards = chain(|data| {
        (
            vec![ProofHeader {
                slot: data.slot,
                ..between(data)
            }],
            *data,
        )
    });
    assert_eq!(backwards, Check::HeaderChain);
}
