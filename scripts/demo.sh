#!/usr/bin/env bash
# The demo: a ledger on an embedded data directory, a realistic workload from
# three teams (a crashed worker whose step becomes unknown, a late and an
# orphan completion among them), step outcomes, the signed checkpoint, and
# its proofs checked by Go's golang.org/x/mod/sumdb (note.Open,
# tlog.CheckRecord, tlog.CheckTree), a verifier the ledger's authors did not
# write; two witnesses cosign the checkpoints, and an auditor's policy that
# requires both accepts the cosigned checkpoint. Then the ledger stays up for
# a person to browse (its dashboard, the unknown step, the report) until
# Ctrl-C; --no-keep stops it at the end instead.
# Usage: demo.sh BUILD_DIR [--no-keep]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
keep=1
[ "${2:-}" = "--no-keep" ] && keep=0
root=$(cd "$(dirname "$0")/.." && pwd)
data="$build/demo-data"
work="$build/demo-out"
rm -rf "$data" "$work"
mkdir -p "$work"
pid=""
witnesses=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; for w in $witnesses; do kill "$w" 2>/dev/null; done; true' EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "two witnesses (an auditor's and a regulator's) for the ledger's key"
mkdir -p "$data"
"$build/cmd/ledgerctl" keygen --origin demo.evidence-ledger.local/log --out "$data/signing.key" > "$work/ledger.vkey"
printf 'log %s\n' "$(cat "$work/ledger.vkey")" > "$work/witnesses.policy"
printf 'log %s\n' "$(cat "$work/ledger.vkey")" > "$work/auditor.policy"
for w in auditor regulator; do
  "$build/cmd/ledger-witness" vkey --data "$work/witness-$w" --name "witness-$w.demo.local" > "$work/witness-$w.vkey"
  "$build/cmd/ledger-witness" --data "$work/witness-$w" --listen 127.0.0.1:0 --log "$work/ledger.vkey" \
    > "$work/witness-$w.log" 2>&1 &
  witnesses="$witnesses $!"
  for _ in $(seq 100); do grep -q '^listening on ' "$work/witness-$w.log" && break; sleep 0.05; done
  url="http://$(sed -n 's/^listening on //p' "$work/witness-$w.log")"
  printf 'witness %s %s %s\n' "$w" "$(cat "$work/witness-$w.vkey")" "$url" >> "$work/witnesses.policy"
  printf 'witness %s %s\n' "$w" "$(cat "$work/witness-$w.vkey")" >> "$work/auditor.policy"
  echo "witness $w: $(cat "$work/witness-$w.vkey") at $url"
done
printf 'group both all auditor regulator\nquorum both\n' | tee -a "$work/witnesses.policy" >> "$work/auditor.policy"

