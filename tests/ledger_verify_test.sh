#!/usr/bin/env bash
# ledger-verify links the verifier's libraries only: no RocksDB, no gRPC
# among the libraries it needs (readelf -d) or loads (ldd), and no gRPC,
# RocksDB or service symbol in it (nm). The same checks find them in
# ledgerctl, so they can fail. Its verification flags are ledgerctl
# verify's. Usage: ledger_verify_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
bin=$build/cmd/ledger-verify ctl=$build/cmd/ledgerctl
forbidden_libs='librocksdb|libgrpc|libgpr|libaddress_sorting|libupb'
forbidden_symbols='grpc|rocksdb|LedgerService|QueryService|ExportService'
# Each finding of server code in a binary, one a line.
server_code() {
  { readelf -d "$1" | grep NEEDED | grep -E "$forbidden_libs" || true
    ldd "$1" | grep -E "$forbidden_libs" || true
    nm -C "$1" | grep -oiE "$forbidden_symbols" | sort -u || true; }
}
found=$(server_code "$bin")
[ -z "$found" ] || { echo "FAIL: ledger-verify links server code:"; echo "$found"; exit 1; }
in_ctl=$(server_code "$ctl")
echo "$in_ctl" | grep -q 'libgrpc' || { echo "FAIL: the check does not find libgrpc in ledgerctl"; exit 1; }
echo "$in_ctl" | grep -qx 'grpc' || { echo "FAIL: the check does not find gRPC symbols in ledgerctl"; exit 1; }
echo "$in_ctl" | grep -qix 'rocksdb' || { echo "FAIL: the check does not find RocksDB's symbols in ledgerctl"; exit 1; }
# The flags of verification, as ledger-verify's help and ledgerctl's help of
# verify list them.
flags_of() { "$@" | grep -oE '^  --(vkey|vkey-string|trust-pack-key|since|expect-scope|not-older-than|json)( |$)' | sed 's/ $//' | sort; }
want=$(printf '  --%s\n' expect-scope json not-older-than since trust-pack-key vkey vkey-string | sort)
[ "$(flags_of "$bin" --help)" = "$want" ] || { echo "FAIL: ledger-verify's flags:"; "$bin" --help; exit 1; }
[ "$(flags_of "$ctl" help verify)" = "$want" ] || { echo "FAIL: ledgerctl's verify flags:"; "$ctl" help verify; exit 1; }
out=$("$bin" 2>&1) && { echo "FAIL: no PACK was accepted"; exit 1; } || code=$?
[ "$code" = 2 ] && [ "$out" = "ledger-verify: verify: give one PACK" ] || { echo "FAIL: no PACK: exit $code: $out"; exit 1; }
# Without a usable temporary directory (the scratch image has no /tmp) it
# says so, and does not abort: the pack was not examined (exit 3).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
key=$("$ctl" keygen --origin links.test/log --out "$work/key")
: > "$work/pack.tar.gz"
code=0; out=$(TMPDIR=/nonexistent "$bin" "$work/pack.tar.gz" --vkey-string "$key" 2>&1) || code=$?
[ "$code" = 3 ] && [ "$out" = "ledger-verify: verify: cannot create a temporary directory (set TMPDIR to a writable one)" ] ||
  { echo "FAIL: no temporary directory: exit $code: $out"; exit 1; }
echo "ledger-verify: $(readelf -d "$bin" | grep -c NEEDED) libraries needed, none of RocksDB or gRPC; no server symbol; the flags of ledgerctl verify"
