#!/usr/bin/env bash
# The test command of sszgate: formatting, lints, and every test of the workspace
# (unit, integration, property, CLI, real-data fixtures, and the remerkleable cross-check).
# Tests that need an outside tool skip loudly when it is missing, except under CI=true,
# where a missing tool is a failure.
set -euo pipefail
# Each step's heading says when it began (UTC, and seconds since this script started), so
# a slow run shows where its time went.
step() { echo "== [$(date -u +%T) +${SECONDS}s] $*"; }
cd "$(dirname "$0")/.."

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
step "the WASM verifier package (scripts/build-js.sh) and viem (pinned), before cargo test:"
echo "   bin/sszgate/tests/embedded.rs drives them against sszgate rpc --serve-proofs"
pkg=""
if command -v clang >/dev/null && command -v llvm-ar >/dev/null; then
  pkg=$(scripts/build-js.sh | tail -1)
  export SSZGATE_VERIFIER_PKG="$pkg"
  if [ ! -f target/js/viem/node_modules/viem/package.json ]; then
    npm install --prefix target/js/viem --no-audit --no-fund --silent viem@2.57.20
  fi
elif [ "${CI:-}" = "true" ]; then
  echo "the WASM package needs clang and llvm-ar (apt-get install clang llvm)" >&2
  exit 1
else
  echo "!!! SKIPPED the WASM package: no clang/llvm-ar on this machine (apt-get install clang llvm)" >&2
fi
step "cargo test"
cargo test --workspace --locked --no-fail-fast
step "the receipts-only verifier build answers receipts and refuses every other method by name"
echo "   (the facade, and the C library through its C program)"
cargo test --locked -p sszgate-verifier -p sszgate-verifier-c --no-default-features
step "the verifier without the EVM (every family but call) builds and passes its tests"
cargo test --locked -p sszgate-verifier -p sszgate-verifier-c --no-default-features \
  --features blocks,transactions,logs,accounts

step "the WASM verifier package's tests in Node (vectors, mutations, provider, npm pack, browser)"
if [ -n "$pkg" ]; then
  node --test js/test/
fi

