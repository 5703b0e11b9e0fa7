#!/usr/bin/env bash
# Plain text is never served off loopback unless the operator says so: the
# real ledgerd and ledger-witness refuse a start on 0.0.0.0 without TLS or
# --insecure, with exit 1, a start_failed line naming the flag and the TLS
# flags to give, and no ready line. On loopback ledgerd starts and warns, once,
# that every caller there is admin and how to give TLS; with --insecure it
# warns that, and with TLS it warns of neither.
# Usage: plain_text_test.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT

# Expects the command to exit 1 with exactly this start_failed message and
# to print nothing on stdout.
refused() {
  local want=$1
  shift
  "$@" > "$work/out" 2> "$work/err"
  local rc=$?
  [ "$rc" -eq 1 ] || { cat "$work/err"; fail "exit $rc, want 1: $*"; }
  grep -qF "\"event\":\"start_failed\",\"msg\":\"$want\"}" "$work/err" || { cat "$work/err"; fail "want: $want"; }
  [ ! -s "$work/out" ] || fail "a ready line before the refusal: $(cat "$work/out")"
  echo "refused: $want"
}

# The ports are the image's, never bound: each refusal comes before any bind.
tls="give --tls-cert, --tls-key, --client-ca and --policy, or --insecure"
refused "--listen: 0.0.0.0:7420 is not a loopback address; $tls" \
  "$build/cmd/ledgerd" --data "$work/d1" --listen 0.0.0.0:7420 --http-listen 127.0.0.1:0
refused "--http-listen: 0.0.0.0:7421 is not a loopback address; in plain-text mode the dashboard shows every team's evidence: $tls" \
  "$build/cmd/ledgerd" --data "$work/d2" --listen 127.0.0.1:0 --http-listen 0.0.0.0:7421
refused "--otlp-listen: 0.0.0.0:4318 is not a loopback address; in plain-text mode every sender appends as 'local' to any team: $tls" \
  "$build/cmd/ledgerd" --data "$work/d3" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --otlp-listen 0.0.0.0:4318
"$build/cmd/ledgerctl" keygen --origin plain-text.example/log --out "$work/log.key" > "$work/log.vkey" ||
  fail "ledgerctl keygen"
refused "--listen: 0.0.0.0:7480 is not a loopback address; give --tls-cert, --tls-key and --client-ca, or --insecure" \
  "$build/cmd/ledger-witness" --data "$work/w" --listen 0.0.0.0:7480 --log "$work/log.vkey"

# Starts ledgerd with these flags (ports 0 on loopback), waits for its
# ready line, stops it, and leaves its log in $work/err.
started() {
  "$build/cmd/ledgerd" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 "$@" > "$work/out" 2> "$work/err" &
  pid=$!
  for _ in $(seq 200); do grep -q '^http on ' "$work/out" && break; sleep 0.05; done
  grep -q '^http on ' "$work/out" || { cat "$work/err"; fail "ledgerd did not start: $*"; }
  kill -TERM "$pid"
  wait "$pid" || fail "ledgerd did not stop with exit 0: $*"
  pid=""
}
# The `msg` of each warning of this event in $work/err.
warnings() { /usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line) if line.startswith("{") else {}
    if e.get("level") == "warn" and e.get("event") == sys.argv[2]:
        print(e["msg"])' "$work/err" "$1"; }

started --data "$work/loopback"
ports=$(sed -n 's/^listening on //p; s/^http on //p' "$work/out" | paste -sd, | sed 's/,/, /')
want="plain text on loopback only (127.0.0.1:0, 127.0.0.1:0): every caller is 'local' with role admin, and only this host can connect (in a container, only the container itself: a published port does not reach it); to serve the network give --tls-cert, --tls-key, --client-ca and --policy"
[ "$(warnings plaintext_loopback)" = "$want" ] || { cat "$work/err"; fail "on loopback, want the warning: $want"; }
[ -z "$(warnings insecure)" ] || fail "on loopback, an insecure warning"
echo "loopback ($ports): started, warned once: $want"

started --data "$work/insecure" --insecure
want="--insecure: plain text on 127.0.0.1:0; every caller is 'local' with role admin"
[ "$(warnings insecure)" = "$want" ] || { cat "$work/err"; fail "--insecure: want the warning: $want"; }
[ -z "$(warnings plaintext_loopback)" ] || fail "--insecure: a loopback warning besides"
echo "--insecure: warned once: $want"

"$root/scripts/dev-certs.sh" "$work/certs" > /dev/null || fail "scripts/dev-certs.sh"
started --data "$work/tls" --tls-cert "$work/certs/server.pem" --tls-key "$work/certs/server.key" \
  --client-ca "$work/certs/ca.pem" --policy "$work/certs/policy.json"
[ -z "$(warnings plaintext_loopback)$(warnings insecure)" ] || { cat "$work/err"; fail "with TLS, a plain-text warning"; }
echo "TLS: no plain-text warning"
echo "PASS"
