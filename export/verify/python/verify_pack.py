#!/usr/bin/env python3
"""Verify an evidence pack without trusting the ledger's own code.

Uses only Python's standard library and the `cryptography` package. Checks
the manifest's signature and every file's SHA-256 (a file the manifest
lists must be in the pack, and every file in the pack listed), the
checkpoint's signature, every entry's leaf hash and RFC 9162 inclusion
proof (in a format 6 pack, one multiproof of them all), the hash chain
between consecutive seqs, and the scope: for a run pack the run chain from
the run's first entry, for a seq range every seq from its first to its
last, within a team window or seq range each run's chain from its first
seq. (Step outcomes are recomputed, and report.html rebuilt, by `ledgerctl
verify` and `ledger-verify`; here outcomes.json and report.html are checked
by their digests in the signed manifest only, so a report re-signed by
whoever holds the ledger's key passes this script.)

Usage: verify_pack.py PACK.tar.gz (--vkey FILE | --vkey-string S | --trust-pack-key | --key-set FILE)
         [--key-history FILE] [--since CHECKPOINT]
         [--expect-scope run:TEAM/RUN|seq:A:B|team:TEAM,FROM,TO] [--not-older-than SIZE|CHECKPOINT]
         [--policy POLICY] [--expect-grace-ms N] [--tsa-root FILE [--tsa-max-delay SECONDS]] [--no-progress]
       verify_pack.py PACK.tar.gz VKEY     (the same as --vkey-string VKEY)
FILE holds the ledger's verifier key line, e.g. name+1a2b3c4d+AbCd...;
--trust-pack-key trusts the key inside the pack instead, and the result then
proves nothing about the ledger's identity. The key given is trusted at
every tree size; for a log that rotated its key (CONTRACT.md section 5d,
export/verify/python/keyset.py), --key-set FILE gives the keys the auditor
trusts, each for a range of tree sizes, one a line:
`<verifier key>[ from <size>][ until <size>]` (from <= size <= until,
defaults 0 and unbounded; `until N`: compromised as of size N; lines
starting with '#' and empty lines ignored); a set with two keys whose
ranges overlap, a key twice, from above until, keys of different names or
a malformed line is refused naming the line (exit 2). --key-history FILE
(`ledgerctl key-history`) is followed from the key given (--vkey,
--vkey-string or --key-set): each rotation's leaf, statement and both
signatures are checked, its old key must be the one trusted at its seq and
its inclusion proven to the history's checkpoint, which the key then
trusted at its size must sign; a rotation at seq s ends the old key's
range at s and trusts the new key from s + 1 up to the old key's until. A
rotation or history refused names the seq and the key (exit 2). With
either flag every note is checked against the key trusted at the size it
is about: checkpoint, checkpoint-time and manifest.sig at the pack's tree
size, consistency.json's old checkpoint and the checkpoints of --since and
--not-older-than at their own sizes; ledger.vkey must be the key trusted at
the pack's tree size. A note without a valid signature by that key is
refused naming the size and the key, even when another key of the set
signed it; the last line after the OK line names the key and the ranges
trusted. A key_rotation entry of the pack must be the ledger's, its
statement that of this log at its seq, signed by old_key then new_key (else
"entries.jsonl seq S: key_rotation: ..."); each adds a line after the OK
line. --since CHECKPOINT (a file
holding the auditor's earlier signed checkpoint): the pack must prove
consistency from exactly that checkpoint. --expect-scope: the scope asked
for; a pack of another scope fails. --not-older-than: a tree size or a file
holding a signed checkpoint; a pack against an older checkpoint fails.
The checkpoint's time note (checkpoint-time) must be signed by the key and
name the pack's checkpoint; its time is printed, and a step still pending
past its deadline (start + timeout + the manifest's unknown_grace_ms) at
that time fails; the steps and their deadlines are recomputed from
entries.jsonl (export/verify/python/packsteps.py), never read from outcomes.json. The time
is not before the latest entry's logged_at_us, nor after a policy witness's
cosignature; a pack of version 2 leaves carries a note of version 3 or 4.
A --since or --not-older-than file may hold the checkpoint followed by its
time note: the pack's time must then not be earlier, and at the same tree
size the notes sign the same map roots (the runs roots compared only when
both notes key runs alike). --expect-grace-ms N: the manifest's
unknown_grace_ms must be N.
A format 3 pack's time note is version 2 and signs the run-head map root;
a format 3 run pack proves with run-head.json (export/verify/python/completeness.py) that
it holds every entry of its run up to the checkpoint, or, with an absence
proof, that the run has none: the lines after the OK line say so, and name
each step pending or unknown as having no completion in the log.
A format 4 pack's time note is version 3 and signs the team-head map root
too; a team window proves with team-window.json (export/verify/python/teamwindow.py) that
it holds every entry of its team logged in the window, as far back as the
team chain (team_prev, leaf version 2) reaches: the line after the OK line
says how far. A format 5 pack's time note is version 4: as in format 4,
with the runs root of the map under run keys of version 2, by which its
run-head proof is keyed. A format 6 pack is a format 5 pack that proves its
entries' inclusion with one multiproof, multiproof.txt, in place of
proofs.jsonl (export/verify/python/multiproof.py): evaluated in one pass
over the entries and its hashes, it must lead to the checkpoint's root with
every hash used. A format 7 pack is a format 6 pack whose report.html holds
"Keys and time". A format 8 pack is a format 7 pack that holds erased
entries (CONTRACT.md section 8, export/verify/python/redactions.py): a line
of entries.jsonl may be an erased entry's redacted line, exactly the bytes
its redaction entry gives, and redactions.jsonl holds the leaf of every
redaction entry a redacted line names (the ledger's, each a valid
`redaction` receipt, ascending seq, each named by a line), and nothing
else; the file is refused in any other pack, and in a pack with no
redacted line. An erased entry counts as its redacted line states it (its
leaf hash, chains, scope and time), and the multiproof covers the seqs of
both files, each once. One line per erased entry, in seq order, follows
every other line after the OK line: "entry S: erased by redaction R (KIND
of team T, run RUN): REASON; requested by A, approved by B."; a step
whose start or completion was erased is unknown, never pending past a
deadline. A format 9 pack is a format 8 run pack from a seq (CONTRACT.md
section 9, export/verify/python/retention.py): its scope's from_seq is the
line (below_seq) of the ledger's `retention` entry it carries in
retention.jsonl, which must be the ledger's valid receipt in the tree, not
below its line, and covered by the multiproof with the entries;
retention-policy.txt is the policy that entry names by its SHA-256, read as
a policy (export/verify/python/retentionpolicy.py), whose rule covering the
scope's team (its own, else the default) is not forever and is the one the
entry states. The entries start at from_seq, the first linking (run_prev)
to the pruned entry below it; the run-head's count is above them. Both
files are refused in any other pack, and a run scope with from_seq in any
other format. The line after the OK line says from which seq the pack is
complete and which pass, rule and cutoff pruned the entries before it. A
--since note of version 2, 3 or 4 demands one as new.
--policy POLICY (a c2sp.org/tlog-policy, export/verify/python/tlogpolicy.py): the key must
be a log of the policy (without a key given, the key is the policy's log
named as the manifest's origin), every cosignature line of a policy witness
in the checkpoint must verify, and the witnesses with a valid line must meet
the quorum; the line after the OK line names them with their times. A
policy naming monitors (CONTRACT sections 5c and 7, "Monitored packs";
export/verify/python/mapcosign.py) then requires, before the entries are
read, the checkpoint-time note, every line of a policy monitor on it to
obey "Reading one", and the monitors with a valid line to meet the
monitor-quorum; the next line names them with their times.
--tsa-root FILE (PEM certificates, one or more; CONTRACT section 5e,
export/verify/python/timestamp.py): the checkpoint-time note must carry one
RFC 3161 time-stamp line over its text, signed by a TSA chaining to a root
of FILE at its genTime, the note's time at most --tsa-max-delay SECONDS
(default 60) before genTime and not after it; the last line after the OK
line names the TSA and genTime. Without it, a stamp line is not checked
and the last line says so.
The pack is read strictly (export/verify/python/packread.py, CONTRACT.md section 7,
"Reading a pack strictly"): gzip with nothing after it, sorted regular tar
members of mode 0644 and mtime 0, no JSON key twice, every .jsonl line
ended by a newline, one form only of every number, base64 and signature
line. Every value from the pack is printed escaped (packread.shown).
While the entries are checked, a line on stderr says how many are done, of
how many, and how long the rest will take (export/verify/python/progress.py),
rewritten in place and erased when they are done; only when stderr is a
terminal, never with --no-progress. (LEDGER_PROGRESS_INTERVAL_MS, for tests:
the line's interval in milliseconds, 250 unless set.)
Exit 0 when everything holds; 1, naming the first failing item, when
something does not (a pack signed by another key than the one given says
which signed it: "manifest.sig: signed by NAME+ID, not by NAME+ID (the key
given)"); 2 for bad usage (a key given but empty or malformed); 3 when the
pack cannot be read, so nothing of it was judged.
"""
import argparse
import base64
import hashlib
import os
import re
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import completeness  # noqa: E402
import keyset  # noqa: E402
import mapcosign  # noqa: E402
import packread  # noqa: E402
import packsteps  # noqa: E402
import progress  # noqa: E402
import redactions  # noqa: E402
import retention  # noqa: E402
import teamwindow  # noqa: E402
import timestamp  # noqa: E402
import tlogpolicy  # noqa: E402
# What moved to packnote.py, packproof.py and packmanifest.py keeps its name
# here too: tests load verify_pack.py for parse_vkey, open_note,
# checkpoint_time, verify_inclusion, verify_consistency and Failure.
from packerror import Failure, UsageError  # noqa: E402
from packmanifest import (RFC3339, check_files, check_scope, expected_scope, parse_manifest,  # noqa: E402,F401
                          scope_text)
