#!/usr/bin/env bash
# Pack format 5 (a path per entry, proofs.jsonl) against format 6 (one
# multiproof, multiproof.txt) with one build's pack_bench, alternating
# (the machine's speed drifts between runs), on the same ledger (DIR,
# filled on the first run and reused): export and verification seconds,
# pack bytes and each phase's peak memory, and the ratios of the medians
# (6 / 5).
# Usage: bench/pack_format.sh [BUILD] [PAIRS] [ENTRIES] [SCOPE] [RUNS] [DIR]
#   SCOPE: run, seq or team (pack_bench --scope); RUNS: runs taking turns.
set -euo pipefail
build=${1:-build}
pairs=${2:-3}
entries=${3:-1000000}
scope=${4:-run}
runs=${5:-1}
dir=${6:-/tmp/pack_format-$entries-$runs}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$pairs"); do
  for format in 5 6; do
    "$build/bench/pack_bench" --entries "$entries" --data "$dir" --pack-format "$format" --scope "$scope" \
      --runs "$runs" >>"$out"
  done
done
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
runs = {5: [], 6: []}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if not r["verified"]:
        sys.exit("a pack did not verify: " + line)
    runs[r["pack_format"]].append(r)
first = runs[5][0]
result = {"entries": first["entries"], "scope": first["scope"], "runs": first["runs"]}
for key in ("export_s", "verify_s", "pack_bytes", "export_peak_rss_kb", "verify_peak_rss_kb"):
    m5 = statistics.median(r[key] for r in runs[5])
    m6 = statistics.median(r[key] for r in runs[6])
    result[key] = {"5": [round(r[key], 2) for r in runs[5]], "6": [round(r[key], 2) for r in runs[6]],
                   "ratio_6_to_5": round(m6 / m5, 3)}
m6 = statistics.median(r["verify_s"] for r in runs[6])
result["verify_entries_per_s_6"] = round(first["entries"] / m6)
print(json.dumps(result))
PY
