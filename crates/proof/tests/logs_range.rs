//! sszgate's `LogsRangeProof` on a built chain of four mainnet-shaped blocks: the recorded
//! block 0x14d7970 (its real body, transactions and 57 receipts) between built neighbours —
//! an empty block before it, an empty one after, and a copy of it (same transactions and
//! receipts, another number and hash) last — linked by execution parent hashes and beacon
//! parent roots, the last signed by 342 of 512 members of a committee made here from fixed
//! seeds (the verifier trusts it for the period). The proofs are built by the prover's own
//! `prover::logs::range_block` from the blocks' body trees.
//!
//! The honest proof verifies to every matching log with its `logIndex`; every way of leaving
//! a log or block out, or adding one, is refused with its check named.

mod common;

use std::sync::OnceLock;

use alloy_primitives::{B256, keccak256};
use blst::min_pk::{AggregateSignature, SecretKey};
use serde_json::{Value, json};
use ssz::Encode;
use ssz_types::{BitVector, FixedVector, VariableList};
use sszgate_light::block::AnyBlock;
use sszgate_light::bls::BLS_DST;
use sszgate_light::spec::{ChainSpec, signing_root};
use sszgate_light::types::{BlsPublicKey, BlsSignature, SyncAggregate, SyncCommittee};
use sszgate_proof::filter::Filter;
use sszgate_proof::multiproof::{
    BLOCK_HASH, BLOCK_NUMBER, LOGS_BLOOM, PARENT_HASH, RECEIPTS_ROOT, transaction_gindex,
};
use sszgate_proof::prover::logs::range_block;
use sszgate_proof::prover::receipts::BlockReceipts;
use sszgate_proof::prover::tree::BodyTree;
use sszgate_proof::tags::Clock;
use sszgate_proof::types::{
    C4Request, DataUnion, HeaderProofUnion, LogsRangeProof, LogsRangeTx, ProofUnion, SyncDataUnion,
};
use sszgate_proof::{Check, ProofError, TrustedState};
use tree_hash::TreeHash;

/// The recorded block's execution number.
const REAL: u64 = 0x14d7970;
/// The filter's contract (USDT), with 8 logs in the recorded block.
const USDT: &str = "0xdac17f958d2ee523a2206206994597c13d831ec7";
/// Members that sign the newest header (2/3 of 512, the verifier's default rule).
const SIGNERS: usize = 342;

struct Fixture {
    committee: SyncCommittee,
    /// The chain, oldest first, and the receipts of the blocks that have any.
    blocks: Vec<(AnyBlock, Option<BlockReceipts>)>,
    /// The newest header's signature.
    aggregate: SyncAggregate,
    /// The node's logs of the recorded block.
    node_logs: Value,
}

fn recording(file: &str) -> Vec<u8> {
    let dir = common::recordings().expect("the recorded cases");
    common::read_bounded(&dir.join("eth_getLogs1").join(file))
}

fn recorded_json(prefix: &str) -> Value {
    let dir = common::recordings()
        .expect("the recorded cases")
        .join("eth_getLogs1");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.starts_with(prefix))
        .unwrap();
    serde_json::from_slice::<Value>(&recording(&file)).unwrap()["result"].clone()
}

/// The committee's secret keys, from fixed seeds.
fn secrets() -> Vec<SecretKey> {
    (0..512u32)
        .map(|i| {
            let mut seed = [9u8; 32];
            seed[..4].copy_from_slice(&i.to_le_bytes());
            SecretKey::key_gen(&seed, &[]).unwrap()
        })
        .collect()
}

/// The first [`SIGNERS`] members' aggregate over `root`, signed at `slot`.
fn sign(secrets: &[SecretKey], root: B256, slot: u64) -> SyncAggregate {
    let spec = ChainSpec::mainnet();
    let message = signing_root(root, spec.domain_for_signature_slot(slot));
    let signatures: Vec<_> = secrets[..SIGNERS]
        .iter()
        .map(|sk| sk.sign(message.as_slice(), BLS_DST, &[]))
        .collect();
    let refs: Vec<_> = signatures.iter().collect();
    let signature = AggregateSignature::aggregate(&refs, false).unwrap();
    let mut bits = BitVector::new();
    (0..SIGNERS).for_each(|i| bits.set(i, true).unwrap());
    SyncAggregate {
        sync_committee_bits: bits,
        sync_committee_signature: BlsSignature::from(signature.to_signature().compress()),
    }
}

