#!/usr/bin/env bash
# The latency a CL sees, per Engine API call, driving geth directly, through `sszgate proxy`
# relaying JSON-RPC, and through its bridge (REST-SSZ from the driver, JSON-RPC to geth), at 0,
# 6 and 72 blobs per block. The ways and blob counts are interleaved in rounds on one devnet;
# every call lands in the driver's records (labels way= and blobs=), summarised at the end.
# Usage: scripts/drive-latency.sh [rounds] [blocks-per-step]   (defaults: 3, 4)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
blocks="${2:-4}"
cargo build --release --quiet
bin=target/release/sszgate
dir="$(mktemp -d)/devnet"
trap '"$bin" devnet down --dir "$dir" >/dev/null 2>&1 || true' EXIT
"$bin" devnet up --dir "$dir" --max-blobs 72 >/dev/null
db="$dir/latency.db"
for round in $(seq "$rounds"); do
  for blobs in 0 6 72; do
    for way in direct proxy bridge; do
      flags=(--devnet "$dir" --blocks "$blocks" --txs-per-block 2 --store "sqlite:$db"
             --label "way=$way" --label "blobs=$blobs" --label "round=$round")
      case "$way" in
        direct) flags+=(--direct --transport json) ;;
        proxy) flags+=(--transport json) ;;
        bridge) flags+=(--transport ssz) ;;
      esac
      if [ "$blobs" -gt 0 ]; then
        flags+=(--blob-txs-per-block $((blobs / 6)) --blobs-per-tx 6)
      fi
      "$bin" drive "${flags[@]}" >/dev/null 2>"$dir/drive.err" || { cat "$dir/drive.err" >&2; exit 1; }
    done
  done
done
python3 scripts/latency_table.py "$db"
