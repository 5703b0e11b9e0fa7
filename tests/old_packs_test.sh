#!/usr/bin/env bash
# Packs written by earlier versions of the ledger, kept as they were
# exported (tests/fixtures/pack-*.tar.gz), against the four verifiers:
# every check holds, and report.html, whose words have changed since,
# is refused by the verifiers that rebuild it unless --report-by-digest
# asks for its digest alone (CONTRACT section 7), which they then say.
# Usage: old_packs_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
lvg="$work/ledger-verify-go"
(cd "$root/export/verify/go" && GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS= \
  GOCACHE="$build/export/verify/go/gocache" go build -o "$lvg" .)
fail() { echo "FAIL: $*"; exit 1; }

# A run pack of format 1, exported on 2026-11-29.
pack="$root/tests/fixtures/pack-format1-2026-11-29.tar.gz"
tar -xzf "$pack" -C "$work" evidence/ledger.vkey
vkey="$work/evidence/ledger.vkey"
for verifier in "$build/cmd/ledgerctl verify" "$build/cmd/ledger-verify"; do
  out=$($verifier "$pack" --vkey "$vkey" --no-progress) && fail "$verifier accepted a page it did not rebuild: $out"
  case $out in
    "FAILED: report.html: differs from the report rebuilt"*"(a pack of format 1 may hold the page of the version that wrote it: --report-by-digest checks the page by its digest only)")
      ;;
    *) fail "$verifier: $out" ;;
  esac
  out=$($verifier "$pack" --vkey "$vkey" --no-progress --report-by-digest) || fail "$verifier --report-by-digest: $out"
  grep -q '^OK: 12 entries of {"kind":"run","run_id":"big-run","team":"team-a"}' <<<"$out" || fail "$verifier: $out"
  grep -qx 'report.html: checked by its digest only (--report-by-digest): its words were not rebuilt from the entries.' \
    <<<"$out" || fail "$verifier: no line saying the page was not rebuilt: $out"
  json=$($verifier "$pack" --vkey "$vkey" --no-progress --report-by-digest --json)
  grep -q '"report_rebuilt":false' <<<"$json" || fail "$verifier --json: $json"
done
out=$(/usr/bin/python3 "$root/export/verify/python/verify_pack.py" "$pack" --vkey "$vkey" --no-progress) ||
  fail "verify_pack.py: $out"
grep -q '^OK: 12 entries' <<<"$out" || fail "verify_pack.py: $out"
out=$("$lvg" --vkey "$vkey" "$pack") || fail "ledger-verify-go: $out"
grep -q '^OK' <<<"$out" || fail "ledger-verify-go: $out"
echo "old packs: a format 1 pack of 2026-11-29 verifies with all four verifiers (its page by its digest, when asked)"
