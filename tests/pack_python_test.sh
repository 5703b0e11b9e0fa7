#!/usr/bin/env bash
# A pack exported by a real ledgerd is verified by export/verify/python/verify_pack.py
# (Python's standard library and cryptography, not the ledger's code), by
# ledgerctl verify and by ledger-verify; a tampered pack and a wrong key are
# refused by all three with the reason. Usage: pack_python_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
# shellcheck source=tests/ledgerd.sh
source "$(dirname "$0")/ledgerd.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
export ROOT=$root
start_ledgerd --origin packs.test/log --checkpoint-interval-ms 20 --unknown-grace-ms 200 --sweep-interval-ms 50
/usr/bin/python3 "$root/scripts/demo_workload.py" --runs 9 > "$work/receipts.jsonl"
ctl append "$work/receipts.jsonl" > /dev/null
ctl checkpoint --at-least "$(wc -l < "$work/receipts.jsonl")" > /dev/null
ctl vkey > "$work/vkey"
ctl checkpoint > "$work/old.note"
ctl export --run team-code/run-0003 --out "$work/run-old.tar.gz" > /dev/null
sleep 1.1; mid=$(date -u +%Y-%m-%dT%H:%M:%SZ); sleep 1.1  # a team window from here starts inside runs
/usr/bin/python3 "$root/scripts/demo_workload.py" --runs 3 --seed 9 --start-us 1767225700000000 |
  sed 's/"receipt_id":"/"receipt_id":"more-/' | ctl append > /dev/null
ctl checkpoint --at-least "$(($(sed -n 2p "$work/old.note") + 1))" > /dev/null
ctl export --run team-code/run-0003 --out "$work/run.tar.gz" --since "$work/old.note" > /dev/null
ctl export --team team-data --from 2020-01-01T00:00:00Z --to 2100-01-01T00:00:00Z \
  --out "$work/team.tar.gz" > /dev/null
ctl export --seq 5:40 --out "$work/seq.tar.gz" > /dev/null
ctl export --run team-code/run-0000 --out "$work/other-run.tar.gz" > /dev/null
ctl checkpoint > "$work/new.note"
ctl checkpoint --time-note --size "$(sed -n 2p "$work/new.note")" > "$work/new.time"
ctl export --team team-data --from "$mid" --to 2100-01-01T00:00:00Z --out "$work/late.tar.gz" > /dev/null
vkey=$(cat "$work/vkey")
py() { /usr/bin/python3 "$root/export/verify/python/verify_pack.py" "$@"; }
verifier() {  # verifier ledgerctl|ledger-verify|py: sets run, the command that verifies
  case $1 in
    ledgerctl) run=("$build/cmd/ledgerctl" verify) ;;
    ledger-verify) run=("$build/cmd/ledger-verify") ;;
    *) run=(py) ;;
  esac
}

py "$work/run.tar.gz" "$vkey" | grep '^OK: ' > /dev/null || { py "$work/run.tar.gz" "$vkey"; exit 1; }
py "$work/seq.tar.gz" "$vkey" | grep '^OK: 35 entries' > /dev/null || { py "$work/seq.tar.gz" "$vkey"; exit 1; }
"$build/cmd/ledgerctl" verify "$work/run.tar.gz" --vkey "$work/vkey" | grep '^OK: ' > /dev/null
py "$work/team.tar.gz" "$vkey" | grep '^OK: ' > /dev/null || { py "$work/team.tar.gz" "$vkey"; exit 1; }
py "$work/run.tar.gz" "$vkey" | grep '^The checkpoint is consistent with the earlier one at size ' > /dev/null
"$build/cmd/ledgerctl" verify "$work/run.tar.gz" --vkey "$work/vkey" |
  grep '^The checkpoint is consistent with the earlier one at size ' > /dev/null
"$build/cmd/ledgerctl" verify "$work/team.tar.gz" --vkey "$work/vkey" | grep '^OK: ' > /dev/null
# A window that starts inside a run: its first entry there links below the
# window's first seq, and both verifiers accept it.
/usr/bin/python3 - "$work/late.tar.gz" <<'PY'
import json, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    m = json.loads(t.extractfile("evidence/manifest.json").read())
    first = json.loads(t.extractfile("evidence/entries.jsonl").readline())
assert first.get("run_prev") is not None and first["run_prev"] < m["scope"]["from_seq"] <= first["seq"], (first, m)
PY
"$build/cmd/ledgerctl" verify "$work/late.tar.gz" --vkey "$work/vkey" | grep '^OK: ' > /dev/null
py "$work/late.tar.gz" --vkey "$work/vkey" | grep '^OK: ' > /dev/null

