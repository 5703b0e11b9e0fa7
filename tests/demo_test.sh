#!/usr/bin/env bash
# The demo runs end to end and says what it should: the crashed worker's
# step is unknown, the late and orphan completions are flagged, and Go's
# sumdb verified every entry and proof.
# Usage: demo_test.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$root/scripts/demo.sh" "$1" --no-keep > "$out" 2>&1 || { cat "$out"; exit 1; }
check() {
  grep -qE -- "$1" "$out" || { cat "$out"; echo "FAIL: the demo did not print: $1"; exit 1; }
}
check 'UNKNOWN: step step-0 attempt 1 never reported a completion'
check 'steps: 1 succeeded, 0 failed, 0 denied, 0 pending, 1 UNKNOWN'
check 'run-0010 +step-0 +unknown +late_completion'
check 'run-0002 +step-9 +succeeded orphan_completion'
check '"duplicate":true'
check 'INVALID_ARGUMENT","message":"line 1 \(receipt_id bad-1\): team: '\''Team A'\'' is not 1-63 bytes of \[a-z0-9-\]'
check 'go interop: pack of [0-9]+ entries verified with x/mod sumdb against size [0-9]+'
check 'go interop: checkpoints [0-9]+ and [0-9]+ open with note.Open and are consistent by tlog.CheckTree'
# The table of steps that did not succeed holds the crashed worker's step.
check '^UNKNOWN\(!\) +run-0007 +step-0 '
check 'the steps nobody saw finish: +http://127\.0\.0\.1:[0-9]+/unknown'
check 'the run with the unknown step: +http://127\.0\.0\.1:[0-9]+/teams/team-support/runs/run-0007'
check "to start it again: .*/cmd/ledgerd --data .*/demo-data "

check 'OK: [0-9]+ entries of \{"kind":"run","run_id":"run-0007","team":"team-support"\} verified'
check 'witnessed: quorum both met; cosigned by auditor at [-0-9T:]+Z \([0-9]+\), regulator at '
check 'report for people: .*/report.html'
check "OK: checkpoint demo.evidence-ledger.local/log size [0-9]+ meets the quorum 'both': cosigned by auditor at .*, regulator at"
check 'ledger_steps\{team="team-support",state="unknown"\} [1-9]'
check 'ledger_exports_total\{scope="run",result="ok"\} 1'
echo "demo: unknown step declared, anomalies flagged, pack of proofs verified by Go"
