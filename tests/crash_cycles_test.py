#!/usr/bin/python3
"""SIGKILL the ledger again and again under load; nothing acknowledged is lost.

Usage: crash_cycles_test.py BUILD_DIR [--cycles N] [--seed S]

A real ledgerd on a loopback port; two unary and two streaming clients
append batches of steps (starts, model calls, completions; some steps never
complete, so the sweeper keeps declaring them unknown) and record every
acknowledgement. Checkpoints are signed every 10 ms and the sweeper runs
every 20 ms, so kills land during both. After each kill the server is
restarted on the same port and the clients retry what was not acknowledged,
with the same receipt ids. At the end:

  - every acknowledged receipt is in the log with the same seq and leaf hash;
  - the log is dense and holds each receipt id once (retries made no
    duplicates), and every receipt sent was eventually acknowledged;
  - every checkpoint a client saw is the stored one of its size, and each is
    consistent with the next (RFC 9162 proofs checked by export/verify/python/verify_pack.py);
  - ledgerctl audit finds the store consistent;
  - step outcomes equal those of a full rebuild of the projections;
  - SIGTERM under load exits 0 within 10 s with a checkpoint of every entry.
"""
import argparse
import base64
import hashlib
import importlib.util
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledger_testlib import ROOT, fail, free_port, generate_stubs  # noqa: E402

ORIGIN = "crash-cycles.test/log"
TEAMS = ["team-a", "team-b"]


class Server:
    def __init__(self, build, data, port):
        self.cmd = [os.path.join(build, "cmd", "ledgerd"), "--data", data, "--listen", "127.0.0.1:%d" % port, "--http-listen", "127.0.0.1:0",
                    "--origin", ORIGIN, "--checkpoint-interval-ms", "10", "--unknown-grace-ms", "50",
                    "--sweep-interval-ms", "20"]
        self.log = open(os.path.join(os.path.dirname(data), "ledgerd.log"), "ab")
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=self.log)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=30)
        return code, time.monotonic() - started


def batches(pb, client, size=40):
    """Endless batches of receipts: per step a start, two model calls and (mostly) a completion."""
    rng = random.Random(client)
    pending = []
    base = 1767225600000000
    i = 0
    while True:
        team = TEAMS[i % 2]
        run, step = "c%d-run-%d" % (client, i // 10), "step-%d" % i
        start_id = "c%d-%d-start" % (client, i)
        timeout = 40 if rng.random() < 0.2 else 600000  # a fifth never complete: the sweeper declares them
        pending.append(pb.Receipt(receipt_id=start_id, team=team, run_id=run, step_id=step,
                                  occurred_at_us=base + i,
                                  agent_start=pb.AgentStart(decision=pb.DECISION_ALLOW, timeout_ms=timeout)))
        for k in range(2):
            pending.append(pb.Receipt(receipt_id="c%d-%d-call-%d" % (client, i, k), team=team, run_id=run,
                                      step_id=step, occurred_at_us=base + i,
                                      model_call=pb.ModelCall(route="m", decision=pb.DECISION_ALLOW,
                                                              input_tokens=10, output_tokens=5)))
        if timeout > 1000:
            pending.append(pb.Receipt(receipt_id="c%d-%d-exec" % (client, i), team=team, run_id=run,
                                      step_id=step, occurred_at_us=base + i,
                                      agent_exec=pb.AgentExec(start_receipt_id=start_id,
                                                              status=pb.EXEC_STATUS_SUCCEEDED)))
        i += 1
        if len(pending) >= size:
            yield pending
            pending = []


class Client(threading.Thread):
    """Sends batches until stopped; a batch is retried, with the same receipt
    ids, until every receipt in it is acknowledged."""

    def __init__(self, grpc, svc, address, number, pb, streaming, acks, lock, stop):
        super().__init__(daemon=True)
        self.grpc, self.svc, self.address = grpc, svc, address
        self.source = batches(pb, number)
        self.streaming = streaming
        self.acks, self.lock, self.stop = acks, lock, stop
        self.sent = set()
        self.retries = 0
        self.duplicates = 0
        self.error = None

    def record(self, batch, results):
        with self.lock:
            if len(results) != len(batch) or any(r.code != 0 for r in results):
                return False
            for receipt, result in zip(batch, results):
                ack = (result.seq, result.leaf_hash.hex())
                old = self.acks.get(receipt.receipt_id)
                if old is not None and old != ack:
                    self.error = "receipt %s acknowledged as %s and later as %s" % (receipt.receipt_id, old, ack)
                self.acks[receipt.receipt_id] = ack
                self.duplicates += result.duplicate
        return True

    def run(self):
        todo = []  # batches not yet acknowledged, oldest first
        while (not self.stop.is_set() or todo) and self.error is None:
            while len(todo) < (4 if self.streaming else 1) and not self.stop.is_set():
                batch = next(self.source)
                self.sent.update(r.receipt_id for r in batch)
                todo.append(batch)
            try:
                with self.grpc.insecure_channel(self.address) as channel:
                    stub = self.svc.LedgerServiceStub(channel)
                    if self.streaming:
                        window = list(todo)
                        requests = iter([self.svc.AppendRequest(receipts=b) for b in window])
                        for response, b in zip(stub.AppendStream(requests, timeout=5), window):
                            if not self.record(b, response.results):
                                raise RuntimeError("not appended")
                            todo.pop(0)
                    else:
                        response = stub.Append(self.svc.AppendRequest(receipts=todo[0]), timeout=5)
                        if not self.record(todo[0], response.results):
                            raise RuntimeError("not appended")
                        todo.pop(0)
            except Exception:  # the server is down or was killed mid-call: retry the same receipts
                self.retries += 1
                time.sleep(0.05)


def watch_checkpoints(grpc, svc, address, seen, stop):
    while not stop.is_set():
        try:
            with grpc.insecure_channel(address) as channel:
                cp = svc.LedgerServiceStub(channel).GetCheckpoint(svc.GetCheckpointRequest(), timeout=1)
                seen[cp.tree_size] = cp.note
        except Exception:
            pass
        time.sleep(0.03)


def dump_steps(build, address):
    out = []
    for team in TEAMS:
        r = subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "--server", address, "steps", "--team", team,
                            "--limit", "100000", "--json"], check=True, capture_output=True, text=True)
        out.append(r.stdout)
    return "".join(out)


