#!/usr/bin/env python3
"""verify_pack.py on packs of format 8 (CONTRACT.md section 8, "In a pack
(format 8)"), each case with its exact outcome:

- the packs of tests/erasure_testlib.py, made by a real ledgerd that erased
  two entries of run acme/run-7 (a run pack, a seq range, a team window,
  and the run exported before the erasure): verified, with the line
  printed for each erased entry;
- those packs broken one way each and re-signed with the ledger's key, as
  only its operator could: each refusal of section 8's list with its
  message, the erased entry's chains and leaf hash as its redacted line
  states them, and redactions.jsonl bound to the tree by the multiproof;
- redactions.py's check of a `redaction` receipt on the receipts of
  tests/vectors/redaction.json, its redacted lines rebuilt from them, and
  packsteps.py's steps with an erased start or completion.

The packs: $ERASURE_PACKS (run.tar.gz, seqs.tar.gz, team.tar.gz,
before.tar.gz, vkey, and the ledger's key in work/data/signing.key),
/work/erasure-packs unless set. With --build BUILD (or $LEDGER_BUILD when
those packs are not there), fresh ones are made first in a temporary
folder with `tests/erasure_testlib.py BUILD DIR`.

Usage: erasure_test.py [--build BUILD] [unittest's arguments]
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import packproof  # noqa: E402
import packsteps  # noqa: E402
import redactions  # noqa: E402
from packerror import Failure  # noqa: E402

ROOT = os.path.join(HERE, "..", "..", "..")
VERIFY = os.path.join(HERE, "verify_pack.py")
VECTORS = os.path.join(ROOT, "tests", "vectors", "redaction.json")
PACKS = None  # the folder of the packs, set by main()
ERASED = [
    "entry 1: erased by redaction 6 (tool_call of team acme, run run-7): GDPR art. 17 request 881; requested by "
    "cn:alice-admin, approved by cn:bob-admin.",
    "entry 3: erased by redaction 5 (agent_exec of team acme, run run-7): court order 2026-117; requested by "
    "cn:alice-admin, approved by cn:bob-admin.",
]


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def read_pack(name):
    """{file name: bytes} of PACKS/name.tar.gz."""
    with tarfile.open(os.path.join(PACKS, name + ".tar.gz"), "r:gz") as t:
        return {m.name.split("/", 1)[1]: t.extractfile(m).read() for m in t if m.isreg()}


def signer():
    """sign(text) -> a signed note, by the ledger's key (PRIVATE+KEY+name+id+base64)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    with open(os.path.join(PACKS, "work", "data", "signing.key")) as f:
        _, _, name, key_id, key = f.read().strip().split("+", 4)
    private = Ed25519PrivateKey.from_private_bytes(base64.b64decode(key)[1:])

    def sign(text):
        sig = private.sign(text)
        line = "\u2014 %s %s\n" % (name, base64.b64encode(bytes.fromhex(key_id) + sig).decode())
        return text + b"\n" + line.encode()
    return sign


def resigned(files, **manifest_fields):
    """The files with the manifest rewritten over them (every file's digest,
    none more, the entries counted, manifest_fields set) and signed by the
    ledger's key, as its operator could."""
    d = dict(files)
    manifest = json.loads(d["manifest.json"])
    manifest.update(manifest_fields)
    manifest["files"] = {n: hashlib.sha256(data).hexdigest() for n, data in d.items()
                         if n not in ("manifest.json", "manifest.sig")}
    manifest["counts"]["entries"] = d["entries.jsonl"].count(b"\n")
    d["manifest.json"] = canonical(manifest) + b"\n"
    d["manifest.sig"] = signer()((hashlib.sha256(d["manifest.json"]).hexdigest() + "\n").encode())
    return d


