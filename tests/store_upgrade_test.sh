#!/usr/bin/env bash
# A data directory written by a ledger of receipt-index format 1
# (tests/fixtures/store-v1-squatted.tar.gz, made by make_store_v1.sh with
# such a ledger): ids were global and emitters could take the sweeper's ids.
# Its log holds team-b's "ledger.unknown.4" (squatting team-a's start at seq
# 4) and team-a's own "ledger.unknown.5" (squatting its start at seq 5),
# both due long ago. The ledger of today must:
#   - audit it as it is (format-1 rows) and after it migrated it;
#   - start on it, rewrite its index, and declare both steps unknown, with
#     entries of emitter "ledger" whose ids no squatter can hold;
#   - keep retries of old receipts idempotent (same seq back), and let
#     team-a use an id team-b used before.
# Usage: store_upgrade_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
origin=fixture.example/v1

tar -C "$work" -xzf "$root/tests/fixtures/store-v1-squatted.tar.gz"
"$build/cmd/ledgerctl" audit --data "$work/data" --origin "$origin" > "$work/audit" ||
  { cat "$work/audit"; fail "audit of the format-1 store"; }
grep -q '^OK: 8 entries' "$work/audit" || { cat "$work/audit"; fail "audit summary"; }

# The store's latest checkpoint (size 8) was signed before the ledger signed
# times (and run-head and team-head map roots): the first start signs its
# time note, of format 4, without appending anything, once the run rows are
# migrated and the team rows filled.
start_ledgerd --origin "$origin" --signing-key "$work/data/signing.key" --projections=false
before=$(( $(date +%s) * 1000000 ))
ctl checkpoint --time-note > "$work/time.note"
/usr/bin/python3 - "$work/time.note" "$before" <<'EOF' || { cat "$work/time.note"; fail "no time note for the old checkpoint"; }
import sys
body = open(sys.argv[1]).read().split("\n\n")[0].split("\n")
assert body[:3] == ["evidence-ledger/checkpoint-time/v4", "fixture.example/v1", "8"], body
assert body[4].startswith("runs ") and len(body[4]) == 5 + 44, body
assert body[5].startswith("teams ") and len(body[5]) == 6 + 44, body
assert body[6].startswith("time ") and int(body[6][5:]) >= int(sys.argv[2]) - 10_000_000, body
EOF
grep -q '"event":"run_heads_migrated".*"rows":[1-9]' "$work/ledgerd.out" ||
  { cat "$work/ledgerd.out"; fail "no word of the migration of the run rows"; }
grep -q '"event":"team_heads_filled".*"rows":3' "$work/ledgerd.out" ||
  { cat "$work/ledgerd.out"; fail "no word of the team rows filled"; }
kill -TERM "$pid"; wait "$pid"; pid=""
mv "$work/ledgerd.out" "$work/ledgerd.out.first"

start_ledgerd --origin "$origin" --signing-key "$work/data/signing.key" \
  --unknown-grace-ms 100 --sweep-interval-ms 50 --checkpoint-interval-ms 20
grep -q '"event":"receipt_index_migrated".*"rows":8' "$work/ledgerd.out.first" ||
  { cat "$work/ledgerd.out.first"; fail "no word of the migration of 8 rows"; }

for _ in $(seq 100); do
  [ "$(ctl steps --team team-a --state unknown --json | grep -c '"state":"unknown"')" = 2 ] && break
  sleep 0.1
done
ctl steps --team team-a --json > "$work/steps"
/usr/bin/python3 - "$work/steps" <<'EOF' || fail "team-a's squatted steps were not declared unknown"
import json, sys
steps = {s["step_id"]: s for s in map(json.loads, open(sys.argv[1])) if s.get("step_id") in ("s-a", "s-a2")}
assert steps["s-a"]["state"] == "unknown" and steps["s-a2"]["state"] == "unknown", steps
EOF

# The declarations are the ledger's, proven by (team, id).
for start in 4 5; do
  ctl prove --team team-a --receipt-id "ledger.unknown.$start" > "$work/proof" || fail "prove ledger.unknown.$start"
  seq=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seq"])' "$work/proof")
  [ "$seq" -ge 8 ] || fail "ledger.unknown.$start of team-a is seq $seq, a squatter's entry"
  ctl entries --from "$seq" --to $((seq + 1)) > "$work/entry"
  grep -q '"emitter":"ledger"' "$work/entry" && grep -q "\"start_seq\":$start" "$work/entry" ||
    { cat "$work/entry"; fail "entry $seq is not the ledger's declaration for seq $start"; }
done
# The squatters' entries are still theirs, by seq.
ctl entries --from 2 --to 4 > "$work/squats"
grep '"seq":2,' "$work/squats" | grep -q '"receipt_id":"ledger.unknown.4","route":"m","run_id":"run-team-b"' ||
  { cat "$work/squats"; fail "seq 2 is not team-b's squat any more"; }

now=$(( $(date +%s) * 1000000 ))
# A retry of an old receipt (the very receipt of seq 6) is its duplicate.
ctl entries --from 6 --to 7 | /usr/bin/python3 -c '
import json, sys
print(json.dumps(json.loads(sys.stdin.readline())["receipt"]))' > "$work/retry.jsonl"
ctl append "$work/retry.jsonl" > "$work/retry.out" || { cat "$work/retry.out"; fail "retry"; }
grep -q '"seq":6,.*"duplicate":true' "$work/retry.out" || { cat "$work/retry.out"; fail "the retry is not seq 6's duplicate"; }
# team-a may now use the id team-b used.
printf '{"receipt_id":"shared-id","team":"team-a","run_id":"run-team-a","step_id":"s1","occurred_at_us":%s,"kind":"model_call","route":"m","decision":"allow"}\n' "$now" |
  ctl append - > "$work/shared.out" || { cat "$work/shared.out"; fail "team-a's shared-id"; }
grep -q '"duplicate"' "$work/shared.out" && fail "team-a's shared-id taken for team-b's"
# Entries appended now are of version 2 and chain their team back into the
# old entries of version 1.
size=$(ctl checkpoint | sed -n 2p)
ctl entries --from 0 --to "$size" > "$work/all"
/usr/bin/python3 - "$work/all" <<'EOF' || fail "the team chain does not link the new entries to the old"
import json, sys
entries = [json.loads(line) for line in open(sys.argv[1])]
last = {}
for e in entries:
    team = e["receipt"]["team"]
    if e["seq"] < 8:
        assert e["v"] == 1 and "team_prev" not in e, e
    else:
        assert e["v"] == 2 and e.get("team_prev") == last.get(team), (e, last.get(team))
    last[team] = e["seq"]
assert len(entries) > 8, len(entries)
EOF

kill -TERM "$pid"
wait "$pid"
pid=""
"$build/cmd/ledgerctl" audit --data "$work/data" --origin "$origin" > "$work/audit" ||
  { cat "$work/audit"; fail "audit after the migration"; }
echo "store_upgrade: OK"
