//! The checks on real mainnet data: every real payload verifies, and each kind of corruption
//! (a transaction byte, a truncated transaction, a reordered withdrawal, a wrong requests list,
//! a wrong versioned hash, an over-long extra data, a wrong commitment, a swapped blob, swapped
//! proofs) is caught by the check that names it.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use alloy_consensus::{EthereumTxEnvelope, Signed, TxEip4844, TxEip4844WithSidecar};
use alloy_eips::{
    eip2718::{Decodable2718, Encodable2718},
    eip7594::BlobTransactionSidecarVariant,
};
use alloy_primitives::{B256, Bytes};
use alloy_rpc_types_engine::{ExecutionPayloadV3, PayloadId};
use sszgate_engine::{
    Fork, Message,
    blob_answer::{Answer, WithoutBlobs},
    message::{Blobs, BlobsRequest, BuiltPayload, Forkchoice, NewPayload},
    method,
};
use sszgate_fixtures::{self as fixtures, BlobItem, Fixtures, versioned_hash};
use sszgate_verify::{Check, Mode, Verdict, Verifier, pace::HandClock, payload};

fn dirs() -> Vec<PathBuf> {
    let mut dirs = vec![fixtures::testdata_dir()];
    let data = fixtures::data_dir();
    if data.canonicalize().ok() != dirs[0].canonicalize().ok() {
        dirs.push(data);
    }
    dirs
}

fn failed(result: Result<(), sszgate_verify::Failure>) -> Check {
    match result {
        Err(f) => f.check,
        Ok(()) => panic!("the corruption was not caught"),
    }
}

#[test]
fn every_real_payload_verifies() {
    let mut checked = 0;
    for dir in dirs() {
        for block in Fixtures::load(&dir).unwrap().blocks {
            let np = block.new_payload().unwrap();
            payload::check_new_payload(&np)
                .unwrap_or_else(|f| panic!("{}: {f}", block.file.display()));
            checked += 1;
        }
    }
    assert!(checked >= 14, "{checked} payloads");
}

/// The newest real Electra block that has withdrawals and blob transactions.
fn electra() -> NewPayload {
    let fixtures = Fixtures::load(&fixtures::testdata_dir()).unwrap();
    fixtures
        .blocks
        .iter()
        .rev()
        .map(|b| b.new_payload().unwrap())
        .find(|np| match np {
            NewPayload::Prague(p, hashes, ..) => {
                !hashes.is_empty() && p.payload_inner.withdrawals.len() > 1
            }
            _ => false,
        })
        .expect("an electra block with blobs and withdrawals in testdata")
}

fn parts(np: &mut NewPayload) -> (&mut ExecutionPayloadV3, &mut Vec<B256>) {
    match np {
        NewPayload::Prague(p, hashes, ..) => (p, hashes),
        _ => unreachable!(),
    }
}

#[test]
fn each_corrupted_payload_is_caught_by_its_check() {
    let good = electra();
    payload::check_new_payload(&good).unwrap();

    // A byte inside a transaction's data: it still decodes, the block hash no longer holds.
    let mut np = good.clone();
    let (p, _) = parts(&mut np);
    let txs = &mut p.payload_inner.payload_inner.transactions;
    let i = txs.iter().position(|t| t[0] == 2 && t.len() > 200).unwrap();
    let mut tx = txs[i].to_vec();
    let middle = tx.len() - 80;
    tx[middle] ^= 0x01;
    txs[i] = Bytes::from(tx);
    assert_eq!(failed(payload::check_new_payload(&np)), Check::BlockHash);

    // A truncated transaction does not decode.
    let mut np = good.clone();
    let (p, _) = parts(&mut np);
    let txs = &mut p.payload_inner.payload_inner.transactions;
    txs[0] = txs[0].slice(..txs[0].len() - 3);
    assert_eq!(failed(payload::check_new_payload(&np)), Check::Transactions);

    // Two withdrawals swapped.
    let mut np = good.clone();
    let (p, _) = parts(&mut np);
    p.payload_inner.withdrawals.swap(0, 1);
    assert_eq!(failed(payload::check_new_payload(&np)), Check::BlockHash);

    // A requests list with a request left out, or one added when there was none.
    let mut np = good.clone();
    if let NewPayload::Prague(_, _, _, requests) = &mut np {
        let mut list = requests.clone().take();
        if list.pop().is_none() {
            list.push(Bytes::from_static(&[0x00, 0x01]));
        }
        *requests = alloy_eips::eip7685::Requests::new(list);
    }
    assert_eq!(failed(payload::check_new_payload(&np)), Check::BlockHash);

    // The CL's versioned hashes: one wrong.
    let mut np = good.clone();
    let (_, hashes) = parts(&mut np);
    hashes[0] = B256::repeat_byte(0x01);
    assert_eq!(
        failed(payload::check_new_payload(&np)),
        Check::VersionedHashes
    );

    // Extra data over 32 bytes.
    let mut np = good.clone();
    let (p, _) = parts(&mut np);
    p.payload_inner.payload_inner.extra_data = Bytes::from(vec![0; 33]);
    assert_eq!(failed(payload::check_new_payload(&np)), Check::Limits);
}

