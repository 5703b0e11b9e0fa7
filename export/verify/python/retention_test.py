#!/usr/bin/env python3
"""verify_pack.py on packs of format 9 (CONTRACT.md section 9, "A run pack
across the line (format 9)"), each case with its exact outcome:

- retentionpolicy.py on every policy of tests/vectors/retention.json (the
  rules read, or the exact refusal) and on cases of its own (a CR, bytes
  that are not UTF-8, the rule that covers a team);
- retention.py's check of a `retention` receipt on the receipts of the
  vectors, each refusal naming the vectors' field;
- format 9 packs made here from a log of its own (run acme/run-1, whose
  first three entries pass 1 pruned under `team acme 7d`), signed with a
  key of its own: verified, with the lines after the OK line; then broken
  one way each and re-signed, as only the ledger's operator could: each
  refusal of section 9's steps 1 to 7 with its exact message, and the
  retention entry bound to the tree by the multiproof.

Usage: retention_test.py [unittest's arguments]
"""
import base64
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import packproof  # noqa: E402
from erasure_test import leaf_hash, mth, nodes  # noqa: E402  (the tree as CONTRACT section 6 reads)
import redactions  # noqa: E402
import retention  # noqa: E402
import retentionpolicy  # noqa: E402
import runmap  # noqa: E402
from packerror import Failure  # noqa: E402
from retentionpolicy import PolicyError  # noqa: E402

ROOT = os.path.join(HERE, "..", "..", "..")
VERIFY = os.path.join(HERE, "verify_pack.py")
VECTORS = os.path.join(ROOT, "tests", "vectors", "retention.json")
KEEP_RULE = "want forever, or 1h to 36500d as a decimal count and d or h"


def vectors():
    with open(VECTORS) as f:
        return json.load(f)


def refusal(data):
    """The message a policy (bytes) is refused with, or None when it is read."""
    try:
        retentionpolicy.read(data)
    except PolicyError as e:
        return str(e)
    return None


class Policies(unittest.TestCase):
    """"The policy": every rule and every refusal, with its message."""

    def test_vectors_read(self):
        for case in vectors()["policies"]["accepted"]:
            with self.subTest(case["name"]):
                rules = retentionpolicy.read(case["text_utf8"].encode()).rules
                self.assertEqual([{"line": r.line, "kind": "default" if r.team is None else "team", "team": r.team,
                                   "keep": r.keep, "keep_s": r.keep_s} for r in rules], case["rules"])

    def test_vectors_refused(self):
        for case in vectors()["policies"]["refused"]:
            with self.subTest(case["name"]):
                self.assertEqual(refusal(case["text_utf8"].encode()), case["error"])

    def test_crlf_line_keeps_its_cr(self):
        self.assertEqual(refusal(b"team acme 7d\r\n"), "retention policy line 1: keep '7d\\x0d': " + KEEP_RULE)

    def test_crlf_blank_line_is_not_blank(self):
        self.assertEqual(refusal(b"default 30d\n\r\n"),
                         "retention policy line 2: want 'default KEEP' or 'team T KEEP'")

    def test_team_of_bytes_that_are_not_utf8(self):
        self.assertEqual(refusal(b"team acme\xff 7d\n"),
                         "retention policy line 1: team 'acme\\xff': want 1-63 bytes of [a-z0-9-]")

    def test_comment_of_bytes_that_are_not_utf8(self):
        self.assertEqual([r.name() for r in retentionpolicy.read(b"# \xff\xfe\ndefault 1d\n").rules], ["default"])

    def test_second_default_before_its_keep(self):
        self.assertEqual(refusal(b"default 30d\ndefault 0h\n"),
                         "retention policy line 2: a second default rule (the first is on line 1)")

    def test_team_before_its_keep(self):
        self.assertEqual(refusal(b"team Acme 0h\n"),
                         "retention policy line 1: team 'Acme': want 1-63 bytes of [a-z0-9-]")
        self.assertEqual(refusal(b"team ledger 0h\n"),
                         "retention policy line 1: team 'ledger': the ledger's own entries are never pruned")

    def test_keep_bounds(self):
        self.assertEqual(retentionpolicy.keep_seconds("1h"), 3600)
        self.assertEqual(retentionpolicy.keep_seconds("876000h"), 36500 * 86400)
        self.assertIsNone(retentionpolicy.keep_seconds("forever"))
        for word in ("0h", "59m", "36501d", "876001h", "1d ", "١d", "1e3h"):
            with self.assertRaises(ValueError):
                retentionpolicy.keep_seconds(word)

    def test_covering_rule(self):
        policy = retentionpolicy.read(b"team acme 7d\nteam initech forever\ndefault 30d\n")
        self.assertEqual(policy.covering("acme").name(), "team acme")
        self.assertEqual(policy.covering("initech").keep_s, None)
        self.assertEqual((policy.covering("globex").name(), policy.covering("globex").line), ("default", 3))
        self.assertIsNone(policy.covering("ledger"))
        self.assertIsNone(retentionpolicy.read(b"team acme 7d\n").covering("globex"))
        self.assertIsNone(retentionpolicy.read(b"").covering("acme"))



