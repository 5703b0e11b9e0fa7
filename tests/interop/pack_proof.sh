#!/usr/bin/env bash
# ledgerctl pack-proof (CONTRACT section 7, "Shared inclusion proofs (format
# 6)"): packs of format 7 (multiproofs, as format 6) exported by a real ledgerd (a run, a seq range, a
# team window), and for several seqs of each the entry's RFC 9162 proof
# derived from the pack alone, as tlog-proof and as JSON, each checked by
# Go's sumdb note and tlog (pack_proof.go). The tlog-proof is the one the
# ledger serves for the seq at the pack's size (ledgerctl prove). Proofs
# tampered with are refused by Go; a seq the pack does not hold and a pack
# whose multiproof was tampered with are refused by pack-proof. A format 5
# pack gives the same proofs from its proofs.jsonl.
# Usage: pack_proof.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=tests/ledgerd.sh
source "$root/tests/ledgerd.sh"

start_ledgerd --origin pack-proof.test/log --checkpoint-interval-ms 20 \
  --unknown-grace-ms 200 --sweep-interval-ms 50
t0=$(date -u +%Y-%m-%dT%H:%M:%SZ)
append_demo_runs
ctl checkpoint --at-least 20 > /dev/null
t1=$(date -u -d '+2 sec' +%Y-%m-%dT%H:%M:%SZ)
ctl vkey > "$work/vkey"
ctl export --run team-support/run-0007 --out "$work/run.tar.gz" > /dev/null
ctl export --seq 3:20 --out "$work/seq.tar.gz" > /dev/null
ctl export --team team-code --from "$t0" --to "$t1" --out "$work/team.tar.gz" > /dev/null
ctl export --run team-support/run-0007 --pack-format 5 --out "$work/run5.tar.gz" > /dev/null

export GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS='' GOCACHE="$work/gocache"
go build -o "$work/pack_proof" "$here/pack_proof.go"

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pack_proof() { "$build/cmd/ledgerctl" pack-proof --vkey "$work/vkey" "$@"; }

