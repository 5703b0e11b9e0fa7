#!/usr/bin/env python3
"""Writes, or checks byte for byte, tests/vectors/redaction.json, made from
the contract's text (section 8 "Erasure", with section 1's hashes and
chains, section 2's leaf bytes, section 3's receipts and section 6b's entry
bundles) with Python's standard library, not from the ledger's code.

The file holds:
- `entries`: a log of six leaves of version 2, laid out like leaf_v2.json
  (each `entry`, the exact `leaf_bytes_utf8`, `leaf_hash_hex`): seq 0 the
  `agent_start` of step `build` of run `run-7` of team `acme`, seq 1 the
  `agent_exec` completing it, seq 2 a `tool_call` of that step whose
  `target` holds the marker `ERASE-ME-4242`, seq 3 a `tool_call` of team
  `globex` (also of a run named `run-7`: run chains are per team), seq 4
  the ledger's `redaction` `ledger.redaction.2` erasing seq 2, seq 5 the
  ledger's `redaction` `ledger.redaction.1` erasing seq 1 (an
  `agent_exec`, so it has `entry_start_receipt_id`);
  `root_hex` the RFC 9162 root of the six, `size` 6;
- `redaction_seqs`: the seq each redaction erases, by the redaction's seq;
- `redacted_lines`: for seqs 1 and 2, the redacted line (section 8, "The
  redacted line") that stands for the erased leaf, made from its redaction;
- `bundle_before_hex` and `bundle_hex`: the entry bundle of seqs 0 to 5
  (section 6b: each line as uint16 big-endian length || bytes), before the
  erasures and after both (the redacted lines in place of leaves 1 and 2);
- `skeletons`: for each erased seq, what a reader takes from its
  redaction's `entry_` fields; the script asserts that each equals what
  the erased leaf itself says, that the next leaf's `prev` is its
  `leaf_hash`, and that the redacted line is the one the skeleton gives;
- `accepted`: the two genuine `redaction` receipts, with their emitter;
- `refused`: `redaction` receipts a validator must refuse, each breaking
  one rule, with the emitter and the contract field the refusal names. The
  script checks each against its own reading of the rules (`violations`):
  the accepted break none, each refused breaks exactly its `field`.

Usage: redaction_vectors.py [--write]
  without --write, recomputes the file and compares it with the stored one;
  exit 0 when it holds, 1 when it differs.
"""
# Readings: where the contract's text is silent or ambiguous, the reading
# these vectors take (the most literal one):
#
# R1. The redacted line. The brief this script was written from gave it as
#     `{"redacted":{"by":R,"seq":S}}`; erasure.md ("The redacted line")
#     gives an object with `by`, `leaf_hash`, `logged_at_us`, `prev`,
#     `receipt` {attempt, kind, receipt_id, run_id, start_receipt_id?,
#     step_id?, team}, `run_prev`?, `seq`, `team_prev`?, `v`. The contract
#     is followed: the line is the full skeleton.
# R2. Required fields of a `redaction`: every field of the table except
#     `entry_run_prev`, `entry_team_prev` ("when it had one"),
#     `entry_step_id` ("when it had one") and `entry_start_receipt_id` ("an
#     erased agent_exec's"). `entry_start_receipt_id` is present exactly
#     when `entry_kind` is `agent_exec`; `entry_step_id` is required when
#     `entry_kind` is `agent_start` or `agent_exec` (section 3 requires
#     their `step_id`). The table says neither in so many words.
# R3. `entry_attempt` is always present: section 3's `attempt` defaults to
#     1 and every leaf of the golden vectors writes it, so the erased
#     receipt's `attempt` is its written value (1 here).
# R4. `entry_v` is 1 or 2 (any `v` a reader accepts, section 2); with
#     `entry_v` 1 there is no `entry_team_prev`. Both erased leaves here are
#     of version 2.
# R5. `entry_run_prev` / `entry_team_prev` of 0 are written (section 2: a
#     present integer is written even when 0): seq 1's are both 0, so its
#     redaction and its redacted line hold `"run_prev":0` and
#     `"team_prev":0`.
# R6. `requested_by` / `approved_by` "typed as `emitter` is": the table of
#     section 2 sets no byte limit on an emitter, so none is read here
#     (beyond section 3's 16 KiB receipt); `uri:`, `dns:`, `cn:` with a
#     non-empty name, valid UTF-8, no control character; of the untyped
#     names, `local` and `in-process` are callers' identities and `ledger`
#     is "no caller's identity" (section 3), so `ledger` is refused. (In
#     plain-text mode every caller is `local`, so no two different admins
#     exist there and nothing can be erased: the text does not say so.)
# R7. "No control character" in `reason`: Unicode's control characters
#     (category Cc): U+0000-U+001F (tab and LF included), U+007F,
#     U+0080-U+009F. The bidi controls of section 3 ("Ids people read") are
#     not read as control characters here. (Section 3 lets a receipt's
#     free-text `reason` hold them; this `reason` may not.)
# R8. "1-1,024 bytes of UTF-8": bytes of the UTF-8 encoding, not
#     characters; the refused 1,025-byte reason is 513 characters.
# R9. An emitter other than `ledger`: section 3's namespace rule speaks
#     first for a `ledger.` receipt id (field `receipt_id`); under ids of
#     its own, the field named is `kind` (erasure.md: `kind: redaction is
#     written by the ledger only`). A refused case names the first rule
#     broken.
# R10. `entry_kind` of a kind the ledger writes (`step_unknown`,
#     `leader_epoch`, `key_rotation`, `redaction`) is refused with field
#     `entry_kind`. The contract refuses erasing "an entry the ledger
#     wrote" as a refusal of the Erase call (FAILED_PRECONDITION), defined
#     by the entry's `emitter`, which the redaction does not keep; the
#     kind is the only trace of it in R. Not refused by `entry_team`
#     `ledger`: that team is "otherwise a team like any" (section 3).
# R11. `entry_seq` "below the redaction's own" and "S < R < the tree size"
#     need the redaction's seq, which a receipt alone does not hold; the
#     refused cases do not test it.
# R12. `occurred_at_us` "the ledger's clock at the approval": a plain value
#     here, at or below the redaction's `logged_at_us` (the approval comes
#     before the append).
# R13. The entry bundle of seqs 0-5 is the partial bundle
#     `tile/entries/000.p/6`; after an erasure it holds the redacted lines
#     (erasure.md), each with its own uint16 length, as a leaf.
# R14. The skeleton's keys are named as in the redacted line's object,
#     flattened (`kind`, `team`, ... beside `seq`, `leaf_hash`, ...); `by`
#     is not in it.
import hashlib
import json
import os
import re
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "redaction.json")
ZERO = "0" * 64
MARKER = "ERASE-ME-4242"
HEX64 = re.compile(r"[0-9a-f]{64}\Z")
LEDGER_KINDS = ("step_unknown", "leader_epoch", "key_rotation", "redaction")
EMITTER_KINDS = ("agent_start", "agent_exec", "model_call", "tool_call")


