#!/usr/bin/env bash
# The HTTP client of two builds (e.g. the hand-written one and the one on
# libcurl), alternating (the machine's speed drifts between runs): each
# build's http_client_bench, GETs of 64 KiB and small POSTs against the
# one HTTP server on loopback, plain and HTTPS with client certificates.
# Prints each side's medians in requests per second, and the ratios new /
# base.
#
# Usage: bench/http_client.sh BASE NEW [PAIRS] [REQUESTS]
#   BASE, NEW: build directories holding bench/http_client_bench.
# e.g. git worktree add /tmp/base COMMIT && cmake -S /tmp/base -B /tmp/base/build -G Ninja \
#        -DCMAKE_BUILD_TYPE=RelWithDebInfo && ninja -C /tmp/base/build http_client_bench
#      bench/http_client.sh /tmp/base/build build 5 2000
set -euo pipefail
base=$1
new=$2
pairs=${3:-5}
requests=${4:-2000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# A CA, the server's certificate for 127.0.0.1 and a client's.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=bench-ca \
  -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
for who in server client; do
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$who" \
    -keyout "$dir/$who.key" -out "$dir/$who.csr" 2>/dev/null
  openssl x509 -req -in "$dir/$who.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 1 \
    -extfile <(printf 'subjectAltName=IP:127.0.0.1\n') -out "$dir/$who.pem" 2>/dev/null
done
for _ in $(seq "$pairs"); do
  "$base/bench/http_client_bench" --requests "$requests" --tls-dir "$dir" | sed 's/^/base /' >>"$dir/out"
  "$new/bench/http_client_bench" --requests "$requests" --tls-dir "$dir" | sed 's/^/new /' >>"$dir/out"
done
/usr/bin/python3 - "$dir/out" <<'PY'
import json, statistics, sys
runs = {"base": [], "new": []}
for line in open(sys.argv[1]):
    side, text = line.split(" ", 1)
    runs[side].append(json.loads(text))
out = {}
for key in runs["base"][0]:
    b = statistics.median(r[key] for r in runs["base"])
    n = statistics.median(r[key] for r in runs["new"])
    out[key] = {"base": b, "new": n, "ratio": round(n / b, 2)}
print(json.dumps({"pairs": len(runs["new"]), "requests_per_s": out}, indent=1))
PY
