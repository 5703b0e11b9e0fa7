#!/usr/bin/env bash
# A real full disk: the ledger's data directory on a 160 MiB tmpfs, filled up
# while receipts are appended. Appends fail with UNAVAILABLE and nothing is
# acknowledged that is not on disk; once space is freed the ledger serves
# again, in the same process if RocksDB resumes, or after the clear exit
# (code 75) and a restart if it cannot. Every acknowledged receipt is then
# in the log, and the store audits clean.
# Needs root (to mount); exits 77 (skipped) without it.
# Usage: full_disk_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
origin=full-disk.test/log
fs="$work/fs"
mkdir -p "$fs"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=160m tmpfs "$fs" 2> /dev/null; then
  echo "SKIP: mounting a small file system needs root"
  exit 77
fi
finish() {
  [ -n "$pid" ] && kill "$pid" 2> /dev/null && wait "$pid" 2> /dev/null || true
  pid=""
  umount "$fs" 2> /dev/null || true
  cleanup
}
trap finish EXIT
data="$fs/data"
start() {
  "$build/cmd/ledgerd" --data "$data" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --origin $origin > "$work/ledgerd.out" 2>&1 &
  pid=$!
  for _ in $(seq 100); do grep -q '^listening on ' "$work/ledgerd.out" && break; sleep 0.05; done
  addr=$(sed -n 's/^listening on //p' "$work/ledgerd.out")
  [ -n "$addr" ] || { cat "$work/ledgerd.out"; exit 1; }
}
# Leave about 2 MiB free, before the ledger starts (RocksDB would otherwise
# reserve room for its write-ahead log first).
dd if=/dev/zero of="$fs/filler" bs=64k count=$(( $(df -k --output=avail "$fs" | tail -1) / 64 - 32 )) 2> /dev/null
start
/usr/bin/python3 "$root/scripts/demo_workload.py" --runs 300 > "$work/receipts.jsonl"
split -l 50 "$work/receipts.jsonl" "$work/part-"
: > "$work/acks.jsonl"
failed=""
for part in "$work"/part-*; do
  ctl append "$part" >> "$work/acks.jsonl" 2> /dev/null || { failed=$part; break; }
done
[ -n "$failed" ] || { echo "FAIL: the disk never filled"; exit 1; }
grep -q '"code":"UNAVAILABLE"' "$work/acks.jsonl" ||
  { grep error "$work/acks.jsonl" | head -3; echo "FAIL: a full disk was not UNAVAILABLE"; exit 1; }
acked=$(grep -c '"seq"' "$work/acks.jsonl" || true)
echo "full disk: $acked receipts acknowledged, then UNAVAILABLE"
rm -f "$fs/filler"
# Space is back. RocksDB clears the error by itself once it sees enough free
# space (it polls); a client keeps retrying meanwhile. If it cannot, the
# ledger exits with code 75 and a restart recovers.
freed=$(date +%s)
how=""
for _ in $(seq 120); do
  if ! kill -0 "$pid" 2> /dev/null; then
    code=0
    wait "$pid" || code=$?
    [ "$code" = 75 ] || { tail -5 "$work/ledgerd.out"; echo "FAIL: exit code $code"; exit 1; }
    grep -q "\"event\":\"exiting\",\"msg\":\"exiting: .*a restart recovers the store" "$work/ledgerd.out" || { cat "$work/ledgerd.out"; exit 1; }
    start
    how="after exiting with code 75 and a restart"
  fi
  if ctl append "$work/receipts.jsonl" > "$work/acks2.jsonl" 2> /dev/null; then
    how=${how:-"in the same process, $(( $(date +%s) - freed )) s after space was freed"}
    break
  fi
  sleep 1
done
[ -n "$how" ] && ! grep -q error "$work/acks2.jsonl" || { echo "FAIL: no recovery within 2 minutes"; exit 1; }
kill -TERM "$pid"
wait "$pid"
pid=""
"$build/cmd/ledgerctl" audit --data "$data" --origin $origin > "$work/audit.txt" || { cat "$work/audit.txt"; exit 1; }
/usr/bin/python3 - "$work/acks.jsonl" "$work/acks2.jsonl" <<'PY'
import json, sys
first = [json.loads(l) for l in open(sys.argv[1])]
second = [json.loads(l) for l in open(sys.argv[2])]
assert len(second) >= len(first)
for i, a in enumerate(first):
    if "seq" in a:  # acknowledged while the disk filled: the same entry now
        assert second[i].get("seq") == a["seq"] and second[i]["leaf_hash"] == a["leaf_hash"], (i, a, second[i])
assert all("seq" in b for b in second), "not everything appended once space was back"
PY
echo "full disk: served again $how; all $(wc -l < "$work/receipts.jsonl") receipts appended, every earlier acknowledgement kept, audit clean"