# The usual ports when the ledger stays up and they are free, so that its
# address is the one the docs give; any free port otherwise.
port() {
  if [ "$keep" = 1 ] && ! (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; then echo "127.0.0.1:$1"; else echo 127.0.0.1:0; fi
}
step "starting ledgerd on $data"
grpc_at=$(port 7420)
http_at=$(port 7421)
"$build/cmd/ledgerd" --data "$data" --listen "$grpc_at" --http-listen "$http_at" --origin demo.evidence-ledger.local/log \
  --checkpoint-interval-ms 100 --unknown-grace-ms 1000 --sweep-interval-ms 200 \
  --witness-policy "$work/witnesses.policy" --witness-quorum-required > "$work/ledgerd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q '^listening on ' "$work/ledgerd.log" && break; sleep 0.05; done
addr=$(sed -n 's/^listening on //p' "$work/ledgerd.log")
[ -n "$addr" ] || { cat "$work/ledgerd.log"; exit 1; }
for _ in $(seq 100); do grep -q '^http on ' "$work/ledgerd.log" && break; sleep 0.05; done
http=$(sed -n 's/^http on //p' "$work/ledgerd.log")
echo "listening on $addr (gRPC), $http (metrics, health, dashboard)"
ctl() { "$build/cmd/ledgerctl" --server "$addr" "$@"; }

step "a workload: 3 teams, 36 runs, container steps with model and tool calls (2 s timeouts)"
/usr/bin/python3 "$root/scripts/demo_workload.py" --runs 36 --timeout-ms 2000 \
  --late-file "$work/late.jsonl" > "$work/receipts.jsonl"
total=$(wc -l < "$work/receipts.jsonl")
half=$((total / 2))
printf '%s receipts: %s\n' "$total" "$(/usr/bin/python3 -c '
import collections, json, sys
c = collections.Counter((r["kind"], r.get("decision", "")) for r in map(json.loads, open(sys.argv[1])))
print(", ".join("%s%s %d" % (k, " " + d if d else "", n) for (k, d), n in sorted(c.items())))' "$work/receipts.jsonl")"
head -n "$half" "$work/receipts.jsonl" | ctl append > "$work/append1.jsonl"
ctl checkpoint --at-least "$half" > "$work/old.note"
tail -n +"$((half + 1))" "$work/receipts.jsonl" | ctl append > "$work/append2.jsonl"
echo "appended $(grep -c '"seq"' "$work/append1.jsonl" "$work/append2.jsonl" | awk -F: '{s+=$2} END {print s}') receipts"

step "a gateway retries a batch: the ledger answers with the original seqs"
head -n 3 "$work/receipts.jsonl" | ctl append

step "an invalid receipt is refused with the field and the rule"
echo '{"receipt_id":"bad-1","kind":"model_call","team":"Team A","run_id":"r","occurred_at_us":1,"route":"x","decision":"allow"}' \
  | ctl append || true

step "waiting for the crashed worker's step to pass its deadline (2 s + 1 s grace)"
for _ in $(seq 100); do
  ctl steps --team team-support --state unknown --json | grep -q '"state":"unknown"' && break
  sleep 0.1
done
echo "the ledger declared it unknown; now the late worker reports:"
ctl append "$work/late.jsonl" | tee "$work/late.out"
size=$(($(sed -n 's/.*"seq":\([0-9]*\).*/\1/p' "$work/late.out" | tail -1) + 1))

step "the steps of team-support that did not succeed (newest first)"
ctl steps --team team-support --state unknown,failed,denied,pending
step "steps with anomalies, all teams"
for t in team-code team-support team-data; do
  ctl steps --team "$t" --anomaly late_completion,orphan_completion,duplicate_completion,conflicting_completion,mismatched_completion,completion_after_deny --json
done | /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    s = json.loads(line)
    print("  %-13s %-9s %-7s %-9s %s" % (s["team"], s["run_id"], s["step_id"], s["state"], ",".join(s["anomalies"])))'
step "the run with the unknown step"
ctl run --team team-support --run run-0007

step "the signed checkpoint, cosigned by both witnesses"
ctl checkpoint --at-least "$size" --cosignatures 2 --timeout-ms 30000 | tee "$work/new.note"
ctl vkey | tee "$work/vkey"

step "an auditor's policy (c2sp.org/tlog-policy) requires both witnesses"
cat "$work/auditor.policy"
"$build/cmd/ledgerctl" policy-check --policy "$work/auditor.policy" "$work/new.note"

step "an inclusion proof for a denied model call, and a consistency proof"
denied=$(/usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["kind"] == "model_call" and r["decision"] == "deny":
        print(r["team"], r["receipt_id"])
        break' "$work/receipts.jsonl")
echo "receipt ${denied#* } of ${denied%% *}:"
ctl prove --team "${denied%% *}" --receipt-id "${denied#* }"
old=$(sed -n 2p "$work/old.note")
ctl consistency --from "$old" --to "$(sed -n 2p "$work/new.note")" | tee "$work/consistency.json"

step "offline verification with Go's x/mod sumdb (not our code)"
# Every entry of the log, in a pack: its checkpoint opened with note.Open and
# each entry's inclusion proof checked with tlog.CheckRecord; then the two
# checkpoints above, consistent by tlog.CheckTree.
ctl export --seq "0:$(sed -n 2p "$work/new.note")" --out "$work/all.tar.gz" > /dev/null
mkdir -p "$work/all" && tar -xzf "$work/all.tar.gz" -C "$work/all"
export GOPATH=/usr/share/gocode GO111MODULE=off GOCACHE="$build/gocache" GOPROXY=off
go run "$root/tests/interop/verify.go" -pack "$work/all/evidence" "$(cat "$work/vkey")"
go run "$root/tests/interop/verify.go" -consistency "$work"

step "the evidence pack of the run with the unknown step, verified offline under the auditor's policy"
ctl export --run team-support/run-0007 --out "$work/run-0007.tar.gz"
ctl vkey > "$work/ledger.vkey"
"$build/cmd/ledgerctl" verify "$work/run-0007.tar.gz" --vkey "$work/ledger.vkey" --policy "$work/auditor.policy"
mkdir -p "$work/pack" && tar -xzf "$work/run-0007.tar.gz" -C "$work/pack"
echo "report for people: $work/pack/evidence/report.html"

step "what an operator's Prometheus scrapes (http://$http/metrics), in part"
curl -s "http://$http/metrics" | grep -E '^ledger_(appends_total|steps|unknown_steps_declared_total|tree_size|checkpoint_tree_size|exports_total)' | head -n 24

stop() {
  step "stopping ledgerd (SIGTERM: finishes appends, signs a final checkpoint)"
  kill -TERM "$pid" 2> /dev/null || true
  wait "$pid" || true
  pid=""
  tail -n 1 "$work/ledgerd.log"
  for w in $witnesses; do kill -TERM "$w" 2> /dev/null || true; wait "$w" || true; done
  witnesses=""
  echo
  echo "demo output in $work; data directory $data"
  echo "to start it again: $build/cmd/ledgerd --data $data   (the origin is read from its key)"
}

step "for people"
echo "  the dashboard:                  http://$http/"
echo "  the steps nobody saw finish:    http://$http/unknown"
echo "  the run with the unknown step:  http://$http/teams/team-support/runs/run-0007"
echo "  its evidence pack's report:     $work/pack/evidence/report.html"
if [ "$keep" = 0 ]; then
  stop
  exit 0
fi
trap 'trap - INT TERM; echo; stop; exit 0' INT TERM
echo
echo "the ledger stays up (gRPC $addr): append with"
echo "  $build/cmd/ledgerctl --server $addr append FILE.jsonl"
echo "Ctrl-C stops it."
wait "$pid" || true
pid=""
echo "ledgerd stopped: $(tail -n 1 "$work/ledgerd.log")"
echo "to start it again: $build/cmd/ledgerd --data $data   (the origin is read from its key)"
