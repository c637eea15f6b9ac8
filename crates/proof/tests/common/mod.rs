//! What the proof tests share: the vectors of `testdata/colibri/` and their expectations.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The vectors' directory.
pub fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/colibri")
}

/// Every vector's name, sorted.
pub fn case_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(vectors_dir())
        .expect("testdata/colibri")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| vectors_dir().join(n).join("proof.ssz").exists())
        .collect();
    names.sort();
    names
}

/// A vector's proof bytes.
pub fn proof_bytes(case: &str) -> Vec<u8> {
    std::fs::read(vectors_dir().join(case).join("proof.ssz")).unwrap()
}

/// A vector's `expected.json`.
pub fn expected(case: &str) -> Value {
    let text = std::fs::read_to_string(vectors_dir().join(case).join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}
