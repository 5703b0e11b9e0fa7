#!/usr/bin/env bash
# clang-tidy (the checks of .clang-tidy) over the product's sources and tests, with the
# compile commands of BUILD_DIR (CMAKE_EXPORT_COMPILE_COMMANDS).
#   scripts/tidy.sh BUILD_DIR [BASE]   the .cc files changed since BASE (default: main), and
#                                      those beside a changed .h
#   scripts/tidy.sh BUILD_DIR --all    every source file of the build
# A finding in the repository's own files fails the run (WarningsAsErrors).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
mode=${2:-main}
sources=$(python3 -c '
import json, sys
root = sys.argv[1]
for e in json.load(open(sys.argv[2] + "/compile_commands.json")):
    f = e["file"]
    # bench/ (measurement harnesses, not the product) is left out.
    if f.startswith(root + "/") and "/build" not in f[len(root):] and not f.startswith(root + "/bench/"):
        print(f[len(root) + 1:])' "$root" "$build" | sort -u)
if [ "$mode" != "--all" ]; then
  base=$(git -C "$root" merge-base "$mode" HEAD)
  changed=$(git -C "$root" diff --name-only "$base" -- '*.cc' '*.h' | sed 's/\.h$/.cc/' | sort -u)
  sources=$(comm -12 <(echo "$sources") <(echo "$changed"))
fi
[ -n "$sources" ] || { echo "tidy: nothing to check"; exit 0; }
echo "tidy: $(echo "$sources" | wc -l) files"
cd "$root"
echo "$sources" | xargs -P "${LEDGER_JOBS:-$(nproc)}" -n 1 clang-tidy -p "$build" --quiet
echo "tidy: OK"
