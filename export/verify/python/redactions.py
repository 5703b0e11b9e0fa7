"""Erased entries in a pack of format 8 (CONTRACT.md section 8, "In a pack
(format 8)"), with the standard library only, written from the contract's
text: redactions.jsonl (the leaves of the ledger's `redaction` entries, each
a valid receipt of its kind), the redacted line that stands for an erased
entry in entries.jsonl (exactly the bytes its redaction's fields give), and
the line printed for each erased entry after the OK line.

A redacted line checked counts as the entry its redaction states: a
Skeleton, the erased leaf's seq, prev, chains, time, version and receipt
cut to its ids and kind, whose leaf hash is the redaction's
entry_leaf_hash.

Every failure is a packerror.Failure naming the file and the line.
"""
import hashlib
import json
import re

import teamwindow
from packerror import Failure
from packread import each_line, load_json, shown

FILE = "redactions.jsonl"
PREFIX = b'{"redacted":'
HEX64 = re.compile(r"[0-9a-f]{64}\Z")
_RECEIPT_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}\Z")
_TEAM = re.compile(r"[a-z0-9-]{1,63}\Z")
# What a person may be shown raw (section 3, "Ids people read"): no C0 or C1
# control, no DEL, no bidi control; a lone surrogate is no UTF-8.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
EMITTER_KINDS = ("agent_start", "agent_exec", "model_call", "tool_call")
# The fields of a `redaction` receipt: its common fields, fixed, and those of
# its kind ("The `redaction` entry").
FIELDS = {"receipt_id", "kind", "team", "run_id", "attempt", "occurred_at_us", "entry_seq", "entry_leaf_hash",
          "entry_v", "entry_prev", "entry_logged_at_us", "entry_run_prev", "entry_team_prev", "entry_kind",
          "entry_team", "entry_run_id", "entry_receipt_id", "entry_step_id", "entry_attempt",
          "entry_start_receipt_id", "reason", "requested_by", "approved_by"}
MAX_INT = 1 << 63


class Skeleton(dict):
    """An erased entry as its redacted line states it: the keys of a leaf
    but `emitter`, its receipt only `attempt`, `kind`, `receipt_id`,
    `run_id`, `team` (and `step_id`, `start_receipt_id` when it had them).
    `erased` tells it from a leaf (packsteps.py)."""
    erased = True


class Redaction:
    """One line of redactions.jsonl read: seq, line (its number), leaf (its
    bytes), leaf_hash and receipt; named, the entries.jsonl line of the
    first redacted line that names it, or None."""

    def __init__(self, seq, line, leaf, receipt):
        self.seq, self.line, self.leaf, self.receipt = seq, line, leaf, receipt
        self.leaf_hash = hashlib.sha256(b"\x00" + leaf).digest()
        self.named = None


def presence(files, pack_format):
    """The file's place: in a pack of format 8 only."""
    if FILE in files and pack_format < 8:
        raise Failure("%s: only a pack of format 8 carries redactions" % FILE)


