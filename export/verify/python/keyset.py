"""Key sets and key rotation (CONTRACT.md section 5d), with the standard
library and `cryptography` only, written from the contract's text:

- parse() reads a key set file (`--key-set FILE`): one verifier key a line,
  `<verifier key>[ from <size>][ until <size>]`, `#` comment lines and empty
  lines ignored; single() is the set of one key trusted at every size
  (`--vkey K`);
- KeySet.key_at() is the key trusted at a tree size; KeySet.open() opens a
  signed note with the key trusted at the size it is about, and refuses it,
  naming the size and that key, when that key's signature is not there or
  does not verify (a line by another key of the set counts for nothing);
- KeySet.follow() reads a key history (`--key-history FILE`,
  `ledgerctl key-history`) and follows its rotations: each `key_rotation`
  leaf canonical and of the fields the contract fixes, its statement
  rebuilt and compared, signed by the old key then the new one, its old key
  the one trusted at its seq, its inclusion proven to the history's
  checkpoint, which the key then trusted at its size signs.
- pack_rotations() checks the key_rotation entries of a pack: each the
  ledger's, its statement (rotation_statement(), shared with follow())
  valid for the pack's origin and the entry's seq; the lines that say so.

Every refusal is a packerror.Failure whose message names the line (a key
set) or the rotation (a key history) and the rule.
"""
import hashlib
import json
import re

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

import packnote
from packerror import Failure
from packproof import hash_hex, verify_inclusion
from packread import canonical_base64, decimal, load_json, shown

STATEMENT_HEADER = "evidence-ledger/key-rotation/v1"
KEY_ID = re.compile(r"[0-9a-f]{8}\Z")
HEX64 = re.compile(r"[0-9a-f]{64}\Z")
MAX_SAFE = (1 << 53) - 1
# The fields of a leaf (section 2) and of a key_rotation receipt (section 5d).
LEAF_FIELDS = {"v", "seq", "prev", "run_prev", "team_prev", "logged_at_us", "emitter", "receipt"}
LEAF_REQUIRED = {"v", "seq", "prev", "logged_at_us", "emitter", "receipt"}
ROTATION_FIELDS = ("attempt", "kind", "new_key", "note", "occurred_at_us", "old_key", "receipt_id", "run_id", "team")
HISTORY_FIELDS = ("checkpoint", "rotations")
ROTATION_ENTRY_FIELDS = ("inclusion", "leaf", "seq")


class Key:
    """A verifier key (section 5): its line as written, name, 4-byte key ID
    and 32-byte Ed25519 public key."""

    def __init__(self, line, name, key_id, public):
        self.line, self.name, self.key_id, self.public = line, name, key_id, public
        self.verifier = Ed25519PublicKey.from_public_bytes(public)

    def ident(self):
        """NAME+ID, as signature lines and verifier keys name the key."""
        return "%s+%s" % (self.name, self.key_id.hex())

    def as_tuple(self):
        """The key as packnote.parse_vkey() returns it."""
        return self.name, self.key_id, self.verifier

    def __eq__(self, other):
        return isinstance(other, Key) and (self.name, self.key_id, self.public) == (
            other.name, other.key_id, other.public)

    def __hash__(self):
        return hash((self.name, self.key_id, self.public))


def parse_key(text):
    """A verifier key `<name>+<key ID, 8 hex>+<base64(0x01 || public key)>`
    written one way only: the name not empty, without '+' or white space;
    the key ID 8 lower-case hex digits, the ID of the name and key; the key
    canonical standard base64 of 0x01 and 32 bytes. Failure naming the rule
    otherwise."""
    parts = text.split("+", 2)
    if len(parts) != 3:
        raise Failure("want NAME+ID+KEY, found '%s'" % shown(text))
    name, key_id, b64 = parts
    if not name or any(c.isspace() or ord(c) < 0x20 or c == "\x7f" for c in name):
        raise Failure("name: want a name without white space or control characters, found '%s'" % shown(name))
    if not KEY_ID.match(key_id):
        raise Failure("key ID: want 8 lower-case hex digits, found '%s'" % shown(key_id))
    raw = canonical_base64(b64)
    if raw is None or len(raw) != 33 or raw[0] != 1:
        raise Failure("key: want canonical standard base64 of 0x01 and a 32-byte Ed25519 public key")
    want = hashlib.sha256(name.encode("utf-8", "surrogatepass") + b"\n" + raw).digest()[:4]
    if want.hex() != key_id:
        raise Failure("key ID %s is not the ID of the key (%s)" % (key_id, want.hex()))
    return Key(text, name, want, raw[1:])


