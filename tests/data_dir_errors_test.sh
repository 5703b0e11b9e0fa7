#!/usr/bin/env bash
# A data directory ledgerd cannot use is a start_failed line naming --data and
# the path, with exit status 1: never an uncaught exception. As root, ledgerd
# runs as UID 10001 (the image's user) over a directory only root may read;
# otherwise (exit 77, skipped) the permission case cannot be made. A taken
# HTTP port fails the start before any ready line is printed.
# Usage: data_dir_errors_test.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"

# Expects ledgerd with the given flags to exit 1 with this start_failed message.
refused() {
  local want=$1
  shift
  "$@" --listen 127.0.0.1:0 --insecure > "$work/out" 2> "$work/err"
  local rc=$?
  [ "$rc" -eq 1 ] || { cat "$work/err"; fail "exit $rc, want 1: $*"; }
  grep -q "terminate called" "$work/err" && fail "an uncaught exception: $(cat "$work/err")"
  grep -qF "\"event\":\"start_failed\",\"msg\":\"$want\"" "$work/err" || { cat "$work/err"; fail "want: $want"; }
}

touch "$work/file"
refused "--data: Not a directory" "$build/cmd/ledgerd" --data "$work/file"

# An HTTP port that is taken: no ready line at all (a supervisor or a script
# waiting for "listening on" must not take a ledgerd that is about to exit).
/usr/bin/python3 -c 'import socket,sys,time
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); open(sys.argv[1],"w").write(str(s.getsockname()[1])); time.sleep(60)' \
  "$work/port" > /dev/null 2>&1 &
holder=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
"$build/cmd/ledgerd" --data "$work/taken" --listen 127.0.0.1:0 --http-listen "127.0.0.1:$(cat "$work/port")" \
  > "$work/out" 2> "$work/err"
rc=$?
kill "$holder"
[ "$rc" -eq 1 ] || fail "a taken HTTP port: exit $rc, want 1"
grep -q '"event":"start_failed"' "$work/err" || fail "a taken HTTP port: no start_failed: $(cat "$work/err")"
[ ! -s "$work/out" ] || fail "a taken HTTP port: ledgerd printed a ready line first: $(cat "$work/out")"
[ "$(id -u)" -eq 0 ] || { echo "data_dir_errors: not root, the permission cases skipped"; exit 77; }
mkdir -p "$work/root-only/data" "$work/closed"
chmod 700 "$work/root-only/data" "$work/closed"
chmod 755 "$work/root-only"
as_user=(setpriv --reuid 10001 --regid 10001 --clear-groups)
refused "--data: cannot read $work/root-only/data/latest-checkpoint: Permission denied" \
  "${as_user[@]}" "$build/cmd/ledgerd" --data "$work/root-only/data"
refused "--data: Permission denied" "${as_user[@]}" "$build/cmd/ledgerd" --data "$work/closed/data"
echo "data_dir_errors: OK"
