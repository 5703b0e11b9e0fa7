#!/usr/bin/env python3
"""Map cosignatures (CONTRACT.md section 5c, docs/contract/monitors.md) and
the checks of a monitored pack (section 7, "Monitored packs"), with the
standard library and `cryptography` only, written from the contract's text,
not from the ledger's code nor from the vectors' generator. tlogpolicy.py
reads monitor keys and a policy's `monitor` and `monitor-quorum` lines.

- parse_monitor_key_file() reads a monitor's key file, for tools and tests;
  cosignature_line() makes a monitor's line with its seed.
- open_time_note() opens a checkpoint-time note with the ledger's key
  (packnote.py's strict reading of section 5); map_cosignature_time() reads
  one monitor's map cosignature on it under every rule of "Reading one": its
  time, None when the monitor has no line, MapCosignatureError otherwise.
- check_monitored() makes the checks of "Monitored packs" under a policy
  naming monitors: the pack carries its time note, each policy monitor's
  line holds (PERMISSION_DENIED naming it otherwise) and the monitors with
  a valid line meet the monitor-quorum (FAILED_PRECONDITION naming those
  that did not cosign otherwise); monitored_line() is the line printed then.

The refusals are worded as section 7 words them: a map cosignature's start
with `map cosignature: `, a policy monitor's are `checkpoint-time: monitor
M: ` and those, the monitor-quorum's is `checkpoint-time: the policy's
monitor-quorum K of N is not met: ...`. Nothing here does I/O. Tests:
mapcosign_test.py; with packs, tests/policy_pack_test.py.
"""
import base64
import struct

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

import packnote
import tlogpolicy
from packerror import Failure

# The first line of the signed message: the monitor key's identifier.
HEADER = tlogpolicy.TYPE_MONITOR[1:] + b"\n"
# key ID || u64 big-endian time || Ed25519 signature.
COSIGNATURE_BYTES = 4 + 8 + 64
MAX_TIME = (1 << 63) - 1
# The only version of checkpoint-time note monitors cosign.
COSIGNED_VERSION = 4


class MapCosignatureError(Failure):
    """A map cosignature, or a time note under a policy naming monitors, that
    does not hold: a packerror.Failure (verify_pack.py exits 1). code: the
    status section 5c gives (PERMISSION_DENIED for a policy monitor's line
    that does not hold, FAILED_PRECONDITION for a monitor-quorum not met,
    INVALID_ARGUMENT for a note that cannot be read)."""

    def __init__(self, message, code="PERMISSION_DENIED"):
        super().__init__(message)
        self.code = code


def parse_monitor_key_file(text):
    """(tlogpolicy.Key, 32-byte Ed25519 seed) of a monitor's key file
    `PRIVATE+KEY+<name>+<key ID>+<base64(type || seed)>`; ValueError
    ("monitor key file: ...") saying which rule it breaks."""
    parts = text.strip("\n").split("+", 4)
    if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"]:
        raise ValueError("monitor key file: want PRIVATE+KEY+NAME+ID+KEY")
    name, hex_id, data = parts[2:]
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        raw = b""
    if len(raw) != len(tlogpolicy.TYPE_MONITOR) + 32 or not raw.startswith(tlogpolicy.TYPE_MONITOR):
        raise ValueError("monitor key file: key data must be base64 of %s and a 32-byte seed"
                         % tlogpolicy.KEY_TYPES[tlogpolicy.TYPE_MONITOR])
    seed = raw[len(tlogpolicy.TYPE_MONITOR):]
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    vkey = "%s+%s+%s" % (name, hex_id, base64.b64encode(tlogpolicy.TYPE_MONITOR + public).decode())
    try:
        return tlogpolicy.parse_monitor_vkey(vkey), seed
    except ValueError as e:
        raise ValueError("monitor key file: %s" % e)


def signed_message(text, when):
    """The message a map cosignature signs: the header line, `time <time>`
    and the checkpoint-time note's text (bytes, final newline included, no
    signature line)."""
    return HEADER + b"time %d\n" % when + text


def cosignature_line(key, seed, text, when):
    """The signature line `— <name> <base64(key ID || time || signature)>\\n`
    a monitor with this key and seed appends to the note's text; for tests."""
    sig = Ed25519PrivateKey.from_private_bytes(seed).sign(signed_message(text, when))
    blob = key.key_id + struct.pack(">Q", when) + sig
    return ("\u2014 %s %s\n" % (key.name, base64.b64encode(blob).decode())).encode()


class TimeNote:
    """A checkpoint-time note the ledger's key opened: text (bytes, final
    newline included), sigs [(key name, 4-byte key ID, rest of the decoded
    signature)], origin, size, root, time_us, runs, teams, version."""

    def __init__(self, text, sigs, fields):
        self.text, self.sigs = text, sigs
        self.origin, self.size, self.root, self.time_us, self.runs, self.teams, self.version = fields

    def seconds(self):
        """The note's time in seconds: microseconds / 10^6, rounded down."""
        return self.time_us // 1000000


