#!/usr/bin/env bash
# Short run of every fuzz target (default 20 s each, FUZZ_SECONDS to change), one at a time,
# starting from the committed corpus. New inputs go to a scratch directory, so the committed
# corpus is not touched; a crash fails the script and leaves its input in fuzz/artifacts/.
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
for target in $(cargo +nightly fuzz list); do
  echo "== $target (${seconds}s)"
  mkdir -p "$scratch/$target"
  # One fuzzer process at a time, niced: the machine is shared.
  log="$scratch/$target.log"
  if ! nice -n 10 cargo +nightly fuzz run -O "$target" "$scratch/$target" "corpus/$target" -- \
    -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz-smoke: $target FAILED (its input is in fuzz/artifacts/$target/)" >&2
    exit 1
  fi
  grep -E '^(Done|stat::number_of_executed_units)' "$log" || true
done
echo "fuzz-smoke: every target ran ${seconds}s without a crash"
