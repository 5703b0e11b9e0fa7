#!/usr/bin/env bash
# ledgerctl's messages say what to do (issue 38): a flag's value that is
# there is never called missing, and the rule it breaks is named; an
# unknown --state or --anomaly lists the valid ones, with the nearest when
# one is close. Each case checks the whole of stderr, the exit code and an
# empty stdout, against a real ledgerd.
# Usage: ledgerctl_messages_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
start_ledgerd
failures=0

# expect WANT_EXIT WANT_STDERR LEDGERCTL_ARGS...: the whole of stderr, and nothing on stdout.
expect() {
  local want_rc=$1 want=$2 rc=0
  shift 2
  ctl "$@" > "$work/out" 2> "$work/err" || rc=$?
  if [ "$rc" != "$want_rc" ] || [ "$(cat "$work/err")" != "$want" ] || [ -s "$work/out" ]; then
    echo "FAIL: ledgerctl $*: exit $rc (want $want_rc), stderr:"
    cat "$work/err"
    echo "want: $want"
    failures=$((failures + 1))
  else
    echo "ok: ledgerctl $*: $want"
  fi
}

rule="is not 1-63 bytes of [a-z0-9-]"
expect 2 "ledgerctl: --team: 'Team-A' $rule" steps --team Team-A
expect 2 "ledgerctl: --team: 'team a' $rule" watch --team "team a"
expect 2 "ledgerctl: --team: required, 1-63 bytes of [a-z0-9-]" run --run run-1
states="pending, succeeded, failed, denied, unknown"
expect 2 "ledgerctl: --state: unknown value 'unknwn'; did you mean 'unknown'? ($states)" \
  steps --team team-a --state unknwn
expect 2 "ledgerctl: --state: unknown value 'lost' ($states)" steps --team team-a --state pending,lost
anomalies="late_completion, orphan_completion, duplicate_completion, conflicting_completion, mismatched_completion,"
anomalies="$anomalies completion_after_deny, duplicate_start"
expect 2 "ledgerctl: --anomaly: unknown value 'late_completon'; did you mean 'late_completion'? ($anomalies)" \
  steps --team team-a --anomaly late_completon

[ "$failures" = 0 ] || { echo "FAIL: $failures cases"; exit 1; }
echo PASS
