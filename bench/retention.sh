#!/usr/bin/env bash
# A retention pass and the disk it frees (CONTRACT section 9): ENTRIES
# entries over 120 simulated days (tests/util/retention_fill: the ledger
# itself, on an injected clock), then a pass at day 120 with acme keeping
# 30 days, the other teams 90 and team audit for good. Prints the store's
# bytes before and after (each entry's share), the entries pruned, and the
# pass's time, ROUNDS times on fresh stores.
# Usage: bench/retention.sh BUILD_DIR [ENTRIES] [ROUNDS]
set -euo pipefail
build=$(cd "$1" && pwd)
entries=${2:-1000000}
rounds=${3:-2}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'default 90d\nteam acme 30d\nteam audit forever\n' > "$work/policy"
for round in $(seq "$rounds"); do
  rm -rf "$work/data"
  "$build/tests/retention_fill" fill "$work/data" --entries "$entries" --days 120 > /dev/null
  before=$(du -sb "$work/data/db" | cut -f1)
  start=$(date +%s.%N)
  out=$("$build/tests/retention_fill" prune "$work/data" --policy "$work/policy" --day 120)
  end=$(date +%s.%N)
  after=$(du -sb "$work/data/db" | cut -f1)
  pruned=$(sed 's/.*"pruned":\([0-9]*\).*/\1/' <<< "$out")
  awk -v r="$round" -v n="$entries" -v p="$pruned" -v b="$before" -v a="$after" -v s="$start" -v e="$end" 'BEGIN {
    printf "round %d: %d entries, %d pruned (%.1f%%); store %.1f MB before (%.0f B an entry), %.1f MB after (%.1f%%, %.0f B an entry kept + %.0f B a pruned one left); pass %.1f s (%.0f entries pruned/s, compaction included)\n",
      r, n, p, 100 * p / n, b / 1e6, b / n, a / 1e6, 100 * a / b, b / n, (a - b / n * (n - p)) / p, e - s, p / (e - s)
  }'
done
