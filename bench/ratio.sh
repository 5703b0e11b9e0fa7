#!/usr/bin/env bash
# Stream ingest (steps workload) with one ledger_load flag false and true,
# alternating (the machine's speed drifts between runs), and the ratio of the
# medians (true / false). Other ledger_load flags follow the pairs.
# Usage: bench/ratio.sh BUILD_DIR FLAG [PAIRS] [SECONDS] [LEDGER_LOAD FLAGS...]
set -euo pipefail
build=${1:-build}
flag=$2
pairs=${3:-3}
secs=${4:-10}
shift $(( $# < 4 ? $# : 4 ))
off=() on=()
for _ in $(seq "$pairs"); do
  for v in false true; do
    rate=$("$build/bench/ledger_load" --mode stream --clients 4 --batch 1000 --window 4 \
      --duration "$secs" --baseline=false --workload steps "--$flag=$v" "$@" |
      /usr/bin/python3 -c 'import json,sys; print(int(json.load(sys.stdin)["ledger"]["receipts_per_s"]))')
    if [ "$v" = false ]; then off+=("$rate"); else on+=("$rate"); fi
  done
done
/usr/bin/python3 - "$flag" "${off[*]}" "${on[*]}" <<'PY'
import json, statistics, sys
flag = sys.argv[1].replace("-", "_")
off = [int(x) for x in sys.argv[2].split()]
on = [int(x) for x in sys.argv[3].split()]
m_off, m_on = statistics.median(off), statistics.median(on)
print(json.dumps({"workload": "steps", flag + "_off": off, flag + "_on": on,
                  "median_off": m_off, "median_on": m_on, "ratio": round(m_on / m_off, 3)}))
PY
