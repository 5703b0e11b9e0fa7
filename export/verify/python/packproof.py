"""The entries and their proofs (CONTRACT.md sections 1, 6 and 7), with the
standard library only: RFC 9162 inclusion and consistency proofs, the lines
of proofs.jsonl, consistency.json against the pack's checkpoint, and
entries.jsonl line by line: each a canonical leaf proven to the checkpoint's
root (by its line of proofs.jsonl, or in a pack of format 6 by
multiproof.txt, multiproof.py), the hash chain between consecutive seqs,
and the scope's rules (a run pack's run chain from the run's first entry,
every seq of a seq range, each run's chain from the first seq within a team
window or seq range). In a pack of format 8 a line may be an erased entry's
redacted line, and the multiproof covers the lines of redactions.jsonl too
(redactions.py, CONTRACT.md section 8). A pack of format 9 is a run pack
from a seq: its entries start at the scope's from_seq, the first linking
to a pruned entry below it, and the multiproof covers retention.jsonl's
line too (retention.py, CONTRACT.md section 9).

Every failure is a packerror.Failure.
"""
import hashlib
import json
import re

import multiproof
import packnote
import redactions
import retention
import teamwindow
from packerror import Failure
from packread import KeyTwice, count_lines, each_line, jsonl_lines, load_json, shown

HEX64 = re.compile(r"[0-9a-f]{64}\Z")


def hash_hex(h):
    """A hash written as 64 lowercase hex digits, as bytes; None otherwise."""
    return bytes.fromhex(h) if isinstance(h, str) and HEX64.match(h) else None


def proof_line(line, where="proofs.jsonl"):
    """(seq, leaf_hash, path) of a proofs.jsonl line: a JSON object of
    exactly seq, leaf_hash and inclusion, any spacing; None otherwise (a key
    twice is a Failure naming it)."""
    try:
        p = load_json(line, where)
    except KeyTwice:
        raise
    except Failure:
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
    found = "none" if run_prev is None else shown(run_prev)
    if before is not None:
        if run_prev != before:
            raise Failure("entries.jsonl seq %d: run_prev expected %d (the run's previous entry in the pack), found %s"
                          % (entry["seq"], before, found))
    elif run_prev is not None and run_prev >= first:
        raise Failure("entries.jsonl seq %d: run_prev expected none or below %d (%s), found %s"
                      % (entry["seq"], first, name, found))


def read_consistency(data):
    """consistency.json read strictly: exactly old_checkpoint (a string) and
    proof (a list of hex hashes). Returns (old checkpoint bytes, proof)."""
    c = load_json(data, "consistency.json")
    if not isinstance(c, dict):
        raise Failure("consistency.json: want a JSON object")
    for k in ("old_checkpoint", "proof"):
        if k not in c:
            raise Failure("consistency.json: %s: missing" % k)
    for k in sorted(c):
        if k not in ("old_checkpoint", "proof"):
            raise Failure("consistency.json: %s: not a field" % shown(k))
    if not isinstance(c["old_checkpoint"], str):
        raise Failure("consistency.json: old_checkpoint: want a JSON string")
    proof = [hash_hex(h) for h in c["proof"]] if isinstance(c["proof"], list) else [None]
    if None in proof:
        raise Failure("consistency.json: proof: not a list of hex hashes")
    try:
        return c["old_checkpoint"].encode("utf-8"), proof
    except UnicodeEncodeError:
        raise Failure("consistency.json: old_checkpoint: not UTF-8 (a lone surrogate)")


