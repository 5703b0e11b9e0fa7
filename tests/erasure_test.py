#!/usr/bin/env python3
"""Erasure of one receipt (CONTRACT section 8) through a real ledgerd over
mutual TLS, with two admins, and the packs that hold erased entries
through all four verifiers.

- Refused, and nothing logged: an auditor's erasure (not an admin), the
  approval by the admin who asked, an entry the ledger wrote, a seq
  beyond the log, a reason with a control character.
- Carried out when a second admin approves: the redaction entry names the
  seq, the reason and both admins; no file of the data directory holds the
  erased receipt's marker string, nor does a backup taken after; a backup
  taken before does (the docs say so); the entry bundle holds the redacted
  line, the hash tiles are the same bytes; the step is unknown, redacted.
- Packs: a pack exported before the erasure still verifies; run, seq and
  team packs exported after are of format 8 and every verifier accepts
  them and prints the erased entries; `--pack-format 7` is refused.
- Attacks on a pack of format 8, each re-signed with the ledger's key
  (what a ledger operator could do): every verifier refuses each, naming
  the file (the attack table is printed).
- SIGKILL while an erasure is under way, three times: after the restart
  the store holds either the body and no redaction, or the redaction and
  no body, and `ledgerctl audit` of the stopped store is clean.

Usage: erasure_test.py BUILD_DIR"""
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from erasure_testlib import MARKER, ErasureLedger, receipts  # noqa: E402
from ledger_testlib import fail  # noqa: E402
from pack_tamper_test import read_pack, rebuilt_report, resigned, signer, write_pack  # noqa: E402
from policy_pack_test import build_go_verifier  # noqa: E402

ROOT = os.path.dirname(HERE)


def files_holding(directory, needle):
    found = []
    for base, _, names in os.walk(directory):
        for name in names:
            path = os.path.join(base, name)
            with open(path, "rb") as f:
                if needle in f.read():
                    found.append(path)
    return found


def verifiers(build, go):
    only = os.environ.get("ERASURE_VERIFIERS")
    tools = {
        "ledgerctl verify": [os.path.join(build, "cmd", "ledgerctl"), "verify"],
        "ledger-verify": [os.path.join(build, "cmd", "ledger-verify")],
        "verify_pack.py": ["/usr/bin/python3", os.path.join(ROOT, "export", "verify", "python", "verify_pack.py")],
        "ledger-verify-go": [go],
    }
    return {k: v for k, v in tools.items() if not only or k in only.split(",")}


def verify(cmd, pack, vkey):
    return subprocess.run(cmd + [pack, "--vkey", vkey], capture_output=True, text=True, timeout=120)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = os.path.abspath(sys.argv[1])
    go = build_go_verifier(build)
    with tempfile.TemporaryDirectory() as work:
        ledger = ErasureLedger(build, work)
        try:
            run(build, go, ledger, work)
        finally:
            ledger.stop()
        crashes(build, work)
    print("PASS")