def audit(build, data):
    r = subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "audit", "--data", data, "--origin", ORIGIN,
                        "--json"], capture_output=True, text=True)
    report = json.loads(r.stdout) if r.stdout else {}
    if r.returncode != 0 or not report.get("ok"):
        fail("audit: %s %s" % (r.stdout, r.stderr))
    return report


def wait_ready(grpc, svc, address):
    for _ in range(200):
        try:
            with grpc.insecure_channel(address) as channel:
                svc.LedgerServiceStub(channel).GetCheckpoint(svc.GetCheckpointRequest(), timeout=1)
                return
        except Exception:
            time.sleep(0.05)
    fail("the server did not come up")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--seed", type=int, default=20261129)
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    work = tempfile.mkdtemp(prefix="crash-cycles-")
    server = None
    try:
        generate_stubs(os.path.join(work, "stubs"))
        import grpc
        import receipt_pb2 as pb
        import ledger_service_pb2 as svc_messages
        import ledger_service_pb2_grpc as svc_grpc

        class Svc:  # messages and stubs under one name
            pass
        svc = Svc()
        for m in (svc_messages, svc_grpc):
            for name in dir(m):
                if not name.startswith("_"):
                    setattr(svc, name, getattr(m, name))
        spec = importlib.util.spec_from_file_location("verify_pack", os.path.join(ROOT, "export", "verify", "python", "verify_pack.py"))
        vp = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(vp)

        rng = random.Random(args.seed)
        port = free_port()
        address = "127.0.0.1:%d" % port
        data = os.path.join(work, "data")
        server = Server(build, data, port)
        server.start()
        wait_ready(grpc, svc, address)

        acks, lock, stop = {}, threading.Lock(), threading.Event()
        clients = [Client(grpc, svc, address, c, pb, c >= 2, acks, lock, stop) for c in range(4)]
        seen, watching = {}, threading.Event()
        watcher = threading.Thread(target=watch_checkpoints, args=(grpc, svc, address, seen, watching), daemon=True)
        watcher.start()
        for c in clients:
            c.start()
        for cycle in range(args.cycles):
            wait_ready(grpc, svc, address)
            time.sleep(rng.uniform(0.1, 0.6))
            server.kill()
            with lock:
                acked = len(acks)
            print("cycle %d: SIGKILL with %d receipts acknowledged" % (cycle + 1, acked), flush=True)
            server.start()
        wait_ready(grpc, svc, address)
        time.sleep(0.3)
        # A graceful stop under load: in-flight work finished, final
        # checkpoint signed; then the clients retry what it did not answer.
        code, took = server.stop()
        if code != 0 or took > 10:
            fail("SIGTERM: exit code %d after %.1f s" % (code, took))
        at_stop = audit(build, data)
        with open(os.path.join(data, "latest-checkpoint")) as f:
            signed = int(f.read().split("\n")[1])
        if signed != at_stop["entries"]:
            fail("SIGTERM: the final checkpoint covers %d of %d entries" % (signed, at_stop["entries"]))
        stop.set()
        server.start()
        for c in clients:
            c.join(timeout=120)
            if c.error:
                fail(c.error)
            if c.is_alive():
                fail("a client could not finish its receipts")
        watching.set()
        watcher.join()
        sent = set().union(*(c.sent for c in clients))
        code, _ = server.stop()
        if code != 0:
            fail("SIGTERM: exit code %d" % code)
        audit(build, data)

        server.start()
        wait_ready(grpc, svc, address)
        with grpc.insecure_channel(address, options=[("grpc.max_receive_message_length", 64 << 20)]) as ch:
            stub = svc.LedgerServiceStub(ch)
            latest = stub.GetCheckpoint(svc.GetCheckpointRequest(), timeout=5)
            entries = list(stub.GetEntries(svc.GetEntriesRequest(from_seq=0, to_seq=latest.tree_size), timeout=60))
            vkey = stub.GetVerifierKey(svc.GetVerifierKeyRequest(), timeout=5).vkey
            key = vp.parse_vkey(vkey)
            sizes = sorted(seen)
            checked = 0
            for size in sizes:
                if size == 0:
                    continue  # the empty tree: tree_size 0 asks for the latest
                stored = stub.GetCheckpoint(svc.GetCheckpointRequest(tree_size=size), timeout=5).note
                if stored != seen[size]:
                    fail("the checkpoint a client saw at size %d is not the stored one" % size)
            for a, b in zip(sizes, sizes[1:] + [latest.tree_size]):
                if a == 0 or a == b:
                    continue
                old = vp.open_note(seen[a].encode(), key)
                new = vp.open_note(stub.GetCheckpoint(svc.GetCheckpointRequest(tree_size=b), timeout=5).note.encode(),
                                   key)
                proof = stub.GetConsistencyProof(svc.GetConsistencyProofRequest(from_size=a, to_size=b), timeout=5)
                old_root, new_root = base64.b64decode(old.split("\n")[2]), base64.b64decode(new.split("\n")[2])
                if not vp.verify_consistency(a, b, old_root, new_root, list(proof.hashes)):
                    fail("checkpoint %d is not consistent with checkpoint %d" % (a, b))
                checked += 1
        if latest.tree_size != len(entries):
            fail("the final checkpoint covers %d entries, the log holds %d" % (latest.tree_size, len(entries)))
        ids = {}
        for i, e in enumerate(entries):
            if e.seq != i:
                fail("the log is not dense at %d" % i)
            if hashlib.sha256(b"\x00" + e.leaf).hexdigest() != e.leaf_hash.hex():
                fail("entry %d: leaf hash" % i)
            rid = json.loads(e.leaf)["receipt"]["receipt_id"]
            if rid in ids:
                fail("receipt %s is in the log twice (%d and %d)" % (rid, ids[rid], i))
            ids[rid] = i
        lost = 0
        for rid, (seq, leaf_hash) in acks.items():
            if ids.get(rid) != seq or entries[seq].leaf_hash.hex() != leaf_hash:
                lost += 1
        if lost:
            fail("%d acknowledged receipts are missing or moved" % lost)
        if sent - set(acks):
            fail("%d receipts were never acknowledged" % len(sent - set(acks)))
        unknown = sum(1 for rid in ids if rid.startswith("ledger.unknown."))
        if unknown == 0:
            fail("the sweeper declared nothing: the test did not exercise it")

        live = dump_steps(build, address)
        server.stop()
        subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "rebuild", "--data", data], check=True,
                       capture_output=True)
        server.start()
        wait_ready(grpc, svc, address)
        rebuilt = dump_steps(build, address)
        server.stop()
        if not live or live != rebuilt:
            fail("step outcomes differ from a rebuild")
        print("crash cycles: %d SIGKILLs; %d receipts acknowledged, 0 lost; %d retried batches, %d duplicates "
              "answered on retry; %d unknown steps declared; %d checkpoints seen, each consistent with the next; "
              "%d consistency proofs verified; audit OK; outcomes equal a rebuild (%d steps); SIGTERM under load "
              "exit 0 in %.2f s"
              % (args.cycles, len(acks), sum(c.retries for c in clients), sum(c.duplicates for c in clients),
                 unknown, len(seen), checked, live.count("\n"), took))
    finally:
        if server is not None and server.proc is not None and server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
