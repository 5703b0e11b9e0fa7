#!/bin/sh
# Builds the TypeScript client (tsc, strict, into dist/), typechecks and
# compiles its tests and the README's example (into test-out/), and runs the
# tests with Node's test runner against BUILD_DIR/cmd/ledgerd.
# Usage: clients/typescript/test.sh BUILD_DIR [TEST_FILE...]   (npm ci first)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: test.sh BUILD_DIR [TEST_FILE...]}" && pwd)
shift
cd "$here"
if [ ! -d node_modules ]; then
  echo "clients/typescript: no node_modules: run 'npm ci' in clients/typescript (scripts/setup.sh does)" >&2
  exit 1
fi
npm run --silent build
rm -rf test-out
node_modules/.bin/tsc -p test/tsconfig.json
if [ $# -eq 0 ]; then
  set -- test-out/test/*.test.js
fi
LEDGER_BUILD="$build" exec node --test "$@"
