#!/usr/bin/env bash
# Packs of every scope exported by a real ledgerd are verified by three
# verifiers written apart: ledger-verify-go (this folder), ledgerctl verify
# and export/verify/python/verify_pack.py. All three accept the genuine packs and refuse
# each tampered one; packs are tampered as an operator holding the ledger's
# signing key could (repack.py re-signs the manifest). ledger-verify-go's
# lines are checked exactly. The packs are of format 7 (multiproof.txt, as format 6),
# and of format 5 (proofs.jsonl, ledgerctl export --pack-format 5) where a
# test is about proofs.jsonl. Usage: pack_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
# shellcheck source=tests/ledgerd.sh
source "$root/tests/ledgerd.sh"

lvg="$build/export/verify/go/ledger-verify-go"
mkdir -p "$build/export/verify/go"
(cd "$here" && GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS= \
  GOCACHE="$build/export/verify/go/gocache" go build -o "$lvg" .)

start_ledgerd --origin go-verify.test/log --checkpoint-interval-ms 20 \
  --unknown-grace-ms 200 --sweep-interval-ms 50
ctl checkpoint > "$work/zero.note"  # the empty tree
t0=$(date -u +%Y-%m-%dT%H:%M:%SZ)
append_demo_runs
ctl checkpoint > "$work/old.note"
sleep 1.1; mid=$(date -u +%Y-%m-%dT%H:%M:%SZ); sleep 1.1  # a window starting inside runs
/usr/bin/python3 "$root/scripts/demo_workload.py" --runs 3 --seed 9 --timeout-ms 300 |
  sed 's/"receipt_id":"/"receipt_id":"more-/' | ctl append > /dev/null
sleep 1  # steps of 300 ms and a grace of 200 ms: any unknown step is declared
ctl checkpoint --at-least "$(($(sed -n 2p "$work/old.note") + 1))" > /dev/null
t1=$(date -u -d '+2 sec' +%Y-%m-%dT%H:%M:%SZ)
ctl vkey > "$work/vkey"
ctl export --run team-support/run-0007 --out "$work/run.tar.gz" > /dev/null
ctl export --run team-support/run-0007 --out "$work/run5.tar.gz" --pack-format 5 > /dev/null
ctl export --run team-code/run-0000 --out "$work/since.tar.gz" --since "$work/old.note" > /dev/null
ctl export --run team-code/run-0000 --out "$work/since5.tar.gz" --since "$work/old.note" --pack-format 5 > /dev/null
ctl export --seq 3:20 --out "$work/seq.tar.gz" > /dev/null
ctl export --team team-code --from "$t0" --to "$t1" --out "$work/team.tar.gz" > /dev/null
ctl export --team team-code --from "$mid" --to "$t1" --out "$work/late.tar.gz" > /dev/null
ctl export --team team-code --from "$t0" --to "$t1" --out "$work/team-since.tar.gz" --since "$work/old.note" > /dev/null
ctl export --team team-code --from "$t0" --to "$mid" --out "$work/early.tar.gz" > /dev/null
# The old checkpoint kept with its time note, as an auditor keeps it.
{ cat "$work/old.note"; ctl checkpoint --time-note --size "$(sed -n 2p "$work/old.note")"; } > "$work/old-kept.note"
ctl checkpoint > "$work/latest.note"
ctl export --run team-code/run-0000 --out "$work/since0.tar.gz" --since "$work/zero.note" > /dev/null
ctl export --run team-code/run-0000 --out "$work/since-same.tar.gz" --since "$work/latest.note" > /dev/null
ctl export --team team-none --from "$t0" --to "$t1" --allow-empty --out "$work/empty.tar.gz" > /dev/null
"$build/cmd/ledgerctl" keygen --origin go-verify.test/log --out "$work/other.key" > "$work/other.vkey"

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# pack_field PACK EXPR: a Python expression over m (the manifest), e (the
# entries), cp (the checkpoint's lines).
pack_field() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import base64, json, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    read = lambda n: t.extractfile("evidence/" + n).read().decode()
    m = json.loads(read("manifest.json"))
    w = json.loads(read("team-window.json")) if "evidence/team-window.json" in t.getnames() else None
    e = [json.loads(l) for l in read("entries.jsonl").splitlines()]
    cp = read("checkpoint").split("\n")
    root = base64.b64decode(cp[2]).hex()
