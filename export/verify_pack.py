#!/usr/bin/env python3
"""Verify an evidence pack without trusting the ledger's own code.

Uses only Python's standard library and the `cryptography` package. Checks
the manifest's signature and every file's SHA-256 (a file the manifest
lists must be in the pack, and every file in the pack listed), the
checkpoint's signature, every entry's leaf hash and RFC 9162 inclusion
proof, the hash chain between consecutive seqs, and the scope: for a run
pack the run chain from the run's first entry, for a seq range every seq
from its first to its last, within a team window or seq range each run's
chain from its first seq. (Step outcomes are recomputed, and report.html
rebuilt, by `ledgerctl verify` and `ledger-verify`; here outcomes.json and
report.html are checked by their digests in the signed manifest only, so a
report re-signed by whoever holds the ledger's key passes this script.)

Usage: verify_pack.py PACK.tar.gz (--vkey FILE | --vkey-string S | --trust-pack-key) [--since CHECKPOINT]
         [--expect-scope run:TEAM/RUN|seq:A:B|team:TEAM,FROM,TO] [--not-older-than SIZE|CHECKPOINT]
         [--policy POLICY]
       verify_pack.py PACK.tar.gz VKEY     (the same as --vkey-string VKEY)
FILE holds the ledger's verifier key line, e.g. name+1a2b3c4d+AbCd...;
--trust-pack-key trusts the key inside the pack instead, and the result then
proves nothing about the ledger's identity. --since CHECKPOINT (a file
holding the auditor's earlier signed checkpoint): the pack must prove
consistency from exactly that checkpoint. --expect-scope: the scope asked
for; a pack of another scope fails. --not-older-than: a tree size or a file
holding a signed checkpoint; a pack against an older checkpoint fails.
The checkpoint's time note (checkpoint-time) must be signed by the key and
name the pack's checkpoint; its time is printed, and a step still pending
past its deadline (start + timeout + the manifest's unknown_grace_ms) at
that time fails. A --since or --not-older-than file may hold the checkpoint
followed by its time note: the pack's time must then not be earlier.
A format 3 pack's time note is version 2 and signs the run-head map root;
a format 3 run pack proves with run-head.json (export/completeness.py) that
it holds every entry of its run up to the checkpoint, or, with an absence
proof, that the run has none: the lines after the OK line say so, and name
each step pending or unknown as having no completion in the log.
A format 4 pack's time note is version 3 and signs the team-head map root
too; a team window proves with team-window.json (export/teamwindow.py) that
it holds every entry of its team logged in the window, as far back as the
team chain (team_prev, leaf version 2) reaches: the line after the OK line
says how far. A --since note of version 2 or 3 demands one as new.
--policy POLICY (a c2sp.org/tlog-policy, export/tlogpolicy.py): the key must
be a log of the policy (without a key given, the key is the policy's log
named as the manifest's origin), every cosignature line of a policy witness
in the checkpoint must verify, and the witnesses with a valid line must meet
the quorum; the line after the OK line names them with their times.
Exit 0 when everything holds; 1, naming the first failing item, when
something does not; 2 for bad usage (a key given but empty or malformed).
"""
import argparse
import base64
import datetime
import hashlib
import json
import os
import re
import sys
import tarfile

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import completeness  # noqa: E402
import teamwindow  # noqa: E402
import tlogpolicy  # noqa: E402

FILES = {"checkpoint", "entries.jsonl", "ledger.vkey", "manifest.json", "manifest.sig",
         "outcomes.json", "proofs.jsonl", "report.html", "consistency.json", "checkpoint-time", "run-head.json",
         "team-window.json"}
OPTIONAL = {"consistency.json", "checkpoint-time", "run-head.json", "team-window.json"}
TIME_HEADERS = {"evidence-ledger/checkpoint-time/v%d" % v: v for v in (1, 2, 3)}
MAX_FILE = 4 << 30
HEX64 = re.compile(r"[0-9a-f]{64}\Z")


class Failure(Exception):
    pass


class UsageError(Exception):
    pass


def read_pack(path):
    files, top = {}, None
    with tarfile.open(path, "r:gz") as tar:
        for m in tar:
            parts = m.name.split("/")
            if not m.isreg() or len(parts) != 2 or m.name.startswith("/") or ".." in parts:
                raise Failure("%s: not a regular file directly in the top folder" % m.name)
            if top is None:
                top = parts[0]
            if parts[0] != top or parts[1] not in FILES or parts[1] in files:
                raise Failure("%s: unexpected or duplicate entry" % m.name)
            if m.size > MAX_FILE:
                raise Failure("%s: too large" % m.name)
            files[parts[1]] = tar.extractfile(m).read()
    return files


