#!/usr/bin/env bash
# Proven completeness through a real ledgerd: format 3 run packs exported
# by the ledger verify with all three verifiers (ledgerctl verify,
# export/verify/python/verify_pack.py, ledger-verify-go), and the operator's forgeries,
# re-signed with the ledger's key from the data directory, are refused by
# all three naming what is missing (tests/pack_complete_test.py).
# Usage: pack_complete_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
lvg="$work/ledger-verify-go"
(cd "$root/export/verify/go" && GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS= \
  GOCACHE="$build/export/verify/go/gocache" go build -o "$lvg" .)

start_ledgerd --origin complete.test/log --checkpoint-interval-ms 20 --unknown-grace-ms 200 \
  --sweep-interval-ms 50
ctl vkey > "$work/vkey"
append_demo_runs  # team-support/run-0007's crashed step declared unknown
# A run in progress: a step allowed for an hour, and a model call.
live() {  # live N: the run's Nth receipt
  local us=$(($(date +%s) * 1000000 + $1))
  case $1 in
    0) echo '{"decision":"allow","kind":"agent_start","occurred_at_us":'$us',"receipt_id":"live.start","run_id":"run-live","step_id":"step-0","team":"team-ops","timeout_ms":3600000}' ;;
    *) echo '{"decision":"allow","kind":"model_call","occurred_at_us":'$us',"receipt_id":"live.call.'$1'","route":"local/m","run_id":"run-live","step_id":"step-0","team":"team-ops"}' ;;
  esac
}
covered() {  # covered: waits for a checkpoint that covers the receipts appended (ctl append's output on stdin)
  local seq
  seq=$(tail -1 | sed -n 's/.*"seq":\([0-9]*\).*/\1/p')
  [ -n "$seq" ] || { echo "FAIL: append"; exit 1; }
  ctl checkpoint --at-least "$((seq + 1))" > /dev/null
}
# The auditor's kept checkpoint and its (version 3) time note.
ctl checkpoint > "$work/old.note"
ctl checkpoint --time-note --size "$(sed -n 2p "$work/old.note")" > "$work/old.time"
cat "$work/old.note" "$work/old.time" > "$work/old.kept"
# A run whose step failed a moment ago: dropping its agent_exec leaves the
# step pending within its deadline, which no signed time can catch.
us=$(($(date +%s) * 1000000))
printf '%s\n' \
  '{"decision":"allow","kind":"agent_start","occurred_at_us":'$us',"receipt_id":"failed.start","run_id":"run-failed","step_id":"step-0","team":"team-ops","timeout_ms":3600000}' \
  '{"exit_code":1,"kind":"agent_exec","occurred_at_us":'$((us + 5))',"receipt_id":"failed.exec","run_id":"run-failed","start_receipt_id":"failed.start","status":"failed","step_id":"step-0","team":"team-ops"}' |
  ctl append | covered
{ live 0; live 1; } | ctl append | covered
# Packs of format 5: the forgeries below edit proofs.jsonl's paths alongside
# the entries (format 6's multiproof, remade for an entry dropped, is in the
# corpus of tests/strict_packs.py); the completeness rules are the same.
ctl export --run team-ops/run-live --pack-format 5 --out "$work/live-old.tar.gz" > /dev/null
live 2 | ctl append | covered
ctl export --run team-ops/run-live --pack-format 5 --out "$work/live.tar.gz" > /dev/null
ctl export --run team-support/run-0007 --pack-format 5 --out "$work/unknown.tar.gz" > /dev/null
ctl export --run team-code/run-0000 --pack-format 5 --out "$work/done.tar.gz" > /dev/null
ctl export --run team-ops/run-failed --pack-format 5 --out "$work/failed.tar.gz" > /dev/null
ctl export --run team-ops/run-failed --since "$work/old.note" --pack-format 5 --out "$work/failed-since.tar.gz" > /dev/null
ctl export --run team-ops/run-none --allow-empty --pack-format 5 --out "$work/none.tar.gz" > /dev/null
ctl export --seq 0:5 --pack-format 5 --out "$work/seq.tar.gz" > /dev/null
/usr/bin/python3 "$root/tests/pack_complete_test.py" "$build/cmd/ledgerctl" "$root/export/verify/python/verify_pack.py" "$lvg" \
  "$build/tests/pack_outcomes" "$work/vkey" "$work/data/signing.key" "$work"