print(eval(sys.argv[2]))
PY
}

# ok_tail PACK: what ends every OK line of ledger-verify-go for PACK.
ok_tail() {
  pack_field "$1" '"%d entries, tree size %s, root %s" % (len(e), cp[1], root)'
}

# done_part PACK: what a format 3 run pack's OK line says of its run-head
# proof, and a format 4 team window of its team chain (every leaf of a new
# ledger is of version 2); step_lines PACK: the lines after it, one per step
# the run starts and no agent_exec of the same step and attempt completes.
done_part() {
  pack_field "$1" '("; complete: every entry of team %s logged in [%d, %d) up to seq %d (team chain, %d entries)" % (
      m["scope"]["team"], m["scope"]["from_us"], m["scope"]["to_us"], int(cp[1]) - 1, len(e))
    if m["format"] >= 4 and m["scope"]["kind"] == "team" else
    "" if m["format"] < 3 or m["scope"]["kind"] != "run" else
    "; complete: every entry of the run up to seq %d (run-head proof, %d entries)" % (int(cp[1]) - 1, len(e)) if e else
    "; complete: the run has no entry up to seq %d (absence proof)" % (int(cp[1]) - 1))'
}
step_lines() {
  pack_field "$1" '"" if m["format"] < 3 or m["scope"]["kind"] != "run" else "".join(
    "\nstep %s/%s/%s attempt %d: no completion in the log up to seq %d (proven)" % (
      r["team"], r["run_id"], r["step_id"], r.get("attempt", 1), int(cp[1]) - 1)
    for r in (x["receipt"] for x in e)
    if r["kind"] == "agent_start" and r["decision"] == "allow" and not any(
      y["receipt"]["kind"] == "agent_exec" and (y["receipt"].get("start_receipt_id"), y["receipt"].get("step_id"),
      y["receipt"].get("attempt", 1)) == (r["receipt_id"], r["step_id"], r.get("attempt", 1)) for y in e))'
}

# accept NAME PACK EXPECTED_GO_LINE [flags]: all three verifiers accept.
accept() {
  local name=$1 pack=$2 want=$3; shift 3
  local got
  got=$("$lvg" "$pack" "$@" 2>&1) || true
  [ "$got" = "$want" ] || fail "$name: ledger-verify-go said: $got; expected: $want"
  "$build/cmd/ledgerctl" verify "$pack" "$@" > "$work/out" 2>&1 || fail "$name: ledgerctl verify refused: $(cat "$work/out")"
  /usr/bin/python3 "$root/export/verify/python/verify_pack.py" "$pack" "$@" > "$work/out" 2>&1 ||
    fail "$name: verify_pack.py refused: $(cat "$work/out")"
}

# refuse NAME PACK EXPECTED_GO_LINE [flags]: all three exit 1.
refuse() {
  local name=$1 pack=$2 want=$3; shift 3
  local got rc=0
  got=$("$lvg" "$pack" "$@" 2>&1) || rc=$?
  [ "$rc" = 1 ] && [ "$got" = "$want" ] ||
    fail "$name: ledger-verify-go exited $rc saying: $got; expected exit 1 and: $want"
  rc=0; "$build/cmd/ledgerctl" verify "$pack" "$@" > "$work/out" 2>&1 || rc=$?
  [ "$rc" = 1 ] || fail "$name: ledgerctl verify exited $rc: $(cat "$work/out")"
  rc=0; /usr/bin/python3 "$root/export/verify/python/verify_pack.py" "$pack" "$@" > "$work/out" 2>&1 || rc=$?
  [ "$rc" = 1 ] || fail "$name: verify_pack.py exited $rc: $(cat "$work/out")"
  echo "refused $name: $got"
}

