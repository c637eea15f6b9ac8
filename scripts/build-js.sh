#!/usr/bin/env bash
# Builds the npm package `sszgate-verifier` from a clean checkout: the proof verifier
# (crates/verifier-wasm) compiled to wasm32 with the size-optimised `wasm` profile, bound with
# wasm-bindgen (its CLI pinned to the library's version, installed if missing), shrunk with
# wasm-opt (npm `binaryen`, pinned), and put beside the package's JS entry and types (js/).
# Built with WASM SIMD (`simd128`: Node 16.4+, Chrome 91+, Firefox 89+, Safari 16.4+): the
# module is 28 kB smaller with it (wider moves and compares) and const-hex encodes 16 bytes
# at a time.
# Needs clang and llvm-ar (blst's C is compiled for wasm32). The last line of output is the
# package's directory.
#
# usage: scripts/build-js.sh [--no-evm | --receipts-only | --families LIST] [--names] [OUT_DIR]
#   (default OUT_DIR target/js/sszgate-verifier)
#   --no-evm: without eth_call's EVM (revm): eth_call is refused, the WASM is ~40 % smaller.
#   --receipts-only: eth_getTransactionReceipt alone; every other method is refused.
#   --families LIST: receipts and the method families LIST names (comma-separated cargo
#     features: blocks, transactions, logs, accounts, call), to measure what each costs.
#   --names: keep the function names (profile `wasm` unstripped, wasm-opt -g) for
#     `scripts/wasm_breakdown.py`; the module is larger by its name section only.
set -euo pipefail
FEATURES=()
PROFILE=(--profile wasm)
PROFILE_DIR=wasm
KEEP_NAMES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-evm) FEATURES=(--no-default-features --features blocks,transactions,logs,accounts) ;;
    --receipts-only) FEATURES=(--no-default-features) ;;
    --families) FEATURES=(--no-default-features --features "$2"); shift ;;
    --names)
      PROFILE=(--profile wasm-names --config 'profile.wasm-names.inherits="wasm"' --config 'profile.wasm-names.strip=false')
      PROFILE_DIR=wasm-names
      KEEP_NAMES=(-g --strip-dwarf) ;;
    *) break ;;
  esac
  shift
done
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="${1:-$ROOT/target/js/sszgate-verifier}"
TOOLS="$ROOT/target/js/tools"
BINARYEN_VERSION=132.0.0
WASM_BINDGEN_VERSION=$(sed -n 's/^wasm-bindgen = "=\(.*\)"/\1/p' crates/verifier-wasm/Cargo.toml)

for tool in clang llvm-ar node npm; do
  command -v "$tool" >/dev/null || { echo "build-js: $tool is needed (apt-get install clang llvm nodejs npm)" >&2; exit 1; }
done
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
if [ "$(wasm-bindgen --version 2>/dev/null | cut -d' ' -f2)" != "$WASM_BINDGEN_VERSION" ]; then
  echo "build-js: installing wasm-bindgen-cli $WASM_BINDGEN_VERSION" >&2
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --locked --quiet
fi
if [ ! -x "$TOOLS/node_modules/.bin/wasm-opt" ]; then
  echo "build-js: installing binaryen $BINARYEN_VERSION (wasm-opt)" >&2
  npm install --prefix "$TOOLS" --no-audit --no-fund --silent "binaryen@$BINARYEN_VERSION" >&2
fi

echo "build-js: compiling the verifier for wasm32" >&2
CC_wasm32_unknown_unknown=clang AR_wasm32_unknown_unknown=llvm-ar \
  cargo build -p sszgate-verifier-wasm "${FEATURES[@]}" --target wasm32-unknown-unknown "${PROFILE[@]}" \
    --config "target.wasm32-unknown-unknown.rustflags=[\"-Ctarget-feature=+simd128\"]" >&2
WASM="$ROOT/target/wasm32-unknown-unknown/$PROFILE_DIR/sszgate_verifier_wasm.wasm"

rm -rf "$OUT"
mkdir -p "$OUT/wasm"
cp js/package.json js/index.js js/index.d.ts js/README.md "$OUT/"
wasm-bindgen --target web --out-dir "$OUT/wasm" --out-name sszgate_verifier_wasm "$WASM"
BG="$OUT/wasm/sszgate_verifier_wasm_bg.wasm"
"$TOOLS/node_modules/.bin/wasm-opt" -Oz "${KEEP_NAMES[@]}" --enable-bulk-memory --enable-nontrapping-float-to-int \
  --enable-sign-ext --enable-mutable-globals --enable-simd "$BG" -o "$BG.opt"
mv "$BG.opt" "$BG"
echo "build-js: $(wc -c < "$BG") bytes of WASM ($(gzip -9 -c "$BG" | wc -c) gzipped), $(cat "$OUT"/index.js "$OUT"/wasm/*.js | wc -c) bytes of JS" >&2
echo "$OUT"