def parse_vkey(vkey):
    parts = vkey.strip().split("+", 2)
    if len(parts) != 3 or not parts[0]:
        raise Failure("vkey: want NAME+ID+KEY")
    name, key_id, key = parts
    try:
        raw = base64.b64decode(key, validate=True)
        bytes.fromhex(key_id)
    except ValueError:
        raise Failure("vkey: the key id is not hex or the key not base64")
    if len(raw) != 33 or raw[0] != 1:
        raise Failure("vkey: not an Ed25519 verifier key")
    if hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4].hex() != key_id:
        raise Failure("vkey: key id does not match the key")
    return name, bytes.fromhex(key_id), Ed25519PublicKey.from_public_bytes(raw[1:])


def open_note(note, key):
    name, key_id, public = key
    text, sep, sigs = note.rpartition(b"\n\n")
    if not sep:
        raise Failure("no signature block")
    text += b"\n"
    try:
        sig_lines = sigs.decode().splitlines()
    except UnicodeDecodeError:
        raise Failure("malformed signature line")
    for line in sig_lines:
        if not line.startswith("\u2014 "):
            raise Failure("malformed signature line")
        try:
            signer, sig = line[2:].split(" ", 1)
            sig = base64.b64decode(sig, validate=True)
        except ValueError:  # binascii.Error is one
            raise Failure("malformed signature line")
        if signer == name and sig[:4] == key_id:
            try:
                public.verify(sig[4:], text)
            except InvalidSignature:
                raise Failure("signature by %s does not verify" % name)
            return text.decode()
    raise Failure("no signature by %s" % name)


def hash_hex(h):
    """A hash written as 64 lowercase hex digits, as bytes; None otherwise."""
    return bytes.fromhex(h) if isinstance(h, str) and HEX64.match(h) else None


def proof_line(line):
    """(seq, leaf_hash, path) of a proofs.jsonl line: a JSON object of
    exactly seq, leaf_hash and inclusion, any spacing; None otherwise."""
    try:
        p = json.loads(line)
    except ValueError:
        return None
    if not isinstance(p, dict) or set(p) != {"seq", "leaf_hash", "inclusion"}:
        return None
    seq, leaf, inclusion = p["seq"], p["leaf_hash"], p["inclusion"]
    if type(seq) is not int or not 0 <= seq < 1 << 63 or not isinstance(leaf, str) or not isinstance(inclusion, list):
        return None
    path = [hash_hex(h) for h in inclusion]
    if None in path:
        return None
    return seq, leaf, path