def canonical(obj):
    """Canonical JSON (section 2) as bytes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _unsafe(value):
    """The first character of value a terminal must not be handed raw, as
    section 3 names it (`control or bidi character U+000D at byte 4`), or
    None."""
    m = _UNSAFE.search(value)
    if m is None:
        return None
    if 0xD800 <= ord(m.group()) <= 0xDFFF:
        return "must be valid UTF-8"
    return "control or bidi character U+%04X at byte %d" % (ord(m.group()), len(value[:m.start()].encode()))


def _identity(value):
    """An admin's identity, typed as `emitter` is (section 2): uri:, dns:
    or cn: and a name, or an untyped caller's name (local, in-process); the
    rule it breaks, or None."""
    if not isinstance(value, str) or not value:
        return "required, an admin's identity"
    if len(value.encode("utf-8", "surrogatepass")) > 1024:
        return "at most 1024 bytes"
    unsafe = _unsafe(value)
    if unsafe is not None:
        return unsafe
    if value in ("local", "in-process") or any(value.startswith(p) and len(value) > len(p)
                                                 for p in ("uri:", "dns:", "cn:")):
        return None
    return "want an identity typed as an emitter's (uri:, dns: or cn: and a name, local or in-process), found '%s'" % (
        shown(value))


def receipt_rule(r):
    """(field, rule) of the first rule of "The `redaction` entry" (and the
    common fields of section 3) that the receipt r (a dict, its kind
    `redaction`) breaks, or None when it is a valid redaction."""
    def uint(field, low=0):
        v = r.get(field)
        return type(v) is int and low <= v < MAX_INT

    def hex64(field):
        return isinstance(r.get(field), str) and HEX64.match(r[field]) is not None

    def text(field, limit):
        """The rule a string field of ids people read breaks, or None."""
        v = r[field]
        if not isinstance(v, str) or not v:
            return "want a non-empty string"
        if len(v.encode("utf-8", "surrogatepass")) > limit:
            return "at most %d bytes" % limit
        return _unsafe(v)

    for k in sorted(r):
        if k not in FIELDS:
            return shown(k), "not a field of a redaction"
    if not uint("entry_seq"):
        return "entry_seq", "required, the erased entry's seq"
    want_id = "ledger.redaction.%d" % r["entry_seq"]
    if r.get("receipt_id") != want_id:
        return "receipt_id", "a redaction's is '%s'" % want_id
    if r.get("team") != "ledger":
        return "team", "a redaction's is 'ledger'"
    if r.get("run_id") != "ledger.redactions":
        return "run_id", "a redaction's is 'ledger.redactions'"
    if r.get("attempt", 1) != 1 or type(r.get("attempt", 1)) is not int:
        return "attempt", "a redaction's is 1"
    if not uint("occurred_at_us", 1):
        return "occurred_at_us", "required, > 0"
    if not hex64("entry_leaf_hash"):
        return "entry_leaf_hash", "must be 64 lowercase hex digits"
    if type(r.get("entry_v")) is not int or r["entry_v"] not in (1, 2):
        return "entry_v", "required, 1 or 2"
    if not hex64("entry_prev"):
        return "entry_prev", "must be 64 lowercase hex digits"
    if not uint("entry_logged_at_us", 1):
        return "entry_logged_at_us", "required, > 0"
    if "entry_run_prev" in r and not (uint("entry_run_prev") and r["entry_run_prev"] < r["entry_seq"]):
        return "entry_run_prev", "must be below entry_seq"
    if "entry_team_prev" in r and not (r["entry_v"] == 2 and uint("entry_team_prev")
                                       and r["entry_team_prev"] < r["entry_seq"]):
        return "entry_team_prev", "only with entry_v 2, below entry_seq"
    kind = r.get("entry_kind")
    if kind not in EMITTER_KINDS:
        return "entry_kind", ("one of agent_start, agent_exec, model_call, tool_call (entries the ledger wrote are "
                              "never erased)")
    if not isinstance(r.get("entry_team"), str) or not _TEAM.match(r["entry_team"]):
        return "entry_team", "1-63 bytes of [a-z0-9-]"
    if not isinstance(r.get("entry_receipt_id"), str) or not _RECEIPT_ID.match(r["entry_receipt_id"]):
        return "entry_receipt_id", "1-128 bytes of [A-Za-z0-9._:-]"
    if "entry_run_id" not in r:
        return "entry_run_id", "required, at most 128 bytes"
    rule = text("entry_run_id", 128)
    if rule is not None:
        return "entry_run_id", rule
    if "entry_step_id" not in r:
        if kind in ("agent_start", "agent_exec"):
            return "entry_step_id", "required for %s" % kind
    else:
        rule = text("entry_step_id", 128)
        if rule is not None:
            return "entry_step_id", rule
    if not uint("entry_attempt", 1):
        return "entry_attempt", "required, >= 1"
    if kind == "agent_exec":
        if not isinstance(r.get("entry_start_receipt_id"), str) or not _RECEIPT_ID.match(r["entry_start_receipt_id"]):
            return "entry_start_receipt_id", "1-128 bytes of [A-Za-z0-9._:-]"
    elif "entry_start_receipt_id" in r:
        return "entry_start_receipt_id", "only for an agent_exec"
    reason = r.get("reason")
    if not isinstance(reason, str) or not reason:
        return "reason", "required, why the entry is erased, 1-1024 bytes"
    if len(reason.encode("utf-8", "surrogatepass")) > 1024:
        return "reason", "at most 1024 bytes"
    if _unsafe(reason) is not None:
        return "reason", _unsafe(reason)
    for field in ("requested_by", "approved_by"):
        rule = _identity(r.get(field))
        if rule is not None:
            return field, rule
    if r["approved_by"] == r["requested_by"]:
        return "approved_by", "must be another admin than requested_by"
    return None


def _redaction(leaf, n, size, before):
    """Line n of redactions.jsonl read: a canonical leaf by the ledger of a
    valid redaction, its seq above the line before's (before, a Redaction
    or None), its entry_seq below it, and in the checkpoint's tree."""
    where = "%s: line %d" % (FILE, n)
    entry = load_json(leaf, where)
    if not isinstance(entry, dict) or teamwindow.leaf_entry(leaf) is None:
        raise Failure("%s: not a leaf of version 1 or 2" % where)
    if canonical(entry) != leaf:
        raise Failure("%s: not canonical JSON" % where)
    seq, r = entry["seq"], entry["receipt"]
    if entry.get("emitter") != "ledger":
        raise Failure("%s: emitter '%s': a redaction is the ledger's only" % (where, shown(entry.get("emitter"))))
    if r.get("kind") != "redaction":
        raise Failure("%s: kind '%s': not a redaction" % (where, shown(r.get("kind"))))
    broken = receipt_rule(r)
    if broken is not None:
        raise Failure("%s: %s: %s" % (where, broken[0], broken[1]))
    if before is not None and seq <= before.seq:
        raise Failure("%s: seq %d: not after seq %d (line %d)" % (where, seq, before.seq, before.line))
    if r["entry_seq"] >= seq:
        raise Failure("%s: seq %d: entry_seq %d is not below it" % (where, seq, r["entry_seq"]))
    if seq >= size:
        raise Failure("%s: seq %d is not in the checkpoint's tree of size %d" % (where, seq, size))
    return Redaction(seq, n, leaf, r)