def canonical(obj):
    # Section 2: Python's json.dumps with these arguments gives the bytes.
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def leaf_hash(leaf):
    return hashlib.sha256(b"\x00" + leaf.encode()).digest()


def root(hashes):
    # RFC 9162 section 2.1: split at the largest power of two below n.
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    k = 1
    while k * 2 < len(hashes):
        k *= 2
    return hashlib.sha256(b"\x01" + root(hashes[:k]) + root(hashes[k:])).digest()


def bundle(lines):
    # Section 6b: each line as uint16 big-endian length || its bytes.
    out = b""
    for line in lines:
        data = line.encode()
        assert len(data) <= 65535
        out += struct.pack(">H", len(data)) + data
    return out


def redaction_receipt(seq, entry, reason, requested_by, approved_by, occurred_at_us):
    """Section 8, "The `redaction` entry": the ledger's receipt erasing `entry` (seq `seq`)."""
    receipt = entry["receipt"]
    r = {"receipt_id": "ledger.redaction.%d" % seq, "kind": "redaction", "team": "ledger",
         "run_id": "ledger.redactions", "attempt": 1, "occurred_at_us": occurred_at_us,
         "entry_seq": seq, "entry_leaf_hash": leaf_hash(canonical(entry)).hex(), "entry_v": entry["v"],
         "entry_prev": entry["prev"], "entry_logged_at_us": entry["logged_at_us"]}
    if "run_prev" in entry:
        r["entry_run_prev"] = entry["run_prev"]
    if "team_prev" in entry:
        r["entry_team_prev"] = entry["team_prev"]
    r.update({"entry_kind": receipt["kind"], "entry_team": receipt["team"], "entry_run_id": receipt["run_id"],
              "entry_receipt_id": receipt["receipt_id"]})
    if "step_id" in receipt:
        r["entry_step_id"] = receipt["step_id"]
    r["entry_attempt"] = receipt["attempt"]
    if receipt["kind"] == "agent_exec":
        r["entry_start_receipt_id"] = receipt["start_receipt_id"]
    r.update({"reason": reason, "requested_by": requested_by, "approved_by": approved_by})
    return r


