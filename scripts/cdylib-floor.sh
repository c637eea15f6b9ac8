#!/usr/bin/env bash
# The least a Rust C library with the standard library weighs on this target: a cdylib of one
# exported function that indexes a slice (so that, like any real library, it can panic), built
# as the C library's `embedded` and `embedded-abort` profiles build (opt-level z, LTO, one
# codegen unit, stripped), and with the two whole-build flags of docs/benchmarks.md ("The C
# library"). It says what part of sszgate-verifier-c's size no cut inside the verifier can
# reach: std's panic runtime (its message and backtrace printer) is linked by the first
# possible panic. Prints one line per build: its name and the .so's bytes.
#
# usage: scripts/cdylib-floor.sh
set -euo pipefail
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/src"
cat >"$dir/Cargo.toml" <<'TOML'
[package]
name = "floor"
version = "0.0.0"
edition = "2024"
publish = false
[workspace]
[lib]
crate-type = ["cdylib"]
[profile.embedded]
inherits = "release"
opt-level = "z"
lto = true
codegen-units = 1
debug = false
strip = true
[profile.embedded-abort]
inherits = "embedded"
panic = "abort"
TOML
cat >"$dir/src/lib.rs" <<'RUST'
//! One exported function that can panic (an index out of bounds).
/// The byte at `i` of the `n` bytes at `p`.
///
/// # Safety
/// `p` must point to `n` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn byte_at(p: *const u8, n: usize, i: usize) -> u8 {
    // SAFETY: the caller promises `n` readable bytes at `p`.
    let bytes = unsafe { std::slice::from_raw_parts(p, n) };
    bytes[i]
}
RUST
size() { stat -c %s "$1"; }
cd "$dir"
cargo build -q --profile embedded
echo "embedded $(size target/embedded/libfloor.so)"
cargo build -q --profile embedded-abort
echo "embedded-abort $(size target/embedded-abort/libfloor.so)"
RUSTFLAGS="-Cforce-unwind-tables=no -Clink-arg=-Wl,-z,pack-relative-relocs" \
  cargo build -q --profile embedded-abort --target-dir target/flags
echo "embedded-abort, no unwind tables, packed relocations $(size target/flags/embedded-abort/libfloor.so)"
