#!/usr/bin/env bash
# Stream ingest (steps workload, projections on) of the in-process ledger
# without and with two local ledger-witness processes cosigning each
# checkpoint, alternating (the machine's speed drifts), and the ratio of the
# medians (with / without). Each run with witnesses starts them on fresh
# data directories (a new log each run: a witness that saw the last one
# would rightly refuse it) and reports how many cosigned the last checkpoint.
# Usage: bench/witness_ratio.sh BUILD_DIR [PAIRS] [SECONDS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
pairs=${2:-3}
secs=${3:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

# The ledger's key, fixed across runs so the witnesses can be told it.
/usr/bin/python3 - "$root/tests" "$work" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[1])
import tlog_spec as t
seed = os.urandom(32)
key = t.LogKey("load.test/log", seed)
open(os.path.join(sys.argv[2], "ledger.key"), "w").write(
    "PRIVATE+KEY+%s+%s+%s\n" % (key.name, key.key_id.hex(), t.b64(b"\x01" + seed)))
open(os.path.join(sys.argv[2], "ledger.vkey"), "w").write(key.vkey() + "\n")
PY

start_witnesses() {  # fresh witnesses A and B; writes $work/policy
  local run=$1
  printf 'log %s\n' "$(cat "$work/ledger.vkey")" > "$work/policy"
  for w in a b; do
    local d="$work/$run-$w"
    local vkey
    vkey=$("$build/cmd/ledger-witness" vkey --data "$d" --name "$w.witness.bench")
    "$build/cmd/ledger-witness" --data "$d" --listen 127.0.0.1:0 --log "$work/ledger.vkey" > "$d.out" 2>&1 &
    pids+=($!)
    for _ in $(seq 200); do grep -q '^listening on ' "$d.out" && break; sleep 0.05; done
    printf 'witness %s %s http://%s\n' "$w" "$vkey" "$(sed -n 's/^listening on //p' "$d.out")" >> "$work/policy"
  done
  printf 'group both all a b\nquorum both\n' >> "$work/policy"
}

load() {
  "$build/bench/ledger_load" --mode stream --clients 4 --batch 1000 --window 4 --duration "$secs" \
    --baseline=false --workload steps --projections=true --signing-key "$work/ledger.key" \
    --witness-policy "$work/policy" "$@"
}

off=() on=() cosigned=()
for i in $(seq "$pairs"); do
  start_witnesses "$i"
  out=$(load --witnesses=true)
  on+=("$(/usr/bin/python3 -c 'import json,sys; print(int(json.load(sys.stdin)["ledger"]["receipts_per_s"]))' <<< "$out")")
  cosigned+=("$(/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["witnesses_cosigned_latest"])' <<< "$out")")
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  pids=()
  out=$(load --witnesses=false)
  off+=("$(/usr/bin/python3 -c 'import json,sys; print(int(json.load(sys.stdin)["ledger"]["receipts_per_s"]))' <<< "$out")")
done
/usr/bin/python3 - "${off[*]}" "${on[*]}" "${cosigned[*]}" <<'PY'
import json, statistics, sys
off = [int(x) for x in sys.argv[1].split()]
on = [int(x) for x in sys.argv[2].split()]
cosigned = [int(x) for x in sys.argv[3].split()]
m_off, m_on = statistics.median(off), statistics.median(on)
print(json.dumps({"workload": "steps", "witnesses_off": off, "witnesses_on": on,
                  "witnesses_cosigned_last_checkpoint": cosigned,
                  "median_off": m_off, "median_on": m_on, "ratio": round(m_on / m_off, 3)}))
PY
