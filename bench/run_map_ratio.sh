#!/usr/bin/env bash
# Stream ingest with the run-head map off and on (steps workload, projections
# on, checkpoints every second as ledgerd signs them), alternating (the
# machine's speed drifts between runs), and the ratio of the medians.
# Usage: bench/run_map_ratio.sh BUILD_DIR [PAIRS] [SECONDS]
set -euo pipefail
build=${1:-build}
pairs=${2:-3}
secs=${3:-10}
off=() on=()
for _ in $(seq "$pairs"); do
  for m in false true; do
    rate=$("$build/bench/ledger_load" --mode stream --clients 4 --batch 1000 --window 4 \
      --duration "$secs" --baseline=false --workload steps --projections=true --run-map=$m |
      /usr/bin/python3 -c 'import json,sys; print(int(json.load(sys.stdin)["ledger"]["receipts_per_s"]))')
    if [ "$m" = false ]; then off+=("$rate"); else on+=("$rate"); fi
  done
done
/usr/bin/python3 - "${off[*]}" "${on[*]}" <<'PY'
import json, statistics, sys
off = [int(x) for x in sys.argv[1].split()]
on = [int(x) for x in sys.argv[2].split()]
m_off, m_on = statistics.median(off), statistics.median(on)
print(json.dumps({"workload": "steps", "projections": True, "run_map_off": off, "run_map_on": on,
                  "median_off": m_off, "median_on": m_on, "ratio": round(m_on / m_off, 3)}))
PY
