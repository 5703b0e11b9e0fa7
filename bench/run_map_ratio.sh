#!/usr/bin/env bash
# Stream ingest with the run-head map off and on, projections on, checkpoints
# every second as ledgerd signs them (bench/ratio.sh).
# Usage: bench/run_map_ratio.sh BUILD_DIR [PAIRS] [SECONDS]
exec "$(dirname "$0")/ratio.sh" "${1:-build}" run-map "${2:-3}" "${3:-10}" --projections=true
