#!/usr/bin/env python3
"""A real ledgerd with --witness-policy and two real ledger-witness processes
on loopback: each checkpoint gets both witnesses' cosignatures (verified here
with `cryptography`, from the C2SP texts), served by `ledgerctl checkpoint`
and HTTP /checkpoint and /tlog/checkpoint; one witness killed with SIGKILL mid-run blocks no
append and is counted in /metrics, the other keeps cosigning, and the killed
one, restarted, catches up from the size it cosigned. A witness over HTTPS
with client certificates cosigns for a ledger given its CA and a client
certificate, not for one given another CA, and its --health-listen port
serves /healthz alone in plain HTTP.

Usage: witnessed_ledger_test.py BUILD_DIR"""
import base64
import hashlib
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tlog_spec as t  # noqa: E402
from ledger_testlib import Certificates, SoftToken, fail  # noqa: E402
from witness_server_test import WitnessProcess, witness_vkey  # noqa: E402

# With LEDGER_TEST_KEYS=pkcs11 every key of this suite, the ledgers' and the
# witnesses', is made in a SoftHSM2 token and used through its PKCS#11 URI:
# the same checks then hold for keys that never leave a token.
TOKEN = None
TOKEN_LOG_KEYS = {}  # a ledger's data directory -> its key's URI
BUILD = None

ORIGIN = "witnessed.example/log"


def receipts(first, count):
    return "".join(json.dumps({
        "receipt_id": "w-%d" % i, "kind": "tool_call", "team": "team-a", "run_id": "run-%d" % (i % 3),
        "occurred_at_us": 1767225600000000 + i, "tool": "git", "decision": "allow"}) + "\n"
        for i in range(first, first + count))


class Ledger:
    def __init__(self, build, work, policy, data="data", extra=()):
        self.build, self.work = build, work
        self.out_path = os.path.join(work, data + ".out")
        self.out = open(self.out_path, "wb")
        self.proc = subprocess.Popen(
            [os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(work, data), "--origin", ORIGIN,
             "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--checkpoint-interval-ms", "50",
             "--witness-policy", policy] + token_key_args(os.path.join(work, data)) + list(extra),
            stdout=self.out, stderr=self.out)
        self.addr = self.http = None
        for _ in range(200):
            text = open(self.out_path).read()
            for line in text.splitlines():
                if line.startswith("listening on "):
                    self.addr = line.split()[-1]
                if line.startswith("http on "):
                    self.http = line.split()[-1]
            if (self.addr and self.http) or self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not self.addr:
            fail("ledgerd did not start: " + open(self.out_path).read())

    def ctl(self, *args, stdin=None, check=True):
        r = subprocess.run([os.path.join(self.build, "cmd", "ledgerctl"), "--server", self.addr] + list(args),
                           input=stdin, capture_output=True, text=True, timeout=60)
        if check and r.returncode != 0:
            fail("ledgerctl %s: %s" % (" ".join(args), r.stderr))
        return r.stdout if check else r

    def get(self, path):
        with urllib.request.urlopen("http://%s%s" % (self.http, path), timeout=10) as r:
            return r.read().decode()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self.out.close()


def token_key_args(data):
    """The ledger's --signing-key when its key is in the token."""
    uri = TOKEN_LOG_KEYS.get(os.path.abspath(data))
    return ["--signing-key", uri] if uri else []


def witness_key_args(data, name):
    """A witness's --key and --name when its key is in the token (made on
    first use)."""
    if TOKEN is None:
        return []
    obj = "witness-" + os.path.basename(data)
    if not os.path.exists(os.path.join(TOKEN.work, obj + ".made")):
        TOKEN.keygen(BUILD, "unused", obj)
        open(os.path.join(TOKEN.work, obj + ".made"), "w").close()
    return ["--key", TOKEN.uri(obj), "--name", name]


def write_log_key(data, seed=None):
    """The ledger's signing key, made here so the witnesses can be told its
    verifier key before the ledger starts (Go's note signer-key form); in
    the token with LEDGER_TEST_KEYS=pkcs11."""
    if TOKEN is not None:
        os.makedirs(data, exist_ok=True)
        obj = "log-" + os.path.basename(data)
        TOKEN_LOG_KEYS[os.path.abspath(data)] = TOKEN.uri(obj)
        return TOKEN.keygen(BUILD, ORIGIN, obj)
    seed = seed or os.urandom(32)
    key = t.LogKey(ORIGIN, seed)
    os.makedirs(data, exist_ok=True)
    path = os.path.join(data, "signing.key")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, ("PRIVATE+KEY+%s+%s+%s\n" % (ORIGIN, key.key_id.hex(), t.b64(b"\x01" + seed))).encode())
    os.close(fd)
    return key.vkey()