def run(build, go, ledger, work):
    seqs = ledger.append(receipts())
    call, exec_, deny = seqs[1], seqs[3], seqs[4]
    ledger.wait_checkpoint(len(seqs))
    vkey = os.path.join(work, "vkey")
    with open(vkey, "w") as f:
        f.write(ledger.vkey() + "\n")
    before = os.path.join(work, "before.tar.gz")
    ledger.export(before, "--run", "acme/run-7")
    _, tile_before, _ = ledger.https("auditor", "/tlog/tile/0/000.p/%d" % len(seqs))
    ledger.ctl("alice-admin", "backup", "--out", "backup-before")

    # Refusals: nothing is logged by any of them.
    size = len(seqs)
    refusals = [
        ("auditor", ["--seq", str(call), "--reason", "x"], "may not administer"),
        ("alice-admin", ["--seq", str(call), "--reason", "bell \a"], "reason:"),
    ]
    for who, args, want in refusals:
        r = ledger.ctl(who, "erase", *args, check=False)
        if r.returncode == 0 or want not in r.stderr:
            fail("erase %s as %s: want %s, got %s %s" % (args, who, want, r.stdout, r.stderr))
    ledger.ctl("alice-admin", "erase", "--seq", str(size + 5), "--reason", "beyond")
    r = ledger.ctl("bob-admin", "erase", "--seq", str(size + 5), "--reason", "beyond", check=False)
    if r.returncode == 0 or "is not in the log" not in r.stderr:
        fail("erase beyond the log: %s %s" % (r.stdout, r.stderr))
    ledger.ctl("alice-admin", "erase", "--seq", str(call), "--reason", "GDPR art. 17 request 881")
    r = ledger.ctl("alice-admin", "erase", "--seq", str(call), "--reason", "GDPR art. 17 request 881", check=False)
    if r.returncode == 0 or "the second approver must be another admin than cn:alice-admin" not in r.stderr:
        fail("erase approved by the admin who asked: %s %s" % (r.stdout, r.stderr))
    if int(ledger.ctl("auditor", "checkpoint").stdout.splitlines()[1]) != size:
        fail("a refused erasure logged something")

    # Carried out: Bob approves Alice's ask, still pending after her own
    # approval was refused.
    done = json.loads(ledger.ctl("bob-admin", "erase", "--seq", str(call), "--reason",
                                 "GDPR art. 17 request 881").stdout)
    by = done["redaction_seq"]
    if by != size or done["requested_by"] != "cn:alice-admin":
        fail("erase: %s" % done)
    ledger.erase(exec_, "court order 2026-117")
    ledger.erase(deny, "customer data in a reason")
    r = ledger.ctl("alice-admin", "erase", "--seq", str(by), "--reason", "x")
    r = ledger.ctl("bob-admin", "erase", "--seq", str(by), "--reason", "x", check=False)
    if r.returncode == 0 or "entries the ledger wrote are never erased" not in r.stderr:
        fail("erasing the ledger's own entry: %s %s" % (r.stdout, r.stderr))
    size += 3
    ledger.wait_checkpoint(size)
    entry = ledger.ctl("auditor", "entries", "--from", str(by), "--to", str(by + 1)).stdout
    for want in ('"kind":"redaction"', '"entry_seq":%d' % call, '"reason":"GDPR art. 17 request 881"',
                 '"requested_by":"cn:alice-admin"', '"approved_by":"cn:bob-admin"', '"emitter":"ledger"'):
        if want not in entry:
            fail("the redaction entry lacks %s: %s" % (want, entry))
    print("erase: refused for an auditor, a reason with a control character, a seq beyond the log, the approval "
          "of the admin who asked, the ledger's own entry; carried out by two admins, the redaction entry logged")

    # The bytes are gone from the store, from a backup taken now, and from
    # the entry bundle; a backup taken before holds them.
    marker = MARKER.encode()
    held = files_holding(ledger.data, marker)
    if held:
        fail("after the erasure these files hold the marker: %s" % held)
    ledger.ctl("alice-admin", "backup", "--out", "backup-after")
    if files_holding(os.path.join(work, "backup-after"), marker):
        fail("a backup taken after the erasure holds the marker")
    if not files_holding(os.path.join(work, "backup-before"), marker):
        fail("the backup taken before the erasure does not hold the marker: the test proves nothing")
    status, bundle, headers = ledger.https("auditor", "/tlog/tile/entries/000.p/%d" % size)
    if status != 200 or marker in bundle or b'{"redacted":{"by":%d' % by not in bundle:
        fail("entry bundle after the erasure: %d %r" % (status, bundle[:200]))
    _, tile_after, _ = ledger.https("auditor", "/tlog/tile/0/000.p/%d" % len(seqs))
    if tile_after != tile_before:
        fail("the hash tile changed with the erasure")
    print("store, backup and entry bundle hold no byte of the erased receipts; the hash tiles are unchanged; a "
          "backup taken before still holds them")

    steps = ledger.ctl("auditor", "steps", "--team", "acme", "--json").stdout
    for line in steps.splitlines():
        step = json.loads(line)
        if step.get("step_id") in ("build", "deploy"):
            if step.get("state") != "unknown" or "redacted" not in step.get("anomalies", []):
                fail("step %s after its erasure: %s" % (step.get("step_id"), line))
            if MARKER in line:
                fail("the step's view still holds the marker: %s" % line)

    # Packs.
    tools = verifiers(build, go)
    packs = {}
    for name, scope in (("run", ["--run", "acme/run-7"]), ("seqs", ["--seq", "0:%d" % size]),
                        ("team", ["--team", "acme", "--from", "2000-01-01T00:00:00Z", "--to",
                                  "2100-01-01T00:00:00Z"])):
        packs[name] = os.path.join(work, name + ".tar.gz")
        ledger.export(packs[name], *scope)
    # A team window whose after-bound (the team's next entry) was erased.
    stored = [json.loads(x) for x in ledger.ctl("auditor", "entries", "--from", "0", "--to", str(size)).stdout.splitlines()]
    at = lambda e: (e.get("redacted") or e)["logged_at_us"]  # noqa: E731
    rfc3339 = lambda us: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(us // 1000000)) + ".%06dZ" % (us % 1000000)  # noqa: E731
    r = ledger.ctl("auditor", "export", "--out", os.path.join(work, "bound.tar.gz"), "--team", "acme", "--from",
                   rfc3339(at(stored[0])), "--to", rfc3339(at(stored[exec_])), check=False)
    if r.returncode == 0 or "the team's entry %d beside the window was erased" % exec_ not in r.stderr:
        fail("export of a team window whose bound was erased: %s %s" % (r.stdout, r.stderr))
    r = ledger.ctl("auditor", "export", "--out", os.path.join(work, "seven.tar.gz"), "--run", "acme/run-7",
                   "--pack-format", "7", check=False)
    if r.returncode == 0 or "cannot hold an erased entry" not in r.stderr:
        fail("export --pack-format 7 of a run with an erased entry: %s" % r.stderr)
    erased_lines = sorted(
        "entry %d: erased by redaction %d" % (s, b) for s, b in ((call, by), (exec_, by + 1), (deny, by + 2)))
    for tool, cmd in tools.items():
        r = verify(cmd, before, vkey)
        if r.returncode != 0:
            fail("%s on the pack exported before the erasure: %s %s" % (tool, r.stdout, r.stderr))
        for name, pack in packs.items():
            r = verify(cmd, pack, vkey)
            got = sorted(re.findall(r"^entry \d+: erased by redaction \d+", r.stdout, re.M))
            if r.returncode != 0 or got != erased_lines or MARKER in r.stdout:
                fail("%s on the %s pack: %s %s" % (tool, name, r.stdout, r.stderr))
            # An erased completion is no missing one (CONTRACT section 8).
            if "no completion in the log" in r.stdout:
                fail("%s on the %s pack lists an erased step as without a completion: %s" % (tool, name, r.stdout))
    print("packs: the one exported before still verifies; run, seq and team packs of format 8 pass %s, each "
          "printing the erased entries" % ", ".join(tools))
    # ledgerctl pack-proof from the run pack: each entry's proof, an erased
    # one's by the leaf hash its line states, the one the ledger serves.
    run_files = dict(read_pack(packs["run"]))
    pack_size = json.loads(run_files["manifest.json"])["tree_size"]
    for seq in sorted(json.loads(x)["seq"] if "seq" in json.loads(x) else json.loads(x)["redacted"]["seq"]
                      for x in run_files["entries.jsonl"].decode().splitlines()):
        derived = subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "pack-proof", packs["run"], "--seq",
                                  str(seq), "--vkey", vkey, "--format", "json"], capture_output=True, text=True)
        served = ledger.ctl("auditor", "prove", "--seq", str(seq), "--size", str(pack_size))
        if derived.returncode != 0 or json.loads(derived.stdout)["inclusion"] != json.loads(served.stdout)["inclusion"]:
            fail("pack-proof --seq %d of the run pack: %s%s; the ledger serves %s"
                 % (seq, derived.stdout, derived.stderr, served.stdout))
    print("pack-proof: every entry's proof from the run pack of format 8 is the ledger's")

    # The run pack: its redactions are not in its scope, so they are proven
    # by the multiproof alone.
    attacks(build, tools, packs["run"], os.path.join(ledger.data, "signing.key"), vkey, work)


