#!/usr/bin/python3
"""One abusive client must not starve the others.

Usage: fairness_test.py BUILD_DIR [--calls N] [--rounds R]

A ledgerd over mutual TLS with per-identity limits (--rate-per-identity
1000, --concurrency-per-identity 4) and two identities. The polite client
appends one receipt at a time, at most 400 a second, and records each
call's latency: first alone, then while the flooder (another process, at
the lowest CPU priority so that what is measured is the server's fairness
and not the machine's scheduler) sends 20-receipt batches (FLOOD_BATCH)
from 8 threads as fast as it can. Alone and flooded alternate for R rounds; the polite client's p99 under flood must stay
within 2x of its p99 alone (the median over rounds of each), and the flooder
must have been held to its rate.
"""
import argparse
import gc
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from access_control_test import Ledger  # noqa: E402
from ledger_testlib import Certificates, fail, generate_stubs, read  # noqa: E402

RATE = int(os.environ.get("FLOOD_RATE", "1000"))
FLOOD_THREADS = 8
FLOOD_BATCH = int(os.environ.get("FLOOD_BATCH", "20"))


def flood(address, ca, cert, key, stubs, seconds_file):
    """The flooder process: appends until SIGTERM, then writes what it got."""
    sys.path.insert(0, stubs)
    import threading
    import grpc
    import ledger_service_pb2 as svc
    import ledger_service_pb2_grpc as svc_grpc
    import receipt_pb2 as pb
    creds = grpc.ssl_channel_credentials(read(ca), read(key), read(cert))
    stop = threading.Event()
    counts = {"accepted": 0, "exhausted": 0, "other": 0}
    lock = threading.Lock()
    now = int(time.time() * 1e6)

    def worker(n):
        with grpc.secure_channel(address, creds) as ch:
            stub = svc_grpc.LedgerServiceStub(ch)
            i = 0
            while not stop.is_set():
                batch = [pb.Receipt(receipt_id="f%d-%d-%d" % (n, i, k), team="team-f", run_id="flood", step_id="s",
                                    occurred_at_us=now, model_call=pb.ModelCall(route="m", decision=pb.DECISION_ALLOW))
                         for k in range(FLOOD_BATCH)]
                i += 1
                try:
                    stub.Append(svc.AppendRequest(receipts=batch), timeout=10)
                    key_ = "accepted"
                except grpc.RpcError as e:
                    key_ = "exhausted" if e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED else "other"
                with lock:
                    counts[key_] += 1

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(FLOOD_THREADS)]
    for t in threads:
        t.start()
    signal.sigwait([signal.SIGTERM])
    stop.set()
    for t in threads:
        t.join()
    with open(seconds_file, "w") as f:
        json.dump(counts, f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--flood", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.flood:
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
        return flood(*args.flood)

    work = tempfile.mkdtemp(prefix="fairness-")
    stubs = os.path.join(work, "stubs")
    generate_stubs(stubs)
    import grpc
    import ledger_service_pb2 as svc
    import ledger_service_pb2_grpc as svc_grpc
    import receipt_pb2 as pb

    ca = Certificates(os.path.join(work, "pki"))
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1")
    clients = {name: ca.issue(name, name) for name in ("flooder", "polite")}
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        json.dump({"identities": [{"identity": "cn:flooder", "roles": ["emitter"], "teams": ["team-f"]},
                                  {"identity": "cn:polite", "roles": ["emitter"], "teams": ["team-p"]}]}, f)
    ledger = Ledger(build_dir(args), work, ["--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca,
                                            "--policy", policy, "--rate-per-identity", str(RATE),
                                            "--concurrency-per-identity", "4"])
    cert, key = clients["polite"]
    channel = grpc.secure_channel(ledger.address, grpc.ssl_channel_credentials(read(ca.ca), read(key), read(cert)))
    stub = svc_grpc.LedgerServiceStub(channel)
    now = int(time.time() * 1e6)
    sent = [0]

    def p99_of_calls():
        gc.disable()  # the client's own pauses are not the server's latency
        latencies = []
        next_start = time.perf_counter()
        for _ in range(args.calls):
            # Polite: at most 400 calls a second, well within its rate.
            next_start += 0.0025
            pause = next_start - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            sent[0] += 1
            r = pb.Receipt(receipt_id="p-%d" % sent[0], team="team-p", run_id="polite", step_id="s",
                           occurred_at_us=now, model_call=pb.ModelCall(route="m", decision=pb.DECISION_ALLOW))
            started = time.perf_counter()
            out = stub.Append(svc.AppendRequest(receipts=[r]), timeout=10)
            latencies.append(time.perf_counter() - started)
            if out.results[0].code != 0:
                fail("polite append refused: %s" % out.results[0].message)
        gc.enable()
        latencies.sort()
        return latencies[int(len(latencies) * 0.99) - 1] * 1e3

    p99_of_calls()  # warm up the connection and the server
    alone, flooded, floods = [], [], []
    for _ in range(args.rounds):
        alone.append(p99_of_calls())
        counts = os.path.join(work, "counts.json")
        flooder = subprocess.Popen(["nice", "-n", "19", sys.executable, os.path.abspath(__file__), args.build,
                                    "--flood", ledger.address, ca.ca, clients["flooder"][0], clients["flooder"][1],
                                    stubs, counts])
        time.sleep(1.5)
        started = time.monotonic()
        flooded.append(p99_of_calls())
        seconds = time.monotonic() - started + 1.5
        flooder.send_signal(signal.SIGTERM)
        flooder.wait(timeout=60)
        with open(counts) as f:
            floods.append(json.load(f))
        floods[-1]["seconds"] = seconds
    ledger.stop()

    for a, f, c in zip(alone, flooded, floods):
        print("round: polite p99 alone %.2f ms, flooded %.2f ms; flooder %d batches accepted (%.0f receipts/s), "
              "%d refused RESOURCE_EXHAUSTED, %d other" % (a, f, c["accepted"], c["accepted"] * FLOOD_BATCH / c["seconds"],
                                                         c["exhausted"], c["other"]))
    base, under = statistics.median(alone), statistics.median(flooded)
    print("polite p99: alone %.2f ms, under flood %.2f ms (%.2fx)" % (base, under, under / base))
    if any(c["exhausted"] == 0 for c in floods):
        fail("the flooder was never refused: it did not flood")
    # Its allowance: the rate, plus one second's burst.
    if any(c["accepted"] * FLOOD_BATCH > (RATE * c["seconds"] + RATE) * 1.1 for c in floods):
        fail("the flooder got more than its rate")
    if under > 2 * base:
        fail("the polite client's p99 went from %.2f ms to %.2f ms under flood (more than 2x)" % (base, under))
    print("PASS")


def build_dir(args):
    return os.path.abspath(args.build)


if __name__ == "__main__":
    main()
