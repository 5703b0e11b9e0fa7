#!/usr/bin/env bash
# Builds the ledger's container image (deploy/Dockerfile) with podman, or
# with docker where podman is missing and a docker daemon answers. The image
# holds ledgerd, ledgerctl, ledger-verify and the witness, ledger-witness
# (run it with --entrypoint /usr/local/bin/ledger-witness).
#
#   scripts/build-image.sh [TAG]
#       compiles in the image's Debian 12 build stage; ccache keeps its
#       objects in a cache mount between builds, so a rebuild after a small
#       change compiles only what changed. Needs a debian:12 image: when
#       there is none and none can be pulled (no registry reachable), one
#       is made with debootstrap --variant=minbase bookworm (as root) and
#       imported as debian:12.
#   scripts/build-image.sh --prebuilt BUILD_DIR [TAG]
#       packs the binaries already built in BUILD_DIR on this Debian 12
#       machine (deploy/collect-runtime.sh): nothing is compiled and no base
#       image is needed. For tests and quick local images.
#
# TAG defaults to evidence-ledger:0.1.0. Prints the image's size last.
# With podman, deploy/podman/containers.conf holds its settings unless
# CONTAINERS_CONF names others. Builds use the host's network (--network
# host), so that apt in the build stage reaches Debian's archive.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

prebuilt=""
if [ "${1:-}" = --prebuilt ]; then
  [ $# -ge 2 ] || { echo "usage: $0 [--prebuilt BUILD_DIR] [TAG]" >&2; exit 2; }
  prebuilt=$(cd "$2" && pwd)
  shift 2
fi
[ $# -le 1 ] || { echo "usage: $0 [--prebuilt BUILD_DIR] [TAG]" >&2; exit 2; }
tag=${1:-evidence-ledger:0.1.0}

if command -v podman > /dev/null; then
  engine=podman
  # An absolute path: podman's helper processes run in other directories.
  CONTAINERS_CONF=$(realpath "${CONTAINERS_CONF:-$root/deploy/podman/containers.conf}")
  export CONTAINERS_CONF
elif command -v docker > /dev/null && docker info > /dev/null 2>&1; then
  engine=docker
  export DOCKER_BUILDKIT=1  # for the cache mount
else
  echo "build-image: neither podman nor a running docker was found (scripts/setup.sh installs podman)" >&2
  exit 1
fi

# debian:12, pulled, or made with debootstrap where no registry answers.
ensure_base() {
  "$engine" image inspect debian:12 > /dev/null 2>&1 && return 0
  timeout 120 "$engine" pull docker.io/library/debian:12 > /dev/null 2>&1 && return 0
  [ "$(id -u)" = 0 ] || { echo "build-image: making debian:12 with debootstrap needs root" >&2; exit 1; }
  command -v debootstrap > /dev/null || { echo "build-image: no debian:12 image and no debootstrap" >&2; exit 1; }
  echo "build-image: no registry answered; making debian:12 with debootstrap"
  local dir
  dir=$(mktemp -d)
  debootstrap --variant=minbase bookworm "$dir/rootfs" http://deb.debian.org/debian > "$dir/debootstrap.log" 2>&1 ||
    { tail -20 "$dir/debootstrap.log"; rm -rf "$dir"; exit 1; }
  rm -f "$dir"/rootfs/var/cache/apt/archives/*.deb
  tar -C "$dir/rootfs" --numeric-owner -c . | "$engine" import - debian:12 > /dev/null
  rm -rf "$dir"
}

# The context of the prebuilt stage: runtime.tar, every file root's but the
# data directory, which is 10001's (as it is when collect-runtime.sh runs as
# root in the build stage), whoever runs this.
prebuilt_context() {
  local tree=$1/tree out=$1/context
  mkdir -p "$out"
  "$root/deploy/collect-runtime.sh" "$prebuilt" "$tree"
  local tar_flags=(--sort=name --mtime=@0 --numeric-owner -C "$tree")
  tar "${tar_flags[@]}" --owner=0 --group=0 --exclude=./var/lib/ledger -cf "$out/runtime.tar" .
  tar "${tar_flags[@]}" --owner=10001 --group=10001 --no-recursion -rf "$out/runtime.tar" ./var/lib/ledger
}

if [ -n "$prebuilt" ]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  prebuilt_context "$work"
  no_layers=()  # podman keeps no intermediate image of the 80 MB tree
  [ "$engine" = docker ] || no_layers=(--layers=false)
  "$engine" build --network host "${no_layers[@]}" -f "$root/deploy/Dockerfile" --build-arg RUNTIME_FROM=prebuilt \
    -t "$tag" "$work/context"
else
  ensure_base
  # RUNTIME_FROM given although it is the default: podman 4.3 finds the
  # stages a build needs from the build arguments given, not the defaults.
  "$engine" build --network host -f "$root/deploy/Dockerfile" --build-arg RUNTIME_FROM=build -t "$tag" "$root"
fi
size=$("$engine" image inspect --format '{{.Size}}' "$tag")
echo "image $tag: $((size / 1000000)) MB"
