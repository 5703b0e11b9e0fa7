#!/usr/bin/python3
"""Replicated ingest against single-node ingest on this machine, alternated
(the machine's speed drifts): a ledgerd alone, then a leader with one
follower and a PostgreSQL primary with a synchronous standby (all on one
disk), each fed by bench/ledger_load over loopback for SECONDS. Then the
time to take over (SIGKILL the leader, first append acknowledged by the
other node), and the batch table's size under a steady load for
TAIL_SECONDS (it is trimmed below what both nodes applied).

Usage: bench/replication.py BUILD_DIR [--pairs 3] [--seconds 20] [--tail-seconds 600]
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

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "replication"))
from ledger_testlib import free_port  # noqa: E402
from pgcluster import PgCluster  # noqa: E402
from replication_test import ORIGIN, Node, wait_leader  # noqa: E402


def load(build, address, seconds, rate=0, clients=4, batch=1000):
    r = subprocess.run([os.path.join(build, "bench", "ledger_load"), "--server", address, "--mode", "stream",
                        "--clients", str(clients), "--batch", str(batch), "--window", "4", "--duration", str(seconds),
                        "--baseline=false", "--workload", "steps", "--rate", str(rate)],
                       check=True, capture_output=True, text=True)
    return json.loads(r.stdout)["ledger"]


def single(build, work, seconds):
    data = os.path.join(work, "single")
    port = free_port()
    log = open(os.path.join(work, "single.log"), "ab")
    p = subprocess.Popen([os.path.join(build, "cmd", "ledgerd"), "--data", data, "--listen", "127.0.0.1:%d" % port,
                          "--http-listen", "", "--origin", ORIGIN], stdout=log, stderr=log)
    try:
        time.sleep(1.0)
        return load(build, "127.0.0.1:%d" % port, seconds)
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(data, ignore_errors=True)


class Replicated:
    def __init__(self, build, work, tag):
        self.work = os.path.join(work, tag)
        os.makedirs(self.work)
        os.chmod(self.work, 0o755)
        self.pg = PgCluster(self.work)
        key = os.path.join(self.work, "signing.key")
        subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "keygen", "--origin", ORIGIN, "--out", key],
                       check=True, capture_output=True)
        self.nodes = [Node(build, self.work, "node-%d" % i, self.pg.uri, key) for i in (1, 2)]
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


def replicated(build, work, seconds, tag):
    r = Replicated(build, work, tag)
    try:
        return load(build, r.leader.address, seconds)
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
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    work = tempfile.mkdtemp(prefix="replication-bench-")
    os.chmod(work, 0o755)
    one, rep = [], []
    try:
        for i in range(args.pairs):
            one.append(single(build, work, args.seconds))
            rep.append(replicated(build, work, args.seconds, "pair-%d" % i))
        m1 = statistics.median(x["receipts_per_s"] for x in one)
        m2 = statistics.median(x["receipts_per_s"] for x in rep)
        out = {"single": one, "replicated": rep, "median_single": round(m1), "median_replicated": round(m2),
               "ratio": round(m2 / m1, 3),
               "ack_ms_single": {"p50": statistics.median(x["p50_ms"] for x in one),
                                 "p99": statistics.median(x["p99_ms"] for x in one)},
               "ack_ms_replicated": {"p50": statistics.median(x["p50_ms"] for x in rep),
                                     "p99": statistics.median(x["p99_ms"] for x in rep)}}
        out["takeover"] = takeover(build, work)
        if args.tail_seconds > 0:
            out["tail"] = tail(build, work, args.tail_seconds, args.tail_rate)
        print(json.dumps(out))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
