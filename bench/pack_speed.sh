#!/usr/bin/env bash
# Evidence packs then and now: the pack_bench of a baseline build (BASE,
# e.g. a build of the commit before pack format 6, exporting format 5: a
# path per entry) against this tree's (NEW, format 6: one multiproof),
# alternating (the machine's speed drifts between runs), each on a ledger
# of its own filled with the same ENTRIES (pack_bench's entries are a
# function of their index; a data directory is reused once filled). Prints
# each side's export and verification seconds, pack bytes and peak memory,
# and the ratios of the medians (new / base).
#
# Usage: bench/pack_speed.sh BASE NEW [PAIRS] [ENTRIES] [SCOPE] [NEW_FORMAT] [RUNS]
#   BASE, NEW: build directories holding bench/pack_bench.
#   SCOPE: run (default), or seq or team (only where BASE's pack_bench has
#   --scope; the baseline of 2026-12-04 has run alone).
#   RUNS: runs taking turns (pack_bench --runs; the log holds ENTRIES x
#   RUNS entries), where BASE's pack_bench has --runs.
# e.g. git worktree add /tmp/base f815de5^ && cmake -S /tmp/base -B /tmp/base/build -G Ninja \
#        -DCMAKE_BUILD_TYPE=RelWithDebInfo && ninja -C /tmp/base/build pack_bench
#      bench/pack_speed.sh /tmp/base/build build 3 1000000
set -euo pipefail
base=$1
new=$2
pairs=${3:-3}
entries=${4:-1000000}
scope=${5:-run}
new_format=${6:-6}
runs=${7:-1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
scope_flag=()
[ "$scope" = run ] || scope_flag=(--scope "$scope")
[ "$runs" = 1 ] || scope_flag+=(--runs "$runs")
for _ in $(seq "$pairs"); do
  "$base/bench/pack_bench" --entries "$entries" --data "/tmp/pack_speed-base-$entries-$runs" "${scope_flag[@]}" |
    sed 's/^/base /' >>"$out"
  "$new/bench/pack_bench" --entries "$entries" --data "/tmp/pack_speed-new-$entries-$runs" --pack-format "$new_format" \
    --scope "$scope" --runs "$runs" | sed 's/^/new /' >>"$out"
done
/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
runs = {"base": [], "new": []}
for line in open(sys.argv[1]):
    side, _, text = line.partition(" ")
    r = json.loads(text)
    if not r["verified"]:
        sys.exit("a pack did not verify: " + line)
    runs[side].append(r)
first = runs["new"][0]
result = {"entries": first["entries"], "scope": first.get("scope", "run")}
for key in ("export_s", "verify_s", "pack_bytes", "export_peak_rss_kb", "verify_peak_rss_kb"):
    mb = statistics.median(r[key] for r in runs["base"])
    mn = statistics.median(r[key] for r in runs["new"])
    result[key] = {"base": [round(r[key], 2) for r in runs["base"]], "new": [round(r[key], 2) for r in runs["new"]],
                   "ratio_new_to_base": round(mn / mb, 3)}
for side in ("base", "new"):
    result["verify_entries_per_s_" + side] = round(first["entries"] / statistics.median(r["verify_s"] for r in runs[side]))
print(json.dumps(result))
PY
