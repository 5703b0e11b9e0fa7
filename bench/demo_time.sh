#!/usr/bin/env bash
# How long `scripts/setup.sh demo` takes a new user: a clean clone of this
# tree and an empty compiler cache (cold), then the same command again
# (warm), each with --no-keep so that it ends when the demo does. The
# packages are taken as installed (install them first with
# `scripts/setup.sh demo --no-keep`); with --packages, the demo's package
# list is also installed into a new Debian 12 (debootstrap, minbase) and
# timed there, which is what a fresh machine pays before the build.
#
# Prints one line per phase as setup.sh prints it, and the totals.
# Usage: bench/demo_time.sh [--packages | --packages-only]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "${1:-}" != "--packages-only" ]; then
  git clone -q "$root" "$work/tree"
  # Uncommitted changes of this tree go along, so that what is measured is what is here.
  (cd "$root" && git diff HEAD) | (cd "$work/tree" && git apply --allow-empty)
  export CCACHE_DIR="$work/ccache"

  # The wall time, and the CPU time (user + system, all processes): on a
  # machine that runs other work beside it, CPU time / cores is what the
  # command would take alone.
  run() {
    local started=$SECONDS cpu
    local TIMEFORMAT='%U %S'
    cpu=$( { time (cd "$work/tree" && scripts/setup.sh demo --no-keep > "$work/$1.out" 2>&1); } 2>&1) ||
      { tail -n 30 "$work/$1.out"; echo "FAIL: the $1 demo"; exit 1; }
    local took=$((SECONDS - started))
    cpu=$(awk '{printf "%.0f", $1 + $2}' <<< "$cpu")
    grep '^setup: ' "$work/$1.out" | sed "s/^/$1: /"
    echo "$1: the whole command took $took s, $cpu s of CPU ($(nproc) cores: at least $((cpu / $(nproc))) s alone)"
    eval "$1=$took"
  }
  run cold
  run warm
  grep -qE '^UNKNOWN\(!\) +run-0007 ' "$work/warm.out" || { echo "FAIL: the demo's table shows no unknown step"; exit 1; }
  echo "demo: cold ${cold} s, warm ${warm} s (2 cores: $(nproc) here)"
fi

[ "${1:-}" = "--packages" ] || [ "${1:-}" = "--packages-only" ] || exit 0
# The packages, on a Debian 12 with nothing installed: what the demo's
# install_missing does there, timed.
command -v debootstrap > /dev/null || { echo "--packages: debootstrap is not installed"; exit 1; }
# The archive this machine's apt uses (its first URIs line), and its sources for the new system.
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources | head -n 1)
[ -n "$mirror" ] || { echo "--packages: no URIs line in /etc/apt/sources.list.d/debian.sources"; exit 1; }
started=$SECONDS
debootstrap --variant=minbase bookworm "$work/debian" "$mirror" > "$work/debootstrap.out" 2>&1 ||
  { tail "$work/debootstrap.out"; exit 1; }
echo "packages: a minimal Debian 12 in $((SECONDS - started)) s (not part of the demo's time)"
packages=$(bash -c 'source <(sed -n "/^DEMO_PACKAGES=(/,/^)/p" "$1"); echo "${DEMO_PACKAGES[@]}"' _ "$root/scripts/setup.sh")
mount --bind /proc "$work/debian/proc"
trap 'umount "$work/debian/proc" 2> /dev/null; rm -rf "$work"' EXIT
rm -f "$work/debian/etc/apt/sources.list"
cp /etc/apt/sources.list.d/debian.sources "$work/debian/etc/apt/sources.list.d/"
started=$SECONDS
chroot "$work/debian" apt-get update -q > /dev/null
# shellcheck disable=SC2086
chroot "$work/debian" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $packages \
  > "$work/apt.out" 2>&1 || { tail "$work/apt.out"; exit 1; }
installed=$(grep -c '^Setting up ' "$work/apt.out" || true)
size=$(chroot "$work/debian" du -sm /usr | cut -f1)
echo "packages: the demo's $installed packages installed in $((SECONDS - started)) s; /usr holds ${size} MB"