/// The block's execution number, hash and parent hash, its slot and parent root set.
fn relinked(
    template: &AnyBlock,
    at: u64,
    parent: (B256, B256),
    own: B256,
    empty: bool,
) -> AnyBlock {
    let mut block = template.clone();
    let AnyBlock::Deneb(b) = &mut block else {
        panic!("the recorded block is a Deneb block")
    };
    let real_slot = b.message.slot;
    b.message.slot = real_slot + at - REAL;
    b.message.parent_root = parent.0;
    let p = &mut b.message.body.execution_payload;
    (p.block_number, p.parent_hash, p.block_hash) = (at, parent.1, own);
    if empty {
        p.transactions = VariableList::empty();
        p.logs_bloom = Default::default();
        p.receipts_root = alloy_trie::EMPTY_ROOT_HASH;
    }
    block
}

fn header_root(block: &AnyBlock) -> B256 {
    block
        .header_with(BodyTree::new(block).root())
        .tree_hash_root()
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let spec = ChainSpec::mainnet();
        let real =
            AnyBlock::from_ssz(&spec, &recording("eth_v2_beacon_blocks_11069311.ssz")).unwrap();
        assert_eq!(real.execution_payload().block_number, REAL);
        let receipts =
            || BlockReceipts::from_json(&recorded_json("eth_getBlockReceipts_")).unwrap();
        let real_hash = real.execution_payload().block_hash;
        let real_parent = real.execution_payload().parent_hash;
        let before = relinked(
            &real,
            REAL - 1,
            (B256::repeat_byte(1), B256::repeat_byte(2)),
            real_parent,
            true,
        );
        let own = relinked(
            &real,
            REAL,
            (header_root(&before), real_parent),
            real_hash,
            false,
        );
        let after_hash = keccak256(b"block after");
        let after = relinked(
            &real,
            REAL + 1,
            (header_root(&own), real_hash),
            after_hash,
            true,
        );
        let copy = relinked(
            &real,
            REAL + 2,
            (header_root(&after), after_hash),
            keccak256(b"copy"),
            false,
        );
        let secrets = secrets();
        let last_slot = copy.header_with(B256::ZERO).slot;
        let aggregate = sign(&secrets, header_root(&copy), last_slot + 1);
        let pubkeys: Vec<BlsPublicKey> = secrets
            .iter()
            .map(|sk| BlsPublicKey::from(sk.sk_to_pk().compress()))
            .collect();
        Fixture {
            committee: SyncCommittee {
                pubkeys: FixedVector::new(pubkeys).unwrap(),
                aggregate_pubkey: BlsPublicKey::ZERO,
            },
            blocks: vec![
                (before, None),
                (own, Some(receipts())),
                (after, None),
                (copy, Some(receipts())),
            ],
            aggregate,
            node_logs: recorded_json("eth_getLogs_"),
        }
    })
}

/// The filter asking for USDT's logs over `from..=to`.
fn params(from: u64, to: u64) -> Value {
    json!([{"address": USDT, "fromBlock": format!("{from:#x}"), "toBlock": format!("{to:#x}")}])
}

/// The honest proof of `params`' filter over the whole built chain.
fn honest(params: &Value) -> LogsRangeProof {
    let f = fixture();
    let filter = Filter::parse(params).unwrap();
    let blocks = f
        .blocks
        .iter()
        .map(|(b, receipts)| range_block(b, &BodyTree::new(b), receipts.as_ref(), &filter).unwrap())
        .collect();
    LogsRangeProof {
        blocks: VariableList::new(blocks).unwrap(),
        header_proof: HeaderProofUnion::Signature(f.aggregate.clone()),
    }
}

/// The verifier: the built committee trusted, its clock one slot after the newest header.
fn trust() -> TrustedState {
    let f = fixture();
    let spec = ChainSpec::mainnet();
    let slot = f.blocks[3].0.header_with(B256::ZERO).slot + 1;
    let mut trust = TrustedState::new(spec.clone());
    trust
        .add_committee(spec.period(slot), &f.committee)
        .unwrap();
    trust.freshness.clock = Clock::Fixed(spec.genesis_time + slot * spec.seconds_per_slot);
    trust
}

fn verify(proof: LogsRangeProof, params: &Value) -> Result<Value, ProofError> {
    let request = C4Request {
        version: [0, 0, 1, 0].into(),
        data: DataUnion::None,
        proof: ProofUnion::LogsRange(Box::new(proof)),
        sync_data: SyncDataUnion::None,
    };
    sszgate_proof::verify(&request.as_ssz_bytes(), "eth_getLogs", params, &mut trust())
}