# check PACK FORMAT: every proof of the seqs drawn from PACK checked by Go,
# and the tlog-proof byte for byte the ledger's own at the pack's size.
check() {
  local pack=$1 format=$2 name
  name=$(basename "$pack" .tar.gz)
  local dir="$work/$name"
  mkdir -p "$dir"
  tar -xOzf "$pack" evidence/checkpoint > "$dir/checkpoint"
  tar -xOzf "$pack" evidence/entries.jsonl > "$dir/entries.jsonl"
  [ "$(tar -xOzf "$pack" evidence/manifest.json | sed 's/.*"format":\([0-9]*\).*/\1/')" = "$format" ] ||
    fail "$name: not a pack of format $format"
  if [ "$format" -ge 6 ]; then
    tar -tzf "$pack" > "$dir/members"
    grep -qx evidence/multiproof.txt "$dir/members" || fail "$name: no multiproof.txt"
  fi
  local size seqs proofs=()
  size=$(sed -n 2p "$dir/checkpoint")
  mapfile -t seqs < <(sed 's/.*"seq":\([0-9]*\).*/\1/' "$dir/entries.jsonl")
  local n=${#seqs[@]}
  [ "$n" -ge 4 ] || fail "$name: $n entries"
  for i in 0 1 $((n / 2)) $((n - 2)) $((n - 1)); do
    local s=${seqs[$i]}
    pack_proof "$pack" --seq "$s" --format tlog-proof > "$dir/$s.tlog" || fail "$name: pack-proof --seq $s --format tlog-proof"
    pack_proof "$pack" --seq "$s" --format json > "$dir/$s.json" || fail "$name: pack-proof --seq $s --format json"
    ctl prove --seq "$s" --size "$size" --format tlog-proof > "$dir/$s.served"
    cmp -s "$dir/$s.tlog" "$dir/$s.served" ||
      fail "$name: seq $s: pack-proof's tlog-proof is not the ledger's at size $size: $(diff "$dir/$s.tlog" "$dir/$s.served" | head -5)"
    proofs+=("$dir/$s.tlog" "$dir/$s.json")
  done
  local out
  if out=$("$work/pack_proof" "$work/vkey" "$dir/checkpoint" "$dir/entries.jsonl" "${proofs[@]}"); then
    echo "$name: $(grep -c 'proven in tree size' <<< "$out") proofs checked by Go's tlog.CheckRecord"
  else
    fail "$name: $out"
  fi
}

check "$work/run.tar.gz" 7
check "$work/seq.tar.gz" 7
check "$work/team.tar.gz" 7
check "$work/run5.tar.gz" 5

# The JSON form: exactly the keys and order the contract gives; the same
# proof from the pack of format 5 when both are of one checkpoint.
dir="$work/run"
s=$(sed -n '2s/.*"seq":\([0-9]*\).*/\1/p' "$dir/entries.jsonl")
size=$(sed -n 2p "$dir/checkpoint")
leaf_hash=$(sed -n 2p "$dir/entries.jsonl" | tr -d '\n' |
  /usr/bin/python3 -c 'import hashlib,sys; print(hashlib.sha256(b"\0" + sys.stdin.buffer.read()).hexdigest())')
grep -qx "{\"seq\":$s,\"tree_size\":$size,\"leaf_hash\":\"$leaf_hash\",\"inclusion\":\\[.*\\]}" "$dir/$s.json" ||
  fail "the JSON proof of seq $s: $(cat "$dir/$s.json")"
if cmp -s "$dir/checkpoint" "$work/run5/checkpoint"; then
  cmp -s "$dir/$s.json" "$work/run5/$s.json" || fail "seq $s: the proofs of the format 6 and format 5 packs differ"
fi
# Without --format, the proof is printed as tlog-proof (section 7).
pack_proof "$work/run.tar.gz" --seq "$s" > "$work/default.out" || fail "pack-proof --seq $s without --format"
cmp -s "$work/default.out" "$dir/$s.tlog" ||
  fail "pack-proof --seq $s without --format does not print tlog-proof: $(head -c 80 "$work/default.out")"

# refused NAME WANT PROOF: Go refuses the proof, saying WANT.
refused() {
  local out
  if out=$("$work/pack_proof" "$work/vkey" "$dir/checkpoint" "$dir/entries.jsonl" "$3"); then
    fail "$1: Go accepted it: $out"
  elif [ "$out" != "$3: $2" ]; then
    fail "$1: Go said: $out; expected: $3: $2"
  else
    echo "refused $1: $out"
  fi
}
# A hash of the path altered (its first base64 character).
awk 'NR == 3 { $0 = (substr($0, 1, 1) == "A" ? "B" : "A") substr($0, 2) } { print }' "$dir/$s.tlog" > "$work/t-path.tlog"
refused "a tlog-proof with a hash of its path altered" "seq $s: tlog.CheckRecord: invalid transparency proof" "$work/t-path.tlog"
# The proof of seq s presented for another entry of the pack.
other=$(sed -n '1s/.*"seq":\([0-9]*\).*/\1/p' "$dir/entries.jsonl")
sed "2s/^index .*/index $other/" "$dir/$s.tlog" > "$work/t-index.tlog"
refused "a tlog-proof moved to another seq" "seq $other: tlog.CheckRecord: invalid transparency proof" "$work/t-index.tlog"
# The path cut short.
sed '3d' "$dir/$s.tlog" > "$work/t-short.tlog"
refused "a tlog-proof without its first hash" "seq $s: tlog.CheckRecord: invalid transparency proof" "$work/t-short.tlog"
# The JSON form naming another leaf hash, and its path cut short.
sed "s/\"leaf_hash\":\"[0-9a-f]*\"/\"leaf_hash\":\"$(printf '%064d' 0)\"/" "$dir/$s.json" > "$work/t-leaf.json"
refused "a JSON proof naming another leaf hash" "seq $s: leaf_hash $(printf '%064d' 0), the entry's is $leaf_hash" "$work/t-leaf.json"
sed 's/"inclusion":\["[0-9a-f]*",/"inclusion":[/' "$dir/$s.json" > "$work/t-cut.json"
refused "a JSON proof without its first hash" "seq $s: tlog.CheckRecord: invalid transparency proof" "$work/t-cut.json"

# pack-proof refuses a seq the pack does not hold, and a pack whose
# multiproof does not lead to its checkpoint's root.
missing=$(($(sed -n '1s/.*"seq":\([0-9]*\).*/\1/p' "$dir/entries.jsonl") + 1))
while grep -q "\"seq\":$missing," "$dir/entries.jsonl"; do missing=$((missing + 1)); done
rc=0; out=$(pack_proof "$work/run.tar.gz" --seq "$missing" 2>&1) || rc=$?
if [ "$rc" = 0 ] || ! grep -q "pack-proof: seq $missing is not in the pack" <<< "$out"; then
  fail "a seq the pack does not hold: exit $rc: $out"
fi
# A hash of multiproof.txt changed, the manifest re-signed with the ledger's
# key (as its operator could).
repack=$root/export/verify/go/repack.py
/usr/bin/python3 "$repack" "$work/run.tar.gz" "$work/t-pack.tar.gz" --key "$work/data/signing.key" flip-hash:0
want="multiproof.txt: the entries and the multiproof lead to root $(/usr/bin/python3 "$repack" --root "$work/t-pack.tar.gz"), \
the checkpoint's is $(sed -n 3p "$dir/checkpoint" | base64 -d | od -An -tx1 -v | tr -d ' \n')"
rc=0; out=$(pack_proof "$work/t-pack.tar.gz" --seq "$s" 2>&1) || rc=$?
if [ "$rc" != 1 ] || ! grep -qF "$want" <<< "$out" || grep -q 'c2sp.org/tlog-proof' <<< "$out"; then
  fail "a pack whose multiproof.txt was changed and re-signed: exit $rc: $out; expected: $want"
fi
echo "a tampered pack: pack-proof exits $rc: $out"

[ "$failures" = 0 ] || { echo "$failures failures"; exit 1; }
echo "every proof ledgerctl pack-proof derived was checked by Go's tlog.CheckRecord; tampered proofs were refused"