def write_pack(files, path):
    """A pack as the exporter lays one out: one top folder, sorted names,
    regular files of mode 0644 and mtime 0."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.USTAR_FORMAT) as t:
        for name in sorted(files):
            info = tarfile.TarInfo("evidence/" + name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            t.addfile(info, io.BytesIO(files[name]))
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def lines(data):
    return data.split(b"\n")[:-1]


def joined(items):
    return b"".join(x + b"\n" for x in items)


def with_line(data, n, line):
    """data (a .jsonl file) with its line n (from 1) replaced."""
    items = lines(data)
    items[n - 1] = line
    return joined(items)


def edited_json(line, edit):
    """A JSON line edited (edit(obj) changes obj) and written canonically."""
    obj = json.loads(line)
    edit(obj)
    return canonical(obj)


class Packs(unittest.TestCase):
    """verify_pack.py run as an auditor runs it, on a pack of PACKS or on
    one made here."""

    def setUp(self):
        if PACKS is None:
            self.skipTest("no packs: set ERASURE_PACKS, or give --build BUILD (or LEDGER_BUILD)")
        self.tmp = tempfile.mkdtemp(prefix="erasure-test-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def run_verify(self, pack, *flags):
        """(exit code, stdout lines, stderr) of verify_pack.py on pack (a
        path, or the files of one)."""
        if isinstance(pack, dict):
            path = os.path.join(self.tmp, "pack.tar.gz")
            write_pack(pack, path)
            pack = path
        r = subprocess.run([sys.executable, VERIFY, pack, "--vkey", os.path.join(PACKS, "vkey"), "--no-progress"]
                           + list(flags), capture_output=True, text=True, timeout=120)
        return r.returncode, r.stdout.splitlines(), r.stderr

    def assert_ok(self, pack, *flags):
        code, out, err = self.run_verify(pack, *flags)
        self.assertEqual((code, err), (0, ""), out)
        self.assertTrue(out and out[0].startswith("OK: "), out)
        return out

    def assert_refused(self, files, message):
        """The pack refused with exactly `FAILED: message`, exit 1."""
        code, out, err = self.run_verify(files)
        self.assertEqual((code, out, err), (1, ["FAILED: " + message], ""))


class Genuine(Packs):
    """The packs as the exporter wrote them."""

    def test_run_pack(self):
        out = self.assert_ok(os.path.join(PACKS, "run.tar.gz"), "--expect-scope", "run:acme/run-7")
        self.assertRegex(out[0], r'^OK: 4 entries of \{"kind":"run","run_id":"run-7","team":"acme"\} verified '
                                 r'against the checkpoint of erasure\.test/ledger at tree size 7, root [0-9a-f]{64}, '
                                 r'signed at .*\.$')
        # The build step's completion is erased: unknown, never "no completion in the log".
        self.assertEqual(out[1:], ["complete: every entry of the run up to seq 6 (run-head proof, 4 entries)."]
                         + ERASED)

    def test_seq_pack(self):
        out = self.assert_ok(os.path.join(PACKS, "seqs.tar.gz"), "--expect-scope", "seq:0:7")
        self.assertRegex(out[0], r'^OK: 7 entries of \{"from_seq":0,"kind":"seq","to_seq":7\} verified against ')
        self.assertEqual(out[1:], ERASED)

    def test_team_window(self):
        out = self.assert_ok(os.path.join(PACKS, "team.tar.gz"))
        self.assertRegex(out[0], r'^OK: 4 entries of \{"from_seq":0,"from_us":[0-9]+,"kind":"team","team":"acme",')
        self.assertEqual(out[1:2], ["complete: every entry of team acme logged in [946684800000000, "
                                    "4102444800000000) up to seq 6 (team chain, 4 entries)."])
        self.assertEqual(out[2:], ERASED)

    def test_pack_exported_before_the_erasure(self):
        """The run's pack made before: of format 7, the bodies in it, the
        same leaf hashes; nothing erased to print."""
        files = read_pack("before")
        self.assertEqual(json.loads(files["manifest.json"])["format"], 7)
        self.assertNotIn("redactions.jsonl", files)
        out = self.assert_ok(os.path.join(PACKS, "before.tar.gz"), "--expect-scope", "run:acme/run-7")
        self.assertEqual(out[1:], ["complete: every entry of the run up to seq 4 (run-head proof, 4 entries)."])
        after = {json.loads(x)["redacted"]["seq"]: json.loads(x)["redacted"]["leaf_hash"]
                 for x in lines(read_pack("run")["entries.jsonl"]) if x.startswith(b'{"redacted":')}
        for leaf in lines(files["entries.jsonl"]):
            seq = json.loads(leaf)["seq"]
            if seq in after:
                self.assertEqual(hashlib.sha256(b"\x00" + leaf).hexdigest(), after[seq])
        self.assertEqual(sorted(after), [1, 3])

    def test_packs_as_the_exporter_wrote_them(self):
        """What the cases below take as given: format 8, seqs 1 and 3
        erased by 6 and 5, redactions.jsonl their two leaves."""
        for name in ("run", "seqs", "team"):
            files = read_pack(name)
            self.assertEqual(json.loads(files["manifest.json"])["format"], 8, name)
            self.assertEqual([json.loads(x)["seq"] for x in lines(files["redactions.jsonl"])], [5, 6], name)
        entries = lines(read_pack("run")["entries.jsonl"])
        self.assertEqual([x.startswith(b'{"redacted":') for x in entries], [False, True, True, False])


class Refused(Packs):
    """Each refusal of section 8's list, and what an erased entry's redacted
    line binds, on packs re-signed with the ledger's key."""

    def pack(self, name="run"):
        return read_pack(name)

    def redaction(self, files, n):
        """Line n of redactions.jsonl, parsed."""
        return json.loads(lines(files["redactions.jsonl"])[n - 1])

    def test_resigned_pack_unchanged_holds(self):
        """The re-signing alone changes nothing (so each case below fails
        by its edit)."""
        out = self.assert_ok(resigned(self.pack()))
        self.assertEqual(out[-2:], ERASED)

    # "redactions.jsonl: only a pack of format 8 carries redactions"

    def test_redactions_in_a_format_7_pack(self):
        files = self.pack("before")
        files["redactions.jsonl"] = self.pack()["redactions.jsonl"]
        self.assert_refused(resigned(files), "redactions.jsonl: only a pack of format 8 carries redactions")

    def test_format_8_pack_said_to_be_of_format_7(self):
        self.assert_refused(resigned(self.pack(), format=7),
                            "redactions.jsonl: only a pack of format 8 carries redactions")

    def test_redacted_line_in_a_format_7_pack(self):
        files = self.pack()
        del files["redactions.jsonl"]
        self.assert_refused(resigned(files, format=7), "entries.jsonl: line 2: not a leaf of version 1 or 2")

    def test_format_9_without_from_seq(self):
        """Format 9 is a run pack from a seq (CONTRACT.md section 9): a
        format 8 pack said to be of format 9 is refused by its scope."""
        self.assert_refused(resigned(self.pack(), format=9),
                            "manifest.json: scope: a pack of format 9 is a run pack from a seq (from_seq)")

    def test_format_10(self):
        self.assert_refused(resigned(self.pack(), format=10),
                            "manifest.json: format: want 1, 2, 3, 4, 5, 6, 7, 8 or 9, found 10")

    # "redactions.jsonl: line N: ..."

    def test_redaction_by_an_emitter(self):
        files = self.pack()
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 2, edited_json(
            lines(files["redactions.jsonl"])[1], lambda e: e.update(emitter="cn:gateway")))
        self.assert_refused(resigned(files),
                            "redactions.jsonl: line 2: emitter 'cn:gateway': a redaction is the ledger's only")

    def test_redaction_line_of_another_kind(self):
        files = self.pack()
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 1, lines(files["entries.jsonl"])[0])
        self.assert_refused(resigned(files), "redactions.jsonl: line 1: emitter 'cn:gateway': a redaction is the "
                                             "ledger's only")
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 1, edited_json(
            lines(files["entries.jsonl"])[0], lambda e: e.update(emitter="ledger")))
        self.assert_refused(resigned(files), "redactions.jsonl: line 1: kind 'agent_start': not a redaction")

    def test_redaction_with_a_control_character_in_its_reason(self):
        files = self.pack()
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 1, edited_json(
            lines(files["redactions.jsonl"])[0], lambda e: e["receipt"].update(reason="court\x1b[2J order")))
        self.assert_refused(resigned(files), "redactions.jsonl: line 1: reason: control or bidi character U+001B "
                                             "at byte 5")

    def test_redaction_approved_by_the_admin_who_asked(self):
        files = self.pack()
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 1, edited_json(
            lines(files["redactions.jsonl"])[0], lambda e: e["receipt"].update(approved_by="cn:alice-admin")))
        self.assert_refused(resigned(files), "redactions.jsonl: line 1: approved_by: must be another admin than "
                                             "requested_by")

    def test_redaction_of_another_seq_than_its_id(self):
        files = self.pack()
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 1, edited_json(
            lines(files["redactions.jsonl"])[0], lambda e: e["receipt"].update(receipt_id="ledger.redaction.4")))
        self.assert_refused(resigned(files), "redactions.jsonl: line 1: receipt_id: a redaction's is "
                                             "'ledger.redaction.3'")

    def test_redaction_not_canonical(self):
        files = self.pack()
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 1,
                                              lines(files["redactions.jsonl"])[0].replace(b'","', b'", "', 1))
        self.assert_refused(resigned(files), "redactions.jsonl: line 1: not canonical JSON")

    def test_redaction_line_without_its_newline(self):
        files = self.pack()
        files["redactions.jsonl"] = files["redactions.jsonl"][:-1]
        self.assert_refused(resigned(files), "redactions.jsonl: line 2: no newline at its end")

    def test_redactions_out_of_order(self):
        files = self.pack()
        files["redactions.jsonl"] = joined(reversed(lines(files["redactions.jsonl"])))
        self.assert_refused(resigned(files), "redactions.jsonl: line 2: seq 5: not after seq 6 (line 1)")

    def test_redaction_twice(self):
        files = self.pack()
        first = lines(files["redactions.jsonl"])[0]
        files["redactions.jsonl"] = joined([first, first])
        self.assert_refused(resigned(files), "redactions.jsonl: line 2: seq 5: not after seq 5 (line 1)")

    def test_redaction_not_after_the_entry_it_erases(self):
        files = self.pack()

        def edit(e):
            e["receipt"].update(entry_seq=5, receipt_id="ledger.redaction.5")
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 1, edited_json(
            lines(files["redactions.jsonl"])[0], edit))
        self.assert_refused(resigned(files), "redactions.jsonl: line 1: seq 5: entry_seq 5 is not below it")

    def test_redaction_beyond_the_tree(self):
        files = self.pack()

        def edit(e):
            e["seq"] = 7
            e["receipt"].update(entry_seq=2, receipt_id="ledger.redaction.2")
        extra = edited_json(lines(files["redactions.jsonl"])[1], edit)
        files["redactions.jsonl"] += extra + b"\n"
        self.assert_refused(resigned(files), "redactions.jsonl: line 3: seq 7 is not in the checkpoint's tree of "
                                             "size 7")

    # "entries.jsonl: line N: seq S: redacted by R, which redactions.jsonl does not hold"

    def test_redacted_line_whose_redaction_is_left_out(self):
        files = self.pack()
        files["redactions.jsonl"] = joined(lines(files["redactions.jsonl"])[:1])
        self.assert_refused(resigned(files), "entries.jsonl: line 2: seq 1: redacted by 6, which redactions.jsonl "
                                             "does not hold")

    def test_redacted_line_naming_a_seq_no_redaction_holds(self):
        files = self.pack()
        line = lines(files["entries.jsonl"])[1].replace(b'{"redacted":{"by":6,', b'{"redacted":{"by":4,')
        files["entries.jsonl"] = with_line(files["entries.jsonl"], 2, line)
        self.assert_refused(resigned(files), "entries.jsonl: line 2: seq 1: redacted by 4, which redactions.jsonl "
                                             "does not hold")

    def test_redaction_in_scope_left_out_of_redactions(self):
        """In a seq range the redactions are entries too; redactions.jsonl
        holds them all the same."""
        files = self.pack("seqs")
        files["redactions.jsonl"] = joined(lines(files["redactions.jsonl"])[1:])
        self.assert_refused(resigned(files), "entries.jsonl: line 4: seq 3: redacted by 5, which redactions.jsonl "
                                             "does not hold")

    # "entries.jsonl: line N: seq S: not the redacted line of redaction R"

    def test_redacted_line_with_another_leaf_hash(self):
        files = self.pack()
        line = lines(files["entries.jsonl"])[1]
        forged = edited_json(line, lambda e: e["redacted"].update(leaf_hash="ab" * 32))
        files["entries.jsonl"] = with_line(files["entries.jsonl"], 2, forged)
        self.assert_refused(resigned(files), "entries.jsonl: line 2: seq 1: not the redacted line of redaction 6")

    def test_redacted_line_naming_the_other_redaction(self):
        files = self.pack()
        line = lines(files["entries.jsonl"])[1].replace(b'{"redacted":{"by":6,', b'{"redacted":{"by":5,')
        files["entries.jsonl"] = with_line(files["entries.jsonl"], 2, line)
        self.assert_refused(resigned(files), "entries.jsonl: line 2: seq 1: not the redacted line of redaction 5")

    def test_redacted_line_keeping_part_of_the_body(self):
        files = self.pack()
        forged = edited_json(lines(files["entries.jsonl"])[1],
                             lambda e: e["redacted"]["receipt"].update(target="https://crm.example/customers/x"))
        files["entries.jsonl"] = with_line(files["entries.jsonl"], 2, forged)
        self.assert_refused(resigned(files), "entries.jsonl: line 2: seq 1: not the redacted line of redaction 6")

    def test_redacted_line_with_spaces(self):
        files = self.pack()
        files["entries.jsonl"] = with_line(files["entries.jsonl"], 2,
                                           lines(files["entries.jsonl"])[1].replace(b',"seq":', b', "seq":'))
        self.assert_refused(resigned(files), "entries.jsonl: line 2: seq 1: not the redacted line of redaction 6")

    def test_redacted_line_not_readable(self):
        files = self.pack()
        files["entries.jsonl"] = with_line(files["entries.jsonl"], 2, b'{"redacted":{"by":"6","seq":1}}')
        self.assert_refused(resigned(files), "entries.jsonl: line 2: not a leaf of version 1 or 2 nor a redacted line")

    def test_redacted_line_with_a_key_twice(self):
        files = self.pack()
        files["entries.jsonl"] = with_line(files["entries.jsonl"], 2,
                                           lines(files["entries.jsonl"])[1].replace(b'"by":6,', b'"by":6,"by":6,'))
        self.assert_refused(resigned(files), "entries.jsonl: line 2: key by twice")

    # "redactions.jsonl: line N: seq R redacts no entry of the pack"

    def test_erased_line_replaced_by_the_leaf_kept_elsewhere(self):
        """The body of seq 1, from the pack exported before the erasure: the
        same leaf hash, so the multiproof holds; redaction 6 then names no
        line of the pack."""
        files = self.pack()
        original = lines(self.pack("before")["entries.jsonl"])[1]
        self.assertEqual(json.loads(original)["seq"], 1)
        files["entries.jsonl"] = with_line(files["entries.jsonl"], 2, original)
        self.assert_refused(resigned(files), "redactions.jsonl: line 2: seq 6 redacts no entry of the pack")

    def test_extra_redaction(self):
        """A redaction that no redacted line names (at seq 2, another team's
        entry in this run pack's stretch of the log)."""
        files = self.pack()

        def edit(e):
            e["seq"] = 2
            e["receipt"].update(entry_seq=0, receipt_id="ledger.redaction.0")
            del e["receipt"]["entry_run_prev"], e["receipt"]["entry_team_prev"]
        extra = edited_json(lines(files["redactions.jsonl"])[0], edit)
        files["redactions.jsonl"] = extra + b"\n" + files["redactions.jsonl"]
        self.assert_refused(resigned(files), "redactions.jsonl: line 1: seq 2 redacts no entry of the pack")

    # "redactions.jsonl: missing: entries.jsonl line N is redacted by seq R"

    def test_redactions_removed(self):
        files = self.pack()
        del files["redactions.jsonl"]
        self.assert_refused(resigned(files), "redactions.jsonl: missing: entries.jsonl line 2 is redacted by seq 6")

    def test_redactions_removed_from_a_team_window(self):
        files = self.pack("team")
        del files["redactions.jsonl"]
        self.assert_refused(resigned(files), "redactions.jsonl: missing: entries.jsonl line 2 is redacted by seq 6")

    # "redactions.jsonl: a pack with no redacted entry carries no redactions"

    def test_empty_redactions(self):
        files = self.pack()
        files["redactions.jsonl"] = b""
        self.assert_refused(resigned(files), "redactions.jsonl: a pack with no redacted entry carries no "
                                             "redactions")

    def test_erased_lines_replaced_by_the_bodies(self):
        """Both erased entries' lines replaced by their leaves from the pack
        exported before: no redacted line is left for redactions.jsonl."""
        files = self.pack("seqs")
        before = {json.loads(x)["seq"]: x for x in lines(self.pack("before")["entries.jsonl"])}
        entries = lines(files["entries.jsonl"])
        files["entries.jsonl"] = joined([before[1] if i == 1 else before[3] if i == 3 else x
                                         for i, x in enumerate(entries)])
        self.assert_refused(resigned(files), "redactions.jsonl: a pack with no redacted entry carries no "
                                             "redactions")
        # Without the file, a pack of format 8 that holds no erased entry
        # breaks no rule of section 8 (only the exporter's: it writes
        # format 8 for a pack with an erased entry).
        del files["redactions.jsonl"]
        out = self.assert_ok(resigned(files))
        self.assertEqual(out[1:], [])

    # The erased entry counts as its redacted line states it.

    def test_redacted_line_and_redaction_forged_together(self):
        """A skeleton changed in the redacted line and in its redaction alike
        changes the redaction's leaf hash: the multiproof refuses it."""
        files = self.pack()
        files["entries.jsonl"] = with_line(files["entries.jsonl"], 2, edited_json(
            lines(files["entries.jsonl"])[1], lambda e: e["redacted"].update(logged_at_us=1)))
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 2, edited_json(
            lines(files["redactions.jsonl"])[1], lambda e: e["receipt"].update(entry_logged_at_us=1)))
        self.assert_multiproof_refuses(files)

    def assert_multiproof_refuses(self, files):
        code, out, err = self.run_verify(resigned(files))
        root = json.loads(files["manifest.json"])["root"]
        self.assertEqual(code, 1)
        self.assertRegex("\n".join(out), r"^FAILED: multiproof\.txt: the entries and the multiproof lead to root "
                                         r"[0-9a-f]{64}, the checkpoint's is %s$" % root)

    def test_reason_forged(self):
        """The reason printed is the redaction's, bound to the tree."""
        files = self.pack()
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 1, edited_json(
            lines(files["redactions.jsonl"])[0], lambda e: e["receipt"].update(reason="routine clean-up")))
        self.assert_multiproof_refuses(files)

    def test_reason_forged_in_redactions_of_a_seq_range(self):
        """A redaction in the scope is in both files: the two lines must be
        the same leaf."""
        files = self.pack("seqs")
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 1, edited_json(
            lines(files["redactions.jsonl"])[0], lambda e: e["receipt"].update(reason="routine clean-up")))
        self.assert_refused(resigned(files), "redactions.jsonl: line 1: seq 5: not the leaf of entries.jsonl line 6, "
                                             "which holds that seq")

    def test_leaf_hash_of_erased_entry_is_the_next_prev(self):
        """leaf_hash changed in both files alike: the next entry's prev is
        checked against it."""
        files = self.pack()
        forged = "cd" * 32
        old = json.loads(lines(files["entries.jsonl"])[2])["redacted"]["leaf_hash"]
        files["entries.jsonl"] = with_line(files["entries.jsonl"], 3, edited_json(
            lines(files["entries.jsonl"])[2], lambda e: e["redacted"].update(leaf_hash=forged)))
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 1, edited_json(
            lines(files["redactions.jsonl"])[0], lambda e: e["receipt"].update(entry_leaf_hash=forged)))
        self.assert_refused(resigned(files), "entries.jsonl seq 4: prev expected %s, found %s" % (forged, old))

    def test_run_chain_of_erased_entry(self):
        """run_prev changed in both files alike: the run chain is checked
        through the erased entry."""
        files = self.pack()
        files["entries.jsonl"] = with_line(files["entries.jsonl"], 3, edited_json(
            lines(files["entries.jsonl"])[2], lambda e: e["redacted"].update(run_prev=0)))
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 1, edited_json(
            lines(files["redactions.jsonl"])[0], lambda e: e["receipt"].update(entry_run_prev=0)))
        self.assert_refused(resigned(files), "entries.jsonl seq 3: run_prev expected 1, found 0")

    def test_scope_of_erased_entry(self):
        """An erased entry of another run in a run pack."""
        files = self.pack()
        files["entries.jsonl"] = with_line(files["entries.jsonl"], 3, edited_json(
            lines(files["entries.jsonl"])[2], lambda e: e["redacted"]["receipt"].update(run_id="run-8")))
        files["redactions.jsonl"] = with_line(files["redactions.jsonl"], 1, edited_json(
            lines(files["redactions.jsonl"])[0], lambda e: e["receipt"].update(entry_run_id="run-8")))
        self.assert_refused(resigned(files), "entries.jsonl seq 3: not an entry of the pack's run")

    def test_erased_entry_dropped_from_run_pack(self):
        """The erased entries count in the run's head: a run pack without one
        is short."""
        files = self.pack()
        entries = lines(files["entries.jsonl"])
        files["entries.jsonl"] = joined(entries[:1] + entries[2:])
        files["redactions.jsonl"] = joined(lines(files["redactions.jsonl"])[:1])
        self.assert_refused(resigned(files), "entries.jsonl seq 3: run_prev expected 0, found 1")

    def test_printed_values_escaped(self):
        """The line printed for an erased entry escapes what it takes from
        the pack (a reason may hold no control character, but a forged one
        is refused before it is printed; the escaping is packread.shown's)."""
        held = redactions.Held({}, 10)
        r = redactions.Redaction(6, 1, b"", {"entry_kind": "tool_call", "entry_team": "acme", "entry_run_id": "r\x1b7",
                                             "reason": "a\u202eb", "requested_by": "cn:a", "approved_by": "cn:b"})
        held.erased.append((1, r))
        self.assertEqual(held.printed(), ["entry 1: erased by redaction 6 (tool_call of team acme, run r\\x1b7): "
                                          "a\\u{202e}b; requested by cn:a, approved by cn:b."])