key=(--vkey "$work/vkey")
old_size=$(sed -n 2p "$work/old.note")
note_root() { sed -n 3p "$1" | base64 -d | od -An -tx1 -v | tr -d ' \n'; }
old_root=$(note_root "$work/old.note")
us() { echo $(($(date -d "$1" +%s) * 1000000)); }

# Genuine packs of every scope.
for p in run seq team since; do
  [ "$(pack_field "$work/$p.tar.gz" 'm["format"]')" = 7 ] || fail "$p: not a pack of format 7"
done
[ "$(pack_field "$work/run5.tar.gz" 'm["format"]')" = 5 ] || fail "run5: not a pack of format 5"
accept "run of format 5" "$work/run5.tar.gz" "OK run team-support/run-0007: $(ok_tail "$work/run5.tar.gz")$(done_part "$work/run5.tar.gz"); outcomes.json not recomputed$(step_lines "$work/run5.tar.gz")" "${key[@]}"
accept run "$work/run.tar.gz" "OK run team-support/run-0007: $(ok_tail "$work/run.tar.gz")$(done_part "$work/run.tar.gz"); outcomes.json not recomputed$(step_lines "$work/run.tar.gz")" "${key[@]}"
accept seq "$work/seq.tar.gz" "OK seq 3:20: $(ok_tail "$work/seq.tar.gz")$(done_part "$work/seq.tar.gz"); outcomes.json not recomputed$(step_lines "$work/seq.tar.gz")" "${key[@]}"
for w in team late early; do
  from=$t0; to=$t1; [ $w = late ] && from=$mid; [ $w = early ] && to=$mid
  seqs=$(pack_field "$work/$w.tar.gz" '"%d:%d" % (m["scope"]["from_seq"], m["scope"]["to_seq"])')
  accept "$w window" "$work/$w.tar.gz" \
    "OK team team-code from_us $(us "$from") to_us $(us "$to") (seqs $seqs): $(ok_tail "$work/$w.tar.gz")$(done_part "$work/$w.tar.gz"); outcomes.json not recomputed$(step_lines "$work/$w.tar.gz")" "${key[@]}"
done
# The early window ends before the team's later entries: the first of them
# closes it (after), where the late window ends with the team's head.
[ "$(pack_field "$work/early.tar.gz" '"after" in w and "head" not in w')" = True ] || fail "early window: no after"
[ "$(pack_field "$work/late.tar.gz" '"head" in w and "head" in w["head"]')" = True ] || fail "late window: no head"
# The late window starts inside runs: its first entry links below from_seq.
[ "$(pack_field "$work/late.tar.gz" 'e[0].get("run_prev", -1) < m["scope"]["from_seq"] <= e[0]["seq"] and "run_prev" in e[0]')" = True ] ||
  fail "late window: its first entry does not link below the window"
accept "run --since" "$work/since.tar.gz" \
  "OK run team-code/run-0000: $(ok_tail "$work/since.tar.gz"), consistent with the --since checkpoint size $old_size root $old_root$(done_part "$work/since.tar.gz"); outcomes.json not recomputed$(step_lines "$work/since.tar.gz")" \
  "${key[@]}" --since "$work/old.note"
accept "run --since the empty tree" "$work/since0.tar.gz" \
  "OK run team-code/run-0000: $(ok_tail "$work/since0.tar.gz"), consistent with the --since checkpoint size 0 root $(printf '' | sha256sum | cut -c1-64)$(done_part "$work/since0.tar.gz"); outcomes.json not recomputed$(step_lines "$work/since0.tar.gz")" \
  "${key[@]}" --since "$work/zero.note"