def attacks(build, tools, pack, key_file, vkey, work):
    """Each attack re-signed with the ledger's key: every verifier refuses."""
    sign = signer(key_file)
    files = dict(read_pack(pack))
    entries = files["entries.jsonl"].decode().splitlines(keepends=True)
    redactions = files["redactions.jsonl"].decode().splitlines(keepends=True)
    erased = [i for i, line in enumerate(entries) if line.startswith('{"redacted":')]
    first = erased[0]

    def entries_with(line_at, text):
        e = list(entries)
        e[line_at] = text
        return "".join(e)

    line = json.loads(entries[first])
    forged_hash = dict(line)
    forged_hash["redacted"] = dict(line["redacted"], leaf_hash="00" * 32)
    other_by = json.loads(entries[erased[1]])["redacted"]["by"]
    borrowed = dict(line)
    borrowed["redacted"] = dict(line["redacted"], by=other_by)
    reason = json.loads(redactions[0])
    reason["receipt"]["reason"] = "routine cleanup"
    canonical = lambda o: json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"  # noqa: E731
    manifest7 = json.loads(files["manifest.json"])
    manifest7["format"] = 7
    first_seq = json.loads(entries[first])["redacted"]["seq"]
    first_by = line["redacted"]["by"]
    # Each attack, and the words every verifier refuses it with.
    cases = [
        ("a redacted line whose leaf hash is forged",
         {"entries.jsonl": entries_with(first, canonical(forged_hash))},
         "line %d: seq %d: not the redacted line of redaction %d" % (first + 1, first_seq, first_by)),
        ("a redacted line that names another entry's redaction",
         {"entries.jsonl": entries_with(first, canonical(borrowed))},
         "line %d: seq %d: not the redacted line of redaction %d" % (first + 1, first_seq, other_by)),
        ("redactions.jsonl removed", {"redactions.jsonl": None},
         "redactions.jsonl: missing: entries.jsonl line %d is redacted by seq %d" % (first + 1, first_by)),
        ("a redaction removed from redactions.jsonl", {"redactions.jsonl": "".join(redactions[1:])},
         "which redactions.jsonl does not hold"),
        ("a redaction's reason rewritten", {"redactions.jsonl": canonical(reason) + "".join(redactions[1:])},
         "multiproof.txt: the entries and the multiproof lead to root"),
        ("the pack called format 7",
         {"manifest.json": json.dumps(manifest7, separators=(",", ":"), sort_keys=True) + "\n"},
         "redactions.jsonl: only a pack of format 8 carries redactions"),
    ]
    table = []
    for label, change, want in cases:
        d = dict(files)
        for name, data in change.items():
            if data is None:
                d.pop(name, None)
                m = json.loads(d["manifest.json"])
                del m["files"][name]
                d["manifest.json"] = (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()
            else:
                d[name] = data.encode() if isinstance(data, str) else data
        d = dict(resigned(sorted(d.items()), sign))
        d = dict(rebuilt_report(sorted(d.items()), build))
        d = dict(resigned(sorted(d.items()), sign))
        path = os.path.join(work, "attack-%d.tar.gz" % len(table))
        write_pack(sorted(d.items()), path)
        row = [label]
        for tool, cmd in tools.items():
            r = verify(cmd, path, vkey)
            first_line = (r.stdout + r.stderr).strip().splitlines()[0] if (r.stdout + r.stderr).strip() else ""
            if r.returncode != 1 or want not in first_line:
                fail("%s on the attack '%s': exit %d, want a refusal saying '%s': %s" %
                     (tool, label, r.returncode, want, first_line))
            row.append(first_line[:110])
        table.append(row)
    print("attack table (attack x verifier -> the refusal):")
    for row in table:
        print("- " + row[0])
        for tool, result in zip(tools, row[1:]):
            print("    %-18s %s" % (tool, result))


def crashes(build, work):
    """SIGKILL while an erasure is under way, three times."""
    for round_ in range(3):
        base = os.path.join(work, "crash-%d" % round_)
        ledger = ErasureLedger(build, base)
        try:
            seqs = ledger.append(receipts())
            ledger.wait_checkpoint(len(seqs))
            ledger_vkey = ledger.vkey()
            ledger.ctl("alice-admin", "erase", "--seq", str(seqs[1]), "--reason", "crash test")
            approve = threading.Thread(target=lambda: ledger.ctl(
                "bob-admin", "erase", "--seq", str(seqs[1]), "--reason", "crash test", check=False))
            approve.start()
            time.sleep(random.uniform(0.0, 0.08))
            ledger.stop(kill=True)
            approve.join()
            ledger.start()
            body = ledger.ctl("auditor", "entries", "--from", str(seqs[1]), "--to", str(seqs[1] + 1)).stdout
            size = int(ledger.ctl("auditor", "checkpoint").stdout.splitlines()[1])
            erased = body.startswith('{"redacted":')
            if erased != (size == len(seqs) + 1):
                fail("after SIGKILL: entry %d %s but the log holds %d entries" %
                     (seqs[1], "erased" if erased else "kept", size))
            ledger.stop()
            # The erased call's target; the denied start's reason, not erased here, holds the marker too.
            if erased and files_holding(ledger.data, ("customers/" + MARKER).encode()):
                fail("after SIGKILL and restart the erased marker is still on disk")
            vkey = os.path.join(base, "vkey")
            with open(vkey, "w") as f:
                f.write(ledger_vkey + "\n")
            audit = subprocess.run([os.path.join(build, "cmd", "ledgerctl"), "audit", "--data", ledger.data,
                                    "--vkey", vkey, "--no-progress"],
                                   capture_output=True, text=True, timeout=300)
            if audit.returncode != 0:
                fail("audit after SIGKILL: %s %s" % (audit.stdout, audit.stderr))
            print("SIGKILL during an erasure (round %d): %s after the restart; audit clean" %
                  (round_ + 1, "erased" if erased else "not erased, nothing logged"))
        finally:
            ledger.stop()


if __name__ == "__main__":
    main()
