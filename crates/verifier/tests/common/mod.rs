//! What the verifier's integration tests share: the colibri vectors' directory and bounded
//! reads of their files (a file past the bound is an error, never read whole).
//!
//! Not here: the verifiers the tests build, their checks.

#![allow(dead_code)] // each test crate uses its own part

use std::path::{Path, PathBuf};

pub(crate) mod recorded;

/// The most bytes a test reads of one vector file (the largest is well under 1 MB).
pub(crate) const MAX_FILE: u64 = 16 << 20;

/// colibri's recorded mainnet vectors, one directory each.
pub(crate) fn vectors() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../proof/testdata/colibri")
}

/// A file's bytes, at most [`MAX_FILE`] of them.
pub(crate) fn read(path: &Path) -> Vec<u8> {
    sszgate_light::persist::read_file_bounded(path, MAX_FILE)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A file as JSON, read as [`read`].
pub(crate) fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
