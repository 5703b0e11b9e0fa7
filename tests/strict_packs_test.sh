#!/usr/bin/env bash
# "Reading a pack strictly" (CONTRACT.md section 7) through a real ledgerd:
# genuine packs it exports, and one pack per rule broken and re-signed with
# the ledger's key (tests/strict_packs.py build), against the four
# verifiers: ledgerctl verify, ledger-verify, export/verify/python/verify_pack.py and
# ledger-verify-go. Prints the table case x verifier (ok, wrong, skip) and
# fails when a verdict is not the one the contract gives.
# Usage: strict_packs_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
lvg="$work/ledger-verify-go"
mkdir -p "$build/export/verify/go"
# A Go verifier that does not build gets every verdict wrong, and the other
# columns are still shown.
if ! (cd "$root/export/verify/go" && GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS= \
  GOCACHE="$build/export/verify/go/gocache" go build -o "$lvg" .); then
  printf '#!/bin/sh\necho "ledger-verify-go: did not build"\nexit 3\n' > "$lvg"
  chmod +x "$lvg"
fi

start_ledgerd --origin strict.test/log --checkpoint-interval-ms 20 --unknown-grace-ms 200 --sweep-interval-ms 50
ctl vkey > "$work/vkey"
t0=$(date -u +%Y-%m-%dT%H:%M:%SZ)
append_demo_runs
ctl checkpoint > "$work/old.note"  # the auditor's earlier checkpoint
/usr/bin/python3 "$root/scripts/demo_workload.py" --runs 3 --seed 9 --timeout-ms 300 |
  sed 's/"receipt_id":"/"receipt_id":"more-/' | ctl append > /dev/null
ctl checkpoint --at-least "$(($(sed -n 2p "$work/old.note") + 1))" > /dev/null
t1=$(date -u -d '+2 sec' +%Y-%m-%dT%H:%M:%SZ)
# The corpus of format 5's rules from packs of format 5; format 6's from a
# run pack of format 6.
ctl export --run team-code/run-0000 --pack-format 5 --out "$work/run.tar.gz" > /dev/null
ctl export --run team-code/run-0000 --pack-format 6 --out "$work/run6.tar.gz" > /dev/null
ctl export --run team-code/run-0000 --pack-format 5 --since "$work/old.note" --out "$work/run-since.tar.gz" > /dev/null
ctl export --team team-code --from "$t0" --to "$t1" --pack-format 5 --out "$work/team.tar.gz" > /dev/null
/usr/bin/python3 "$root/tests/strict_packs.py" build --run "$work/run.tar.gz" --run6 "$work/run6.tar.gz" \
  --team "$work/team.tar.gz" \
  --since-run "$work/run-since.tar.gz" --old-note "$work/old.note" --key "$work/data/signing.key" \
  --vkey "$work/vkey" --out "$work/corpus"
/usr/bin/python3 "$root/tests/strict_packs.py" check --dir "$work/corpus" --vkey "$work/vkey" \
  --verifier "ledgerctl=$build/cmd/ledgerctl verify" \
  --verifier "ledger-verify=$build/cmd/ledger-verify" \
  --verifier "verify_pack.py=/usr/bin/python3 $root/export/verify/python/verify_pack.py" \
  --verifier "ledger-verify-go=$lvg"
