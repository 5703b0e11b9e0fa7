#!/usr/bin/env bash
# Run-head proofs from a real ledgerd: `ledgerctl prove-run` proves a run's
# head (and a missing run's absence) against the map root its latest
# checkpoint-time note signs, checked here by export/verify/python/runmap.py (written from
# CONTRACT section 6a); a run pack says it is complete and names the step with
# no completion; a stopped ledger's replay gives the same proof; audit
# recomputes every signed root.
# Usage: run_proof_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
origin=runs.test/log

start_ledgerd --origin "$origin" --checkpoint-interval-ms 50 --unknown-grace-ms 100 --sweep-interval-ms 50
append_demo_runs
ctl vkey > "$work/vkey"

# The run whose worker crashed: its step is unknown, declared by the ledger.
team=team-support run=run-0007
ctl prove-run --team "$team" --run "$run" > "$work/proof.json" || fail "prove-run"
ctl checkpoint --time-note > "$work/time.note"
size=$(sed -n 3p "$work/time.note")
ctl entries --from 0 --to "$size" > "$work/entries.jsonl"
/usr/bin/python3 - "$root/export/verify/python" "$work/proof.json" "$work/time.note" "$work/entries.jsonl" "$team" "$run" <<'PY' ||
import base64, hashlib, json, sys
sys.path.insert(0, sys.argv[1])
import runmap
proof = json.load(open(sys.argv[2]))
body = open(sys.argv[3]).read().split("\n\n")[0].split("\n")
assert body[0] == "evidence-ledger/checkpoint-time/v4", body
size, runs_root = int(body[2]), base64.b64decode(body[4][len("runs "):])
team, run = sys.argv[5], sys.argv[6]
key = runmap.run_key(team.encode(), run.encode(), 2)
runmap.verify_inclusion_json(runs_root, key, proof)
entries = [json.loads(l) for l in open(sys.argv[4])]
mine = [e for e in entries if e["seq"] < size and e["receipt"]["team"] == team and e["receipt"]["run_id"] == run]
head = proof["head"]
assert head["count"] == len(mine), (head, len(mine))
assert head["last_seq"] == mine[-1]["seq"], (head, mine[-1]["seq"])
assert any(e["receipt"]["kind"] == "step_unknown" for e in mine), "no step_unknown in the run"
print("ok", head["count"])
PY
  fail "the proof of $team/$run does not verify against the signed map root"

ctl prove-run --team "$team" --run no-such-run > "$work/absent.json" || fail "prove-run of a missing run"
grep -q '"head"' "$work/absent.json" && fail "a missing run has a head"
/usr/bin/python3 - "$root/export/verify/python" "$work/absent.json" "$work/time.note" "$team" <<'PY' || fail "the absence proof does not verify"
import base64, json, sys
sys.path.insert(0, sys.argv[1])
import runmap
body = open(sys.argv[3]).read().split("\n\n")[0].split("\n")
runmap.verify_absence_json(base64.b64decode(body[4][5:]), runmap.run_key(sys.argv[4].encode(), b"no-such-run", 2),
                           json.load(open(sys.argv[2])))
PY

# Older sizes come from a replay, not from the server.
ctl prove-run --team "$team" --run "$run" --size 1 > "$work/out" 2> "$work/err" && fail "an older size was served"
grep -q "tree_size: run-head proofs are served at the latest checkpoint" "$work/err" || { cat "$work/err"; fail "message"; }
# No right on the team, no word of its runs: a wrong team name is refused as malformed.
ctl prove-run --team "Team X" --run "$run" 2> "$work/err" && fail "a malformed team was accepted"
grep -q "team" "$work/err" || { cat "$work/err"; fail "message names no field"; }

# The run pack: complete, and the unknown step has no completion, proven.
ctl export --run "$team/$run" --out "$work/run.tar.gz" > /dev/null || fail "export"
"$build/cmd/ledgerctl" verify "$work/run.tar.gz" --vkey "$work/vkey" > "$work/verify.out" ||
  { cat "$work/verify.out"; fail "verify"; }
