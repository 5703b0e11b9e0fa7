#!/usr/bin/python3
"""A replicated shard survives the loss of a node, of its disk, and of the
PostgreSQL primary: real PostgreSQL servers (a primary and a synchronous
standby) and real ledgerd processes on loopback.

Usage: replication_test.py BUILD_DIR SCENARIO [--receipts N]

Scenarios:
  leader-killed   SIGKILL the leader under a stream from 4 clients (2 unary,
                  2 streaming); every acknowledged receipt is on the new
                  leader with its seq, no seq twice, the checkpoints before
                  and after are consistent (RFC 9162), the take-over is timed;
                  a real witness cosigns across the failover with no 409 or
                  422 (tests/replication/witnessing.py)
  deposed         SIGSTOP the leader past its lease, a follower takes over
                  and appends, SIGCONT: the old leader acknowledges and
                  signs nothing more
  sync-warning    the standby is gone, so a commit waits; the wait is
                  cancelled and PostgreSQL answers "committed locally, but
                  might not have been replicated": nothing is acknowledged
  pg-failover     SIGKILL the PostgreSQL primary under the stream and promote
                  the standby: nothing acknowledged is lost
  follower-restore  a follower's data directory is deleted; it comes back
                  from a backup plus the tail and serves the same roots;
                  without a backup, behind the trimmed tail, it is refused
  ten-failovers   kill whichever node leads, ten times, under load, with the
                  witness
"""
import argparse
import base64
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import tarfile
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
from ledger_testlib import ROOT, fail, free_port, generate_stubs  # noqa: E402
from pgcluster import PgCluster  # noqa: E402
from witnessing import ShardWitness, wait_cosigned  # noqa: E402

ORIGIN = "replication.test/shard-0"
TEAMS = ["team-a", "team-b"]
LEASE_MS = 1500


def load_verify_pack():
    spec = importlib.util.spec_from_file_location(
        "verify_pack", os.path.join(ROOT, "export", "verify", "python", "verify_pack.py"))
    vp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vp)
    return vp


class Node:
    """One ledgerd of the shard."""

    def __init__(self, build, work, name, uri, key, extra=()):
        self.build, self.name = build, name
        self.data = os.path.join(work, name)
        self.port, self.http = free_port(), free_port()
        self.address = "127.0.0.1:%d" % self.port
        self.cmd = [os.path.join(build, "cmd", "ledgerd"), "--data", self.data, "--listen", self.address,
                    "--http-listen", "127.0.0.1:%d" % self.http, "--origin", ORIGIN, "--signing-key", key,
                    "--replication", uri, "--node-id", name, "--replication-lease-ms", str(LEASE_MS),
                    "--replication-timeout-ms", "3000", "--checkpoint-interval-ms", "100",
                    "--unknown-grace-ms", "50", "--sweep-interval-ms", "50"] + list(extra)
        self.log_path = os.path.join(work, name + ".log")
        self.proc = None

    def start(self, extra=()):
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.cmd + list(extra), stdout=self.log, stderr=self.log)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
                return -9
        return self.proc.returncode if self.proc else None

    def get(self, path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.http, path), timeout=2) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except Exception as e:  # not up
            return 0, str(e)

    def leads(self):
        return self.alive() and self.get("/readyz/leader")[0] == 200

    def metric(self, name):
        status, text = self.get("/metrics")
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


