#!/usr/bin/env bash
# Stream ingest (steps workload, projections on) with the ledger_load of two
# build directories, alternating (the machine's speed drifts between runs),
# and the ratio of the medians (B / A): to tell a change's cost from the
# drift, build the commit before it in another directory (a git worktree;
# ccache makes that quick) and pass both. Other ledger_load flags follow.
# Usage: bench/compare.sh BUILD_A BUILD_B [PAIRS] [SECONDS] [LEDGER_LOAD FLAGS...]
set -euo pipefail
a=$1
b=$2
pairs=${3:-5}
secs=${4:-10}
shift $(( $# < 4 ? $# : 4 ))
ra=() rb=()
for _ in $(seq "$pairs"); do
  for build in "$a" "$b"; do
    rate=$("$build/bench/ledger_load" --mode stream --clients 4 --batch 1000 --window 4 --duration "$secs" \
      --baseline=false --workload steps "$@" |
      /usr/bin/python3 -c 'import json,sys; print(int(json.load(sys.stdin)["ledger"]["receipts_per_s"]))')
    if [ "$build" = "$a" ]; then ra+=("$rate"); else rb+=("$rate"); fi
  done
done
/usr/bin/python3 - "$a" "$b" "${ra[*]}" "${rb[*]}" <<'PY'
import json, statistics, sys
ra = [int(x) for x in sys.argv[3].split()]
rb = [int(x) for x in sys.argv[4].split()]
print(json.dumps({"a": sys.argv[1], "b": sys.argv[2], "a_rates": ra, "b_rates": rb,
                  "median_a": statistics.median(ra), "median_b": statistics.median(rb),
                  "ratio": round(statistics.median(rb) / statistics.median(ra), 3)}))
PY
