#!/usr/bin/python3
"""Replicated ingest against single-node ingest on this machine, alternated
(the machine's speed drifts): a ledgerd alone, then a leader with one
follower and a PostgreSQL primary with a synchronous standby (all on one
disk), each fed by bench/ledger_load over loopback for SECONDS. Then the
time to take over (SIGKILL the leader, first append acknowledged by the
other node), and the batch table's size under a steady load for
TAIL_SECONDS (it is trimmed below what both nodes applied).

With --breakdown, where each run's time went on the node that took the
appends, from its /metrics scraped before and after the load: per batch,
the writer building it, the replicated log's commit (PostgreSQL, with the
synchronous standby's wait), the RocksDB write, the committer's wait for the
next batch, as fractions of the wall time (from the load's second second to
a second before its end) and mean milliseconds; the entries per batch, the
checkpoints signed at the interval, the node's CPU (cores). With --compare
OLD_BUILD_DIR each round also runs the replicated shard of OLD_BUILD_DIR
(its ledgerd; the load generator is BUILD_DIR's), between the single node
and this build's, and prints the ratio of the two.

Usage: bench/replication.py BUILD_DIR [--pairs 3] [--seconds 20] [--tail-seconds 600]
                            [--breakdown] [--compare OLD_BUILD_DIR] [--no-takeover]
Prints one JSON object.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "replication"))
from ledger_testlib import free_port  # noqa: E402
from pgcluster import PgCluster  # noqa: E402
from replication_test import ORIGIN, Node, wait_leader  # noqa: E402


# The histograms of a batch's path through the node (ops/metrics.cc), and
# the other figures the breakdown reads.
STAGES = ("ledger_build_seconds", "ledger_replicate_seconds", "ledger_commit_seconds", "ledger_commit_idle_seconds",
          "ledger_checkpoint_seconds")
FIGURES = STAGES + ("ledger_commit_entries",)


def scrape(get):
    """The sums and counts of FIGURES and the process's CPU seconds, from
    `get("/metrics")`, with the time they were read."""
    status, text = get("/metrics")
    if status != 200:
        raise RuntimeError("/metrics: %s %s" % (status, text[:200]))
    out = {"t": time.monotonic()}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == "process_cpu_seconds_total" or (
                name.endswith(("_sum", "_count")) and name.rsplit("_", 1)[0] in FIGURES):
            out[name] = float(value)
    return out


def breakdown(before, after):
    """Per stage: its share of the wall time between the scrapes, its batches
    and their mean duration."""
    wall = after["t"] - before["t"]
    out = {"wall_s": round(wall, 2)}
    for h in STAGES:
        n = after.get(h + "_count", 0) - before.get(h + "_count", 0)
        total = after.get(h + "_sum", 0) - before.get(h + "_sum", 0)
        out[h[len("ledger_"):-len("_seconds")]] = {"fraction": round(total / wall, 3), "count": int(n),
                                                   "mean_ms": round(total / n * 1000, 2) if n else None}
    batches = after["ledger_commit_entries_count"] - before["ledger_commit_entries_count"]
    entries = after["ledger_commit_entries_sum"] - before["ledger_commit_entries_sum"]
    out["batches"] = int(batches)
    out["entries_per_batch"] = round(entries / batches) if batches else None
    out["cpu_cores"] = round((after["process_cpu_seconds_total"] - before["process_cpu_seconds_total"]) / wall, 2)
    return out


def http_get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return r.status, r.read().decode()
    except Exception as e:  # not up
        return 0, str(e)


def measured(build, address, seconds, get, with_breakdown):
    """A load against `address`; with_breakdown, what its node's /metrics
    (read by `get`) say of the load's steady part: from its second second
    to a second before its end."""
    if not with_breakdown:
        return load(build, address, seconds)
    p = start_load(build, address, seconds)
    time.sleep(1.5)
    before = scrape(get)
    time.sleep(max(1, seconds - 2.5))
    after = scrape(get)
    result = finish_load(p)
    result["breakdown"] = breakdown(before, after)
    return result


def start_load(build, address, seconds, rate=0, clients=4, batch=1000):
    return subprocess.Popen([os.path.join(build, "bench", "ledger_load"), "--server", address, "--mode", "stream",
                             "--clients", str(clients), "--batch", str(batch), "--window", "4", "--duration",
                             str(seconds), "--baseline=false", "--workload", "steps", "--rate", str(rate)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish_load(p):
    out, err = p.communicate()
    if p.returncode != 0:
        raise RuntimeError("ledger_load exited with %d: %s" % (p.returncode, err[-2000:]))
    return json.loads(out)["ledger"]


def load(build, address, seconds, rate=0, clients=4, batch=1000):
    return finish_load(start_load(build, address, seconds, rate, clients, batch))


def single(build, work, seconds, with_breakdown=False):
    data = os.path.join(work, "single")
    port, http = free_port(), free_port()
    log = open(os.path.join(work, "single.log"), "ab")
    p = subprocess.Popen([os.path.join(build, "cmd", "ledgerd"), "--data", data, "--listen", "127.0.0.1:%d" % port,
                          "--http-listen", "127.0.0.1:%d" % http if with_breakdown else "", "--origin", ORIGIN],
                         stdout=log, stderr=log)
    try:
        time.sleep(1.0)
        return measured(build, "127.0.0.1:%d" % port, seconds, lambda path: http_get(http, path), with_breakdown)
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(data, ignore_errors=True)


class Replicated:
    def __init__(self, build, work, tag, node_build=None):
        self.work = os.path.join(work, tag)
        os.makedirs(self.work)
        os.chmod(self.work, 0o755)
        self.pg = PgCluster(self.work)
        key = os.path.join(self.work, "signing.key")
        subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "keygen", "--origin", ORIGIN, "--out", key],
                       check=True, capture_output=True)
        self.nodes = [Node(node_build or build, self.work, "node-%d" % i, self.pg.uri, key) for i in (1, 2)]
        for n in self.nodes:
            n.cmd = [a for a in n.cmd]
            i = n.cmd.index("--checkpoint-interval-ms")
            n.cmd[i + 1] = "1000"
            n.start()
        self.leader = wait_leader(self.nodes)

    def close(self):
        for n in self.nodes:
            n.stop()
        self.pg.remove()
        shutil.rmtree(self.work, ignore_errors=True)


def replicated(build, work, seconds, tag, with_breakdown=False, node_build=None):
    r = Replicated(build, work, tag, node_build)
    try:
        return measured(build, r.leader.address, seconds, r.leader.get, with_breakdown)
    finally:
        r.close()


def takeover(build, work):
    """SIGKILL the leader under a light load; the time until the other node
    acknowledges its first append."""
    r = Replicated(build, work, "takeover")
    try:
        result = {}
        old = r.leader
        other = next(n for n in r.nodes if n is not old)
        time.sleep(1)
        result["killed"] = time.monotonic()
        old.kill()
        leads = wait_leader([other])
        result["leads"] = time.monotonic()
        # The first acknowledged append: ledger_load on the new leader
        # (each try starts a process, so this bounds it from above).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            out = load(build, leads.address, 1, rate=1000, clients=1, batch=10)
            if out["receipts"] > 0:
                result["first"] = time.monotonic()
                break
        return {"lease_ms": 1500, "leading_after_ms": round((result["leads"] - result["killed"]) * 1000),
                "first_ack_after_ms_upper_bound": round((result["first"] - result["killed"]) * 1000),
                "takeover_ms_reported": leads.metric("ledger_replication_takeover_ms")}
    finally:
        r.close()


def tail(build, work, seconds, rate):
    """The batch table's size under `rate` receipts/s for `seconds`."""
    r = Replicated(build, work, "tail")
    try:
        samples = []
        t = threading.Thread(target=load, args=(build, r.leader.address, seconds, rate, 2, 200), daemon=True)
        t.start()
        started = time.monotonic()
        while t.is_alive():
            time.sleep(10)
            size = r.pg.primary.sql("SELECT pg_total_relation_size('ledger_batches')")
            rows = r.pg.primary.sql("SELECT count(*) FROM ledger_batches")
            samples.append({"s": round(time.monotonic() - started), "bytes": int(size), "batches": int(rows)})
        return {"rate": rate, "seconds": seconds, "samples": samples,
                "max_bytes": max(s["bytes"] for s in samples), "last_bytes": samples[-1]["bytes"]}
    finally:
        r.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--tail-seconds", type=int, default=600)
    ap.add_argument("--tail-rate", type=int, default=5000)
    ap.add_argument("--breakdown", action="store_true")
    ap.add_argument("--compare", metavar="OLD_BUILD_DIR")
    ap.add_argument("--no-takeover", action="store_true")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    old_build = os.path.abspath(args.compare) if args.compare else None
    work = tempfile.mkdtemp(prefix="replication-bench-")
    os.chmod(work, 0o755)
    one, rep, old = [], [], []
    try:
        for i in range(args.pairs):
            one.append(single(build, work, args.seconds, args.breakdown))
            if old_build:
                old.append(replicated(build, work, args.seconds, "old-%d" % i, args.breakdown, old_build))
            rep.append(replicated(build, work, args.seconds, "pair-%d" % i, args.breakdown))
        m1 = statistics.median(x["receipts_per_s"] for x in one)
        m2 = statistics.median(x["receipts_per_s"] for x in rep)
        out = {"single": one, "replicated": rep, "median_single": round(m1), "median_replicated": round(m2),
               "ratio": round(m2 / m1, 3),
               "ack_ms_single": {"p50": statistics.median(x["p50_ms"] for x in one),
                                 "p99": statistics.median(x["p99_ms"] for x in one)},
               "ack_ms_replicated": {"p50": statistics.median(x["p50_ms"] for x in rep),
                                     "p99": statistics.median(x["p99_ms"] for x in rep)}}
        if old:
            m0 = statistics.median(x["receipts_per_s"] for x in old)
            out.update({"replicated_old": old, "median_replicated_old": round(m0), "ratio_old": round(m0 / m1, 3),
                        "new_over_old": round(m2 / m0, 3),
                        "new_over_old_by_round": [round(n["receipts_per_s"] / o["receipts_per_s"], 3)
                                                  for n, o in zip(rep, old)],
                        "ack_ms_replicated_old": {"p50": statistics.median(x["p50_ms"] for x in old),
                                                  "p99": statistics.median(x["p99_ms"] for x in old)}})
        if not args.no_takeover:
            out["takeover"] = takeover(build, work)
        if args.tail_seconds > 0:
            out["tail"] = tail(build, work, args.tail_seconds, args.tail_rate)
        print(json.dumps(out))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
