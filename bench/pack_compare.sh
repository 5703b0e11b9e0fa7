#!/usr/bin/env bash
# Evidence-pack export and verification with the pack_bench of two builds,
# alternating (the machine's speed drifts between runs), and the ratios of
# the medians (B / A) of each phase's seconds. Both read the same ledger
# (DIR, filled on the first run and reused), so the packs they write can be
# compared byte for byte. A build is a build directory, or a pack_bench
# binary (for instance one copied aside before a change).
# Usage: bench/pack_compare.sh BUILD_A BUILD_B [PAIRS] [ENTRIES] [DIR]
set -euo pipefail
bin() { if [ -d "$1" ]; then echo "$1/bench/pack_bench"; else echo "$1"; fi; }
a=$(bin "$1")
b=$(bin "$2")
pairs=${3:-5}
entries=${4:-1000000}
dir=${5:-/tmp/pack_compare}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$pairs"); do
  for which in a b; do
    if [ "$which" = a ]; then binary=$a; else binary=$b; fi
    "$binary" --entries "$entries" --data "$dir" | sed "s/^/$which /" >>"$out"
  done
done
/usr/bin/python3 - "$a" "$b" "$out" <<'PY'
import json, statistics, sys
runs = {"a": [], "b": []}
for line in open(sys.argv[3]):
    which, text = line.split(" ", 1)
    runs[which].append(json.loads(text))
result = {"a": sys.argv[1], "b": sys.argv[2], "entries": runs["a"][0]["entries"]}
for phase in ("export_s", "verify_s"):
    ma = statistics.median(r[phase] for r in runs["a"])
    mb = statistics.median(r[phase] for r in runs["b"])
    result[phase] = {"a": [round(r[phase], 2) for r in runs["a"]], "b": [round(r[phase], 2) for r in runs["b"]],
                     "median_a": round(ma, 2), "median_b": round(mb, 2), "ratio": round(mb / ma, 3)}
print(json.dumps(result))
PY
