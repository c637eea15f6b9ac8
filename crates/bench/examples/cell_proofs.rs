//! Writes the cell-proof cache of the blob transactions of a data directory:
//! `cargo run --release -p sszgate-bench --example cell_proofs -- [DIR]` (default `testdata/`)
//! computes the 128 cell proofs of every blob with c-kzg and writes
//! `DIR/cell-proofs/<tx>.bin`, which the fixtures then load instead of recomputing.

use sszgate_bench::fixtures::{CellProofs, Fixtures, testdata_dir};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .map(Into::into)
        .unwrap_or_else(testdata_dir);
    let fixtures = Fixtures::load(&dir)?;
    std::fs::create_dir_all(dir.join("cell-proofs"))?;
    for tx in &fixtures.blob_txs {
        let start = std::time::Instant::now();
        let proofs = CellProofs::compute(tx)?;
        let path = CellProofs::cache_path(&dir, tx);
        std::fs::write(&path, proofs.to_bytes())?;
        println!(
            "{}: {} blobs, {:.2?}",
            path.display(),
            tx.blobs.len(),
            start.elapsed()
        );
    }
    Ok(())
}
