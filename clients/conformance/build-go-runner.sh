#!/bin/sh
# Builds the Go client's conformance runner (clients/go/cmd/conformance) into
# BUILD_DIR/clients/go/conformance, with Debian's Go packages only, in the
# GOPATH that clients/go/test.sh uses. For suite.py's --prepare.
# Usage: clients/conformance/build-go-runner.sh BUILD_DIR
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
work="$build/clients/go"
mkdir -p "$work/gopath/src/evidence-ledger/clients" "$work/gocache"
# Replaced only when wrong: go_client's test.sh may be reading it at once.
link="$work/gopath/src/evidence-ledger/clients/go"
[ "$(readlink "$link" 2>/dev/null)" = "$root/clients/go" ] || ln -sfn "$root/clients/go" "$link"
cd "$work/gopath/src/evidence-ledger/clients/go"
GOPATH="$work/gopath:/usr/share/gocode" GO111MODULE=off GOPROXY=off GOFLAGS= GOCACHE="$work/gocache" \
  go build -o "$work/conformance" evidence-ledger/clients/go/cmd/conformance
