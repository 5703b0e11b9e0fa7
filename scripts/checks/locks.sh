#!/usr/bin/env bash
# Every lock goes through util/sync (ledger::sync::Mutex, MutexLock and
# CondVar, util/sync/mutex.h): clang's -Wthread-safety proves what their
# annotations say, and ThreadSanitizer sees them. Refused in every tracked
# .cc and .h file but util/sync/mutex.h itself:
#   absl::Mutex, absl::CondVar and their locks: Debian's Abseil is built
#     without TSan's annotations, so TSan takes each section for a race;
#   std::mutex, std::recursive_mutex, std::timed_mutex,
#     std::recursive_timed_mutex, std::shared_mutex, std::shared_timed_mutex,
#     std::condition_variable and std::condition_variable_any: locks no
#     annotation is checked against.
# Usage: scripts/checks/locks.sh [SOURCE_DIR]   exit 0 when none is found, 1 naming each one
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
banned='(absl::(Mutex|CondVar|MutexLock|ReaderMutexLock|WriterMutexLock|ReleasableMutexLock)|std::(mutex|recursive_mutex|timed_mutex|recursive_timed_mutex|shared_mutex|shared_timed_mutex|condition_variable|condition_variable_any))\b'
if hits=$(git -C "$root" grep -n -E "$banned" -- '*.cc' '*.h' ':!util/sync/mutex.h'); then
  echo "$hits"
  echo "FAIL: a lock outside util/sync; use ledger::sync::Mutex, MutexLock and CondVar (util/sync/mutex.h)"
  exit 1
fi
echo "locks: every lock goes through util/sync"
