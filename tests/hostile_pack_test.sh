#!/usr/bin/env bash
# Hostile packs (tests/hostile_pack_test.py) built from a pack a real
# ledgerd exported. Usage: hostile_pack_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
start_ledgerd --origin hostile.test/log --checkpoint-interval-ms 20
/usr/bin/python3 "$root/scripts/demo_workload.py" --runs 3 > "$work/receipts.jsonl"
ctl append "$work/receipts.jsonl" > /dev/null
ctl checkpoint --at-least "$(wc -l < "$work/receipts.jsonl")" > /dev/null
ctl vkey > "$work/vkey"
ctl export --run team-code/run-0000 --out "$work/run.tar.gz" > /dev/null
"$build/cmd/ledgerctl" verify "$work/run.tar.gz" --vkey "$work/vkey" | grep -q '^OK: '
mkdir "$work/cases"
/usr/bin/python3 "$root/tests/hostile_pack_test.py" "$build" "$work/run.tar.gz" "$work/vkey" "$work/cases"
