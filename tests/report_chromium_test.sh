#!/usr/bin/env bash
# The evidence pack's report as an auditor reads it, in headless Chromium
# (Debian's): a team window of the demo workload (a denied step, denied
# calls, a step declared unknown) plus a run whose emitter filled every
# field with markup, and a run pack. Both packs verify (ledger-verify
# rebuilds the page); tests/report_page_test.py asserts what a person needs
# to see from the DOM, and on A4 and Letter prints the page to PDF and checks
# that nothing is cut off. The pages, their screenshots and the printed
# pages are kept in BUILD_DIR/tests/artifacts/report/.
# Usage: report_chromium_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
start_ledgerd --origin report.test/log --checkpoint-interval-ms 20 --unknown-grace-ms 200 --sweep-interval-ms 50
append_demo_runs
# What a hostile emitter may write: markup, quotes and a cell's end tag in
# every free-text field it owns.
/usr/bin/python3 - > "$work/hostile.jsonl" <<'PY'
import json, time
run = "evil-<script>alert(1)</script>\"'</td>"
step = "s</td><td>\"x'"
common = {"occurred_at_us": int(time.time() * 1e6), "team": "team-support", "run_id": run, "step_id": step, "workflow": "</title><script>alert(2)</script>",
          "agent": "\"><img src=x onerror=alert(3)>"}
rows = [
    dict(common, kind="agent_start", receipt_id="evil.start", decision="allow", timeout_ms=60000,
         cost_reserved_micros=5000, reason="'</td></tr></table><script>alert(4)</script>"),
    dict(common, kind="tool_call", receipt_id="evil.tool", tool="<script>alert(5)</script>",
         target="\"</td><td onclick=alert(6)>", decision="deny", reason="</td></tr><script>alert(7)</script>"),
    dict(common, kind="model_call", receipt_id="evil.model", provider="<b>p</b>", model="m\"'",
         route="<style>body{display:none}</style>", decision="allow", input_tokens=7, output_tokens=9,
         cost_micros=12),
    dict(common, kind="agent_exec", receipt_id="evil.exec", start_receipt_id="evil.start", status="succeeded",
         exit_code=0, duration_ms=1500, cost_micros=100),
]
for r in rows:
    print(json.dumps(r))
PY
ctl append "$work/hostile.jsonl" > /dev/null
sleep 0.3
ctl export --team team-support --from 2000-01-01T00:00:00Z --to 2100-01-01T00:00:00Z --out "$work/team.tar.gz" > /dev/null
ctl export --run team-support/run-0007 --out "$work/run.tar.gz" > /dev/null
ctl vkey > "$work/ledger.vkey"
for p in team run; do
  "$build/cmd/ledger-verify" "$work/$p.tar.gz" --vkey "$work/ledger.vkey" > "$work/$p.verify" ||
    { cat "$work/$p.verify"; exit 1; }
  mkdir -p "$work/$p" && tar -xzf "$work/$p.tar.gz" -C "$work/$p"
done
artifacts="${REPORT_ARTIFACTS:-$build/tests/artifacts/report}"
mkdir -p "$artifacts"
cp "$work/team/evidence/report.html" "$artifacts/report-team.html"
cp "$work/run/evidence/report.html" "$artifacts/report-run.html"
/usr/bin/python3 "$root/tests/report_page_test.py" "$work/team/evidence" "$work/run/evidence" "$work/ledger.vkey" \
  "$artifacts" "$work"