def redacted_line(by, r):
    """Section 8, "The redacted line": a function of the redaction R (at seq `by`) alone."""
    receipt = {"attempt": r["entry_attempt"], "kind": r["entry_kind"], "receipt_id": r["entry_receipt_id"],
               "run_id": r["entry_run_id"], "team": r["entry_team"]}
    if "entry_start_receipt_id" in r:
        receipt["start_receipt_id"] = r["entry_start_receipt_id"]
    if "entry_step_id" in r:
        receipt["step_id"] = r["entry_step_id"]
    obj = {"by": by, "leaf_hash": r["entry_leaf_hash"], "logged_at_us": r["entry_logged_at_us"],
           "prev": r["entry_prev"], "receipt": receipt, "seq": r["entry_seq"], "v": r["entry_v"]}
    if "entry_run_prev" in r:
        obj["run_prev"] = r["entry_run_prev"]
    if "entry_team_prev" in r:
        obj["team_prev"] = r["entry_team_prev"]
    return canonical({"redacted": obj})


def skeleton_of_redaction(r):
    s = {"seq": r["entry_seq"], "leaf_hash": r["entry_leaf_hash"], "v": r["entry_v"], "prev": r["entry_prev"],
         "logged_at_us": r["entry_logged_at_us"]}
    for key in ("run_prev", "team_prev"):
        if "entry_" + key in r:
            s[key] = r["entry_" + key]
    s.update({"kind": r["entry_kind"], "team": r["entry_team"], "run_id": r["entry_run_id"],
              "receipt_id": r["entry_receipt_id"]})
    if "entry_step_id" in r:
        s["step_id"] = r["entry_step_id"]
    s["attempt"] = r["entry_attempt"]
    if "entry_start_receipt_id" in r:
        s["start_receipt_id"] = r["entry_start_receipt_id"]
    return s


def skeleton_of_leaf(leaf):
    # Read from the leaf's bytes, independently of the redaction.
    e = json.loads(leaf)
    rc = e["receipt"]
    s = {"seq": e["seq"], "leaf_hash": leaf_hash(leaf).hex(), "v": e["v"], "prev": e["prev"],
         "logged_at_us": e["logged_at_us"], "kind": rc["kind"], "team": rc["team"], "run_id": rc["run_id"],
         "receipt_id": rc["receipt_id"], "attempt": rc.get("attempt", 1)}
    for key in ("run_prev", "team_prev"):
        if key in e:
            s[key] = e[key]
    if "step_id" in rc:
        s["step_id"] = rc["step_id"]
    if rc["kind"] == "agent_exec":
        s["start_receipt_id"] = rc["start_receipt_id"]
    return s


def skeleton_of_line(line):
    obj = json.loads(line)["redacted"]
    s = {k: obj[k] for k in ("seq", "leaf_hash", "v", "prev", "logged_at_us", "run_prev", "team_prev") if k in obj}
    s.update(obj["receipt"])
    return s


def control(text):
    # Reading R7: Unicode category Cc.
    return any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in text)


def identity(value):
    # Reading R6: typed as section 2's `emitter`, a caller's identity.
    if not isinstance(value, str) or not value or control(value):
        return False
    if value in ("local", "in-process"):
        return True
    for prefix in ("uri:", "dns:", "cn:"):
        if value.startswith(prefix) and len(value) > len(prefix):
            return True
    return False


