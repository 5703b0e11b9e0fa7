"""Signed notes, keys and checkpoint times (CONTRACT.md section 5), with the
standard library and `cryptography` only: a verifier key line read and its
key id checked, a signed note opened with the key, a checkpoint and its
checkpoint-time note (version 1, 2, 3 or 4) read, and a checkpoint the
auditor kept (--since, --not-older-than), followed or not by its time note.

Every failure is a packerror.Failure.
"""
import base64
import datetime
import hashlib
import re

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from packerror import Failure
from packread import canonical_base64, decimal, shown

DECIMAL = re.compile(r"0|[1-9][0-9]*")

TIME_HEADERS = {"evidence-ledger/checkpoint-time/v%d" % v: v for v in (1, 2, 3, 4)}

# The lines of a checkpoint-time note of each version (section 5): version 4
# has those of version 3; its header says that its runs root is the map
# under run keys of version 2.
TIME_LINES = {1: 5, 2: 6, 3: 7, 4: 7}

# The version of the run keys of the map whose root a note of each version
# signs in its runs line (section 6a, "Which run key").
RUN_KEYS = {2: 1, 3: 1, 4: 2}


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


def signature_lines(note):
    """(text, [(key name, key hash, signature)]) of a signed note (bytes)
    read strictly (c2sp.org/signed-note, CONTRACT.md section 7, "Reading a
    pack strictly"): the text up to the last blank line, then lines
    `— NAME BASE64`, each ended by a newline, NAME neither empty nor holding
    '+' or a space, BASE64 canonical and of at least 5 bytes."""
    if not note.endswith(b"\n"):
        raise Failure("the note does not end in a newline")
    split = note.rfind(b"\n\n")
    if split < 0:
        raise Failure("no signature block")
    text, block = note[:split + 1], note[split + 2:]
    try:
        lines = block.decode("utf-8").split("\n")[:-1]
    except UnicodeDecodeError:
        raise Failure("the signature block is not UTF-8")
    sigs = []
    for n, line in enumerate(lines, 1):
        name, sep, b64 = line[2:].partition(" ")
        raw = canonical_base64(b64)
        if (not line.startswith("\u2014 ") or not sep or not name or "+" in name or any(c.isspace() for c in name)
                or raw is None or len(raw) < 5):
            raise Failure("signature line %d: malformed" % n)
        sigs.append((name, raw[:4], raw[4:]))
    return text, sigs


def open_note(note, key):
    """The text of a note signed once by the key (parse_vkey); Failure
    otherwise. Lines of other keys are not checked here."""
    name, key_id, public = key
    text, sigs = signature_lines(note)
    own = [sig for signer, kid, sig in sigs if signer == name and kid == key_id]
    if len(own) > 1:
        raise Failure("signed twice by the ledger's key")
    if not own:
        raise Failure("no signature by %s" % shown(name))
    try:
        public.verify(own[0], text)
    except InvalidSignature:
        raise Failure("signature by %s does not verify" % shown(name))
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError:
        raise Failure("the note's text is not UTF-8")


def checkpoint_body(text):
    """(origin, size, root) of a checkpoint's text: exactly its three lines,
    the size a decimal number, the root canonical base64 of 32 bytes."""
    lines = text.split("\n")
    if len(lines) != 4 or lines[3] != "":
        raise Failure("want exactly three lines (origin, tree size, root), found %d" % (len(lines) - 1))
    if not lines[0]:
        raise Failure("origin: empty")
    size = decimal(lines[1], "tree size")
    root = base64_hash(lines[2])
    if root is None:
        raise Failure("root: want standard base64 of 32 bytes, found '%s'" % shown(lines[2]))
    return lines[0], size, root


def checkpoint_of(note, key):
    """(origin, size, root) of a signed checkpoint note."""
    return checkpoint_body(open_note(note, key))


def base64_hash(text):
    """The 32 bytes of a hash written in canonical standard base64, or None."""
    raw = canonical_base64(text)
    return raw if raw is not None and len(raw) == 32 else None


def checkpoint_time(note, key):
    """(origin, size, root, time_us, runs, teams, version) of a signed
    checkpoint-time note (CONTRACT.md section 5); runs, the run-head map
    root, is None in a version 1 note, teams, the team-head map root, below
    version 3."""
    lines = open_note(note, key).split("\n")
    version = TIME_HEADERS.get(lines[0])
    if version is None or len(lines) != 1 + TIME_LINES[version] or lines[-1] != "":
        raise Failure("checkpoint time: want exactly five lines: 'evidence-ledger/checkpoint-time/v1', origin, size, "
                      "root, time; six: 'evidence-ledger/checkpoint-time/v2', origin, size, root, runs, time; or "
                      "seven: 'evidence-ledger/checkpoint-time/v3' or '/v4', origin, size, root, runs, teams, time")
    decimal(lines[2], "checkpoint time: tree size")
    root = base64_hash(lines[3])
    if root is None:
        raise Failure("checkpoint time: the root is not a base64 SHA-256 hash")
    runs = teams = None
    if version >= 2:
        runs = base64_hash(lines[4][5:]) if lines[4].startswith("runs ") else None
        if runs is None:
            raise Failure("checkpoint time: the fifth line must be 'runs ' and the run-head map root in base64")
    if version >= 3:
        teams = base64_hash(lines[5][6:]) if lines[5].startswith("teams ") else None
        if teams is None:
            raise Failure("checkpoint time: the sixth line must be 'teams ' and the team-head map root in base64")
    last = lines[-2]
    if not last.startswith("time ") or not DECIMAL.fullmatch(last[5:]) or int(last[5:]) >= 1 << 63:
        raise Failure("checkpoint time: the last line must be 'time ' and microseconds since the Unix epoch, "
                      "without leading zeros")
    return lines[1], int(lines[2]), root, int(last[5:]), runs, teams, version


def split_kept(data):
    """(checkpoint, time note or None) of a file holding a signed checkpoint,
    optionally followed by its checkpoint-time note (of any version): the
    note starts at the first line that is a checkpoint-time header."""
    at = 0
    for line in data.split(b"\n")[:-1]:
        if line.decode("utf-8", "replace") in TIME_HEADERS:
            return data[:at], data[at:]
        at += len(line) + 1
    return data, None


def kept_checkpoint(data, key):
    """(origin, size, root, time note) of a kept checkpoint file; the time
    note is None, or checkpoint_time()'s tuple (origin, size, root, time_us,
    runs, teams, version)."""
    cp, time_note = split_kept(data)
    origin, size, root = checkpoint_of(cp, key)
    if time_note is None:
        return origin, size, root, None
    try:
        t = checkpoint_time(time_note, key)
    except Failure as e:
        raise Failure("time note: %s" % e)
    if t[:3] != (origin, size, root):
        raise Failure("time note: not the time note of the checkpoint before it")
    return origin, size, root, t


def signed_time(us):
    """UTC, ISO 8601 with microseconds and 'Z', then the microseconds."""
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=us)
    return "%s (%d us)" % (t.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), us)