from packnote import (RUN_KEYS, TIME_HEADERS, base64_hash, checkpoint_body, checkpoint_of,  # noqa: E402,F401
                      checkpoint_time, kept_checkpoint, open_note, parse_vkey, signature_lines, signed_time,
                      split_kept)
from packread import shown  # noqa: E402
from packtime import check_time_against, given_checkpoints, time_note  # noqa: E402
from packproof import (HEX64, check_consistency, check_entries, hash_hex, node, proof_line,  # noqa: E402,F401
                       run_chain, verify_consistency, verify_inclusion)

FILES = {"checkpoint", "entries.jsonl", "ledger.vkey", "manifest.json", "manifest.sig",
         "outcomes.json", "proofs.jsonl", "multiproof.txt", "report.html", "consistency.json", "checkpoint-time",
         "run-head.json", "team-window.json", "redactions.jsonl", "retention.jsonl", "retention-policy.txt"}
# The files whose presence the manifest's format or scope decides: the
# proof of inclusion (inclusion_file()), those of the flags and notes, the
# redactions of a pack's erased entries (format 8), and the retention entry
# and policy of a run pack from a seq (format 9).
OPTIONAL = {"proofs.jsonl", "multiproof.txt", "consistency.json", "checkpoint-time", "run-head.json",
            "team-window.json", "redactions.jsonl", "retention.jsonl", "retention-policy.txt"}
