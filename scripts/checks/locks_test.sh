#!/usr/bin/env bash
# scripts/checks/locks.sh on small trees of its own: each kind of lock it
# refuses, planted in a file, fails the check naming that file and line;
# util/sync's own wrappers, and util/sync/mutex.h itself, pass.
# Usage: scripts/checks/locks_test.sh SOURCE_DIR
set -euo pipefail
check=$(cd "${1:-$(dirname "$0")/../..}" && pwd)/scripts/checks/locks.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# A tree holding util/sync/mutex.h (which wraps std::mutex) and `file` with `line`.
tree() {
  local dir=$tmp/$1 file=$2 line=$3
  mkdir -p "$dir/util/sync" "$dir/$(dirname "$file")"
  printf 'class Mutex { std::mutex mu_; std::condition_variable cv_; };\n' > "$dir/util/sync/mutex.h"
  printf '#include "util/sync/mutex.h"\n%s\n' "$line" > "$dir/$file"
  git -C "$dir" init -q
  git -C "$dir" add -A
  echo "$dir"
}

n=0
for lock in 'std::mutex mu_;' 'std::recursive_mutex mu_;' 'std::shared_mutex mu_;' 'std::timed_mutex mu_;' \
            'std::recursive_timed_mutex mu_;' 'std::shared_timed_mutex mu_;' 'std::condition_variable cv_;' \
            'std::condition_variable_any cv_;' 'absl::Mutex mu_;' 'absl::MutexLock lock(&mu_);' 'absl::CondVar cv_;'; do
  n=$((n + 1))
  dir=$(tree "bad$n" ledger/x/x.h "  $lock")
  if out=$("$check" "$dir" 2>&1); then
    echo "FAIL: '$lock' passed the check"
    failures=$((failures + 1))
  elif ! grep -qF "ledger/x/x.h:2:  $lock" <<< "$out"; then
    echo "FAIL: '$lock' refused without naming ledger/x/x.h:2:"
    echo "$out"
    failures=$((failures + 1))
  fi
done
for good in 'sync::Mutex mu_;' 'sync::MutexLock lock(&mu_);' 'sync::CondVar cv_;' 'std::mutex_free_thing x;'; do
  n=$((n + 1))
  dir=$(tree "good$n" ledger/rpc/server/y.cc "  $good")
  if ! out=$("$check" "$dir" 2>&1); then
    echo "FAIL: '$good' was refused"
    echo "$out"
    failures=$((failures + 1))
  fi
done
[ "$failures" -eq 0 ] || exit 1
echo "locks_test: $n trees, each refused or passed as it should"
