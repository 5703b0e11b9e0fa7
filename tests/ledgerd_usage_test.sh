#!/usr/bin/env bash
# ledgerd run with nothing at all prints a short usage on stderr (what
# --data is, the flags everyone needs, where --help is) and exits 2, with
# nothing on stdout and no data directory made (issue 38: it printed a
# start_failed line about --data).
# Usage: ledgerd_usage_test.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$build/cmd/ledgerd" > out 2> err
rc=$?
cat > want <<'TEXT'
usage: ledgerd --data DIR [--listen HOST:PORT] [--http-listen HOST:PORT] [options]

  --data DIR             the ledger's data directory: its store and signing key (created if missing)
  --listen HOST:PORT     the gRPC address (default 127.0.0.1:7420; port 0 picks a free port)
  --http-listen H:P      the dashboard, /metrics and health (default 127.0.0.1:7421)
  --tls-cert F --tls-key F --client-ca F --policy F
                         mutual TLS, to serve beyond this machine (without them: plain text on loopback)

For example: ledgerd --data /var/lib/ledger
Every flag: ledgerd --help. The manual: docs/operating.md.
TEXT
if [ "$rc" != 2 ] || ! cmp -s err want || [ -s out ] || [ -n "$(ls -A | grep -v '^\(out\|err\|want\)$')" ]; then
  echo "FAIL: ledgerd alone: exit $rc (want 2), stderr:"
  cat err
  diff want err
  exit 1
fi
echo "ledgerd alone: exit 2 and the short usage"
echo PASS
