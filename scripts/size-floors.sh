#!/usr/bin/env bash
# What the embedded verifier's crypto and EVM weigh before a line of the verifier: a library
# of one exported function per part, each doing what the verifier does with that part, built
# as the C library's `embedded-abort` profile and the WASM package's `wasm` profile build
# them (opt-level z, LTO, one codegen unit, stripped, panic = abort; the WASM then through
# wasm-opt -Oz as scripts/build-js.sh does). The crates and versions are the verifier's own:
#   std     one function indexing a slice: std's panic runtime (its message and backtrace
#           printer), linked by the first possible panic; also as the `embedded` profile
#           builds it (panic = unwind) and with docs/benchmarks.md's two whole-build flags
#   bls     blst: 512 compressed keys checked, aggregated, a signature over a root verified
#           (hash to G2 and the pairing), as a sync committee's signature is checked
#   ecdsa   k256: a transaction's sender recovered from its signature, and keccak-256
#   evm     revm 43 with the verifier's precompile backends: one call run over an in-memory
#           state, as eth_call's proof is run
# Each line gives the part set, the x86-64 `.so` bytes and the wasm32 module's bytes; then the
# x86-64 `.so` of each part set built without std (`#![no_std]`, libc's allocator, a panic
# that aborts, blst's no_std build through its build script's BLST_TEST_NO_STD, revm without
# its `std` feature): the least a C library with these crates can weigh. The sizes say which
# of issue 31's size targets any build with these crates can reach.
#
# usage: scripts/size-floors.sh   (needs clang and llvm-ar for blst's C on wasm32, and the
#        wasm-opt that scripts/build-js.sh installs under target/js/tools)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
wasm_opt="$root/target/js/tools/node_modules/.bin/wasm-opt"
{ [ -x "$wasm_opt" ] && command -v wasm-bindgen >/dev/null; } \
  || { echo "size-floors: run scripts/build-js.sh first (it installs wasm-opt and wasm-bindgen)" >&2; exit 1; }
dir="${SIZE_FLOORS_DIR:-$(mktemp -d)}"
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
[dependencies]
blst = { version = "=0.3.17", optional = true }
k256 = { version = "=0.13.4", optional = true, default-features = false, features = ["ecdsa"] }
tiny-keccak = { version = "2", optional = true, features = ["keccak"] }
revm = { version = "=43.0.3", optional = true, default-features = false, features = ["blst", "bn", "optional_balance_check", "optional_no_base_fee", "optional_fee_charge", "optional_block_gas_limit", "optional_eip3607"] }
[target.'cfg(target_arch = "wasm32")'.dependencies]
getrandom = { version = "0.2", features = ["js"] }
# the wasm-bindgen CLI that scripts/build-js.sh installs reads only its own version
wasm-bindgen = "=0.2.105"
js-sys = "=0.3.82"
[features]
std = ["revm?/std"]
nostd = []
bls = ["dep:blst"]
ecdsa = ["dep:k256", "dep:tiny-keccak"]
evm = ["dep:revm"]
[profile.floor]
inherits = "release"
opt-level = "z"
lto = true
codegen-units = 1
debug = false
strip = true
panic = "abort"
[profile.floor-unwind]
inherits = "floor"
panic = "unwind"
TOML
cat >"$dir/src/lib.rs" <<'RUST'
//! One exported function per part, reading its input from the caller's memory so that the
//! optimiser keeps the whole of what the verifier uses. With `nostd`: without std, on libc's
//! allocator, a panic aborting.
#![cfg_attr(feature = "nostd", no_std)]
extern crate alloc;
#[allow(unused_imports)]
use alloc::vec::Vec;

#[cfg(feature = "nostd")]
mod bare {
    use core::alloc::{GlobalAlloc, Layout};

    #[link(name = "c")]
    unsafe extern "C" {
        fn malloc(n: usize) -> *mut u8;
        fn free(p: *mut u8);
        fn abort() -> !;
    }

    /// libc's allocator (alignments up to 16, all these parts ask for).
    struct Malloc;

    unsafe impl GlobalAlloc for Malloc {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            unsafe { malloc(layout.size()) }
        }
        unsafe fn dealloc(&self, p: *mut u8, _: Layout) {
            unsafe { free(p) }
        }
    }

    #[global_allocator]
    static ALLOC: Malloc = Malloc;

    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo) -> ! {
        unsafe { abort() }
    }
}

/// `n` bytes at `p`.
unsafe fn bytes<'a>(p: *const u8, n: usize) -> &'a [u8] {
    // SAFETY: each caller promises `n` readable bytes at `p`.
    unsafe { core::slice::from_raw_parts(p, n) }
}

/// The byte at `i` of the `n` bytes at `p` (the std floor: it can panic).
///
/// # Safety
/// `p` must point to `n` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn byte_at(p: *const u8, n: usize, i: usize) -> u8 {
    let all = unsafe { bytes(p, n) };
    all[i]
}

/// 1 when the signature (96 bytes at `sig`) over the root at `msg` verifies under the
/// aggregate of the `n` compressed keys at `keys`.
///
/// # Safety
/// `keys` must hold `48 * n` bytes, `sig` 96 and `msg` 32.
#[cfg(feature = "bls")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bls_verify(keys: *const u8, n: usize, sig: *const u8, msg: *const u8) -> i32 {
    use blst::min_pk::{PublicKey, Signature};
    const DST: &[u8] = b"BLS_SIG_BLS12381G2_XMD:SHA-256_SSWU_RO_POP_";
    let keys = unsafe { bytes(keys, 48 * n) };
    let Ok(keys) = keys.chunks(48).map(PublicKey::key_validate).collect::<Result<Vec<_>, _>>() else { return -1 };
    let refs: Vec<&PublicKey> = keys.iter().collect();
    let Ok(sig) = Signature::sig_validate(unsafe { bytes(sig, 96) }, true) else { return -2 };
    i32::from(sig.fast_aggregate_verify(true, unsafe { bytes(msg, 32) }, DST, &refs) == blst::BLST_ERROR::BLST_SUCCESS)
}