def redacted_line(by, r):
    """The redacted line ("The redacted line") of the entry that the
    redaction r (its receipt, a dict), of seq by, erased: the bytes."""
    receipt = {"attempt": r["entry_attempt"], "kind": r["entry_kind"], "receipt_id": r["entry_receipt_id"],
               "run_id": r["entry_run_id"], "team": r["entry_team"]}
    if "entry_start_receipt_id" in r:
        receipt["start_receipt_id"] = r["entry_start_receipt_id"]
    if "entry_step_id" in r:
        receipt["step_id"] = r["entry_step_id"]
    line = {"by": by, "leaf_hash": r["entry_leaf_hash"], "logged_at_us": r["entry_logged_at_us"],
            "prev": r["entry_prev"], "receipt": receipt, "seq": r["entry_seq"], "v": r["entry_v"]}
    if "entry_run_prev" in r:
        line["run_prev"] = r["entry_run_prev"]
    if "entry_team_prev" in r:
        line["team_prev"] = r["entry_team_prev"]
    return canonical({"redacted": line})


def looks_redacted(line):
    """Whether a line of entries.jsonl begins as a redacted line does (a
    leaf begins {"emitter":)."""
    return line.startswith(PREFIX)


class Held:
    """What a pack of format 8 holds of erasures: redactions.jsonl read
    (present: the file is in the pack; lines: its Redactions, ascending),
    and the erased entries of entries.jsonl met so far (erased: [(seq,
    Redaction)])."""

    def __init__(self, files, size):
        self.present = FILE in files
        self.lines, self.by_seq, self.erased = [], {}, []
        if not self.present:
            return
        data = files[FILE]
        if not data:
            raise Failure("%s: a pack with no redacted entry carries no redactions" % FILE)
        before = None
        for n, leaf in enumerate(each_line(data, FILE), 1):
            before = _redaction(leaf, n, size, before)
            self.lines.append(before)
            self.by_seq[before.seq] = before

    def entry(self, line, n):
        """Line n of entries.jsonl, a redacted line: (its Skeleton, the
        erased leaf's hash), once the line is exactly the one its
        redaction gives."""
        where = "entries.jsonl: line %d" % n
        obj = load_json(line, where)
        inner = obj.get("redacted") if isinstance(obj, dict) and len(obj) == 1 else None
        if (not isinstance(inner, dict) or any(type(inner.get(k)) is not int or not 0 <= inner[k] < MAX_INT
                                               for k in ("by", "seq"))):
            raise Failure("%s: not a leaf of version 1 or 2 nor a redacted line" % where)
        seq, by = inner["seq"], inner["by"]
        if not self.present:
            raise Failure("%s: missing: entries.jsonl line %d is redacted by seq %d" % (FILE, n, by))
        r = self.by_seq.get(by)
        if r is None:
            raise Failure("%s: seq %d: redacted by %d, which %s does not hold" % (where, seq, by, FILE))
        if r.receipt["entry_seq"] != seq or redacted_line(by, r.receipt) != line:
            raise Failure("%s: seq %d: not the redacted line of redaction %d" % (where, seq, by))
        if r.named is None:
            r.named = n
        self.erased.append((seq, r))
        skeleton = Skeleton((k, v) for k, v in inner.items() if k not in ("by", "leaf_hash"))
        return skeleton, bytes.fromhex(inner["leaf_hash"])

    def same(self, r, leaf, n):
        """A redaction in the pack's scope is in both files: line n of
        entries.jsonl (leaf) is its line of redactions.jsonl (r)."""
        if leaf != r.leaf:
            raise Failure("%s: line %d: seq %d: not the leaf of entries.jsonl line %d, which holds that seq"
                          % (FILE, r.line, r.seq, n))

    def end(self):
        """entries.jsonl is over: a file with no redacted entry to name, or a
        redaction no redacted line names, is refused."""
        if self.present and not self.erased:
            raise Failure("%s: a pack with no redacted entry carries no redactions" % FILE)
        for r in self.lines:
            if r.named is None:
                raise Failure("%s: line %d: seq %d redacts no entry of the pack" % (FILE, r.line, r.seq))

    def printed(self):
        """The line printed after the OK line for each erased entry, in seq
        order, values escaped (packread.shown)."""
        return ["entry %d: erased by redaction %d (%s of team %s, run %s): %s; requested by %s, approved by %s."
                % (seq, r.seq, shown(r.receipt["entry_kind"]), shown(r.receipt["entry_team"]),
                   shown(r.receipt["entry_run_id"]), shown(r.receipt["reason"]), shown(r.receipt["requested_by"]),
                   shown(r.receipt["approved_by"])) for seq, r in self.erased]