def node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def verify_inclusion(index, size, leaf, proof, root):
    # RFC 9162 section 2.1.3.2
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(m, n, old_root, new_root, proof):
    # RFC 9162 section 2.1.4.2
    if m == n or m == 0:
        return not proof and (m != n or old_root == new_root)
    if m > n or not proof:
        return False
    if m & (m - 1) == 0:
        proof = [old_root] + proof
    fn, sn = m - 1, n - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = proof[0]
    for c in proof[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node(c, fr), node(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == old_root and sr == new_root and sn == 0


def run_chain(entry, last_of_run, first, name):
    """Within a window or range of seqs from `first`: an entry whose run_prev
    is at or after it links to the previous entry of its run in the pack;
    the first of its run in the pack has none, or one below it."""
    key = (entry["receipt"]["team"], entry["receipt"]["run_id"])
    before, run_prev = last_of_run.get(key), entry.get("run_prev")
    last_of_run[key] = entry["seq"]
    found = "none" if run_prev is None else run_prev
    if before is not None:
        if run_prev != before:
            raise Failure("entries.jsonl seq %d: run_prev expected %d (the run's previous entry in the pack), found %s"
                          % (entry["seq"], before, found))
    elif run_prev is not None and run_prev >= first:
        raise Failure("entries.jsonl seq %d: run_prev expected none or below %d (%s), found %s"
                      % (entry["seq"], first, name, found))


def checkpoint_of(note, key):
    """(origin, size, root) of a signed checkpoint note."""
    lines = open_note(note, key).split("\n")
    if len(lines) < 4 or not lines[1].isdigit():
        raise Failure("not a checkpoint")
    return lines[0], int(lines[1]), base64.b64decode(lines[2], validate=True)


def base64_hash(text):
    """The 32 bytes of a hash written in standard base64, or None."""
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        return None
    return raw if len(raw) == 32 and base64.b64encode(raw).decode() == text else None


def checkpoint_time(note, key):
    """(origin, size, root, time_us, runs, teams) of a signed checkpoint-time
    note (CONTRACT.md section 5); runs, the run-head map root, is None in a
    version 1 note, teams, the team-head map root, below version 3."""
    lines = open_note(note, key).split("\n")
    version = TIME_HEADERS.get(lines[0])
    if version is None or len(lines) != 5 + version or lines[-1] != "":
        raise Failure("checkpoint time: want exactly five lines: 'evidence-ledger/checkpoint-time/v1', origin, size, "
                      "root, time; six: 'evidence-ledger/checkpoint-time/v2', origin, size, root, runs, time; or "
                      "seven: 'evidence-ledger/checkpoint-time/v3', origin, size, root, runs, teams, time")
    decimal = re.compile(r"(0|[1-9][0-9]*)\Z")
    if not decimal.match(lines[2]):
        raise Failure("checkpoint time: the size is not a decimal number")
    root = base64_hash(lines[3])
    if root is None:
        raise Failure("checkpoint time: the root is not a base64 SHA-256 hash")
    runs = teams = None
    if version >= 2:
        runs = base64_hash(lines[4][5:]) if lines[4].startswith("runs ") else None
        if runs is None:
            raise Failure("checkpoint time: the fifth line must be 'runs ' and the run-head map root in base64")
    if version == 3:
        teams = base64_hash(lines[5][6:]) if lines[5].startswith("teams ") else None
        if teams is None:
            raise Failure("checkpoint time: the sixth line must be 'teams ' and the team-head map root in base64")
    last = lines[-2]
    if not last.startswith("time ") or not decimal.match(last[5:]) or int(last[5:]) >= 1 << 63:
        raise Failure("checkpoint time: the last line must be 'time ' and microseconds since the Unix epoch, "
                      "without leading zeros")
    return lines[1], int(lines[2]), root, int(last[5:]), runs, teams


def split_kept(data):
    """(checkpoint, time note or None) of a file holding a signed checkpoint,
    optionally followed by its checkpoint-time note (either version)."""
    for header in sorted(TIME_HEADERS):
        header = (header + "\n").encode()
        at = 0 if data.startswith(header) else data.find(b"\n" + header)
        if at >= 0:
            at = at + 1 if at > 0 else 0
            return data[:at], data[at:]
    return data, None


def kept_checkpoint(data, key):
    """(origin, size, root, time_us or None, note version or None) of a kept
    checkpoint file."""
    cp, time_note = split_kept(data)
    origin, size, root = checkpoint_of(cp, key)
    if time_note is None:
        return origin, size, root, None, None
    try:
        t = checkpoint_time(time_note, key)
    except Failure as e:
        raise Failure("time note: %s" % e)
    if t[:3] != (origin, size, root):
        raise Failure("time note: not the time note of the checkpoint before it")
    return origin, size, root, t[3], 1 + (t[4] is not None) + (t[5] is not None)


def signed_time(us):
    """UTC, ISO 8601 with microseconds and 'Z', then the microseconds."""
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=us)
    return "%s (%d us)" % (t.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), us)


RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)\Z")


def expected_scope(text):
    """A scope as written on a command line: run:TEAM/RUN, seq:A:B (B
    excluded) or team:TEAM,FROM,TO (RFC 3339, TO excluded), as the manifest
    writes it; UsageError otherwise."""
    kind, _, rest = text.partition(":")
    if kind == "run":
        team, slash, run = rest.partition("/")
        if not team or not slash or not run:
            raise UsageError("expected scope: want run:TEAM/RUN")
        return {"kind": "run", "team": team, "run_id": run}
    if kind == "seq":
        parts = rest.split(":")
        if len(parts) != 2 or not all(p.isdigit() for p in parts) or int(parts[0]) >= int(parts[1]):
            raise UsageError("expected scope: want seq:A:B with A < B")
        return {"kind": "seq", "from_seq": int(parts[0]), "to_seq": int(parts[1])}
    if kind == "team":
        parts = rest.split(",")
        if len(parts) != 3 or not parts[0] or not all(RFC3339.match(p) for p in parts[1:]):
            raise UsageError("expected scope: want team:TEAM,FROM,TO with RFC 3339 times, FROM before TO")
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        us = [(datetime.datetime.fromisoformat(p.replace("Z", "+00:00")) - epoch) // datetime.timedelta(microseconds=1)
              for p in parts[1:]]
        if us[0] >= us[1]:
            raise UsageError("expected scope: want team:TEAM,FROM,TO with RFC 3339 times, FROM before TO")
        return {"kind": "team", "team": parts[0], "from_us": us[0], "to_us": us[1]}
    raise UsageError("expected scope: want run:TEAM/RUN, seq:A:B or team:TEAM,FROM,TO")


