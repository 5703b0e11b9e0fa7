#!/usr/bin/env bash
# Storage per million receipts: a real ledgerd (projections on) under
# ledger_load's steps workload for SECONDS, stopped cleanly; then the data
# directory's size over the entries it holds.
# Usage: bench/storage.sh BUILD_DIR [SECONDS]
set -euo pipefail
build=$(cd "$1" && pwd)
secs=${2:-15}
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
"$build/cmd/ledgerd" --data "$work/data" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --origin storage.bench/log > "$work/out" 2> "$work/err" &
pid=$!
for _ in $(seq 100); do grep -q '^listening on ' "$work/out" && break; sleep 0.05; done
addr=$(sed -n 's/^listening on //p' "$work/out")
"$build/bench/ledger_load" --server "$addr" --duration "$secs" --workload steps --baseline=false | tail -n 3
size=$("$build/cmd/ledgerctl" --server "$addr" checkpoint --at-least 1 | sed -n 2p)
kill -TERM "$pid"; wait "$pid"; pid=""
bytes=$(du -sb "$work/data/db" | cut -f1)
awk -v n="$size" -v b="$bytes" 'BEGIN {
  printf "entries %d, store %.1f MB: %.0f bytes an entry, %.0f MB per million receipts\n", n, b / 1e6, b / n, b / n
}'