def wait_leader(nodes, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for n in nodes:
            if n.leads():
                return n
        time.sleep(0.05)
    fail("no node leads after %d s" % timeout)


def receipts(pb, client):
    """Endless receipts: per step a start, a model call and a completion."""
    i = 0
    while True:
        team = TEAMS[i % 2]
        run, step = "c%d-run-%d" % (client, i // 20), "step-%d" % i
        start_id = "c%d-%d-start" % (client, i)
        never_completes = i % 10 == 9  # the leader's sweeper declares it unknown
        yield pb.Receipt(receipt_id=start_id, team=team, run_id=run, step_id=step, occurred_at_us=1 + i,
                         agent_start=pb.AgentStart(decision=pb.DECISION_ALLOW,
                                                   timeout_ms=20 if never_completes else 600000))
        yield pb.Receipt(receipt_id="c%d-%d-call" % (client, i), team=team, run_id=run, step_id=step,
                         occurred_at_us=1 + i,
                         model_call=pb.ModelCall(route="m", decision=pb.DECISION_ALLOW, input_tokens=3))
        if never_completes:
            yield pb.Receipt(receipt_id="c%d-%d-call2" % (client, i), team=team, run_id=run, step_id=step,
                             occurred_at_us=1 + i,
                             model_call=pb.ModelCall(route="m", decision=pb.DECISION_ALLOW, input_tokens=1))
            i += 1
            continue
        yield pb.Receipt(receipt_id="c%d-%d-exec" % (client, i), team=team, run_id=run, step_id=step,
                         occurred_at_us=1 + i,
                         agent_exec=pb.AgentExec(start_receipt_id=start_id, status=pb.EXEC_STATUS_SUCCEEDED))
        i += 1


class Client(threading.Thread):
    """Appends batches until `quota` receipts are acknowledged, to whichever
    node takes them: on any failure it retries the same receipts (same ids)
    on the next node. Every acknowledgement is recorded with its node."""

    def __init__(self, grpc, svc, pb, nodes, number, streaming, quota, acks, lock, batch=50):
        super().__init__(daemon=True)
        self.grpc, self.svc, self.nodes = grpc, svc, nodes
        self.source = receipts(pb, number)
        self.streaming, self.quota, self.batch = streaming, quota, batch
        self.acks, self.lock = acks, lock
        self.error, self.retries, self.done_count = None, 0, 0
        self.at = number % len(nodes)
        self.stop = threading.Event()

    def record(self, batch, results, node):
        if len(results) != len(batch) or any(r.code != 0 for r in results):
            return False
        with self.lock:
            for receipt, result in zip(batch, results):
                ack = (result.seq, result.leaf_hash.hex())
                old = self.acks.get(receipt.receipt_id)
                if old is not None and old[:2] != ack:
                    self.error = "receipt %s acknowledged as %s and later as %s" % (receipt.receipt_id, old, ack)
                self.acks[receipt.receipt_id] = ack + (node.name, time.monotonic())
        self.done_count += len(batch)
        return True

    def run(self):
        todo = []
        while self.done_count < self.quota and self.error is None and not self.stop.is_set():
            while len(todo) < (4 if self.streaming else 1):
                todo.append([next(self.source) for _ in range(self.batch)])
            node = self.nodes[self.at]
            try:
                with self.grpc.insecure_channel(node.address) as channel:
                    stub = self.svc.LedgerServiceStub(channel)
                    if self.streaming:
                        window = list(todo)
                        requests = iter([self.svc.AppendRequest(receipts=b) for b in window])
                        for response, b in zip(stub.AppendStream(requests, timeout=10), window):
                            if not self.record(b, response.results, node):
                                raise RuntimeError("not appended")
                            todo.pop(0)
                    else:
                        response = stub.Append(self.svc.AppendRequest(receipts=todo[0]), timeout=10)
                        if not self.record(todo[0], response.results, node):
                            raise RuntimeError("not appended")
                        todo.pop(0)
            except Exception:
                self.retries += 1
                self.at = (self.at + 1) % len(self.nodes)
                time.sleep(0.02)


class Shard:
    def __init__(self, build, work, nodes=2, standby=True, witness=False):
        self.build, self.work = build, work
        self.pg = PgCluster(work, standby=standby)
        self.key = os.path.join(work, "signing.key")
        vkey = subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "keygen", "--origin", ORIGIN, "--out",
                               self.key], check=True, capture_output=True, text=True).stdout.strip()
        self.witness = ShardWitness(build, work, ORIGIN, vkey) if witness else None
        extra = self.witness.flags() if witness else []
        self.nodes = [Node(build, work, "node-%d" % (i + 1), self.pg.uri, self.key, extra) for i in range(nodes)]

    def start(self):
        for n in self.nodes:
            n.start()
        return wait_leader(self.nodes)

    def close(self):
        for n in self.nodes:
            n.stop()
        if self.witness:
            self.witness.close()
        self.pg.remove()


def stubs(work):
    generate_stubs(os.path.join(work, "stubs"))
    import grpc
    import receipt_pb2 as pb
    import ledger_service_pb2 as m
    import ledger_service_pb2_grpc as g

    class Svc:
        pass
    svc = Svc()
    for mod in (m, g):
        for name in dir(mod):
            if not name.startswith("_"):
                setattr(svc, name, getattr(mod, name))
    return grpc, svc, pb


def entries_of(grpc, svc, node):
    with grpc.insecure_channel(node.address, options=[("grpc.max_receive_message_length", 256 << 20)]) as ch:
        stub = svc.LedgerServiceStub(ch)
        latest = stub.GetCheckpoint(svc.GetCheckpointRequest(), timeout=10)
        entries = list(stub.GetEntries(svc.GetEntriesRequest(from_seq=0, to_seq=latest.tree_size), timeout=120))
        return latest, entries


