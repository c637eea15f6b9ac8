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
step "cargo test: the real-chain suites beside the rest, then the time-bounded suites alone"
# The real-chain suites wait on 2 s slots and leave most of the machine idle (lodestar.rs
# alone: 65 % of two cores idle, vmstat over its 6 minutes), so they run in a lane of their
# own beside every other test; their output is shown when they end. The suites that bound a
# recovery in wall time (a normal call answered within 1 s of an attack) or stop a hook after
# 300 ms of quiet run last, alone on the machine. Every other test target of the workspace,
# a new one included, runs in the first lane. Each lane selects the whole workspace and
# picks targets, so features unify as in one `cargo test --workspace` and nothing is built
# twice (`--exclude sszgate` rebuilt 46 crates). A name held by two crates (`hostile`) runs
# where it is listed for both.
chain_suites=(lodestar devnet verified_rpc bench_e2e bench_ssz_study snooper_xatu)
alone_suites=(attack attack_rpc hostile snooper)
mapfile -t other_suites < <(
  cargo metadata --format-version 1 --no-deps --locked | python3 -c '
import json, sys
held = set(sys.argv[1:])
print(*sorted({t["name"] for p in json.load(sys.stdin)["packages"] for t in p["targets"]
               if "test" in t["kind"] and t["name"] not in held}), sep="\n")' \
    "${chain_suites[@]}" "${alone_suites[@]}"
)
# `--test NAME` for each name given, into the array named first.
as_test_args() { local -n args=$1; shift; args=(); local name; for name; do args+=(--test "$name"); done; }
as_test_args chain_args "${chain_suites[@]}"
as_test_args alone_args "${alone_suites[@]}"
as_test_args other_args "${other_suites[@]}"
cargo test --workspace --locked --no-run
mkdir -p target/test-lanes
chain_log=target/test-lanes/chains.log
cargo test --workspace --locked --no-fail-fast "${chain_args[@]}" >"$chain_log" 2>&1 &
chain_pid=$!
trap 'kill $chain_pid 2>/dev/null || true' EXIT
failed=()
cargo test --workspace --locked --no-fail-fast --lib --bins "${other_args[@]}" \
  || failed+=("the unit and other integration tests")
cargo test --workspace --locked --doc || failed+=("the doc tests")
step "the real-chain suites (${chain_suites[*]}), from their lane"
wait "$chain_pid" || failed+=("the real-chain suites")
trap - EXIT
cat "$chain_log"
step "the time-bounded suites, alone (${alone_suites[*]})"
cargo test --workspace --locked --no-fail-fast "${alone_args[@]}" \
  || failed+=("the time-bounded suites")
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'cargo test failed in: %s\n' "${failed[@]}" >&2
  exit 101
fi
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