def scope_text(scope):
    return json.dumps(scope, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def parse_manifest(data):
    """manifest.json read strictly by its grammar (export/manifest/manifest.h,
    CONTRACT.md section 7): Failure naming the field and its rule otherwise."""
    def bad(field, rule):
        return Failure("manifest.json: %s: %s" % (field, rule))

    def exact_keys(obj, prefix, keys):
        for k in sorted(keys):
            if k not in obj:
                raise bad(prefix + k, "missing")
        for k in sorted(obj):
            if k not in keys:
                raise bad(prefix + k, "not a field of the manifest")

    def uint(v, field):
        if type(v) is not int or not 0 <= v < 1 << 64:
            raise bad(field, "want an unsigned integer")
        return v

    def integer(v, field):
        if type(v) is not int or not -(1 << 63) <= v < 1 << 63:
            raise bad(field, "want an integer")
        return v

    def name(v, field):
        if not isinstance(v, str) or not v:
            raise bad(field, "want a non-empty string")
        return v

    try:
        m = json.loads(data)
    except ValueError:
        m = None
    if not isinstance(m, dict):
        raise bad("manifest", "not a JSON object")
    if type(m.get("format")) is not int or m["format"] not in (1, 2, 3, 4):
        raise bad("format", "want 1, 2, 3 or 4, found %s" % (json.dumps(m["format"]) if "format" in m else "none"))
    keys = {"counts", "files", "format", "origin", "root", "scope", "tree_size"}
    if m["format"] >= 2:
        keys.add("unknown_grace_ms")
    exact_keys(m, "", keys)
    name(m["origin"], "origin")
    s = m["scope"]
    if not isinstance(s, dict):
        raise bad("scope", "want an object")
    kind = s.get("kind")
    if kind == "run":
        exact_keys(s, "scope.", {"kind", "team", "run_id"})
        name(s["team"], "scope.team")
        name(s["run_id"], "scope.run_id")
    elif kind == "team":
        if "from_seq" not in s or "to_seq" not in s:
            raise bad("scope", "a team window names its seqs (from_seq, to_seq)")
        exact_keys(s, "scope.", {"kind", "team", "from_us", "to_us", "from_seq", "to_seq"})
        name(s["team"], "scope.team")
        if integer(s["from_us"], "scope.from_us") >= integer(s["to_us"], "scope.to_us"):
            raise bad("scope.to_us", "want from_us < to_us")
    elif kind == "seq":
        exact_keys(s, "scope.", {"kind", "from_seq", "to_seq"})
    else:
        raise bad("scope.kind", 'want "run", "team" or "seq"')
    if kind != "run":
        low, high = uint(s["from_seq"], "scope.from_seq"), uint(s["to_seq"], "scope.to_seq")
        if (low >= high) if kind == "seq" else (low > high):
            raise bad("scope.to_seq", "want from_seq < to_seq" if kind == "seq" else "want from_seq <= to_seq")
    uint(m["tree_size"], "tree_size")
    if not isinstance(m["root"], str) or not HEX64.match(m["root"]):
        raise bad("root", "want 64 lower-case hex digits")
    if not isinstance(m["counts"], dict):
        raise bad("counts", "want an object")
    exact_keys(m["counts"], "counts.", {"entries"})
    uint(m["counts"]["entries"], "counts.entries")
    if m["format"] >= 2:
        uint(m["unknown_grace_ms"], "unknown_grace_ms")
    if not isinstance(m["files"], dict):
        raise bad("files", "want an object")
    for f, sha in m["files"].items():
        if not f:
            raise bad("files", "a file name is empty")
        if not isinstance(sha, str) or not HEX64.match(sha):
            raise bad("files." + f, "want 64 lower-case hex digits")
    if (scope_text(m) + "\n").encode() != data:
        raise bad("manifest", "not in the one form the exporter writes (keys sorted, each once, no spaces, "
                              "one newline at the end)")
    return m


def verify(pack_path, vkey, trust_pack_key=False, since=None, expect_scope=None, not_older_than=None, policy=None):
    """Raises Failure naming the first item that does not hold. vkey is the
    ledger's key line; None with trust_pack_key to trust the pack's own, or
    with a policy to take the policy's log named as the manifest's origin.
    since: the auditor's earlier checkpoint (a signed note, bytes): the pack
    must prove consistency from exactly it. expect_scope: the scope asked
    for (expected_scope()). not_older_than: a size, or a signed checkpoint
    (bytes) the pack's checkpoint must be at least as large as, with its
    root at that very size. policy: a tlogpolicy.Policy the checkpoint
    must meet ("Witnessed packs", CONTRACT.md section 7)."""
    files = read_pack(pack_path)
    for name in FILES - OPTIONAL:
        if name not in files:
            raise Failure("%s: missing" % name)
    if trust_pack_key:
        vkey = files["ledger.vkey"].decode().strip()
    elif vkey is None:
        vkey = policy_log(policy, files)
    key = parse_vkey(vkey)
    if files["ledger.vkey"].decode().strip() != vkey.strip():
        raise Failure("ledger.vkey: not the key given")
    digest = hashlib.sha256(files["manifest.json"]).hexdigest()
    try:
        signed = open_note(files["manifest.sig"], key)
    except Failure as e:
        raise Failure("manifest.sig: %s" % e)
    if signed != digest + "\n":
        raise Failure("manifest.json: SHA-256 %s is not the one signed" % digest)
    manifest = parse_manifest(files["manifest.json"])
    for name in ("manifest.json", "manifest.sig"):
        if name in manifest["files"]:
            raise Failure("manifest.json: lists %s, whose digest it cannot hold" % name)
    for name, data in sorted(files.items()):
        if name in ("manifest.json", "manifest.sig"):
            continue
        if name not in manifest["files"]:
            raise Failure("%s: not listed in the manifest" % name)
        want = manifest["files"][name]
        got = hashlib.sha256(data).hexdigest()
        if want != got:
            raise Failure("%s: SHA-256 expected %s, found %s" % (name, want, got))
    for name in sorted(manifest["files"]):
        if name not in files:
            raise Failure("%s: listed in the manifest but missing" % name)
    try:
        cp = open_note(files["checkpoint"], key)
    except Failure as e:
        raise Failure("checkpoint: %s" % e)
    cosigned = None if policy is None else witnessed(policy, vkey, cp, files["checkpoint"])
    cp = cp.split("\n")
    origin, size, root = cp[0], int(cp[1]), base64.b64decode(cp[2], validate=True)
    if origin != manifest.get("origin") or origin != key[0]:
        raise Failure("checkpoint: origin '%s', manifest and key say '%s'" % (origin, manifest.get("origin")))
    if size != manifest["tree_size"] or root.hex() != manifest["root"]:
        raise Failure("checkpoint: size %d root %s, the manifest says size %s root %s"
                      % (size, root.hex(), manifest["tree_size"], manifest["root"]))
    scope = manifest["scope"]
    kept_times = {"--since": None, "--not-older-than": None}  # the times the auditor kept
    kept_versions = {}  # flag -> the version of the time note kept with it
    if expect_scope is not None:
        keys = {"run": ("team", "run_id"), "seq": ("from_seq", "to_seq"), "team": ("team", "from_us", "to_us")}
        if (not isinstance(scope, dict) or scope.get("kind") != expect_scope["kind"]
                or any(scope.get(k) != expect_scope[k] for k in keys[expect_scope["kind"]])):
            raise Failure("manifest.json: scope is %s, expected %s (--expect-scope)"
                          % (scope_text(scope), scope_text(expect_scope)))
    if not_older_than is not None:
        want_root = None
        if isinstance(not_older_than, bytes):
            try:
                _, not_older_than, want_root, kept_times["--not-older-than"], kept_versions["--not-older-than"] = \
                    kept_checkpoint(not_older_than, key)
            except (Failure, ValueError) as e:
                raise UsageError("--not-older-than: %s" % e)
        if size < not_older_than:
            raise Failure("checkpoint: tree size %d is older than the %d asked for (--not-older-than)"
                          % (size, not_older_than))
        if want_root is not None and size == not_older_than and root != want_root:
            raise Failure("checkpoint: root %s at tree size %d, the checkpoint given with --not-older-than has root %s"
                          % (root.hex(), size, want_root.hex()))
    if since is not None:
        try:
            since = kept_checkpoint(since, key)
        except (Failure, ValueError) as e:
            raise UsageError("--since: %s" % e)
        kept_times["--since"], kept_versions["--since"] = since[3], since[4]
        since = since[:3]
        if "consistency.json" not in files and since[1:] != (size, root):
            raise Failure("consistency.json: missing: --since asks for consistency with the checkpoint at size %d"
                          % since[1])
    consistent = None  # (size, root, given with --since) of the earlier checkpoint
    if since is not None and "consistency.json" not in files:
        consistent = (since[1], since[2], True)
    if "consistency.json" in files:
        c = json.loads(files["consistency.json"])
        try:
            old_origin, old_size, old_root = checkpoint_of(c["old_checkpoint"].encode(), key)
        except Failure as e:
            raise Failure("consistency.json: old_checkpoint: %s" % e)
        if old_origin != origin:
            raise Failure("consistency.json: old_checkpoint: not a checkpoint of this log")
        if since is not None and since != (old_origin, old_size, old_root):
            raise Failure("consistency.json: old_checkpoint is size %d root %s, --since is size %d root %s"
                          % (old_size, old_root.hex(), since[1], since[2].hex()))
        proof = [hash_hex(h) for h in c["proof"]]
        if None in proof:
            raise Failure("consistency.json: proof: not a list of hex hashes")
        if not verify_consistency(old_size, size, old_root, root, proof):
            raise Failure("consistency.json: the proof does not join the two checkpoints")
        consistent = (old_size, old_root, since is not None)
    signed_at = runs_root = teams_root = None
    if "checkpoint-time" not in files:
        if manifest["format"] >= 2:
            raise Failure("checkpoint-time: missing: a format 2 pack carries its checkpoint's time note")
    elif manifest["format"] < 2:
        raise Failure("checkpoint-time: a format 1 pack carries no time note")
    else:
        try:
            t = checkpoint_time(files["checkpoint-time"], key)
        except Failure as e:
            raise Failure("checkpoint-time: %s" % e)
        if t[:3] != (origin, size, root):
            raise Failure("checkpoint-time: names the checkpoint of %s at size %d root %s, the pack's is size %d root %s"
                          % (t[0], t[1], t[2].hex(), size, root.hex()))
        signed_at, runs_root, teams_root = t[3], t[4], t[5]
    for flag in ("--since", "--not-older-than"):
        kept = kept_times[flag]
        if kept is None:
            continue
        if signed_at is None:
            raise Failure("checkpoint-time: missing: the checkpoint given with %s has a signed time, so every later "
                          "checkpoint has one" % flag)
        if signed_at < kept:
            raise Failure("checkpoint-time: time %s is before %s, the time of the checkpoint given with %s "
                          "(times never go backwards)" % (signed_time(signed_at), signed_time(kept), flag))
        version = 1 + (runs_root is not None) + (teams_root is not None)
        if kept_versions[flag] > version:
            raise Failure("checkpoint-time: a version %d note, but the checkpoint given with %s has a version %d note: "
                          "a ledger that signs the %s-head map root signs it with every later checkpoint"
                          % (version, flag, kept_versions[flag], "team" if kept_versions[flag] == 3 else "run"))
    try:
        run_head = completeness.run_head_proof(files, manifest, runs_root, teams_root)
        window = teamwindow.presence(files, scope, teams_root)
    except completeness.Failure as e:
        raise Failure(str(e))
    entries = files["entries.jsonl"].split(b"\n")[:-1]
    proofs = files["proofs.jsonl"].split(b"\n")[:-1]
    if len(entries) != len(proofs) or len(entries) != manifest["counts"]["entries"]:
        raise Failure("entries.jsonl: %d entries, %d proofs, manifest says %d"
                      % (len(entries), len(proofs), manifest["counts"]["entries"]))
    last_seq, last_hash = None, None
    of_run = []  # (seq, leaf hash) of the entries of a run pack
    last_of_run = {}  # (team, run_id) -> the seq of its last entry so far
    of_team = []  # (entry, leaf hash) of the entries of a team window
    for leaf, proof_text in zip(entries, proofs):
        entry = json.loads(leaf)
        seq = entry["seq"]
        if teamwindow.leaf_entry(leaf) is None:
            raise Failure("entries.jsonl seq %d: not a leaf of version 1 or 2" % seq)
        canonical = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        if canonical != leaf:
            raise Failure("entries.jsonl seq %d: not canonical JSON" % seq)
        leaf_hash = hashlib.sha256(b"\x00" + leaf).digest()
        proof = proof_line(proof_text)
        if proof is None or proof[0] != seq:
            raise Failure("proofs.jsonl seq %d: not the proof line of this entry" % seq)
        if proof[1] != leaf_hash.hex():
            raise Failure("proofs.jsonl seq %d: leaf_hash expected %s, found %s" % (seq, leaf_hash.hex(), proof[1]))
        if not verify_inclusion(seq, size, leaf_hash, proof[2], root):
            raise Failure("proofs.jsonl seq %d: inclusion proof does not lead to the checkpoint's root" % seq)
        if last_seq is not None and seq <= last_seq:
            raise Failure("entries.jsonl seq %d: not after seq %d" % (seq, last_seq))
        if last_seq is not None and seq == last_seq + 1 and entry["prev"] != last_hash.hex():
            raise Failure("entries.jsonl seq %d: prev expected %s, found %s" % (seq, last_hash.hex(), entry["prev"]))
        if scope["kind"] == "run":
            r = entry["receipt"]
            if r["team"] != scope["team"] or r["run_id"] != scope["run_id"]:
                raise Failure("entries.jsonl seq %d: not an entry of the pack's run" % seq)
            if entry.get("run_prev") != last_seq:
                raise Failure("entries.jsonl seq %d: run_prev expected %s, found %s"
                              % (seq, last_seq, entry.get("run_prev")))
            of_run.append((seq, leaf_hash))
        elif scope["kind"] == "team":
            if (entry["receipt"]["team"] != scope["team"]
                    or not scope["from_us"] <= entry["logged_at_us"] < scope["to_us"]):
                raise Failure("entries.jsonl seq %d: not an entry of the pack's team and time window" % seq)
            if not scope["from_seq"] <= seq < scope["to_seq"]:
                raise Failure("entries.jsonl seq %d: not in the window's seqs [%d, %d)"
                              % (seq, scope["from_seq"], scope["to_seq"]))
            run_chain(entry, last_of_run, scope["from_seq"], "the window's first seq")
            of_team.append((entry, leaf_hash))
        elif seq != (scope["from_seq"] if last_seq is None else last_seq + 1):
            raise Failure("entries.jsonl seq %d: seq expected %d (the range has a gap)"
                          % (seq, scope["from_seq"] if last_seq is None else last_seq + 1))
        else:
            run_chain(entry, last_of_run, scope["from_seq"], "the range's first seq")
        last_seq, last_hash = seq, leaf_hash
    if scope["kind"] == "seq" and (last_seq is None or last_seq + 1 != scope["to_seq"]):
        raise Failure("entries.jsonl: the seq range ends early")
    complete, unsettled = None, []
    if run_head is not None:
        try:
            complete = completeness.check_entries(run_head, scope["team"], scope["run_id"], size, of_run)
        except completeness.Failure as e:
            raise Failure(str(e))
        unsettled = completeness.unsettled_steps(json.loads(files["outcomes.json"]), size)
    if window is not None:
        try:
            complete = teamwindow.check(window, scope, size, root, teams_root, of_team, verify_inclusion)
        except completeness.Failure as e:
            raise Failure(str(e))
    if signed_at is not None and scope["kind"] == "run":  # only a run pack holds its steps' every entry
        check_deadlines(json.loads(files["outcomes.json"]), manifest["unknown_grace_ms"], signed_at)
    return {"entries": len(entries), "origin": origin, "tree_size": size, "root": root, "scope": scope,
            "consistent": consistent, "signed_at": signed_at, "complete": complete, "unsettled": unsettled,
            "witnessed": None if policy is None else tlogpolicy.witnessed_line(policy, cosigned)}


def policy_log(policy, files):
    """The key line of the policy's log named as the manifest's origin (the
    one the pack's ledger.vkey names when several are); UsageError when the
    policy has none."""
    origin = parse_manifest(files["manifest.json"])["origin"]
    logs = policy.log_named(origin)
    if not logs:
        raise UsageError("--policy: no log of the policy is named %s" % origin)
    lines = ["%s+%s+%s" % (k.name, k.key_id.hex(), base64.b64encode(b"\x01" + k.public).decode()) for k in logs]
    in_pack = files["ledger.vkey"].decode("utf-8", "replace").strip()
    return in_pack if in_pack in lines else lines[0]


def witnessed(policy, vkey, text, note):
    """Steps 2 to 4 of "Witnessed packs" (CONTRACT.md section 7), on the
    checkpoint whose text the key opened: [(witness, time)] with a valid
    line, in policy order."""
    key = tlogpolicy.parse_vkey(vkey.strip(), tlogpolicy.TYPE_ED25519)
    if not policy.is_log(key):
        raise Failure("checkpoint: the ledger's key %s is not a log of the policy" % key.vkey_id())
    try:
        return tlogpolicy.check_checkpoint(policy, text.encode(), note)
    except tlogpolicy.Refused as e:
        raise Failure(str(e))


def check_deadlines(outcomes, grace_ms, signed_at):
    """A step pending although its deadline (the start's logged_at_us +
    timeout + the manifest's grace) is before the signed time is a finding:
    an honest ledger declares it unknown before signing. outcomes.json is
    the one the manifest signs (ledgerctl verify recomputes it)."""
    for step in outcomes["steps"]:
        if step["state"] != "pending" or "start" not in step:
            continue
        deadline = step["start"]["timeout_at_us"] + grace_ms * 1000
        if deadline < signed_at:
            raise Failure("outcomes.json: step %s/%s/%s attempt %d is pending, but its deadline (start + timeout + "
                          "the manifest's unknown_grace_ms %d) %s is before the checkpoint's signed time %s: an honest "
                          "ledger declares it unknown before signing"
                          % (step["team"], step["run_id"], step["step_id"], step["attempt"], grace_ms,
                             signed_time(deadline), signed_time(signed_at)))


def usage_error(message):
    print("verify_pack.py: %s" % message, file=sys.stderr)
    sys.exit(2)


def key_argument(args):
    """The key line the arguments give, or None with --trust-pack-key; a key
    given but empty or malformed is a usage error naming the flag."""
    given = [f for f, v in (("--vkey", args.vkey), ("--vkey-string", args.vkey_string), ("VKEY", args.key))
             if v is not None]
    if len(given) > 1:
        usage_error("verify: give one of %s" % ", ".join(given))
    if args.trust_pack_key:
        if given:
            usage_error("verify: --trust-pack-key with a key given: give one or the other")
        return None
    if not given:
        if args.policy is not None:
            return None  # the policy's log named as the manifest's origin
        usage_error("verify: give the ledger's key (--vkey FILE or --vkey-string S), a --policy FILE naming it in a "
                    "log line, or --trust-pack-key to trust the key inside the pack")
    if args.vkey is not None:
        try:
            with open(args.vkey, "rb") as f:
                line = f.read().split(b"\n")[0].decode("utf-8", "replace").rstrip("\r ")
        except OSError:
            usage_error("--vkey: cannot read %s" % args.vkey)
        if not line:
            usage_error("--vkey: %s holds no verifier key line" % args.vkey)
        flag = "--vkey: %s" % args.vkey
    elif args.vkey_string is not None:
        line, flag = args.vkey_string, "--vkey-string"
        if not line:
            usage_error("--vkey-string: empty")
    else:
        line, flag = args.key, "VKEY"
    try:
        parse_vkey(line)
    except Failure as e:
        if flag == "VKEY":
            usage_error("VKEY: not a verifier key line (NAME+ID+KEY); give a file with --vkey FILE")
        usage_error("%s: not a verifier key (%s)" % (flag, e))
    return line


def main():
    parser = argparse.ArgumentParser(
        prog="verify_pack.py", usage=argparse.SUPPRESS, description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pack")
    parser.add_argument("key", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("--vkey")
    parser.add_argument("--vkey-string")
    parser.add_argument("--trust-pack-key", action="store_true")
    parser.add_argument("--since")
    parser.add_argument("--expect-scope")
    parser.add_argument("--not-older-than")
    parser.add_argument("--policy")
    args = parser.parse_args()
    vkey = key_argument(args)
    policy = None
    if args.policy is not None:
        try:
            with open(args.policy, "rb") as f:
                policy = tlogpolicy.parse(f.read())
        except OSError:
            usage_error("--policy: cannot read %s" % args.policy)
        except tlogpolicy.PolicyError as e:
            usage_error("--policy: %s" % e)
    since = None
    if args.since is not None:
        try:
            with open(args.since, "rb") as f:
                since = f.read()
        except OSError:
            usage_error("--since: cannot read %s" % args.since)
        if not since:
            usage_error("--since: %s is empty" % args.since)
    expect = None
    if args.expect_scope is not None:
        try:
            expect = expected_scope(args.expect_scope)
        except UsageError as e:
            usage_error("--expect-scope: %s" % e)
    not_older = None
    if args.not_older_than is not None:
        if args.not_older_than.isdigit():
            not_older = int(args.not_older_than)
        elif vkey is None and policy is None:
            usage_error("verify: --not-older-than CHECKPOINT needs the ledger's key (--vkey or --vkey-string)")
        else:
            try:
                with open(args.not_older_than, "rb") as f:
                    not_older = f.read()
            except OSError:
                usage_error("--not-older-than: neither a size nor a readable file: %s" % args.not_older_than)
    if args.trust_pack_key:
        print("WARNING: --trust-pack-key: the key inside the pack was trusted; this result proves nothing "
              "about the ledger's identity. Compare the pack's ledger.vkey with the ledger operator's "
              "published key.")
    try:
        r = verify(args.pack, vkey, trust_pack_key=args.trust_pack_key, since=since, expect_scope=expect,
                   not_older_than=not_older, policy=policy)
    except UsageError as e:
        usage_error(e)
    except (Failure, ValueError, KeyError, TypeError, OSError, tarfile.TarError) as e:
        print("FAILED: %s" % e)
        return 1
    when = (", signed at " + signed_time(r["signed_at"]) if r["signed_at"] is not None
            else ", signing time: not stated (checkpoint signed before the ledger signed times)")
    print("OK: %d entries of %s verified against the checkpoint of %s at tree size %d, root %s%s."
          % (r["entries"], scope_text(r["scope"]), r["origin"], r["tree_size"], r["root"].hex(), when))
    if r["witnessed"] is not None:
        print(r["witnessed"])
    if r["consistent"] is not None:
        size, root, given = r["consistent"]
        print("The checkpoint is consistent with the earlier one at size %d, root %s%s."
              % (size, root.hex(), " (the one given with --since)" if given else ""))
    if r["complete"] is not None:
        print("%s." % r["complete"])
        for line in r["unsettled"]:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
