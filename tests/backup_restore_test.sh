#!/usr/bin/env bash
# A backup taken while receipts are being appended restores into a ledger
# that audits clean, holds the same entries, and continues the same log: its
# next checkpoint is consistent with the backup's (RFC 9162 proof checked by
# export/verify/python/verify_pack.py). Restoring over a data directory whose guard is
# ahead of the backup is refused as a rollback. Backups go only under
# --backup-root: without it they are refused, and a path outside the root,
# through '..' or a symbolic link, or inside the data directory creates
# nothing.
# Usage: backup_restore_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
origin=backup.test/log

outside=$(mktemp -d)
trap 'cleanup; rm -rf "$outside"' EXIT
refused() {  # refused MESSAGE ledgerctl-args...: the command fails with MESSAGE on stderr
  local want=$1
  shift
  if ctl "$@" 2> "$work/err"; then echo "FAIL: ctl $* was not refused"; exit 1; fi
  [ "$(cat "$work/err")" = "ledgerctl: $want" ] || { echo "FAIL: ctl $*: got: $(cat "$work/err"); want: $want"; exit 1; }
}

# Without --backup-root, no backup.
start_ledgerd --origin $origin
refused "dir: backups are off: start ledgerd with --backup-root DIR" backup --out "$work/b0"
[ ! -e "$work/b0" ] || { echo "FAIL: a refused backup created $work/b0"; exit 1; }
kill -TERM "$pid"
wait "$pid"
pid=""
# A root inside the data directory is refused at start.
if "$build/cmd/ledgerd" --data "$work/data" --listen 127.0.0.1:0 --http-listen '' --backup-root "$work/data" \
     > "$work/inside.out" 2>&1; then
  echo "FAIL: a backup root inside the data directory was accepted"; exit 1
fi
grep -q -- "--backup-root: $work/data is inside the data directory; backups go apart from the store" "$work/inside.out" ||
  { cat "$work/inside.out"; exit 1; }

# The root holds the data directory: paths into it, out of the root, or
# through links are refused, and leave nothing behind.
start_ledgerd --origin $origin --checkpoint-interval-ms 20 --backup-root "$work"
ln -s "$outside" "$work/link-out"
ln -s "$work/data" "$work/link-data"
refused "dir: must be inside the backup root $work (a path under it, or relative to it)" backup --out "$outside/b"
refused "dir: must not contain '..'" backup --out "$work/b/../../$(basename "$outside")/b"
refused "dir: must not contain '..'" backup --out "../$(basename "$outside")/b"
refused "dir: $work/link-out is a symbolic link; a backup path must not go through links" backup --out "$work/link-out/b"
refused "dir: $work/link-data is a symbolic link; a backup path must not go through links" backup --out "link-data/b"
refused "dir: $work/data is the data directory; backups go apart from the store" backup --out "$work/data/db/b"
refused "dir: $work/data is the data directory; backups go apart from the store" backup --out "data/tmp/b"
refused "dir: $work/data is the data directory; backups go apart from the store" backup --out "$work/data"
ls -A "$outside" | grep -q . && { echo "FAIL: a refused backup wrote to $outside"; ls -la "$outside"; exit 1; }
[ ! -e "$work/data/db/b" ] && [ ! -e "$work/data/tmp/b" ] && [ ! -e "$work/b" ] ||
  { echo "FAIL: a refused backup left a directory behind"; exit 1; }
ctl backup --out relative/b > "$work/relative.json"
grep -q "\"dir\":\"$work/relative/b\"" "$work/relative.json" || { cat "$work/relative.json"; exit 1; }
[ -s "$work/relative/b/db/CURRENT" ] || { echo "FAIL: no backup in $work/relative/b"; exit 1; }
/usr/bin/python3 "$root/scripts/demo_workload.py" --runs 60 > "$work/receipts.jsonl"
# Then three receipts of another run, so the log always grows past the backup.
for i in 1 2 3; do
  echo '{"receipt_id":"after-backup-'$i'","kind":"model_call","team":"team-code","run_id":"after","occurred_at_us":1767225600000000,"route":"m","decision":"allow"}'
done >> "$work/receipts.jsonl"
head -n 300 "$work/receipts.jsonl" > "$work/part-a.jsonl"
tail -n +301 "$work/receipts.jsonl" | head -n -3 > "$work/part-b.jsonl"
tail -n 3 "$work/receipts.jsonl" > "$work/part-c.jsonl"
ctl append "$work/part-a.jsonl" > /dev/null
split -l 40 "$work/part-b.jsonl" "$work/b-"
(for f in "$work"/b-*; do ctl append "$f" > /dev/null; done) &
appending=$!
sleep 0.1
ctl backup --out "$work/backup" > "$work/backup.json"
wait $appending
ctl append "$work/part-c.jsonl" > /dev/null
ctl vkey > "$work/vkey"
# A second backup to the same place is refused.
if ctl backup --out "$work/backup" 2> "$work/err"; then echo "FAIL: backup over a backup"; exit 1; fi
grep -q "exists; a backup goes to a new directory" "$work/err" || { cat "$work/err"; exit 1; }
kill -TERM "$pid"
wait "$pid"
pid=""
size=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tree_size"])' "$work/backup.json")
total=$(wc -l < "$work/receipts.jsonl")
echo "backup: $size of $total entries (entries 300 to $((total - 4)) were being appended in batches of 40)"
[ "$size" -ge 300 ] && [ "$size" -lt "$total" ] || { echo "FAIL: backup of $size entries"; exit 1; }
"$build/cmd/ledgerctl" audit --data "$work/backup" --vkey "$work/vkey" > "$work/audit.txt" ||
  { cat "$work/audit.txt"; echo "FAIL: the backup does not audit"; exit 1; }

