#!/usr/bin/env python3
"""The shared corpus of "Reading a pack strictly" (CONTRACT.md section 7):
from genuine packs a real ledgerd exported, one pack per rule, each broken
in that one rule and re-signed with the ledger's key (as its operator
could), so that every verifier reaches the rule under test; and the genuine
packs, which every verifier accepts.

Usage: strict_packs.py build --run RUN --run6 RUN6 --team TEAM --since-run RUN_SINCE --old-note OLD --key SIGNING_KEY
                             --out DIR
  RUN: a run pack of format 5 (run-head.json, proofs.jsonl); RUN6: the
  same run of format 6 (multiproof.txt); TEAM: a team window of format 5
  (team-window.json); RUN_SINCE: a run pack exported with --since
  OLD (consistency.json); SIGNING_KEY: the ledger's key file
  (PRIVATE+KEY+...). Writes DIR/*.tar.gz, the files the flags name, and
  DIR/cases.json: [{"name", "file", "expect" ("accept" or "refuse"),
  "flags" (file names relative to DIR), "message" (a substring of the
  refusal every verifier shares, or null), "rule", "skip" (verifiers not
  run on it, with why)}].
       strict_packs.py check --dir DIR --vkey VKEY --verifier NAME=COMMAND...
  runs each verifier (COMMAND PACK --vkey VKEY FLAGS) on every case and
  prints the table case x verifier (ok, wrong, skip); exit 1 when a
  verdict is wrong: an accepted pack refused, a refused one accepted, or
  refused with another exit code than 1 or without the message.
"""
import argparse
import base64
import gzip
import hashlib
import io
import json
import os
import struct
import subprocess
import sys
import tarfile
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pack_tamper_test as t  # noqa: E402

EM_DASH = "\u2014"
TOP = "evidence/"