MAX_FILE = 4 << 30


def read_pack(path):
    """{file name: bytes} of the pack, read strictly (packread.read_pack)."""
    return packread.read_pack(path, FILES, MAX_FILE)


def verify(pack_path, vkey, trust_pack_key=False, since=None, expect_scope=None, not_older_than=None, policy=None,
           expect_grace_ms=None, shown_progress=None, keys=None, tsa=None):
    """Raises Failure naming the first item that does not hold. vkey is the
    ledger's key line; None with trust_pack_key to trust the pack's own, or
    with a policy to take the policy's log named as the manifest's origin.
    since: the auditor's earlier checkpoint (a signed note, bytes): the pack
    must prove consistency from exactly it. expect_scope: the scope asked
    for (expected_scope()). not_older_than: a size, or a signed checkpoint
    (bytes) the pack's checkpoint must be at least as large as, with its
    root at that very size. policy: a tlogpolicy.Policy the checkpoint
    must meet ("Witnessed packs", CONTRACT.md section 7), and the
    checkpoint-time note too when it names monitors ("Monitored packs").
    expect_grace_ms: the unknown_grace_ms the auditor knows the ledger runs
    with.
    shown_progress: the progress.Progress of the entries' check, or None.
    keys: a keyset.KeySet (--key-set, --key-history; vkey is then None):
    every note is checked against the key it trusts at the size the note
    is about (CONTRACT.md section 5d, "Which key a pack is checked
    against"), ledger.vkey is the key trusted at the pack's tree size.
    tsa: timestamp.options()'s (roots, bound), or None not to check a stamp."""
    files = read_pack(pack_path)
    vkey, key, manifest = signed_files(files, vkey, trust_pack_key, policy, keys)
    if expect_grace_ms is not None:
        check_grace(manifest, expect_grace_ms)
    origin, size, root, cosigned = pack_checkpoint(files, key, vkey, manifest, policy, keys)
    scope = manifest["scope"]
    if expect_scope is not None:
        check_scope(scope, expect_scope)
    since, kept = given_checkpoints(files, key, size, root, since, not_older_than, keys)
    consistent = check_consistency(files, key, origin, size, root, since, keys)
    note = time_note(files, manifest, key, origin, size, root, kept, keys)
    stamped = timestamp.pack_line(files.get("checkpoint-time"), note[0], tsa)
    monitored = None
    if policy is not None and policy.monitors:
        monitored = mapcosign.check_monitored(policy, files.get("checkpoint-time"), key)
    signed_at, runs_root, teams_root, version = note
    run_head = completeness.run_head_proof(files, manifest, runs_root, RUN_KEYS.get(version))
    window = teamwindow.presence(files, scope, teams_root)
    entries = entries_in_progress(files, manifest, size, root, shown_progress or progress.Progress(None))
    epochs = leader_epochs(entries.parsed)
    rotations = keyset.pack_rotations(entries.parsed, origin)  # CONTRACT.md section 5d
    check_time_against(note, entries, cosigned)
    complete, unsettled = None, []
    steps = packsteps.steps(entries.parsed) if scope["kind"] == "run" else []
    if run_head is not None:
        complete = completeness.check_entries(run_head, scope["team"], scope["run_id"], size, entries.run,
                                              entries.pruned)
        unsettled = completeness.unsettled_steps(steps, size)
    if window is not None:
        complete = teamwindow.check(window, scope, size, root, teams_root, entries.team, verify_inclusion)
    if not isinstance(packread.load_json(files["outcomes.json"], "outcomes.json"), dict):
        raise Failure("outcomes.json: want a JSON object")
    if signed_at is not None and scope["kind"] == "run":  # only a run pack holds its steps' every entry
        check_deadlines(steps, manifest["unknown_grace_ms"], signed_at)
    return {"entries": entries.count, "origin": origin, "tree_size": size, "root": root, "scope": scope,
            "consistent": consistent, "signed_at": signed_at, "complete": complete, "unsettled": unsettled,
            "witnessed": None if policy is None else tlogpolicy.witnessed_line(policy, cosigned),
            "monitored": None if monitored is None else mapcosign.monitored_line(policy, monitored),
            "leader_epochs": epochs, "key_rotations": rotations,
            "keys": None if keys is None else keys_line(keys, size), "time_stamp": stamped,
            "redactions": [] if entries.held is None else entries.held.printed()}


