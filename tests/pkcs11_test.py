#!/usr/bin/env python3
"""Keys kept in a PKCS#11 token: a real ledgerd and a real ledger-witness
sign through SoftHSM2 (Debian's softhsm2), and what they sign is checked by
tools that never saw the token.

- `ledgerctl keygen --pkcs11 URI` makes the ledger's key in the token and
  prints its verifier key; asked again for the same label it refuses.
- `ledger-witness vkey --key URI --name N` prints the witness's verifier key
  of a token key; the witness cosigns with it. `ledger-monitor` likewise
  cosigns the ledger's time note with a token key.
- ledgerd `--signing-key URI` signs checkpoints the witness cosigns: the
  cosigned checkpoint opens with Go's golang.org/x/mod/sumdb/note, a run
  pack and a seq-range pack pass ledgerctl verify, ledger-verify,
  verify_pack.py and ledger-verify-go with the token key's verifier key.
- No key file is on the data directory (that the token will not show the
  key is keys_test's Pkcs11Test.TheTokenNeverShowsTheKey).
- Restarted with the same URI the ledger goes on; with a wrong PIN it stops
  naming the PIN's file; with another key of the token its rollback guard
  refuses to sign the store's log as someone else (the store's checkpoint
  was not signed by that key).

Usage: pkcs11_test.py BUILD_DIR"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ledger_testlib import SoftToken, fail, go_note_open  # noqa: E402
from policy_pack_test import build_go_verifier  # noqa: E402
from witnessed_ledger_test import ORIGIN, Ledger, check_cosigned, receipts  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "export", "verify",
                                "python"))
import mapcosign  # noqa: E402

ROOT = os.path.dirname(HERE)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def start_witness(build, work, key_uri, vkey_file):
    data = os.path.join(work, "wA")
    vkey = run([os.path.join(build, "cmd", "ledger-witness"), "vkey", "--data", data, "--name", "witness-a.example",
                "--key", key_uri])
    if vkey.returncode != 0:
        fail("ledger-witness vkey --key pkcs11:...: %s" % vkey.stderr)
    out = open(os.path.join(work, "wA.out"), "w")
    proc = subprocess.Popen([os.path.join(build, "cmd", "ledger-witness"), "--data", data, "--listen", "127.0.0.1:0",
                             "--name", "witness-a.example", "--key", key_uri, "--log", vkey_file],
                            stdout=subprocess.PIPE, stderr=out, text=True)
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        fail("ledger-witness with a token key did not start: %s" % open(os.path.join(work, "wA.out")).read())
    if os.listdir(data) and any(name.endswith(".key") for name in os.listdir(data)):
        fail("the witness wrote a key file beside its token key: %r" % os.listdir(data))
    return vkey.stdout.strip(), proc, line.split()[-1]


def verify_all(build, work, packs, vkey_file):
    lvg = build_go_verifier(build)
    verifiers = [("ledgerctl verify", [os.path.join(build, "cmd", "ledgerctl"), "verify"]),
                 ("ledger-verify", [os.path.join(build, "cmd", "ledger-verify")]),
                 ("verify_pack.py", ["/usr/bin/python3", os.path.join(ROOT, "export", "verify", "python",
                                                                       "verify_pack.py")]),
                 ("ledger-verify-go", [lvg])]
    for pack in packs:
        for name, cmd in verifiers:
            r = run(cmd + [pack, "--vkey", vkey_file, "--no-progress"])
            if r.returncode != 0 or not r.stdout.startswith("OK"):
                fail("%s %s: exit %d %r %r" % (name, os.path.basename(pack), r.returncode, r.stdout, r.stderr[-600:]))
            print("ok: %s %s: %s" % (name, os.path.basename(pack), r.stdout.splitlines()[0][:100]))


def refused_start(build, work, data, key_uri, want):
    r = run([os.path.join(build, "cmd", "ledgerd"), "--data", os.path.join(work, data), "--origin", ORIGIN,
             "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--signing-key", key_uri])
    if r.returncode == 0 or want not in r.stdout + r.stderr:
        fail("ledgerd with %s: want a refusal saying %r, got exit %d %r" % (key_uri, want, r.returncode,
                                                                             (r.stdout + r.stderr)[-800:]))
    print("ok: refused: %s" % want)


def monitor_with_token_key(build, work, key_uri, ledger, vkey_file, log_vkey):
    """ledger-monitor with its key in the token: `vkey` prints a monitor key
    (type 0xff evidence-ledger/map-cosignature/v1) of the token's public key,
    one round replays the ledger and cosigns its time note with the token,
    the cosignature verifies from CONTRACT section 5c, and no key file is
    written."""
    data = os.path.join(work, "monitor")
    name = ["--key", key_uri, "--name", "monitor-a.example"]
    vkey = run([os.path.join(build, "cmd", "ledger-monitor"), "vkey", "--data", data] + name)
    if vkey.returncode != 0 or not vkey.stdout.startswith("monitor-a.example+"):
        fail("ledger-monitor vkey --key pkcs11:...: %s %s" % (vkey.stdout, vkey.stderr))
    monitor_vkey = vkey.stdout.strip()
    r = run([os.path.join(build, "cmd", "ledger-monitor"), "--data", data, "--log", "http://" + ledger.http,
             "--log-key", vkey_file, "--once"] + name)
    if r.returncode != 0:
        fail("ledger-monitor --once with a token key: exit %d: %s" % (r.returncode, r.stderr[-800:]))
    with open(os.path.join(data, "cosigned.note"), "rb") as f:
        when = mapcosign.verify(f.read(), log_vkey, monitor_vkey)
    if any(f.endswith(".key") for f in os.listdir(data)):
        fail("the monitor wrote a key file beside its token key: %r" % os.listdir(data))
    print("ok: ledger-monitor cosigned the ledger's time note with the token's key (time %d), no key file" % when)


def main():
    build = os.path.abspath(sys.argv[1])
    ctl = os.path.join(build, "cmd", "ledgerctl")
    with tempfile.TemporaryDirectory() as work:
        token = SoftToken(work)
        uri = token.uri
        made = run([ctl, "keygen", "--origin", ORIGIN, "--pkcs11", uri("log-key")])
        if made.returncode != 0:
            fail("ledgerctl keygen --pkcs11: %s" % made.stderr)
        log_vkey = made.stdout.strip()
        again = run([ctl, "keygen", "--origin", ORIGIN, "--pkcs11", uri("log-key")])
        if again.returncode == 0 or "a key is never replaced" not in again.stderr:
            fail("a second keygen of the same label: exit %d %r" % (again.returncode, again.stderr))
        if run([ctl, "keygen", "--origin", "w", "--pkcs11", uri("witness-key")]).returncode != 0:
            fail("ledgerctl keygen --pkcs11 of the witness's key")
        if run([ctl, "keygen", "--origin", "m", "--pkcs11", uri("monitor-key")]).returncode != 0:
            fail("ledgerctl keygen --pkcs11 of the monitor's key")
        print("ok: ledgerctl keygen made two keys in the token (%s); a third of an existing label was refused"
              % log_vkey)

        vkey_file = os.path.join(work, "log.vkey")
        with open(vkey_file, "w") as f:
            f.write(log_vkey + "\n")
        witness_vkey, witness, address = start_witness(build, work, uri("witness-key"), vkey_file)
        policy = os.path.join(work, "ledger.policy")
        with open(policy, "w") as f:
            f.write("log %s\nwitness A %s http://%s\nquorum A\n" % (log_vkey, witness_vkey, address))
        ledger = Ledger(build, work, policy, extra=["--signing-key", uri("log-key"),
                                                    "--witness-quorum-required"])
        packs = [os.path.join(work, "run.tar.gz"), os.path.join(work, "seq.tar.gz")]
        try:
            ledger.ctl("append", "-", stdin=receipts(0, 30))
            note = ledger.ctl("checkpoint", "--at-least", "30", "--cosignatures", "1", "--timeout-ms", "20000")
            check_cosigned(note, log_vkey, {"A": witness_vkey})
            served = ledger.ctl("vkey").strip()
            if served != log_vkey:
                fail("ledgerctl vkey %r is not the token key's %r" % (served, log_vkey))
            print("ok: ledgerd signed with the token's key and the token-keyed witness cosigned: size %s"
                  % note.split("\n")[1])
            go_note_open(work, note, log_vkey)
            print("ok: Go's note.Open verifies the checkpoint the token signed")
            monitor_with_token_key(build, work, uri("monitor-key"), ledger, vkey_file, log_vkey)
            ledger.ctl("export", "--run", "team-a/run-1", "--out", packs[0])
            ledger.ctl("export", "--seq", "0:30", "--out", packs[1])
        finally:
            ledger.stop()
        verify_all(build, work, packs, vkey_file)

        data = os.path.join(work, "data")
        keys = [os.path.join(d, f) for d, _, fs in os.walk(data) for f in fs if f.endswith(".key")]
        if keys:
            fail("a key file on the data directory of a token-keyed ledger: %r" % keys)
        print("ok: no key file on the data directory (%d files)" % sum(len(fs) for _, _, fs in os.walk(data)))

        # Restarted with the same key it goes on from its store.
        ledger = Ledger(build, work, policy, extra=["--signing-key", uri("log-key")])
        try:
            ledger.ctl("append", "-", stdin=receipts(30, 5))
            note = ledger.ctl("checkpoint", "--at-least", "35", "--timeout-ms", "20000")
            if int(note.split("\n")[1]) < 35:
                fail("the restarted ledger's checkpoint: %r" % note)
        finally:
            ledger.stop()
        print("ok: restarted with the same token key it signed size %s" % note.split("\n")[1])

        # CONTRACT section 5d: the log moves to a second key of the token;
        # the witness, told the rotation, cosigns what the new key signs.
        made = run([ctl, "keygen", "--origin", ORIGIN, "--pkcs11", uri("log-key-2")])
        if made.returncode != 0:
            fail("ledgerctl keygen --pkcs11 of the second log key: %s" % made.stderr)
        second_vkey = made.stdout.strip()
        ledger = Ledger(build, work, policy, extra=["--signing-key", uri("log-key")])
        try:
            rotated = json.loads(ledger.ctl("rotate-key", "--new-key", uri("log-key-2")))
            if rotated["old_key"] != log_vkey or rotated["new_key"] != second_vkey:
                fail("rotate-key to the token's second key: %r" % rotated)
            ledger.ctl("append", "-", stdin=receipts(35, 5))
            note = ledger.ctl("checkpoint", "--at-least", str(rotated["seq"] + 6), "--cosignatures", "1",
                              "--timeout-ms", "20000")
            check_cosigned(note, second_vkey, {"A": witness_vkey})
        finally:
            ledger.stop()
        refused_start(build, work, "data", uri("log-key"), "the log rotated from this key")
        ledger = Ledger(build, work, policy, extra=["--signing-key", uri("log-key-2")])
        try:
            ledger.ctl("append", "-", stdin=receipts(40, 5))
            ledger.ctl("checkpoint", "--at-least", str(rotated["seq"] + 11), "--timeout-ms", "20000")
        finally:
            ledger.stop()
        keys = [os.path.join(d, f) for d, _, fs in os.walk(data) for f in fs if ".key" in f]
        if keys:
            fail("a key file on the data directory after a rotation between token keys: %r" % keys)
        print("ok: rotated from the token's key to a second one at seq %d: the witness cosigns the new key's "
              "checkpoints, the old key is refused at start, the new one goes on, no key file written"
              % rotated["seq"])
        refused_start(build, work, "data", uri("log-key", pin="wrong-pin"),
                      "refused the PIN in %s" % os.path.join(work, "wrong-pin"))
        refused_start(build, work, "data", uri("witness-key"), "was not signed by this key")
        refused_start(build, work, "other", uri("log-key").replace("module-path=", "pin-value=1234&module-path="),
                      "pin-value: a PIN on a command line")
        if os.path.exists(os.path.join(work, "other", "signing.key")):
            fail("a refused start wrote a key file")
        witness.terminate()
        witness.wait(timeout=30)


if __name__ == "__main__":
    start = time.time()
    main()
    print("ok: pkcs11 in %.1f s" % (time.time() - start))
