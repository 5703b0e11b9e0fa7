#!/usr/bin/env bash
# Where a real ledgerd's memory goes as its log grows: ledger_load's steps
# workload (4 streams, projections on) for SECONDS against a ledgerd with
# --store-memory-mb MB, sampling /metrics every 5 s: entries, resident memory,
# RocksDB's cache (memtables' charge included), memtables and table readers.
# Prints one JSON line per sample, then a summary: the resident memory's growth
# per million entries over the second half of the run (a least-squares slope),
# its peak, and the ingest rate of the first and last sample intervals. Then,
# at the size reached, with the load stopped: query latencies (query_bench
# --server: GetStep and ListSteps of steps drawn from the whole log) and the
# store's bytes on disk per entry. QUERY_WAIT=S measures the queries again
# after S seconds more with no load (RocksDB's compactions settling).
# STORE_MEMORY_MB "-" passes no flag (a ledgerd from before the flag).
# Other ledgerd flags follow (e.g. --projections=false, to see what they hold).
# LEDGERD_PRELOAD=LIB runs ledgerd with LD_PRELOAD=LIB (another allocator, to
# tell the heap's growth from freed pages malloc keeps).
# Usage: bench/memory.sh BUILD_DIR [SECONDS] [STORE_MEMORY_MB] [LEDGERD FLAGS...]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
secs=${2:-120}
mb=${3:-256}
shift $(( $# < 3 ? $# : 3 ))
work=$(mktemp -d)
pid=""
memory=()
[ "$mb" = - ] || memory=(--store-memory-mb "$mb")
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid"; rm -rf "$work"' EXIT
env ${LEDGERD_PRELOAD:+LD_PRELOAD="$LEDGERD_PRELOAD"} "$build/cmd/ledgerd" --data "$work/data" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --origin memory.bench/log "${memory[@]}" "$@" > "$work/out" 2> "$work/err" &
pid=$!
for _ in $(seq 200); do grep -q '^http on ' "$work/out" && break; sleep 0.05; done
addr=$(sed -n 's/^listening on //p' "$work/out")
http=$(sed -n 's/^http on //p' "$work/out")
# Which malloc ledgerd runs with (linked or preloaded jemalloc, else glibc's).
if grep -q libjemalloc "/proc/$pid/maps"; then allocator=jemalloc; else allocator=glibc; fi
"$build/bench/ledger_load" --server "$addr" --duration "$secs" --workload steps --clients 4 --baseline=false \
  > "$work/load.json" &
load=$!
/usr/bin/python3 - "$http" "$secs" "$mb" "$allocator" <<'PY'
import json, re, sys, time, urllib.request
http, secs, mb, allocator = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
names = {"ledger_tree_size": "entries", "process_resident_memory_bytes": "rss",
         "ledger_store_cache_bytes": "cache", "ledger_store_memtable_bytes": "memtables",
         "ledger_store_table_reader_bytes": "table_readers"}
samples, start = [], time.time()
while time.time() - start < secs + 1:
    time.sleep(5)
    text = urllib.request.urlopen("http://%s/metrics" % http, timeout=10).read().decode()
    s = {"t": round(time.time() - start, 1)}
    for line in text.splitlines():
        m = re.match(r"^(\w+) (\S+)$", line)
        if m and m.group(1) in names:
            s[names[m.group(1)]] = int(float(m.group(2)))
    samples.append(s)
    print(json.dumps({k: (round(v / 2**20, 1) if k not in ("t", "entries") else v) for k, v in s.items()}))
half = samples[len(samples) // 2:]
n = len(half)
xs, ys = [s["entries"] / 1e6 for s in half], [s["rss"] / 2**20 for s in half]
mx, my = sum(xs) / n, sum(ys) / n
slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / max(1e-9, sum((x - mx) ** 2 for x in xs))
# Ingest rates over the load's first and last minute (or sixth, when shorter).
loaded = [s for s in samples if s["t"] <= secs + 0.5]
span = min(60.0, secs / 6)
first = [s for s in loaded if s["t"] <= span + 2.5][-1]
last = loaded[-1]
before_last = [s for s in loaded if s["t"] <= last["t"] - span + 2.5][-1]
rate = lambda a, b: round((b["entries"] - a["entries"]) / (b["t"] - a["t"])) if b["t"] > a["t"] else 0
first_rate = round(first["entries"] / first["t"])
last_rate = rate(before_last, last)
print(json.dumps({"store_memory_mb": mb, "allocator": allocator, "entries": samples[-1]["entries"],
                  "rss_peak_mb": round(max(s["rss"] for s in samples) / 2**20, 1),
                  "rss_mb_per_million_entries_second_half": round(slope, 2),
                  "rate_first_%ds" % span: first_rate, "rate_last_%ds" % span: last_rate,
                  "last_over_first": round(last_rate / first_rate, 3) if first_rate else 0}))
PY
wait "$load"
"$build/bench/query_bench" --server "$addr" --calls "${QUERY_CALLS:-2000}"
if [ -n "${QUERY_WAIT:-}" ]; then
  sleep "$QUERY_WAIT"
  "$build/bench/query_bench" --server "$addr" --calls "${QUERY_CALLS:-2000}"
fi
bytes=$(du -sb "$work/data/db" | cut -f1)
size=$("$build/cmd/ledgerctl" --server "$addr" checkpoint --at-least 1 | sed -n 2p)
echo "{\"entries_in_checkpoint\": $size, \"store_bytes\": $bytes, \"store_bytes_per_entry\": $((bytes / size))}"
