#!/usr/bin/env bash
# Stream ingest against a real ledgerd (its own process, as deployed: its own
# allocator, its own threads), with ledger_load's RocksDB baseline of the
# same leaf bytes, sync, batch and concurrency measured in the same run: the
# ratio the issue of ingest speed asks about. RUNS runs, each with a fresh
# ledgerd and data directory; prints each run's line and one JSON line with
# the rates, the ratios and their medians. Other ledgerd flags follow (for
# instance --projections=false).
# Usage: bench/stream.sh BUILD_DIR [RUNS] [SECONDS] [WORKLOAD] [LEDGERD FLAGS...]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
runs=${2:-3}
secs=${3:-10}
workload=${4:-calls}
shift $(( $# < 4 ? $# : 4 ))
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid"; rm -rf "$work"' EXIT
lines=()
for run in $(seq "$runs"); do
  rm -rf "$work/data"
  "$build/cmd/ledgerd" --data "$work/data" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
    --origin stream.bench/log "$@" > "$work/out" 2> "$work/err" &
  pid=$!
  for _ in $(seq 200); do grep -q '^http on ' "$work/out" && break; sleep 0.05; done
  addr=$(sed -n 's/^listening on //p' "$work/out")
  line=$("$build/bench/ledger_load" --server "$addr" --mode stream --workload "$workload" --clients 4 \
    --batch 1000 --window 4 --duration "$secs" 2>/dev/null)
  echo "$line"
  lines+=("$line")
  kill "$pid"
  wait "$pid" || true
  pid=""
done
printf '%s\n' "${lines[@]}" | /usr/bin/python3 -c '
import json, statistics, sys
runs = [json.loads(line) for line in sys.stdin if line.strip()]
ledger = [int(r["ledger"]["receipts_per_s"]) for r in runs]
base = [int(r["rocksdb_baseline"]["receipts_per_s"]) for r in runs]
ratio = [round(r["ratio_to_baseline"], 3) for r in runs]
print(json.dumps({"workload": runs[0]["workload"], "ledger": ledger, "baseline": base, "ratios": ratio,
                  "median_ratio": statistics.median(ratio)}))'