/// A getPayload answer that holds together: the reference payload with the real blob
/// transactions of testdata appended (consensus form), the bundle of their blobs, and the
/// block hash recomputed; with the root its attributes carried.
fn consistent_built(fork: Fork) -> (BuiltPayload, B256, Vec<BlobItem>) {
    let fixtures = Fixtures::load(&fixtures::testdata_dir()).unwrap();
    let (_, mut payload) = fixtures.reference_payload().unwrap();
    let items = fixtures.blobs().unwrap();
    let txs = &mut payload.payload_inner.payload_inner.transactions;
    txs.retain(|t| t[0] != 3);
    for tx in &fixtures.blob_txs {
        let raw = std::fs::read(&tx.file).unwrap();
        let envelope = EthereumTxEnvelope::<TxEip4844WithSidecar<BlobTransactionSidecarVariant>>::network_decode(&mut raw.as_slice()).unwrap();
        let EthereumTxEnvelope::Eip4844(signed) = envelope else {
            unreachable!()
        };
        let bare: Signed<TxEip4844> =
            Signed::new_unhashed(signed.tx().tx.clone(), *signed.signature());
        txs.push(bare.encoded_2718().into());
    }
    let root = B256::repeat_byte(0x42);
    let built = fixtures::built_payload(fork, &payload, &items, items.len()).unwrap();
    let mut built = built;
    let p = match &mut built {
        BuiltPayload::V4(e) => &mut e.envelope_inner.execution_payload,
        BuiltPayload::V5(e) => &mut e.execution_payload,
        _ => unreachable!(),
    };
    let np = NewPayload::Prague(p.clone(), vec![], root, Default::default());
    p.payload_inner.payload_inner.block_hash = payload::block_hash(&np).unwrap();
    (built, root, items)
}

/// Runs the verifier over a forkchoiceUpdated that starts the build, then the getPayload.
fn verify_built(fork: Fork, built: &BuiltPayload, root: B256) -> Verdict {
    let (mut verifier, id) = after_forkchoice(Mode::All, fork, root);
    let get = method::for_fork(method::Family::GetPayload, fork).unwrap();
    verifier
        .call(
            get,
            fork,
            &Message::PayloadId(id),
            Some(&Message::BuiltPayload(built.clone())),
        )
        .expect("a verdict")
        .verdict
}

/// A verifier in `mode` that has seen the forkchoiceUpdated starting build `id` on `root`.
fn after_forkchoice(mode: Mode, fork: Fork, root: B256) -> (Verifier, PayloadId) {
    let mut verifier = Verifier::new(mode);
    let id = PayloadId::new([7; 8]);
    let fcu_method = method::by_name("engine_forkchoiceUpdatedV3").unwrap();
    let mut attributes = fixtures::synthetic::attributes(fork);
    attributes.parent_beacon_block_root = Some(root);
    let fcu = Message::Forkchoice(Forkchoice {
        state: Default::default(),
        attributes: Some(attributes),
        custody_columns: None,
    });
    let answer = Message::ForkchoiceResponse(alloy_rpc_types_engine::ForkchoiceUpdated {
        payload_status: alloy_rpc_types_engine::PayloadStatus::from_status(
            alloy_rpc_types_engine::PayloadStatusEnum::Valid,
        ),
        payload_id: Some(id),
    });
    assert_eq!(verifier.call(fcu_method, fork, &fcu, Some(&answer)), None);
    (verifier, id)
}