def violations(receipt, emitter):
    """The fields a `redaction` receipt breaks, under this script's reading of section 8."""
    bad = []

    def need(ok, field):
        if not ok and field not in bad:
            bad.append(field)

    def integer(field, low=0):
        v = receipt.get(field)
        return isinstance(v, int) and not isinstance(v, bool) and low <= v <= 2 ** 53 - 1

    def text(field):
        v = receipt.get(field)
        return isinstance(v, str) and v != ""

    # Section 3's namespace rule speaks first: an emitter's `ledger.` id.
    need(emitter == "ledger" or not str(receipt.get("receipt_id", "")).startswith("ledger."), "receipt_id")
    need(emitter == "ledger" and receipt.get("kind") == "redaction", "kind")
    need(integer("entry_seq"), "entry_seq")
    need(integer("entry_seq") and receipt.get("receipt_id") == "ledger.redaction.%d" % receipt["entry_seq"],
         "receipt_id")
    need(receipt.get("team") == "ledger", "team")
    need(receipt.get("run_id") == "ledger.redactions", "run_id")
    need("step_id" not in receipt, "step_id")
    need(receipt.get("attempt", 1) == 1, "attempt")
    need(integer("occurred_at_us"), "occurred_at_us")
    need(isinstance(receipt.get("entry_leaf_hash"), str) and HEX64.match(receipt["entry_leaf_hash"]) is not None,
         "entry_leaf_hash")
    need(receipt.get("entry_v") in (1, 2), "entry_v")
    need(isinstance(receipt.get("entry_prev"), str) and HEX64.match(receipt["entry_prev"]) is not None, "entry_prev")
    need(integer("entry_logged_at_us"), "entry_logged_at_us")
    for field in ("entry_run_prev", "entry_team_prev"):
        if field in receipt:
            need(integer(field) and integer("entry_seq") and receipt[field] < receipt["entry_seq"], field)
    if "entry_team_prev" in receipt:
        need(receipt.get("entry_v") == 2, "entry_team_prev")
    need(receipt.get("entry_kind") in EMITTER_KINDS, "entry_kind")
    for field in ("entry_team", "entry_run_id", "entry_receipt_id"):
        need(text(field), field)
    kind = receipt.get("entry_kind")
    if kind in ("agent_start", "agent_exec"):
        need(text("entry_step_id"), "entry_step_id")
    elif "entry_step_id" in receipt:
        need(text("entry_step_id"), "entry_step_id")
    need(integer("entry_attempt", 1), "entry_attempt")
    if kind == "agent_exec":
        need(text("entry_start_receipt_id"), "entry_start_receipt_id")
    else:
        need("entry_start_receipt_id" not in receipt, "entry_start_receipt_id")
    reason = receipt.get("reason")
    need(isinstance(reason, str) and 1 <= len(reason.encode()) <= 1024 and not control(reason), "reason")
    need(identity(receipt.get("requested_by")), "requested_by")
    need(identity(receipt.get("approved_by")), "approved_by")
    need(receipt.get("requested_by") != receipt.get("approved_by"), "approved_by")
    known = {"receipt_id", "kind", "team", "run_id", "step_id", "attempt", "occurred_at_us", "entry_seq",
             "entry_leaf_hash", "entry_v", "entry_prev", "entry_logged_at_us", "entry_run_prev", "entry_team_prev",
             "entry_kind", "entry_team", "entry_run_id", "entry_receipt_id", "entry_step_id", "entry_attempt",
             "entry_start_receipt_id", "reason", "requested_by", "approved_by"}
    for field in sorted(set(receipt) - known):
        need(False, field)
    return bad