def checkpoint(grpc, svc, node, size=0):
    with grpc.insecure_channel(node.address) as ch:
        return svc.LedgerServiceStub(ch).GetCheckpoint(svc.GetCheckpointRequest(tree_size=size), timeout=5)


def tree_root(hashes):
    """RFC 9162 section 2.1 root of the leaf hashes."""
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return hashlib.sha256(b"\x01" + tree_root(hashes[:k]) + tree_root(hashes[k:])).digest()


def check_epochs(node, entries, at_least):
    """CONTRACT section 3, "Leader epochs": each leader's epoch begins with
    its leader_epoch entry, at the seq of the tree it took over, naming that
    tree's root; epochs rise; they form the run (ledger, ledger.epochs)."""
    hashes = [e.leaf_hash for e in entries]
    epochs, last_epoch, last_seq = [], 0, None
    for e in entries:
        leaf = json.loads(e.leaf)
        r = leaf["receipt"]
        if r.get("kind") != "leader_epoch":
            continue
        where = "%s: leader_epoch at seq %d" % (node.name, e.seq)
        if leaf["emitter"] != "ledger" or r["team"] != "ledger" or r["run_id"] != "ledger.epochs":
            fail("%s: not the ledger's entry of the run (ledger, ledger.epochs): %s" % (where, e.leaf))
        if r["receipt_id"] != "ledger.epoch.%d" % r["epoch"]:
            fail("%s: receipt_id %s for epoch %d" % (where, r["receipt_id"], r["epoch"]))
        if r["epoch"] <= last_epoch:
            fail("%s: epoch %d after epoch %d" % (where, r["epoch"], last_epoch))
        if r["previous_size"] != e.seq:
            fail("%s: previous_size %d: not the first entry of its epoch" % (where, r["previous_size"]))
        if r["previous_root"] != tree_root(hashes[:e.seq]).hex():
            fail("%s: previous_root %s is not the root of the %d leaves before it" % (where, r["previous_root"], e.seq))
        if leaf.get("run_prev") != last_seq:
            fail("%s: run_prev %s, the previous epoch's entry is at %s" % (where, leaf.get("run_prev"), last_seq))
        last_epoch, last_seq = r["epoch"], e.seq
        epochs.append((r["epoch"], r["node"], e.seq))
    if len(epochs) < at_least:
        fail("%s: %d leader_epoch entries, at least %d leaders took the lead: %s" % (node.name, len(epochs), at_least,
                                                                                  epochs))
    return epochs


def check_epoch_packs(build, work, node, epochs, tree_size):
    """A seq range across the last failover and the run (ledger,
    ledger.epochs), exported by `node`: the four verifiers pass both and
    name every leader epoch each holds; report.html lists them."""
    ctl = os.path.join(build, "cmd", "ledgerctl")
    vkey = os.path.join(work, "epochs.vkey")
    with open(vkey, "w") as f:
        subprocess.run([ctl, "--server", node.address, "vkey"], check=True, stdout=f)
    lvg = os.path.join(work, "ledger-verify-go")
    env = dict(os.environ, GOPATH="/usr/share/gocode", GO111MODULE="off", GOPROXY="off", GOFLAGS="",
               GOCACHE=os.path.join(build, "export", "verify", "go", "gocache"))
    subprocess.run(["go", "build", "-o", lvg, "."], cwd=os.path.join(ROOT, "export", "verify", "go"), env=env,
                   check=True)
    _, node_id, at = epochs[-1]
    lo, hi = max(0, at - 3), min(tree_size, at + 3)
    for label, scope, holds in (("seq %d:%d" % (lo, hi), ["--seq", "%d:%d" % (lo, hi)],
                                 [e for e in epochs if lo <= e[2] < hi]),
                                ("run ledger/ledger.epochs", ["--run", "ledger/ledger.epochs"], epochs)):
        pack = os.path.join(work, "epochs-%d.tar.gz" % len(label))
        subprocess.run([ctl, "--server", node.address, "export"] + scope + ["--out", pack], check=True,
                       capture_output=True)
        for tool, cmd in (("ledgerctl verify", [ctl, "verify", pack, "--vkey", vkey]),
                          ("ledger-verify", [os.path.join(build, "cmd", "ledger-verify"), pack, "--vkey", vkey]),
                          ("verify_pack.py", ["/usr/bin/python3", os.path.join(ROOT, "export", "verify", "python",
                                                                             "verify_pack.py"), pack, "--vkey", vkey]),
                          ("ledger-verify-go", [lvg, "--vkey", vkey, pack])):
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                fail("%s refused the pack of %s: %s" % (tool, label, (p.stdout + p.stderr).strip()))
            for epoch, name, seq in holds:
                if "leader epoch %d: node %s leads from seq %d," % (epoch, name, seq) not in p.stdout:
                    fail("%s does not show leader epoch %d (seq %d) in the pack of %s:\n%s"
                         % (tool, epoch, seq, label, p.stdout))
        with tarfile.open(pack) as t:
            report = next(t.extractfile(m).read().decode() for m in t.getmembers() if m.name.endswith("report.html"))
        if "<h2>Leader epochs</h2>" not in report or any("epoch %d, node %s," % (e, n) not in report
                                                         for e, n, _ in holds):
            fail("report.html of the pack of %s does not list its leader epochs" % label)
        print("  the pack of %s: %d leader epoch(s) shown by the four verifiers and report.html" % (label, len(holds)),
              flush=True)


