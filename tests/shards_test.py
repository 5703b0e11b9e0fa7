#!/usr/bin/python3
"""Three shards on loopback: routing, per-shard verification, fan-out.

Usage: shards_test.py BUILD_DIR

Three ledgerd, each its own log with origin shards.test/log/shard-<n> (as
root, shard 2 takes its number from its hostname, ledger-2, the way a
StatefulSet pod does). A shard map pins one team and hashes the others.
Then:
  - the Python client (ShardedEmitter) and ledgerctl route every team to the
    same shard; every entry of a shard belongs to a team the map sends there;
  - each team's run exports from its shard as a pack that verifies against
    that shard's key, and not against another shard's;
  - `ledgerctl --shard-map steps --state unknown` asks every shard and lists
    every team's unknown step.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledger_testlib import ROOT, fail, free_port, generate_stubs  # noqa: E402

BASE = "shards.test/log"
TEAMS = ["team-pinned", "team-a", "team-b", "team-c", "team-d", "team-e"]


def main():
    build = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="shards-")
    stubs = os.path.join(work, "stubs")
    subprocess.run([os.path.join(ROOT, "clients", "python", "generate.sh"), stubs], check=True)
    os.environ["EVIDENCE_LEDGER_STUBS"] = stubs
    sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
    import grpc
    from evidence_ledger import ShardedEmitter, ShardMap, receipts
    from evidence_ledger import stubs as pb

    ledgerd = os.path.join(build, "cmd", "ledgerd")
    ledgerctl = os.path.join(build, "cmd", "ledgerctl")
    procs, addresses = [], []
    by_hostname = os.geteuid() == 0 and shutil.which("unshare") is not None
    for n in range(3):
        addresses.append("127.0.0.1:%d" % free_port())
        args = [ledgerd, "--data", os.path.join(work, "shard-%d" % n), "--listen", addresses[n],
                "--http-listen", "127.0.0.1:0", "--checkpoint-interval-ms", "20", "--unknown-grace-ms", "100",
                "--sweep-interval-ms", "50"]
        if n == 2 and by_hostname:
            # A StatefulSet pod: the shard number is the hostname's.
            args = ["unshare", "--uts", "sh", "-c", 'hostname ledger-2 && exec "$@"', "sh"] + args + [
                "--origin", BASE, "--shard-from-hostname"]
        else:
            args += ["--origin", "%s/shard-%d" % (BASE, n)]
        procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=open(os.path.join(work, "%d.err" % n), "wb")))
        if not procs[-1].stdout.readline().startswith(b"listening on"):
            fail("shard %d did not start: %s" % (n, open(os.path.join(work, "%d.err" % n)).read()))
    shard_map_path = os.path.join(work, "shard-map.json")
    doc = {"version": 1, "shards": [{"shard": n, "address": a} for n, a in enumerate(addresses)],
           "teams": {"team-pinned": 0}}
    with open(shard_map_path, "w") as f:
        json.dump(doc, f)
    shard_map = ShardMap(doc)

    def ctl(*args, check=True):
        r = subprocess.run([ledgerctl, "--shard-map", shard_map_path] + list(args), capture_output=True, text=True,
                           timeout=60)
        if check and r.returncode != 0:
            fail("ledgerctl %s: %s %s" % (" ".join(args), r.stdout, r.stderr))
        return r

    # Routing: ledgerctl and the Python client agree; the teams spread out.
    for team in TEAMS:
        routed = json.loads(ctl("route", "--team", team).stdout)
        if routed["shard"] != shard_map.shard_for(team) or routed["address"] != shard_map.address_for(team):
            fail("route %s: ledgerctl %s, python %d" % (team, routed, shard_map.shard_for(team)))
    used = {shard_map.shard_for(t) for t in TEAMS}
    if shard_map.shard_for("team-pinned") != 0 or len(used) < 2:
        fail("the map does not spread the teams: %s" % {t: shard_map.shard_for(t) for t in TEAMS})
    print("routing: %s" % ", ".join("%s->%d" % (t, shard_map.shard_for(t)) for t in TEAMS))

    # Each team: a run with a step that succeeds and one whose worker never reports.
    with ShardedEmitter(shard_map) as emitter:
        for team in TEAMS:
            ok = receipts.agent_start(team, "run-1", "build", decision=receipts.ALLOW, timeout_ms=600000)
            lost = receipts.agent_start(team, "run-1", "test", decision=receipts.ALLOW, timeout_ms=50)
            emitter.emit(ok)
            emitter.emit(receipts.model_call(team, "run-1", "build", route="m", decision=receipts.ALLOW))
            emitter.emit(receipts.agent_exec(team, "run-1", "build", ok.receipt_id, status=receipts.SUCCEEDED))
            emitter.emit(lost)
    if emitter.acknowledged != 4 * len(TEAMS) or emitter.refused:
        fail("emitted: %d acknowledged, refused %s" % (emitter.acknowledged, emitter.refused))

    deadline = time.time() + 30
    while True:
        out = ctl("steps", "--state", "unknown", "--json").stdout
        unknown = [json.loads(line) for line in out.splitlines()]
        if sorted(s["team"] for s in unknown) == sorted(TEAMS):
            break
        if time.time() > deadline:
            fail("fan-out: unknown steps %s" % unknown)
        time.sleep(0.1)
    print("fan-out: steps --state unknown asked 3 shards and found every team's unknown step")

    # Every entry of a shard is of a team the map sends there.
    for n, address in enumerate(addresses):
        with grpc.insecure_channel(address) as ch:
            stub = pb.ledger_grpc.LedgerServiceStub(ch)
            size = stub.GetCheckpoint(pb.ledger.GetCheckpointRequest(), timeout=10).tree_size
            teams = {json.loads(e.leaf)["receipt"]["team"]
                     for e in stub.GetEntries(pb.ledger.GetEntriesRequest(from_seq=0, to_seq=size), timeout=10)}
            origin = stub.GetVerifierKey(pb.ledger.GetVerifierKeyRequest(), timeout=10).origin
        if origin != "%s/shard-%d" % (BASE, n):
            fail("shard %d has origin %s" % (n, origin))
        if any(shard_map.shard_for(t) != n for t in teams):
            fail("shard %d holds entries of %s" % (n, teams))
        with open(os.path.join(work, "vkey-%d" % n), "w") as f:
            f.write(ctl("--shard", str(n), "vkey").stdout)
    print("shards: each holds only its teams' entries, under its own origin")

    # Per-shard evidence: each team's pack verifies with its shard's key only.
    for team in TEAMS:
        n = shard_map.shard_for(team)
        pack = os.path.join(work, "%s.tar.gz" % team)
        ctl("export", "--run", "%s/run-1" % team, "--out", pack)
        ok = subprocess.run([ledgerctl, "verify", pack, "--vkey", os.path.join(work, "vkey-%d" % n)],
                            capture_output=True, text=True)
        if ok.returncode != 0 or "%s/shard-%d" % (BASE, n) not in ok.stdout:
            fail("%s's pack: %s %s" % (team, ok.stdout, ok.stderr))
        other = subprocess.run([ledgerctl, "verify", pack, "--vkey", os.path.join(work, "vkey-%d" % ((n + 1) % 3))],
                               capture_output=True, text=True)
        if other.returncode == 0:
            fail("%s's pack verified with another shard's key" % team)
    print("packs: %d teams' runs exported from their shards, each verified with its shard's key only" % len(TEAMS))
    if by_hostname:
        print("shard 2 took its number from its hostname (--shard-from-hostname)")

    for p in procs:
        p.send_signal(signal.SIGTERM)
        if p.wait(timeout=30) != 0:
            fail("a shard exited %d" % p.returncode)
    print("PASS")


if __name__ == "__main__":
    main()
