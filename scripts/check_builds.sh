#!/usr/bin/env bash
# The builds beyond the gcc one, each a clang tree of its own under BUILD_DIR
# (ccache shared with it), each run on unit tests (the gtest binaries beside
# each library), each building only what it runs:
#
#   asan  AddressSanitizer and UndefinedBehaviorSanitizer, on every unit test
#         (CTest label "unit"); the tree also builds ledgerd, ledgerctl and
#         ledger-verify, so the whole product goes through clang's
#         -Wthread-safety -Werror=thread-safety
#   tsan  ThreadSanitizer, on the unit tests of the libraries that run
#         threads (label "concurrent_unit": ledger_test(NAME CONCURRENT ...))
#
# Both are -O1 without debug information (a sanitizer's report still names
# every function of its stack) and unity builds (each library's sources
# compiled as one file, 16 at most: its headers parsed once); they build in
# well under the time of -O2 -g file by file (docs/building.md has the
# figures).
#
# A finding fails the run (halt_on_error, -fno-sanitize-recover); nothing
# is suppressed (TSan only ignores intercepted calls made inside
# uninstrumented third-party libraries: ignore_noninstrumented_modules).
# Usage: scripts/check_builds.sh BUILD_DIR [asan|tsan]...   (default: both)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "$1" && cd "$1" && pwd)
shift
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(asan tsan)
jobs=${LEDGER_JOBS:-$(nproc)}

# The analysis is on: a write to a guarded member without its mutex fails to compile.
probe() {
  local out
  if out=$(clang++ -std=c++20 -fsyntax-only -Wthread-safety -Werror=thread-safety -I "$root" \
             "$root/scripts/checks/unguarded_write.cc" 2>&1); then
    echo "FAIL: clang accepted an unguarded write to a ABSL_GUARDED_BY member"
    exit 1
  fi
  if ! grep -q "writing variable 'value' requires holding mutex 'c.mu' exclusively" <<< "$out"; then
    echo "$out"
    echo "FAIL: clang refused the unguarded write for another reason"
    exit 1
  fi
  echo "thread-safety: an unguarded write is refused"
  # The analysis and TSan see util/sync's locks only: no absl::Mutex (the
  # system's Abseil has no TSan annotations), no std::mutex or its kin.
  "$root/scripts/checks/locks.sh" "$root"
}

run() {
  local kind=$1 sanitize targets label skip='^$'
  case "$kind" in
    asan) sanitize=address,undefined; targets=(unit_tests ledgerd ledgerctl ledger-verify); label=unit ;;
    # gRPC's libraries are not built with TSan: their own synchronization
    # is invisible to it, so a test that serves gRPC in-process reports
    # races inside gRPC's inline headers. Those suites run under asan only
    # (the query and export services' tests are not "concurrent" for that).
    tsan) sanitize=thread; targets=(concurrent_tests); label=concurrent_unit
          skip='^E2eTest\.|^Metrics\.FiguresFromARealServer$' ;;
    *) echo "unknown build: $kind (asan or tsan)" >&2; exit 2 ;;
  esac
  local out="$build/$kind"
  local started=$SECONDS
  CC=clang CXX=clang++ cmake -S "$root" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 \
    -DLEDGER_SANITIZE="$sanitize" > /dev/null
  if ! cmake --build "$out" -j "$jobs" --target "${targets[@]}" -- -k 0 > "$out/build.log" 2>&1; then
    grep -E 'error|FAILED' "$out/build.log" | head -40
    echo "FAIL: the $kind build; the log is $out/build.log"
    exit 1
  fi
  local built=$SECONDS
  # Only the unit tests; the suites that start whole processes run in the gcc tree.
  if ! (cd "$out" &&
        ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
        TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1" \
        ctest -L "$label" -E "$skip" -j "$jobs" --timeout 600 --output-on-failure > "$out/test.log" 2>&1); then
    grep -E 'tests passed|Failed|\*\*\*' "$out/test.log" | head -40
    echo "FAIL: the unit tests under $kind; the log is $out/test.log"
    exit 1
  fi
  # A label that matches nothing runs nothing, and ctest says so with exit 0.
  if grep -q "No tests were found" "$out/test.log" || ! grep -q "tests passed" "$out/test.log"; then
    echo "FAIL: no unit test ran under $kind (label $label); the log is $out/test.log"
    exit 1
  fi
  echo "$kind: built in $((built - started)) s, $(grep -o "[0-9]*% tests passed.*" "$out/test.log" || true)," \
       "tests ran in $((SECONDS - built)) s"
}

probe
for kind in "${kinds[@]}"; do run "$kind"; done