def check_history(grpc, svc, node, acks, vp, checkpoints=(), epochs_at_least=1):
    """Every acknowledged receipt is in `node`'s log with its seq and leaf
    hash; the log is dense and holds each receipt id once; each checkpoint
    in `checkpoints` (size, note) is consistent with the latest."""
    want = max((a[0] for a in acks.values()), default=-1) + 1
    deadline = time.monotonic() + 20
    while checkpoint(grpc, svc, node).tree_size < want and time.monotonic() < deadline:
        time.sleep(0.1)
    latest, entries = entries_of(grpc, svc, node)
    ids = {}
    for i, e in enumerate(entries):
        if e.seq != i:
            fail("%s: the log is not dense at %d" % (node.name, i))
        if hashlib.sha256(b"\x00" + e.leaf).hexdigest() != e.leaf_hash.hex():
            fail("%s: entry %d: leaf hash" % (node.name, i))
        rid = json.loads(e.leaf)["receipt"]["receipt_id"]
        if rid in ids:
            fail("%s: receipt %s is in the log twice (seqs %d and %d)" % (node.name, rid, ids[rid], i))
        ids[rid] = i
    unknown = sum(1 for rid in ids if rid.startswith("ledger.unknown."))
    if unknown == 0:
        fail("%s: no step was declared unknown: the sweeper was not exercised" % node.name)
    check_epochs(node, entries, epochs_at_least)
    lost = [rid for rid, (seq, leaf_hash, *_) in acks.items()
            if ids.get(rid) != seq or entries[seq].leaf_hash.hex() != leaf_hash]
    if lost:
        fail("%s: %d acknowledged receipts are missing or at another seq, e.g. %s acknowledged as %s"
             % (node.name, len(lost), lost[0], acks[lost[0]][:3]))
    with grpc.insecure_channel(node.address) as ch:
        stub = svc.LedgerServiceStub(ch)
        key = vp.parse_vkey(stub.GetVerifierKey(svc.GetVerifierKeyRequest(), timeout=5).vkey)
        new = vp.open_note(latest.note.encode(), key)
        new_root = base64.b64decode(new.split("\n")[2])
        for size, note in checkpoints:
            if size == 0 or size == latest.tree_size:
                continue
            old = vp.open_note(note.encode(), key)
            proof = stub.GetConsistencyProof(
                svc.GetConsistencyProofRequest(from_size=size, to_size=latest.tree_size), timeout=5)
            if not vp.verify_consistency(size, latest.tree_size, base64.b64decode(old.split("\n")[2]), new_root,
                                         list(proof.hashes)):
                fail("%s: the checkpoint of size %d is not consistent with the latest (%d)"
                     % (node.name, size, latest.tree_size))
            stored = checkpoint(grpc, svc, node, size).note
            if stored != note:
                fail("%s: the checkpoint of size %d it serves is not the one signed before" % (node.name, size))
    return latest, entries


