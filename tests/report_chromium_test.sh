#!/usr/bin/env bash
# The report of a run with an unknown step, rendered by headless Chromium
# (Debian's): every step of the run is shown and the unknown one is marked.
# Usage: report_chromium_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
start_ledgerd --origin report.test/log --checkpoint-interval-ms 20 --unknown-grace-ms 200 --sweep-interval-ms 50
append_demo_runs
ctl export --run team-support/run-0007 --out "$work/run.tar.gz" > /dev/null
mkdir -p "$work/pack" && tar -xzf "$work/run.tar.gz" -C "$work/pack"
report="$work/pack/evidence/report.html"
browser --dump-dom "file://$report" > "$work/dom.html"
browser --screenshot="$work/report.png" --window-size=1200,900 "file://$report" > /dev/null || true
/usr/bin/python3 - "$work/pack/evidence/outcomes.json" "$work/dom.html" <<'PY'
import json, re, sys
steps = json.load(open(sys.argv[1]))["steps"]
dom = open(sys.argv[2]).read()
assert steps, "no steps in the pack"
for s in steps:
    cell = "<td>%s</td><td>%s</td>" % (s["run_id"], s["step_id"])
    assert cell in dom, "step %s is not shown" % s["step_id"]
unknown = [s for s in steps if s["state"] == "unknown"]
assert unknown, "the run has no unknown step"
rows = re.findall(r'<tr class="unknown"><td>[^<]*</td><td>([^<]*)</td>', dom)
assert sorted(rows) == sorted(s["step_id"] for s in unknown), rows
assert dom.count('class="step unknown"') == len(unknown), "the timeline does not mark it"
assert "never reported a completion" in dom
print("report: %d steps shown by Chromium, %d unknown marked" % (len(steps), len(unknown)))
PY
if [ -n "${REPORT_SCREENSHOT:-}" ] && [ -f "$work/report.png" ]; then cp "$work/report.png" "$REPORT_SCREENSHOT"; fi