def open_time_note(note, log_key):
    """The TimeNote of a signed checkpoint-time note (bytes) of any version,
    its signature by the log's key (packnote.parse_vkey()'s tuple, or the
    verifier key's text) verified; MapCosignatureError (INVALID_ARGUMENT)
    with packnote's reason otherwise."""
    if isinstance(log_key, str):
        log_key = packnote.parse_vkey(log_key)
    try:
        fields = packnote.checkpoint_time(note, log_key)
        text, sigs = packnote.signature_lines(note)
    except Failure as e:
        raise MapCosignatureError("time note: %s" % e, "INVALID_ARGUMENT")
    return TimeNote(text, sigs, fields)


def map_cosignature_time(key, note):
    """The time of the map cosignature by the monitor `key` (tlogpolicy.Key) on
    `note` (TimeNote), or None when no line bears the monitor's key name and
    key ID (it did not cosign). Lines of other keys are ignored.
    MapCosignatureError in the order of section 5c's "Reading one", in the
    words of section 7 ("Monitored packs"): the monitor has more than one
    line (identical ones count each); the note is not of version 4; the
    line's base64 is not 76 bytes; its time is 0 or above 2^63-1; its time
    is before the note's own second; the signature does not verify over
    the signed message."""
    lines = [rest for name, kid, rest in note.sigs if (name, kid) == (key.name, key.key_id)]
    if not lines:
        return None
    if len(lines) > 1:
        raise MapCosignatureError("map cosignature: two lines by %s" % key.vkey_id())
    if note.version != COSIGNED_VERSION:
        raise MapCosignatureError("map cosignature: only a checkpoint-time note of version 4 is cosigned by monitors")
    rest = lines[0]
    if 4 + len(rest) != COSIGNATURE_BYTES:
        raise MapCosignatureError("map cosignature: length: want 76 bytes (key ID, time, signature), found %d"
                                  % (4 + len(rest)))
    (when,) = struct.unpack(">Q", rest[:8])
    if not 1 <= when <= MAX_TIME:
        raise MapCosignatureError("map cosignature: time %d: want 1 <= time <= 2^63-1" % when)
    if when < note.seconds():
        raise MapCosignatureError("map cosignature: time %d is before the note's time %d (seconds): a monitor cannot "
                                  "have cosigned a note before the ledger signed it" % (when, note.seconds()))
    try:
        Ed25519PublicKey.from_public_bytes(key.public).verify(rest[8:], signed_message(note.text, when))
    except InvalidSignature:
        raise MapCosignatureError("map cosignature: signature by %s does not verify" % key.vkey_id())
    return when


def verify(note, log_vkey, monitor_vkey):
    """map_cosignature_time() of a cosigned checkpoint-time note (bytes),
    given the ledger's and the monitor's verifier keys (text)."""
    return map_cosignature_time(tlogpolicy.parse_monitor_vkey(monitor_vkey), open_time_note(note, log_vkey))


def check_monitored(policy, note, log_key):
    """Steps 1 to 3 of "Monitored packs" (CONTRACT section 7) under a
    tlogpolicy.Policy naming monitors: [(monitor name, time)] of the
    monitors with a valid line, in policy order. note: the pack's
    checkpoint-time file (bytes), None when it has none; log_key: the
    ledger's key (open_time_note()). MapCosignatureError when the pack has
    no time note, when a policy monitor's lines break a rule of "Reading
    one", or when the monitors with a valid line are fewer than the
    monitor-quorum. Lines of other keys, witnesses' included, are ignored."""
    if note is None:
        raise MapCosignatureError("checkpoint-time: missing: the policy's monitors cosign the checkpoint-time note",
                                  "FAILED_PRECONDITION")
    time_note = open_time_note(note, log_key)
    cosigned = []
    for name, key in policy.monitors.items():
        try:
            when = map_cosignature_time(key, time_note)
        except MapCosignatureError as e:
            raise MapCosignatureError("checkpoint-time: monitor %s: %s" % (name, e))
        if when is not None:
            cosigned.append((name, when))
    if len(cosigned) >= policy.monitor_quorum:
        return cosigned
    by = [name for name, _ in cosigned]
    message = "checkpoint-time: the policy's monitor-quorum %d of %d is not met: no map cosignature from %s" % (
        policy.monitor_quorum, len(policy.monitors), ", ".join(name for name in policy.monitors if name not in by))
    if by:
        message += "; cosigned by " + ", ".join(by)
    raise MapCosignatureError(message, "FAILED_PRECONDITION")


def monitored_line(policy, cosigned):
    """The line after a verifier's OK line and its witnessed: line (section
    7, "Monitored packs"): the monitor-quorum met, and each monitor with a
    valid line, in policy order, with its time."""
    return "monitored: monitor-quorum %d of %d met; map cosigned by %s" % (
        policy.monitor_quorum, len(policy.monitors),
        ", ".join("%s at %s (%d)" % (name, tlogpolicy.utc_seconds(when), when) for name, when in cosigned))
