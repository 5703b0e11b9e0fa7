"""Retention over simulated months (CONTRACT section 9), end to end.

A data directory of RETENTION_ENTRIES entries (2,000,000 unless the
environment says otherwise) logged over 120 simulated days by the ledger
itself on an injected clock (tests/util/retention_fill.cc), then:
1. a real ledgerd (plain text, loopback) serves it; a run pack and a seq
   range pack are exported before any pruning;
2. a pass on simulated day 120 (acme keeps 30 days, other teams 90, audit
   for good) is killed (SIGKILL) twice midway; after each kill
   `ledgerctl audit` is clean; the third run finishes it, and the audit
   counts the pruned entries;
3. the disk: bytes of the store before and after, against the bound
   after <= before * (entries kept / entries) + 48 bytes * entries
   (the leaf hashes, the tree's inner nodes, checkpoints and maps stay);
4. ledgerd serves the pruned log: Go's sumdb/tlog proves kept and pruned
   entries from the hash tiles, reads their bundles (leaves and pruned
   lines), and checks the consistency of every checkpoint ever signed with
   the latest; the packs exported before verify offline; a pack of a
   pruned run is refused, saying so; a receipt of the same id is new;
5. ledgerd --retention-policy makes a pass of its own on its real clock
   (every simulated entry is older than 90 days by then): the log says so,
   and the audit is clean.

Usage: retention_test.py BUILD_DIR"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ledger_testlib import Ledgerd as StartedLedgerd, fail  # noqa: E402

ORIGIN = "retention.test/log"
DAYS = 120
POLICY = "# the test's policy\ndefault 90d\nteam acme 30d\nteam audit forever\n"


def team_of(n):
    """The team retention_fill gives receipt n (and, with no ledger entry
    among them, entry n)."""
    k = n // 2 % 6
    return "acme" if k < 3 else "globex" if k < 5 else "audit"


def db_bytes(data):
    total = 0
    for root, _, files in os.walk(os.path.join(data, "db")):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def Ledgerd(build, work, data, *extra):
    return StartedLedgerd(build, work, data, ORIGIN, *extra)


def audit(build, data, want_pruned=None):
    r = subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "audit", "--data", data, "--origin", ORIGIN,
                        "--json", "--no-progress"], capture_output=True, text=True)
    if r.returncode != 0:
        fail("ledgerctl audit: %s%s" % (r.stdout, r.stderr))
    report = json.loads(r.stdout)
    if want_pruned is not None and report.get("pruned", 0) != want_pruned:
        fail("audit: %d entries pruned, want %d" % (report.get("pruned", 0), want_pruned))
    return report


def verify(build, pack, vkey):
    r = subprocess.run([os.path.join(build, "cmd", "ledger-verify"), pack, "--vkey", vkey],
                       capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.startswith("OK"):
        fail("ledger-verify %s: %s%s" % (pack, r.stdout, r.stderr))
    return r.stdout


def main():
    build = os.path.abspath(sys.argv[1])
    entries = int(os.environ.get("RETENTION_ENTRIES", "2000000"))
    work = tempfile.mkdtemp(prefix="retention-")
    data = os.path.join(work, "data")
    fill = os.path.join(build, "tests", "retention_fill")
    try:
        t = time.monotonic()
        subprocess.run([fill, "fill", data, "--entries", str(entries), "--days", str(DAYS), "--origin", ORIGIN],
                       check=True, stdout=subprocess.DEVNULL)
        print("filled %d entries over %d simulated days in %.0f s" % (entries, DAYS, time.monotonic() - t))

        # 1. Packs exported before pruning.
        ledgerd = Ledgerd(build, work, data)
        vkey = os.path.join(work, "vkey")
        with open(vkey, "w") as f:
            f.write(ledgerd.ctl("vkey").stdout)
        run_pack, seq_pack = os.path.join(work, "run.tar.gz"), os.path.join(work, "seqs.tar.gz")
        ledgerd.ctl("export", "--run", "acme/run-10", "--out", run_pack, "--no-progress")
        ledgerd.ctl("export", "--seq", "0:5000", "--out", seq_pack, "--no-progress")
        verify(build, run_pack, vkey)
        verify(build, seq_pack, vkey)
        size = int(ledgerd.ctl("checkpoint").stdout.splitlines()[1])
        ledgerd.stop()
        before = db_bytes(data)

        # 2. The pass, killed twice midway, then finished.
        policy = os.path.join(work, "policy")
        with open(policy, "w") as f:
            f.write(POLICY)
        prune = [fill, "prune", data, "--policy", policy, "--day", str(DAYS), "--origin", ORIGIN]
        for delay in (2.0, 6.0):
            p = subprocess.Popen(prune, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            time.sleep(delay)
            if p.poll() is not None:
                fail("the pass ended before it was killed (%.1f s): %s" % (delay, p.stdout.read().decode()))
            p.send_signal(signal.SIGKILL)
            p.wait()
            report = audit(build, data)
            print("killed after %.1f s: audit clean, %d entries read as pruned" % (delay, report.get("pruned", 0)))
        t = time.monotonic()
        done = json.loads(subprocess.run(prune, check=True, capture_output=True, text=True).stdout)
        print("pass finished in %.0f s: %s" % (time.monotonic() - t, json.dumps(done)))
        lines = {r["team"]: r["below_seq"] for r in done["rules"]}
        # Every entry of acme below its line, of globex below the default's.
        want = sum(1 for n in range(lines["acme"]) if team_of(n) == "acme") + \
            sum(1 for n in range(lines[""]) if team_of(n) == "globex")
        report = audit(build, data, want_pruned=want)
        if lines["audit"] != 0 or not 0 < lines[""] < lines["acme"] < size:
            fail("the pass's lines: %s" % lines)

        # 3. The disk.
        after = db_bytes(data)
        bound = before * (size - want) / size + 48 * size
        print("store: %d bytes before, %d after (%.1f%%); %d of %d entries pruned; bound %d" %
              (before, after, 100.0 * after / before, want, size, bound))
        if after > bound:
            fail("the store holds %d bytes after pruning, more than the bound %d" % (after, bound))

        # 4. The pruned log, served.
        ledgerd = Ledgerd(build, work, data)
        probes = []
        for n in (1, 6, 7, 11, lines[""] - 1, lines[""] + 1, lines["acme"] - 6, lines["acme"] + 6, size - 10):
            n -= n % 12
            for k in range(12):
                m = n + k
                gone = (team_of(m) == "acme" and m < lines["acme"]) or (team_of(m) == "globex" and m < lines[""])
                probes.append(("pruned:%d" if gone else "kept:%d") % m)
        env = dict(os.environ, GOPATH="/usr/share/gocode", GO111MODULE="off", GOPROXY="off", GOFLAGS="",
                   GOCACHE=os.path.join(build, "tests", "gocache"))
        r = subprocess.run(["go", "run", os.path.join(HERE, "retention", "tiles.go"), "http://" + ledgerd.http, vkey,
                            os.path.join(data, "checkpoints.jsonl")] + probes, capture_output=True, text=True,
                           env=env)
        if r.returncode != 0:
            fail("Go's tlog over the pruned tiles: %s%s" % (r.stdout, r.stderr))
        print(r.stdout.strip())
        for pack in (run_pack, seq_pack):
            print("exported before the pass: " + verify(build, pack, vkey).splitlines()[0][:100])
        refused = ledgerd.ctl("export", "--run", "acme/run-10", "--out", os.path.join(work, "no.tar.gz"),
                              "--no-progress", check=False)
        if refused.returncode == 0 or "was pruned under the retention policy (pass 1, rule team acme" not in \
                refused.stderr + refused.stdout:
            fail("a pack of a pruned run: %s%s" % (refused.stdout, refused.stderr))
        print("a pack of a pruned run: " + (refused.stderr + refused.stdout).strip().splitlines()[-1])
        if os.path.exists(os.path.join(work, "no.tar.gz")):
            fail("a refused export left a file")
        ledgerd.stop()

        # 5. ledgerd's own pass, on its real clock.
        ledgerd = Ledgerd(build, work, data, "--retention-policy", policy)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and "retention_pass" not in ledgerd.log():
            time.sleep(0.5)
        m = re.search(r'"event":"retention_pass".*?"pass":(\d+),"pruned":(\d+)', ledgerd.log())
        if not m or m.group(1) != "2":
            fail("ledgerd's pass: " + ledgerd.log()[-3000:])
        print("ledgerd --retention-policy: pass %s pruned %s entries" % (m.group(1), m.group(2)))
        ledgerd.stop()
        report = audit(build, data)
        kept_audit = sum(1 for n in range(size) if team_of(n) == "audit")
        if report.get("pruned", 0) != size - kept_audit:
            fail("after ledgerd's pass: %d pruned, want every entry but audit's: %d" %
                 (report.get("pruned", 0), size - kept_audit))
        print("OK: retention over %d entries" % entries)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
