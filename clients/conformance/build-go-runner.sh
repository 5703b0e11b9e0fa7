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
ln -sfn "$root/clients/go" "$work/gopath/src/evidence-ledger/clients/go"
cd "$work/gopath/src/evidence-ledger/clients/go"
GOPATH="$work/gopath:/usr/share/gocode" GO111MODULE=off GOPROXY=off GOFLAGS= GOCACHE="$work/gocache" \
  go build -o "$work/conformance" evidence-ledger/clients/go/cmd/conformance
