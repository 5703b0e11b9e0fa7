#!/usr/bin/python3
"""How fast ledger-monitor catches up with a ledger, against how fast the
ledger takes receipts, on this machine. Each round: a fresh ledgerd fed by
bench/ledger_load (stream, 4 clients, batches of 1000, the `steps`
workload) until it holds ENTRIES; then `ledger-monitor --once` replays the
whole log from seq 0 over the ledger's HTTP port (entry bundles of 256) and
cosigns its latest time note; then `ledgerctl audit` on the stopped store.
Rounds alternate nothing (one configuration); the ratio of the monitor's
rate to the ledger's ingest rate in the same round is what is reported,
with the monitor's peak resident memory and the size of its state file.

The monitor's cosignature is of the ledger's own signed note, so its
replay agreed with the roots the ledger signed; `ledgerctl audit` replays
the same store with the same code and must print OK.

Usage: bench/monitor_catchup.py BUILD_DIR [--entries 1000000] [--rounds 2]
Prints one JSON object.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))
from ledger_testlib import free_port  # noqa: E402

ORIGIN = "bench.example/monitor"


def start_ledgerd(build, data, http_port, out):
    p = subprocess.Popen([os.path.join(build, "cmd", "ledgerd"), "--data", data, "--origin", ORIGIN, "--listen",
                          "127.0.0.1:0", "--http-listen", "127.0.0.1:%d" % http_port, "--checkpoint-interval-ms",
                          "200"], stdout=out, stderr=out)
    deadline = time.time() + 60
    while True:
        text = open(out.name).read()
        addr = next((x.split()[-1] for x in text.splitlines() if x.startswith("listening on ")), None)
        if addr:
            return p, addr
        if p.poll() is not None or time.time() > deadline:
            raise RuntimeError("ledgerd did not start: " + text[-2000:])
        time.sleep(0.05)


def latest_size(http_port):
    with urllib.request.urlopen("http://127.0.0.1:%d/checkpoint" % http_port, timeout=10) as r:
        return int(r.read().decode().splitlines()[1])


def one_round(build, work, entries):
    data, mdata = os.path.join(work, "data"), os.path.join(work, "monitor")
    http_port = free_port()
    out = open(os.path.join(work, "ledgerd.out"), "w")
    p, addr = start_ledgerd(build, data, http_port, out)
    ingest = []
    try:
        while True:
            r = subprocess.run([os.path.join(build, "bench", "ledger_load"), "--server", addr, "--mode", "stream",
                                "--clients", "4", "--batch", "1000", "--window", "4", "--duration", "10",
                                "--baseline=false", "--workload", "steps"], capture_output=True, text=True,
                               check=True)
            ingest.append(json.loads(r.stdout)["ledger"]["receipts_per_s"])
            time.sleep(0.5)  # the last checkpoint
            size = latest_size(http_port)
            if size >= entries:
                break
        vkey = subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "--server", addr, "vkey"],
                              capture_output=True, text=True, check=True).stdout.strip()
        vkey_file = os.path.join(work, "log.vkey")
        with open(vkey_file, "w") as f:
            f.write(vkey + "\n")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        m = subprocess.Popen([os.path.join(build, "cmd", "ledger-monitor"), "--data", mdata, "--log",
                              "http://127.0.0.1:%d" % http_port, "--log-key", vkey_file, "--once"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        peak_kb = 0
        while m.poll() is None:  # VmHWM: the process's peak resident memory so far
            try:
                with open("/proc/%d/status" % m.pid) as f:
                    peak_kb = max([peak_kb] + [int(x.split()[1]) for x in f if x.startswith("VmHWM:")])
            except (FileNotFoundError, ProcessLookupError, ValueError):
                pass
            time.sleep(0.05)
        wall = time.monotonic() - start
        m.stderr_text = m.stderr.read()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if m.returncode != 0:
            raise RuntimeError("ledger-monitor --once: exit %d: %s" % (m.returncode, m.stderr_text[-2000:]))
        cosigned = open(os.path.join(mdata, "cosigned.note")).read()
        replayed = int(cosigned.splitlines()[2])
    finally:
        p.terminate()
        p.wait(timeout=120)
        out.close()
    audit = subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "audit", "--data", data, "--origin", ORIGIN,
                            "--no-progress"], capture_output=True, text=True)
    if audit.returncode != 0:
        raise RuntimeError("ledgerctl audit: %s %s" % (audit.stdout, audit.stderr))
    return {
        "entries": replayed,
        "ingest_receipts_per_s": round(statistics.median(ingest)),
        "monitor_entries_per_s": round(replayed / wall),
        "monitor_seconds": round(wall, 2),
        "monitor_cpu_seconds": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
        "monitor_peak_rss_mb": round(peak_kb / 1024, 1),
        "state_file_mb": round(os.path.getsize(os.path.join(mdata, "replay.state")) / 2**20, 1),
        "ratio_monitor_over_ingest": round(replayed / wall / statistics.median(ingest), 2),
        "audit": audit.stdout.strip().splitlines()[-1],
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    rounds = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory() as work:
            rounds.append(one_round(os.path.abspath(args.build), work, args.entries))
            print(json.dumps(rounds[-1]), file=sys.stderr)
    print(json.dumps({"rounds": rounds, "median_ratio_monitor_over_ingest":
                      statistics.median(r["ratio_monitor_over_ingest"] for r in rounds)}, indent=1))


if __name__ == "__main__":
    main()