accept "run --since the same checkpoint" "$work/since-same.tar.gz" \
  "OK run team-code/run-0000: $(ok_tail "$work/since-same.tar.gz"), consistent with the --since checkpoint size $(sed -n 2p "$work/latest.note") root $(note_root "$work/latest.note")$(done_part "$work/since-same.tar.gz"); outcomes.json not recomputed$(step_lines "$work/since-same.tar.gz")" \
  "${key[@]}" --since "$work/latest.note"
accept "an empty team window" "$work/empty.tar.gz" \
  "OK team team-none from_us $(us "$t0") to_us $(us "$t1") (seqs $(pack_field "$work/empty.tar.gz" '"%d:%d" % (m["scope"]["from_seq"], m["scope"]["to_seq"])')): $(ok_tail "$work/empty.tar.gz")$(done_part "$work/empty.tar.gz"); outcomes.json not recomputed$(step_lines "$work/empty.tar.gz")" "${key[@]}"
got=$("$lvg" --trust-pack-key "$work/run.tar.gz")
[ "$got" = "OK run team-support/run-0007: $(ok_tail "$work/run.tar.gz")$(done_part "$work/run.tar.gz"); outcomes.json not recomputed; the key was the pack's own (--trust-pack-key): this proves nothing about the ledger's identity$(step_lines "$work/run.tar.gz")" ] ||
  fail "--trust-pack-key: $got"

# Tampered packs, the manifest re-signed with the ledger's key.
repack() {  # repack IN OUT CHANGE...
  /usr/bin/python3 "$here/repack.py" "$1" "$2" --key "$work/data/signing.key" \
    --outcomes "$build/tests/pack_outcomes" "${@:3}"
}
seq_at() { pack_field "$1" "e[$2][\"seq\"]"; }
hash_at() {  # the leaf hash of line $2 of PACK $1
  tar -xOzf "$1" evidence/entries.jsonl | sed -n "$(($2 + 1))p" | tr -d '\n' |
    /usr/bin/python3 -c 'import hashlib,sys; print(hashlib.sha256(b"\0" + sys.stdin.buffer.read()).hexdigest())'
}
run_root="root $(pack_field "$work/run.tar.gz" 'root')"
run_size=$(pack_field "$work/run.tar.gz" 'cp[1]')

repack "$work/run.tar.gz" "$work/t-same.tar.gz"
accept "rebuilt, unchanged" "$work/t-same.tar.gz" "OK run team-support/run-0007: $(ok_tail "$work/run.tar.gz")$(done_part "$work/run.tar.gz"); outcomes.json not recomputed$(step_lines "$work/run.tar.gz")" "${key[@]}"

repack "$work/run5.tar.gz" "$work/t-flip.tar.gz" flip-entry:4
refuse "a changed byte of an entry" "$work/t-flip.tar.gz" \
  "FAIL: entries.jsonl seq $(seq_at "$work/run5.tar.gz" 4): leaf hash: expected $(hash_at "$work/run5.tar.gz" 4) (proofs.jsonl), found $(hash_at "$work/t-flip.tar.gz" 4)" "${key[@]}"

repack "$work/run5.tar.gz" "$work/t-flip2.tar.gz" flip-entry:4 fix-leaf-hash:4
refuse "a changed entry with its leaf hash" "$work/t-flip2.tar.gz" \
  "FAIL: proofs.jsonl seq $(seq_at "$work/run5.tar.gz" 4): inclusion proof against tree size $run_size $run_root: invalid transparency proof" "${key[@]}"

# Format 6: the entries and multiproof.txt lead to another root.
led_to() { /usr/bin/python3 "$here/repack.py" --root "$1"; }
# An entry with a span_id whose next seq is not in the pack (no prev to break).
k=$(pack_field "$work/run.tar.gz" '[i for i, x in enumerate(e) if "span_id" in json.dumps(x) and (
  i == len(e) - 1 or e[i + 1]["seq"] != x["seq"] + 1)][-1]')
