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
import hashlib
import json
import os
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import completeness  # noqa: E402
import teamwindow  # noqa: E402
import tlogpolicy  # noqa: E402
# What moved to packnote.py, packproof.py and packmanifest.py keeps its name
# here too: tests load verify_pack.py for parse_vkey, open_note,
# checkpoint_time, verify_inclusion, verify_consistency and Failure.
from packerror import Failure, UsageError  # noqa: E402
from packmanifest import (RFC3339, check_files, check_scope, expected_scope, parse_manifest,  # noqa: E402,F401
                          scope_text)
from packnote import (TIME_HEADERS, base64_hash, checkpoint_of, checkpoint_time, kept_checkpoint,  # noqa: E402,F401
                      open_note, parse_vkey, signed_time, split_kept)
from packproof import (HEX64, check_consistency, check_entries, hash_hex, node, proof_line,  # noqa: E402,F401
                       run_chain, verify_consistency, verify_inclusion)

FILES = {"checkpoint", "entries.jsonl", "ledger.vkey", "manifest.json", "manifest.sig",
         "outcomes.json", "proofs.jsonl", "report.html", "consistency.json", "checkpoint-time", "run-head.json",
         "team-window.json"}
OPTIONAL = {"consistency.json", "checkpoint-time", "run-head.json", "team-window.json"}
MAX_FILE = 4 << 30


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
    vkey, key, manifest = signed_files(files, vkey, trust_pack_key, policy)
    origin, size, root, cosigned = pack_checkpoint(files, key, vkey, manifest, policy)
    scope = manifest["scope"]
    if expect_scope is not None:
        check_scope(scope, expect_scope)
    since, kept_times, kept_versions = given_checkpoints(files, key, size, root, since, not_older_than)
    consistent = check_consistency(files, key, origin, size, root, since)
    signed_at, runs_root, teams_root = time_note(files, manifest, key, origin, size, root, kept_times, kept_versions)
    try:
        run_head = completeness.run_head_proof(files, manifest, runs_root, teams_root)
        window = teamwindow.presence(files, scope, teams_root)
    except completeness.Failure as e:
        raise Failure(str(e))
    entries, of_run, of_team = check_entries(files, manifest, size, root)
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
    return {"entries": entries, "origin": origin, "tree_size": size, "root": root, "scope": scope,
            "consistent": consistent, "signed_at": signed_at, "complete": complete, "unsettled": unsettled,
            "witnessed": None if policy is None else tlogpolicy.witnessed_line(policy, cosigned)}


def signed_files(files, vkey, trust_pack_key, policy):
    """The files every pack has, the key (vkey; the pack's own with
    trust_pack_key; else the policy's log) and ledger.vkey, manifest.sig
    over manifest.json, the manifest's grammar and every file's digest.
    Returns (vkey, key, manifest)."""
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
    check_files(files, manifest)
    return vkey, key, manifest


def pack_checkpoint(files, key, vkey, manifest, policy):
    """checkpoint: signed by the key (and with a policy, cosigned as it asks),
    of the key's and the manifest's origin, at the manifest's size and root.
    Returns (origin, size, root, witnessed()'s list or None without a policy)."""
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
    return origin, size, root, cosigned


def given_checkpoints(files, key, size, root, since, not_older_than):
    """--not-older-than and --since (verify()'s arguments) against the pack's
    checkpoint (size, root); with --since and no consistency.json, the pack's
    checkpoint must be the one given. Returns since as (origin, size, root)
    or None, and by flag the time kept with the checkpoint given (None
    without one) and the version of its time note."""
    kept_times = {"--since": None, "--not-older-than": None}  # the times the auditor kept
    kept_versions = {}  # flag -> the version of the time note kept with it
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
    return since, kept_times, kept_versions


def time_note(files, manifest, key, origin, size, root, kept_times, kept_versions):
    """checkpoint-time: in a format 2 pack or later required, and refused in a
    format 1 pack; signed by the key, naming the pack's checkpoint, not older
    than, nor of a lower version than, a time note kept with --since or
    --not-older-than. Returns (time, runs root, teams root), each None
    without the note or below its version."""
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
    return signed_at, runs_root, teams_root


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