def keys_line(keys, size):
    """The line that says which key the pack was checked against, and what
    the key set (after the key history) trusts."""
    followed = ""
    if keys.followed:
        followed = " (the key history's rotation%s at seq %s followed)" % (
            "s" if len(keys.followed) > 1 else "", ", ".join(str(s) for s in keys.followed))
    return "keys: the pack's notes checked against %s, the key trusted at tree size %d; the key set trusts %s%s." % (
        keys.key_at(size).ident(), size, keys.described(), followed)


def entries_in_progress(files, manifest, size, root, shown_progress):
    """check_entries() while shown_progress counts them against the
    manifest's counts.entries; its line erased before this returns or
    raises."""
    shown_progress.begin(manifest["counts"]["entries"])
    try:
        return check_entries(files, manifest, size, root, shown_progress.tick)
    finally:
        shown_progress.end()


def leader_epochs(parsed):
    """The leader_epoch entries among the parsed leaves (CONTRACT.md section
    3, "Leader epochs"), each the ledger's, first of its epoch (its seq is its
    previous_size), epochs rising: the lines that say so."""
    lines, last = [], None
    for entry in parsed:
        r = entry["receipt"]
        if r.get("kind") != "leader_epoch":
            continue
        seq = entry["seq"]
        if entry["emitter"] != "ledger":
            raise Failure("entries.jsonl seq %d: leader_epoch: emitter '%s': the ledger's only" % (seq, entry["emitter"]))
        if r.get("previous_size") != seq:
            raise Failure("entries.jsonl seq %d: leader_epoch: previous_size %s is not its seq: an epoch begins with "
                          "its leader_epoch entry" % (seq, r.get("previous_size")))
        if last is not None and r["epoch"] <= last[0]:
            raise Failure("entries.jsonl seq %d: leader_epoch: epoch %d after epoch %d at seq %d: epochs only rise"
                          % (seq, r["epoch"], last[0], last[1]))
        last = (r["epoch"], seq)
        lines.append("leader epoch %d: node %s leads from seq %d, over the tree of size %d with root %s."
                     % (r["epoch"], r["node"], seq, seq, r["previous_root"]))
    return lines