class Receipts(unittest.TestCase):
    """redactions.py on tests/vectors/redaction.json."""

    @classmethod
    def setUpClass(cls):
        with open(VECTORS) as f:
            cls.v = json.load(f)

    def test_accepted(self):
        for a in self.v["accepted"]:
            self.assertIsNone(redactions.receipt_rule(a["receipt"]), a["name"])

    def test_refused_names_the_field(self):
        for c in self.v["refused"]:
            with self.subTest(c["name"]):
                leaf = dict(self.v["entries"][4]["entry"], emitter=c["emitter"], receipt=c["receipt"])
                try:
                    redactions._redaction(canonical(leaf), 1, 10, None)
                except Failure as e:
                    message = str(e)
                else:
                    message = "accepted"
                if c["emitter"] != "ledger":
                    self.assertEqual(message, "redactions.jsonl: line 1: emitter '%s': a redaction is the ledger's "
                                              "only" % c["emitter"])
                else:
                    self.assertTrue(message.startswith("redactions.jsonl: line 1: %s: " % c["field"]), message)

    def test_redacted_lines_rebuilt(self):
        by_seq = {a["seq"]: a["receipt"] for a in self.v["accepted"]}
        for x in self.v["redacted_lines"]:
            self.assertEqual(redactions.redacted_line(x["by"], by_seq[x["by"]]), x["line_utf8"].encode())

    def test_bidi_control_in_reason(self):
        r = dict(self.v["accepted"][0]["receipt"], reason="GDPR \u202eart. 17")
        self.assertEqual(redactions.receipt_rule(r), ("reason", "control or bidi character U+202E at byte 5"))

    def test_a_field_of_no_redaction(self):
        r = dict(self.v["accepted"][0]["receipt"], trace_id="ab" * 16)
        self.assertEqual(redactions.receipt_rule(r), ("trace_id", "not a field of a redaction"))

    def test_untyped_admin(self):
        r = dict(self.v["accepted"][0]["receipt"], requested_by="alice")
        self.assertEqual(redactions.receipt_rule(r)[0], "requested_by")