n=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["head"]["count"])' "$work/proof.json")
grep -q "^complete: every entry of the run up to seq [0-9]* (run-head proof, [0-9]* entries)\.$" "$work/verify.out" ||
  { cat "$work/verify.out"; fail "no completeness line"; }
grep -q "^$team/$run/.* (unknown): no completion in the log up to seq [0-9]* (proven)\.$" "$work/verify.out" ||
  { cat "$work/verify.out"; fail "the unknown step is not listed as proven without completion"; }
ctl export --run "$team/no-such-run" --allow-empty --out "$work/none.tar.gz" > /dev/null || fail "export of a missing run"
"$build/cmd/ledgerctl" verify "$work/none.tar.gz" --vkey "$work/vkey" > "$work/verify.out" ||
  { cat "$work/verify.out"; fail "verify of the absence pack"; }
grep -q "^complete: the run has no entry up to seq [0-9]* (absence proof)\.$" "$work/verify.out" ||
  { cat "$work/verify.out"; fail "no absence line"; }

# The stopped ledger's replay proves the same head at the final checkpoint.
kill -TERM "$pid"; wait "$pid"; pid=""
"$build/cmd/ledgerctl" rebuild --data "$work/data" > "$work/rebuild.out" 2> /dev/null || fail "rebuild"
grep -q "^[1-9][0-9]* run heads rebuilt from the log" "$work/rebuild.out" || { cat "$work/rebuild.out"; fail "rebuild of the run heads"; }
size=$("$build/cmd/ledgerctl" audit --data "$work/data" --origin "$origin" --json |
  /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["ok"] and r["run_map_roots"] >= 2, r; print(r["entries"])')
"$build/cmd/ledgerctl" prove-run --data "$work/data" --origin "$origin" --size "$size" --team "$team" --run "$run" \
  > "$work/replayed.json" || fail "prove-run --data"
# The team's head, from the same replay, against the team-head map root the
# note of that size signs (export/verify/python/runmap.py's team key, CONTRACT section 6a).
"$build/cmd/ledgerctl" prove-team --data "$work/data" --origin "$origin" --size "$size" --team "$team" \
  > "$work/team.json" || fail "prove-team --data"
"$build/cmd/ledgerctl" prove-team --data "$work/data" --origin "$origin" --size "$size" --team no-such-team \
  > "$work/team-absent.json" || fail "prove-team of a missing team"
"$build/cmd/ledgerctl" prove-team --data "$work/data" --origin "$origin" --size 0 --team "$team" 2> "$work/err" &&
  fail "prove-team without a size"
grep -q "prove-team: --data needs --size S, a checkpoint's size" "$work/err" || { cat "$work/err"; fail "message"; }
start_ledgerd --origin "$origin"
ctl checkpoint --size "$size" --time-note > "$work/time-final.note" || fail "the final checkpoint's time note"
ctl entries --from 0 --to "$size" > "$work/entries.jsonl"
/usr/bin/python3 - "$root/export/verify/python" "$work/team.json" "$work/team-absent.json" "$work/time-final.note" \
  "$work/entries.jsonl" "$team" <<'PY' || fail "the team-head proof does not verify against the signed map root"
import base64, json, sys
sys.path.insert(0, sys.argv[1])
import runmap
body = open(sys.argv[4]).read().split("\n\n")[0].split("\n")
assert body[5].startswith("teams "), body
size, teams_root = int(body[2]), base64.b64decode(body[5][len("teams "):])
team = sys.argv[6]
proof = json.load(open(sys.argv[2]))
runmap.verify_inclusion_json(teams_root, runmap.team_key(team.encode()), proof)
mine = [e for e in map(json.loads, open(sys.argv[5])) if e["seq"] < size and e["receipt"]["team"] == team]
assert proof["head"]["count"] == len(mine) and proof["head"]["last_seq"] == mine[-1]["seq"], (proof["head"], len(mine))
runmap.verify_absence_json(teams_root, runmap.team_key(b"no-such-team"), json.load(open(sys.argv[3])))
print("team head ok", proof["head"]["count"])
PY
ctl prove-run --team "$team" --run "$run" > "$work/online.json"
cmp "$work/replayed.json" "$work/online.json" || fail "the replay and the server prove different heads"
echo "run_proof: OK ($n entries in $team/$run)"
