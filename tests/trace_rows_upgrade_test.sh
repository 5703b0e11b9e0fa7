#!/usr/bin/env bash
# A data directory written by a ledger whose step projection had format 2
# (tests/fixtures/store-projections-v2.tar.gz, made by
# make_store_projections_v2.sh with such a ledger): calls were not indexed
# by their trace id, so the dashboard's search by trace id found only
# steps. The ledger of today must:
#   - write the missing rows from the log at start and say so, once;
#   - lead a search by a trace id that only calls of a run without steps
#     carry (OpenTelemetry spans) to that run's page, for each team its
#     own; a trace id of a step and its call to the step's page;
#   - do the same after a restart and after a rebuild from the log.
# Usage: trace_rows_upgrade_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
spans=4bf92f3577b34da6a3ce929d0e0e4736
step_trace=0af7651916cd43dd8448eb211c80319c
serve() {
  start_ledgerd --origin fixture.example/v2 --signing-key "$work/data/signing.key"
  for _ in $(seq 100); do grep -q '^http on ' "$work/ledgerd.out" && break; sleep 0.05; done
  http=$(sed -n 's/^http on //p' "$work/ledgerd.out")
  [ -n "$http" ] || { cat "$work/ledgerd.out"; fail "no http port"; }
}
search() {  # team trace -> "status location"
  curl -s -o /dev/null -w '%{http_code} %header{location}' "http://$http/teams/$1?trace=$2"
}
searches() {
  [ "$(search team-a $spans)" = "303 /teams/team-a/runs/run-otlp#calls" ] ||
    fail "$1: team-a's spans: '$(search team-a $spans)'"
  [ "$(search team-b $spans)" = "303 /teams/team-b/runs/run-otlp#calls" ] ||
    fail "$1: team-b's span: '$(search team-b $spans)'"
  [ "$(search team-a $step_trace)" = "303 /teams/team-a/runs/run-b/steps/s1?attempt=1" ] ||
    fail "$1: the step's trace: '$(search team-a $step_trace)'"
}

tar -C "$work" -xzf "$root/tests/fixtures/store-projections-v2.tar.gz"
serve
grep -q '"event":"projections_upgraded".*"from":2.*"to":3.*"rows":4' "$work/ledgerd.out" ||
  { cat "$work/ledgerd.out"; fail "no word of the 4 calls' trace rows written"; }
searches "after the upgrade"
kill -TERM "$pid"; wait "$pid"; pid=""

serve
if grep -q '"event":"projections_upgraded"' "$work/ledgerd.out"; then
  cat "$work/ledgerd.out"; fail "the projections were upgraded a second time"
fi
searches "after a restart"
kill -TERM "$pid"; wait "$pid"; pid=""

"$build/cmd/ledgerctl" rebuild --data "$work/data" > "$work/rebuild" 2>&1 || { cat "$work/rebuild"; fail "rebuild"; }
serve
searches "after a rebuild"
echo "OK: format-2 projections given their calls' trace rows; searches by trace id lead to runs and steps"
