# Sourced by the tests that drive a real ledgerd: a work directory removed on
# exit, and start_ledgerd, which starts a server on a free loopback port and
# sets $addr, with ctl as its ledgerctl. Needs $build set by the caller.
work=$(mktemp -d)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

start_ledgerd() {  # start_ledgerd [ledgerd flags...]
  "$build/cmd/ledgerd" --data "$work/data" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 "$@" > "$work/ledgerd.out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    grep -q '^listening on ' "$work/ledgerd.out" && break
    sleep 0.05
  done
  addr=$(sed -n 's/^listening on //p' "$work/ledgerd.out")
  [ -n "$addr" ] || { cat "$work/ledgerd.out"; exit 1; }
}

ctl() { "$build/cmd/ledgerctl" --server "$addr" "$@"; }

# Headless Chromium (Debian's), with a profile in the work directory.
browser() {
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" "$@" 2>/dev/null
}

# Appends the demo workload's 9 runs (short timeouts) and waits until the
# crashed worker's step of team-support/run-0007 is declared unknown and a
# checkpoint covers the declaration. Needs $root.
append_demo_runs() {
  /usr/bin/python3 "$root/scripts/demo_workload.py" --runs 9 --timeout-ms 300 > "$work/receipts.jsonl"
  ctl append "$work/receipts.jsonl" > /dev/null
  for _ in $(seq 100); do
    ctl steps --team team-support --state unknown --json | grep -q unknown && break
    sleep 0.1
  done
  sleep 0.2
}
