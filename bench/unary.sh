#!/usr/bin/env bash
# Unary appends of one receipt from many clients against a real ledgerd (its
# own process, so the load generator's threads are not the server's):
# ledger_load --mode unary --batch 1 for SECONDS, then the group commits that
# load made, from ledgerd's /metrics before and after it (ledger_commit_entries
# and ledger_commit_seconds). Prints ledger_load's line (receipts/s, ack
# latency p50/p99/p999) and one JSON line: commits, their mean size and mean
# duration, and how many commits fell in each entries-per-commit bucket.
# Other ledgerd flags follow.
# Usage: bench/unary.sh BUILD_DIR [SECONDS] [CLIENTS] [LEDGERD FLAGS...]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
secs=${2:-10}
clients=${3:-64}
shift $(( $# < 3 ? $# : 3 ))
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid"; rm -rf "$work"' EXIT
"$build/cmd/ledgerd" --data "$work/data" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --origin unary.bench/log "$@" > "$work/out" 2> "$work/err" &
pid=$!
for _ in $(seq 200); do grep -q '^http on ' "$work/out" && break; sleep 0.05; done
addr=$(sed -n 's/^listening on //p' "$work/out")
http=$(sed -n 's/^http on //p' "$work/out")
curl -fsS "http://$http/metrics" > "$work/before"
"$build/bench/ledger_load" --server "$addr" --mode unary --clients "$clients" --batch 1 --duration "$secs" \
  --workload calls --baseline=false
curl -fsS "http://$http/metrics" > "$work/after"
/usr/bin/python3 - "$work/before" "$work/after" <<'PY'
import json, re, sys
def read(path):
    out = {}
    for line in open(path):
        m = re.match(r'^(ledger_commit_(?:entries|seconds)_(?:bucket|sum|count))(\{le="([^"]+)"\})? (\S+)$', line)
        if m:
            out[(m.group(1), m.group(3))] = float(m.group(4))
    return out
before, after = read(sys.argv[1]), read(sys.argv[2])
d = {k: after[k] - before.get(k, 0) for k in after}
commits = d[("ledger_commit_entries_count", None)]
buckets = sorted(((k[1], v) for k, v in d.items() if k[0] == "ledger_commit_entries_bucket"),
                 key=lambda kv: float(kv[0]))
per_bucket, below = {}, 0
for le, cumulative in buckets:
    per_bucket["<=" + le] = int(cumulative - below)
    below = cumulative
print(json.dumps({"commits": int(commits),
                  "entries_per_commit_mean": round(d[("ledger_commit_entries_sum", None)] / commits, 1) if commits else 0,
                  "commit_ms_mean": round(1e3 * d[("ledger_commit_seconds_sum", None)] / commits, 3) if commits else 0,
                  "commits_by_entries": per_bucket}))
PY
