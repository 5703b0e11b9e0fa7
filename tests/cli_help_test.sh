#!/usr/bin/env bash
# The programs' help (issue 38), on stdout with exit 0: ledgerd's flags
# under the headings of their groups, then examples; ledgerctl's commands
# one a line with the connection options, and each command's synopsis,
# flags and examples (ledgerctl help COMMAND, ledgerctl COMMAND --help).
# An unknown command is bad usage (exit 2), with the nearest named.
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

ctl=$build/cmd/ledgerctl
# expect WANT_EXIT WANT_STDOUT WANT_STDERR LEDGERCTL_ARGS...: the whole of both.
expect() {
  local want_rc=$1 want_out=$2 want_err=$3 rc=0
  shift 3
  "$ctl" "$@" > "$work/out" 2> "$work/err" || rc=$?
  if [ "$rc" != "$want_rc" ] || [ "$(cat "$work/out")" != "$want_out" ] || [ "$(cat "$work/err")" != "$want_err" ]; then
    fail "ledgerctl $*: exit $rc (want $want_rc), stdout:"
    cat "$work/out"
    echo "stderr:"
    cat "$work/err"
    diff <(echo "$want_out") "$work/out"
  else
    echo "ok: ledgerctl $*"
  fi
}

export_help=$(cat <<'TEXT'
ledgerctl export: write the evidence pack of a run, a seq range or a team's time window

usage: ledgerctl export (--run TEAM/RUN | --seq A:B | --team T --from RFC3339 --to RFC3339)
                        --out FILE [--since CHECKPOINT_FILE] [--allow-empty] [--pack-format 5|6|7|8|9] [--no-progress]

Options:
  --run (default: none)
      the run, as TEAM/RUN
  --seq (default: none)
      the range of seqs A:B (A <= seq < B)
  --team (default: none)
      the team of a time window (with --from and --to)
  --from (default: 0)
      the window's start, an RFC 3339 time
  --to (default: 0)
      the window's end, an RFC 3339 time
  --out (default: none)
      the pack to write (.tar.gz)
  --since (default: none)
      a file holding an earlier signed checkpoint: the pack proves consistency from it
  --allow-empty
      write the pack of a run or team window with no entry (it proves there is none); without it such an export fails, nothing written
  --pack-format (default: 9)
      8 (the latest: format 7, or 8 when the pack holds an erased entry, CONTRACT section 8), 7 (for verifiers that predate format 8; refused for a pack that holds an erased entry), 6 (for verifiers that predate format 7: its report does not say which keys signed and what vouches for the time) or 5 (a path per entry, for verifiers that predate format 6)
  --no-progress
      no progress line on stderr (shown only when stderr is a terminal)

Connection options (ledgerctl --help): --server, --shard-map, --shard, --tls-ca, --cert, --key, --tls-server-name, --insecure

Examples:
  ledgerctl export --run team-a/run-1 --out run-1.tar.gz
  ledgerctl export --team team-a --from 2026-01-01T00:00:00Z --to 2026-01-02T00:00:00Z --out day.tar.gz
TEXT
)
expect 0 "$export_help" "" help export
expect 0 "$export_help" "" export --help
expect 0 "$export_help" "" --server 127.0.0.1:1 export --run team-a/run-1 --help
expect 2 "" "ledgerctl: unknown command 'nosuch'" help nosuch
expect 2 "" "ledgerctl: unknown command 'exprot'; did you mean 'export'?" help exprot
expect 2 "" "ledgerctl: unknown command 'exprot'; did you mean 'export'?" exprot --run team-a/run-1
expect 2 "" "ledgerctl: unknown command 'verfy'; did you mean 'verify'?" verfy --help
expect 2 "" "ledgerctl: help: give one COMMAND" help export verify

# ledgerctl --help (and help alone): every command, one line each, then the
# connection options; each command's help has a synopsis and an example.
rc=0
"$ctl" --help > "$work/overview" 2> "$work/err" || rc=$?
[ "$rc" = 0 ] && [ ! -s "$work/err" ] || fail "ledgerctl --help: exit $rc (want 0), stderr: $(cat "$work/err")"
"$ctl" help > "$work/help" 2>&1 && cmp -s "$work/help" "$work/overview" || fail "ledgerctl help is not ledgerctl --help"
grep -qxF "Connection options:" "$work/overview" || fail "ledgerctl --help: no Connection options:"
grep -q '^  --server (default: 127.0.0.1:7420)$' "$work/overview" || fail "ledgerctl --help: no --server"
commands=$(sed -n '/^Commands:$/,/^$/p' "$work/overview" | sed -n 's/^  \([a-z-]*\)  .*/\1/p')
[ "$(echo "$commands" | wc -l)" = 25 ] || fail "ledgerctl --help: want 25 commands, got: $commands"
for c in $commands; do
  rc=0
  "$ctl" help "$c" > "$work/out" 2> "$work/err" || rc=$?
  [ "$rc" = 0 ] && [ ! -s "$work/err" ] && [ "$(head -1 "$work/out" | cut -d: -f1)" = "ledgerctl $c" ] &&
    grep -q "^usage: ledgerctl $c" "$work/out" && grep -q "^  ledgerctl .*$c" "$work/out" ||
    fail "ledgerctl help $c: exit $rc, stdout: $(cat "$work/out"), stderr: $(cat "$work/err")"
done
[ "$failures" = 0 ] && echo "ledgerctl --help: $(echo "$commands" | wc -l) commands, each with a synopsis and an example"
# ledgerctl alone: the same overview, on stderr, exit 2.
rc=0
"$ctl" > "$work/out" 2> "$work/err" || rc=$?
[ "$rc" = 2 ] && [ ! -s "$work/out" ] && cmp -s "$work/err" "$work/overview" ||
  fail "ledgerctl alone: exit $rc (want 2 and the overview on stderr)"

[ "$failures" = 0 ] || { echo "$failures failures"; exit 1; }
echo PASS