def sizes_text(lo, hi):
    """A range of tree sizes in words: 'sizes 0 to 3', 'size 4', 'sizes from 4', 'every size'."""
    if hi is None and lo == 0:
        return "every size"
    if hi is None:
        return "sizes from %d" % lo
    if lo == hi:
        return "size %d" % lo
    return "sizes %d to %d" % (lo, hi)


class KeySet:
    """The keys a verifier trusts, each for a range of tree sizes: ranges,
    [(from, until or None for unbounded, Key)] by ascending from, none
    overlapping, every key of one name, the log's origin. followed: the
    seqs of the rotations of a key history followed."""

    def __init__(self, ranges, followed=()):
        self.ranges = sorted(ranges, key=lambda r: r[0])
        self.origin = self.ranges[0][2].name
        self.followed = list(followed)

    def key_at(self, size):
        """The key trusted at tree size `size`, or None."""
        for lo, hi, key in self.ranges:
            if lo <= size and (hi is None or size <= hi):
                return key
        return None

    def described(self):
        """The ranges in words: 'NAME+ID for sizes 0 to 3, NAME+ID for sizes from 4'."""
        return ", ".join("%s for %s" % (shown(key.ident()), sizes_text(lo, hi)) for lo, hi, key in self.ranges)

    def as_list(self):
        """The ranges as the vectors write them: [{"key", "from", "until"}]."""
        return [{"key": key.line, "from": lo, "until": hi} for lo, hi, key in self.ranges]

    def open(self, note, size):
        """The text (str) of a signed note (bytes) about tree size `size`,
        opened with the key trusted at that size: exactly one line by that
        key, verifying. A line by another key of the set counts for nothing
        (the old key's line of a transition); the refusal names the size and
        the key trusted for it."""
        text, sigs = packnote.signature_lines(note)
        key = self.key_at(size)
        if key is None:
            raise Failure("no key of the key set is trusted at size %d (the set trusts %s)" % (size, self.described()))
        own = [sig for name, kid, sig in sigs if name == key.name and kid == key.key_id]
        if len(own) > 1:
            raise Failure("signed twice by the ledger's key (%s, the key trusted at size %d)"
                          % (shown(key.ident()), size))
        if not own:
            message = "no signature by %s, the key trusted at size %d" % (shown(key.ident()), size)
            others = {}
            for lo, hi, other in self.ranges:
                if other != key and any((name, kid) == (other.name, other.key_id) for name, kid, _ in sigs):
                    others.setdefault(shown(other.ident()), []).append(sizes_text(lo, hi))
            others = ["%s (trusted for %s)" % (k, ", ".join(v)) for k, v in others.items()]
            signers = ["%s+%s" % (shown(name), kid.hex()) for name, kid, _ in sigs]
            if others:
                message += "; the line by %s counts for nothing at size %d" % (", ".join(others), size)
            else:
                message += " (signed by %s)" % (", ".join(signers) or "no key")
            raise Failure(message)
        try:
            key.verifier.verify(own[0], text)
        except InvalidSignature:
            raise Failure("the signature by %s, the key trusted at size %d, does not verify"
                          % (shown(key.ident()), size))
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError:
            raise Failure("the note's text is not UTF-8")

    def checkpoint(self, note):
        """(origin, size, root) of a signed checkpoint (bytes) opened with the
        key trusted at its own size; its origin the keys' name."""
        origin, size, root = unsigned_checkpoint(note)
        packnote.checkpoint_body(self.open(note, size))
        if origin != self.origin:
            raise Failure("origin '%s', the keys' name is '%s'" % (shown(origin), shown(self.origin)))
        return origin, size, root

    def kept_checkpoint(self, data):
        """packnote.kept_checkpoint() of a file holding a checkpoint and
        perhaps its time note, both opened with the key trusted at the
        checkpoint's size."""
        cp, time_note = packnote.split_kept(data)
        _, size, _ = self.checkpoint(cp)
        if time_note is not None:
            try:
                self.open(time_note, size)
            except Failure as e:
                raise Failure("time note: %s" % e)
        return packnote.kept_checkpoint(data, self.key_at(size).as_tuple())

    def follow(self, data):
        """The key set after the rotations of a key history (bytes, the JSON
        object of section 5d) are followed; Failure ("key history: ...")
        naming the rotation and the rule when one is refused, or when the
        history's checkpoint is not signed by the key then trusted at its
        size. This set is left as it was."""
        try:
            h = load_json(data.decode("utf-8"), "key history")
        except UnicodeDecodeError:
            raise Failure("key history: not UTF-8")
        exact_fields(h, HISTORY_FIELDS, "key history")
        if not isinstance(h["checkpoint"], str):
            raise Failure("key history: checkpoint: want a JSON string")
        if not isinstance(h["rotations"], list):
            raise Failure("key history: rotations: want a JSON array")
        note = utf8(h["checkpoint"], "key history: checkpoint")
        try:
            origin, size, root = unsigned_checkpoint(note)
        except Failure as e:
            raise Failure("key history: checkpoint: %s" % e)
        if origin != self.origin:
            raise Failure("key history: checkpoint: origin '%s', the keys' name is '%s'"
                          % (shown(origin), shown(self.origin)))
        ranges, last = list(self.ranges), None
        for n, r in enumerate(h["rotations"], 1):
            where = "key history: rotations[%d]" % (n - 1)
            exact_fields(r, ROTATION_ENTRY_FIELDS, where)
            seq = r["seq"]
            if type(seq) is not int or not 0 <= seq < 1 << 63:
                raise Failure("%s: seq: want a JSON integer from 0 to 2^63-1" % where)
            if last is not None and seq <= last:
                raise Failure("%s: seq %d is not above the seq %d of the rotation before (the rotations are listed "
                              "by ascending seq)" % (where, seq, last))
            where = "key history: the rotation at seq %d" % seq
            if not isinstance(r["leaf"], str):
                raise Failure("%s: leaf: want a JSON string" % where)
            path = [hash_hex(x) for x in r["inclusion"]] if isinstance(r["inclusion"], list) else [None]
            if None in path:
                raise Failure("%s: inclusion: want a JSON array of hashes, 64 lower-case hex digits each" % where)
            leaf = utf8(r["leaf"], "%s: leaf" % where)
            old, new = rotation(leaf, n, seq, origin, KeySet(ranges), where)
            if seq >= size:
                raise Failure("%s: the history's checkpoint is of size %d, not above the rotation's seq"
                              % (where, size))
            if not verify_inclusion(seq, size, hashlib.sha256(b"\x00" + leaf).digest(), path, root):
                raise Failure("%s: inclusion: the proof does not lead to the root of the history's checkpoint "
                              "(size %d)" % (where, size))
            ranges = rotated(ranges, seq, old, new)
            last = seq
        after = KeySet(ranges, self.followed + [r["seq"] for r in h["rotations"]])
        try:
            after.open(note, size)
        except Failure as e:
            raise Failure("key history: checkpoint: %s" % e)
        return after


