#!/bin/sh
# go vet and go test of the Go client against the real ledgerd of BUILD_DIR,
# with Debian's Go packages only (GOPATH mode, no module download): the
# module's folder is linked into a GOPATH under BUILD_DIR, beside
# /usr/share/gocode. First checks that the committed stubs are what
# generate.sh makes of proto/ today.
# Usage: clients/go/test.sh BUILD_DIR [go test flags...]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
shift
work="$build/clients/go"
mkdir -p "$work/gopath/src/evidence-ledger/clients" "$work/gocache"
link="$work/gopath/src/evidence-ledger/clients/go"
# Replaced only when wrong: the conformance suite's build of the runner may use
# it at the same time.
[ "$(readlink "$link" 2>/dev/null)" = "$here" ] || ln -sfn "$here" "$link"

fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
"$here/generate.sh" "$fresh"
if ! diff -r "$here/ledgerpb" "$fresh" > /dev/null; then
  diff -r "$here/ledgerpb" "$fresh" | head -20
  echo "clients/go/ledgerpb: not what generate.sh makes of proto/: run clients/go/generate.sh and commit" >&2
  exit 1
fi

export GOPATH="$work/gopath:/usr/share/gocode" GO111MODULE=off GOPROXY=off GOFLAGS= \
  GOCACHE="$work/gocache" LEDGER_BUILD="$build"
cd "$work/gopath/src/evidence-ledger/clients/go"
go vet ./...
# -count=1: the results depend on ledgerd, which go test cannot see change.
go test -count=1 "$@" ./...
