#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (address and undefined-behaviour
# sanitizers) in BUILD_DIR/fuzz and runs each for SECONDS on a copy of its
# seed corpus (tests/fuzz/seeds/<name>). Exits non-zero on the first crash,
# leaving the crashing input in BUILD_DIR/fuzz/crashes.
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS=10] [TARGET...]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(mkdir -p "$1" && cd "$1" && pwd)
secs=${2:-10}
shift $(( $# >= 2 ? 2 : $# ))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_receipt fuzz_note fuzz_pack fuzz_witness)
out="$build/fuzz"
if [ ! -f "$out/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$out" -G Ninja -DLEDGER_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
fi
cmake --build "$out" --target "${targets[@]}" > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
mkdir -p "$out/crashes"
for t in "${targets[@]}"; do
  corpus=$(mktemp -d)
  cp "$root/tests/fuzz/seeds/${t#fuzz_}"/* "$corpus/"
  log="$out/$t.log"
  if ! "$out/tests/fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$out/crashes/$t-" "$corpus" > "$log" 2>&1; then
    tail -40 "$log"
    echo "FAIL: $t crashed; the input is in $out/crashes"
    rm -rf "$corpus"
    exit 1
  fi
  runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -1)
  echo "$t: ${runs:-no summary} in ${secs} s, corpus $(ls "$corpus" | wc -l) inputs, no crash"
  rm -rf "$corpus"
done
