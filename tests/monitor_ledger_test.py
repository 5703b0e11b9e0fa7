#!/usr/bin/env python3
"""A real ledgerd asking a real ledger-monitor (CONTRACT section 5c), both on
loopback:

- genuine: each time note is replayed and cosigned by the monitor; an export
  under --monitor-quorum-required carries the map cosignature in its
  checkpoint-time file, `ledgerctl checkpoint --time-note` and HTTP
  /checkpoint/time-note serve it, and the four verifiers (ledgerctl verify,
  ledger-verify, verify_pack.py, ledger-verify-go) accept the pack under an
  auditor's policy that requires the monitor, printing its `monitored:` line;
- over HTTPS with client certificates, a ledger without a certificate the
  monitor's CA signed gets no cosignature, one with it does;
- a monitor reading a ledger with mutual TLS as an auditor of every team
  cosigns; one whose certificate names a reader is refused the tiles (403);
- the monitor killed with SIGKILL mid-log resumes from its state on disk (it
  does not read the log again from seq 0) and cosigns the later notes;
- the three forgeries of a key-holding operator (a run's head moved back, its
  tail dropped; a team's head moved back, closing its window early; a team
  claimed absent), made in the stopped ledger's store (tests/util/
  alter_heads.cc) so that the ledger itself signs the forged roots: each
  forged pack verifies without a policy (the attack works where no monitor
  is required), the monitor refuses the note, raises its alarm (metric,
  alarm.json with the finding) and stays halted, an export under
  --monitor-quorum-required fails naming the refusal, and all four
  verifiers refuse the pack under the auditor's policy.

Usage: monitor_ledger_test.py BUILD_DIR"""
import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "export", "verify", "python"))
import mapcosign  # noqa: E402
import tlog_spec as t  # noqa: E402
from ledger_testlib import Certificates, fail, free_port  # noqa: E402
import pack_tamper_test as pt  # noqa: E402
import team_window_pack_test as twt  # noqa: E402
from policy_pack_test import build_go_verifier  # noqa: E402
from witnessed_ledger_test import ORIGIN, write_log_key  # noqa: E402

MONITOR = "monitor-a.example"


def receipts(first, count, teams=("team-a", "team-b", "team-c")):
    return "".join(json.dumps({
        "receipt_id": "m-%d" % i, "kind": "tool_call", "team": teams[i % len(teams)], "run_id": "run-%d" % (i % 2),
        "occurred_at_us": 1767225600000000 + i, "tool": "git", "decision": "allow"}) + "\n"
        for i in range(first, first + count))


class Process:
    """A program started with its output in a file, up once it printed
    `ready` (a line prefix)."""

    def __init__(self, cmd, out_path, ready):
        self.out_path = out_path
        self.out = open(out_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=self.out)
        deadline = time.time() + 30
        while not any(x.startswith(ready) for x in self.text().splitlines()):
            if self.proc.poll() is not None or time.time() > deadline:
                fail("%s did not start: %s" % (cmd[0], self.text()))
            time.sleep(0.05)

    def text(self):
        with open(self.out_path, errors="replace") as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=60)
        self.out.close()