def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def entry_refusal(leaf, size=100):
    """The message retention.jsonl holding leaf (bytes) is refused with at
    step 2, or None."""
    try:
        retention._entry(leaf + b"\n", size)
    except Failure as e:
        return str(e)
    return None


class Receipts(unittest.TestCase):
    """"The `retention` entry": the vectors' receipts, as retention.jsonl's
    line."""

    @classmethod
    def setUpClass(cls):
        cls.v = vectors()
        cls.leaf = {e["entry"]["seq"]: e["entry"] for e in cls.v["entries"]}[10]

    def line(self, receipt, emitter="ledger"):
        return canonical(dict(self.leaf, emitter=emitter, receipt=receipt))

    def test_accepted(self):
        for a in self.v["accepted"]:
            with self.subTest(a["name"]):
                self.assertIsNone(retention.receipt_rule(a["receipt"]))
                self.assertIsNone(entry_refusal(self.line(a["receipt"])))

    def test_refused_names_the_field(self):
        for c in self.v["refused"]:
            with self.subTest(c["name"]):
                message = entry_refusal(self.line(c["receipt"], c["emitter"]))
                if c["emitter"] != "ledger":
                    self.assertEqual(message, "retention.jsonl: line 1: emitter '%s': a retention entry is the "
                                              "ledger's only" % c["emitter"])
                else:
                    self.assertTrue((message or "").startswith("retention.jsonl: line 1: %s: " % c["field"]), message)

    def test_messages(self):
        r = self.v["accepted"][0]["receipt"]
        self.assertEqual(retention.receipt_rule(dict(r, receipt_id="ledger.retention.1.default")),
                         ("receipt_id", "a retention entry's is 'ledger.retention.1.team.acme'"))
        self.assertEqual(retention.receipt_rule(dict(r, keep_s=3599)), ("keep_s", "want 3600 to 3153600000 (1h to "
                                                                                  "36500d)"))
        self.assertEqual(retention.receipt_rule(dict(r, cutoff_us=1)),
                         ("cutoff_us", "want occurred_at_us - keep_s * 1000000 (1770940800000000)"))
        self.assertEqual(retention.receipt_rule(dict(r, workflow="w")), ("workflow", "not a field of a retention "
                                                                                     "entry"))
        forever = self.v["accepted"][1]["receipt"]
        self.assertEqual(retention.receipt_rule(dict(forever, below_seq=3)),
                         ("below_seq", "0 without keep_s (a forever rule prunes nothing)"))
        self.assertEqual(retention.receipt_rule(dict(forever, cutoff_us=1)),
                         ("cutoff_us", "only with keep_s (a forever rule's entry has no cutoff)"))

    def test_another_kind(self):
        redaction = {e["entry"]["seq"]: e["leaf_bytes_utf8"] for e in self.v["entries"]}[6].encode()
        self.assertEqual(entry_refusal(redaction), "retention.jsonl: line 1: kind redaction, want retention")

    def test_line_rules(self):
        leaf = self.line(self.v["accepted"][0]["receipt"])
        for data in (leaf, leaf + b"\n\n", leaf + b"\n" + leaf + b"\n", b""):
            with self.assertRaises(Failure) as e:
                retention._entry(data, 100)
            self.assertEqual(str(e.exception), "retention.jsonl: want one line ending in a newline")
        self.assertEqual(entry_refusal(leaf.replace(b'","', b'", "', 1)), "retention.jsonl: line 1: not canonical JSON")
        self.assertEqual(entry_refusal(leaf.replace(b'{"emitter"', b'{"v":2,"emitter"', 1)),
                         "retention.jsonl: line 1: key v twice")
        self.assertEqual(entry_refusal(leaf, 10), "retention.jsonl: seq 10 is not in the checkpoint's tree of size 10")
        self.assertIsNone(entry_refusal(leaf, 11))
        low = canonical(dict(self.leaf, seq=8))
        self.assertEqual(entry_refusal(low), "retention.jsonl: seq 8 is below its below_seq 9: a pass's entry is "
                                             "appended after its line")



