//! The same verify with arkworks (pure Rust): the keys summed, the signature decompressed and
//! checked, hashed to G2 (RFC 9380 SSWU) and a two-pairing product checked.
use ark_bls12_381::{Bls12_381, G1Affine, G1Projective, G2Affine, g2};
use ark_ec::hashing::{
    HashToCurve, curve_maps::wb::WBMap, map_to_curve_hasher::MapToCurveBasedHasher,
};
use ark_ec::pairing::Pairing;
use ark_ec::short_weierstrass::Projective;
use ark_ec::{AffineRepr, CurveGroup};
use ark_ff::Zero;
use ark_ff::field_hashers::DefaultFieldHasher;
use ark_serialize::CanonicalDeserialize;

include!("../../common.rs");

/// RFC 9380's hash to G2 with SHA-256.
type G2Hasher = MapToCurveBasedHasher<
    Projective<g2::Config>,
    DefaultFieldHasher<sha2::Sha256, 128>,
    WBMap<g2::Config>,
>;

fn decode(bytes: &[u8]) -> G1Affine {
    G1Affine::deserialize_compressed(bytes).unwrap()
}

fn verify_all(keys: &[G1Affine]) -> bool {
    let agg: G1Projective = keys.iter().map(|k| k.into_group()).sum();
    let sig = G2Affine::deserialize_compressed(SIG).unwrap();
    let h = G2Hasher::new(DST).unwrap().hash(MSG).unwrap();
    let g1 = G1Affine::generator();
    Bls12_381::multi_pairing([agg.into_affine(), -g1], [h, sig]).is_zero()
}

exports!(G1Affine, decode, verify_all);