def pack_key_line(files):
    """The key line of ledger.vkey: exactly one line, ended by one LF."""
    data = files["ledger.vkey"]
    if data.count(b"\n") != 1 or not data.endswith(b"\n") or b"\r" in data:
        raise Failure("ledger.vkey: want one line ending in a newline")
    try:
        return data[:-1].decode("utf-8")
    except UnicodeDecodeError:
        raise Failure("ledger.vkey: not UTF-8")


def key_name(name, key_id):
    """A key as signature lines and verifier keys name it: NAME+ID (8 hex digits)."""
    return "%s+%s" % (name, key_id.hex())


def other_signer(note, key, which):
    """Failure naming both keys when no signature line of manifest.sig (a note, bytes) is by `key` (parse_vkey),
    the key verified with (`which` says whose)."""
    try:
        _, sigs = signature_lines(note)
    except Failure as e:
        raise Failure("manifest.sig: %s" % e)
    signers = [key_name(name, kid) for name, kid, _ in sigs]
    want = key_name(key[0], key[1])
    if want not in signers:
        raise Failure("manifest.sig: signed by %s, not by %s (%s)" % (", ".join(signers) or "no key", want, which))


def signed_files(files, vkey, trust_pack_key, policy, keys=None):
    """The files every pack has, the key (vkey; the pack's own with
    trust_pack_key; else the policy's log; with keys, the key it trusts at
    the pack's tree size) and ledger.vkey, manifest.sig over manifest.json,
    the manifest's grammar and every file's digest. Returns (vkey, key,
    manifest)."""
    for name in sorted(FILES - OPTIONAL):
        if name not in files:
            raise Failure("%s: missing" % name)
    in_pack = pack_key_line(files)
    which = "the key given"
    if keys is not None:
        vkey, key = key_of_size(files, keys, in_pack)
    else:
        if trust_pack_key:
            vkey, which = in_pack, "the pack's own key, ledger.vkey"
        elif vkey is None:
            vkey, which = policy_log(policy, files), "the policy's log"
        key = parse_vkey(vkey)
        other_signer(files["manifest.sig"], key, which)
        if in_pack != vkey.strip():
            raise Failure("ledger.vkey: not the key given")
    digest = hashlib.sha256(files["manifest.json"]).hexdigest()
    try:
        signed = open_note(files["manifest.sig"], key)
    except Failure as e:
        raise Failure("manifest.sig: %s" % e)
    if signed != digest + "\n":
        raise Failure("manifest.json: SHA-256 %s is not the one signed" % digest)
    manifest = parse_manifest(files["manifest.json"])
    inclusion_file(files, manifest["format"])
    redactions.presence(files, manifest["format"])
    retention.presence(files, manifest["format"])
    check_files(files, manifest)
    return vkey, key, manifest


def key_of_size(files, keys, in_pack):
    """With a key set (keys, keyset.KeySet): the key trusted at the pack's
    tree size (the manifest's, read before its signature is checked: the
    size decides the key), manifest.sig signed by that key and ledger.vkey
    that key's line. Returns (its line, packnote.parse_vkey()'s tuple)."""
    size = parse_manifest(files["manifest.json"])["tree_size"]
    try:
        keys.open(files["manifest.sig"], size)
    except Failure as e:
        raise Failure("manifest.sig: %s" % e)
    trusted = keys.key_at(size)
    if in_pack != trusted.line:
        raise Failure("ledger.vkey: not %s, the key trusted at the pack's tree size %d"
                      % (shown(trusted.ident()), size))
    return trusted.line, trusted.as_tuple()


def inclusion_file(files, pack_format):
    """The file that proves the entries' inclusion: proofs.jsonl in a pack
    of format 1 to 5, multiproof.txt in one of format 6 or later, never the
    other."""
    if pack_format >= 6:
        if "proofs.jsonl" in files:
            raise Failure("proofs.jsonl: a pack of format 6 proves inclusion with multiproof.txt")
        if "multiproof.txt" not in files:
            raise Failure("multiproof.txt: missing")
    else:
        if "multiproof.txt" in files:
            raise Failure("multiproof.txt: only a pack of format 6 carries a multiproof")
        if "proofs.jsonl" not in files:
            raise Failure("proofs.jsonl: missing")