ORIGIN = "retention.test/log"
SEED = bytes(range(32))
NOW = 1771545600000000  # pass 1's now
DAY, SECOND = 86400000000, 1000000
POLICY = b"# the test's policy\nteam acme 7d\ndefault 14d\n"
REASON = "GDPR art. 17 request 12"


def joined(items):
    return b"".join(x + b"\n" for x in items)


class Key:
    """The test ledger's key (section 5): signs notes as the ledger does."""

    def __init__(self):
        self.private = Ed25519PrivateKey.from_private_bytes(SEED)
        public = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.key_id = hashlib.sha256(ORIGIN.encode() + b"\n\x01" + public).digest()[:4]
        self.vkey = "%s+%s+%s" % (ORIGIN, self.key_id.hex(), base64.b64encode(b"\x01" + public).decode())

    def sign(self, text):
        sig = base64.b64encode(self.key_id + self.private.sign(text)).decode()
        return text + b"\n" + ("\u2014 %s %s\n" % (ORIGIN, sig)).encode()


def retention_receipt(rule_team, keep_s, below_seq, policy=POLICY):
    r = {"attempt": 1, "below_seq": below_seq, "cutoff_us": NOW - keep_s * SECOND, "keep_s": keep_s,
         "kind": "retention", "occurred_at_us": NOW, "pass": 1, "policy_sha256": hashlib.sha256(policy).hexdigest(),
         "receipt_id": "ledger.retention.1.default", "run_id": "ledger.retention", "team": "ledger"}
    if rule_team is not None:
        r.update(rule_team=rule_team, receipt_id="ledger.retention.1.team.%s" % rule_team)
    return r