repack "$work/run.tar.gz" "$work/t-flip6.tar.gz" "flip-entry:$k"
refuse "a changed byte of an entry (format 6)" "$work/t-flip6.tar.gz" \
  "FAIL: multiproof.txt: the entries and the multiproof lead to root $(led_to "$work/t-flip6.tar.gz"), the checkpoint's is $(pack_field "$work/run.tar.gz" 'root')" "${key[@]}"
repack "$work/run.tar.gz" "$work/t-hash6.tar.gz" flip-hash:1
refuse "a changed hash of multiproof.txt" "$work/t-hash6.tar.gz" \
  "FAIL: multiproof.txt: the entries and the multiproof lead to root $(led_to "$work/t-hash6.tar.gz"), the checkpoint's is $(pack_field "$work/run.tar.gz" 'root')" "${key[@]}"

repack "$work/run.tar.gz" "$work/t-drop.tar.gz" drop:5
refuse "a dropped entry of a run" "$work/t-drop.tar.gz" \
  "FAIL: entries.jsonl seq $(seq_at "$work/run.tar.gz" 6): run_prev: expected $(seq_at "$work/run.tar.gz" 4) (the run's previous entry in the pack), found $(seq_at "$work/run.tar.gz" 5)" "${key[@]}"

repack "$work/run.tar.gz" "$work/t-drop0.tar.gz" drop:0
refuse "a run pack without the run's first entry" "$work/t-drop0.tar.gz" \
  "FAIL: entries.jsonl seq $(seq_at "$work/run.tar.gz" 1): run_prev: expected none (the run's first entry), found $(seq_at "$work/run.tar.gz" 0): the pack does not start at the run's first entry" "${key[@]}"

repack "$work/seq.tar.gz" "$work/t-seq.tar.gz" drop:0
refuse "a seq range without its first seq" "$work/t-seq.tar.gz" \
  "FAIL: entries.jsonl line 1: expected seq 3, found seq 4" "${key[@]}"

# In the team window, an entry whose run has a later entry in the window.
i=$(pack_field "$work/team.tar.gz" '[i for i, x in enumerate(e) if any(y.get("run_prev") == x["seq"] for y in e)][1]')
j=$(pack_field "$work/team.tar.gz" "[k for k, y in enumerate(e) if y.get('run_prev') == e[$i]['seq']][0]")
repack "$work/team.tar.gz" "$work/t-team.tar.gz" "drop:$i"
refuse "a dropped entry of a team window" "$work/t-team.tar.gz" \
  "FAIL: entries.jsonl seq $(seq_at "$work/team.tar.gz" "$j"): run_prev: expected $(pack_field "$work/team.tar.gz" "[x['seq'] for x in e[:$i] if (x['receipt']['team'], x['receipt']['run_id']) == (e[$i]['receipt']['team'], e[$i]['receipt']['run_id'])][-1]") (the run's previous entry in the pack), found $(seq_at "$work/team.tar.gz" "$i")" "${key[@]}"

first=$(seq_at "$work/since5.tar.gz" 0)
repack "$work/since5.tar.gz" "$work/t-old.tar.gz" "checkpoint:$work/old.note"
refuse "the checkpoint swapped for an older one" "$work/t-old.tar.gz" \
  "FAIL: proofs.jsonl seq $first: inclusion proof against tree size $old_size root $old_root: invalid transparency proof" "${key[@]}"
# Format 6: an entry beyond the older tree is refused with the entries,
# else the multiproof leads to another root.
repack "$work/since.tar.gz" "$work/t-old6.tar.gz" "checkpoint:$work/old.note"
refuse "the checkpoint swapped for an older one (format 6)" "$work/t-old6.tar.gz" \
  "$(pack_field "$work/t-old6.tar.gz" 'next(("FAIL: entries.jsonl: line %d: seq %d is not in the checkpoint'"'"'s tree of size %s" % (
      i + 1, x["seq"], cp[1]) for i, x in enumerate(e) if x["seq"] >= int(cp[1])), "")' |
    sed "s/^\$/FAIL: multiproof.txt: the entries and the multiproof lead to root $(led_to "$work/t-old6.tar.gz"), the checkpoint's is $old_root/")" "${key[@]}"

