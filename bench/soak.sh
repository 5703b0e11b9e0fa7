#!/usr/bin/env bash
# Soak: a real ledgerd under stream ingest at 70% of its measured maximum,
# with step queries and evidence-pack exports alongside, for MINUTES.
# Prints one JSON line per slice (ingest rate, append p99, query p99,
# exports, ledgerd's resident memory) and a summary: whether memory levels
# off (the last third's growth against the first third's).
# Usage: bench/soak.sh BUILD_DIR [MINUTES=10] [SLICE_SECONDS=30]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
minutes=${2:-10}
slice=${3:-30}
work=$(mktemp -d)
pid=""
bg=""
finish() {
  [ -n "$bg" ] && kill "$bg" 2> /dev/null || true
  [ -n "$pid" ] && kill "$pid" 2> /dev/null && wait "$pid" 2> /dev/null || true
  rm -rf "$work"
}
trap finish EXIT
"$build/cmd/ledgerd" --data "$work/data" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --origin soak.test/log > "$work/ledgerd.out" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q '^listening on ' "$work/ledgerd.out" && break; sleep 0.05; done
addr=$(sed -n 's/^listening on //p' "$work/ledgerd.out")
load() { "$build/bench/ledger_load" --server "$addr" --baseline=false --mode stream --clients 4 --batch 500 --window 4 "$@"; }
rate_of() { /usr/bin/python3 -c 'import json,sys; print(int(json.load(sys.stdin)["ledger"]["receipts_per_s"]))'; }

max=$(load --duration 20 | rate_of)
target=$(( max * 7 / 10 ))
echo "{\"max_receipts_per_s\":$max,\"target_receipts_per_s\":$target}"

# Queries and exports alongside, their latencies in ms, one per line.
(
  set +e
  n=0
  prev_run=""
  while true; do
    t0=$(date +%s%N)
    if "$build/cmd/ledgerctl" --server "$addr" steps --team "team-$((n % 3))" --limit 100 --json > /dev/null; then
      echo "query $(( ($(date +%s%N) - t0) / 1000000 ))" >> "$work/side.log"
    else
      echo "query_failed" >> "$work/side.log"
    fi
    if [ $((n % 20)) = 0 ]; then
      # The run seen 20 rounds (some seconds) ago: the newest is not in a
      # checkpoint yet.
      run=$prev_run
      prev_run=$("$build/cmd/ledgerctl" --server "$addr" steps --team team-0 --limit 1 --json |
        /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["run_id"])' || true)
      t0=$(date +%s%N)
      if [ -n "$run" ] &&
         "$build/cmd/ledgerctl" --server "$addr" export --run "team-0/$run" --out "$work/pack.tar.gz" > /dev/null; then
        echo "export $(( ($(date +%s%N) - t0) / 1000000 ))" >> "$work/side.log"
      else
        echo "export_failed" >> "$work/side.log"
      fi
      rm -f "$work/pack.tar.gz"
    fi
    n=$((n + 1))
    sleep 0.2
  done
) &
bg=$!

slices=$(( minutes * 60 / slice ))
: > "$work/slices.jsonl"
for i in $(seq "$slices"); do
  : > "$work/side.log"
  out=$(load --duration "$slice" --rate "$target")
  rss=$(( $(ps -o rss= -p "$pid") / 1024 ))
  /usr/bin/python3 - "$out" "$work/side.log" "$i" "$slice" "$rss" <<'PY' | tee -a "$work/slices.jsonl"
import json, sys
out, side, i, slice_s, rss = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
q = sorted(int(l.split()[1]) for l in open(side) if l.startswith("query "))
e = [int(l.split()[1]) for l in open(side) if l.startswith("export ")]
failed = sum(1 for l in open(side) if l.endswith("_failed\n"))
p99 = lambda v: v[min(len(v) - 1, int(0.99 * len(v)))] if v else None
print(json.dumps({"t_s": i * slice_s, "receipts_per_s": round(out["ledger"]["receipts_per_s"]),
                  "append_p99_ms": out["ledger"]["p99_ms"], "errors": out["ledger"]["errors"],
                  "queries": len(q), "query_p99_ms": p99(q), "exports": len(e),
                  "export_max_ms": max(e) if e else None, "side_failures": failed, "ledgerd_rss_mb": rss}))
PY
done
/usr/bin/python3 - "$work/slices.jsonl" <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1])]
third = max(1, len(s) // 3)
first, last = s[:third + 1], s[-(third + 1):]
grow_first = first[-1]["ledgerd_rss_mb"] - first[0]["ledgerd_rss_mb"]
grow_last = last[-1]["ledgerd_rss_mb"] - last[0]["ledgerd_rss_mb"]
print(json.dumps({"summary": {
    "slices": len(s),
    "receipts_per_s_min": min(x["receipts_per_s"] for x in s),
    "receipts_per_s_max": max(x["receipts_per_s"] for x in s),
    "append_p99_ms_max": max(x["append_p99_ms"] for x in s),
    "query_p99_ms_max": max(x["query_p99_ms"] or 0 for x in s),
    "errors": sum(x["errors"] for x in s),
    "queries": sum(x["queries"] for x in s), "exports": sum(x["exports"] for x in s),
    "side_failures": sum(x["side_failures"] for x in s),
    "rss_mb_start": s[0]["ledgerd_rss_mb"], "rss_mb_end": s[-1]["ledgerd_rss_mb"],
    "rss_growth_first_third_mb": grow_first, "rss_growth_last_third_mb": grow_last,
    "memory_levels_off": grow_last <= max(16, grow_first / 2)}}))
PY