def check_cosigned(note, log_vkey, witnesses):
    """The cosignature times by name; fails unless the log signed `note` and
    exactly `witnesses` (name -> vkey) cosigned it."""
    text = t.open_note(log_vkey, note)
    lines = t.signature_lines(note)
    times = {}
    for name, vkey in witnesses.items():
        mine = [line for line in lines if line.startswith(t.EM_DASH + " " + vkey.split("+")[0] + " ")]
        if len(mine) != 1:
            fail("want one cosignature by %s in %r" % (name, note))
        times[name] = t.verify_cosignature(vkey, text, mine[0])
    if len(lines) != 1 + len(witnesses):
        fail("want the log's signature and %d cosignatures, got %r" % (len(witnesses), lines))
    return times


def check_tlog_proof(ledger, size, log_vkey, vkeys):
    """`ledgerctl prove --format tlog-proof`, verified as c2sp.org/tlog-proof
    says: the log's signature, the cosignatures, the inclusion path."""
    seq = 3
    note = ledger.ctl("checkpoint", "--at-least", str(size), "--cosignatures", "2", "--timeout-ms", "20000")
    size = int(note.split("\n")[1])
    leaf = bytes.fromhex(json.loads(ledger.ctl("prove", "--seq", str(seq), "--size", str(size)))["leaf_hash"])
    entry = ledger.ctl("entries", "--from", str(seq), "--to", str(seq + 1)).rstrip("\n")
    if t.leaf_hash(entry.encode()) != leaf:
        fail("the leaf hash is not SHA-256(0x00 || entry)")
    index, path, note = t.parse_tlog_proof(ledger.ctl("prove", "--seq", str(seq), "--size", str(size),
                                                       "--format", "tlog-proof"))
    check_cosigned(note, log_vkey, {"A": vkeys["A"], "B": vkeys["B"]})
    root = base64.b64decode(note.split("\n")[2])
    if index != seq or t.root_from_inclusion(index, size, leaf, path) != root:
        fail("the tlog-proof's inclusion path does not lead to its checkpoint's root")
    print("ok: ledgerctl prove --format tlog-proof: entry %d, path of %d hashes, checkpoint cosigned by A and B" %
          (seq, len(path)))


def health_port(line, address):
    """The witness's --health-listen port (`line`, its "health on" line):
    /healthz in plain HTTP and nothing else, while the HTTPS port `address`
    answers no plain HTTP."""
    if not line.startswith("health on "):
        fail("want a 'health on' line after 'listening on', got %r" % line)
    health = line.split()[-1]
    got = []
    for path in ("/healthz", "/add-checkpoint"):
        try:
            with urllib.request.urlopen("http://%s%s" % (health, path), timeout=10) as r:
                got.append((r.status, r.read().decode()))
        except urllib.error.HTTPError as e:
            got.append((e.code, e.read().decode()))
    want = [(200, "ok\n"), (404, "not found: this port serves GET /healthz only\n")]
    if got != want:
        fail("--health-listen: %r, want %r" % (got, want))
    try:
        urllib.request.urlopen("http://%s/healthz" % address, timeout=10)
        fail("the HTTPS port answered plain HTTP")
    except (urllib.error.URLError, ConnectionError, http.client.HTTPException) as e:
        refused = e
    print("ok: --health-listen %s serves /healthz alone in plain HTTP; the HTTPS port refuses it (%s)" %
          (health, refused))