# Go's x/mod sumdb checks the packs' checkpoints and proofs too.
for pack in run seq team; do
  mkdir -p "$work/x-$pack" && tar -xzf "$work/$pack.tar.gz" -C "$work/x-$pack"
  GOPATH=/usr/share/gocode GO111MODULE=off GOCACHE="$work/gocache" GOPROXY=off \
    go run "$root/tests/interop/verify.go" -pack "$work/x-$pack/evidence" "$vkey"
done

# A flipped byte in entries.jsonl, the archive rebuilt around it.
/usr/bin/python3 - "$work/run.tar.gz" "$work/tampered.tar.gz" <<'PY'
import io, sys, tarfile
src, dst = sys.argv[1], sys.argv[2]
with tarfile.open(src, "r:gz") as t, tarfile.open(dst, "w:gz") as out:
    for m in t:
        data = t.extractfile(m).read()
        if m.name.endswith("entries.jsonl"):
            data = data.replace(b'"succeeded"', b'"sucCeeded"', 1)
        m.size = len(data)
        out.addfile(m, io.BytesIO(data))
PY
expect_fail() {  # expect_fail WHAT MESSAGE-PATTERN COMMAND...
  local what=$1 pattern=$2; shift 2
  if out=$("$@"); then echo "FAIL: $what was accepted"; exit 1; fi
  echo "$out" | grep -qE "$pattern" || { echo "FAIL: $what: unexpected message: $out"; exit 1; }
}
expect_fail "python, tampered entry" '^FAILED: entries.jsonl: SHA-256 expected' py "$work/tampered.tar.gz" "$vkey"
expect_fail "ledgerctl, tampered entry" '^FAILED: entries.jsonl: SHA-256 expected' \
  "$build/cmd/ledgerctl" verify "$work/tampered.tar.gz" --vkey "$work/vkey"
other=$("$build/cmd/ledgerctl" keygen --origin packs.test/log --out "$work/other.key")
expect_fail "python, another key" '^FAILED: manifest.sig: signed by packs.test/log\+[0-9a-f]{8}, not by packs.test/log\+[0-9a-f]{8} \(the key given\)$' \
  py "$work/run.tar.gz" "$other"
expect_fail "ledgerctl, another key" '^FAILED: manifest.sig: signed by packs.test/log\+[0-9a-f]{8}, not by packs.test/log\+[0-9a-f]{8} \(the key given\)$' \
  "$build/cmd/ledgerctl" verify "$work/run.tar.gz" --vkey-string "$other"
# A key given but empty or malformed is a usage error (exit 2) naming the
# flag, never a fall back to the key inside the pack; trusting that key
# takes --trust-pack-key and says what it does not prove.
expect_exit() {  # expect_exit CODE WHAT MESSAGE-PATTERN COMMAND...
  local code=$1 what=$2 pattern=$3; shift 3
  local got=0
  out=$("$@" 2>&1) || got=$?
  [ "$got" = "$code" ] || { echo "FAIL: $what: exit $got, expected $code: $out"; exit 1; }
  echo "$out" | grep -qE "$pattern" || { echo "FAIL: $what: unexpected message: $out"; exit 1; }
  echo "$what: exit $got: $(echo "$out" | grep -E "$pattern" | head -1)"
}
: > "$work/empty.vkey"
echo "not a key" > "$work/bad.vkey"
for tool in ledgerctl ledger-verify py; do
  verifier "$tool"
  expect_exit 2 "$tool, an empty --vkey file" '^(ledgerctl|ledger-verify|verify_pack.py): --vkey: .*empty\.vkey holds no verifier key line$' \
    "${run[@]}" "$work/run.tar.gz" --vkey "$work/empty.vkey"
  expect_exit 2 "$tool, a malformed --vkey file" '^(ledgerctl|ledger-verify|verify_pack.py): --vkey: .*bad\.vkey: not a verifier key' \
    "${run[@]}" "$work/run.tar.gz" --vkey "$work/bad.vkey"
  expect_exit 2 "$tool, an unreadable --vkey file" '^(ledgerctl|ledger-verify|verify_pack.py): --vkey: cannot read ' \
    "${run[@]}" "$work/run.tar.gz" --vkey "$work/no-such.vkey"
  expect_exit 2 "$tool, an empty --vkey-string" '^(ledgerctl|ledger-verify|verify_pack.py): --vkey-string: empty' \
    "${run[@]}" "$work/run.tar.gz" --vkey-string ""
  expect_exit 2 "$tool, no key" '^(ledgerctl|ledger-verify|verify_pack.py): verify: give the ledger.s key \(--vkey FILE or --vkey-string S\), a --policy FILE naming it in a log line, or --trust-pack-key' \
    "${run[@]}" "$work/run.tar.gz"
  expect_exit 2 "$tool, a key and --trust-pack-key" '^(ledgerctl|ledger-verify|verify_pack.py): verify: --trust-pack-key with a key given' \
    "${run[@]}" "$work/run.tar.gz" --vkey "$work/vkey" --trust-pack-key
  expect_exit 0 "$tool, --trust-pack-key" "^WARNING: --trust-pack-key: the key inside the pack was trusted; this result proves nothing about the ledger's identity" \
    "${run[@]}" "$work/run.tar.gz" --trust-pack-key
  expect_exit 0 "$tool, --vkey FILE" '^OK: ' "${run[@]}" "$work/run.tar.gz" --vkey "$work/vkey"
  expect_exit 0 "$tool, --vkey-string S" '^OK: ' "${run[@]}" "$work/run.tar.gz" --vkey-string "$vkey"
