#!/usr/bin/env bash
# A polite emitter's p99 alone and under a flood of 100-receipt batches from
# another identity held to --rate-per-identity 2000: tests/fairness_test.py's
# rounds (alone and flooded alternate, the flooder in its own process at
# the lowest CPU priority), with the flood of this target. Prints the test's
# per-round lines and one JSON line: the medians and their ratio. The
# test's own bound (2x) is not applied here.
# Usage: bench/fairness.sh BUILD_DIR [ROUNDS] [FLOOD_BATCH] [FLOOD_RATE]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-7}
out=$(FLOOD_BATCH=${3:-100} FLOOD_RATE=${4:-2000} /usr/bin/python3 "$(dirname "$0")/../tests/fairness_test.py" \
  "$build" --rounds "$rounds" 2>&1) || true
grep '^round: ' <<< "$out"
line=$(grep '^polite p99: ' <<< "$out") || { echo "$out" >&2; exit 1; }
/usr/bin/python3 - "$line" "${3:-100}" "${4:-2000}" <<'PY'
import json, re, sys
m = re.match(r"polite p99: alone ([\d.]+) ms, under flood ([\d.]+) ms", sys.argv[1])
alone, flooded = float(m.group(1)), float(m.group(2))
print(json.dumps({"flood_batch": int(sys.argv[2]), "rate_per_identity": int(sys.argv[3]),
                  "polite_p99_alone_ms": alone, "polite_p99_flooded_ms": flooded,
                  "ratio": round(flooded / alone, 2)}))
PY
