#!/bin/sh
# Copies ledgerd, ledgerctl, ledger-verify (the offline verifier, for
# auditors), ledger-witness and ledger-monitor (the witness and the monitor
# an auditor runs) and every shared library they load (ldd), the
# dynamic loader included, into OUT as a root file system: what the
# runtime image holds, and nothing else (no shell). The data directory,
# var/lib/ledger, belongs to UID 10001 when this runs as root.
# Usage: deploy/collect-runtime.sh BUILD_DIR OUT
set -eu
build=$1
out=$2
mkdir -p "$out/usr/local/bin" "$out/etc"
for bin in ledgerd ledgerctl ledger-verify ledger-witness ledger-monitor; do
  install -m 0755 -s "$build/cmd/$bin" "$out/usr/local/bin/$bin"  # stripped: no debug info in the image
  # "libx.so => /path (addr)" and "/lib64/ld-linux-x86-64.so.2 (addr)"
  ldd "$build/cmd/$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r lib; do
    mkdir -p "$out$(dirname "$lib")"
    cp -L "$lib" "$out$lib"
  done
done
# The user the image runs as, for tools that look it up.
printf 'root:x:0:0:root:/:/nonexistent\nledger:x:10001:10001:evidence ledger:/var/lib/ledger:/nonexistent\n' > "$out/etc/passwd"
printf 'root:x:0:\nledger:x:10001:\n' > "$out/etc/group"
install -d -m 0700 "$out/var/lib/ledger"
[ "$(id -u)" != 0 ] || chown 10001:10001 "$out/var/lib/ledger"
