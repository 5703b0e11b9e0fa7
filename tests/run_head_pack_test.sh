#!/usr/bin/env bash
# Format 3 and 5 packs built from CONTRACT.md's text with a test key, genuine
# and forged, against export/verify/python/verify_pack.py and ledger-verify-go
# (tests/run_head_pack_test.py). Usage: run_head_pack_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lvg="$work/ledger-verify-go"
(cd "$root/export/verify/go" && GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS= \
  GOCACHE="$build/export/verify/go/gocache" go build -o "$lvg" .)
/usr/bin/python3 "$root/tests/run_head_pack_test.py" "$root/export/verify/python/verify_pack.py" "$lvg" "$work"
