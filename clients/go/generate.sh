#!/bin/sh
# Generates the Go stubs of the ledger's protos into ledgerpb/ (or DIR), with
# protoc and Debian's protoc-gen-go and protoc-gen-go-grpc. The stubs are
# committed: a Go module is built from its source alone. The test
# (test.sh) regenerates them and requires the same bytes.
# Usage: clients/go/generate.sh [DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
proto="$here/../../proto"
out="${1:-$here/ledgerpb}"
mkdir -p "$out"
pkg=evidence-ledger/clients/go/ledgerpb
maps=""
for f in receipt ledger_service query export; do
  maps="$maps,M$f.proto=$pkg"
done
maps=${maps#,}
protoc -I "$proto" \
  --go_out="$out" --go_opt=paths=source_relative,"$maps" \
  --go-grpc_out="$out" --go-grpc_opt=paths=source_relative,"$maps" \
  "$proto/receipt.proto" "$proto/ledger_service.proto" "$proto/query.proto" "$proto/export.proto"