def leaf_hash(data):
    return hashlib.sha256(b"\x00" + data).digest()


def mth(hashes):
    """RFC 9162's root of a list of leaf hashes."""
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return hashlib.sha256(b"\x01" + mth(hashes[:k]) + mth(hashes[k:])).digest()


def nodes(hashes, seqs, lo, hi):
    """NODES(lo, hi) of CONTRACT.md section 6, "Multiproofs", as the definition reads."""
    if not any(lo <= s < hi for s in seqs):
        return [mth(hashes[lo:hi])]
    if hi - lo == 1:
        return []
    k = 1
    while k * 2 < hi - lo:
        k *= 2
    return nodes(hashes, seqs, lo, lo + k) + nodes(hashes, seqs, lo + k, hi)


class Merged(unittest.TestCase):
    """packproof.check_entries on a format 8 pack made here from the log of
    tests/vectors/redaction.json (seqs 1 and 2 of team acme erased by the
    redactions at 4 and 5) and one more entry of acme at seq 6, so that in a
    team window of acme the redactions fall between its entries: the
    multiproof's walk takes them in seq order."""

    @classmethod
    def setUpClass(cls):
        with open(VECTORS) as f:
            v = json.load(f)
        cls.leaves = [e["leaf_bytes_utf8"].encode() for e in v["entries"]]
        last = json.loads(cls.leaves[2])
        cls.leaves.append(canonical({
            "emitter": "uri:spiffe://acme/gateway", "logged_at_us": last["logged_at_us"] + 4000,
            "prev": leaf_hash(cls.leaves[5]).hex(), "run_prev": 2, "seq": 6, "team_prev": 2, "v": 2,
            "receipt": {"attempt": 1, "decision": "allow", "kind": "tool_call", "occurred_at_us": 1767225599600000,
                        "receipt_id": "crm-2", "run_id": "run-7", "step_id": "build", "team": "acme",
                        "tool": "crm"}}))
        cls.lines = {x["seq"]: x["line_utf8"].encode() for x in v["redacted_lines"]}
        cls.hashes = [leaf_hash(x) for x in cls.leaves]
        cls.root = mth(cls.hashes)

    def check(self, entries, redaction_seqs, scope):
        files = {"entries.jsonl": joined(self.lines.get(s, self.leaves[s]) for s in entries),
                 "redactions.jsonl": joined(self.leaves[s] for s in redaction_seqs),
                 "multiproof.txt": joined(h.hex().encode() for h in nodes(
                     self.hashes, set(entries) | set(redaction_seqs), 0, len(self.leaves)))}
        manifest = {"format": 8, "scope": scope, "counts": {"entries": len(entries)}}
        return packproof.check_entries(files, manifest, len(self.leaves), self.root)

    def test_team_window_with_redactions_between_its_entries(self):
        scope = {"kind": "team", "team": "acme", "from_us": 0, "to_us": 1 << 62, "from_seq": 0, "to_seq": 7}
        got = self.check([0, 1, 2, 6], [4, 5], scope)
        self.assertEqual(got.count, 4)
        self.assertEqual([(e["seq"], h) for e, h in got.team], [(s, self.hashes[s]) for s in (0, 1, 2, 6)])
        self.assertEqual(got.held.printed(), [
            "entry 1: erased by redaction 5 (agent_exec of team acme, run run-7): court order 2026-117; requested by "
            "uri:spiffe://acme/admin-a, approved by uri:spiffe://acme/admin-b.",
            "entry 2: erased by redaction 4 (tool_call of team acme, run run-7): GDPR art. 17 request #881; "
            "requested by cn:alice-admin, approved by cn:bob-admin."])

    def test_seq_range_holding_its_redactions(self):
        got = self.check(list(range(7)), [4, 5], {"kind": "seq", "from_seq": 0, "to_seq": 7})
        self.assertEqual(got.count, 7)
        self.assertEqual([seq for seq, _ in got.held.erased], [1, 2])

    def test_multiproof_made_without_a_redaction(self):
        """The same window with the multiproof of its entries and of
        redaction 5 only (the hash of seq 4 given): the walk takes redaction
        4 from redactions.jsonl, so that hash is one too many."""
        scope = {"kind": "team", "team": "acme", "from_us": 0, "to_us": 1 << 62, "from_seq": 0, "to_seq": 7}
        files = {"entries.jsonl": joined(self.lines.get(s, self.leaves[s]) for s in (0, 1, 2, 6)),
                 "redactions.jsonl": joined(self.leaves[s] for s in (4, 5)),
                 "multiproof.txt": joined(h.hex().encode() for h in nodes(self.hashes, {0, 1, 2, 5, 6}, 0, 7))}
        manifest = {"format": 8, "scope": scope, "counts": {"entries": 4}}
        with self.assertRaises(Failure) as e:
            packproof.check_entries(files, manifest, 7, self.root)
        self.assertEqual(str(e.exception), "multiproof.txt: the multiproof holds 2 hashes; the entries' inclusion "
                                           "uses 1")


