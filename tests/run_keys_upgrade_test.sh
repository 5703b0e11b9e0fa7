#!/usr/bin/env bash
# What a ledger that keyed runs by run keys v1 left (tests/fixtures/
# store-runkeys-v1.tar.gz, made by make_store_runkeys_v1.sh with such a
# ledger): its format 4 packs still verify in every verifier; the ledger of
# today opens its store, signs the latest checkpoint again with a version 4
# note (the same tree and team-head root, the runs root of v2 keys), proves
# runs under v2 keys, exports format 5 packs that verify against the
# auditor's kept version 3 note of that very checkpoint (--since and
# --not-older-than), and audit recomputes every signed root.
# Usage: run_keys_upgrade_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
origin=fixture.example/runkeys
tar -C "$work" -xzf "$root/tests/fixtures/store-runkeys-v1.tar.gz"
lvg="$work/ledger-verify-go"
(cd "$root/export/verify/go" && GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS= \
  GOCACHE="$build/export/verify/go/gocache" go build -o "$lvg" .)
verify_all() {  # pack [flags...]: every verifier accepts it
  local pack=$1; shift
  "$build/cmd/ledgerctl" verify "$pack" --vkey "$work/vkey" "$@" > "$work/v.out" 2>&1 ||
    { cat "$work/v.out"; fail "ledgerctl verify $pack $*"; }
  /usr/bin/python3 "$root/export/verify/python/verify_pack.py" "$pack" --vkey "$work/vkey" "$@" > "$work/v.out" 2>&1 ||
    { cat "$work/v.out"; fail "verify_pack.py $pack $*"; }
  "$lvg" --vkey "$work/vkey" "$@" "$pack" > "$work/v.out" 2>&1 || { cat "$work/v.out"; fail "ledger-verify-go $pack $*"; }
}
format() { tar -xzOf "$1" --wildcards '*/manifest.json' | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["format"])'; }

# The packs of the v1 ledger: format 4, still verified.
for p in run window; do
  [ "$(format "$work/$p.tar.gz")" = 4 ] || fail "the fixture's $p pack is not format 4"
  verify_all "$work/$p.tar.gz"
done
grep -q '^evidence-ledger/checkpoint-time/v3$' "$work/kept.checkpoint" || fail "the kept note is not version 3"

start_ledgerd --origin "$origin" --signing-key "$work/data/signing.key" --unknown-grace-ms 100
ctl checkpoint --time-note > "$work/now.note"
/usr/bin/python3 - "$work/kept.checkpoint" "$work/now.note" <<'PY' || fail "the latest checkpoint's note after the upgrade"
import sys
kept = open(sys.argv[1]).read()
kept = kept[kept.index("evidence-ledger/checkpoint-time/"):].split("\n\n")[0].split("\n")
now = open(sys.argv[2]).read().split("\n\n")[0].split("\n")
assert kept[0].endswith("/v3") and now[0].endswith("/v4"), (kept[0], now[0])
assert kept[1:4] == now[1:4], "not the same tree: %s %s" % (kept[1:4], now[1:4])
assert kept[5] == now[5] and now[5].startswith("teams "), "the team-head root changed: %s %s" % (kept[5], now[5])
assert kept[4] != now[4], "the runs root is that of v1 keys"
PY

# Runs proven under v2 keys against the version 4 note.
ctl prove-run --team team-support --run run-0007 > "$work/proof.json" || fail "prove-run"
/usr/bin/python3 - "$root/export/verify/python" "$work/proof.json" "$work/now.note" <<'PY' || fail "the v2 proof does not verify"
import base64, json, sys
sys.path.insert(0, sys.argv[1])
import runmap
body = open(sys.argv[3]).read().split("\n\n")[0].split("\n")
runmap.verify_inclusion_json(base64.b64decode(body[4][5:]), runmap.run_key(b"team-support", b"run-0007", 2),
                             json.load(open(sys.argv[2])))
PY

# Packs of the same checkpoint, format 6 (today's) and 5 (asked for),
# against the kept version 3 note (the exporter is given the checkpoint
# alone).
sed '/^evidence-ledger\/checkpoint-time\//,$d' "$work/kept.checkpoint" > "$work/kept.cp"
ctl export --run team-support/run-0007 --since "$work/kept.cp" --out "$work/run6.tar.gz" > /dev/null
[ "$(format "$work/run6.tar.gz")" = 7 ] || fail "a pack of today is not format 7"
verify_all "$work/run6.tar.gz" --since "$work/kept.checkpoint"
ctl export --run team-support/run-0007 --since "$work/kept.cp" --pack-format 5 --out "$work/run5.tar.gz" > /dev/null
[ "$(format "$work/run5.tar.gz")" = 5 ] || fail "a pack asked for as format 5 is not format 5"
verify_all "$work/run5.tar.gz" --since "$work/kept.checkpoint"
verify_all "$work/run5.tar.gz" --not-older-than "$work/kept.checkpoint"
ctl export --team team-support --from 2000-01-01T00:00:00Z --to 2100-01-01T00:00:00Z --out "$work/window5.tar.gz" \
  > /dev/null
verify_all "$work/window5.tar.gz" --not-older-than "$work/kept.checkpoint"
kill -TERM "$pid"; wait "$pid"; pid=""

"$build/cmd/ledgerctl" audit --data "$work/data" --origin "$origin" > "$work/audit" 2>&1 ||
  { cat "$work/audit"; fail "audit of the upgraded store"; }
grep -q '^OK: ' "$work/audit" || { cat "$work/audit"; fail "audit summary"; }
echo "OK: format 4 packs of run keys v1 verify; the upgraded ledger signs version 4, proves under v2 keys, and its format 6 and 5 packs verify against the kept version 3 note"