repack "$work/run.tar.gz" "$work/t-unsigned.tar.gz" unsigned-counts
signed=$(tar -xOzf "$work/t-unsigned.tar.gz" evidence/manifest.sig | head -1)
actual=$(tar -xOzf "$work/t-unsigned.tar.gz" evidence/manifest.json | sha256sum | cut -c1-64)
refuse "a manifest changed after signing" "$work/t-unsigned.tar.gz" \
  "$(printf 'FAIL: manifest.sig: expected the text "%s\\x0a" (manifest.json'"'"'s SHA-256), found "%s\\x0a"' "$actual" "$signed")" "${key[@]}"

repack "$work/run.tar.gz" "$work/t-vkey.tar.gz" "vkey:$work/other.vkey"
refuse "a pack naming another key" "$work/t-vkey.tar.gz" \
  "FAIL: ledger.vkey: expected the key given with --vkey \"$(cat "$work/vkey")\", found \"$(cat "$work/other.vkey")\"" "${key[@]}"

# Another team's entries under a scope of no known kind: a verifier must
# refuse a scope it cannot check, not skip its checks.
repack "$work/seq.tar.gz" "$work/t-kind.tar.gz" \
  'scope:{"kind":"teamx","team":"team-code","from_us":0,"to_us":9999999999999999,"from_seq":3,"to_seq":20}'
refuse "a scope of unknown kind" "$work/t-kind.tar.gz" \
  'FAIL: manifest.json: scope.kind: expected run, seq or team, found "teamx"' "${key[@]}"

# Team windows of format 4, cut short and re-signed: the team chain in the
# leaves and the team-head proof refuse them.
last=$(($(pack_field "$work/team.tar.gz" 'len(e)') - 1))
repack "$work/team.tar.gz" "$work/t-team-last.tar.gz" "drop:$last"
refuse "a team window without the team's last entry" "$work/t-team-last.tar.gz" \
  "$(pack_field "$work/team.tar.gz" '("FAIL: team-window.json: entry %d follows the team'"'"'s entry %d (team_prev), which the pack does not hold" % (
      w["after"]["seq"], e[-1]["seq"]) if "after" in w else
    "FAIL: team-window.json: head: the team'"'"'s last entry up to tree size %s is seq %d with leaf hash %s, the pack'"'"'s last is seq %d with leaf hash %s" % (
      cp[1], w["head"]["head"]["last_seq"], w["head"]["head"]["last_leaf_hash"], e[-2]["seq"], "LAST2"))' |
    sed "s/LAST2/$(hash_at "$work/team.tar.gz" $((last - 1)))/")" "${key[@]}"
repack "$work/team.tar.gz" "$work/t-team-nofile.tar.gz" remove:team-window.json
refuse "a team window without team-window.json" "$work/t-team-nofile.tar.gz" \
  "FAIL: team-window.json: missing: a team window whose checkpoint-time note signs a team-head map root carries its team chain proof" "${key[@]}"
repack "$work/late.tar.gz" "$work/t-late-before.tar.gz" window-drop:before
refuse "a team window without its before" "$work/t-late-before.tar.gz" \
  "$(pack_field "$work/late.tar.gz" '"FAIL: team-window.json: entry %d follows the team'"'"'s entry %d (team_prev), which the pack does not hold" % (
      e[0]["seq"], e[0]["team_prev"])')" "${key[@]}"