def skeleton(seq, kind, **receipt):
    s = redactions.Skeleton(seq=seq, v=2, logged_at_us=1000 + seq, prev="00" * 32,
                            receipt=dict(receipt, kind=kind, team="t", run_id="r", attempt=1))
    return s


def leaf(seq, kind, **receipt):
    return {"seq": seq, "v": 2, "logged_at_us": 1000 + seq, "emitter": "cn:e",
            "receipt": dict(receipt, kind=kind, team="t", run_id="r", attempt=1)}


class Steps(unittest.TestCase):
    """packsteps.py with erased entries (CONTRACT.md section 4: unknown,
    flagged redacted, for good; never pending past a deadline)."""

    def only(self, entries):
        steps = packsteps.steps(entries)
        self.assertEqual(len(steps), 1)
        return steps[0]

    def test_erased_start(self):
        s = self.only([skeleton(0, "agent_start", receipt_id="s", step_id="x")])
        self.assertEqual((s.state, s.redacted, s.completed), ("unknown", True, False))
        self.assertIsNone(packsteps.first_overdue([s], 0, 1 << 62))

    def test_erased_start_then_completion(self):
        s = self.only([skeleton(0, "agent_start", receipt_id="s", step_id="x"),
                       leaf(1, "agent_exec", receipt_id="e", step_id="x", start_receipt_id="s", status="succeeded")])
        self.assertEqual((s.state, s.redacted, s.completed), ("unknown", True, True))

    def test_erased_completion(self):
        s = self.only([leaf(0, "agent_start", receipt_id="s", step_id="x", decision="allow", timeout_ms=1),
                       skeleton(1, "agent_exec", receipt_id="e", step_id="x", start_receipt_id="s")])
        self.assertEqual((s.state, s.redacted, s.completed), ("unknown", True, True))
        self.assertIsNone(packsteps.first_overdue([s], 0, 1 << 62))

    def test_erased_completion_before_its_start(self):
        s = self.only([skeleton(0, "agent_exec", receipt_id="e", step_id="x", start_receipt_id="s"),
                       leaf(1, "agent_start", receipt_id="s", step_id="x", decision="deny", reason="no")])
        self.assertEqual((s.state, s.redacted), ("unknown", True))

    def test_erased_call(self):
        self.assertEqual(packsteps.steps([skeleton(0, "tool_call", receipt_id="c", step_id="x")]), [])

    def test_not_erased(self):
        s = self.only([leaf(0, "agent_start", receipt_id="s", step_id="x", decision="allow", timeout_ms=1)])
        self.assertEqual((s.state, s.redacted), ("pending", False))
        self.assertIsNotNone(packsteps.first_overdue([s], 0, 1 << 62))


def made_packs(build):
    """A temporary folder with fresh packs made by tests/erasure_testlib.py
    through a real ledgerd of build; removed at exit."""
    out = tempfile.mkdtemp(prefix="erasure-packs-")
    import atexit
    atexit.register(shutil.rmtree, out, True)
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "erasure_testlib.py"), build, out], check=True,
                   stdout=subprocess.DEVNULL, timeout=600)
    return out


def main():
    global PACKS
    argv = list(sys.argv)
    build = None
    if "--build" in argv:
        i = argv.index("--build")
        build = argv[i + 1]
        del argv[i:i + 2]
    given = os.environ.get("ERASURE_PACKS", "/work/erasure-packs")
    if build is None and not os.path.exists(os.path.join(given, "run.tar.gz")):
        build = os.environ.get("LEDGER_BUILD")
    if build is not None:
        PACKS = made_packs(build)
    elif os.path.exists(os.path.join(given, "run.tar.gz")):
        PACKS = given
    unittest.main(argv=argv)


if __name__ == "__main__":
    main()
