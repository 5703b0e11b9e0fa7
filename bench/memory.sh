#!/usr/bin/env bash
# Where a real ledgerd's memory goes as its log grows: ledger_load's steps
# workload (4 streams, projections on) for SECONDS against a ledgerd with
# --store-memory-mb MB, sampling /metrics every 5 s: entries, resident memory,
# RocksDB's cache (memtables' charge included), memtables and table readers.
# Prints one JSON line per sample, then a summary: the resident memory's growth
# per million entries over the second half of the run (a least-squares slope),
# its peak, and the ingest rate of the first and last sample intervals.
# Usage: bench/memory.sh BUILD_DIR [SECONDS] [STORE_MEMORY_MB]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
secs=${2:-120}
mb=${3:-256}
work=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
"$build/cmd/ledgerd" --data "$work/data" --listen 127.0.0.1:0 --http-listen 127.0.0.1:0 \
  --origin memory.bench/log --store-memory-mb "$mb" > "$work/out" 2> "$work/err" &
pid=$!
for _ in $(seq 200); do grep -q '^http on ' "$work/out" && break; sleep 0.05; done
addr=$(sed -n 's/^listening on //p' "$work/out")
http=$(sed -n 's/^http on //p' "$work/out")
"$build/bench/ledger_load" --server "$addr" --duration "$secs" --workload steps --clients 4 --baseline=false \
  > "$work/load.json" &
load=$!
/usr/bin/python3 - "$http" "$secs" "$mb" <<'PY'
import json, re, sys, time, urllib.request
http, secs, mb = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
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
rate = lambda a, b: round((b["entries"] - a["entries"]) / (b["t"] - a["t"]))
print(json.dumps({"store_memory_mb": mb, "entries": samples[-1]["entries"],
                  "rss_peak_mb": round(max(s["rss"] for s in samples) / 2**20, 1),
                  "rss_mb_per_million_entries_second_half": round(slope, 2),
                  "rate_first_interval": rate(samples[0], samples[1]),
                  "rate_last_interval": rate(samples[-2], samples[-1])}))
PY
wait "$load"