# Restoring over the original data directory: its guard is ahead.
mv "$work/data/db" "$work/data/db.lost"
if timeout 30 "$build/cmd/ledgerd" --data "$work/data" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 --origin $origin \
     --restore-from "$work/backup" > "$work/refused.out" 2>&1; then
  echo "FAIL: a rollback was not refused"; exit 1
fi
grep -q "rollback guard: the store holds $size entries but a checkpoint of size $total" "$work/refused.out" ||
  { cat "$work/refused.out"; exit 1; }

# Restoring into a new data directory without the key that signed the
# backup: refused before anything is written, and nothing is left behind
# (no data directory, no new signing key).
if timeout 30 "$build/cmd/ledgerd" --data "$work/keyless" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
     --origin $origin --restore-from "$work/backup" > "$work/keyless.out" 2>&1; then
  echo "FAIL: a restore without the signing key was not refused"; exit 1
fi
grep -q "\"msg\":\"--restore-from: no signing key at $work/keyless/signing.key; put the key that signed the backup there first (a restore never makes a new key)\"" "$work/keyless.out" ||
  { cat "$work/keyless.out"; echo "FAIL: the refusal does not say why"; exit 1; }
[ ! -e "$work/keyless" ] || { find "$work/keyless"; echo "FAIL: a refused restore left files behind"; exit 1; }

# Restoring into a new data directory, with the same key.
original=$work/data
mkdir -p "$work/restored"
cp "$original/signing.key" "$work/restored/"
[ ! -e "$work/data/db" ] || { echo "FAIL: a refused restore left its store behind"; exit 1; }
mv "$work/data" "$work/original"
mv "$work/restored" "$work/data"
start_ledgerd --origin $origin --checkpoint-interval-ms 20 --restore-from "$work/backup"
grep -q "\"msg\":\"restored the store from $work/backup" "$work/ledgerd.out" || { cat "$work/ledgerd.out"; exit 1; }
ctl entries --from 0 --to "$size" > "$work/restored-entries.jsonl"
ctl checkpoint --at-least "$size" > "$work/restored-cp"
# The rest of the receipts: the first $size are duplicates, the others new.
ctl append "$work/receipts.jsonl" > "$work/acks2.jsonl"
ctl checkpoint --at-least "$total" > "$work/new-cp"
ctl consistency --from "$size" > "$work/proof.json"
kill -TERM "$pid"
wait "$pid"
pid=""
# The original log's entries, read from its data directory.
mv "$work/data" "$work/restored"
mv "$work/original" "$work/data"
rm -rf "$work/data/db"
mv "$work/data/db.lost" "$work/data/db"
start_ledgerd --origin $origin
ctl entries --from 0 --to "$total" > "$work/original-entries.jsonl"
kill -TERM "$pid"
wait "$pid"
pid=""
/usr/bin/python3 - "$root" "$work" "$size" "$total" <<'PY'
import base64, importlib.util, json, os, sys
root, work, size, total = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
spec = importlib.util.spec_from_file_location("vp", os.path.join(root, "export", "verify", "python", "verify_pack.py"))
vp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vp)
key = vp.parse_vkey(open(os.path.join(work, "vkey")).read())
def body(path):
    return vp.open_note(open(path, "rb").read(), key).split("\n")
original = open(os.path.join(work, "original-entries.jsonl")).read().splitlines()
restored = open(os.path.join(work, "restored-entries.jsonl")).read().splitlines()
assert restored == original[:size], "restored entries differ from the original's"
acks = [json.loads(l) for l in open(os.path.join(work, "acks2.jsonl"))]
dups = sum(1 for a in acks if a.get("duplicate"))
assert dups == size, (dups, size)
old, new = body(os.path.join(work, "restored-cp")), body(os.path.join(work, "new-cp"))
old_size, new_size = int(old[1]), int(new[1])
proof = json.load(open(os.path.join(work, "proof.json")))
assert proof["from_size"] == size and proof["to_size"] == new_size, proof
assert old_size == size, (old_size, size)
ok = vp.verify_consistency(size, new_size, base64.b64decode(old[2]), base64.b64decode(new[2]),
                           [bytes.fromhex(h) for h in proof["proof"]])
assert ok, "the restored ledger's checkpoint is not consistent with the backup's"
print("restore: %d entries identical to the original's; %d retried receipts answered as duplicates; "
      "checkpoint %d consistent with the backup's %d" % (size, dups, new_size, size))
PY
