#!/usr/bin/env bash
# Projection records skip the WAL, so a killed ledgerd loses the ones not
# yet flushed: the next start must catch them up from the log. After a
# SIGKILL in the middle of a workload, the restarted ledger's step outcomes
# equal those of a full rebuild, and no acknowledged receipt is missing.
# Usage: crash_projection_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
flags=(--origin crash.test/log --checkpoint-interval-ms 20 --unknown-grace-ms 100000000)
start_ledgerd "${flags[@]}"
/usr/bin/python3 "$root/scripts/demo_workload.py" --runs 30 > "$work/receipts.jsonl"
ctl append "$work/receipts.jsonl" > "$work/acks.jsonl"
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
pid=""

dump() {
  for t in team-code team-support team-data; do ctl steps --team "$t" --limit 1000 --json; done
}
start_ledgerd "${flags[@]}"
# The kill lost projection records that were not flushed yet.
grep -q '"event":"projections_caught_up","msg":"projections caught up from the log, entries [0-9]* to ' "$work/ledgerd.out" ||
  { cat "$work/ledgerd.out"; echo "FAIL: nothing to catch up: the crash did not test it"; exit 1; }
dump > "$work/after-crash.jsonl"
# Every acknowledged receipt is in the log with the seq it was given.
ctl entries --from 0 --to "$(wc -l < "$work/acks.jsonl")" > "$work/entries.jsonl"
/usr/bin/python3 - "$work/acks.jsonl" "$work/entries.jsonl" <<'PY'
import json, sys
acks = [json.loads(l) for l in open(sys.argv[1])]
entries = [json.loads(l) for l in open(sys.argv[2])]
for a in acks:
    assert entries[a["seq"]]["seq"] == a["seq"], a
print("crash: %d acknowledged receipts all present" % len(acks))
PY
kill -TERM "$pid"
wait "$pid" || true
pid=""
"$build/cmd/ledgerctl" rebuild --data "$work/data" > "$work/rebuild.out" 2>&1 ||
  { cat "$work/rebuild.out"; echo "FAIL: ledgerctl rebuild of the stopped ledger"; exit 1; }
start_ledgerd "${flags[@]}"
dump > "$work/rebuilt.jsonl"
[ -s "$work/rebuilt.jsonl" ] || { echo "FAIL: no steps"; exit 1; }
if ! cmp -s "$work/after-crash.jsonl" "$work/rebuilt.jsonl"; then
  diff "$work/after-crash.jsonl" "$work/rebuilt.jsonl" | head -5
  echo "FAIL: step outcomes after the crash differ from a rebuild"
  exit 1
fi
echo "crash: $(wc -l < "$work/rebuilt.jsonl") step outcomes after a SIGKILL equal a full rebuild"
