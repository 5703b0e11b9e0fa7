#!/usr/bin/env bash
# Exports' staging on disk: what an export killed mid-way (SIGKILL) left in
# <data>/tmp is removed when ledgerd starts again, and nothing else there is;
# an export that would stage more than --export-staging-bytes is refused
# with RESOURCE_EXHAUSTED, leaves nothing behind, and the ledger goes on
# appending and exporting within the quota.
# Usage: export_staging_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
entries=150000

staged() { find "$work/data/tmp" -mindepth 1 -maxdepth 1 -name 'ledger-*' | sort; }

start_ledgerd --checkpoint-interval-ms 50
/usr/bin/python3 - "$entries" > "$work/receipts.jsonl" <<'PY'
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"receipt_id": "r-%d" % i, "kind": "model_call", "team": "team-a", "run_id": "run-%d" % (i // 1000),
                      "occurred_at_us": 1767225600000000 + i, "route": "openai/demo", "decision": "allow",
                      "request_sha256": "%064x" % i, "input_tokens": i}))
PY
ctl append "$work/receipts.jsonl" > /dev/null
ctl checkpoint --at-least "$entries" > /dev/null
# Within the quota (the default), a run's export stages and leaves nothing.
ctl export --run team-a/run-7 --out "$work/run.tar.gz" > /dev/null
ctl vkey > "$work/vkey"
"$build/cmd/ledgerctl" verify "$work/run.tar.gz" --vkey "$work/vkey" > /dev/null
[ -z "$(staged)" ] || { echo "FAIL: an export left:"; staged; exit 1; }

# An export killed while it stages.
ctl export --seq "0:$entries" --out "$work/pack.tar.gz" > /dev/null 2>&1 &
exporting=$!
for _ in $(seq 2000); do
  [ -n "$(staged)" ] && break
  sleep 0.01
done
[ -n "$(staged)" ] || { echo "FAIL: the export never staged in $work/data/tmp"; exit 1; }
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
pid=""
wait "$exporting" 2>/dev/null || true
# Its staging directory, or its pack, or both (killed while archiving).
left_behind=$(staged | wc -l)
echo "left by the killed export: $(staged | xargs -n1 basename | tr '\n' ' ')"
# What is not an export's staging stays: other names, and links (never followed).
mkdir -p "$work/outside/keep" "$work/data/tmp/ledger-export-notours" "$work/data/tmp/mine"
echo keep > "$work/outside/keep/file"
ln -s "$work/outside/keep" "$work/data/tmp/ledger-export-LiNk01"
ln -s "$work/outside/keep" "$work/data/tmp/ledger-pack-1-2.tar.gz"
start_ledgerd --checkpoint-interval-ms 50
left=$(find "$work/data/tmp" -mindepth 1 -maxdepth 1 | sort | xargs -n1 basename | tr '\n' ' ')
[ "$left" = "ledger-export-LiNk01 ledger-export-notours ledger-pack-1-2.tar.gz mine " ] ||
  { echo "FAIL: after restart, $work/data/tmp holds: $left"; exit 1; }
[ "$(cat "$work/outside/keep/file")" = keep ] || { echo "FAIL: a link was followed"; exit 1; }
grep -q "\"msg\":\"removed $left_behind staging entries left in $work/data/tmp by exports that did not finish\"" \
  "$work/ledgerd.out" || { cat "$work/ledgerd.out"; exit 1; }
rm -rf "$work/data/tmp/ledger-export-LiNk01" "$work/data/tmp/ledger-pack-1-2.tar.gz" "$work/data/tmp/ledger-export-notours" "$work/data/tmp/mine"
kill -TERM "$pid"
wait "$pid"
pid=""

# A quota of 200 KB: the whole log does not fit, ten entries do.
start_ledgerd --checkpoint-interval-ms 50 --export-staging-bytes 200000
if ctl export --seq "0:$entries" --out "$work/big.tar.gz" 2> "$work/err"; then
  echo "FAIL: an export past the quota was not refused"; exit 1
fi
want="ledgerctl: export: the staging quota is used up (--export-staging-bytes 200000): exports in progress would stage more; retry later"
[ "$(cat "$work/err")" = "$want" ] || { echo "FAIL: got: $(cat "$work/err"); want: $want"; exit 1; }
[ -z "$(find "$work/data/tmp" -mindepth 1)" ] || { echo "FAIL: a refused export left:"; find "$work/data/tmp"; exit 1; }
[ ! -e "$work/big.tar.gz" ] || { echo "FAIL: a refused export wrote its output"; exit 1; }
grep -q 'ledger_exports_total{scope="seqs",result="resource_exhausted"} 1' <(curl -s "http://$(sed -n 's/^http on //p' "$work/ledgerd.out")/metrics") ||
  { echo "FAIL: the refusal is not counted"; exit 1; }
echo '{"receipt_id":"after-quota","kind":"model_call","team":"team-a","run_id":"after","occurred_at_us":1767225600000000,"route":"m","decision":"allow"}' |
  ctl append - | grep -q "\"seq\":$entries" || { echo "FAIL: no append after the refused export"; exit 1; }
ctl export --seq 0:10 --out "$work/small.tar.gz" > /dev/null
"$build/cmd/ledgerctl" verify "$work/small.tar.gz" --vkey "$work/vkey" > /dev/null
[ -z "$(find "$work/data/tmp" -mindepth 1)" ] || { echo "FAIL: an export left:"; find "$work/data/tmp"; exit 1; }
kill -TERM "$pid"
wait "$pid"
pid=""

# Concurrent exports share the quota: one export of the whole log stages
# its files, then the archive as large again (about twice its pack at its
# peak); a quota of 2.3 packs holds one, not two at once. One is refused,
# or both (the second checks before the first has removed what it staged).
start_ledgerd --checkpoint-interval-ms 50
ctl export --seq "0:$entries" --out "$work/measure.tar.gz" > /dev/null
quota=$(( $(stat -c %s "$work/measure.tar.gz") * 23 / 10 ))
kill -TERM "$pid"
wait "$pid"
pid=""
start_ledgerd --checkpoint-interval-ms 50 --export-staging-bytes "$quota"
ctl export --seq "0:$entries" --out "$work/alone.tar.gz" > /dev/null
both=()
for i in 1 2; do
  (ctl export --seq "0:$entries" --out "$work/both-$i.tar.gz" > /dev/null 2> "$work/both-$i.err" || true) &
  both+=($!)
done
wait "${both[@]}"
refusals=$( (grep -lx "$(sed "s/200000/$quota/" <<< "$want")" "$work"/both-*.err || true) | wc -l)
oks=$(find "$work" -maxdepth 1 -name 'both-*.tar.gz' | wc -l)
[ "$refusals" -ge 1 ] && [ $((refusals + oks)) = 2 ] ||
  { echo "FAIL: two concurrent exports: $oks written, $refusals refused:"; cat "$work"/both-*.err; exit 1; }
[ -z "$(find "$work/data/tmp" -mindepth 1)" ] || { echo "FAIL: exports left:"; find "$work/data/tmp"; exit 1; }
echo "export staging: a killed export's staging removed at start; a quota of 200000 bytes refused a $entries-entry export and left nothing; of two concurrent exports under $quota bytes, $refusals refused, $oks written"