def check_consistency(files, key, origin, size, root, since, keys=None):
    """consistency.json: required with --since (since: its origin, size and
    root, or None); its old checkpoint signed by the key (with keys, a
    keyset.KeySet, by the key it trusts at the old checkpoint's size), of the pack's
    origin, the one given with --since, and joined to the pack's checkpoint
    (size, root) by the proof. Returns (size, root, given with --since) of
    the earlier checkpoint, or None."""
    if "consistency.json" not in files:
        if since is not None:
            raise Failure("consistency.json: missing: --since asks for consistency with the checkpoint at size %d"
                          % since[1])
        return None
    old, proof = read_consistency(files["consistency.json"])
    try:
        if keys is None:
            old_origin, old_size, old_root = packnote.checkpoint_of(old, key)
        else:
            old_origin, old_size, old_root = keys.checkpoint(old)
    except Failure as e:
        raise Failure("consistency.json: old_checkpoint: %s" % e)
    if old_origin != origin:
        raise Failure("consistency.json: old_checkpoint: not a checkpoint of this log")
    if since is not None and since != (old_origin, old_size, old_root):
        raise Failure("consistency.json: old_checkpoint is size %d root %s, --since is size %d root %s"
                      % (old_size, old_root.hex(), since[1], since[2].hex()))
    if not verify_consistency(old_size, size, old_root, root, proof):
        raise Failure("consistency.json: the proof does not join the two checkpoints")
    return old_size, old_root, since is not None


class Entries:
    """What check_entries() read: count; run, the (seq, leaf hash) of each
    entry of a run pack; team, the (entry, leaf hash) of each of a team
    window; parsed, every entry; last_logged, the (seq, logged_at_us) of the
    latest an emitter appended (the ledger's own declarations, which it
    makes while it signs, are logged after the time it signs); first_v2,
    the seq of the first leaf of version 2; held, in a pack of format 8,
    the redactions.Held of its erased entries (else None); pruned, in a
    pack of format 9, the retention.Pruned of its run's pruned entries
    (else None). An erased entry counts as its redacted line states it (a
    redactions.Skeleton), with the leaf hash of the erased leaf."""

    def __init__(self):
        self.count, self.run, self.team, self.parsed = 0, [], [], []
        self.last_logged = self.first_v2 = self.held = self.pruned = None


def _entry(leaf, n):
    """Line n of entries.jsonl read: a leaf of version 1 or 2 in canonical
    form, no key twice."""
    where = "entries.jsonl: line %d" % n
    entry = load_json(leaf, where)
    if not isinstance(entry, dict) or teamwindow.leaf_entry(leaf) is None:
        raise Failure("%s: not a leaf of version 1 or 2" % where)
    canonical = json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    if canonical != leaf:
        raise Failure("entries.jsonl seq %d: not canonical JSON" % entry["seq"])
    return entry


def _check_scope_entry(entry, scope, last_seq, last_of_run, n):
    """The scope's rules for one entry, line n (CONTRACT.md section 7; a run
    pack from a seq, section 9's step 6)."""
    seq, r = entry["seq"], entry["receipt"]
    if scope["kind"] == "run":
        if r.get("team") != scope["team"] or r.get("run_id") != scope["run_id"]:
            raise Failure("entries.jsonl seq %d: not an entry of the pack's run" % seq)
        if last_seq is None and "from_seq" in scope:
            _first_from_seq(entry, scope["from_seq"], n)
        elif entry.get("run_prev") != last_seq:
            raise Failure("entries.jsonl seq %d: run_prev expected %s, found %s"
                          % (seq, last_seq, shown(entry.get("run_prev"))))
    elif scope["kind"] == "team":
        if r.get("team") != scope["team"] or not scope["from_us"] <= entry["logged_at_us"] < scope["to_us"]:
            raise Failure("entries.jsonl seq %d: not an entry of the pack's team and time window" % seq)
        if not scope["from_seq"] <= seq < scope["to_seq"]:
            raise Failure("entries.jsonl seq %d: not in the window's seqs [%d, %d)"
                          % (seq, scope["from_seq"], scope["to_seq"]))
        run_chain(entry, last_of_run, scope["from_seq"], "the window's first seq")
    elif seq != (scope["from_seq"] if last_seq is None else last_seq + 1):
        raise Failure("entries.jsonl seq %d: seq expected %d (the range has a gap)"
                      % (seq, scope["from_seq"] if last_seq is None else last_seq + 1))
    else:
        run_chain(entry, last_of_run, scope["from_seq"], "the range's first seq")