def tls_witness(build, work):
    """A witness over HTTPS with client certificates: the ledger verifies it
    with --witness-tls-ca and presents --witness-tls-cert; with another CA
    the handshake fails and nothing is cosigned."""
    certs = Certificates(os.path.join(work, "pki"))
    other = Certificates(os.path.join(work, "pki-other"), name="other")
    server_cert, server_key = certs.issue("witness", "witness", "IP:127.0.0.1")
    client_cert, client_key = certs.issue("ledger", "ledger", "URI:spiffe://test/ledger")
    log_vkey = write_log_key(os.path.join(work, "tls-data"))
    write_log_key(os.path.join(work, "tls-other"))
    with open(os.path.join(work, "tls-log.vkey"), "w") as f:
        f.write(log_vkey + "\n")
    data = os.path.join(work, "wT")
    key_args = witness_key_args(data, "witness-t.example")
    vkey = witness_vkey(build, data, key_args)
    w = subprocess.Popen([os.path.join(build, "cmd", "ledger-witness"), "--data", data, "--listen", "127.0.0.1:0",
                          "--log", os.path.join(work, "tls-log.vkey"), "--tls-cert", server_cert, "--tls-key",
                          server_key, "--client-ca", certs.ca, "--health-listen", "127.0.0.1:0"] + key_args,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    address = w.stdout.readline().split()[-1]
    health_port(w.stdout.readline(), address)
    policy = os.path.join(work, "tls.policy")
    with open(policy, "w") as f:
        f.write("log %s\nwitness T %s https://%s\nquorum T\n" % (log_vkey, vkey, address))
    ledger = Ledger(build, work, policy, data="tls-data",
                    extra=["--witness-tls-ca", certs.ca, "--witness-tls-cert", client_cert,
                           "--witness-tls-key", client_key])
    try:
        ledger.ctl("append", "-", stdin=receipts(0, 5))
        note = ledger.ctl("checkpoint", "--at-least", "5", "--cosignatures", "1", "--timeout-ms", "20000")
        check_cosigned(note, log_vkey, {"T": vkey})
        print("ok: an https witness (client certificates) cosigned checkpoint %s" % note.split("\n")[1])
    finally:
        ledger.stop()
    with open(policy, "w") as f:
        f.write("log %s\nwitness T %s https://%s\nquorum T\n" % (log_vkey, vkey, address))
    wrong = Ledger(build, work, policy, data="tls-data",
                   extra=["--witness-tls-ca", other.ca, "--witness-tls-cert", client_cert,
                          "--witness-tls-key", client_key])
    try:
        wrong.ctl("append", "-", stdin=receipts(5, 5))
        r = wrong.ctl("checkpoint", "--at-least", "10", "--cosignatures", "1", "--timeout-ms", "1500", check=False)
        if r.returncode == 0:
            fail("a witness that another CA vouches for was trusted: %r" % r.stdout)
        time.sleep(0.5)
        log = open(wrong.out_path).read()
        refused = [line for line in log.splitlines() if '"witness_submission_failed"' in line and ": tls handshake: " in line]
        if not refused:
            fail("no handshake failure logged:\n" + log[-2000:])
        print("ok: with another CA the witness is not trusted (%s)" % refused[0].split('"msg":"')[1].rstrip('"}'))
    finally:
        wrong.stop()
        w.terminate()
        w.wait()


def start_witnesses(build, work, names, vkey_file):
    """A real ledger-witness per name, each for the log of `vkey_file`:
    (name -> the witness's vkey, name -> its WitnessProcess)."""
    vkeys, procs = {}, {}
    for name in names:
        data = os.path.join(work, "w" + name)
        key_args = witness_key_args(data, "witness-%s.example" % name.lower())
        subprocess.run([os.path.join(build, "cmd", "ledger-witness"), "vkey", "--data", data, "--name",
                        "witness-%s.example" % name.lower()] + key_args, check=True, capture_output=True)
        vkeys[name] = witness_vkey(build, data, key_args)
        procs[name] = WitnessProcess(build, data, [vkey_file], extra=key_args)
    return vkeys, procs


def main():
    global BUILD, TOKEN
    build = BUILD = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as work:
        if os.environ.get("LEDGER_TEST_KEYS") == "pkcs11":
            TOKEN = SoftToken(os.path.join(work, "token"))
            print("ok: every key of this run is in a SoftHSM2 token (LEDGER_TEST_KEYS=pkcs11)")
        log_vkey = write_log_key(os.path.join(work, "data"))
        with open(os.path.join(work, "log.vkey"), "w") as f:
            f.write(log_vkey + "\n")
        vkeys, procs = start_witnesses(build, work, ("A", "B"), os.path.join(work, "log.vkey"))
        policy = os.path.join(work, "witnesses.policy")
        with open(policy, "w") as f:
            f.write("log %s\n" % log_vkey)
            for name in ("A", "B"):
                f.write("witness %s %s http://%s\n" % (name, vkeys[name], procs[name].address))
            f.write("group both all A B\nquorum both\n")
        ledger = Ledger(build, work, policy)
        try:
            ledger.ctl("append", "-", stdin=receipts(0, 20))
            note = ledger.ctl("checkpoint", "--at-least", "20", "--cosignatures", "2", "--timeout-ms", "20000")
            times = check_cosigned(note, log_vkey, {"A": vkeys["A"], "B": vkeys["B"]})
            print("ok: checkpoint of %s entries cosigned by A and B at %r" % (note.split("\n")[1], times))
            size = int(note.split("\n")[1])
            served = ledger.get("/checkpoint")
            if int(served.split("\n")[1]) == size and served != note:
                fail("HTTP /checkpoint %r differs from ledgerctl checkpoint %r" % (served, note))
            check_cosigned(served, log_vkey, {"A": vkeys["A"], "B": vkeys["B"]})
            tiled = ledger.get("/tlog/checkpoint")
            if tiled != served:
                fail("HTTP /tlog/checkpoint %r differs from /checkpoint %r" % (tiled, served))
            print("ok: HTTP /checkpoint and /tlog/checkpoint serve the cosigned checkpoint")
            check_tlog_proof(ledger, size, log_vkey, vkeys)
            auditor = os.path.join(work, "auditor.policy")
            with open(auditor, "w") as f:  # an auditor's policy: no URLs
                f.write("log %s\nwitness A %s\nwitness B %s\ngroup both all A B\nquorum both\n" %
                        (log_vkey, vkeys["A"], vkeys["B"]))
            ok = ledger.ctl("policy-check", "--policy", auditor, "-", stdin=note)
            if not ok.startswith("OK: checkpoint %s size %d meets the quorum 'both': cosigned by A at " % (ORIGIN, size)):
                fail("policy-check: %r" % ok)
            print("ok: ledgerctl policy-check: " + ok.strip())

            procs["B"].kill()  # SIGKILL, mid-run
            started = time.monotonic()
            for i in range(5):
                ledger.ctl("append", "-", stdin=receipts(20 + 10 * i, 10))
            took = time.monotonic() - started
            if took > 10:
                fail("5 appends took %.1fs with a witness down" % took)
            note = ledger.ctl("checkpoint", "--at-least", "70", "--cosignatures", "1", "--timeout-ms", "20000")
            check_cosigned(note, log_vkey, {"A": vkeys["A"]})
            r = ledger.ctl("policy-check", "--policy", auditor, "-", stdin=note, check=False)
            want = "lacks the quorum 'both': missing cosignatures of B (cosigned by A at "
            if r.returncode == 0 or want not in r.stderr:
                fail("policy-check of a checkpoint cosigned by A alone: %r %r" % (r.stdout, r.stderr))
            print("ok: ledgerctl policy-check refuses it: " + r.stderr.strip()[:160])
            print("ok: witness B killed: 5 appends in %.2fs, checkpoint %s cosigned by A alone" %
                  (took, note.split("\n")[1]))
            time.sleep(0.6)
            metrics = ledger.get("/metrics")
            down = [line for line in metrics.splitlines()
                    if line.startswith('ledger_witness_failures_total{witness="B",reason="unavailable"}')]
            if not down or int(down[0].split()[-1]) < 1:
                fail("no unavailable failures of B in /metrics:\n" + metrics)
            for want in ('ledger_witness_cosigned_tree_size{witness="A"} 70',
                         'ledger_witness_cosignatures_total{witness="A"} '):
                if want not in metrics:
                    fail("/metrics lacks %r" % want)
            print("ok: /metrics: %s" % down[0])

            # B back on its address, with its record: it catches up from the
            # size it cosigned before the kill (a consistency proof, no 409).
            address = procs["B"].address
            procs["B"] = WitnessProcess(build, os.path.join(work, "wB"), [os.path.join(work, "log.vkey")],
                                        listen=address,
                                        extra=witness_key_args(os.path.join(work, "wB"), "witness-b.example"))
            ledger.ctl("append", "-", stdin=receipts(70, 5))
            note = ledger.ctl("checkpoint", "--at-least", "75", "--cosignatures", "2", "--timeout-ms", "30000")
            check_cosigned(note, log_vkey, {"A": vkeys["A"], "B": vkeys["B"]})
            print("ok: witness B restarted on %s: checkpoint %s cosigned by A and B again" %
                  (address, note.split("\n")[1]))
        finally:
            ledger.stop()
            for p in procs.values():
                p.kill(signal.SIGTERM)
        tls_witness(build, work)
        if TOKEN is not None:
            files = [os.path.join(d, f) for d, _, fs in os.walk(work) for f in fs]
            keys = [f for f in files if open(f, "rb").read(12) == b"PRIVATE+KEY+"]
            if keys:
                fail("note key files beside the token's keys: %r" % keys)
            print("ok: none of the %d files written holds a note key (PRIVATE+KEY+...); every key stayed in the "
                  "token" % len(files))
    print("PASS")


if __name__ == "__main__":
    main()
