//! How a fuzz input is laid out: which bytes pick the method, the fork or the mode, and where
//! the bodies start. The targets read inputs this way and the seed generator
//! (`cargo run -p sszgate-fixtures --example fuzz_seeds`) writes them this way, so the two
//! cannot drift apart. Also the corpus replay that the stable test suites run.
//!
//! Plain Rust on `sszgate-engine` only: the workspace's tests include this file by path.

use std::path::{Path, PathBuf};

use sszgate_engine::{Fork, METHODS, MessageKind, MethodSpec, method::Resource};

/// A fuzz target: its name (`fuzz_targets/<name>.rs`, `corpus/<name>/`) and its body.
pub type Target = (&'static str, fn(&[u8]));

/// One message of the method table: the method, which side of the call, and the fork.
#[derive(Clone, Copy, Debug)]
pub struct Pick {
    /// The method row.
    pub method: &'static MethodSpec,
    /// The request or the response message of the method.
    pub kind: MessageKind,
    /// One of the forks the method serves.
    pub fork: Fork,
}

impl Pick {
    /// True when this is the request side of the call.
    pub fn is_request(&self) -> bool {
        self.kind == self.method.request
    }
}

/// How many (method, side) pairs the first byte ranges over.
pub const SIDES: usize = METHODS.len() * 2;

/// Reads the two selector bytes of a codec input: byte 0 is the method row and side
/// (`row * 2 + response`), byte 1 the fork among those the method serves; the rest is the body.
pub fn pick(data: &[u8]) -> Option<(Pick, &[u8])> {
    let (&side, rest) = data.split_first()?;
    let (&fork, body) = rest.split_first()?;
    let side = side as usize % SIDES;
    let method = &METHODS[side / 2];
    let kind = if side.is_multiple_of(2) {
        method.request
    } else {
        method.response
    };
    let fork = method.forks[fork as usize % method.forks.len()];
    Some((Pick { method, kind, fork }, body))
}

/// The codec input that [`pick`] reads back as `body` for this method, side and fork.
pub fn codec_input(method: &MethodSpec, response: bool, fork: Fork, body: &[u8]) -> Vec<u8> {
    let row = METHODS
        .iter()
        .position(|m| m.name == method.name)
        .expect("a method of the table");
    let fork = method
        .forks
        .iter()
        .position(|f| *f == fork)
        .expect("a fork the method serves");
    let mut out = vec![(row * 2 + usize::from(response)) as u8, fork as u8];
    out.extend_from_slice(body);
    out
}

/// Splits `data` into two bodies: a little-endian `u32` length of the first (clamped to what
/// is there), the first, then the second.
pub fn split_two(data: &[u8]) -> (&[u8], &[u8]) {
    let Some(len) = data.get(..4) else {
        return (data, &[]);
    };
    let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
    let rest = &data[4..];
    rest.split_at(len.min(rest.len()))
}

/// The input [`split_two`] reads back as `(first, second)`.
pub fn join_two(first: &[u8], second: &[u8]) -> Vec<u8> {
    let mut out = (first.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(first);
    out.extend_from_slice(second);
    out
}

/// The REST resources, as the metadata target's resource byte picks them.
pub const RESOURCES: [Resource; 11] = [
    Resource::SubmitPayload,
    Resource::GetPayload,
    Resource::Forkchoice,
    Resource::BodiesByHash,
    Resource::BodiesByRange,
    Resource::Blobs(1),
    Resource::Blobs(2),
    Resource::Blobs(3),
    Resource::Blobs(4),
    Resource::Capabilities,
    Resource::Identity,
];

/// Modes of the metadata target (its first byte, modulo 3).
pub mod meta_mode {
    /// `json_call(request, response)`; the rest is [`super::join_two`] of the two.
    pub const JSON: u8 = 0;
    /// `problem(body)`; the rest is the body.
    pub const PROBLEM: u8 = 1;
    /// `rest_call`: resource byte, fork byte (a value past the forks is "no header"), status
    /// (`u16` little-endian), 8 bytes of payload id, then [`super::join_two`] of request and
    /// response.
    pub const REST: u8 = 2;
}

/// A `rest_call` input of the metadata target.
pub fn meta_rest_input(
    resource: Resource,
    fork: Option<Fork>,
    status: u16,
    request: &[u8],
    response: &[u8],
) -> Vec<u8> {
    let resource = RESOURCES
        .iter()
        .position(|r| *r == resource)
        .expect("a resource of the list") as u8;
    let fork = fork.map_or(Fork::ALL.len(), |f| {
        Fork::ALL.iter().position(|x| *x == f).expect("a fork")
    }) as u8;
    let mut out = vec![meta_mode::REST, resource, fork];
    out.extend_from_slice(&status.to_le_bytes());
    out.extend_from_slice(&[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
    out.extend_from_slice(&join_two(request, response));
    out
}

/// The HTTP methods the REST target's first byte picks from (low two bits).
pub const HTTP_METHODS: [&str; 4] = ["GET", "POST", "PUT", "get"];

/// A REST target input: method, then `target\nfork-header\n`, then the body. Bit 2 of the
/// first byte set means "no fork header" (the header line is then ignored).
pub fn rest_input(method: &str, target: &str, fork_header: Option<&str>, body: &[u8]) -> Vec<u8> {
    let m = HTTP_METHODS
        .iter()
        .position(|x| *x == method)
        .expect("a listed method") as u8;
    let flags = if fork_header.is_some() { 0 } else { 4 };
    let mut out = vec![m | flags];
    out.extend_from_slice(target.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(fork_header.unwrap_or("").as_bytes());
    out.push(b'\n');
    out.extend_from_slice(body);
    out
}

/// The corpus directory of `target`: `fuzz/corpus/<target>` of this repository.
pub fn corpus_dir(repo: &Path, target: &str) -> PathBuf {
    repo.join("fuzz").join("corpus").join(target)
}

/// Runs every file of `target`'s corpus through `body`; panics (failing the test) when the
/// corpus directory is missing or empty, so a deleted corpus cannot pass silently. Returns the
/// number of files run.
pub fn replay(repo: &Path, target: &str, body: fn(&[u8])) -> usize {
    let dir = corpus_dir(repo, target);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus of {target} missing at {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "corpus of {target} at {} is empty",
        dir.display()
    );
    for file in &files {
        let data = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        // A panic names the file, so a failure points at the input to rerun with the fuzzer.
        let outcome = std::panic::catch_unwind(|| body(&data));
        if let Err(cause) = outcome {
            let message = cause
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| cause.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{target}: {} panicked: {message}", file.display());
        }
    }
    files.len()
}