def _first_from_seq(entry, from_seq, n):
    """The first entry of a run pack from a seq (format 9) follows the run's
    entry before it, which was pruned: its run_prev is below from_seq."""
    run_prev = entry.get("run_prev")
    if type(run_prev) is not int or not 0 <= run_prev < from_seq:
        raise Failure("entries.jsonl: line %d: run_prev expected below %d (the run's entries before the scope's "
                      "from_seq were pruned), found %s"
                      % (n, from_seq, "none" if run_prev is None else shown(run_prev)))


class _Sequence:
    """The checks between an entry and those before it in entries.jsonl
    (seqs ascending, prev, the scope's rules), and what Entries records of
    each, whatever proves the entries' inclusion."""

    def __init__(self, scope):
        self.scope, self.out = scope, Entries()
        self.last_seq = self.last_hash = None
        self.last_of_run = {}  # (team, run_id) -> the seq of its last entry so far

    def add(self, entry, leaf_hash, n):
        seq, scope, out = entry["seq"], self.scope, self.out
        if "from_seq" in scope and scope["kind"] == "run" and seq < scope["from_seq"]:
            raise Failure("entries.jsonl: line %d: seq %d is below the scope's from_seq %d"
                          % (n, seq, scope["from_seq"]))
        if self.last_seq is not None and seq <= self.last_seq:
            raise Failure("entries.jsonl seq %d: not after seq %d" % (seq, self.last_seq))
        if self.last_seq is not None and seq == self.last_seq + 1 and entry["prev"] != self.last_hash.hex():
            raise Failure("entries.jsonl seq %d: prev expected %s, found %s"
                          % (seq, self.last_hash.hex(), shown(entry["prev"])))
        _check_scope_entry(entry, scope, self.last_seq, self.last_of_run, n)
        if scope["kind"] == "run":
            out.run.append((seq, leaf_hash))
        elif scope["kind"] == "team":
            out.team.append((entry, leaf_hash))
        out.parsed.append(entry)
        if entry.get("emitter") != "ledger" and (out.last_logged is None or
                                                 entry["logged_at_us"] > out.last_logged[1]):
            out.last_logged = (seq, entry["logged_at_us"])
        if entry["v"] == 2 and out.first_v2 is None:
            out.first_v2 = seq
        out.count += 1
        self.last_seq, self.last_hash = seq, leaf_hash

    def end(self):
        """The entries are over: a seq range holds its last seq, a run pack
        from a seq at least one entry."""
        if self.scope["kind"] == "seq" and (self.last_seq is None or self.last_seq + 1 != self.scope["to_seq"]):
            raise Failure("entries.jsonl: the seq range ends early")
        if self.scope["kind"] == "run" and "from_seq" in self.scope and self.last_seq is None:
            raise Failure("entries.jsonl: a pack of format 9 holds at least one entry of its run")
        return self.out


def check_entries(files, manifest, size, root, checked=None):
    """entries.jsonl and the proof of their inclusion (proofs.jsonl, or in
    a pack of format 6 multiproof.txt; in one of format 8, with
    redactions.jsonl) against the checkpoint (size, root)
    and the manifest's count and scope. Returns an Entries. checked(n),
    when given, is called once the first n entries hold (in format 6, once
    the multiproof's walk has taken them)."""
    if manifest["format"] >= 6:
        return _check_multiproof(files, manifest, size, root, checked)
    entries = jsonl_lines(files["entries.jsonl"], "entries.jsonl")
    proofs = jsonl_lines(files["proofs.jsonl"], "proofs.jsonl")
    if len(entries) != len(proofs) or len(entries) != manifest["counts"]["entries"]:
        raise Failure("entries.jsonl: %d entries, %d proofs, manifest says %d"
                      % (len(entries), len(proofs), manifest["counts"]["entries"]))
    sequence = _Sequence(manifest["scope"])
    for n, (leaf, proof_text) in enumerate(zip(entries, proofs), 1):
        entry = _entry(leaf, n)
        seq = entry["seq"]
        leaf_hash = hashlib.sha256(b"\x00" + leaf).digest()
        proof = proof_line(proof_text, "proofs.jsonl: line %d" % n)
        if proof is None or proof[0] != seq:
            raise Failure("proofs.jsonl seq %d: not the proof line of this entry" % seq)
        if proof[1] != leaf_hash.hex():
            raise Failure("proofs.jsonl seq %d: leaf_hash expected %s, found %s"
                          % (seq, leaf_hash.hex(), shown(proof[1])))
        if not verify_inclusion(seq, size, leaf_hash, proof[2], root):
            raise Failure("proofs.jsonl seq %d: inclusion proof does not lead to the checkpoint's root" % seq)
        sequence.add(entry, leaf_hash, n)
        if checked is not None:
            checked(n)
    return sequence.end()