done
expect_exit 2 "py, a file as the VKEY argument" '^verify_pack.py: VKEY: not a verifier key line \(NAME\+ID\+KEY\); give a file with --vkey FILE' \
  py "$work/run.tar.gz" "$work/vkey"
# --since FILE: the pack must prove consistency from exactly the auditor's
# earlier checkpoint. A checkpoint of the same size on another branch (as a
# forked ledger, holding the key, would show one auditor and prove the other)
# and a pack without a consistency proof are refused; the old root is named.
/usr/bin/python3 - "$work/old.note" "$work/data/signing.key" "$work/fork.note" <<'PY'
import base64, hashlib, importlib.util, os, sys
spec = importlib.util.spec_from_file_location("t", os.path.join(os.environ["ROOT"], "tests", "pack_tamper_test.py"))
t = importlib.util.module_from_spec(spec)
spec.loader.exec_module(t)
lines = open(sys.argv[1], "rb").read().split(b"\n\n")[0].split(b"\n")
lines[2] = base64.b64encode(hashlib.sha256(b"another branch").digest())
open(sys.argv[3], "wb").write(t.signer(sys.argv[2])(b"\n".join(lines) + b"\n"))
PY
old_size=$(sed -n 2p "$work/old.note")
old_root=$(sed -n 3p "$work/old.note" | base64 -d | od -An -tx1 | tr -d ' \n')
fork_root=$(sed -n 3p "$work/fork.note" | base64 -d | od -An -tx1 | tr -d ' \n')
for tool in ledgerctl ledger-verify py; do
  verifier "$tool"
  expect_exit 0 "$tool, --since the auditor's checkpoint" \
    "^The checkpoint is consistent with the earlier one at size $old_size, root $old_root \\(the one given with --since\\)\\.$" \
    "${run[@]}" "$work/run.tar.gz" --vkey "$work/vkey" --since "$work/old.note"
  expect_exit 1 "$tool, --since a checkpoint of another branch" \
    "^FAILED: consistency\\.json: old_checkpoint is size $old_size root $old_root, --since is size $old_size root $fork_root$" \
    "${run[@]}" "$work/run.tar.gz" --vkey "$work/vkey" --since "$work/fork.note"
  expect_exit 1 "$tool, --since and no consistency proof" \
    "^FAILED: consistency\\.json: missing: --since asks for consistency with the checkpoint at size $old_size$" \
    "${run[@]}" "$work/team.tar.gz" --vkey "$work/vkey" --since "$work/old.note"
  expect_exit 2 "$tool, --since a file that is not a checkpoint" '^(ledgerctl|ledger-verify|verify_pack.py): --since: ' \
    "${run[@]}" "$work/run.tar.gz" --vkey "$work/vkey" --since "$work/vkey"
