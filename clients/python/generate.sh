#!/bin/sh
# Generates the gRPC stubs the client imports, from the ledger's protos,
# with protoc and Debian's grpc_python_plugin, into
# evidence_ledger/_generated (or DIR).
# Usage: clients/python/generate.sh [DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
proto="$here/../../proto"
out="${1:-$here/evidence_ledger/_generated}"
mkdir -p "$out"
protoc -I "$proto" --python_out "$out" --grpc_python_out "$out" \
  --plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin \
  "$proto/receipt.proto" "$proto/ledger_service.proto" "$proto/query.proto" "$proto/export.proto"
