#!/usr/bin/env bash
# The dashboard, driven by headless Chromium (Debian's): the teams, a team's
# runs (the run with the unknown step stands out), the run's steps (every
# step of the run, the unknown one marked), a step's receipts with links to
# inclusion proofs that verify against the signed checkpoint (checked with
# export/verify/python/verify_pack.py's functions), and the evidence pack behind the
# download button, verified by ledgerctl.
# Usage: dashboard_chromium_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
start_ledgerd --origin dashboard.test/log --checkpoint-interval-ms 20 --unknown-grace-ms 200 --sweep-interval-ms 50
for _ in $(seq 100); do grep -q '^http on ' "$work/ledgerd.out" && break; sleep 0.05; done
http=$(sed -n 's/^http on //p' "$work/ledgerd.out")
[ -n "$http" ] || { cat "$work/ledgerd.out"; exit 1; }
append_demo_runs
ctl steps --team team-support --run run-0007 --json > "$work/steps.jsonl"
ctl vkey > "$work/vkey"

browse() { browser --dump-dom "http://$http$1" > "$work/$2"; }  # PATH FILE: the DOM Chromium built
browse / teams.html
browse /teams/team-support runs.html
browse /teams/team-support/runs/run-0007 run.html
unknown_step=$(/usr/bin/python3 -c '
import json, sys
print([s for s in map(json.loads, open(sys.argv[1])) if s["state"] == "unknown"][0]["step_id"])' "$work/steps.jsonl")
browse "/teams/team-support/runs/run-0007/steps/$unknown_step?attempt=1" step.html

/usr/bin/python3 - "$work" "$http" "$root" <<'PY'
import base64, hashlib, importlib.util, json, re, sys, urllib.request
work, http, root = sys.argv[1:]
spec = importlib.util.spec_from_file_location("verify_pack", root + "/export/verify/python/verify_pack.py")
vp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vp)
read = lambda name: open("%s/%s" % (work, name)).read()

teams = read("teams.html")
for t in ("team-code", "team-support", "team-data"):
    assert 'href="/teams/%s"' % t in teams, "team %s not listed" % t

runs = read("runs.html")
row = re.search(r'<tr class="unknown"><td><a href="/teams/team-support/runs/run-0007">run-0007</a>', runs)
assert row, "run-0007 (with an unknown step) does not stand out"

steps = [json.loads(l) for l in open(work + "/steps.jsonl")]
run = read("run.html")
for s in steps:
    cell = '/steps/%s?attempt=%d">%s</a>' % (s["step_id"], s.get("attempt", 1), s["step_id"])
    assert cell in run, "step %s is not shown" % s["step_id"]
marked = re.findall(r'<tr class="unknown"><td><a href="[^"]*/steps/([^?"]*)\?', run)
assert marked == [s["step_id"] for s in steps if s["state"] == "unknown"], marked
assert "UNKNOWN" in run and "Never counted as success" in run
pack_href = re.search(r'<a class="button" href="([^"]+)" download="">Download the evidence pack</a>', run)
assert pack_href, "no download button"

step = read("step.html")
proofs = re.findall(r'<a href="(/proofs/(\d+))">inclusion proof</a>', step)
assert proofs, "no proof links on the step page"
assert "step_unknown" in step, "the step_unknown receipt is not listed"
key = vp.parse_vkey(open(work + "/vkey").read().strip())
for href, seq in proofs:
    with urllib.request.urlopen("http://%s%s" % (http, href)) as r:
        p = json.load(r)
    assert p["seq"] == int(seq)
    leaf_hash = hashlib.sha256(b"\x00" + p["leaf"].encode()).digest()
    assert leaf_hash.hex() == p["leaf_hash"], "leaf hash of %s" % seq
    body = vp.open_note(p["checkpoint"].encode(), key).splitlines()
    assert int(body[1]) == p["tree_size"]
    root_hash = base64.b64decode(body[2])
    assert vp.verify_inclusion(int(seq), p["tree_size"], leaf_hash, [bytes.fromhex(h) for h in p["inclusion"]],
                               root_hash), "proof of %s does not verify" % seq
with urllib.request.urlopen("http://%s%s" % (http, pack_href.group(1))) as r:
    assert r.headers["Content-Type"] == "application/gzip"
    open(work + "/pack.tar.gz", "wb").write(r.read())
print("dashboard: %d steps shown, the unknown one marked; %d proofs verified against the checkpoint"
      % (len(steps), len(proofs)))
PY
"$build/cmd/ledgerctl" verify "$work/pack.tar.gz" --vkey "$work/vkey"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$http/teams/No%20Such/runs/x")
[ "$code" = 400 ] || { echo "FAIL: a bad team gave $code"; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "http://$http/teams/team-support/runs/no-such-run")
[ "$code" = 404 ] || { echo "FAIL: a missing run gave $code"; exit 1; }
echo "PASS"