since_window="OK team team-code from_us $(us "$t0") to_us $(us "$t1") (seqs $(pack_field "$work/team-since.tar.gz" '"%d:%d" % (m["scope"]["from_seq"], m["scope"]["to_seq"])')): $(ok_tail "$work/team-since.tar.gz"), consistent with the --since checkpoint size $old_size root $old_root$(done_part "$work/team-since.tar.gz"); outcomes.json not recomputed"
accept "a team window --since a checkpoint kept with its version 3 note" "$work/team-since.tar.gz" "$since_window" \
  "${key[@]}" --since "$work/old-kept.note"
repack "$work/team-since.tar.gz" "$work/t-team-v2.tar.gz" "drop:$(($(pack_field "$work/team-since.tar.gz" 'len(e)') - 1))" \
  remove:team-window.json time-note-v2 format:3
refuse "a team window cut short, re-signed with a version 2 note, --since a version 4 note" "$work/t-team-v2.tar.gz" \
  "FAIL: checkpoint-time: a version 2 note, but the checkpoint given with --since has a version 4 note: a ledger that keys runs by team does so with every later checkpoint" \
  "${key[@]}" --since "$work/old-kept.note"

# Genuine packs, the wrong question.
refuse "a pack verified with another key" "$work/run.tar.gz" \
  "FAIL: manifest.sig: signed by $(cut -d+ -f1,2 "$work/vkey"), not by $(cut -d+ -f1,2 "$work/other.vkey") (the key given)" \
  --vkey "$work/other.vkey"
tar -xOzf "$work/since.tar.gz" evidence/checkpoint > "$work/since.note"
refuse "--since a checkpoint the pack does not prove from" "$work/since.tar.gz" \
  "FAIL: consistency.json: old_checkpoint: expected the --since checkpoint size $(pack_field "$work/since.tar.gz" 'cp[1]') root $(pack_field "$work/since.tar.gz" 'root'), found size $old_size root $old_root" \
  "${key[@]}" --since "$work/since.note"
refuse "--since on a pack without a consistency proof" "$work/run.tar.gz" \
  "FAIL: consistency.json: missing, and --since asks for a proof from size $old_size root $old_root" \
  "${key[@]}" --since "$work/old.note"

# Drawn changes (a byte, a dropped, repeated or swapped entry), the manifest
# re-signed: the three verifiers give one verdict on each.
for n in $(seq 1 "${GO_VERIFY_DRAWS:-20}"); do
  pack=$(printf '%s\n' run seq late since run5 | sed -n "$((n % 5 + 1))p")
  flags=("${key[@]}"); [ "$pack" = since ] && flags+=(--since "$work/old.note")
  what=$(repack "$work/$pack.tar.gz" "$work/t-draw.tar.gz" "mutate:$n")
  verdicts=""
  for v in "$lvg" "$build/cmd/ledgerctl verify" "/usr/bin/python3 $root/export/verify/python/verify_pack.py"; do
    rc=0; $v "$work/t-draw.tar.gz" "${flags[@]}" > "$work/out" 2>&1 || rc=$?  # word splitting intended
    verdicts+="$rc: $(head -1 "$work/out" | cut -c1-160)"$'\n'
  done
  if [ "$(cut -d: -f1 <<< "${verdicts%$'\n'}" | sort -u | wc -l)" = 1 ]; then
    echo "draw $n ($pack pack, $what): all exit ${verdicts%%:*}"
  else
    fail "draw $n ($pack pack, $what): verdicts differ:"$'\n'"$verdicts"
  fi
done

# Usage errors exit 2.
for args in "$work/run.tar.gz" "--vkey $work/nonexistent $work/run.tar.gz" "--vkey $work/old.note $work/run.tar.gz" \
            "--vkey $work/vkey --trust-pack-key $work/run.tar.gz" "--vkey $work/vkey"; do
  rc=0; "$lvg" $args > /dev/null 2>&1 || rc=$?  # word splitting intended
  [ "$rc" = 2 ] || fail "usage error exited $rc: $args"
done

[ "$failures" = 0 ] || { echo "$failures failures"; exit 1; }
echo "ledger-verify-go, ledgerctl verify and verify_pack.py agree on every pack"
