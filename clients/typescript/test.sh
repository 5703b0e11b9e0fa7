#!/bin/sh
# Builds the TypeScript client (tsc, strict, into dist/), typechecks and
# compiles its tests and the example its README shows (into test-out/), and
# runs the tests with Node's test runner against BUILD_DIR/cmd/ledgerd.
# Usage: clients/typescript/test.sh BUILD_DIR [--build-only|--run-only] [TEST_FILE...]   (npm ci first)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: test.sh BUILD_DIR [--build-only|--run-only] [TEST_FILE...]}" && pwd)
shift
mode=all
case "${1:-}" in --build-only|--run-only) mode=${1#--}; shift ;; esac
cd "$here"
if [ ! -d node_modules ]; then
  echo "clients/typescript: no node_modules: run 'npm ci' in clients/typescript (scripts/setup.sh does)" >&2
  exit 1
fi
if [ "$mode" != run-only ]; then
  npm run --silent build
  rm -rf test-out
  node_modules/.bin/tsc -p test/tsconfig.json
fi
[ "$mode" != build-only ] || exit 0
[ $# -gt 0 ] || set -- test-out/test/*.test.js
LEDGER_BUILD="$build" exec node --test "$@"