/// Block `i` of `proof` shipping `txs`, its multiproof made for them (the prover has the
/// whole body).
fn with_txs(proof: &mut LogsRangeProof, i: usize, txs: Vec<LogsRangeTx>) {
    let mut leaves = vec![
        PARENT_HASH,
        RECEIPTS_ROOT,
        LOGS_BLOOM,
        BLOCK_NUMBER,
        BLOCK_HASH,
    ];
    leaves.extend(txs.iter().map(|t| transaction_gindex(t.transaction_index)));
    let tree = BodyTree::new(&fixture().blocks[i].0);
    proof.blocks[i].proof = VariableList::new(tree.multiproof(&leaves)).unwrap();
    proof.blocks[i].txs = VariableList::new(txs).unwrap();
}

/// Refused by `check`, the message naming `says`.
fn refused(r: Result<Value, ProofError>, check: Check, says: &str) {
    let e = r.expect_err("refused");
    assert_eq!(e.check(), Some(check), "{e}");
    assert!(e.to_string().contains(says), "{e} does not say {says}");
}

#[test]
fn the_honest_range_verifies_to_every_log_with_its_index() {
    let f = fixture();
    let all = params(REAL - 1, REAL + 2);
    let ours = verify(honest(&all), &all).unwrap();
    let node = f.node_logs.as_array().unwrap();
    assert_eq!(node.len(), 8);
    // The recorded block's logs, as the node answered them; then the copy's, the same logs
    // at the same positions in another block.
    let copy_hash = f.blocks[3].0.execution_payload().block_hash;
    let mut want = node.clone();
    want.extend(node.iter().map(|l| {
        let mut l = l.clone();
        l["blockNumber"] = json!(format!("{:#x}", REAL + 2));
        l["blockHash"] = json!(copy_hash);
        l
    }));
    assert_eq!(ours, Value::Array(want));
    assert_eq!(ours[1]["logIndex"], node[1]["logIndex"]);
    // A filter no block's bloom can match (an address the recorded bloom lacks): no receipt
    // shipped, an empty answer proven.
    let bloom = alloy_primitives::Bloom::new(f.blocks[1].0.execution_payload().logs_bloom.0);
    let absent = (1..=255u8)
        .map(alloy_primitives::Address::with_last_byte)
        .find(|a| !bloom.contains_input(alloy_primitives::BloomInput::Raw(a.as_slice())))
        .unwrap();
    let none = json!([{"address": absent,
        "fromBlock": format!("{:#x}", REAL - 1), "toBlock": format!("{:#x}", REAL + 2)}]);
    let proof = honest(&none);
    assert!(proof.blocks.iter().all(|b| b.receipts.is_empty()));
    assert_eq!(verify(proof, &none).unwrap(), json!([]));
}

#[test]
fn a_block_left_out_of_the_range_or_added_is_refused() {
    let all = params(REAL - 1, REAL + 2);
    // The block after the recorded one left out, in the middle of the range.
    let mut proof = honest(&all);
    let mut blocks = proof.blocks.to_vec();
    blocks.remove(2);
    proof.blocks = VariableList::new(blocks).unwrap();
    refused(
        verify(proof, &all),
        Check::Completeness,
        "left out or added",
    );
    // The first block left out: the range starts later than fromBlock.
    let mut proof = honest(&all);
    proof.blocks = VariableList::new(proof.blocks[1..].to_vec()).unwrap();
    refused(verify(proof, &all), Check::Completeness, "fromBlock");
    // The last block left out: the range ends before toBlock.
    let mut proof = honest(&all);
    proof.blocks = VariableList::new(proof.blocks[..3].to_vec()).unwrap();
    refused(verify(proof, &all), Check::Completeness, "toBlock");
    // An extra block: the whole chain for a range that starts one block later.
    let narrower = params(REAL, REAL + 2);
    refused(
        verify(honest(&all), &narrower),
        Check::Completeness,
        "fromBlock",
    );
    // No block at all, the empty answer colibri's form allows.
    let mut proof = honest(&all);
    proof.blocks = VariableList::empty();
    refused(verify(proof, &all), Check::Completeness, "no block");
}

#[test]
fn a_broken_link_between_blocks_is_refused() {
    let all = params(REAL - 1, REAL + 2);
    let mut proof = honest(&all);
    proof.blocks[2].block_number += 1;
    refused(
        verify(proof, &all),
        Check::Completeness,
        "does not follow block",
    );
    let mut proof = honest(&all);
    proof.blocks[2].parent_hash = B256::repeat_byte(3);
    refused(
        verify(proof, &all),
        Check::Completeness,
        "does not follow block",
    );
    let mut proof = honest(&all);
    proof.blocks[2].header.parent_root = B256::repeat_byte(4);
    refused(verify(proof, &all), Check::HeaderChain, "parent root");
}