def check_grace(manifest, expect_grace_ms):
    """--expect-grace-ms: the manifest states the grace the auditor knows."""
    grace = manifest.get("unknown_grace_ms")
    if grace != expect_grace_ms:
        raise Failure("manifest.json: unknown_grace_ms: %s, the auditor expects %d (--expect-grace-ms)"
                      % ("none (a format 1 pack)" if grace is None else grace, expect_grace_ms))


def pack_checkpoint(files, key, vkey, manifest, policy, keys=None):
    """checkpoint: signed by the key (with keys, the key trusted at the
    pack's tree size; and with a policy, cosigned as it asks), of the key's
    and the manifest's origin, at the manifest's size and root. Returns
    (origin, size, root, witnessed()'s list or None without a policy)."""
    try:
        if keys is not None:
            cp = keys.open(files["checkpoint"], manifest["tree_size"])
        else:
            cp = open_note(files["checkpoint"], key)
        origin, size, root = checkpoint_body(cp)
    except Failure as e:
        raise Failure("checkpoint: %s" % e)
    cosigned = None if policy is None else witnessed(policy, vkey, cp, files["checkpoint"])
    if origin != manifest.get("origin") or origin != key[0]:
        raise Failure("checkpoint: origin '%s', manifest and key say '%s'"
                      % (shown(origin), shown(manifest.get("origin"))))
    if size != manifest["tree_size"] or root.hex() != manifest["root"]:
        raise Failure("checkpoint: size %d root %s, the manifest says size %s root %s"
                      % (size, root.hex(), manifest["tree_size"], manifest["root"]))
    return origin, size, root, cosigned


def policy_log(policy, files):
    """The key line of the policy's log named as the manifest's origin (the
    one the pack's ledger.vkey names when several are); UsageError when the
    policy has none."""
    origin = parse_manifest(files["manifest.json"])["origin"]
    logs = policy.log_named(origin)
    if not logs:
        raise UsageError("--policy: no log of the policy is named %s" % shown(origin))
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


def check_deadlines(steps, grace_ms, signed_at):
    """A step the run's entries leave pending (packsteps.steps()) although
    its deadline (the start's logged_at_us + timeout + the manifest's grace)
    is before the signed time is a finding: an honest ledger declares it
    unknown before signing."""
    overdue = packsteps.first_overdue(steps, grace_ms, signed_at)
    if overdue is None:
        return
    step, deadline = overdue
    raise Failure("outcomes.json: step %s/%s/%s attempt %d is pending, but its deadline (start + timeout + the "
                  "manifest's unknown_grace_ms %d) %s is before the checkpoint's signed time %s: an honest ledger "
                  "declares it unknown before signing"
                  % (shown(step.team), shown(step.run_id), shown(step.step_id), step.attempt, grace_ms,
                     signed_time(deadline), signed_time(signed_at)))


def usage_error(message):
    say("verify_pack.py: %s" % message, sys.stderr)
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