class Corpus:
    def __init__(self, out, sign):
        self.out, self.sign, self.cases = out, sign, []

    def add(self, name, files, expect, rule, message=None, flags=(), skip=None, blob=None):
        """One case: files (name -> bytes) written as the exporter writes a
        pack, or blob, the .tar.gz bytes themselves."""
        path = os.path.join(self.out, name + ".tar.gz")
        with open(path, "wb") as f:
            f.write(blob if blob is not None else pack_bytes(files))
        self.cases.append({"name": name, "file": name + ".tar.gz", "expect": expect, "flags": list(flags),
                           "message": message, "rule": rule, "skip": skip or {}})

    def file(self, name, data):
        with open(os.path.join(self.out, name), "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        return name

    def resigned(self, files):
        """files with the manifest rewritten over their digests and signed."""
        return dict(t.resigned(sorted(files.items()), self.sign))

    def write(self):
        with open(os.path.join(self.out, "cases.json"), "w") as f:
            json.dump(self.cases, f, indent=1)
            f.write("\n")


def member(name, data, mode=0o644, mtime=0, kind=tarfile.REGTYPE, link=""):
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime, info.type, info.linkname = len(data or b""), mode, mtime, kind, link
    return info, data


def tar_bytes(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data else None)
    return buf.getvalue()


def pack_bytes(files):
    """The pack as the exporter writes it: sorted regular files of mode
    0644 and mtime 0 in the top folder, gzip."""
    return gzip.compress(tar_bytes([member(TOP + n, files[n]) for n in sorted(files)]), mtime=0)


def text_of(note):
    return note.split(b"\n\n")[0] + b"\n"


def sig_lines(note):
    return note.split(b"\n\n", 1)[1].split(b"\n")[:-1]


def with_lines(note, lines):
    return text_of(note) + b"\n" + b"".join(x + b"\n" for x in lines)


def stray_bits(b64):
    """b64 (canonical, ending in '=') with a bit set that the padding says
    is not data: decodes to the same bytes, but is not canonical."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    body = b64.rstrip("=")
    at = len(body) - 1
    changed = body[:at] + alphabet[alphabet.index(body[at]) | 1] + b64[len(body):]
    assert changed != b64 and base64.b64decode(changed) == base64.b64decode(b64), (b64, changed)
    return changed


def dup_key(data, key):
    """A JSON object's text with its key `key` written twice (the same value)."""
    obj = json.loads(data)
    return b'{"%s":%s,' % (key.encode(), json.dumps(obj[key], separators=(",", ":")).encode()) + data.lstrip()[1:]


class Witness:
    """A cosignature/v1 key (CONTRACT.md section 5b), made here."""

    def __init__(self, name):
        self.name, self.key = name, Ed25519PrivateKey.generate()
        pub = self.key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        self.key_id = hashlib.sha256(name.encode() + b"\n\x04" + pub).digest()[:4]
        self.vkey = "%s+%s+%s" % (name, self.key_id.hex(), base64.b64encode(b"\x04" + pub).decode())

    def line(self, text, when):
        sig = self.key.sign(b"cosignature/v1\ntime %d\n" % when + text)
        blob = self.key_id + struct.pack(">Q", when) + sig
        return ("%s %s %s" % (EM_DASH, self.name, base64.b64encode(blob).decode())).encode()


def json_cases(c, run, team, since):
    rule = "a key twice in a JSON file of a pack"
    proofs = run["proofs.jsonl"].split(b"\n")
    proofs[1] = dup_key(proofs[1], "inclusion")
    c.add("key-twice-proofs-line", c.resigned(dict(run, **{"proofs.jsonl": b"\n".join(proofs)})), "refuse", rule,
          "key inclusion twice")
    c.add("key-twice-run-head", c.resigned(dict(run, **{"run-head.json": dup_key(run["run-head.json"], "head")})),
          "refuse", rule, "key head twice")
    window = json.loads(team["team-window.json"])
    first = next(iter(window))
    c.add("key-twice-team-window", c.resigned(dict(team, **{"team-window.json": dup_key(team["team-window.json"],
                                                                                          first)})),
          "refuse", rule, "key %s twice" % first)
    c.add("key-twice-outcomes", c.resigned(dict(run, **{"outcomes.json": dup_key(run["outcomes.json"], "steps")})),
          "refuse", rule, "key steps twice")
    c.add("key-twice-consistency", c.resigned(dict(since, **{"consistency.json": dup_key(since["consistency.json"],
                                                                                           "proof")})),
          "refuse", rule, "consistency.json: key proof twice")
    extra = json.loads(since["consistency.json"])
    extra["note"] = "x"
    c.add("consistency-other-key", c.resigned(dict(since, **{"consistency.json": json.dumps(extra).encode()})),
          "refuse", "consistency.json holds old_checkpoint and proof only", "consistency.json: note: not a field")


def signature_cases(c, run):
    rule = "a note signed twice by the ledger's key"
    for name in ("manifest.sig", "checkpoint", "checkpoint-time"):
        note = run[name]
        twice = with_lines(note, sig_lines(note) + sig_lines(note)[:1])
        files = dict(run, **{name: twice})
        c.add("signed-twice-" + name.replace(".", "-"), files if name == "manifest.sig" else c.resigned(files),
              "refuse", rule, "signed twice by the ledger's key")
    cp = run["checkpoint"]
    own = sig_lines(cp)[0].decode()
    blob = own.split(" ", 2)[2]
    bad = {
        "name-plus": "%s wit+ness %s" % (EM_DASH, blob),
        "name-empty": "%s  %s" % (EM_DASH, blob),
        "name-space": "%s wit ness %s" % (EM_DASH, blob),
        "short": "%s witness %s" % (EM_DASH, base64.b64encode(b"\x01\x02\x03\x04").decode()),
        "not-canonical": "%s witness %s" % (EM_DASH, stray_bits(blob)),
    }
    for label, line in bad.items():
        c.add("signature-line-" + label, c.resigned(dict(run, checkpoint=with_lines(cp, [own.encode(),
                                                                                          line.encode()]))),
              "refuse", "a malformed signature line", "signature line 2: malformed")
    ledger_line = "%s %s %s" % (EM_DASH, own.split(" ")[1], stray_bits(blob))
    c.add("signature-ledger-not-canonical", c.resigned(dict(run, checkpoint=with_lines(cp, [ledger_line.encode()]))),
          "refuse", "non-canonical base64 in a signature", "signature line 1: malformed")


def witness_cases(c, run, vkey):
    """Two valid cosignature lines by one witness: it counts once."""
    cp, w, other = run["checkpoint"], Witness("witness-a.example"), Witness("witness-b.example")
    now = int(time.time()) + 5
    twice = with_lines(cp, sig_lines(cp) + [w.line(text_of(cp), now), w.line(text_of(cp), now + 1)])
    files = c.resigned(dict(run, checkpoint=twice))
    one = c.file("policy-a.txt", "log %s\nwitness A %s\nquorum A\n" % (vkey, w.vkey))
    two = c.file("policy-a-and-b.txt", "log %s\nwitness A %s\nwitness B %s\ngroup AB 2 A B\nquorum AB\n"
                 % (vkey, w.vkey, other.vkey))
    report = ("report.html lists the checkpoint's cosignature lines: a pack whose lines were edited needs its "
              "report rebuilt by the exporter's code, which the corpus does not run")
    c.add("witness-twice-quorum-one", files, "accept", "a witness's two valid lines count once (quorum A: met)",
          flags=["--policy", one], skip={"ledgerctl": report, "ledger-verify": report})
    c.add("witness-twice-quorum-two", files, "refuse", "a witness's two valid lines count once (2 of A, B: not met)",
          "quorum", flags=["--policy", two])


def vkey_cases(c, run):
    line = run["ledger.vkey"].rstrip(b"\n")
    for label, data in (("crlf", line + b"\r\n"), ("no-newline", line), ("two-lines", line + b"\n" + line + b"\n")):
        c.add("vkey-" + label, c.resigned(dict(run, **{"ledger.vkey": data})), "refuse",
              "ledger.vkey is one key line and one LF", "ledger.vkey: want one line ending in a newline")


def tar_cases(c, run, exported):
    names = sorted(run)
    good = [member(TOP + n, run[n]) for n in names]
    at = names.index("report.html")

    def changed(**kw):
        out = list(good)
        out[at] = member(TOP + "report.html", run["report.html"], **kw)
        return gzip.compress(tar_bytes(out), mtime=0)
    swapped = good[:1] + good[2:3] + good[1:2] + good[3:]
    c.add("tar-unsorted", None, "refuse", "tar members in sorted name order",
          blob=gzip.compress(tar_bytes(swapped), mtime=0))
    c.add("tar-mode-0600", None, "refuse", "tar members of mode 0644", "report.html", blob=changed(mode=0o600))
    c.add("tar-mtime", None, "refuse", "tar members of mtime 0", "report.html", blob=changed(mtime=1767225600))
    link = good[:at] + [member(TOP + "report.html", b"", kind=tarfile.SYMTYPE, link="/etc/passwd")] + good[at + 1:]
    c.add("tar-symlink", None, "refuse", "regular files only", "report.html",
          blob=gzip.compress(tar_bytes(link), mtime=0))
    folder = [member(TOP.rstrip("/"), b"", mode=0o755, kind=tarfile.DIRTYPE)] + good
    c.add("tar-top-folder-entry", None, "accept", "the top folder's directory entry is allowed",
          blob=gzip.compress(tar_bytes(folder), mtime=0))
    sub = good[:at] + [member(TOP + "report", b"", mode=0o755, kind=tarfile.DIRTYPE)] + good[at:]
    c.add("tar-directory", None, "refuse", "regular files only (a directory inside the top folder)",
          blob=gzip.compress(tar_bytes(sub), mtime=0))
    whole = exported  # the exporter's own gzip members
    c.add("gzip-trailing-garbage", None, "refuse", "nothing after the gzip stream", "bytes after the gzip stream",
          blob=whole + b"trailing bytes\n")
    c.add("gzip-trailing-zeros", None, "refuse", "nothing after the gzip stream", "bytes after the gzip stream",
          blob=whole + b"\0" * 512)


def since_cases(c, run, exported, old_note):
    same = c.file("since-same-size.note", text_of(run["checkpoint"]) + b"\n" + sig_lines(run["checkpoint"])[0] + b"\n")
    c.add("since-same-size-no-consistency", None, "refuse", "with --since, consistency.json is required",
          "consistency.json: missing", flags=["--since", same], blob=exported["run"])
    old = c.file("old.note", old_note)
    c.add("genuine-run-since", None, "accept", "a genuine run pack exported with --since", flags=["--since", old],
          blob=exported["since"])


def size_cases(c, run):
    padded = run["run-head.json"] + b" " * ((1 << 20) + 1 - len(run["run-head.json"]))
    c.add("run-head-over-1-mib", c.resigned(dict(run, **{"run-head.json": padded})), "refuse",
          "a JSON member of a pack is at most 1 MiB", "larger than 1 MiB")


def format_cases(c, run):
    body = text_of(run["checkpoint-time"]).decode().split("\n")  # header, origin, size, root, runs, teams, time, ""
    v2 = c.sign(("\n".join(["evidence-ledger/checkpoint-time/v2"] + body[1:5] + body[6:])).encode())
    files = dict(run, **{"checkpoint-time": v2})
    m = json.loads(files["manifest.json"])
    m["format"] = 2
    files["manifest.json"] = (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()
    c.add("format-2-version-2-note", c.resigned(files), "refuse",
          "a format 2 pack carries a version 1 note and no run-head.json", "format 2 pack with a version 2 note")


def note_cases(c, run):
    cp = run["checkpoint"]
    origin, size, root = text_of(cp).decode().split("\n")[:3]
    rule = "a checkpoint's size is ASCII decimal, no sign, no leading zero, no space or '_'"
    forms = {"underscore": size[:1] + "_" + size[1:], "plus": "+" + size, "leading-zero": "0" + size,
             "space": size + " ", "unicode-digits": "".join(chr(0xFF10 + int(d)) for d in size)}
    for label, text in forms.items():
        note = c.sign(("%s\n%s\n%s\n" % (origin, text, root)).encode())
        c.add("checkpoint-size-" + label, c.resigned(dict(run, checkpoint=note)), "refuse", rule, "checkpoint")
    extra = c.sign(("%s\n%s\n%s\nextension line\n" % (origin, size, root)).encode())
    c.add("checkpoint-extra-line", c.resigned(dict(run, checkpoint=extra)), "refuse",
          "a checkpoint's body is its three lines", "checkpoint")
    stray = c.sign(("%s\n%s\n%s\n" % (origin, size, stray_bits(root))).encode())
    c.add("checkpoint-root-not-canonical", c.resigned(dict(run, checkpoint=stray)), "refuse",
          "a root in canonical base64", "checkpoint")
    body = text_of(run["checkpoint-time"]).decode().split("\n")
    longer = c.sign(("\n".join(body[:-2] + ["extra line"] + body[-2:])).encode())
    c.add("time-note-extra-line", c.resigned(dict(run, **{"checkpoint-time": longer})), "refuse",
          "a time note's body is the lines of its version", "checkpoint-time")
    body[3] = stray_bits(body[3])
    c.add("time-note-root-not-canonical", c.resigned(dict(run, **{"checkpoint-time": c.sign("\n".join(body).encode())})),
          "refuse", "a root in canonical base64", "checkpoint-time")


def scope_cases(c, team):
    m = json.loads(team["manifest.json"])
    m["scope"]["to_us"] = m["scope"]["from_us"]
    files = dict(team, **{"manifest.json": (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()})
    c.add("team-scope-empty-window", c.resigned(files), "refuse", "a team window's from_us is below its to_us",
          "scope.from_us: want less than to_us")


def newline_cases(c, run):
    lines = run["entries.jsonl"].split(b"\n")[:-1]
    rule = "every line of a .jsonl file ends in a newline"
    c.add("entries-last-line-no-newline", c.resigned(dict(run, **{"entries.jsonl": run["entries.jsonl"][:-1]})),
          "refuse", rule, "line %d: no newline at its end" % len(lines))
    tenth = run["entries.jsonl"] + lines[-1]
    c.add("entries-extra-line-no-newline", c.resigned(dict(run, **{"entries.jsonl": tenth})), "refuse", rule,
          "line %d: no newline at its end" % (len(lines) + 1))
    c.add("proofs-last-line-no-newline", c.resigned(dict(run, **{"proofs.jsonl": run["proofs.jsonl"][:-1]})),
          "refuse", rule, "line %d: no newline at its end" % len(lines))


def leaf_hash(leaf):
    return hashlib.sha256(b"\x00" + leaf).digest()


def split(n):
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def subtree_hashes(size, leaves, nodes):
    """Every subtree hash (lo, hi) -> bytes that a pack's multiproof walk
    computes from its leaves (seq -> leaf bytes) and the hashes of its
    multiproof.txt, in order (CONTRACT section 6, "Multiproofs")."""
    known, used = {}, [0]

    def root(lo, hi):
        if not any(lo <= s < hi for s in leaves):
            h = nodes[used[0]]
            used[0] += 1
        elif hi - lo == 1:
            h = leaf_hash(leaves[lo])
        else:
            k = split(hi - lo)
            left = root(lo, lo + k)
            h = hashlib.sha256(b"\x01" + left + root(lo + k, hi)).digest()
        known[(lo, hi)] = h
        return h

    root(0, size)
    return known


def multiproof_of(size, kept, known):
    """multiproof.txt for the seqs `kept` in a tree of `size`, from `known`
    (subtree_hashes of a walk whose every range the new walk needs lies in
    a range it computed)."""
    out = []

    def walk(lo, hi):
        if not any(lo <= s < hi for s in kept):
            out.append(known[(lo, hi)].hex())
        elif hi - lo > 1:
            k = split(hi - lo)
            walk(lo, lo + k)
            walk(lo + k, hi)

    walk(0, size)
    return "".join(x + "\n" for x in out).encode()


def remade_multiproof(files, keep):
    """multiproof.txt for the entries of entries.jsonl's lines that keep(i)
    keeps, made from the pack's own multiproof: what anyone holding the
    pack can make."""
    size = json.loads(files["manifest.json"])["tree_size"]
    lines = files["entries.jsonl"].split(b"\n")[:-1]
    seqs = [json.loads(x)["seq"] for x in lines]
    nodes = [bytes.fromhex(x) for x in files["multiproof.txt"].decode().split("\n")[:-1]]
    known = subtree_hashes(size, dict(zip(seqs, lines)), nodes)
    return multiproof_of(size, [s for i, s in enumerate(seqs) if keep(i)], known)


def multiproof_cases(c, run6, run):
    """Format 6: the multiproof's grammar, a hash too few, too many, moved
    or altered, and the entries dropped, added, reordered or altered (the
    multiproof made anew for them where anyone could)."""
    nodes = run6["multiproof.txt"].split(b"\n")[:-1]
    assert len(nodes) >= 2, "a run pack of format 6 in a log of several runs has a multiproof of several hashes"
    lines = run6["entries.jsonl"].split(b"\n")[:-1]

    def with_nodes(ns):
        return c.resigned(dict(run6, **{"multiproof.txt": b"".join(x + b"\n" for x in ns)}))

    def with_entries(ls, remake=None):
        files = dict(run6, **{"entries.jsonl": b"".join(x + b"\n" for x in ls)})
        if remake is not None:
            files["multiproof.txt"] = remade_multiproof(run6, remake)
        m = json.loads(files["manifest.json"])
        m["counts"]["entries"] = len(ls)
        files["manifest.json"] = (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()
        return c.resigned(files)

    rule = "a pack of format 6 proves its entries' inclusion with its multiproof, every hash used"
    c.add("multiproof-hash-removed", with_nodes(nodes[:-1]), "refuse", rule, "the multiproof ends after")
    c.add("multiproof-hash-added", with_nodes(nodes + nodes[:1]), "refuse", rule, "the multiproof holds")
    c.add("multiproof-hashes-swapped", with_nodes([nodes[1], nodes[0]] + nodes[2:]), "refuse", rule,
          "the entries and the multiproof lead to root")
    altered = bytearray(nodes[0])
    altered[10] = ord("0") if altered[10] != ord("0") else ord("1")
    c.add("multiproof-hash-altered", with_nodes([bytes(altered)] + nodes[1:]), "refuse", rule,
          "the entries and the multiproof lead to root")
    c.add("multiproof-hash-upper-case", with_nodes([nodes[0].upper()] + nodes[1:]), "refuse",
          "a line of multiproof.txt is 64 lower-case hex digits", "line 1: want 64 lower-case hex digits")
    c.add("multiproof-empty-line", with_nodes(nodes[:1] + [b""] + nodes[1:]), "refuse",
          "a line of multiproof.txt is 64 lower-case hex digits", "line 2: want 64 lower-case hex digits")
    c.add("multiproof-last-line-no-newline", c.resigned(dict(run6, **{"multiproof.txt": run6["multiproof.txt"][:-1]})),
          "refuse", "every line ends in a newline", "line %d: no newline at its end" % len(nodes))
    # The entries: each change alone is caught by the multiproof; an entry
    # dropped with the multiproof made anew, by the run's chain.
    c.add("entry-dropped", with_entries(lines[:3] + lines[4:]), "refuse", rule)
    c.add("entry-dropped-multiproof-remade", with_entries(lines[:3] + lines[4:], lambda i: i != 3), "refuse",
          "a run pack holds its run's chain, gap-free")
    c.add("entry-added", with_entries(lines[:4] + lines[3:4] + lines[4:]), "refuse", "seqs ascend")
    c.add("entries-reordered", with_entries(lines[:3] + [lines[4], lines[3]] + lines[5:]), "refuse", "seqs ascend")
    changed = lines[2].replace(b'"receipt_id":"', b'"receipt_id":"x', 1)
    assert changed != lines[2]
    c.add("entry-altered", with_entries(lines[:2] + [changed] + lines[3:]), "refuse", rule)
    # Each format its own proofs.
    c.add("format-6-with-proofs-jsonl", c.resigned(dict(run6, **{"proofs.jsonl": run["proofs.jsonl"]})), "refuse",
          "a pack of format 6 carries multiproof.txt, not proofs.jsonl",
          "a pack of format 6 proves inclusion with multiproof.txt")
    c.add("format-5-with-multiproof", c.resigned(dict(run, **{"multiproof.txt": run6["multiproof.txt"]})), "refuse",
          "only a pack of format 6 carries a multiproof", "only a pack of format 6 carries a multiproof")


def build(a):
    os.makedirs(a.out, exist_ok=True)
    c = Corpus(a.out, t.signer(a.key))
    run, team, since, run6 = (dict(t.read_pack(p)) for p in (a.run, a.team, a.since_run, a.run6))
    for name, p in (("run", run), ("team", team), ("since-run", since)):
        m = json.loads(p["manifest.json"])
        assert m["format"] == 5, (name, m["format"])
    assert json.loads(run6["manifest.json"])["format"] == 6 and "multiproof.txt" in run6
    assert "run-head.json" in run and "team-window.json" in team and "consistency.json" in since
    vkey = open(a.vkey).read().strip()
    exported = {n: open(p, "rb").read() for n, p in (("run", a.run), ("team", a.team), ("since", a.since_run))}
    c.add("genuine-run", None, "accept", "a genuine run pack", blob=exported["run"])
    c.add("genuine-team", None, "accept", "a genuine team window", blob=exported["team"])
    c.add("genuine-run-format-6", None, "accept", "a genuine run pack of format 6", blob=open(a.run6, "rb").read())
    multiproof_cases(c, run6, run)
    json_cases(c, run, team, since)
    signature_cases(c, run)
    witness_cases(c, run, vkey)
    vkey_cases(c, run)
    tar_cases(c, run, exported["run"])
    since_cases(c, run, exported, open(a.old_note, "rb").read())
    size_cases(c, run)
    format_cases(c, run)
    note_cases(c, run)
    scope_cases(c, team)
    newline_cases(c, run)
    c.write()
    print("strict packs: %d cases in %s" % (len(c.cases), a.out))
    return 0


def verdict(case, code, out):
    """'ok' when a verifier's exit code and output are what the case expects,
    else 'wrong'."""
    if case["expect"] == "accept":
        return "ok" if code == 0 else "wrong"
    return "ok" if code == 1 and (case["message"] is None or case["message"] in out) else "wrong"


def check(a):
    """Runs every verifier on every case of DIR/cases.json; prints the table
    case x verifier and, for each wrong verdict, what the verifier said."""
    with open(os.path.join(a.dir, "cases.json")) as f:
        cases = json.load(f)
    verifiers = [v.split("=", 1) for v in a.verifier]
    table, wrong = [], []
    for case in cases:
        row = []
        for name, command in verifiers:
            if name in case["skip"]:
                row.append("skip")
                continue
            flags = [os.path.join(a.dir, x) if os.path.exists(os.path.join(a.dir, x)) else x for x in case["flags"]]
            cmd = command.split() + [os.path.join(a.dir, case["file"]), "--vkey", a.vkey] + flags
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=120)
                code, out = p.returncode, (p.stdout + p.stderr).strip()
            except subprocess.TimeoutExpired:
                code, out = -1, "timed out after 120 s"
            row.append(verdict(case, code, out))
            if row[-1] == "wrong":
                wrong.append((case, name, code, out))
        table.append((case["name"], case["expect"], row))
    width = max(len(n) for n, _, _ in table)
    print("%-*s  %-6s  %s" % (width, "case", "expect", "  ".join("%-16s" % n for n, _ in verifiers)))
    for name, expect, row in table:
        print("%-*s  %-6s  %s" % (width, name, expect, "  ".join("%-16s" % v for v in row)))
    for case, name, code, out in wrong:
        want = "exit 0" if case["expect"] == "accept" else "exit 1" + (
            " with '%s'" % case["message"] if case["message"] else "")
        print("WRONG: %s (%s), %s: want %s, got exit %d: %s" % (case["name"], case["rule"], name, want, code,
                                                              out.replace("\n", " | ")[:400]))
    by = {name: sum(1 for c, n, _, _ in wrong if n == name) for name, _ in verifiers}
    print("strict packs: %d cases; wrong verdicts by verifier: %s"
          % (len(cases), ", ".join("%s %d" % kv for kv in by.items())))
    return 1 if wrong else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    for flag in ("--run", "--run6", "--team", "--since-run", "--old-note", "--key", "--vkey", "--out"):
        b.add_argument(flag, required=True)
    k = sub.add_parser("check")
    k.add_argument("--dir", required=True)
    k.add_argument("--vkey", required=True)
    k.add_argument("--verifier", action="append", required=True, help="NAME=COMMAND (the pack and flags follow)")
    a = ap.parse_args()
    return build(a) if a.command == "build" else check(a)


if __name__ == "__main__":
    sys.exit(main())
