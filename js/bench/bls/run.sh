#!/usr/bin/env bash
# One sync-committee aggregate verify (512 keys, one root) in WASM with blst (C, clang for
# wasm32), arkworks' ark-bls12-381 and zkcrypto's bls12_381 (pure Rust): module size raw and
# gzipped, taking the keys in, and the verify, in Node. Needs clang, llvm-ar, node and
# wasm-opt (scripts/build-js.sh installs it under target/js/tools).
# usage: js/bench/bls/run.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd ../../.. && pwd)
WASM_OPT="$ROOT/target/js/tools/node_modules/.bin/wasm-opt"
[ -x "$WASM_OPT" ] || { echo "bls bench: run scripts/build-js.sh first (it installs wasm-opt)" >&2; exit 1; }
cargo run --quiet --release -p keys
CC_wasm32_unknown_unknown=clang AR_wasm32_unknown_unknown=llvm-ar \
  cargo build --quiet --profile wasm --target wasm32-unknown-unknown \
  -p verify-blst -p verify-arkworks -p verify-zkcrypto
mkdir -p target/opt
for m in verify_blst verify_arkworks verify_zkcrypto; do
  "$WASM_OPT" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals "target/wasm32-unknown-unknown/wasm/$m.wasm" -o "target/opt/$m.wasm"
done
node bench.mjs "${1:-40}"
