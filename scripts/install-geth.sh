#!/usr/bin/env bash
# Installs go-ethereum's geth v1.17.8 (a real execution client for the end-to-end tests) into
# .tools/bin from the Go module proxy. v1.17.9+ need a module the proxy here does not serve.
# Idempotent: an existing geth of that version is kept. About 3 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${SSZGATE_TOOLS:-$PWD/.tools}/bin"
mkdir -p "$dest"
# Whole outputs are captured before they are searched: a reader that stops early (grep -q,
# head) would kill geth with SIGPIPE, and pipefail would fail the script on it.
if [ -x "$dest/geth" ] && [[ "$("$dest/geth" version 2>/dev/null)" == *"Version: 1.17.8"* ]]; then
  echo "geth 1.17.8 already in $dest"
  exit 0
fi
command -v go >/dev/null || { echo "go is not installed: it is needed to build geth" >&2; exit 1; }
echo "building geth v1.17.8 into $dest (a few minutes)"
GOFLAGS=-mod=mod GOBIN="$dest" go install github.com/ethereum/go-ethereum/cmd/geth@v1.17.8
version="$("$dest/geth" version)"
printf '%s\n' "$version" | sed -n 1,2p
