#!/usr/bin/python3
"""A team's pending-steps query while another team has many pending steps.

Usage: bench/pending_query.py BUILD_DIR [BUILD_DIR...] [--others N] [--rounds R] [--calls C]

For each build (its cmd/ledgerd, on a fresh data directory, plain text on
loopback): team-a has 10 pending steps, then team-b gets N pending steps
(agent_start, timeouts of a day) through ledgerctl append. ListSteps of
team-a's pending steps is timed C times over gRPC from one client before
team-b's steps arrive and after. The builds alternate for R rounds (the
machine's speed drifts between runs); each round fills its ledger anew.
Prints one JSON line per build: the median latencies in ms before and
after, and after / before; then, with two builds, the ratio of their
"after" medians (first / second).
"""
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from ledger_testlib import free_port, generate_stubs  # noqa: E402


def receipts(team, count, now):
    for i in range(count):
        yield json.dumps({"receipt_id": "%s.%d.start" % (team, i), "team": team, "run_id": "run-%d" % (i // 100),
                          "step_id": "s%d" % i, "occurred_at_us": now, "kind": "agent_start", "decision": "allow",
                          "timeout_ms": 86_400_000}) + "\n"


def one_round(build, others, calls, work, q, q_grpc, grpc):
    data = tempfile.mkdtemp(dir=work)
    address = "127.0.0.1:%d" % free_port()
    log = open(os.path.join(data, "ledgerd.log"), "wb")
    proc = subprocess.Popen([os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(data, "d"),
                             "--listen", address, "--checkpoint-interval-ms", "200"],
                            stdout=subprocess.PIPE, stderr=log)
    if not proc.stdout.readline().decode().startswith("listening on"):
        raise SystemExit("ledgerd did not start: " + open(log.name).read())

    def append(lines):
        subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "--server", address, "append", "-"],
                       input="".join(lines).encode(), check=True, stdout=subprocess.DEVNULL)

    stub = q_grpc.QueryServiceStub(grpc.insecure_channel(address))
    request = q.ListStepsRequest(filter=q.StepFilter(team="team-a", states=[q.STEP_STATE_PENDING]), page_size=100)

    def timed():
        out = []
        for _ in range(calls):
            t = time.perf_counter()
            steps = stub.ListSteps(request).steps
            out.append((time.perf_counter() - t) * 1000)
            if len(steps) != 10:
                raise SystemExit("team-a lists %d pending steps, not 10" % len(steps))
        return statistics.median(out)

    now = int(time.time() * 1e6)
    append(receipts("team-a", 10, now))
    time.sleep(0.5)
    before = timed()
    append(receipts("team-b", others, now))
    time.sleep(0.5)
    after = timed()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    shutil.rmtree(data)
    return before, after


def main():
    args = sys.argv[1:]
    opts = {"--others": 20000, "--rounds": 3, "--calls": 50}
    builds = []
    while args:
        a = args.pop(0)
        if a in opts:
            opts[a] = int(args.pop(0))
        else:
            builds.append(os.path.abspath(a))
    work = tempfile.mkdtemp(prefix="pending-query-")
    generate_stubs(os.path.join(work, "stubs"), ("receipt", "query"))
    import grpc
    import query_pb2 as q
    import query_pb2_grpc as q_grpc
    results = {b: [] for b in builds}
    for _ in range(opts["--rounds"]):
        for b in builds:
            results[b].append(one_round(b, opts["--others"], opts["--calls"], work, q, q_grpc, grpc))
    medians = {}
    for b in builds:
        before = statistics.median(r[0] for r in results[b])
        after = statistics.median(r[1] for r in results[b])
        medians[b] = after
        print(json.dumps({"build": b, "team_b_pending": opts["--others"], "median_ms_before": round(before, 3),
                          "median_ms_after": round(after, 3), "after_over_before": round(after / before, 2)}))
    if len(builds) == 2:
        print(json.dumps({"after_first_over_second": round(medians[builds[0]] / medians[builds[1]], 1)}))
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
