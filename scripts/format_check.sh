#!/usr/bin/env bash
# Checks C++ formatting against .clang-format (clang-format 14).
#   scripts/format_check.sh [BASE]   the lines changed since BASE (default: main), staged or not
#   scripts/format_check.sh --all    every tracked .cc and .h file, whole
# Prints the diff that would fix them; exits 1 when there is one.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--all" ]; then
  fixes=$(git ls-files '*.cc' '*.h' | while read -r f; do
    clang-format --style=file "$f" | diff -u --label "a/$f" --label "b/$f" "$f" - || true
  done)
else
  base=$(git merge-base "${1:-main}" HEAD)
  fixes=$(git diff -U0 --no-color "$base" -- '*.cc' '*.h' | clang-format-diff -p1 -style=file)
fi
if [ -n "$fixes" ]; then
  printf '%s\n' "$fixes"
  echo "FAIL: not formatted as .clang-format says; the diff above fixes it"
  exit 1
fi
echo "format: OK"