def check_status(build, nodes, leader, grpc, svc, pb):
    """ledgerctl replication --json and /metrics say who leads, on every node."""
    ctl = os.path.join(build, "cmd", "ledgerctl")
    deadline = time.monotonic() + 10
    for n in nodes:
        while True:
            r = json.loads(subprocess.run([ctl, "--server", n.address, "replication", "--json"], check=True,
                                          capture_output=True, text=True).stdout)
            want_role = "leader" if n is leader else "follower"
            if (r["role"] == want_role and r["leader_address"] == leader.address
                    and (n is not leader or len(r["nodes"]) == len(nodes))) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if not r["replicated"] or r["node_id"] != n.name or r["role"] != want_role:
            fail("ledgerctl replication on %s: %s" % (n.name, r))
        if r["leader_address"] != leader.address or r["leader"] != leader.name:
            fail("ledgerctl replication on %s names another leader: %s" % (n.name, r))
        if n is leader and sorted(x["node_id"] for x in r["nodes"]) != sorted(x.name for x in nodes):
            fail("the leader does not list every node: %s" % r["nodes"])
        if n is not leader:
            # A follower refuses an append and names the leader; ledgerctl
            # then sends it there.
            with grpc.insecure_channel(n.address) as ch:
                try:
                    svc.LedgerServiceStub(ch).Append(svc.AppendRequest(receipts=[pb.Receipt(
                        receipt_id="to-a-follower-%s" % n.name, team="team-a", run_id="r", step_id="s",
                        occurred_at_us=1, model_call=pb.ModelCall(route="m", decision=pb.DECISION_ALLOW))]),
                        timeout=5)
                    fail("the follower %s took an append" % n.name)
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.UNAVAILABLE or "leader=%s " % leader.address not in e.details():
                        fail("the follower %s refused an append with %s: %s" % (n.name, e.code(), e.details()))
            started = time.monotonic()
            out = subprocess.run([ctl, "--server", n.address, "append", "-"], input=json.dumps(
                {"receipt_id": "via-a-follower-%s" % n.name, "team": "team-a", "run_id": "r", "kind": "model_call",
                 "occurred_at_us": 1, "route": "m", "decision": "allow"}), capture_output=True, text=True)
            took = time.monotonic() - started
            if out.returncode != 0 or '"seq"' not in out.stdout or took > 3:
                fail("ledgerctl append --server %s (a follower) did not reach the leader at once: exit %d after "
                     "%.1f s, %s" % (n.name, out.returncode, took, out.stdout.strip()))
        role = n.metric('ledger_replication_role{role="%s"}' % want_role)
        if role != 1:
            fail("%s: /metrics says ledger_replication_role{role=\"%s\"} %s" % (n.name, want_role, role))


def go_consistency(build, work, node, pairs):
    """Each (old note, new note) pair across a failover checked by Go's
    x/mod sumdb: note.Open with the log's key, tlog.CheckTree with the
    consistency proof `node` serves (tests/interop/verify.go -consistency)."""
    ctl = os.path.join(build, "cmd", "ledgerctl")
    env = dict(os.environ, GOPATH="/usr/share/gocode", GO111MODULE="off", GOPROXY="off",
               GOCACHE=os.path.join(work, "gocache"))
    vkey = subprocess.run([ctl, "--server", node.address, "vkey"], check=True, capture_output=True, text=True).stdout
    for i, (old, new) in enumerate(pairs):
        d = os.path.join(work, "go-consistency-%d" % i)
        os.makedirs(d)
        old_size, new_size = int(old.split("\n")[1]), int(new.split("\n")[1])
        for name, text in (("vkey", vkey), ("old.note", old), ("new.note", new)):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        with open(os.path.join(d, "consistency.json"), "w") as f:
            subprocess.run([ctl, "--server", node.address, "consistency", "--from", str(old_size), "--to",
                            str(new_size)], check=True, stdout=f)
        r = subprocess.run(["go", "run", os.path.join(ROOT, "tests", "interop", "verify.go"), "-consistency", d],
                           capture_output=True, text=True, env=env)
        if r.returncode != 0:
            fail("Go's sumdb refused the consistency of %d -> %d across a failover: %s" % (old_size, new_size,
                                                                                          r.stderr.strip()))
        print("  " + r.stdout.strip())


