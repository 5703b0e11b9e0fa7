#!/usr/bin/env bash
# ledgerctl audit on a real data directory: consistent after a workload and
# a stop; refused (exit 3) while the server holds the store or where there
# is no store; an inconsistency (exit 1) against another key; usage (2).
# Usage: audit_cli_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
audit() { "$build/cmd/ledgerctl" audit "$@"; }
expect_exit() {  # expect_exit CODE command...
  local want=$1 got=0
  shift
  "$@" > "$work/out" 2> "$work/err" || got=$?
  [ "$got" = "$want" ] || { cat "$work/out" "$work/err"; echo "FAIL: '$*' exited $got, want $want"; exit 1; }
}

start_ledgerd --origin audit.test/log --checkpoint-interval-ms 50
/usr/bin/python3 "$root/scripts/demo_workload.py" --runs 10 > "$work/receipts.jsonl"
ctl append "$work/receipts.jsonl" > /dev/null
n=$(wc -l < "$work/receipts.jsonl")

expect_exit 3 audit --data "$work/data" --origin audit.test/log
grep -q "^ledgerctl: audit: .*lock" "$work/err" || { cat "$work/err"; echo "FAIL: no word of the lock"; exit 1; }

kill -TERM "$pid"
wait "$pid"
pid=""
expect_exit 0 audit --data "$work/data" --origin audit.test/log
grep -q "^OK: $n entries, [0-9]* tree nodes, [0-9]* checkpoints and [0-9]* runs are consistent; [1-9][0-9]* signed run-head map roots recomputed.$" "$work/out" ||
  { cat "$work/out"; echo "FAIL: summary"; exit 1; }
expect_exit 0 audit --data "$work/data" --origin audit.test/log --json
/usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is True and r["entries"] == int(sys.argv[2]) and r["checkpoints"] >= 2, r
' "$work/out" "$n"

# The public key alone is enough; another key finds the first checkpoint.
"$build/cmd/ledgerctl" keygen --origin audit.test/log --out "$work/other.key" > "$work/other.vkey"
expect_exit 1 audit --data "$work/data" --vkey "$work/other.vkey"
grep -q "^INCONSISTENT: checkpoint: checkpoint of size 0: signature: expected a valid signature by audit.test/log, found " \
  "$work/out" || { cat "$work/out"; echo "FAIL: report"; exit 1; }

expect_exit 3 audit --data "$work/nowhere" --origin audit.test/log
[ ! -e "$work/nowhere" ] || { echo "FAIL: audit created a directory"; exit 1; }
expect_exit 2 audit
echo "audit: $n entries consistent; lock, missing store, wrong key and usage each exit as documented"
