#!/usr/bin/env bash
# The four verifiers (ledger-verify, ledgerctl verify, verify_pack.py,
# ledger-verify-go) agree on what their exit codes mean and say which key
# signed a pack (issue 38):
#   - a pack that cannot be read (missing, a directory) exits 3 with
#     "cannot read the pack P: <why>" on stderr and nothing on stdout: apart
#     from a refused pack (1) and bad usage (2);
#   - a pack verified with another key than the one that signed it, and a
#     pack whose ledger.vkey was swapped for the key given, fail with
#     "manifest.sig: signed by NAME+ID, not by NAME+ID (the key given)";
#   - a tampered pack still exits 1.
# Whole messages, against packs of a real ledgerd.
# Usage: verifier_messages_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tests/ledgerd.sh
source "$root/tests/ledgerd.sh"

lvg="$build/export/verify/go/ledger-verify-go"
mkdir -p "$build/export/verify/go"
(cd "$root/export/verify/go" && GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS= \
  GOCACHE="$build/export/verify/go/gocache" go build -o "$lvg" .)

start_ledgerd --origin messages.test/log
cat > "$work/receipts.jsonl" <<'JSON'
{"receipt_id":"r-1","kind":"agent_start","team":"team-a","run_id":"run-1","step_id":"s1","occurred_at_us":1767225600000000,"decision":"allow","timeout_ms":600000}
JSON
ctl append "$work/receipts.jsonl" > /dev/null
ctl checkpoint --at-least 1 > /dev/null
ctl vkey > "$work/vkey"
ctl export --run team-a/run-1 --out "$work/run.tar.gz" > /dev/null
"$build/cmd/ledgerctl" keygen --origin other.test/log --out "$work/other.key" > "$work/other.vkey"
repack() {  # repack IN OUT CHANGE...
  /usr/bin/python3 "$root/export/verify/go/repack.py" "$1" "$2" --key "$work/data/signing.key" \
    --outcomes "$build/tests/pack_outcomes" "${@:3}"
}
repack "$work/run.tar.gz" "$work/swapped.tar.gz" "vkey:$work/other.vkey"
repack "$work/run.tar.gz" "$work/tampered.tar.gz" unsigned-counts
mkdir "$work/a-directory"

failures=0
# each VERIFIER PACK KEY_FILE: the command line of one verifier.
each() {
  case "$1" in
    ledger-verify) echo "$build/cmd/ledger-verify" "$2" --vkey "$3" ;;
    ledgerctl) echo "$build/cmd/ledgerctl" verify "$2" --vkey "$3" ;;
    verify_pack.py) echo /usr/bin/python3 "$root/export/verify/python/verify_pack.py" "$2" --vkey "$3" ;;
    ledger-verify-go) echo "$lvg" --vkey "$3" "$2" ;;
  esac
}
# expect VERIFIER WANT_EXIT WANT_STDOUT WANT_STDERR PACK KEY_FILE
expect() {
  local rc=0
  # shellcheck disable=SC2046
  $(each "$1" "$5" "$6") > "$work/out" 2> "$work/err" || rc=$?
  if [ "$rc" != "$2" ] || [ "$(cat "$work/out")" != "$3" ] || [ "$(cat "$work/err")" != "$4" ]; then
    echo "FAIL: $1 $5: exit $rc (want $2)"
    echo "  stdout: $(cat "$work/out")"; echo "  want:   $3"
    echo "  stderr: $(cat "$work/err")"; echo "  want:   $4"
    failures=$((failures + 1))
  else
    echo "ok: $1 $(basename "$5"): exit $rc $3$4"
  fi
}
signer=$(cut -d+ -f1,2 "$work/vkey")
other=$(cut -d+ -f1,2 "$work/other.vkey")
for v in ledger-verify ledgerctl verify_pack.py ledger-verify-go; do
  fail_word=FAILED
  [ "$v" = ledger-verify-go ] && fail_word=FAIL
  expect "$v" 3 "" "$v: cannot read the pack $work/missing.tar.gz: $(
    [ "$v" = ledger-verify-go ] && echo "no such file or directory" || echo "No such file or directory")" \
    "$work/missing.tar.gz" "$work/vkey"
  expect "$v" 3 "" "$v: cannot read the pack $work/a-directory: $(
    [ "$v" = ledger-verify-go ] && echo "is a directory" || echo "Is a directory")" \
    "$work/a-directory" "$work/vkey"
  expect "$v" 1 "$fail_word: manifest.sig: signed by $signer, not by $other (the key given)" "" \
    "$work/run.tar.gz" "$work/other.vkey"
  expect "$v" 1 "$fail_word: manifest.sig: signed by $signer, not by $other (the key given)" "" \
    "$work/swapped.tar.gz" "$work/other.vkey"
  rc=0
  # shellcheck disable=SC2046
  $(each "$v" "$work/tampered.tar.gz" "$work/vkey") > /dev/null 2>&1 || rc=$?
  if [ "$rc" != 1 ]; then echo "FAIL: $v: a tampered pack: exit $rc, want 1"; failures=$((failures + 1)); fi
done
[ "$failures" = 0 ] || { echo "FAIL: $failures cases"; exit 1; }
echo PASS
