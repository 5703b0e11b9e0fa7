#!/usr/bin/env bash
# export/verify/python/verify_pack.py against the operator's attacks on the signed time
# and on outcomes.json, with packs a real ledgerd exported and re-signed
# with its key, and the escaping of what a pack holds when printed
# (tests/pack_strict_python_test.py). Usage: pack_strict_python_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
start_ledgerd --origin strict-python.test/log --checkpoint-interval-ms 20 --unknown-grace-ms 200 \
  --sweep-interval-ms 50
ctl vkey > "$work/vkey"
append_demo_runs  # team-support/run-0007's crashed step declared unknown
ctl export --run team-support/run-0007 --out "$work/unknown.tar.gz" > /dev/null
ctl export --run team-support/run-0007 --pack-format 5 --out "$work/unknown5.tar.gz" > /dev/null
# Format 5: the forgeries rewrite this pack as formats 1 and 3 (proofs.jsonl).
ctl export --run team-code/run-0000 --pack-format 5 --out "$work/run.tar.gz" > /dev/null
mkdir "$work/cases"
/usr/bin/python3 "$root/tests/pack_strict_python_test.py" "$root/export/verify/python/verify_pack.py" "$work/vkey" \
  "$work/data/signing.key" "$work/unknown.tar.gz" "$work/run.tar.gz" "$work/cases" "$work/unknown5.tar.gz"