/// `built` with its second commitment zeroed.
fn with_wrong_commitment(built: &BuiltPayload) -> BuiltPayload {
    let mut bad = built.clone();
    match &mut bad {
        BuiltPayload::V4(e) => e.envelope_inner.blobs_bundle.commitments[1] = Default::default(),
        BuiltPayload::V5(e) => e.blobs_bundle.commitments[1] = Default::default(),
        _ => unreachable!(),
    }
    bad
}

/// `built` with its first two blobs swapped.
fn with_blobs_swapped(built: &BuiltPayload) -> BuiltPayload {
    let mut bad = built.clone();
    match &mut bad {
        BuiltPayload::V4(e) => e.envelope_inner.blobs_bundle.blobs.swap(0, 1),
        BuiltPayload::V5(e) => e.blobs_bundle.blobs.swap(0, 1),
        _ => unreachable!(),
    }
    bad
}

/// `built` with its gas used off by one (its block hash no longer holds).
fn with_gas_used_changed(built: &BuiltPayload) -> BuiltPayload {
    let mut bad = built.clone();
    let payload = match &mut bad {
        BuiltPayload::V4(e) => &mut e.envelope_inner.execution_payload,
        BuiltPayload::V5(e) => &mut e.execution_payload,
        _ => unreachable!(),
    };
    payload.payload_inner.payload_inner.gas_used += 1;
    bad
}