class Log:
    """A log of ten entries. Run acme/run-1: seqs 0, 2, 3 (pruned by pass 1
    under `team acme 7d`: its line is 4), 7 (the completion of seq 0's
    start) and 8 (a start still pending). Pass 1's entries: seq 5 (team
    acme, below_seq 4) and 6 (the default rule, 14d, below_seq 2). Seq 9:
    the redaction of seq 7."""

    def __init__(self):
        self.leaves = []
        gw, globex = "cn:gateway", {"team": "globex", "run_id": "run-g"}
        self.add(gw, NOW - 20 * DAY, None, 0, dict(kind="agent_start", step_id="build", receipt_id="s-build",
                                                   decision="allow", timeout_ms=60000))
        self.add(gw, NOW - 19 * DAY, None, None, dict(globex, kind="tool_call", receipt_id="g-1", tool="git",
                                                      decision="allow"))
        self.add(gw, NOW - 18 * DAY, 0, 0, dict(kind="tool_call", step_id="build", receipt_id="t-1", tool="git",
                                                decision="allow"))
        self.add(gw, NOW - 10 * DAY, 2, 2, dict(kind="model_call", step_id="build", receipt_id="m-1", provider="p",
                                                model="m", route="r", decision="allow"))
        self.add(gw, NOW - 8 * DAY, 1, 1, dict(globex, kind="tool_call", receipt_id="g-2", tool="git",
                                                  decision="allow"))
        self.add("ledger", NOW + 1000, None, None, retention_receipt("acme", 7 * 86400, 4))
        self.add("ledger", NOW + 2000, 5, 5, retention_receipt(None, 14 * 86400, 2))
        self.add(gw, NOW + 10 * SECOND, 3, 3, dict(kind="agent_exec", step_id="build", receipt_id="e-build",
                                                   start_receipt_id="s-build", status="succeeded"))
        self.add(gw, NOW + 20 * SECOND, 7, 7, dict(kind="agent_start", step_id="deploy", receipt_id="s-deploy",
                                                   decision="allow", timeout_ms=3600000))
        erased = json.loads(self.leaves[7])
        self.redaction = {
            "attempt": 1, "kind": "redaction", "occurred_at_us": NOW + 25 * SECOND, "receipt_id": "ledger.redaction.7",
            "run_id": "ledger.redactions", "team": "ledger", "entry_seq": 7,
            "entry_leaf_hash": leaf_hash(self.leaves[7]).hex(), "entry_v": 2, "entry_prev": erased["prev"],
            "entry_logged_at_us": erased["logged_at_us"], "entry_run_prev": 3, "entry_team_prev": 3,
            "entry_kind": "agent_exec", "entry_team": "acme", "entry_run_id": "run-1", "entry_receipt_id": "e-build",
            "entry_step_id": "build", "entry_attempt": 1, "entry_start_receipt_id": "s-build", "reason": REASON,
            "requested_by": "cn:alice-admin", "approved_by": "cn:bob-admin"}
        self.add("ledger", NOW + 26 * SECOND, 6, 6, self.redaction)
        self.hashes = [leaf_hash(x) for x in self.leaves]
        self.key = Key()

    def add(self, emitter, logged_at_us, run_prev, team_prev, receipt):
        """Appends the leaf of receipt (of run acme/run-1 unless it says)."""
        seq = len(self.leaves)
        r = dict({"attempt": 1, "occurred_at_us": logged_at_us - 1000, "team": "acme", "run_id": "run-1"}, **receipt)
        e = {"emitter": emitter, "logged_at_us": logged_at_us, "prev": leaf_hash(self.leaves[-1]).hex() if seq
             else "0" * 64, "receipt": r, "seq": seq, "v": 2}
        if run_prev is not None:
            e["run_prev"] = run_prev
        if team_prev is not None:
            e["team_prev"] = team_prev
        self.leaves.append(canonical(e))

    def pack(self, erased=False, entries=(7, 8), retention_seq=5, policy=POLICY, head=None, run=("acme", "run-1"),
             from_seq=4, **manifest):
        """The files of the format 9 pack of run (team, run_id) from
        from_seq, as the exporter writes it (entries: the seqs it holds;
        erased: seq 7 as its redacted line; head: the run's (count,
        last_seq)), signed with the ledger's key; manifest fields replaced
        by those given."""
        size, root = len(self.leaves), mth(self.hashes)
        lines = [redactions.redacted_line(9, self.redaction) if erased and s == 7 else self.leaves[s] for s in entries]
        beside = {retention_seq} | ({9} if erased else set())
        key = runmap.run_key(run[0].encode(), run[1].encode(), 2)
        count, last = head or (5, 8)
        runs_root = runmap.leaf_hash(key, runmap.value_hash(count, last, self.hashes[last]))
        b64 = lambda h: base64.b64encode(h).decode()  # noqa: E731
        files = {
            "checkpoint": self.key.sign(("%s\n%d\n%s\n" % (ORIGIN, size, b64(root))).encode()),
            "checkpoint-time": self.key.sign(("evidence-ledger/checkpoint-time/v4\n%s\n%d\n%s\nruns %s\nteams %s\n"
                                              "time %d\n" % (ORIGIN, size, b64(root), b64(runs_root), b64(root),
                                                             NOW + 30 * SECOND)).encode()),
            "ledger.vkey": (self.key.vkey + "\n").encode(),
            "entries.jsonl": joined(lines),
            "multiproof.txt": joined(h.hex().encode() for h in nodes(self.hashes, set(entries) | beside, 0, size)),
            "outcomes.json": b'{"steps":[]}\n',
            "report.html": b"<!doctype html>\n",
            "retention.jsonl": self.leaves[retention_seq] + b"\n",
            "retention-policy.txt": policy,
            "run-head.json": canonical({"head": {"count": count, "last_leaf_hash": self.hashes[last].hex(),
                                                 "last_seq": last}, "key": key.hex(), "siblings": []}),
        }
        if erased:
            files["redactions.jsonl"] = self.leaves[9] + b"\n"
        m = {"counts": {"entries": len(entries)}, "files": {}, "format": 9, "origin": ORIGIN, "root": root.hex(),
             "scope": {"from_seq": from_seq, "kind": "run", "run_id": run[1], "team": run[0]}, "tree_size": size,
             "unknown_grace_ms": 30000}
        m.update(manifest)
        return self.signed(files, m)

    def signed(self, files, manifest):
        """files with manifest.json (manifest with every file's digest) and
        manifest.sig, signed with the ledger's key."""
        files = {n: d for n, d in files.items() if n not in ("manifest.json", "manifest.sig")}
        manifest = dict(manifest, files={n: hashlib.sha256(d).hexdigest() for n, d in files.items()})
        files["manifest.json"] = canonical(manifest) + b"\n"
        files["manifest.sig"] = self.key.sign((hashlib.sha256(files["manifest.json"]).hexdigest() + "\n").encode())
        return files

    def resigned(self, files, **manifest):
        """files after an edit, the manifest (with the fields given) signed again."""
        m = json.loads(files["manifest.json"])
        m.update(manifest)
        return self.signed(files, m)