def build():
    entries, hashes = [], []
    run_heads, team_heads = {}, {}

    def add(emitter, receipt):
        seq = len(entries)
        entry = {"v": 2, "seq": seq, "prev": hashes[-1].hex() if hashes else ZERO,
                 "logged_at_us": 1767225600000000 + 1000 * seq, "emitter": emitter, "receipt": receipt}
        # Section 1: run chain per (team, run_id), team chain per team.
        run = (receipt["team"], receipt["run_id"])
        if run in run_heads:
            entry["run_prev"] = run_heads[run]
        if receipt["team"] in team_heads:
            entry["team_prev"] = team_heads[receipt["team"]]
        run_heads[run] = seq
        team_heads[receipt["team"]] = seq
        leaf = canonical(entry)
        entries.append({"entry": entry, "leaf_bytes_utf8": leaf, "leaf_hash_hex": leaf_hash(leaf).hex()})
        hashes.append(leaf_hash(leaf))
        return seq

    start = add("uri:spiffe://acme/gateway", {
        "receipt_id": "build-start", "kind": "agent_start", "team": "acme", "run_id": "run-7", "step_id": "build",
        "attempt": 1, "workflow": "release", "agent": "builder", "occurred_at_us": 1767225599000000,
        "decision": "allow", "timeout_ms": 60000, "cost_reserved_micros": 5000})
    exec_seq = add("uri:spiffe://acme/worker", {
        "receipt_id": "build-exec", "kind": "agent_exec", "team": "acme", "run_id": "run-7", "step_id": "build",
        "attempt": 1, "occurred_at_us": 1767225599400000, "start_receipt_id": "build-start",
        "status": "succeeded", "exit_code": 0, "duration_ms": 400, "cost_micros": 1200})
    call_seq = add("uri:spiffe://acme/gateway", {
        "receipt_id": "crm-lookup", "kind": "tool_call", "team": "acme", "run_id": "run-7", "step_id": "build",
        "attempt": 1, "occurred_at_us": 1767225599200000, "tool": "crm",
        "target": "https://crm.example/customers/" + MARKER, "decision": "allow", "status_code": 200})
    add("uri:spiffe://globex/gateway", {
        "receipt_id": "gx-call-1", "kind": "tool_call", "team": "globex", "run_id": "run-7", "attempt": 1,
        "occurred_at_us": 1767225599500000, "tool": "git", "decision": "allow"})
    assert start == 0 and MARKER in entries[call_seq]["leaf_bytes_utf8"]

    erasures = [  # (erased seq, reason, requested_by, approved_by, occurred_at_us)
        (call_seq, "GDPR art. 17 request #881", "cn:alice-admin", "cn:bob-admin", 1767225600003500),
        (exec_seq, "court order 2026-117", "uri:spiffe://acme/admin-a", "uri:spiffe://acme/admin-b",
         1767225600004500),
    ]
    accepted, redaction_seqs = [], {}
    for seq, reason, requested_by, approved_by, occurred in erasures:
        receipt = redaction_receipt(seq, entries[seq]["entry"], reason, requested_by, approved_by, occurred)
        by = add("ledger", receipt)
        assert occurred <= entries[by]["entry"]["logged_at_us"]
        redaction_seqs[str(by)] = seq
        accepted.append({"name": "%s: erases seq %d" % (receipt["receipt_id"], seq), "seq": by,
                         "emitter": "ledger", "receipt": receipt})

    before = [e["leaf_bytes_utf8"] for e in entries]
    after = list(before)
    redacted, skeletons = [], []
    for by in sorted(int(k) for k in redaction_seqs):
        r = entries[by]["entry"]["receipt"]
        seq = r["entry_seq"]
        line = redacted_line(by, r)
        skeleton = skeleton_of_redaction(r)
        # The skeleton is what the erased leaf says; the chain goes on through it.
        assert skeleton == skeleton_of_leaf(entries[seq]["leaf_bytes_utf8"]), seq
        assert entries[seq + 1]["entry"]["prev"] == skeleton["leaf_hash"], seq
        assert skeleton["leaf_hash"] == entries[seq]["leaf_hash_hex"]
        # The redacted line states the same skeleton, is told apart from a leaf, and holds no erased body.
        assert skeleton_of_line(line) == skeleton and json.loads(line)["redacted"]["by"] == by
        assert line.startswith('{"redacted":') and entries[seq]["leaf_bytes_utf8"].startswith('{"emitter":')
        assert MARKER not in line and "\n" not in line
        after[seq] = line
        redacted.append({"seq": seq, "by": by, "line_utf8": line})
        skeletons.append(skeleton)
    redacted.sort(key=lambda x: x["seq"])
    skeletons.sort(key=lambda x: x["seq"])
    assert MARKER.encode() in bundle(before) and MARKER.encode() not in bundle(after)

    # Section 1: the ledger's entries chain as run (ledger, ledger.redactions) of team ledger.
    assert "run_prev" not in entries[4]["entry"] and "team_prev" not in entries[4]["entry"]
    assert entries[5]["entry"]["run_prev"] == 4 and entries[5]["entry"]["team_prev"] == 4

    good = accepted[0]["receipt"]

    def case(name, field, emitter="ledger", **changes):
        receipt = dict(good)
        for key, value in changes.items():
            if value is None:
                del receipt[key]
            else:
                receipt[key] = value
        return {"name": name, "receipt": receipt, "emitter": emitter, "field": field}

    refused = [
        case("an emitter's redaction under the ledger's ids (section 3's namespace rule first)", "receipt_id",
             emitter="uri:spiffe://acme/gateway"),
        case("an emitter's redaction under its own ids", "kind", emitter="uri:spiffe://acme/gateway",
             receipt_id="redaction-2", run_id="redactions"),
        case("receipt_id with a leading zero: ledger.redaction.02 for entry_seq 2", "receipt_id",
             receipt_id="ledger.redaction.02"),
        case("receipt_id naming another seq: ledger.redaction.3 for entry_seq 2", "receipt_id",
             receipt_id="ledger.redaction.3"),
        case("team not ledger", "team", team="acme"),
        case("run_id not ledger.redactions", "run_id", run_id="ledger.redaction"),
        case("a step_id", "step_id", step_id="build"),
        case("reason empty", "reason", reason=""),
        case("reason of 1,025 bytes of UTF-8 (513 characters)", "reason", reason="\u00e9" * 512 + "."),
        case("reason with a control character U+0007", "reason", reason="GDPR art. 17\u0007 request #881"),
        case("requested_by equal to approved_by", "approved_by", approved_by=good["requested_by"]),
        case("entry_leaf_hash in upper-case hex", "entry_leaf_hash", entry_leaf_hash=good["entry_leaf_hash"].upper()),
        case("entry_leaf_hash of 63 digits", "entry_leaf_hash", entry_leaf_hash=good["entry_leaf_hash"][:63]),
        case("entry_kind redaction: an entry the ledger wrote cannot be erased", "entry_kind", entry_kind="redaction"),
        case("requested_by missing", "requested_by", requested_by=None),
    ]
    assert len(refused[8]["receipt"]["reason"].encode()) == 1025
    assert good["entry_leaf_hash"].upper() != good["entry_leaf_hash"]
    for a in accepted:
        assert violations(a["receipt"], a["emitter"]) == [], (a["name"], violations(a["receipt"], a["emitter"]))
    for c in refused:
        # The first rule broken, in the order sections 3 and 8 give them.
        assert violations(c["receipt"], c["emitter"])[:1] == [c["field"]], (c["name"], violations(c["receipt"], c["emitter"]))

    return {
        "note": "CONTRACT section 8 (erasure). leaf_bytes_utf8 is the exact leaf (sections 1 and 2); seqs 4 and 5 "
                "are the ledger's redaction entries erasing seqs 2 and 1; redacted_lines are the lines that stand "
                "for the erased leaves; bundle_hex is the entry bundle of seqs 0 to 5 (section 6b) after both "
                "erasures, bundle_before_hex before. Made by tests/vectors/redaction_vectors.py from the "
                "contract's text, not the ledger's code",
        "entries": entries,
        "root_hex": root(hashes).hex(),
        "size": len(entries),
        "redaction_seqs": redaction_seqs,
        "redacted_lines": redacted,
        "bundle_before_hex": bundle(before).hex(),
        "bundle_hex": bundle(after).hex(),
        "skeletons": skeletons,
        "accepted": accepted,
        "refused": refused,
    }


def main():
    text = json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
    if sys.argv[1:] == ["--write"]:
        with open(PATH, "w") as f:
            f.write(text)
        return 0
    with open(PATH) as f:
        if f.read() != text:
            print("FAIL: redaction.json: not what the contract's text gives (rerun with --write and compare)")
            return 1
    print("OK: redaction.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
