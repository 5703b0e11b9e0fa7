#!/usr/bin/env bash
# Stream ingest with projections off and on (bench/ratio.sh).
# Usage: bench/projection_ratio.sh BUILD_DIR [PAIRS] [SECONDS]
exec "$(dirname "$0")/ratio.sh" "${1:-build}" projections "${2:-3}" "${3:-10}"
