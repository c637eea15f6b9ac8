#!/usr/bin/env bash
# The test command of sszgate: formatting, lints, and every test of the workspace
# (unit, integration, property, CLI, real-data fixtures, and the remerkleable cross-check).
# Tests that need an outside tool skip loudly when it is missing, except under CI=true,
# where a missing tool is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --workspace --locked