def single(line):
    """The key set of one key (a verifier key line) trusted at every size,
    as `--vkey K` trusts it."""
    try:
        return KeySet([(0, None, parse_key(line))])
    except Failure as e:
        raise Failure("verifier key: %s" % e)


def parse(data):
    """The KeySet of a key set file (bytes): each line
    `<verifier key>[ from <size>][ until <size>]` and a newline, or a
    comment line starting with '#', or an empty line. Refused, naming the
    line and the rule: a malformed line, from above until, a key whose name
    is not the first key's, a key listed twice, two ranges that overlap, a
    set with no key."""
    if data and not data.endswith(b"\n"):
        raise Failure("key set: no newline at the end of the last line (line %d)" % (data.count(b"\n") + 1))
    ranges = []  # (from, until, key, line number)
    for n, raw in enumerate(data.split(b"\n")[:-1], 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Failure("key set: not UTF-8 (line %d)" % n)
        if line == "" or line.startswith("#"):
            continue
        lo, hi, key = key_line(line, n)
        for other_lo, other_hi, other, m in ranges:
            if key.name != other.name:
                raise Failure("key set: the key's name '%s' is not '%s', the name of the key of line %d: every key "
                              "of a set has the log's origin as its name (line %d)"
                              % (shown(key.name), shown(other.name), m, n))
            if key == other:
                raise Failure("key set: a key is listed twice (lines %d and %d)" % (m, n))
        for other_lo, other_hi, other, m in ranges:
            at = max(lo, other_lo)
            if (hi is None or at <= hi) and (other_hi is None or at <= other_hi):
                raise Failure("key set: the ranges of two keys overlap at size %d (lines %d and %d)" % (at, m, n))
        ranges.append((lo, hi, key, n))
    if not ranges:
        raise Failure("key set: no key (a key set lists at least one verifier key)")
    return KeySet([(lo, hi, key) for lo, hi, key, _ in ranges])


def key_line(line, n):
    """(from, until or None, Key) of line n of a key set."""
    words = line.split(" ")
    try:
        key = parse_key(words[0])
    except Failure as e:
        raise Failure("key set: verifier key: %s (line %d)" % (e, n))
    options = words[1:]
    lo, hi = 0, None
    if options[:1] == ["from"] and len(options) >= 2:
        lo = line_size(options[1], "from", n)
        options = options[2:]
    if options[:1] == ["until"] and len(options) >= 2:
        hi = line_size(options[1], "until", n)
        options = options[2:]
    if options:
        raise Failure("key set: want '<verifier key>[ from <size>][ until <size>]', each word after one space, "
                      "found '%s' after the key (line %d)" % (shown(" ".join(words[1:])), n))
    if hi is not None and lo > hi:
        raise Failure("key set: from %d is above until %d (line %d)" % (lo, hi, n))
    return lo, hi, key


def line_size(text, word, n):
    try:
        return decimal(text, word)
    except Failure as e:
        raise Failure("key set: %s (line %d)" % (e, n))


def exact_fields(obj, fields, where):
    """obj a JSON object of exactly these fields."""
    if not isinstance(obj, dict):
        raise Failure("%s: want a JSON object" % where)
    for k in fields:
        if k not in obj:
            raise Failure("%s: %s: missing" % (where, k))
    for k in sorted(obj):
        if k not in fields:
            raise Failure("%s: %s: not a field" % (where, shown(k)))


def utf8(text, where):
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise Failure("%s: not UTF-8 (a lone surrogate)" % where)


def unsigned_checkpoint(note):
    """(origin, size, root) of a checkpoint note read, its signature lines
    strictly, but not verified: the size decides which key must have signed."""
    text, _ = packnote.signature_lines(note)
    try:
        body = text.decode("utf-8")
    except UnicodeDecodeError:
        raise Failure("the note's text is not UTF-8")
    return packnote.checkpoint_body(body)


def statement(origin, seq, old_key, new_key):
    """The text of a rotation statement (section 5d)."""
    return "%s\n%s\nseq %d\nold %s\nnew %s\n" % (STATEMENT_HEADER, origin, seq, old_key, new_key)


def canonical_values(value, where):
    """Section 2's values: integers in [-(2^53-1), 2^53-1], no float, no
    null; empty strings, empty objects and false omitted."""
    if value is None or value is False or isinstance(value, float):
        raise Failure("%s: %s: a canonical leaf holds no null, false or float" % (where, json.dumps(value)))
    if type(value) is int and not -MAX_SAFE <= value <= MAX_SAFE:
        raise Failure("%s: %d: a canonical leaf's integers are within 2^53-1" % (where, value))
    if value == "" or value == {}:
        raise Failure("%s: an empty string or object: a canonical leaf omits it" % where)
    if isinstance(value, dict):
        for k, v in value.items():
            canonical_values(v, "%s.%s" % (where, shown(k)))
    if isinstance(value, list):
        for i, v in enumerate(value):
            canonical_values(v, "%s[%d]" % (where, i))


def rotation_entry(leaf, n, seq, where):
    """The entry of a key_rotation leaf (bytes): canonical (section 2), of
    version 1 or 2, kind key_rotation, emitter ledger, team ledger, run
    ledger.keys, receipt_id ledger.key.<n>, no step_id, attempt 1, its seq
    the history's, and no field but those the contract gives it."""
    entry = load_json(leaf, "%s: leaf" % where)
    if not isinstance(entry, dict):
        raise Failure("%s: leaf: want a JSON object" % where)
    if json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() != leaf:
        raise Failure("%s: leaf: not canonical JSON (section 2)" % where)
    canonical_values(entry, "%s: leaf" % where)
    for k in sorted(LEAF_REQUIRED):
        if k not in entry:
            raise Failure("%s: leaf: %s: missing" % (where, k))
    for k in sorted(entry):
        if k not in LEAF_FIELDS:
            raise Failure("%s: leaf: %s: not a field of a leaf" % (where, shown(k)))
    if type(entry["v"]) is not int or entry["v"] not in (1, 2):
        raise Failure("%s: leaf: v: want 1 or 2" % where)
    if "team_prev" in entry and entry["v"] != 2:
        raise Failure("%s: leaf: team_prev: a leaf of version 1 has none" % where)
    if type(entry["seq"]) is not int or entry["seq"] != seq:
        raise Failure("%s: leaf: seq: %s, the history says %d" % (where, shown(json.dumps(entry["seq"])), seq))
    if not isinstance(entry["prev"], str) or not HEX64.match(entry["prev"]):
        raise Failure("%s: leaf: prev: want 64 lower-case hex digits" % where)
    for k in ("logged_at_us", "run_prev", "team_prev"):
        if k in entry and (type(entry[k]) is not int or entry[k] < 0):
            raise Failure("%s: leaf: %s: want a non-negative integer" % (where, k))
    for k in ("run_prev", "team_prev"):
        if k in entry and entry[k] >= seq:
            raise Failure("%s: leaf: %s: %d is not below the entry's seq" % (where, k, entry[k]))
    r = entry["receipt"]
    if not isinstance(r, dict):
        raise Failure("%s: leaf: receipt: want a JSON object" % where)
    if r.get("kind") != "key_rotation":
        raise Failure("%s: kind: '%s', want key_rotation" % (where, shown(str(r.get("kind")))))
    if entry["emitter"] != "ledger":
        raise Failure("%s: emitter: '%s', want ledger: a key_rotation entry is written by the ledger only"
                      % (where, shown(str(entry["emitter"]))))
    fixed = (("team", "ledger"), ("run_id", "ledger.keys"), ("receipt_id", "ledger.key.%d" % n))
    for k, want in fixed:
        if r.get(k) != want:
            raise Failure("%s: %s: '%s', want %s%s" % (
                where, k, shown(str(r.get(k))), want,
                " (the rotation's place in the history, counted from 1)" if k == "receipt_id" else ""))
    if "step_id" in r:
        raise Failure("%s: step_id: a key_rotation entry has none" % where)
    if type(r.get("attempt")) is not int or r["attempt"] != 1:
        raise Failure("%s: attempt: want 1" % where)
    if type(r.get("occurred_at_us")) is not int or r["occurred_at_us"] < 0:
        raise Failure("%s: occurred_at_us: want the ledger's clock, a non-negative integer" % where)
    for k in ("old_key", "new_key", "note"):
        if not isinstance(r.get(k), str):
            raise Failure("%s: %s: want a JSON string" % (where, k))
    for k in sorted(r):
        if k not in ROTATION_FIELDS:
            raise Failure("%s: %s: not a field of a key_rotation receipt" % (where, shown(k)))
    return entry


def rotation(leaf, n, seq, origin, keys, where):
    """(old Key, new Key) of the n-th rotation of a history, at seq, its
    leaf (bytes) checked as section 5d says, the old key trusted at size seq
    by `keys` (a KeySet)."""
    r = rotation_entry(leaf, n, seq, where)["receipt"]
    old, new = rotation_statement(origin, seq, r["old_key"], r["new_key"], r["note"], where)
    # 3. old_key is the key trusted at size seq.
    trusted = keys.key_at(seq)
    if trusted != old:
        raise Failure("%s: its old key is not trusted at size %d (old_key %s; %s)"
                      % (where, seq, shown(old.ident()),
                         "no key is trusted at size %d" % seq if trusted is None
                         else "the key trusted at size %d is %s" % (seq, shown(trusted.ident()))))
    return old, new


def rotation_statement(origin, seq, old_key, new_key, note, where):
    """(old Key, new Key) of a rotation at seq from old_key to new_key
    (verifier key lines, str), its statement `note` (str) checked as
    section 5d says: both keys named origin, rules 1 (the text) and 2 (the
    signature lines, the old key's then the new key's), and new_key
    another key than old_key. Failure("<where>: ...") naming the field."""
    parsed = {}
    for k, line in (("old_key", old_key), ("new_key", new_key)):
        try:
            parsed[k] = parse_key(line)
        except Failure as e:
            raise Failure("%s: %s: not a verifier key: %s" % (where, k, e))
        if parsed[k].name != origin:
            raise Failure("%s: %s: its name '%s' is not the log's origin '%s'"
                          % (where, k, shown(parsed[k].name), shown(origin)))
    old, new = parsed["old_key"], parsed["new_key"]
    note = utf8(note, "%s: note" % where)
    # 1. The note's text is the statement built from the origin, the seq and the keys.
    text, sigs = note_lines(note, where)
    want = statement(origin, seq, old_key, new_key)
    if text != want.encode("utf-8"):
        got_lines = text.decode("utf-8", "replace").split("\n")[:-1]
        want_lines = want.split("\n")[:-1]
        i = 0
        while i < len(want_lines) and i < len(got_lines) and got_lines[i] == want_lines[i]:
            i += 1
        g = "'%s'" % shown(got_lines[i]) if i < len(got_lines) else "missing"
        w = "'%s'" % shown(want_lines[i]) if i < len(want_lines) else "no such line"
        raise Failure("%s: note: line %d of its text is %s, the statement of seq %d from old_key to new_key has %s"
                      % (where, i + 1, g, seq, w))
    # 2. Exactly two signature lines, old_key's then new_key's, both verifying.
    if len(sigs) != 2:
        raise Failure("%s: note: want exactly two signature lines, old_key's then new_key's, found %d"
                      % (where, len(sigs)))
    for i, (key, field) in enumerate(((old, "old_key"), (new, "new_key"))):
        name, kid, sig = sigs[i]
        by = "%s+%s" % (shown(name), kid.hex())
        if (name, kid) != (key.name, key.key_id):
            if field == "old_key":
                raise Failure("%s: note: signature line 1 is by %s, not by old_key %s (the old key's line comes "
                              "first)" % (where, by, shown(old.ident())))
            raise Failure("%s: new_key: %s did not sign the statement: its signature line 2 is by %s"
                          % (where, shown(new.ident()), by))
        try:
            key.verifier.verify(sig, text)
        except InvalidSignature:
            raise Failure("%s: note: signature line %d, by %s %s, does not verify" % (where, i + 1, field, by))
    if new.key_id == old.key_id or new.public == old.public:
        raise Failure("%s: new_key: the same key as old_key (a rotation moves to another key ID and public key)"
                      % where)
    return old, new


def pack_rotations(parsed, origin):
    """The key_rotation entries among a pack's parsed entries (section 5d,
    "What a pack's entries say of a rotation"): each the ledger's, its
    statement valid for this log (rotation_statement(), at the entry's
    seq); the lines that say so. Failure("entries.jsonl seq S:
    key_rotation: ...") for the first that is not."""
    lines = []
    for entry in parsed:
        r = entry["receipt"]
        if r.get("kind") != "key_rotation":
            continue
        seq = entry["seq"]
        where = "entries.jsonl seq %d: key_rotation" % seq
        if entry["emitter"] != "ledger":
            raise Failure("%s: emitter '%s': the ledger's only" % (where, entry["emitter"]))
        for k in ("old_key", "new_key", "note"):
            if not isinstance(r.get(k), str):
                raise Failure("%s: %s: want a JSON string" % (where, k))
        rotation_statement(origin, seq, r["old_key"], r["new_key"], r["note"], where)
        lines.append("key rotation at seq %d: the log's key moved from %s to %s (a statement both keys signed)."
                     % (seq, r["old_key"], r["new_key"]))
    return lines


def note_lines(note, where):
    """(text, signature lines) of the statement note, read strictly."""
    try:
        return packnote.signature_lines(note)
    except Failure as e:
        raise Failure("%s: note: %s" % (where, e))


def rotated(ranges, seq, old, new):
    """The ranges after an accepted rotation at seq from old to new: the old
    key's range ends at seq (never extended), the new key trusted from seq+1
    up to the old key's until (unbounded when it had none); an empty range
    is dropped, and ranges of one key that meet are joined."""
    out = []
    for lo, hi, key in ranges:
        if key == old and lo <= seq and (hi is None or seq <= hi):
            out.append((lo, seq, old))
            if hi is None or seq + 1 <= hi:
                out.append((seq + 1, hi, new))
        else:
            out.append((lo, hi, key))
    out.sort(key=lambda r: r[0])
    joined = []
    for lo, hi, key in out:
        if joined and joined[-1][2] == key and joined[-1][1] is not None and joined[-1][1] + 1 == lo:
            joined[-1] = (joined[-1][0], hi, key)
        else:
            joined.append((lo, hi, key))
    return joined
