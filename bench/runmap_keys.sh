#!/usr/bin/env bash
# The run-head map under run keys v1 and v2 (CONTRACT section 6a), alternating
# (the machine's speed drifts between runs): a checkpoint's update of 1000
# runs (time, node hashes per run) and one proof (siblings, bytes), at 10^5
# and 10^6 runs of 50 teams; then the medians' ratios v2 / v1.
# Usage: bench/runmap_keys.sh BUILD_DIR [PAIRS]
set -euo pipefail
build=${1:-build}
pairs=${2:-3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$pairs"); do
  for keys in 1 2; do
    RUNMAP_KEYS=$keys "$build/bench/runmap_bench" --benchmark_filter='CheckpointUpdate/(100000|1000000)|Prove/(100000|1000000)' \
      --benchmark_min_time=0.2 --benchmark_format=json > "$out/v$keys-$i.json" 2> /dev/null
  done
done
/usr/bin/python3 - "$out" "$pairs" <<'PY'
import json, os, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])
rows = {}
for keys in (1, 2):
    for i in range(1, pairs + 1):
        for b in json.load(open(os.path.join(out, "v%d-%d.json" % (keys, i))))["benchmarks"]:
            r = rows.setdefault((b["name"], keys), {"real_time": [], "node_hashes_per_run": [], "siblings_avg": [],
                                                    "bytes_avg": [], "siblings_max": []})
            for k in r:
                if k in b:
                    r[k].append(b[k])
for name in sorted({n for n, _ in rows}):
    v1, v2 = rows[(name, 1)], rows[(name, 2)]
    line = {"benchmark": name}
    for k in v1:
        if v1[k]:
            a, b = statistics.median(v1[k]), statistics.median(v2[k])
            line[k] = {"v1": round(a, 2), "v2": round(b, 2), "v2_over_v1": round(b / a, 2)}
    print(json.dumps(line))
PY
