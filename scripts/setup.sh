#!/usr/bin/env bash
# The two ways in, for a fresh Debian 12 machine (as root) or a developer's:
#
#   scripts/setup.sh demo [--no-keep]
#                           install what the demo needs, build what it runs, run
#                           it, and keep its ledger up until Ctrl-C (--no-keep:
#                           stop it at the end)
#   scripts/setup.sh test   install what is missing, build with -Werror, run every test,
#                           then the sanitizer builds' unit tests (scripts/check_builds.sh)
#   scripts/setup.sh build [TARGET...]
#                           install what is missing, build (all, or the targets named:
#                           the container image's build stage)
#   scripts/setup.sh packages
#                           install what is missing, nothing else
#
# Idempotent: packages already installed are not touched, the build is
# incremental. Only Debian's package archive is used.
set -euo pipefail
cd "$(dirname "$0")/.."

# What the demo needs: the compiler and the libraries the product links,
# Go and x/mod for the demo's offline check with Go's sumdb, curl.
DEMO_PACKAGES=(
  g++ cmake ninja-build pkg-config ccache git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  librocksdb-dev libsodium-dev nlohmann-json3-dev libarchive-dev libdeflate-dev libssl-dev libjemalloc-dev libpq-dev
  libcurl4-openssl-dev
  libp11-kit-dev
  libabsl-dev libbenchmark-dev libgtest-dev
  golang-go golang-golang-x-mod-dev
  python3 curl
)
# What the tests need besides: PostgreSQL servers, SoftHSM2 as a PKCS#11
# token, the Go client's gRPC, Python's grpcio and cryptography, headless
# Chromium, nginx as the trusted proxy in front of the dashboard
# (auth_request and proxy_ssl_certificate), clang for the sanitizer trees,
# podman for the image, Node for the TypeScript client, OpenSSL's command
# (`openssl ts -reply` is the time-stamping authority of the TSA tests).
TEST_PACKAGES=(
  postgresql-15 softhsm2 openssl libmicrohttpd-dev libcpp-httplib-dev
  golang-google-grpc-dev golang-google-protobuf-dev protoc-gen-go protoc-gen-go-grpc
  python3-grpcio python3-protobuf python3-cryptography python3-yaml
  python3-pip python3-setuptools python3-wheel python3-venv
  chromium poppler-utils nginx-light clang clang-format
  podman runc debootstrap
)
# Node and npm from Debian, unless a Node with npm is already there
command -v npm > /dev/null || TEST_PACKAGES+=(nodejs npm)
# What the demo runs: the build builds these and what they link, nothing else.
DEMO_TARGETS=(ledgerd ledgerctl ledger-witness ledger-verify)

# install_missing PACKAGE...: those not installed yet, from Debian's archive.
install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
}

# build [ON|OFF [TARGET...]]: warnings as errors or not. The demo and the
# tests build the same tree with the same flags, so that one after the
# other compiles nothing again.
build() {
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLEDGER_WERROR="${1:-ON}" > /dev/null
  ninja -C build "${@:2}"
}

# phase NAME: prints how long the phase before it took (the test command's
# figures in docs/building.md come from these lines).
phase_started=$SECONDS
phase() {
  echo "setup: $1 took $((SECONDS - phase_started)) s"
  phase_started=$SECONDS
}

# npm_ci DIR: DIR's packages as its package-lock.json pins them, from the npm
# registry; again only when the lock file changed.
npm_ci() {
  [ "$1/node_modules/.package-lock.json" -nt "$1/package-lock.json" ] ||
    (cd "$1" && npm ci --no-audit --no-fund --loglevel=error)
}

# The TypeScript client's packages and its build.
typescript_client() {
  npm_ci clients/typescript && (cd clients/typescript && npm run --silent build)
}

case "${1:-}" in
  demo)
    install_missing "${DEMO_PACKAGES[@]}"
    build ON "${DEMO_TARGETS[@]}"
    phase "installing and the demo's build"
    exec scripts/demo.sh build "${@:2}"
    ;;
  build)
    install_missing "${DEMO_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
    build OFF "${@:2}"
    ;;
  packages)
    install_missing "${DEMO_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
    ;;
  test)
    install_missing "${DEMO_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
    # The OpenTelemetry SDK that tests/otlp_test.py sends spans with.
    npm_ci tests/otlp
    phase "installing"
    build ON
    typescript_client
    phase "the gcc build"
    (cd build && ctest --output-on-failure -j "$(nproc)" --timeout 900)
    phase "the tests"
    exec scripts/check_builds.sh build
    ;;
  *)
    echo "usage: $0 demo [--no-keep]|test|build [TARGET...]|packages" >&2
    exit 2
    ;;
esac
