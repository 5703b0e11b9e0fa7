#!/usr/bin/env bash
# The compile time of a few of the heaviest translation units under the
# flag sets the build trees choose between, alternated in rounds so that the
# machine's drift falls on every set alike; ccache is bypassed. Prints each
# set's median seconds per file and its ratio to the set it replaces (the
# last field: the index of that set). The figures of docs/building.md come from this script.
#
# Usage: bench/build_flags.sh BUILD_DIR [ROUNDS]   (BUILD_DIR: a configured
# gcc tree whose protoc outputs exist, e.g. after `ninja -C build ledger_proto_service`)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
rounds=${2:-3}
files=(ops/dashboard.cc ledger/rpc/service/service.cc ledger/format/runmap/runmap_test.cc)
common=(-I"$root" -I"$build/proto/proto" -I"$build/proto" -DNDEBUG -Wall -Wextra -Wno-unused-parameter -pthread
        -std=c++20 -DGTEST_HAS_PTHREAD=1)
san=(-Wthread-safety -fno-omit-frame-pointer -fno-sanitize-recover=all)
sets=(
  "g++|-O2 -g|0"
  "g++|-O2 -g1|0"
  "g++|-O2|0"
  "g++|-O1 -g1|1"
  "clang++|-O2 -g -fsanitize=address,undefined|4"
  "clang++|-O1 -fsanitize=address,undefined|4"
  "clang++|-O2 -g -fsanitize=thread|6"
  "clang++|-O1 -fsanitize=thread|6"
)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for i in "${!sets[@]}"; do
    IFS='|' read -r compiler flagtext _ <<< "${sets[$i]}"
    read -r -a flags <<< "$flagtext"
    extra=()
    [ "$compiler" = clang++ ] && extra=("${san[@]}")
    for f in "${files[@]}"; do
      start=$(date +%s.%N)
      "$compiler" "${common[@]}" "${extra[@]}" "${flags[@]}" -c "$root/$f" -o "$out/x.o"
      echo "$(date +%s.%N) - $start" | bc >> "$out/$i"
    done
  done
done
median() { sort -n "$out/$1" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for i in "${!sets[@]}"; do
  IFS='|' read -r compiler flagtext base <<< "${sets[$i]}"
  printf '%-8s %-36s median %6.2f s a file, %.2fx of set %d\n' "$compiler" "$flagtext" "$(median "$i")" \
    "$(echo "$(median "$i") / $(median "$base")" | bc -l)" "$base"
done