fn failed_check(verdict: Verdict) -> Check {
    match verdict {
        Verdict::Failed(f) => f.check,
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[test]
fn built_payloads_verify_and_corrupted_bundles_are_caught() {
    for fork in [Fork::Prague, Fork::Osaka] {
        let (good, root, _) = consistent_built(fork);
        assert_eq!(
            verify_built(fork, &good, root),
            Verdict::Ok { kzg: true },
            "{fork}"
        );
        // Without the forkchoiceUpdated, the block hash cannot be checked: said so.
        let mut alone = Verifier::new(Mode::All);
        let get = method::for_fork(method::Family::GetPayload, fork).unwrap();
        let verdict = alone
            .call(
                get,
                fork,
                &Message::PayloadId(PayloadId::new([9; 8])),
                Some(&Message::BuiltPayload(good.clone())),
            )
            .unwrap()
            .verdict;
        assert!(matches!(verdict, Verdict::Skipped(_)), "{verdict:?}");

        // A wrong commitment.
        assert_eq!(
            failed_check(verify_built(fork, &with_wrong_commitment(&good), root)),
            Check::Commitments,
            "{fork}"
        );
        // Two blobs swapped: the commitments still match the transactions, the proofs do not.
        let bad = with_blobs_swapped(&good);
        // V4 bundles carry one blob proof per blob; V5 ones 128 cell proofs.
        let expected = if fork == Fork::Prague {
            Check::BlobProofs
        } else {
            Check::CellProofs
        };
        assert_eq!(
            failed_check(verify_built(fork, &bad, root)),
            expected,
            "{fork}"
        );
        // The block hash of the built payload is checked too.
        assert_eq!(
            failed_check(verify_built(fork, &with_gas_used_changed(&good), root)),
            Check::BlockHash,
            "{fork}"
        );
    }
}

/// testdata's real blobs and their versioned hashes.
fn real_blobs() -> (Vec<BlobItem>, Vec<B256>) {
    let items = Fixtures::load(&fixtures::testdata_dir())
        .unwrap()
        .blobs()
        .unwrap();
    let hashes = items
        .iter()
        .map(|b| versioned_hash(&b.commitment))
        .collect();
    (items, hashes)
}

#[test]
fn get_blobs_answers_are_checked_against_the_hashes_asked_for() {
    let (items, asked) = real_blobs();
    let n = items.len();
    let run = |method_name: &str, answer: Blobs| {
        let mut verifier = Verifier::new(Mode::All);
        let m = method::by_name(method_name).unwrap();
        verifier
            .call(
                m,
                Fork::Osaka,
                &Message::BlobsRequest(BlobsRequest {
                    versioned_hashes: asked.clone(),
                    indices: None,
                }),
                Some(&Message::Blobs(answer)),
            )
            .unwrap()
            .verdict
    };
    // V1: all there; one missing (null) is fine; one answered with another blob is not.
    let v1 = fixtures::blobs_v1_response(&items, n);
    assert_eq!(
        run("engine_getBlobsV1", Blobs::V1(v1.clone())),
        Verdict::Ok { kzg: true }
    );
    let mut gap = v1.clone();
    gap[2] = None;
    assert_eq!(
        run("engine_getBlobsV1", Blobs::V1(gap)),
        Verdict::Ok { kzg: true }
    );
    let mut swapped = v1.clone();
    swapped.swap(0, 1);
    assert_eq!(
        failed_check(run("engine_getBlobsV1", Blobs::V1(swapped))),
        Check::BlobsAnswer
    );
    let mut wrong_proof = v1;
    let proof = wrong_proof[1].as_ref().unwrap().proof;
    wrong_proof[0].as_mut().unwrap().proof = proof;
    assert_eq!(
        failed_check(run("engine_getBlobsV1", Blobs::V1(wrong_proof))),
        Check::BlobProofs
    );
    // V2: cell proofs; too few entries; proofs of another blob.
    let v2 = fixtures::blobs_v2_response(&items, n);
    assert_eq!(
        run("engine_getBlobsV2", Blobs::V2(Some(v2.clone()))),
        Verdict::Ok { kzg: true }
    );
    assert_eq!(
        failed_check(run("engine_getBlobsV2", Blobs::V2(Some(v2[1..].to_vec())))),
        Check::BlobsAnswer
    );
    let mut wrong = v2;
    wrong[0].proofs = wrong[1].proofs.clone();
    assert_eq!(
        failed_check(run("engine_getBlobsV2", Blobs::V2(Some(wrong)))),
        Check::CellProofs
    );
}

/// `result` read without its blobs, as the JSON-RPC answer of a call of `m`.
fn without_blobs(m: &method::MethodSpec, result: &[u8]) -> WithoutBlobs {
    let answer = [
        br#"{"jsonrpc":"2.0","id":1,"result":"#.as_slice(),
        result,
        b"}",
    ]
    .concat();
    Answer::whole(&answer)
        .read_without_blobs(m)
        .expect("a blob answer")
        .expect("of its shape")
}

/// The getPayload answer `built` read from its JSON without its blobs.
fn read_without_blobs(built: &BuiltPayload, get: &method::MethodSpec) -> WithoutBlobs {
    let json = Message::BuiltPayload(built.clone()).to_json().unwrap();
    without_blobs(get, &json)
}

#[test]
fn answers_read_without_their_blobs_get_every_check_but_kzg() {
    for fork in [Fork::Prague, Fork::Osaka] {
        let get = method::for_fork(method::Family::GetPayload, fork).unwrap();
        let run = |built: &BuiltPayload| {
            let (mut verifier, id) = after_forkchoice(Mode::All, fork, B256::repeat_byte(0x42));
            let answer = read_without_blobs(built, get);
            let request = Message::PayloadId(id);
            verifier
                .call_without_blobs(get, fork, &request, &answer)
                .expect("a verdict")
                .verdict
        };
        let (good, root, _) = consistent_built(fork);
        assert_eq!(root, B256::repeat_byte(0x42));
        assert_eq!(run(&good), Verdict::Ok { kzg: false }, "{fork}");
        // Swapped blobs go unseen without KZG (the proofs are what catches them)...
        let swapped = with_blobs_swapped(&good);
        assert_eq!(run(&swapped), Verdict::Ok { kzg: false }, "{fork}");
        // ...but a wrong commitment, a changed payload and a missing blob are caught.
        let bad = with_wrong_commitment(&good);
        assert_eq!(failed_check(run(&bad)), Check::Commitments, "{fork}");
        let bad = with_gas_used_changed(&good);
        assert_eq!(failed_check(run(&bad)), Check::BlockHash, "{fork}");
        let (mut verifier, id) = after_forkchoice(Mode::All, fork, root);
        let WithoutBlobs::Payload(read, n) = read_without_blobs(&good, get) else {
            unreachable!()
        };
        let one_short = WithoutBlobs::Payload(read, n - 1);
        let verdict = verifier
            .call_without_blobs(get, fork, &Message::PayloadId(id), &one_short)
            .unwrap()
            .verdict;
        match verdict {
            Verdict::Failed(f) => {
                assert_eq!(f.check, Check::Commitments);
                assert!(
                    f.detail
                        .contains(&format!("has {} blobs, {n} commitments", n - 1)),
                    "{}",
                    f.detail
                );
            }
            other => panic!("{other:?}"),
        }
    }

    // getBlobs: the count and the proofs of each entry.
    let (items, asked) = real_blobs();
    let request = Message::BlobsRequest(BlobsRequest {
        versioned_hashes: asked,
        indices: None,
    });
    let m = method::by_name("engine_getBlobsV2").unwrap();
    let run = |answer: Blobs| {
        let json = Message::Blobs(answer).to_json().unwrap();
        let answer = without_blobs(m, &json);
        Verifier::new(Mode::All)
            .call_without_blobs(m, Fork::Osaka, &request, &answer)
            .unwrap()
            .verdict
    };
    let v2 = fixtures::blobs_v2_response(&items, items.len());
    assert_eq!(run(Blobs::V2(Some(v2.clone()))), Verdict::Ok { kzg: false });
    assert_eq!(run(Blobs::V2(None)), Verdict::Ok { kzg: false });
    assert_eq!(
        failed_check(run(Blobs::V2(Some(v2[1..].to_vec())))),
        Check::BlobsAnswer
    );
    let mut short = v2;
    short[1].proofs.pop();
    match run(Blobs::V2(Some(short))) {
        Verdict::Failed(f) => assert_eq!(f.detail, "[1]: 127 cell proofs, 128 expected"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn sampled_kzg_checks_are_paced_by_the_time_they_take() {
    let hand = HandClock::default();
    let mut verifier = Verifier::with_clock(Mode::Sample { kzg_percent: 10 }, hand.clock());
    let m = method::by_name("engine_getBlobsV2").unwrap();
    let (items, asked) = real_blobs();
    let request = Message::BlobsRequest(BlobsRequest {
        versioned_hashes: asked,
        indices: None,
    });
    let answer = Message::Blobs(Blobs::V2(Some(fixtures::blobs_v2_response(
        &items,
        items.len(),
    ))));
    // Calls read without their blobs are not charged: the check stays due.
    let none_available = without_blobs(m, b"null");
    for _ in 0..3 {
        assert!(verifier.kzg_on_next_blob_call());
        let outcome = verifier.call_without_blobs(m, Fork::Osaka, &request, &none_available);
        assert_eq!(outcome.unwrap().verdict, Verdict::Ok { kzg: false });
    }
    // The check runs, and at 10 % it is owed ten times what it took: the verifier charged
    // at least the time it reports and at most the time measured around it.
    let started = Instant::now();
    let checked = verifier
        .call(m, Fork::Osaka, &request, Some(&answer))
        .unwrap();
    let took = started.elapsed();
    assert_eq!(checked.verdict, Verdict::Ok { kzg: true });
    assert!(checked.micros > 0);
    // Not due meanwhile: the same answer gets every check but KZG.
    let unchecked = verifier
        .call(m, Fork::Osaka, &request, Some(&answer))
        .unwrap();
    assert_eq!(unchecked.verdict, Verdict::Ok { kzg: false });
    hand.advance(Duration::from_micros(10 * checked.micros - 1));
    assert!(!verifier.kzg_on_next_blob_call());
    hand.advance(10 * took);
    assert!(verifier.kzg_on_next_blob_call());
    let again = verifier
        .call(m, Fork::Osaka, &request, Some(&answer))
        .unwrap();
    assert_eq!(again.verdict, Verdict::Ok { kzg: true });
    assert!(!verifier.kzg_on_next_blob_call());

    assert!(Verifier::new(Mode::All).kzg_on_next_blob_call());
    assert!(!Verifier::new(Mode::Off).kzg_on_next_blob_call());
    assert_eq!(
        Verifier::new(Mode::Off).call_without_blobs(m, Fork::Osaka, &request, &none_available),
        None
    );
}
