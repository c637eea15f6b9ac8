//! The cost of verification on real data: the newPayload checks (header rebuilt and hashed,
//! transactions decoded, limits, versioned hashes) of the largest real payloads, and the
//! getBlobs answer checks with real blobs (commitments recomputed, blob proofs for V1, cell
//! proofs for V2), interleaved.
//!
//! `cargo bench -p sszgate-bench --bench verify [-- --rounds 30 --blob-rounds 5]`
//! Data: `$SSZGATE_DATA`, else ../shared/data/mainnet, else testdata/.

use std::hint::black_box;

use sszgate_bench::harness::{Variant, flag, interleave, machine, markdown_table};
use sszgate_engine::{
    Fork,
    message::{Blobs, NewPayload},
};
use sszgate_fixtures::{self as fixtures, Fixtures, versioned_hash};
use sszgate_verify::{blobs, payload};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let rounds: usize =
        flag("--rounds").map_or(30, |r| r.parse().expect("--rounds takes a number"));
    // A KZG round over every blob takes seconds: fewer of them.
    let blob_rounds: usize =
        flag("--blob-rounds").map_or(5, |r| r.parse().expect("--blob-rounds takes a number"));
    let dir = fixtures::data_dir();
    let fixtures = Fixtures::load(&dir).expect("fixtures load");
    let items = fixtures.blobs().expect("blobs load");
    let kzg = c_kzg::ethereum_kzg_settings(0);
    println!("## Verification cost\n");
    println!("Machine: {}", machine());
    println!(
        "Data: {} real blocks and {} real blobs of {}; {rounds} interleaved rounds after 2 warm-up runs for payloads, {blob_rounds} after 1 for blobs.\n",
        fixtures.blocks.len(),
        items.len(),
        dir.display()
    );

    // The three largest real payloads: the block-hash check (which decodes every transaction).
    let mut blocks: Vec<_> = fixtures.blocks.iter().collect();
    blocks.sort_by_key(|b| std::cmp::Reverse(b.payload_ssz.len()));
    // And the largest of the current forks, what mainnet carries today.
    let recent = [Fork::Cancun, Fork::Prague]
        .map(|fork| fixtures.largest_block(fork))
        .into_iter()
        .flatten();
    let payloads: Vec<(String, NewPayload)> = blocks
        .iter()
        .copied()
        .take(3)
        .chain(recent)
        .map(|b| {
            let np = b.new_payload().expect("payload");
            (
                format!(
                    "newPayload check, block {} ({}, {} txs, {} KB)",
                    b.slot,
                    b.fork,
                    np.transactions().len(),
                    b.payload_ssz.len() / 1000
                ),
                np,
            )
        })
        .collect();
    let mut variants: Vec<Variant<'_>> = payloads
        .iter()
        .map(|(name, np)| {
            Variant::new(name.clone(), move || {
                payload::check_new_payload(black_box(np)).expect("a real payload verifies");
            })
        })
        .collect();
    println!("### Payloads\n");
    println!("{}", markdown_table(&interleave(&mut variants, 2, rounds)));

    // getBlobs answers with every real blob of the data set: each blob's commitment is
    // recomputed, then its proofs verified in one batch (a getPayload bundle skips the
    // recomputation: it carries its commitments).
    let n = items.len();
    let asked: Vec<_> = items
        .iter()
        .map(|b| versioned_hash(&b.commitment))
        .collect();
    let answer_v1 = Blobs::V1(fixtures::blobs_v1_response(&items, n));
    let answer_v2 = Blobs::V2(Some(fixtures::blobs_v2_response(&items, n)));
    let mut variants = vec![
        Variant::new(
            format!("getBlobsV1 answer, {n} blobs: commitments + blob proofs"),
            || {
                blobs::check_answer(kzg, black_box(&asked), &answer_v1, true).expect("verifies");
            },
        ),
        Variant::new(
            format!("getBlobsV2 answer, {n} blobs: commitments + cell proofs"),
            || {
                blobs::check_answer(kzg, black_box(&asked), &answer_v2, true).expect("verifies");
            },
        ),
        Variant::new(
            format!("getBlobsV2 answer, {n} blobs: counts only (sampled out)"),
            || {
                blobs::check_answer(kzg, black_box(&asked), &answer_v2, false).expect("verifies");
            },
        ),
    ];
    println!("### Blobs ({n} real blobs; divide by {n} for the cost per blob)\n");
    println!(
        "{}",
        markdown_table(&interleave(&mut variants, 1, blob_rounds))
    );
}