def read_flag_file(flag, path):
    """The bytes of the file a flag names; a usage error when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        usage_error("%s: cannot read %s" % (flag, path))


def trusted_keys(args):
    """The keyset.KeySet of --key-set and --key-history (CONTRACT.md
    section 5d), or None without them: the set's keys, or the one key given
    (--vkey, --vkey-string, VKEY) trusted at every size, after the
    history's rotations are followed. A key set with another key given, or
    with --trust-pack-key, a history without a key to start from, a set or
    history refused: usage errors naming the flag."""
    if args.key_set is None and args.key_history is None:
        return None
    flags = [f for f in ("--key-set", "--key-history") if getattr(args, f[2:].replace("-", "_")) is not None]
    if args.trust_pack_key:
        usage_error("verify: --trust-pack-key with %s: the keys trusted are the auditor's, not the pack's"
                    % " and ".join(flags))
    given = [f for f, v in (("--vkey", args.vkey), ("--vkey-string", args.vkey_string), ("VKEY", args.key))
             if v is not None]
    if args.key_set is not None:
        if given:
            usage_error("verify: give one of --key-set, %s" % ", ".join(given))
        try:
            keys = keyset.parse(read_flag_file("--key-set", args.key_set))
        except Failure as e:
            usage_error("--key-set %s: %s" % (args.key_set, e))
    else:
        if not given:
            usage_error("verify: --key-history needs the key the history starts from: --vkey FILE, --vkey-string S "
                        "or --key-set FILE")
        line = key_argument(args)
        try:
            keys = keyset.single(line)
        except Failure as e:
            usage_error("%s: %s" % (given[0], e))
    if args.key_history is not None:
        try:
            keys = keys.follow(read_flag_file("--key-history", args.key_history))
        except Failure as e:
            usage_error("--key-history %s: %s" % (args.key_history, e))
    return keys


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
    parser.add_argument("--expect-grace-ms")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("--key-set")
    parser.add_argument("--key-history")
    parser.add_argument("--tsa-root")
    parser.add_argument("--tsa-max-delay")
    args = parser.parse_args()
    keys = trusted_keys(args)
    vkey = key_argument(args) if keys is None else None
    try:
        tsa = timestamp.options(args.tsa_root, args.tsa_max_delay)
    except UsageError as e:
        usage_error(e)
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
    grace = None
    if args.expect_grace_ms is not None:
        try:
            grace = packread.decimal(args.expect_grace_ms, "--expect-grace-ms")
        except Failure as e:
            usage_error(e)
    not_older = None
    if args.not_older_than is not None:
        if re.fullmatch(r"[0-9]+", args.not_older_than):
            not_older = int(args.not_older_than)
        elif vkey is None and policy is None and keys is None:
            usage_error("verify: --not-older-than CHECKPOINT needs the ledger's key (--vkey or --vkey-string)")
        else:
            try:
                with open(args.not_older_than, "rb") as f:
                    not_older = f.read()
            except OSError:
                usage_error("--not-older-than: neither a size nor a readable file: %s" % args.not_older_than)
    try:
        with open(args.pack, "rb"):
            pass
    except OSError as e:
        say("verify_pack.py: cannot read the pack %s: %s" % (args.pack, e.strerror), sys.stderr)
        return 3
    if args.trust_pack_key:
        print("WARNING: --trust-pack-key: the key inside the pack was trusted; this result proves nothing "
              "about the ledger's identity. Compare the pack's ledger.vkey with the ledger operator's "
              "published key.")
    try:
        r = verify(args.pack, vkey, trust_pack_key=args.trust_pack_key, since=since, expect_scope=expect,
                   not_older_than=not_older, policy=policy, expect_grace_ms=grace,
                   shown_progress=progress.for_stderr(sys.stderr, args.no_progress), keys=keys, tsa=tsa)
    except UsageError as e:
        usage_error(e)
    except (Failure, ValueError, KeyError, TypeError, OSError, tarfile.TarError) as e:
        say("FAILED: %s" % e)
        return 1
    for line in result_lines(r):
        say(line)
    return 0


def say(line, stream=None):
    """Prints a line whose values come from a pack, escaped (packread.shown)."""
    print(shown(line), file=stream or sys.stdout)


def result_lines(r):
    """The lines verify()'s result r is printed as: the OK line, then what
    the pack proves besides."""
    when = (", signed at " + signed_time(r["signed_at"]) if r["signed_at"] is not None
            else ", signing time: not stated (checkpoint signed before the ledger signed times)")
    lines = ["OK: %d entries of %s verified against the checkpoint of %s at tree size %d, root %s%s."
             % (r["entries"], scope_text(r["scope"]), r["origin"], r["tree_size"], r["root"].hex(), when)]
    if r["witnessed"] is not None:
        lines.append(r["witnessed"])
    if r["monitored"] is not None:
        lines.append(r["monitored"])
    if r["consistent"] is not None:
        size, root, given = r["consistent"]
        lines.append("The checkpoint is consistent with the earlier one at size %d, root %s%s."
                     % (size, root.hex(), " (the one given with --since)" if given else ""))
    if r["complete"] is not None:
        lines.append("%s." % r["complete"])
        lines += r["unsettled"]
    lines += r.get("leader_epochs", [])
    lines += r.get("key_rotations", [])
    if r.get("keys") is not None:
        lines.append(r["keys"])
    if r.get("time_stamp") is not None:
        lines.append(r["time_stamp"])
    lines += r.get("redactions", [])
    return lines


if __name__ == "__main__":
    sys.exit(main())
