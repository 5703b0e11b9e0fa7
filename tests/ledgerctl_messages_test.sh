#!/usr/bin/env bash
# ledgerctl's messages say what to do (issue 38): a flag's value that is
# there is never called missing, and the rule it breaks is named; an
# unknown --state or --anomaly lists the valid ones, with the nearest when
# one is close; append's error lines name the input line and the
# receipt_id; append to a ledger that is not there says each retry and,
# at the end, the address; export of a run or window with no entry writes
# nothing and says so, unless --allow-empty. Each case checks the whole of
# stderr, the exit code and stdout, against a real ledgerd.
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
anomalies="$anomalies completion_after_deny, duplicate_start, redacted"
expect 2 "ledgerctl: --anomaly: unknown value 'late_completon'; did you mean 'late_completion'? ($anomalies)" \
  steps --team team-a --anomaly late_completon

# append: every output line answers its input line; an error names it.
cat > "$work/receipts.jsonl" <<'JSON'
{"receipt_id":"r-1","kind":"agent_start","team":"team-a","run_id":"run-1","step_id":"s1","occurred_at_us":1767225600000000,"decision":"allow","timeout_ms":600000}
{"receipt_id":"r-2","kind":"agent_start","team":"team-a","run_id":"run-1","step_id":"s2","occurred_at_us":1767225600000000,"decision":"allow","timeout_ms":600000}
{"receipt_id":"r-3","kind":"agent_start","team":"Team-A","run_id":"run-1","step_id":"s3","occurred_at_us":1767225600000000,"decision":"allow","timeout_ms":600000}

{"receipt_id":"r-5","kind":"agent_stop","team":"team-a","run_id":"run-1","step_id":"s5","occurred_at_us":1767225600000000}
{"receipt_id":"r-6",
JSON
rc=0
ctl append "$work/receipts.jsonl" > "$work/out" 2> "$work/err" || rc=$?
/usr/bin/python3 - "$work/out" "$rc" "$work/err" <<'PY' || failures=$((failures + 1))
import json, re, sys
lines = open(sys.argv[1]).read().splitlines()
kinds = "agent_start, agent_exec, model_call, tool_call, step_unknown, leader_epoch, key_rotation, redaction, retention"
want = [None, None,
        {"code": "INVALID_ARGUMENT", "message": "line 3 (receipt_id r-3): team: 'Team-A' is not 1-63 bytes of [a-z0-9-]"},
        {"code": "INVALID_ARGUMENT", "message": "line 5 (receipt_id r-5): kind: 'agent_stop' is not one of " + kinds},
        {"code": "INVALID_ARGUMENT", "message": "line 6: receipt: not valid JSON (or not UTF-8)"}]
got = [json.loads(l) for l in lines]
ok = len(got) == len(want) and sys.argv[2] == "1" and open(sys.argv[3]).read() == ""
for i, (g, w) in enumerate(zip(got, want)):
    if w is None:
        ok = ok and g.get("seq") == i and re.fullmatch("[0-9a-f]{64}", g.get("leaf_hash", "")) is not None
    else:
        ok = ok and g == {"error": w}
if not ok:
    print("FAIL: append: exit %s, stdout:\n%s\nwant the errors: %s" % (sys.argv[2], "\n".join(lines), want))
    sys.exit(1)
print("ok: append: line 3 (receipt_id r-3), line 5 (receipt_id r-5), line 6 named")
PY

# append to an address where no ledger listens: each retry, then the address.
gone=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rc=0
"$build/cmd/ledgerctl" --server "127.0.0.1:$gone" append "$work/receipts.jsonl" > "$work/out" 2> "$work/err" || rc=$?
: > "$work/want"
for n in 1 2 3 4 5 6 7 8; do
  echo "ledgerctl: append: 127.0.0.1:$gone: UNAVAILABLE: Connection refused; retrying ($n)..." >> "$work/want"
done
echo "ledgerctl: append: gave up after 9 attempts: the ledger at 127.0.0.1:$gone is unavailable" \
  "(Connection refused); is ledgerd running there (--server)?" >> "$work/want"
if [ "$rc" != 1 ] || ! cmp -s "$work/err" "$work/want" ||
  [ "$(sed -n 's/.*"message":"\(line [0-9] (receipt_id r-[0-9])\): failed to connect .*/\1/p' "$work/out" |
    paste -sd,)" != "line 1 (receipt_id r-1),line 2 (receipt_id r-2),line 3 (receipt_id r-3)" ]; then
  echo "FAIL: append to 127.0.0.1:$gone: exit $rc, stderr:"
  diff "$work/want" "$work/err" || true
  cat "$work/out"
  failures=$((failures + 1))
else
  echo "ok: append to 127.0.0.1:$gone: 8 retries said, then the address"
fi

# export: a scope with no entry (a mistyped run id, a window of another
# year) writes nothing unless --allow-empty; then the pack proves it empty.
size=$(ctl checkpoint --at-least 2 | sed -n 2p)
hint="no pack written; check the team and run id, or give --allow-empty for a pack that proves it empty"
expect 1 "ledgerctl: export: run team-a/nope has no entry up to tree size $size: $hint" \
  export --run team-a/nope --out "$work/nope.tar.gz"
expect 1 "ledgerctl: export: team team-a has no entry logged in [2000-01-01T00:00:00Z, 2000-01-02T00:00:00Z) up to tree size $size: ${hint/team and run id/team and times}" \
  export --team team-a --from 2000-01-01T00:00:00Z --to 2000-01-02T00:00:00Z --out "$work/window.tar.gz"
if ls "$work"/nope.tar.gz* "$work"/window.tar.gz* > /dev/null 2>&1; then
  echo "FAIL: a refused export left a file: $(ls "$work"/nope.tar.gz* "$work"/window.tar.gz* 2> /dev/null)"
  failures=$((failures + 1))
fi
# The dashboard's download goes through the same export service.
http=$(sed -n 's/^http on //p' "$work/ledgerd.out")
/usr/bin/python3 - "http://$http/teams/team-a/runs/nope/pack.tar.gz" "run team-a/nope has no entry up to tree size $size" <<'PY' ||
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=30)
    print("FAIL: the dashboard sent a pack of team-a/nope")
    sys.exit(1)
except urllib.error.HTTPError as e:
    body = e.read().decode()
    if e.code != 404 or sys.argv[2] not in body:
        print("FAIL: the dashboard's download of team-a/nope: %d %s" % (e.code, body))
        sys.exit(1)
print("ok: the dashboard's download of team-a/nope: 404, %s" % sys.argv[2])
PY
  failures=$((failures + 1))
ctl vkey > "$work/vkey"
if ! ctl export --run team-a/nope --allow-empty --out "$work/nope.tar.gz" > /dev/null ||
  ! "$build/cmd/ledger-verify" "$work/nope.tar.gz" --vkey "$work/vkey" | grep -q '^OK: 0 entries of '; then
  echo "FAIL: export --allow-empty of team-a/nope: no pack that verifies"
  failures=$((failures + 1))
else
  echo "ok: export --allow-empty: a pack of 0 entries that verifies"
fi

[ "$failures" = 0 ] || { echo "FAIL: $failures cases"; exit 1; }
echo PASS