class Setup:
    def __init__(self, build, work, tls=None):
        self.build, self.work = build, work
        self.data, self.mdata = os.path.join(work, "data"), os.path.join(work, "monitor")
        self.log_vkey = write_log_key(self.data)
        self.vkey_file = os.path.join(work, "log.vkey")
        with open(self.vkey_file, "w") as f:
            f.write(self.log_vkey + "\n")
        r = subprocess.run([self.bin("ledger-monitor"), "vkey", "--data", self.mdata, "--name", MONITOR],
                           capture_output=True, text=True, check=True)
        self.monitor_vkey = r.stdout.strip()
        self.http_port, self.monitor_port = free_port(), free_port()
        # With `tls` (a Certificates): the monitor serves HTTPS with client
        # certificates, and the ledger is given the CA and a client certificate.
        self.tls = tls
        self.policy = os.path.join(work, "ledger.policy")
        with open(self.policy, "w") as f:
            f.write("log %s\nmonitor M1 %s %s://127.0.0.1:%d\nquorum none\n"
                    % (self.log_vkey, self.monitor_vkey, "https" if tls else "http", self.monitor_port))
        # The auditor's: the same monitor, no URL (verifiers ignore it).
        self.auditor_policy = os.path.join(work, "auditor.policy")
        with open(self.auditor_policy, "w") as f:
            f.write("log %s\nmonitor M1 %s\nquorum none\n" % (self.log_vkey, self.monitor_vkey))
        self.ledger = self.monitor = None

    def out_file(self, name):
        """A new file for each start of a program."""
        self.starts = getattr(self, "starts", 0) + 1
        return os.path.join(self.work, "%s-%d.out" % (name, self.starts))

    def bin(self, name):
        return os.path.join(self.build, "cmd", name)

    def start_ledger(self, required=True, client_cert=True):
        tls_args = []
        if self.tls:
            tls_args = ["--monitor-tls-ca", self.tls.ca]
            if client_cert:
                cert, key = self.tls.issue("ledger", "ledger", "URI:spiffe://test/ledger")
                tls_args += ["--monitor-tls-cert", cert, "--monitor-tls-key", key]
        self.ledger = Process(
            [self.bin("ledgerd"), "--data", self.data, "--origin", ORIGIN, "--listen", "127.0.0.1:0",
             "--http-listen", "127.0.0.1:%d" % self.http_port, "--checkpoint-interval-ms", "50",
             "--monitor-policy", self.policy, "--monitor-quorum-wait-ms", "20000"] +
            (["--monitor-quorum-required"] if required else []) + tls_args,
            self.out_file("ledgerd"), "listening on ")
        self.addr = next(x.split()[-1] for x in self.ledger.text().splitlines() if x.startswith("listening on "))

    def start_monitor(self):
        tls_args = []
        if self.tls:
            cert, key = self.tls.issue("monitor", "monitor", "IP:127.0.0.1")
            tls_args = ["--tls-cert", cert, "--tls-key", key, "--client-ca", self.tls.ca]
        self.monitor = Process(
            [self.bin("ledger-monitor"), "--data", self.mdata, "--log", "http://127.0.0.1:%d" % self.http_port,
             "--log-key", self.vkey_file, "--listen", "127.0.0.1:%d" % self.monitor_port, "--interval-ms",
             # Over HTTPS the ledger's requests alone make it cosign.
             "3600000" if self.tls else "100"] + tls_args,
            self.out_file("monitor"), "listening on ")

    def ctl(self, *args, stdin=None, check=True):
        r = subprocess.run([self.bin("ledgerctl"), "--server", self.addr] + list(args), input=stdin,
                           capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            fail("ledgerctl %s: %s" % (" ".join(args), r.stderr))
        return r

    def get(self, port, path):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def size(self):
        return int(self.ctl("checkpoint").stdout.splitlines()[1])

    def wait_cosigned(self, size):
        """Until the monitor cosigned a note of at least `size`."""
        deadline = time.time() + 60
        while True:
            status, note = self.get(self.monitor_port, "/cosigned")
            if status == 200 and int(note.splitlines()[2]) >= size:
                return note
            if time.time() > deadline:
                fail("the monitor did not cosign size %d: %s" % (size, self.monitor.text()[-2000:]))
            time.sleep(0.1)

    def stop(self):
        for p in (self.ledger, self.monitor):
            if p is not None:
                p.stop()


def verifiers(build, lvg):
    verify_py = os.path.join(ROOT, "export", "verify", "python", "verify_pack.py")
    return [("ledgerctl verify", [os.path.join(build, "cmd", "ledgerctl"), "verify"], "OK: ", "FAILED: "),
            ("ledger-verify", [os.path.join(build, "cmd", "ledger-verify")], "OK: ", "FAILED: "),
            ("verify_pack.py", ["/usr/bin/python3", verify_py], "OK: ", "FAILED: "),
            ("ledger-verify-go", [lvg], "OK ", "FAIL: ")]


def verify_all(build, lvg, pack, args, ok, want, resigned=False):
    """Each verifier on `pack`: with `ok`, exit 0 and `want` among the
    lines; else exit 1 and `want` in the last line. A pack the test
    re-signed keeps the ledger's report.html, which the C++ verifiers then
    check by its digest (--report-by-digest) rather than rebuild."""
    for name, cmd, ok_prefix, fail_prefix in verifiers(build, lvg):
        extra = ["--report-by-digest"] if resigned and name in ("ledgerctl verify", "ledger-verify") else []
        r = subprocess.run(cmd + [pack] + args + extra, capture_output=True, text=True, timeout=120)
        out = r.stdout.splitlines()
        if ok:
            good = r.returncode == 0 and any(x.startswith(ok_prefix) for x in out) and (want is None or want in out)
        else:
            good = r.returncode == 1 and out[-1:] and out[-1].startswith(fail_prefix) and want in out[-1]
        if not good:
            fail("%s %s %s: want %s %r, got exit %d: %s %s" % (name, pack, " ".join(args), "OK" if ok else "FAILED",
                                                               want, r.returncode, r.stdout[-800:], r.stderr[-800:]))
        print("ok: %s: %s" % (name, next((x for x in out if x.startswith("monitored:")), out[-1] if out else "")))


def map_cosignature_time(s, note):
    """The monitor's map cosignature on `note`, checked from CONTRACT
    section 5c by export/verify/python/mapcosign.py: its time."""
    return mapcosign.verify(note.encode(), s.log_vkey, s.monitor_vkey)


def iso(seconds):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def genuine(build, lvg, work):
    s = Setup(build, work)
    try:
        s.start_ledger()
        s.start_monitor()
        s.ctl("append", "-", stdin=receipts(0, 30))
        s.ctl("checkpoint", "--at-least", "30", "--timeout-ms", "20000")
        pack = os.path.join(work, "genuine.tar.gz")
        s.ctl("export", "--run", "team-a/run-0", "--out", pack, "--no-progress")
        with tarfile.open(pack) as tar:
            member = next(m for m in tar.getnames() if m.split("/")[-1] == "checkpoint-time")
            time_note = tar.extractfile(member).read().decode()
        when = map_cosignature_time(s, time_note)
        print("ok: the pack's checkpoint-time note carries M1's map cosignature, time %d" % when)
        line = "monitored: monitor-quorum 1 of 1 met; map cosigned by M1 at %s (%d)" % (iso(when), when)
        verify_all(build, lvg, pack, ["--vkey", s.vkey_file, "--policy", s.auditor_policy], True, line)
        # Served: ledgerctl checkpoint --time-note and HTTP, once the background asked.
        size = s.size()
        s.wait_cosigned(size)
        deadline = time.time() + 30
        while True:
            served = s.ctl("checkpoint", "--time-note").stdout
            if int(served.splitlines()[2]) == size and len(t.signature_lines(served)) == 2:
                break
            if time.time() > deadline:
                fail("ledgerctl checkpoint --time-note never carried the map cosignature: %r" % served)
            time.sleep(0.1)
        map_cosignature_time(s, served)
        status, over_http = s.get(s.http_port, "/checkpoint/time-note")
        if status != 200 or len(t.signature_lines(over_http)) != 2:
            fail("/checkpoint/time-note: %d %r" % (status, over_http))
        metrics = s.get(s.http_port, "/metrics")[1]
        if 'ledger_map_cosignatures_total{monitor="M1"}' not in metrics:
            fail("ledgerd's /metrics lacks ledger_map_cosignatures_total: %s" % metrics[-500:])
        if "ledger_monitor_alarm 0\n" not in s.get(s.monitor_port, "/metrics")[1]:
            fail("the monitor's /metrics does not say ledger_monitor_alarm 0")
        print("ok: GetCheckpoint --time-note, /checkpoint/time-note and /metrics carry M1's cosignature")

        # SIGKILL mid-log: a restart resumes from what it kept.
        s.monitor.stop(signal.SIGKILL)
        kept = size
        s.ctl("append", "-", stdin=receipts(30, 600))
        s.ctl("checkpoint", "--at-least", "630", "--timeout-ms", "20000")
        s.start_monitor()
        started = next(json.loads(x) for x in s.monitor.text().splitlines()[::-1]
                       if '"monitor_started"' in x)
        if started["replayed"] < kept:
            fail("the restarted monitor replays from %d, not from the %d it kept" % (started["replayed"], kept))
        s.wait_cosigned(630)
        pack2 = os.path.join(work, "after-restart.tar.gz")
        s.ctl("export", "--run", "team-b/run-1", "--out", pack2, "--no-progress")
        verify_all(build, lvg, pack2, ["--vkey", s.vkey_file, "--policy", s.auditor_policy], True, None)
        print("ok: killed at %d entries replayed, restarted from %d, cosigned the note of 630" % (kept, started["replayed"]))
        # The ledger keeps each line beside its note: restarted, it serves
        # the older note of `kept` with M1's line still.
        s.ledger.stop()
        s.start_ledger()
        older = s.ctl("checkpoint", "--size", str(kept), "--time-note").stdout
        if len(t.signature_lines(older)) != 2:
            fail("after a restart the time note of %d lost M1's cosignature: %r" % (kept, older))
        map_cosignature_time(s, older)
        print("ok: restarted, the ledger serves the note of %d with M1's cosignature kept beside it" % kept)
    finally:
        s.stop()


ATTACKS = [
    # name, alter_heads arguments, export arguments, the finding's check,
    # and what alarm.json's `difference` names. Receipt i is of
    # teams[i % 3] and run-(i % 2): team-a/run-0's entries are every 6th
    # (the last 24), team-b's 1, 4, .., 28, team-c's first 2.
    ("a run's head moved back, its tail dropped", ["run-back", "team-a", "run-0"], ["--run", "team-a/run-0"],
     "run_map", {"map": "runs", "team": "team-a", "run_id": "run-0", "first_differing_seq": 24,
                 "moved_back": True, "ledger_count": 4}),
    ("a team's window closed by a forged team head", ["team-back", "team-b"],
     ["--team", "team-b", "--from", "2000-01-01T00:00:00Z", "--to", "2100-01-01T00:00:00Z"], "team_map",
     {"map": "teams", "team": "team-b", "first_differing_seq": 28, "moved_back": True, "ledger_count": 9}),
    ("a team claimed absent", ["team-drop", "team-c"],
     ["--team", "team-c", "--from", "2000-01-01T00:00:00Z", "--to", "2100-01-01T00:00:00Z", "--allow-empty"],
     "team_map", {"map": "teams", "team": "team-c", "first_differing_seq": 2, "moved_back": False,
                  "ledger_count": None}),
]


def forge_window(build, s, pack, head):
    """The operator's pack of a window its forged team head closes: the
    ledger's exporter still holds the team's entries after the forged head
    (or of a team claimed absent), so the operator drops them and signs the
    manifest again with the ledger's key, outcomes recomputed."""
    files = pt.read_pack(pack)
    last = -1 if head == "none" else int(head)
    drop = {json.loads(x)["seq"] for x in dict(files)["entries.jsonl"].decode().splitlines()
            if json.loads(x)["seq"] > last}
    if not drop:
        fail("the ledger's pack of the forged window holds no entry after the forged head %s" % head)
    forged = pt.resigned(twt.dropped(files, drop), pt.signer(os.path.join(s.data, "signing.key")),
                         os.path.join(build, "tests", "pack_outcomes"))
    pt.write_pack(forged, pack)


def attack(build, lvg, work, name, alter, export, check, difference):
    s = Setup(build, work)
    try:
        s.start_ledger(required=False)
        s.start_monitor()
        s.ctl("append", "-", stdin=receipts(0, 30))
        s.ctl("checkpoint", "--at-least", "30", "--timeout-ms", "20000")
        s.wait_cosigned(s.size())
        s.ledger.stop()
        r = subprocess.run([os.path.join(build, "tests", "alter_heads"), s.data] + alter, capture_output=True,
                           text=True)
        if r.returncode != 0:
            fail("alter_heads %s: %s" % (alter, r.stderr))
        forged_head = r.stdout.split()[-1]
        s.start_ledger(required=False)
        # An entry of another team: the ledger signs the forged roots with it.
        s.ctl("append", "-", stdin=receipts(30, 1, teams=("team-d",)))
        s.ctl("checkpoint", "--at-least", "31", "--timeout-ms", "20000")
        pack = os.path.join(work, "forged.tar.gz")
        s.ctl("export", *export, "--out", pack, "--no-progress", "--pack-format", "5")
        if export[0] == "--team":
            forge_window(build, s, pack, forged_head)
        # Where no monitor is required, the forgery passes: the attack works.
        verify_all(build, lvg, pack, ["--vkey", s.vkey_file], True, None, resigned=export[0] == "--team")
        # The monitor refuses the note and halts.
        deadline = time.time() + 60
        while "ledger_monitor_alarm 1\n" not in s.get(s.monitor_port, "/metrics")[1]:
            if time.time() > deadline:
                fail("%s: the monitor raised no alarm: %s" % (name, s.monitor.text()[-2000:]))
            time.sleep(0.1)
        with open(os.path.join(s.mdata, "alarm.json")) as f:
            evidence = json.load(f)
        # The note refused: the one the ledger signs again for its latest
        # checkpoint when it opens the altered store (30), or the next (31).
        if evidence["finding"]["check"] != check or int(evidence["refused_note"].splitlines()[2]) not in (30, 31):
            fail("%s: alarm.json: %r" % (name, evidence))
        if '"monitor_alarm"' not in s.monitor.text():
            fail("%s: the monitor logged no monitor_alarm" % name)
        # Which run or team the ledger misstates, found with the ledger's
        # own map proofs, and the first entry its head leaves out.
        d = evidence.get("difference") or {}
        got = {k: d.get(k) for k in difference if k != "ledger_count"}
        got_count = (d.get("ledger_head") or {}).get("count")
        if got != {k: v for k, v in difference.items() if k != "ledger_count"} or \
                got_count != difference["ledger_count"] or d.get("run_id") != difference.get("run_id"):
            fail("%s: alarm.json's difference: %r, want %r" % (name, d, difference))
        named = difference["team"] + ("/" + difference["run_id"] if "run_id" in difference else "")
        if "the ledger misstates %s, first at seq %d" % (named, difference["first_differing_seq"]) \
                not in s.monitor.text():
            fail("%s: the monitor's log does not name %s: %s" % (name, named, s.monitor.text()[-1500:]))
        print("ok: %s: the alarm names %s, first at seq %d, located with %d of the ledger's map paths" % (
            name, named, d["first_differing_seq"], d["proofs_asked"]))
        status, body = s.get(s.monitor_port, "/cosigned")
        if int(body.splitlines()[2]) != 30:
            fail("%s: the monitor's last cosigned note is not the genuine one of 30: %r" % (name, body))
        print("ok: %s: the monitor refused %s and halted" % (name, evidence["finding"]["what"]))
        # An export that requires the monitor fails, naming the refusal.
        s.ledger.stop()
        s.start_ledger(required=True)
        r = s.ctl("export", *export, "--out", os.path.join(work, "required.tar.gz"), "--no-progress", check=False)
        if r.returncode == 0 or "lacks the monitor quorum" not in r.stderr or "M1" not in r.stderr:
            fail("%s: an export under --monitor-quorum-required: exit %d %s" % (name, r.returncode, r.stderr))
        print("ok: %s: an export under --monitor-quorum-required fails: %s" % (name, r.stderr.strip()[-200:]))
        # Every verifier refuses the forged pack under the auditor's policy.
        verify_all(build, lvg, pack, ["--vkey", s.vkey_file, "--policy", s.auditor_policy], False, "M1",
                   resigned=export[0] == "--team")
    finally:
        s.stop()


def over_https(build, lvg, work):
    """The monitor on HTTPS with client certificates: a ledger given the CA
    and a certificate the monitor's CA signed gets its cosignature; one
    given no certificate does not (its export under the flag fails)."""
    s = Setup(build, work, tls=Certificates(os.path.join(work, "pki")))
    try:
        s.start_monitor()
        s.start_ledger(client_cert=False)
        s.ctl("append", "-", stdin=receipts(0, 10))
        s.ctl("checkpoint", "--at-least", "10", "--timeout-ms", "20000")
        r = s.ctl("export", "--run", "team-a/run-0", "--out", os.path.join(work, "x.tar.gz"), "--no-progress",
                  check=False)
        if r.returncode == 0 or "lacks the monitor quorum" not in r.stderr:
            fail("a ledger without a client certificate got the monitor's cosignature: %s" % r.stderr)
        print("ok: https: a ledger without a client certificate is refused by the monitor: %s"
              % r.stderr.strip()[-160:])
        s.ledger.stop()
        s.start_ledger()
        pack = os.path.join(work, "https.tar.gz")
        s.ctl("export", "--run", "team-a/run-0", "--out", pack, "--no-progress")
        verify_all(build, lvg, pack, ["--vkey", s.vkey_file, "--policy", s.auditor_policy], True, None)
        print("ok: https: the ledger's client certificate gets the cosignature over mutual TLS")
    finally:
        s.stop()


def reading_as_an_auditor(build, work):
    """A ledger with mutual TLS on both ports: a monitor whose certificate
    names an auditor of every team reads the tiles and cosigns; one whose
    certificate names a reader of every team is refused the entry bundles
    (403) and cosigns nothing."""
    ca = Certificates(os.path.join(work, "pki"))
    server_cert, server_key = ca.issue("server", "ledger", "IP:127.0.0.1")
    certs = {who: ca.issue(who, who) for who in ("admin", "auditor-all", "reader-all")}
    policy = os.path.join(work, "access.json")
    with open(policy, "w") as f:
        json.dump({"identities": [{"identity": "cn:admin", "roles": ["admin"]},
                                  {"identity": "cn:auditor-all", "roles": ["auditor"], "teams": ["*"]},
                                  {"identity": "cn:reader-all", "roles": ["reader"], "teams": ["*"]}]}, f)
    data = os.path.join(work, "data")
    log_vkey = write_log_key(data)
    vkey_file = os.path.join(work, "log.vkey")
    with open(vkey_file, "w") as f:
        f.write(log_vkey + "\n")
    http_port = free_port()
    ledger = Process([os.path.join(build, "cmd", "ledgerd"), "--data", data, "--origin", ORIGIN, "--listen",
                      "127.0.0.1:0", "--http-listen", "127.0.0.1:%d" % http_port, "--checkpoint-interval-ms", "50",
                      "--tls-cert", server_cert, "--tls-key", server_key, "--client-ca", ca.ca, "--policy", policy],
                     os.path.join(work, "ledgerd.out"), "listening on ")
    try:
        addr = next(x.split()[-1] for x in ledger.text().splitlines() if x.startswith("listening on "))
        ctl = [os.path.join(build, "cmd", "ledgerctl"), "--server", addr, "--tls-ca", ca.ca, "--cert",
               certs["admin"][0], "--key", certs["admin"][1]]
        subprocess.run(ctl + ["append", "-"], input=receipts(0, 300), text=True, check=True, capture_output=True)
        subprocess.run(ctl + ["checkpoint", "--at-least", "300", "--timeout-ms", "20000"], check=True,
                       capture_output=True)
        for who, code in (("auditor-all", 0), ("reader-all", 1)):
            mdata = os.path.join(work, "monitor-" + who)
            r = subprocess.run([os.path.join(build, "cmd", "ledger-monitor"), "--data", mdata, "--log",
                                "https://127.0.0.1:%d" % http_port, "--log-key", vkey_file, "--log-tls-ca", ca.ca,
                                "--log-tls-cert", certs[who][0], "--log-tls-key", certs[who][1], "--once"],
                               capture_output=True, text=True, timeout=120)
            cosigned = os.path.exists(os.path.join(mdata, "cosigned.note"))
            if r.returncode != code or cosigned != (code == 0):
                fail("a monitor reading as %s: exit %d (want %d), cosigned %s: %s" % (who, r.returncode, code,
                                                                                     cosigned, r.stderr[-600:]))
            if code == 1 and "HTTP 403" not in r.stderr:
                fail("a monitor reading as %s: not refused with 403: %s" % (who, r.stderr[-600:]))
            print("ok: a monitor reading the tiles as %s: %s" % (
                who, "cosigned the note of 300" if code == 0 else
                next(x for x in r.stderr.splitlines() if "403" in x)[-200:]))
    finally:
        ledger.stop()


def main():
    build = os.path.abspath(sys.argv[1])
    lvg = build_go_verifier(build)
    with tempfile.TemporaryDirectory() as work:
        os.makedirs(os.path.join(work, "genuine"))
        genuine(build, lvg, os.path.join(work, "genuine"))
        os.makedirs(os.path.join(work, "https"))
        over_https(build, lvg, os.path.join(work, "https"))
        os.makedirs(os.path.join(work, "reader"))
        reading_as_an_auditor(build, os.path.join(work, "reader"))
        for i, (name, alter, export, check, difference) in enumerate(ATTACKS):
            sub = os.path.join(work, "attack-%d" % i)
            os.makedirs(sub)
            attack(build, lvg, sub, name, alter, export, check, difference)
    print("PASS")


if __name__ == "__main__":
    main()