def write_pack(files, path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.USTAR_FORMAT) as t:
        for name in sorted(files):
            info = tarfile.TarInfo("evidence/" + name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            t.addfile(info, io.BytesIO(files[name]))
    with open(path, "wb") as f:
        f.write(buf.getvalue())



COMPLETE = ("complete from seq 4: every entry of the run from seq 4 up to seq 9 (run-head proof, 2 of its 5 entries); "
            "the 3 before seq 4 were pruned under the retention policy (pass 1, rule team acme, cutoff "
            "2026-02-13T00:00:00.000000Z (1770940800000000 us)), as entry 5 states.")
PENDING = "acme/run-1/deploy attempt 1 (pending): no completion in the log up to seq 9 (proven)."
ERASED = ("entry 7: erased by redaction 9 (agent_exec of team acme, run run-1): %s; requested by cn:alice-admin, "
          "approved by cn:bob-admin." % REASON)


class Packs(unittest.TestCase):
    """verify_pack.py as an auditor runs it, on packs of Log."""

    @classmethod
    def setUpClass(cls):
        cls.log = Log()

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="retention-test-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def run_verify(self, files, *flags):
        path = os.path.join(self.tmp, "pack.tar.gz")
        write_pack(files, path)
        r = subprocess.run([sys.executable, VERIFY, path, "--vkey-string", self.log.key.vkey, "--no-progress"]
                           + list(flags), capture_output=True, text=True, timeout=120)
        return r.returncode, r.stdout.splitlines(), r.stderr

    def assert_ok(self, files, *flags, held=2, scope='{"from_seq":4,"kind":"run","run_id":"run-1","team":"acme"}'):
        """The pack verified: its OK line; returns the lines after it."""
        code, out, err = self.run_verify(files, *flags)
        self.assertEqual((code, err), (0, ""), out)
        self.assertEqual(out[0], "OK: %d entries of %s verified against the checkpoint of retention.test/log at tree "
                                 "size 10, root %s, signed at 2026-02-20T00:00:30.000000Z (1771545630000000 us)."
                         % (held, scope, mth(self.log.hashes).hex()))
        return out[1:]

    def assert_refused(self, files, message):
        """The pack refused with exactly `FAILED: message`, exit 1."""
        code, out, err = self.run_verify(files)
        self.assertEqual((code, out, err), (1, ["FAILED: " + message], ""))

    def pack(self, **kw):
        return self.log.pack(**kw)


class Genuine(Packs):
    """Packs as the exporter writes them."""

    def test_run_pack_from_the_line(self):
        self.assertEqual(self.assert_ok(self.pack(), "--expect-scope", "run:acme/run-1"), [COMPLETE, PENDING])

    def test_run_pack_from_the_line_with_an_erased_entry(self):
        """Format 8's redactions in a format 9 pack: the multiproof covers
        the three files' seqs; the erasure is printed last."""
        self.assertEqual(self.assert_ok(self.pack(erased=True)), [COMPLETE, PENDING, ERASED])

    def test_run_pack_under_the_default_rule(self):
        """globex/run-g (seqs 1 and 4) under `default 14d`, whose line is 2."""
        out = self.assert_ok(self.pack(run=("globex", "run-g"), from_seq=2, entries=(4,), head=(2, 4), retention_seq=6),
                             held=1, scope='{"from_seq":2,"kind":"run","run_id":"run-g","team":"globex"}')
        self.assertEqual(out, ["complete from seq 2: every entry of the run from seq 2 up to seq 9 (run-head proof, 1 "
                               "of its 2 entries); the 1 before seq 2 were pruned under the retention policy (pass 1, "
                               "rule default, cutoff 2026-02-06T00:00:00.000000Z (1770336000000000 us)), as entry 6 "
                               "states."])

    def test_completion_whose_start_was_pruned(self):
        """Seq 7 completes the start at seq 0, pruned: an orphan completion,
        never a step listed as unsettled; seq 8 is pending."""
        self.assertNotIn("build", "\n".join(self.assert_ok(self.pack())))


class Place(Packs):
    """Step 1 and the manifest: the files and the scope of format 9 only."""

    def format_8(self, files):
        m = json.loads(files["manifest.json"])
        del m["scope"]["from_seq"]
        return self.log.resigned(files, format=8, scope=m["scope"])

    def test_retention_entry_in_a_format_8_pack(self):
        files = self.pack()
        del files["retention-policy.txt"]
        self.assert_refused(self.format_8(files), "retention.jsonl: only a pack of format 9 carries a retention entry")

    def test_retention_policy_in_a_format_8_pack(self):
        files = self.pack()
        del files["retention.jsonl"]
        self.assert_refused(self.format_8(files),
                            "retention-policy.txt: only a pack of format 9 carries a retention policy")

    def test_retention_entry_missing(self):
        files = self.pack()
        del files["retention.jsonl"]
        self.assert_refused(self.log.resigned(files), "retention.jsonl: missing: a format 9 pack carries the "
                                                      "retention entry that pruned its run's first entries")

    def test_retention_policy_missing(self):
        files = self.pack()
        del files["retention-policy.txt"]
        self.assert_refused(self.log.resigned(files), "retention-policy.txt: missing: a format 9 pack carries the "
                                                      "policy its retention entry applied")

    def test_format_9_without_from_seq(self):
        self.assert_refused(self.pack(scope={"kind": "run", "run_id": "run-1", "team": "acme"}),
                            "manifest.json: scope: a pack of format 9 is a run pack from a seq (from_seq)")

    def test_format_9_seq_range(self):
        self.assert_refused(self.pack(scope={"from_seq": 4, "kind": "seq", "to_seq": 10}),
                            "manifest.json: scope: a pack of format 9 is a run pack from a seq (from_seq)")

    def test_from_seq_in_a_format_8_pack(self):
        self.assert_refused(self.pack(format=8), "manifest.json: scope.from_seq: only a run pack of format 9 starts "
                                                 "at a seq")

    def test_from_seq_zero(self):
        self.assert_refused(self.pack(scope={"from_seq": 0, "kind": "run", "run_id": "run-1", "team": "acme"}),
                            "manifest.json: scope.from_seq: want at least 1")

    def test_format_10(self):
        self.assert_refused(self.pack(format=10), "manifest.json: format: want 1, 2, 3, 4, 5, 6, 7, 8 or 9, found 10")


class Entry(Packs):
    """Steps 2 to 5: retention.jsonl, retention-policy.txt, the rule and the
    scope."""

    def with_entry(self, line, **kw):
        files = self.pack(**kw)
        files["retention.jsonl"] = line
        return self.log.resigned(files)

    def test_two_lines(self):
        line = self.log.leaves[5] + b"\n"
        self.assert_refused(self.with_entry(line + line), "retention.jsonl: want one line ending in a newline")

    def test_no_newline(self):
        self.assert_refused(self.with_entry(self.log.leaves[5]), "retention.jsonl: want one line ending in a newline")

    def test_an_entry_of_the_run(self):
        self.assert_refused(self.with_entry(self.log.leaves[2] + b"\n"),
                            "retention.jsonl: line 1: kind tool_call, want retention")

    def test_an_emitters_retention_entry(self):
        line = canonical(dict(json.loads(self.log.leaves[5]), emitter="cn:gateway"))
        self.assert_refused(self.with_entry(line + b"\n"), "retention.jsonl: line 1: emitter 'cn:gateway': a "
                                                           "retention entry is the ledger's only")

    def test_an_invalid_retention_entry(self):
        e = json.loads(self.log.leaves[5])
        e["receipt"]["attempt"] = 2
        self.assert_refused(self.with_entry(canonical(e) + b"\n"), "retention.jsonl: line 1: attempt: a retention "
                                                                    "entry's is 1")

    def test_entry_beyond_the_tree(self):
        e = dict(json.loads(self.log.leaves[5]), seq=10)
        self.assert_refused(self.with_entry(canonical(e) + b"\n"),
                            "retention.jsonl: seq 10 is not in the checkpoint's tree of size 10")

    def test_entry_below_its_line(self):
        e = json.loads(self.log.leaves[5])
        e["receipt"]["below_seq"] = 6
        self.assert_refused(self.with_entry(canonical(e) + b"\n"),
                            "retention.jsonl: seq 5 is below its below_seq 6: a pass's entry is appended after its "
                            "line")

    def test_policy_of_other_bytes(self):
        files = self.pack()
        files["retention-policy.txt"] = POLICY.replace(b"7d", b"8d")
        self.assert_refused(self.log.resigned(files), "retention-policy.txt: SHA-256 %s, the retention entry's "
                                                      "policy_sha256 is %s"
                            % (hashlib.sha256(files["retention-policy.txt"]).hexdigest(),
                               hashlib.sha256(POLICY).hexdigest()))

    def policy_case(self, policy, rule_team="acme", keep_s=7 * 86400):
        """A pack whose policy and entry the operator rewrote alike (the
        entry is then no leaf of the tree, which the multiproof would tell
        after these steps)."""
        files = self.pack(policy=policy)
        e = json.loads(self.log.leaves[5])
        e["receipt"] = retention_receipt(rule_team, keep_s, 4, policy)
        files["retention.jsonl"] = canonical(e) + b"\n"
        return self.log.resigned(files)

    def test_policy_refused(self):
        self.assert_refused(self.policy_case(b"team acme 7d\ndefault 30d\nteam  globex 1d\n"),
                            "retention-policy.txt: retention policy line 3: want 'default KEEP' or 'team T KEEP'")

    def test_no_rule_covers_the_team(self):
        self.assert_refused(self.policy_case(b"team globex 7d\n"),
                            "retention-policy.txt: no rule covers team acme: its entries are kept for good")

    def test_team_kept_forever(self):
        self.assert_refused(self.policy_case(b"default 7d\n#\nteam acme forever\n", None),
                            "retention-policy.txt: line 3: team acme's entries are kept forever")

    def test_entry_of_the_default_rule(self):
        self.assert_refused(self.pack(retention_seq=6), "retention.jsonl: the entry states rule default (keep_s "
                                                        "1209600), the policy's rule for team acme is team acme "
                                                        "(line 2, keep_s 604800)")

    def test_entry_of_another_keep(self):
        self.assert_refused(self.policy_case(POLICY, keep_s=8 * 86400),
                            "retention.jsonl: the entry states rule team acme (keep_s 691200), the policy's rule for "
                            "team acme is team acme (line 2, keep_s 604800)")

    def test_entry_of_a_rule_the_default_covers(self):
        self.assert_refused(self.policy_case(b"default 7d\n"),
                            "retention.jsonl: the entry states rule team acme (keep_s 604800), the policy's rule for "
                            "team acme is default (line 1, keep_s 604800)")

    def test_scope_from_another_seq(self):
        self.assert_refused(self.pack(scope={"from_seq": 3, "kind": "run", "run_id": "run-1", "team": "acme"}),
                            "manifest.json: scope.from_seq 3, the retention entry's below_seq is 4")

    def test_entry_bound_by_the_multiproof(self):
        """The entry rewritten with a later pass's time (still a valid
        entry): its leaf is not the tree's."""
        e = json.loads(self.log.leaves[5])
        e["receipt"].update(occurred_at_us=NOW + DAY, cutoff_us=NOW + DAY - 7 * DAY)
        code, out, err = self.run_verify(self.with_entry(canonical(e) + b"\n"))
        self.assertEqual(code, 1)
        self.assertRegex("\n".join(out), r"^FAILED: multiproof\.txt: the entries and the multiproof lead to root "
                                         r"[0-9a-f]{64}, the checkpoint's is %s$" % mth(self.log.hashes).hex())

    def test_entry_at_a_redactions_seq(self):
        files = self.pack(erased=True)
        e = dict(json.loads(self.log.leaves[5]), seq=9)
        files["retention.jsonl"] = canonical(e) + b"\n"
        self.assert_refused(self.log.resigned(files), "retention.jsonl: line 1: seq 9: not the leaf of "
                                                      "redactions.jsonl line 1, which holds that seq")


class Entries(Packs):
    """Steps 6 and 7: the entries from from_seq, and the run's head above
    them."""

    def test_entry_below_from_seq(self):
        self.assert_refused(self.pack(entries=(3, 7, 8)),
                            "entries.jsonl: line 1: seq 3 is below the scope's from_seq 4")

    def test_first_entry_left_out(self):
        self.assert_refused(self.pack(entries=(8,)),
                            "entries.jsonl: line 1: run_prev expected below 4 (the run's entries before the scope's "
                            "from_seq were pruned), found 7")

    def test_first_entry_of_the_run_at_the_line(self):
        """A run whose first entry is at or above the line has nothing
        pruned: its first entry has no run_prev."""
        with self.assertRaises(Failure) as e:
            packproof._first_from_seq(json.loads(self.log.leaves[1]), 1, 1)
        self.assertEqual(str(e.exception), "entries.jsonl: line 1: run_prev expected below 1 (the run's entries "
                                           "before the scope's from_seq were pruned), found none")

    def test_later_entry_not_linked(self):
        self.assert_refused(self.pack(entries=(7, 9)), "entries.jsonl seq 9: not an entry of the pack's run")

    def test_no_entry(self):
        self.assert_refused(self.pack(entries=()), "entries.jsonl: a pack of format 9 holds at least one entry of its "
                                                   "run")

    def test_head_counting_only_the_entries_held(self):
        self.assert_refused(self.pack(head=(2, 8)), "run-head.json: the run has 2 entries up to tree size 10, the pack "
                                                    "holds 2 from seq 4: a run pack from a seq holds fewer entries "
                                                    "than its run")

    def test_last_entry_left_out(self):
        self.assert_refused(self.pack(entries=(7,)), "run-head.json: the run's last entry up to tree size 10 is seq 8 "
                                                     "with leaf hash %s, the pack's last is seq 7 with leaf hash %s"
                            % (self.log.hashes[8].hex(), self.log.hashes[7].hex()))


if __name__ == "__main__":
    unittest.main()
