"""The checkpoints an auditor gives and the pack's signed time (CONTRACT.md
section 7, "The signed time", and "Proven completeness" step 1), with the
standard library and `cryptography` only: --since and --not-older-than
against the pack's checkpoint, with the time notes kept with them;
checkpoint-time required from format 2, of the version the format says,
naming the pack's checkpoint, not older nor of a lower version than a kept
note; and the signed time against the pack's entries and its witnesses'
cosignatures.

Every failure is a packerror.Failure naming the file; a checkpoint given
that cannot be read, a packerror.UsageError.
"""
from packerror import Failure, UsageError
from packnote import RUN_KEYS, checkpoint_time, kept_checkpoint, signed_time
from packread import shown


def given_checkpoints(files, key, size, root, since, not_older_than, keys=None):
    """--not-older-than and --since (verify()'s arguments) against the pack's
    checkpoint (size, root); with keys, each checkpoint given opened with the
    key trusted at its own size. Returns since as (origin, size, root) or
    None, and by flag the checkpoint-time note kept with the checkpoint
    given (packnote.kept_checkpoint()'s, None without one)."""
    kept = {"--since": None, "--not-older-than": None}  # the time notes the auditor kept

    def kept_of(data):
        return kept_checkpoint(data, key) if keys is None else keys.kept_checkpoint(data)

    if not_older_than is not None:
        want_root = None
        if isinstance(not_older_than, bytes):
            try:
                _, not_older_than, want_root, kept["--not-older-than"] = kept_of(not_older_than)
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
            since = kept_of(since)
        except (Failure, ValueError) as e:
            raise UsageError("--since: %s" % e)
        kept["--since"] = since[3]
        since = since[:3]
    return since, kept


# The version of the checkpoint-time note of a pack, by format: F - 1 up
# to format 5; format 6 changes the proofs, format 7 the report, format 8
# adds erased entries, format 9 a run pack from a seq, not the note.
NOTE_VERSION = {2: 1, 3: 2, 4: 3, 5: 4, 6: 4, 7: 4, 8: 4, 9: 4}
# What a note of a lower version than its pack's format lacks, by format
# ("Proven completeness", step 1).
LOWER_NOTE = {3: "a format 3 pack carries a version 2 note (with the run-head map root)",
              4: "a format 4 pack carries a version 3 note (with the team-head map root)",
              5: "a format 5 pack carries a version 4 note (with run keys of version 2)",
              6: "a format 6 pack carries a version 4 note (with run keys of version 2)",
              7: "a format 7 pack carries a version 4 note (with run keys of version 2)",
              8: "a format 8 pack carries a version 4 note (with run keys of version 2)",
              9: "a format 9 pack carries a version 4 note (with run keys of version 2)"}


def note_version(manifest, version):
    """The note's version against the manifest's format (NOTE_VERSION)."""
    f = manifest["format"]
    want = NOTE_VERSION[f]
    if version < want and f in LOWER_NOTE:
        raise Failure("checkpoint-time: " + LOWER_NOTE[f])
    if version != want:
        raise Failure("checkpoint-time: format %d pack with a version %d note: a format %d pack carries a version %d "
                      "note" % (f, version, f, want))


