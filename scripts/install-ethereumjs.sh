#!/usr/bin/env bash
# Installs the ethereumjs client 0.10.5 (a second, independent execution client for the
# end-to-end tests; up to Prague) into .tools/ethereumjs from the npm registry. Idempotent.
# About 20 seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${SSZGATE_TOOLS:-$PWD/.tools}/ethereumjs"
bin="$prefix/node_modules/.bin/ethereumjs"
if [ -x "$bin" ] && grep -q '"version": "0.10.5"' "$prefix/node_modules/@ethereumjs/client/package.json" 2>/dev/null; then
  echo "ethereumjs client 0.10.5 already in $prefix"
  exit 0
fi
command -v npm >/dev/null || { echo "npm is not installed: it is needed for the ethereumjs client" >&2; exit 1; }
mkdir -p "$prefix"
npm install --no-audit --no-fund --prefix "$prefix" @ethereumjs/client@0.10.5
"$bin" --version 2>/dev/null | head -1 || true
