#!/usr/bin/env bash
# The log as C2SP tlog-tiles, checked by Go's sumdb tlog: a real ledgerd
# (real HTTP, real RocksDB) holding 70,000 entries, whose tree has partial
# tiles at levels 0 (273.p/112), 1 (001.p/17) and 2 (000.p/1), and an older
# checkpoint of 33,333 entries (partial tiles 130.p/53 and 000.p/130).
# tests/tlog_tiles/tiles.go proves entries and consistency from the tiles
# alone and checks the entry bundles against them.
# Usage: tlog_tiles_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
here=$(cd "$(dirname "$0")" && pwd)
old=33333
entries=70000

start_ledgerd --origin tiles.test/log --checkpoint-interval-ms 50 --projections=false
for _ in $(seq 100); do grep -q '^http on ' "$work/ledgerd.out" && break; sleep 0.05; done
http=$(sed -n 's/^http on //p' "$work/ledgerd.out")
/usr/bin/python3 - "$entries" "$work" <<'PY'
import json, os, sys
entries, work = int(sys.argv[1]), sys.argv[2]
with open(os.path.join(work, "old.jsonl"), "w") as old, open(os.path.join(work, "new.jsonl"), "w") as new:
    for i in range(entries):
        # Leaves of varied lengths, one of them above 256 bytes.
        line = json.dumps({"receipt_id": "r-%d" % i, "kind": "tool_call", "team": "team-%d" % (i % 3),
                           "run_id": "run-%d" % (i // 500), "occurred_at_us": 1767225600000000 + i, "tool": "git",
                           "decision": "allow", "attributes": {"note": "x" * (i % 50 if i != 7 else 400)}})
        print(line, file=old if i < 33333 else new)
PY
ctl append "$work/old.jsonl" > /dev/null
ctl checkpoint --at-least "$old" > "$work/old.note"
[ "$(sed -n 2p "$work/old.note")" = "$old" ] || { echo "FAIL: the old checkpoint is not of $old"; exit 1; }
ctl append "$work/new.jsonl" > /dev/null
ctl checkpoint --at-least "$entries" > /dev/null
ctl vkey > "$work/vkey"

export GOPATH=/usr/share/gocode GO111MODULE=off GOCACHE="$work/gocache" GOPROXY=off
go run "$here/tlog_tiles/tiles.go" "http://$http" "$work/vkey" "$work/old.note" \
  0 1 7 255 256 33332 33333 65535 65536 69887 69888 69999