def time_note(files, manifest, key, origin, size, root, kept, keys=None):
    """checkpoint-time: in a format 2 pack or later required, of the version
    the format says, and refused in a format 1 pack; signed by the key (with
    keys, the key trusted at the pack's tree size),
    naming the pack's checkpoint, not older than, nor of a lower version
    than, a time note kept with --since or --not-older-than, and of the
    same map roots as a kept note of the same tree size. Returns (time,
    runs root, teams root, version), all None without the note."""
    t = None
    if "checkpoint-time" not in files:
        if manifest["format"] >= 2:
            raise Failure("checkpoint-time: missing: a format 2 pack carries its checkpoint's time note")
    elif manifest["format"] < 2:
        raise Failure("checkpoint-time: a format 1 pack carries no time note")
    else:
        try:
            if keys is not None:
                keys.open(files["checkpoint-time"], size)
            t = checkpoint_time(files["checkpoint-time"], key)
        except Failure as e:
            raise Failure("checkpoint-time: %s" % e)
        if t[:3] != (origin, size, root):
            raise Failure("checkpoint-time: names the checkpoint of %s at size %d root %s, the pack's is size %d root %s"
                          % (shown(t[0]), t[1], t[2].hex(), size, root.hex()))
        note_version(manifest, t[6])
    for flag in ("--since", "--not-older-than"):
        if kept[flag] is not None:
            against_kept(t, kept[flag], flag)
    if t is None:
        return None, None, None, None
    return t[3], t[4], t[5], t[6]


# What a ledger that signed a note of each version signs with every later
# checkpoint ("The signed time").
KEPT_VERSION = {2: "a ledger that signs the run-head map root signs it with every later checkpoint",
                3: "a ledger that signs the team-head map root signs it with every later checkpoint",
                4: "a ledger that keys runs by team does so with every later checkpoint"}


def against_kept(t, k, flag):
    """The pack's time note t (checkpoint_time()'s tuple, or None) against
    the note k kept with the checkpoint given with flag
    (kept_checkpoint()'s): stated, not earlier, not of a lower version, and
    at the same tree size signing the same map roots (the runs roots only
    when both notes key runs alike: a ledger that starts keying runs by
    team signs its latest checkpoint again with a version 4 note)."""
    if t is None:
        raise Failure("checkpoint-time: missing: the checkpoint given with %s has a signed time, so every later "
                      "checkpoint has one" % flag)
    if t[3] < k[3]:
        raise Failure("checkpoint-time: time %s is before %s, the time of the checkpoint given with %s "
                      "(times never go backwards)" % (signed_time(t[3]), signed_time(k[3]), flag))
    if k[6] > t[6]:
        raise Failure("checkpoint-time: a version %d note, but the checkpoint given with %s has a version %d note: %s"
                      % (t[6], flag, k[6], KEPT_VERSION[k[6]]))
    if k[1] != t[1]:
        return
    for at, name in ((4, "runs"), (5, "teams")):
        if name == "runs" and RUN_KEYS.get(k[6]) != RUN_KEYS.get(t[6]):
            continue
        if k[at] is not None and k[at] != t[at]:
            raise Failure("checkpoint-time: %s root %s at tree size %d, the note kept with the checkpoint given with "
                          "%s signs %s at that size" % (name, t[at].hex(), t[1], flag, k[at].hex()))


def check_time_against(note, entries, cosigned):
    """The signed time against what the pack holds: not before the latest
    logged_at_us of its emitters' entries, not after a witness's cosignature time (in
    seconds) on the checkpoint; and a pack holding version 2 leaves carries
    a note of version 3 or later (a ledger that keeps team chains signs the
    team-head map root)."""
    signed_at, version = note[0], note[3]
    if entries.first_v2 is not None and (version or 0) < 3:
        raise Failure("checkpoint-time: %s, but entries.jsonl holds a leaf of version 2 (seq %d): a ledger that "
                      "writes version 2 leaves signs version 3 notes"
                      % ("missing" if version is None else "a version %d note" % version, entries.first_v2))
    if signed_at is None:
        return
    if entries.last_logged is not None and signed_at < entries.last_logged[1]:
        seq, logged = entries.last_logged
        raise Failure("checkpoint-time: time %s is before entry %d's logged_at_us %s: the ledger signs a checkpoint "
                      "after it logs its entries" % (signed_time(signed_at), seq, signed_time(logged)))
    for name, when in cosigned or []:
        if signed_at // 1000000 > when:
            raise Failure("checkpoint-time: time %s is after the cosignature time %d of witness %s: a witness "
                          "cosigns a checkpoint after the ledger signed it" % (signed_time(signed_at), when, shown(name)))
