#!/usr/bin/env bash
# A data directory started again without --origin is the log its key names:
# ledgerd takes the origin from <data>/signing.key (or --signing-key) and
# signs as before; an --origin that is not the key's name is still refused,
# naming both; a new data directory without --origin gets the default.
# Usage: origin_from_key_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
. "$(dirname "$0")/ledgerd.sh"
fail() { echo "FAIL: $*"; exit 1; }
receipt='{"receipt_id":"r-%d","kind":"model_call","team":"team-a","run_id":"run-1","occurred_at_us":1,"route":"m","decision":"allow"}'

start_ledgerd --origin demo.example/log
printf "$receipt\n" 1 | ctl append > /dev/null
first=$(ctl checkpoint --at-least 1)
kill -TERM "$pid"; wait "$pid" || true; pid=""

start_ledgerd  # no --origin
origin=$(ctl checkpoint | head -n 1)
[ "$origin" = "demo.example/log" ] || fail "restarted without --origin, the log is '$origin', not demo.example/log"
printf "$receipt\n" 2 | ctl append > /dev/null
ctl checkpoint --at-least 2 > "$work/second"
ctl consistency --from 1 --to 2 > /dev/null
[ "$(sed -n 2p "$work/second")" = 2 ] || fail "the restarted log did not grow: $(cat "$work/second")"
kill -TERM "$pid"; wait "$pid" || true; pid=""
echo "ok: restarted without --origin, the log is demo.example/log and grows ($(echo "$first" | sed -n 2p) -> 2)"

"$build/cmd/ledgerd" --data "$work/data" --origin other.example/log --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  > "$work/refused.out" 2>&1 && fail "ledgerd started with an --origin its key does not name"
grep -qF "signing key: $work/data/signing.key is named 'demo.example/log' but the origin is 'other.example/log'" \
  "$work/refused.out" || fail "the refusal does not name both: $(cat "$work/refused.out")"
echo "ok: an --origin the key does not name is refused, naming both"

rm -rf "$work/data"
start_ledgerd
origin=$(ctl checkpoint | head -n 1)
[ "$origin" = "evidence-ledger.local/dev" ] || fail "a new data directory without --origin is '$origin'"
echo "ok: a new data directory without --origin is evidence-ledger.local/dev"