def _check_multiproof(files, manifest, size, root, checked):
    """A pack of format 6: entries.jsonl and multiproof.txt in one pass
    ("Shared inclusion proofs (format 6)"), each entry checked against those
    before it as it is read, before the multiproof is read past it. In a
    pack of format 8, redactions.jsonl is read first, whole; in one of
    format 9, then retention.jsonl and retention-policy.txt (section 9's
    steps 2 to 5)."""
    data = files["entries.jsonl"]
    count = count_lines(data, "entries.jsonl")
    if count != manifest["counts"]["entries"]:
        raise Failure("entries.jsonl: %d entries, manifest says %d" % (count, manifest["counts"]["entries"]))
    sequence = _Sequence(manifest["scope"])
    held = redactions.Held(files, size) if manifest["format"] >= 8 else None
    pruned = retention.Pruned(files, manifest["scope"], size) if manifest["format"] == 9 else None
    beside = _beside(held, pruned)
    multiproof.check(size, _leaves(data, size, sequence, checked, held, beside), files["multiproof.txt"], root)
    sequence.out.held, sequence.out.pruned = held, pruned
    return sequence.out


def _beside(held, pruned):
    """The leaves the multiproof covers besides the entries: the lines of
    redactions.jsonl (held) and, in a pack of format 9, retention.jsonl's
    (pruned), as [(seq, leaf hash, same)] by seq, same(leaf, n) checking
    that line n of entries.jsonl holding that seq is the same leaf. A seq
    in both files is refused: each seq is in the multiproof once."""
    out = [(r.seq, r.leaf_hash, lambda leaf, n, r=r: held.same(r, leaf, n)) for r in (held.lines if held else ())]
    if pruned is not None:
        r = held.by_seq.get(pruned.seq) if held else None
        if r is not None:
            raise Failure("%s: line 1: seq %d: not the leaf of %s line %d, which holds that seq"
                          % (retention.FILE, pruned.seq, redactions.FILE, r.line))
        out.append((pruned.seq, pruned.leaf_hash, pruned.same))
        out.sort(key=lambda x: x[0])
    return out


def _leaves(data, size, sequence, checked, held=None, beside=()):
    """(seq, leaf hash) of each line of entries.jsonl, checked as it is
    asked for; sequence.end() after the last. In a pack of format 8 (held,
    a redactions.Held), a redacted line counts as its redaction states the
    erased entry. The leaves beside the entries (_beside(): the lines of
    redactions.jsonl, of retention.jsonl in format 9) are merged in by seq,
    each seq once (CONTRACT.md sections 8 and 9)."""
    pending = iter(beside)
    ahead = next(pending, None)
    for n, leaf in enumerate(each_line(data, "entries.jsonl"), 1):
        if held is not None and redactions.looks_redacted(leaf):
            entry, leaf_hash = held.entry(leaf, n)
        else:
            entry = _entry(leaf, n)
            leaf_hash = hashlib.sha256(b"\x00" + leaf).digest()
        seq = entry["seq"]
        if seq >= size:
            raise Failure("entries.jsonl: line %d: seq %d is not in the checkpoint's tree of size %d" % (n, seq, size))
        sequence.add(entry, leaf_hash, n)
        while ahead is not None and ahead[0] < seq:
            yield ahead[:2]
            ahead = next(pending, None)
        if ahead is not None and ahead[0] == seq:  # a redaction in the pack's scope, in both files
            ahead[2](leaf, n)
            ahead = next(pending, None)
        yield seq, leaf_hash
        if checked is not None:
            checked(n)
    sequence.end()
    if held is not None:
        held.end()
    while ahead is not None:
        yield ahead[:2]
        ahead = next(pending, None)
