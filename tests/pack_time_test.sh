#!/usr/bin/env bash
# The checkpoint's signed time in evidence packs, through a real ledgerd: a
# genuine pack prints its time with both verifiers; a pack whose time note
# is another checkpoint's, is removed, goes backwards against the auditor's
# kept checkpoint, or shows a step pending past its deadline is refused by
# both (tests/pack_time_test.py). The ledger's grace is an hour, so the
# crashed worker's step (300 ms timeout) is still pending, honestly, when
# the pack is exported.
# Usage: pack_time_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
export ROOT=$root

start_ledgerd --origin time.test/log --checkpoint-interval-ms 20 --unknown-grace-ms 3600000
ctl vkey > "$work/vkey"
/usr/bin/python3 "$root/scripts/demo_workload.py" --runs 9 --timeout-ms 300 > "$work/receipts.jsonl"
ctl append "$work/receipts.jsonl" > /dev/null
ctl checkpoint --at-least "$(wc -l < "$work/receipts.jsonl")" > "$work/old.note"
ctl checkpoint --time-note --size "$(sed -n 2p "$work/old.note")" > "$work/old.time"
cat "$work/old.note" "$work/old.time" > "$work/old.kept"
sleep 0.5  # past the crashed step's timeout, within the grace
/usr/bin/python3 "$root/scripts/demo_workload.py" --runs 2 --seed 9 --timeout-ms 300 |
  sed 's/"receipt_id":"/"receipt_id":"more-/; s/"run_id":"run-/"run_id":"more-run-/' | ctl append > /dev/null
ctl checkpoint --at-least "$(($(sed -n 2p "$work/old.note") + 1))" > /dev/null
ctl steps --team team-support --state pending --json | grep -q '"run-0007"' ||
  { echo "FAIL: the crashed worker's step is not pending"; exit 1; }
# Format 5: the forgeries rewrite the pack as format 1, which carries
# proofs.jsonl.
ctl export --run team-support/run-0007 --pack-format 5 --out "$work/run.tar.gz" --since "$work/old.note" > /dev/null
/usr/bin/python3 "$root/tests/pack_time_test.py" "$build/cmd/ledgerctl" "$root/export/verify/python/verify_pack.py" \
  "$work/run.tar.gz" "$work/vkey" "$work/data/signing.key" "$work/old.kept" "$work"