def stream(grpc, svc, pb, nodes, quota, acks, lock, clients=4, first=0):
    """`clients` clients (from number `first`: each number has its own
    receipt ids), half of them streaming."""
    cs = [Client(grpc, svc, pb, nodes, first + c, c >= clients // 2, quota // clients, acks, lock)
          for c in range(clients)]
    for c in cs:
        c.start()
    return cs


def join(clients, timeout=300):
    deadline = time.monotonic() + timeout
    for c in clients:
        c.join(timeout=max(1, deadline - time.monotonic()))
        if c.error:
            fail(c.error)
        if c.is_alive():
            fail("a client could not finish its receipts (%d of %d, %d retries)" % (c.done_count, c.quota, c.retries))


def acked_count(acks, lock):
    with lock:
        return len(acks)


def scenario_leader_killed(args, work, shard, grpc, svc, pb, vp, failovers=1):
    leader = shard.start()
    acks, lock = {}, threading.Lock()
    clients = stream(grpc, svc, pb, shard.nodes, args.receipts, acks, lock)
    seen, across = [], []
    for round_ in range(failovers):
        target = args.receipts * (round_ + 1) // (failovers + 1)
        while acked_count(acks, lock) < target:
            time.sleep(0.05)
        leader = wait_leader(shard.nodes)
        before = checkpoint(grpc, svc, leader)
        seen.append((before.tree_size, before.note))
        killed_at = time.monotonic()
        leader.kill()
        print("round %d: SIGKILL %s with %d receipts acknowledged, its checkpoint at %d"
              % (round_ + 1, leader.name, acked_count(acks, lock), before.tree_size), flush=True)
        witnessed = shard.witness.after_kill(shard.pg, leader.name) if shard.witness else 0
        others = [n for n in shard.nodes if n is not leader]
        new = wait_leader(others)
        # The first append the new leader acknowledges after the kill.
        while True:
            with lock:
                first = min((a[3] for a in acks.values() if a[2] == new.name and a[3] > killed_at), default=None)
            if first is not None:
                break
            time.sleep(0.01)
        print("  %s leads; first acknowledged append %.0f ms after the kill" % (new.name, (first - killed_at) * 1000),
              flush=True)
        after = checkpoint(grpc, svc, new)
        while after.tree_size <= before.tree_size:
            time.sleep(0.05)
            after = checkpoint(grpc, svc, new)
        seen.append((after.tree_size, after.note))
        across.append((before.note, after.note))
        if shard.witness:
            # The witness cosigns the new leader's checkpoints: from the size
            # it last cosigned under the old leader, across the epochs.
            cp = wait_cosigned(lambda n: checkpoint(grpc, svc, n), new, max(after.tree_size, witnessed + 1))
            print("  the witness cosigned %s's checkpoint of size %d (it had cosigned %d before the kill)"
                  % (new.name, cp.tree_size, witnessed), flush=True)
        leader.start()  # back as a follower
    join(clients)
    leader = wait_leader(shard.nodes)
    latest, entries = check_history(grpc, svc, leader, acks, vp, seen, epochs_at_least=failovers + 1)
    go_consistency(args.build, work, leader, across)
    if len(acks) < args.receipts:
        fail("only %d receipts were acknowledged" % len(acks))
    # Every node ends with the same history.
    for n in shard.nodes:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            cp = checkpoint(grpc, svc, n)
            if cp.tree_size >= latest.tree_size:
                break
            time.sleep(0.2)
        check_history(grpc, svc, n, acks, vp, [(latest.tree_size, latest.note)] if cp.tree_size > latest.tree_size
                      else [])
    check_status(args.build, shard.nodes, leader, grpc, svc, pb)
    if shard.witness:
        conflicts = shard.witness.check(failovers)
        # Followers serve the leader's witnessed checkpoints with the cosignature.
        for n in shard.nodes:
            wait_cosigned(lambda x: checkpoint(grpc, svc, x), n, latest.tree_size)
        print("ok: the witness cosigned across %d failover(s): no 422, %d 409 (%d kill(s) fell between its "
              "cosignature and the shard's record); every node serves the latest checkpoint cosigned"
              % (failovers, conflicts, shard.witness.explained), flush=True)
    for n in shard.nodes:
        if "step_unknown_not_declared" in n.log_text():
            fail("%s: its sweeper tried to declare a step while it did not lead" % n.name)
    unknown = sum(1 for e in entries if b'"ledger.unknown.' in e.leaf)
    epochs = check_epochs(leader, entries, failovers + 1)
    check_epoch_packs(args.build, work, leader, epochs, latest.tree_size)
    print("ok: %d receipts acknowledged across %d failover(s), %d entries (%d steps declared unknown by the "
          "leaders' sweepers), one history on %d nodes; leader epochs (epoch, node, seq): %s"
          % (len(acks), failovers, latest.tree_size, unknown, len(shard.nodes), epochs))


def scenario_deposed(args, work, shard, grpc, svc, pb, vp):
    old = shard.start()
    acks, lock = {}, threading.Lock()
    # A client streams to the leader without pause, so that batches are in
    # its writer and committer when it stops; every acknowledgement it gets
    # is checked against the final history like any other.
    at_old = Client(grpc, svc, pb, [old], 7, True, 10 ** 9, acks, lock)
    at_old.start()
    while acked_count(acks, lock) < 2000:
        time.sleep(0.02)
    old.proc.send_signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    new = wait_leader([n for n in shard.nodes if n is not old], timeout=LEASE_MS / 1000 * 10)
    print("%s leads %.0f ms after SIGSTOP of %s" % (new.name, (time.monotonic() - stopped_at) * 1000, old.name))
    join(stream(grpc, svc, pb, [new], 4000, acks, lock, clients=2, first=2))
    epoch_new = shard.pg.primary.sql("SELECT epoch FROM ledger_shard")
    old.proc.send_signal(signal.SIGCONT)
    resumed_at = time.monotonic()
    time.sleep(LEASE_MS / 1000 * 2)
    at_old.stop.set()
    at_old.join(timeout=20)
    # What the old leader had committed before it stopped may still be
    # answered after SIGCONT; nothing at or past the size the new epoch
    # started from may.
    taken = [json.loads(line) for line in new.log_text().splitlines() if '"replication_leading"' in line]
    epoch_start = taken[-1]["size"]
    with lock:
        late = {rid: a for rid, a in acks.items() if a[2] == old.name and a[3] > resumed_at}
    new_in_old = {rid: a for rid, a in late.items() if a[0] >= epoch_start}
    if new_in_old:
        fail("the deposed leader acknowledged %d receipts after SIGCONT at seqs the new epoch owns (from %d), e.g. %s"
             % (len(new_in_old), epoch_start, next(iter(new_in_old.items()))))
    # Nothing it signed after the resume reached the shard or its readers.
    old_checkpoints = shard.pg.primary.sql(
        "SELECT count(*) FROM ledger_checkpoints WHERE epoch < %s AND size > (SELECT min(size) FROM "
        "ledger_checkpoints WHERE epoch = %s)" % (epoch_new, epoch_new))
    if old_checkpoints not in ("", "0"):
        fail("the deposed leader stored %s checkpoints past the new epoch's first" % old_checkpoints)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not old.get("/readyz")[1].startswith("ready: follower"):
        time.sleep(0.1)
    status, body = old.get("/readyz")
    if not body.startswith("ready: follower"):
        fail("the deposed leader is not a follower after SIGCONT: %d %s" % (status, body))
    latest, _ = check_history(grpc, svc, new, acks, vp)
    # The old node follows the new history.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and checkpoint(grpc, svc, old).tree_size < latest.tree_size:
        time.sleep(0.2)
    if checkpoint(grpc, svc, old, latest.tree_size).note != checkpoint(grpc, svc, new, latest.tree_size).note:
        fail("the old leader serves another checkpoint of size %d than the new one" % latest.tree_size)
    refused = "step_down" in old.log_text()
    print("ok: after SIGCONT (%.1f s after SIGSTOP) the deposed leader acknowledged nothing past seq %d (%d answers "
          "of batches it had committed before) and signed nothing%s, and follows; %d receipts acknowledged in all"
          % (resumed_at - stopped_at, epoch_start, len(late),
                                                         " (its in-flight batch refused by the fence)"
                                                         if "the fence is at epoch" in old.log_text() else
                                                         " (a batch it had committed reached its store after it "
                                                         "stepped down)" if "replication_own_batch" in old.log_text()
                                                         else "",
                                                         len(acks)))
    if not refused:
        fail("the deposed leader did not log a step-down")


def scenario_sync_warning(args, work, shard, grpc, svc, pb, vp):
    leader = shard.start()
    acks, lock = {}, threading.Lock()
    join(stream(grpc, svc, pb, [leader], 500, acks, lock, clients=1))
    # The sweeper's declarations of the warm-up's unfinished steps, and the
    # checkpoint over them, are committed before the standby goes.
    time.sleep(1.5)
    shard.pg.standby.stop()  # commits now wait for a standby that is gone
    got = {}

    def append():
        with grpc.insecure_channel(leader.address) as ch:
            try:
                r = svc.LedgerServiceStub(ch).Append(svc.AppendRequest(receipts=[pb.Receipt(
                    receipt_id="waits-for-the-standby", team="team-a", run_id="r", step_id="s", occurred_at_us=1,
                    model_call=pb.ModelCall(route="m", decision=pb.DECISION_ALLOW))]), timeout=20)
                got["result"] = r.results[0]
            except Exception as e:
                got["error"] = e
    t = threading.Thread(target=append)
    t.start()
    # The ledger's commit waits on SyncRep; cancel that wait as an operator
    # (or a failing primary) would: PostgreSQL answers with a WARNING and
    # the commit's success.
    deadline = time.monotonic() + 20
    cancelled = 0
    while time.monotonic() < deadline and t.is_alive():
        cancelled += int(shard.pg.primary.sql(
            "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity WHERE application_name = 'evidence-ledger' "
            "AND wait_event = 'SyncRep' AND query LIKE 'WITH fence%'") or 0)
        time.sleep(0.02)
    if cancelled == 0:
        fail("no commit of the ledger waited for the standby")
    t.join(timeout=30)
    local = shard.pg.primary.sql("SELECT count(*) FROM ledger_batches WHERE leaves LIKE '%waits-for-the-standby%'")
    if "result" in got and got["result"].code == 0:
        fail("the ledger acknowledged seq %d although PostgreSQL said the commit might not have been replicated "
             "(batch rows on the primary: %s)" % (got["result"].seq, local))
    refusal = str(got.get("result") or got.get("error")).strip()
    print("refused: %s" % refusal[:400])
    if "the commit came back with a warning" not in refusal:
        fail("the append was not refused for the commit's warning")
    print("ok: the commit answered with PostgreSQL's warning was not acknowledged (rows on the primary alone: %s)"
          % local)


def scenario_pg_failover(args, work, shard, grpc, svc, pb, vp):
    shard.start()
    acks, lock = {}, threading.Lock()
    clients = stream(grpc, svc, pb, shard.nodes, args.receipts, acks, lock)
    while acked_count(acks, lock) < args.receipts // 3:
        time.sleep(0.05)
    before = acked_count(acks, lock)
    shard.pg.primary.kill()
    killed = time.monotonic()
    shard.pg.promote_standby()
    print("PostgreSQL primary killed with %d receipts acknowledged; standby promoted in %.1f s"
          % (before, time.monotonic() - killed), flush=True)
    join(clients)
    leader = wait_leader(shard.nodes)
    latest, _ = check_history(grpc, svc, leader, acks, vp)
    print("ok: %d receipts acknowledged, every one on %s (%d entries) after the database failed over"
          % (len(acks), leader.name, latest.tree_size))


def scenario_follower_restore(args, work, shard, grpc, svc, pb, vp):
    backups = os.path.join(work, "backups")
    os.makedirs(backups)
    for n in shard.nodes:
        n.cmd += ["--backup-root", backups]
    leader = shard.start()
    acks, lock = {}, threading.Lock()
    join(stream(grpc, svc, pb, shard.nodes, 3000, acks, lock, clients=2))
    follower = next(n for n in shard.nodes if n is not leader)
    backup = os.path.join(backups, "b1")
    subprocess.run([os.path.join(args.build, "cmd", "ledgerctl"), "--server", follower.address, "backup", "--out",
                    backup], check=True, capture_output=True)
    join(stream(grpc, svc, pb, [leader], 3000, acks, lock, clients=2, first=2))
    follower.kill()
    shutil.rmtree(follower.data)
    # The tail the follower needs is still kept (it reported within the
    # grace): it comes back from the backup plus the tail.
    follower.start(["--restore-from", backup])
    latest = checkpoint(grpc, svc, leader)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if checkpoint(grpc, svc, follower).tree_size >= latest.tree_size:
                break
        except Exception:
            pass
        time.sleep(0.2)
    if checkpoint(grpc, svc, follower, latest.tree_size).note != latest.note:
        fail("the restored follower serves another checkpoint of size %d" % latest.tree_size)
    check_history(grpc, svc, follower, acks, vp)
    print("ok: the follower came back from its backup plus the tail and serves checkpoint %d" % latest.tree_size)
    # Without a backup an empty follower needs batches that were trimmed.
    follower.kill()
    shutil.rmtree(follower.data)
    join(stream(grpc, svc, pb, [leader], 300, acks, lock, clients=1, first=4))
    shard.pg.primary.sql("UPDATE ledger_nodes SET reported_at = to_timestamp(0) WHERE node = '%s'" % follower.name)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and shard.pg.primary.sql("SELECT min(first_seq) FROM ledger_batches") in ("", "0"):
        time.sleep(0.5)
    follower.start()
    follower.proc.wait(timeout=30)
    if follower.proc.returncode == 0 or "restart this node from a backup" not in follower.log_text() and \
            "start it from a backup" not in follower.log_text():
        fail("an empty follower behind the trimmed tail was not refused with a way out:\n" + follower.log_text()[-800:])
    print("ok: an empty follower behind the trimmed tail is refused: it names --restore-from")


SCENARIOS = {
    "leader-killed": scenario_leader_killed,
    "deposed": scenario_deposed,
    "sync-warning": scenario_sync_warning,
    "pg-failover": scenario_pg_failover,
    "follower-restore": scenario_follower_restore,
    "ten-failovers": lambda *a: scenario_leader_killed(*a, failovers=10),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--receipts", type=int, default=50000)
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)
    work = tempfile.mkdtemp(prefix="replication-%s-" % args.scenario)
    os.chmod(work, 0o755)
    grpc, svc, pb = stubs(work)
    vp = load_verify_pack()
    shard = Shard(args.build, work, witness=args.scenario in ("leader-killed", "ten-failovers"))
    ok = False
    try:
        SCENARIOS[args.scenario](args, work, shard, grpc, svc, pb, vp)
        ok = True
    finally:
        shard.close()
        if not ok:
            for n in shard.nodes:
                print("--- %s (last lines)" % n.name)
                print("\n".join(n.log_text().splitlines()[-15:]))
        if ok and not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
