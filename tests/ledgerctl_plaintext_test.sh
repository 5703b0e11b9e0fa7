#!/usr/bin/env bash
# ledgerctl without --tls-ca dials plain text only to a loopback address
# (security issue 31, item 8: it dialed any host in plain text, silently).
# --server, or any shard of --shard-map, off this machine is refused with
# exit 2 and the rule; --insecure dials it; loopback works as before; route,
# which dials nothing, is not refused.
# Usage: ledgerctl_plaintext_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
start_ledgerd
refusal() {  # refusal WHERE ADDRESS
  echo "ledgerctl: $1address \"$2\" is not a loopback address: give TLS options (--tls-ca, --cert and --key)," \
    "or ask for plain text explicitly with --insecure"
}
# Bounded: a ledgerctl that dials an address that answers nobody would wait.
run() { timeout 20 "$build/cmd/ledgerctl" "$@" > "$work/out" 2> "$work/err"; }
expect_refused() {  # expect_refused WHERE ADDRESS LEDGERCTL_ARGS...
  local want rc=0
  want=$(refusal "$1" "$2")
  shift 2
  run "$@" || rc=$?
  if [ "$rc" != 2 ] || [ "$(cat "$work/err")" != "$want" ] || [ -s "$work/out" ]; then
    echo "FAIL: ledgerctl $*: exit $rc, stderr:"; cat "$work/err"; echo "want: $want"; exit 1
  fi
}

for far in 10.0.0.5:7420 ledger.example.com:7420 localhost.example.com:7420 "[fd00::2]:7420"; do
  expect_refused "--server: " "$far" --server "$far" vkey
done
cat > "$work/map.json" <<JSON
{"version": 1, "shards": [{"shard": 0, "address": "$addr"}, {"shard": 1, "address": "10.0.0.5:7420"}],
 "teams": {"team-a": 0}}
JSON
# Every shard's address, even for a team on the loopback shard.
expect_refused "--shard-map: shard 1: " 10.0.0.5:7420 --shard-map "$work/map.json" steps --team team-a
expect_refused "--shard-map: shard 1: " 10.0.0.5:7420 --shard-map "$work/map.json" steps --state unknown
run --shard-map "$work/map.json" route --team team-a || { cat "$work/err"; exit 1; }
echo "refused: --server and shard 1 off loopback; route, dialing nothing, answered $(cat "$work/out")"

ctl vkey > "$work/vkey"  # loopback, as before
host=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+(\.[0-9]+){3}$' | grep -v '^127\.' | head -1 || true)
if [ -z "$host" ]; then
  # No address off loopback here: --insecure at least gets past the refusal to
  # a connection that fails (TEST-NET-3 answers nobody).
  rc=0
  run --insecure --server 203.0.113.1:7420 vkey || rc=$?
  if [ "$rc" = 2 ] || [ "$rc" = 0 ]; then echo "FAIL: --insecure to 203.0.113.1: exit $rc"; cat "$work/err"; exit 1; fi
  echo "--insecure: dialed 203.0.113.1:7420 (exit $rc)"
  echo PASS
  exit 0
fi
"$build/cmd/ledgerd" --data "$work/far-data" --listen "$host:0" --http-listen 127.0.0.1:0 --insecure \
  > "$work/far.out" 2>&1 &
far_pid=$!
trap 'kill $far_pid 2>/dev/null; wait $far_pid 2>/dev/null; cleanup' EXIT
for _ in $(seq 100); do
  grep -q '^listening on ' "$work/far.out" && break
  sleep 0.05
done
far=$(sed -n 's/^listening on //p' "$work/far.out")
[ -n "$far" ] || { cat "$work/far.out"; exit 1; }
expect_refused "--server: " "$far" --server "$far" vkey
run --insecure --server "$far" vkey || { echo "FAIL: --insecure --server $far vkey"; cat "$work/err"; exit 1; }
grep -q . "$work/out"
sed "s/\"$addr\"/\"$far\"/; s/10.0.0.5:7420/$far/" "$work/map.json" > "$work/far-map.json"
run --insecure --shard-map "$work/far-map.json" steps --state unknown || { cat "$work/err"; exit 1; }
echo "--insecure: vkey and steps over plain text at $far"
echo PASS
