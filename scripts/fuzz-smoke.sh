#!/usr/bin/env bash
# Short run of every fuzz target (default 20 s each, FUZZ_SECONDS to change), FUZZ_JOBS at a
# time (default 2: a fuzzer is one process on one core), starting from the committed corpus.
# New inputs go to a scratch directory, so the committed corpus is not touched; a crash fails
# the script and leaves its input in fuzz/artifacts/.
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz --locked`). Without
# them it skips, loudly, with status 0: the stable part of fuzzing (every committed corpus file
# replayed through its target) runs in `cargo test` (crates/engine/tests/fuzz_corpus.rs and
# crates/record/tests/fuzz_corpus.rs).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${FUZZ_SECONDS:-20}"

skip() {
  echo "" >&2
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
  echo "!!! fuzz-smoke SKIPPED: $1" >&2
  echo "!!! (the corpus replay in cargo test still ran the committed inputs on stable)" >&2
  echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2
  exit 0
}

cargo +nightly --version >/dev/null 2>&1 || skip "no nightly toolchain (rustup toolchain install nightly)"
cargo +nightly fuzz --version >/dev/null 2>&1 || skip "no cargo-fuzz (cargo install cargo-fuzz --locked)"

cargo +nightly fuzz build -O
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export scratch seconds
# One target's run: the end of its log when it fails, its two summary lines when not.
run_target() {
  local target=$1 log="$scratch/$1.log"
  mkdir -p "$scratch/$target"
  # Niced: the machine is shared.
  if ! nice -n 10 cargo +nightly fuzz run -O "$target" "$scratch/$target" "corpus/$target" -- \
    -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz-smoke: $target FAILED (its input is in fuzz/artifacts/$target/)" >&2
    return 1
  fi
  echo "== $target (${seconds}s): $(grep -E '^(Done|stat::number_of_executed_units)' "$log" | tr '\n' ' ')"
}
export -f run_target
if ! cargo +nightly fuzz list | xargs -P "${FUZZ_JOBS:-2}" -I{} bash -c 'run_target "$1"' _ {}; then
  echo "fuzz-smoke: a target failed (above)" >&2
  exit 1
fi
echo "fuzz-smoke: every target ran ${seconds}s without a crash"
