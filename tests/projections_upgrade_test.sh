#!/usr/bin/env bash
# A data directory written by a ledger whose step projection had format 1
# (tests/fixtures/store-projections-v1.tar.gz, made by
# make_store_projections_v1.sh with such a ledger): pending steps were
# listed only by their deadline rows, so a team's pending-steps query read
# every team's. The ledger of today must:
#   - upgrade the projections at start and say so, once;
#   - list each team's pending steps, and only its own, from the upgraded
#     rows, and drop a step from the list when its completion comes;
#   - list the same after a rebuild from the log.
# Usage: projections_upgrade_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
origin=fixture.example/v1
# The fixture's deadlines are long past: a grace of ten years keeps its
# steps pending.
grace=$(( 10 * 365 * 86400 * 1000 ))
serve() { start_ledgerd --origin "$origin" --signing-key "$work/data/signing.key" --unknown-grace-ms "$grace"; }
pending() {  # team -> "run/step" lines, sorted
  ctl steps --team "$1" --state pending --json |
    /usr/bin/python3 -c 'import json, sys
for line in sys.stdin:
    s = json.loads(line)
    assert s["state"] == "pending", s
    print(s["run_id"] + "/" + s["step_id"])' | sort | tr '\n' ' '
}

tar -C "$work" -xzf "$root/tests/fixtures/store-projections-v1.tar.gz"
serve
# Format 3 came later: the fixture's log has no call to give a trace row.
grep -q '"event":"projections_upgraded".*"from":1.*"to":3.*"rows":8' "$work/ledgerd.out" ||
  { cat "$work/ledgerd.out"; fail "no word of the upgrade of 8 pending steps"; }
[ "$(pending team-a)" = "run-a/s1 run-a/s2 " ] || fail "team-a's pending steps: '$(pending team-a)'"
[ "$(pending team-b)" = "run-b/s1 run-b/s2 run-b/s3 run-b/s4 run-b/s5 run-c/s1 " ] ||
  fail "team-b's pending steps: '$(pending team-b)'"
now=$(( $(date +%s) * 1000000 ))
printf '{"receipt_id":"run-a.s1.exec","team":"team-a","run_id":"run-a","step_id":"s1","occurred_at_us":%s,"kind":"agent_exec","start_receipt_id":"run-a.s1.start","status":"succeeded","exit_code":0,"duration_ms":5}\n' \
  "$now" | ctl append - > /dev/null
[ "$(pending team-a)" = "run-a/s2 " ] || fail "team-a after s1's completion: '$(pending team-a)'"
[ "$(ctl steps --team team-a --state succeeded --json | grep -c '"step_id":"s1"')" = 1 ] ||
  fail "s1 is not listed as succeeded"
kill -TERM "$pid"; wait "$pid"; pid=""

serve
if grep -q '"event":"projections_upgraded"' "$work/ledgerd.out"; then
  cat "$work/ledgerd.out"; fail "the projections were upgraded a second time"
fi
[ "$(pending team-a)" = "run-a/s2 " ] || fail "team-a after a restart: '$(pending team-a)'"
kill -TERM "$pid"; wait "$pid"; pid=""

"$build/cmd/ledgerctl" rebuild --data "$work/data" > "$work/rebuild" 2>&1 || { cat "$work/rebuild"; fail "rebuild"; }
serve
[ "$(pending team-a)" = "run-a/s2 " ] || fail "team-a after a rebuild: '$(pending team-a)'"
[ "$(pending team-b)" = "run-b/s1 run-b/s2 run-b/s3 run-b/s4 run-b/s5 run-c/s1 " ] ||
  fail "team-b after a rebuild: '$(pending team-b)'"
if grep -q '"event":"projections_upgraded"' "$work/ledgerd.out"; then
  cat "$work/ledgerd.out"; fail "a rebuilt store was upgraded"
fi
echo "OK: format-1 projections upgraded; each team lists its own pending steps"