#[test]
fn a_receipt_or_transaction_left_out_or_a_lying_bloom_is_refused() {
    let all = params(REAL - 1, REAL + 2);
    // One receipt of the recorded block removed: its trie has another root.
    let mut proof = honest(&all);
    let mut receipts = proof.blocks[1].receipts.to_vec();
    receipts.remove(6);
    proof.blocks[1].receipts = VariableList::new(receipts).unwrap();
    refused(verify(proof, &all), Check::BodyRoot, "56 receipts");
    // The copy's receipts and transactions left out, as if its bloom could not match.
    let mut proof = honest(&all);
    proof.blocks[3].receipts = VariableList::empty();
    proof.blocks[3].txs = VariableList::empty();
    refused(verify(proof, &all), Check::BodyRoot, "0 receipts");
    // Its bloom said to be empty too: the bloom is proven.
    let mut proof = honest(&all);
    proof.blocks[3].receipts = VariableList::empty();
    proof.blocks[3].txs = VariableList::empty();
    proof.blocks[3].logs_bloom = Default::default();
    refused(verify(proof, &all), Check::BodyRoot, "blocks[3]");
    // A transaction of a receipt with a matching log left out, the multiproof made for the
    // others (the prover has the whole body): its logs' hash would be unbound.
    let mut proof = honest(&all);
    let txs = proof.blocks[1].txs[1..].to_vec();
    with_txs(&mut proof, 1, txs);
    refused(
        verify(proof, &all),
        Check::Transaction,
        "its transaction is not in the proof",
    );
}

/// The matching logs' transactions must be exactly those the proof ships, by ascending index:
/// one added whose receipt has no matching log (the multiproof made for it too) is refused,
/// and so are two swapped.
#[test]
fn an_extra_or_unordered_transaction_is_refused() {
    let all = params(REAL - 1, REAL + 2);
    let mut proof = honest(&all);
    let shipped: Vec<u32> = proof.blocks[1]
        .txs
        .iter()
        .map(|t| t.transaction_index)
        .collect();
    assert!(
        shipped.len() >= 2,
        "the fixture's block has matching logs in two transactions"
    );
    let block = &fixture().blocks[1].0;
    let extra = (0u32..)
        .find(|i| !shipped.contains(i))
        .expect("a transaction without a matching log");
    let mut txs = proof.blocks[1].txs.to_vec();
    txs.push(LogsRangeTx {
        transaction: block.execution_payload().transactions[extra as usize].clone(),
        transaction_index: extra,
    });
    txs.sort_by_key(|t| t.transaction_index);
    with_txs(&mut proof, 1, txs);
    refused(
        verify(proof, &all),
        Check::Transaction,
        &format!("transaction {extra} is in the proof but holds no matching log"),
    );
    let mut proof = honest(&all);
    let mut txs = proof.blocks[1].txs.to_vec();
    txs.swap(0, 1);
    proof.blocks[1].txs = VariableList::new(txs).unwrap();
    refused(
        verify(proof, &all),
        Check::Transaction,
        "not after the one before",
    );
}

#[test]
fn a_range_proof_for_another_filter_or_with_logs_as_data_is_refused() {
    let all = params(REAL - 1, REAL + 2);
    let hash = fixture().blocks[1].0.execution_payload().block_hash;
    let by_hash = json!([{"address": USDT, "blockHash": hash}]);
    refused(
        verify(honest(&all), &by_hash),
        Check::Request,
        "names one block",
    );
    // `latest` as toBlock: the newest header is fresh by the verifier's clock; an hour
    // later it is not.
    let latest = json!([{"address": USDT, "fromBlock": format!("{:#x}", REAL - 1)}]);
    assert_eq!(
        verify(honest(&all), &latest)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        16
    );
    let mut late = trust();
    let Clock::Fixed(now) = late.freshness.clock else {
        unreachable!()
    };
    late.freshness.clock = Clock::Fixed(now + 3600);
    let request = C4Request {
        version: [0, 0, 1, 0].into(),
        data: DataUnion::None,
        proof: ProofUnion::LogsRange(Box::new(honest(&all))),
        sync_data: SyncDataUnion::None,
    };
    let bytes = request.as_ssz_bytes();
    let r = sszgate_proof::verify(&bytes, "eth_getLogs", &latest, &mut late);
    refused(r, Check::Tag, "latest");
    // Logs shipped with the range proof are not taken.
    let mut with_data = request.clone();
    with_data.data = DataUnion::Logs(VariableList::empty());
    let r = sszgate_proof::verify(&with_data.as_ssz_bytes(), "eth_getLogs", &all, &mut trust());
    refused(r, Check::ProofKind, "carries no logs");
}