done
# The verifier is told what was asked: --expect-scope refuses a genuine pack
# of another scope, --not-older-than a genuine pack against an older
# checkpoint; the OK line names the scope, tree size and root.
new_size=$(sed -n 2p "$work/new.note")
new_root=$(sed -n 3p "$work/new.note" | base64 -d | od -An -tx1 | tr -d ' \n')
new_us=$(sed -n 's/^time //p' "$work/new.time")
new_time="$(date -u -d "@$((new_us / 1000000))" +%Y-%m-%dT%H:%M:%S).$(printf %06d $((new_us % 1000000)))Z \\($new_us us\\)"
for tool in ledgerctl ledger-verify py; do
  verifier "$tool"
  expect_exit 0 "$tool, the run asked for" \
    "^OK: 16 entries of \\{\"kind\":\"run\",\"run_id\":\"run-0003\",\"team\":\"team-code\"\\} verified against the checkpoint of packs.test/log at tree size $new_size, root $new_root, signed at $new_time\\.$" \
    "${run[@]}" "$work/run.tar.gz" --vkey "$work/vkey" --expect-scope run:team-code/run-0003 --not-older-than "$work/new.note"
  expect_exit 1 "$tool, a genuine pack of another run" \
    '^FAILED: manifest\.json: scope is \{"kind":"run","run_id":"run-0000","team":"team-code"\}, expected \{"kind":"run","run_id":"run-0003","team":"team-code"\} \(--expect-scope\)$' \
    "${run[@]}" "$work/other-run.tar.gz" --vkey "$work/vkey" --expect-scope run:team-code/run-0003
  expect_exit 0 "$tool, the seq range asked for" '^OK: 35 entries of \{"from_seq":5,"kind":"seq","to_seq":40\}' \
    "${run[@]}" "$work/seq.tar.gz" --vkey "$work/vkey" --expect-scope seq:5:40
  expect_exit 1 "$tool, another seq range" '^FAILED: manifest\.json: scope is \{"from_seq":5,"kind":"seq","to_seq":40\}, expected \{"from_seq":5,"kind":"seq","to_seq":41\} \(--expect-scope\)$' \
    "${run[@]}" "$work/seq.tar.gz" --vkey "$work/vkey" --expect-scope seq:5:41
  expect_exit 0 "$tool, the team window asked for" '^OK: 82 entries of \{"from_seq":0,"from_us":1577836800000000,"kind":"team","team":"team-data","to_seq":' \
    "${run[@]}" "$work/team.tar.gz" --vkey "$work/vkey" --expect-scope team:team-data,2020-01-01T00:00:00Z,2100-01-01T00:00:00Z
  expect_exit 1 "$tool, another team window" '^FAILED: manifest\.json: scope is .* expected \{"from_us":1577836800000000,"kind":"team","team":"team-data","to_us":4102444800000001\} \(--expect-scope\)$' \
    "${run[@]}" "$work/team.tar.gz" --vkey "$work/vkey" --expect-scope team:team-data,2020-01-01T00:00:00Z,2100-01-01T00:00:00.000001Z
  for older in "$new_size" "$work/new.note"; do
    expect_exit 1 "$tool, an older genuine pack of the run, --not-older-than ${older##*/}" \
      "^FAILED: checkpoint: tree size $old_size is older than the $new_size asked for \\(--not-older-than\\)$" \
      "${run[@]}" "$work/run-old.tar.gz" --vkey "$work/vkey" --expect-scope run:team-code/run-0003 --not-older-than "$older"
  done
  expect_exit 2 "$tool, a malformed --expect-scope" '^(ledgerctl|ledger-verify|verify_pack.py): --expect-scope: expected scope: want run:TEAM/RUN$' \
    "${run[@]}" "$work/run.tar.gz" --vkey "$work/vkey" --expect-scope run:team-code
done
# A run whose worker died: its step is declared UNKNOWN, and a checkpoint
# covers the declaration (for the report's tamper case).
/usr/bin/python3 "$root/scripts/demo_workload.py" --runs 9 --timeout-ms 300 --start-us 1767225900000000 |
  sed 's/run-00/lost-00/g' | ctl append > /dev/null
for _ in $(seq 100); do
  ctl steps --team team-support --run lost-0007 --state unknown --json | grep -q unknown && break
  sleep 0.1
done
sleep 0.2
ctl export --run team-support/lost-0007 --out "$work/unknown.tar.gz" > /dev/null
# Every tamper case, refused by the three verifiers with its reason, on
# packs of format 5: many edit proofs.jsonl's paths (format 6's multiproof
# cases are in the corpus of tests/strict_packs.py).
ctl export --run team-code/run-0003 --pack-format 5 --out "$work/run5.tar.gz" --since "$work/old.note" > /dev/null
ctl export --seq 5:40 --pack-format 5 --out "$work/seq5.tar.gz" > /dev/null
ctl export --team team-data --from 2020-01-01T00:00:00Z --to 2100-01-01T00:00:00Z --pack-format 5 \
  --out "$work/team5.tar.gz" > /dev/null
ctl export --run team-support/lost-0007 --pack-format 5 --out "$work/unknown5.tar.gz" > /dev/null
mkdir "$work/tamper"
/usr/bin/python3 "$root/tests/pack_tamper_test.py" "$build/cmd/ledgerctl" "$root/export/verify/python/verify_pack.py" \
  "$work/run5.tar.gz" "$work/vkey" "$work/data/signing.key" "$work/other.key" "$work/tamper" \
  "$work/seq5.tar.gz" "$work/team5.tar.gz" "$work/unknown5.tar.gz"
echo "packs: verified by verify_pack.py, ledgerctl and ledger-verify; tampering and a wrong key refused by all three"
