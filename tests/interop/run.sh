#!/usr/bin/env bash
# Interop: a real ledgerd on a loopback port, receipts appended with
# ledgerctl, and the results checked by Go's x/mod sumdb note and tlog
# (Debian's golang-golang-x-mod-dev, GOPATH mode, no network).
# Usage: run.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/../ledgerd.sh"
here=$(cd "$(dirname "$0")" && pwd)

start_ledgerd --origin interop.test/log --checkpoint-interval-ms 20

receipts() {  # receipts FIRST COUNT
  for i in $(seq "$1" $(($1 + $2 - 1))); do
    printf '{"receipt_id":"go-%d","kind":"tool_call","team":"team-%d","run_id":"run-%d","occurred_at_us":%d,"tool":"git","decision":"allow","attributes":{"note":"caf\\u00e9 \\ud83d\\ude00 \\"%d\\""}}\n' \
      "$i" $((i % 2)) $((i % 3)) $((1767225600000000 + i)) "$i"
  done
}

receipts 0 13 | ctl append > "$work/append1.out"
ctl checkpoint --at-least 13 > "$work/old.note"
receipts 13 45 | ctl append > "$work/append2.out"
ctl checkpoint --at-least 58 > "$work/new.note"
ctl vkey > "$work/vkey"
old=$(sed -n 2p "$work/old.note")
new=$(sed -n 2p "$work/new.note")
ctl entries --from 0 --to "$new" > "$work/entries.jsonl"
for s in $(seq 0 $((new - 1))); do ctl prove --seq "$s" --size "$new"; done > "$work/proofs.jsonl"
ctl consistency --from "$old" --to "$new" > "$work/consistency.json"

export GOPATH=/usr/share/gocode GO111MODULE=off GOCACHE="$work/gocache" GOPROXY=off
go run "$here/verify.go" "$work"

# A tampered leaf must be refused by Go's checks too.
sed -i '5s/"tool":"git"/"tool":"gat"/' "$work/entries.jsonl"
if go run "$here/verify.go" "$work" 2> "$work/tampered.err"; then
  echo "FAIL: a tampered entry verified"; exit 1
fi
grep -q 'entry 4: leaf hash' "$work/tampered.err" || { cat "$work/tampered.err"; exit 1; }
echo "go interop: a tampered entry is refused: $(cat "$work/tampered.err")"
