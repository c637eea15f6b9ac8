//! The same verify with zkcrypto's bls12_381 (pure Rust).
use bls12_381::hash_to_curve::{ExpandMsgXmd, HashToCurve};
use bls12_381::{
    G1Affine, G1Projective, G2Affine, G2Prepared, G2Projective, Gt, multi_miller_loop,
};

include!("../../common.rs");

fn decode(bytes: &[u8]) -> G1Affine {
    G1Affine::from_compressed(bytes.try_into().unwrap()).unwrap()
}

fn verify_all(keys: &[G1Affine]) -> bool {
    let agg = keys.iter().fold(G1Projective::identity(), |a, k| a + k);
    let sig = G2Affine::from_compressed(SIG.try_into().unwrap()).unwrap();
    let h = <G2Projective as HashToCurve<ExpandMsgXmd<sha2::Sha256>>>::hash_to_curve(MSG, DST);
    let agg = G1Affine::from(agg);
    let neg_g1 = -G1Affine::generator();
    let h = G2Prepared::from(G2Affine::from(h));
    let sig = G2Prepared::from(sig);
    multi_miller_loop(&[(&agg, &h), (&neg_g1, &sig)]).final_exponentiation() == Gt::identity()
}

exports!(G1Affine, decode, verify_all);
