#!/usr/bin/env bash
# The programs' --help (issue 38): ledgerd's flags under the headings of
# their groups, then examples; on stdout, exit 0.
# Usage: cli_help_test.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# ledgerd --help: exit 0, stdout only, each group's heading on a line of
# its own, a flag of each group under it, and the examples.
rc=0
"$build/cmd/ledgerd" --help > "$work/out" 2> "$work/err" || rc=$?
[ "$rc" = 0 ] && [ ! -s "$work/err" ] || fail "ledgerd --help: exit $rc (want 0), stderr: $(cat "$work/err")"
[ "$(head -1 "$work/out")" = "usage: ledgerd --data DIR [--listen HOST:PORT] [--http-listen HOST:PORT] [options]" ] ||
  fail "ledgerd --help: first line: $(head -1 "$work/out")"
for group in "The store and the log:/--data" "Ports:/--listen" "TLS and access:/--tls-cert" "Limits:/--rate-per-identity" \
  "Replication:/--replication" "Witnesses:/--witness-policy" "Backups and exports:/--backup-root" \
  "The config file and this help:/--config"; do
  heading=${group%%/*} flag=${group#*/}
  # The heading, and the flag as the first line after it.
  next=$(grep -A1 -xF "$heading" "$work/out" | sed -n 2p)
  [[ "$next" == "  $flag (default: "* ]] || fail "ledgerd --help: '$heading' not followed by $flag: '$next'"
done
grep -qxF "Examples:" "$work/out" || fail "ledgerd --help: no Examples:"
[ "$(grep -c '^    ledgerd --' "$work/out")" -ge 3 ] || fail "ledgerd --help: fewer than 3 examples"
[ "$failures" = 0 ] && echo "ledgerd --help: the groups' headings, each with its first flag, and examples"

[ "$failures" = 0 ] || { echo "$failures failures"; exit 1; }
echo PASS
