//! A sync-committee aggregate verify with blst (C): per verify, the keys aggregated, the
//! signature decompressed and checked, hashed to G2 and paired.
use blst::BLST_ERROR;
use blst::min_pk::{AggregatePublicKey, PublicKey, Signature};

include!("../../common.rs");

fn decode(bytes: &[u8]) -> PublicKey {
    PublicKey::key_validate(bytes).unwrap()
}

fn verify_all(keys: &[PublicKey]) -> bool {
    let keys: Vec<&PublicKey> = keys.iter().collect();
    let agg = AggregatePublicKey::aggregate(&keys, false)
        .unwrap()
        .to_public_key();
    let sig = Signature::sig_validate(SIG, true).unwrap();
    sig.verify(false, MSG, DST, &[], &agg, false) == BLST_ERROR::BLST_SUCCESS
}

exports!(PublicKey, decode, verify_all);
