//! 512 keys (fixed seeds) sign one 32-byte root, as a full sync committee: writes the
//! compressed keys, the aggregate signature and the root to target/data for the modules.
use blst::min_pk::{AggregateSignature, SecretKey};
const DST: &[u8] = b"BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_";
fn main() {
    std::fs::create_dir_all(concat!(env!("CARGO_MANIFEST_DIR"), "/../target/data")).unwrap();
    let msg = [0x5au8; 32];
    let mut pks = Vec::new();
    let mut sigs = Vec::new();
    for i in 0..512u32 {
        let mut ikm = [0u8; 32];
        ikm[..4].copy_from_slice(&i.to_le_bytes());
        ikm[4] = 7;
        let sk = SecretKey::key_gen(&ikm, &[]).unwrap();
        pks.extend_from_slice(&sk.sk_to_pk().compress());
        sigs.push(sk.sign(&msg, DST, &[]));
    }
    let refs: Vec<_> = sigs.iter().collect();
    let agg = AggregateSignature::aggregate(&refs, true)
        .unwrap()
        .to_signature();
    std::fs::write(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../target/data/pks.bin"),
        pks,
    )
    .unwrap();
    std::fs::write(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../target/data/sig.bin"),
        agg.compress(),
    )
    .unwrap();
    std::fs::write(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../target/data/msg.bin"),
        msg,
    )
    .unwrap();
}
