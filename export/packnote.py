"""Signed notes, keys and checkpoint times (CONTRACT.md section 5), with the
standard library and `cryptography` only: a verifier key line read and its
key id checked, a signed note opened with the key, a checkpoint and its
checkpoint-time note (version 1, 2 or 3) read, and a checkpoint the auditor
kept (--since, --not-older-than), followed or not by its time note.

Every failure is a packerror.Failure.
"""
import base64
import datetime
import hashlib
import re

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from packerror import Failure

TIME_HEADERS = {"evidence-ledger/checkpoint-time/v%d" % v: v for v in (1, 2, 3)}


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