/// The sender's address (20 bytes to `out`) of a signature (65 bytes at `sig`) over the
/// prehash at `hash`; 0 when it recovers.
///
/// # Safety
/// `sig` must hold 65 bytes, `hash` 32, `out` room for 20.
#[cfg(feature = "ecdsa")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ecrecover(sig: *const u8, hash: *const u8, out: *mut u8) -> i32 {
    use k256::ecdsa::{RecoveryId, Signature, VerifyingKey};
    use tiny_keccak::{Hasher, Keccak};
    let sig = unsafe { bytes(sig, 65) };
    let Ok(s) = Signature::from_slice(&sig[..64]) else { return -1 };
    let Some(id) = RecoveryId::from_byte(sig[64]) else { return -2 };
    let Ok(key) = VerifyingKey::recover_from_prehash(unsafe { bytes(hash, 32) }, &s, id) else { return -3 };
    let point = key.to_encoded_point(false);
    let mut digest = [0u8; 32];
    let mut k = Keccak::v256();
    k.update(&point.as_bytes()[1..]);
    k.finalize(&mut digest);
    // SAFETY: the caller promises room for 20 bytes at `out`.
    unsafe { core::ptr::copy_nonoverlapping(digest[12..].as_ptr(), out, 20) };
    0
}

/// Runs `n` bytes of code at `code` with the input at `input` (`m` bytes) on Osaka's rules;
/// the gas used, or -1 when the call is not valid.
///
/// # Safety
/// `code` must hold `n` bytes and `input` `m`.
#[cfg(feature = "evm")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn evm_call(code: *const u8, n: usize, input: *const u8, m: usize) -> i64 {
    use revm::context::TxEnv;
    use revm::database::{CacheDB, EmptyDB};
    use revm::primitives::{Address, Bytes, TxKind, hardfork::SpecId};
    use revm::state::{AccountInfo, Bytecode};
    use revm::{Context, ExecuteEvm, MainBuilder, MainContext};
    let to = Address::with_last_byte(0x42);
    let mut db = CacheDB::<EmptyDB>::default();
    let code = Bytecode::new_raw(Bytes::copy_from_slice(unsafe { bytes(code, n) }));
    db.insert_account_info(to, AccountInfo { code_hash: code.hash_slow(), code: Some(code), ..Default::default() });
    let mut evm = Context::mainnet()
        .with_db(db)
        .modify_cfg_chained(|cfg| cfg.spec = SpecId::OSAKA)
        .build_mainnet();
    let tx = TxEnv { kind: TxKind::Call(to), data: Bytes::copy_from_slice(unsafe { bytes(input, m) }), gas_limit: 30_000_000, ..Default::default() };
    match evm.transact(tx) {
        #[allow(deprecated)]
        Ok(done) => done.result.gas_used() as i64,
        Err(_) => -1,
    }
}
RUST
cd "$dir"
size() { stat -c %s "$1"; }
build() {
  local name="$1" features="$2"
  local args=(--profile floor --no-default-features --features "std${features:+,$features}")
  cargo build -q "${args[@]}" --target-dir "target/$name"
  local so="target/$name/floor/libfloor.so"
  CC_wasm32_unknown_unknown=clang AR_wasm32_unknown_unknown=llvm-ar \
    cargo build -q "${args[@]}" --target wasm32-unknown-unknown --target-dir "target/$name" \
    --config 'target.wasm32-unknown-unknown.rustflags=["-Ctarget-feature=+simd128"]'
  # Through wasm-bindgen as the package is (getrandom's JS source links wasm-bindgen's
  # descriptors, which only its CLI takes out), then wasm-opt.
  wasm-bindgen --target web --out-dir "target/$name/bindgen" \
    "target/$name/wasm32-unknown-unknown/floor/floor.wasm"
  local wasm="target/$name/bindgen/floor_bg.wasm"
  "$wasm_opt" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-simd "$wasm" -o "$wasm.opt"
  echo "$name x86-64 $(size "$so") wasm32 $(size "$wasm.opt")"
}
build std ""
cargo build -q --profile floor-unwind --features std --target-dir target/std
echo "std, panic = unwind (embedded) x86-64 $(size target/std/floor-unwind/libfloor.so)"
RUSTFLAGS="-Cforce-unwind-tables=no -Clink-arg=-Wl,-z,pack-relative-relocs" \
  cargo build -q --profile floor --features std --target-dir target/std-flags
echo "std, no unwind tables, packed relocations x86-64 $(size target/std-flags/floor/libfloor.so)"
build bls bls
build bls+ecdsa bls,ecdsa
build evm evm
build bls+ecdsa+evm bls,ecdsa,evm
nostd() {
  local name="$1" features="$2"
  BLST_TEST_NO_STD=1 cargo build -q --profile floor --features "nostd,$features" \
    --target-dir "target/nostd-$name"
  echo "$name, no std x86-64 $(size "target/nostd-$name/floor/libfloor.so")"
}
nostd bls bls
nostd bls+ecdsa bls,ecdsa
nostd evm evm
nostd bls+ecdsa+evm bls,ecdsa,evm
