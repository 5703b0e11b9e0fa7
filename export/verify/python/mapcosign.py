#!/usr/bin/env python3
"""Monitors and map cosignatures (CONTRACT.md section 5c,
docs/contract/monitors.md), with the standard library and `cryptography`
only, written from the contract's text (sections 5, 5b and 5c), not from the
ledger's code nor from the vectors' generator.

- parse_monitor_vkey() reads a monitor's verifier key
  (`NAME+ID+base64(0xff || "evidence-ledger/map-cosignature/v1" || key)`),
  checks its key ID, and refuses a log key (0x01) or a witness key (0x04);
  parse_monitor_key_file() reads a monitor's key file.
- open_time_note() opens a checkpoint-time note with the ledger's key
  (packnote.py's strict reading of section 5); map_cosignature_time() reads
  one monitor's map cosignature on it under every rule of "Reading one": its
  time, None when the monitor has no line, MapCosignatureError otherwise.
- parse_policy() reads a tlog-policy with `monitor` and `monitor-quorum`
  lines (section 5c, "Monitors in a tlog-policy") on top of tlogpolicy.py's
  rules of section 5b, which it reuses unchanged; check_time_note() checks
  a cosigned time note against such a policy: each policy monitor's line
  verifies (PERMISSION_DENIED naming it otherwise) and the monitors that
  cosigned meet the monitor-quorum (FAILED_PRECONDITION naming those that
  did not otherwise).

The refusals are worded as section 7 ("Monitored packs") words them: a
map cosignature's start with `map cosignature: `, a policy monitor's are
`checkpoint-time: monitor M: ` and those, the monitor-quorum's is
`checkpoint-time: the policy's monitor-quorum K of N is not met: ...`.
Nothing here does I/O. Tests: mapcosign_test.py.
"""
import base64
import hashlib
import re
import struct

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

import packnote
import tlogpolicy
from packerror import Failure
from packread import canonical_base64

IDENTIFIER = b"evidence-ledger/map-cosignature/v1"
# The monitor key's type bytes: 0xff (C2SP signed-note, a type without an
# assigned byte) then the identifier, ASCII, no terminator: 1 + 34 bytes.
MONITOR_TYPE = b"\xff" + IDENTIFIER
# The first line of the signed message.
HEADER = IDENTIFIER + b"\n"
# key ID || u64 big-endian time || Ed25519 signature.
COSIGNATURE_BYTES = 4 + 8 + 64
MAX_TIME = (1 << 63) - 1
# The only version of checkpoint-time note monitors cosign.
COSIGNED_VERSION = 4
OTHER_TYPES = {
    0x01: "a log key (type 0x01, Ed25519)",
    0x04: "a witness key (type 0x04, cosignature/v1)",
}
LOWER_HEX_ID = re.compile(r"[0-9a-f]{8}")


class MonitorKeyError(ValueError):
    """A monitor verifier key or key file that breaks a rule of section 5c,
    "The monitor's key"."""


class MapCosignatureError(Exception):
    """A map cosignature, or a time note under a policy with monitors, that
    does not hold. code: the status a verifier gives (PERMISSION_DENIED for
    a policy monitor's line that does not verify, FAILED_PRECONDITION for a
    monitor-quorum not met, INVALID_ARGUMENT for a note that cannot be read)."""

    def __init__(self, message, code="PERMISSION_DENIED"):
        super().__init__(message)
        self.code = code


class MonitorKey:
    """A monitor's verifier key: name, 4-byte key ID, 32-byte Ed25519 public key."""

    def __init__(self, name, key_id, public):
        self.name, self.key_id, self.public = name, key_id, public

    def vkey_id(self):
        """NAME+ID, as messages name a key."""
        return "%s+%s" % (self.name, self.key_id.hex())

    def vkey(self):
        """The verifier key's text."""
        return "%s+%s+%s" % (self.name, self.key_id.hex(), base64.b64encode(MONITOR_TYPE + self.public).decode())


def key_id(name, type_bytes, public):
    """The first 4 bytes of SHA-256(key name || 0x0A || type || public key)."""
    return hashlib.sha256(name.encode("utf-8") + b"\n" + type_bytes + public).digest()[:4]


def check_key_name(name):
    """Section 5c: non-empty UTF-8, no white space, no '+'."""
    if not name:
        raise MonitorKeyError("the key name is empty")
    if "+" in name or any(c.isspace() for c in name):
        raise MonitorKeyError("the key name '%s' holds white space or '+'" % name)
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise MonitorKeyError("the key name is not UTF-8")


def monitor_key_data(data, what):
    """The 32 key bytes after the type bytes of a key's base64 data; a clear
    refusal for a log or a witness key."""
    raw = canonical_base64(data)
    if raw is None:
        raise MonitorKeyError("the %s is not standard base64" % what)
    if raw[:1] and raw[0] in OTHER_TYPES:
        raise MonitorKeyError("%s is not a monitor key: a monitor key's type is 0xff "
                              "'evidence-ledger/map-cosignature/v1'" % OTHER_TYPES[raw[0]])
    if len(raw) != len(MONITOR_TYPE) + 32 or not raw.startswith(MONITOR_TYPE):
        raise MonitorKeyError("the %s must be base64 of the type bytes 0xff 'evidence-ledger/map-cosignature/v1' "
                              "and 32 bytes (67 bytes), found %d bytes" % (what, len(raw)))
    return raw[len(MONITOR_TYPE):]


def parse_monitor_vkey(text):
    """The MonitorKey of a verifier key
    `<name>+<key ID, 8 lowercase hex>+<base64(type || 32-byte public key)>`;
    MonitorKeyError ("monitor verifier key: ...") saying which rule it breaks."""
    try:
        parts = text.split("+", 2)
        if len(parts) != 3:
            raise MonitorKeyError("want NAME+ID+KEY")
        name, hex_id, data = parts
        check_key_name(name)
        if not LOWER_HEX_ID.fullmatch(hex_id):
            raise MonitorKeyError("the key ID must be 8 lowercase hex digits, found '%s'" % hex_id)
        public = monitor_key_data(data, "key data")
        want = key_id(name, MONITOR_TYPE, public)
        if want != bytes.fromhex(hex_id):
            raise MonitorKeyError("key ID %s does not match the key (its ID is %s)" % (hex_id, want.hex()))
        Ed25519PublicKey.from_public_bytes(public)
    except MonitorKeyError as e:
        raise MonitorKeyError("monitor verifier key: %s" % e)
    return MonitorKey(name, want, public)


def parse_monitor_key_file(text):
    """(MonitorKey, 32-byte seed) of a key file
    `PRIVATE+KEY+<name>+<key ID>+<base64(type || 32-byte Ed25519 seed)>`;
    MonitorKeyError ("monitor key file: ...") otherwise."""
    try:
        parts = text.strip("\n").split("+", 4)
        if len(parts) != 5 or parts[:2] != ["PRIVATE", "KEY"]:
            raise MonitorKeyError("want PRIVATE+KEY+NAME+ID+KEY")
        name, hex_id, data = parts[2:]
        check_key_name(name)
        if not LOWER_HEX_ID.fullmatch(hex_id):
            raise MonitorKeyError("the key ID must be 8 lowercase hex digits, found '%s'" % hex_id)
        seed = monitor_key_data(data, "key data")
        public = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        want = key_id(name, MONITOR_TYPE, public)
        if want != bytes.fromhex(hex_id):
            raise MonitorKeyError("key ID %s does not match the key (its ID is %s)" % (hex_id, want.hex()))
    except MonitorKeyError as e:
        raise MonitorKeyError("monitor key file: %s" % e)
    return MonitorKey(name, want, public), seed


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


def log_key_tuple(log_key):
    """packnote's (name, key ID, public key) of a log key given as its
    verifier key's text or as a tlogpolicy.Key."""
    if isinstance(log_key, str):
        return packnote.parse_vkey(log_key)
    return log_key.name, log_key.key_id, Ed25519PublicKey.from_public_bytes(log_key.public)


def open_time_note(note, log_key):
    """The TimeNote of a signed checkpoint-time note (bytes) of any version,
    its signature by the log's key verified; MapCosignatureError
    (INVALID_ARGUMENT) with packnote's reason otherwise."""
    try:
        fields = packnote.checkpoint_time(note, log_key_tuple(log_key))
        text, sigs = packnote.signature_lines(note)
    except Failure as e:
        raise MapCosignatureError("time note: %s" % e, "INVALID_ARGUMENT")
    return TimeNote(text, sigs, fields)


def map_cosignature_time(key, note):
    """The time of the map cosignature by the monitor `key` (MonitorKey) on
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
    return map_cosignature_time(parse_monitor_vkey(monitor_vkey), open_time_note(note, log_vkey))


class MonitorPolicy(tlogpolicy.Policy):
    """A tlogpolicy.Policy and its monitors: monitors {name: MonitorKey} in
    the order of their lines, monitor_urls {name: URL or None},
    monitor_quorum (k: how many must cosign; 0 without monitors)."""

    def __init__(self):
        super().__init__()
        self.monitors, self.monitor_urls, self.monitor_quorum = {}, {}, 0
        self.monitor_quorum_line = None

    def monitor_quorum_met(self, cosigned):
        """Whether the policy monitors among `cosigned` (names whose map
        cosignatures verified) are enough."""
        return sum(name in cosigned for name in self.monitors) >= self.monitor_quorum

    def missing_monitors(self, cosigned):
        return [name for name in self.monitors if name not in cosigned]


KEYWORDS = "log, witness, group, quorum, monitor or monitor-quorum"


def parse_policy(data):
    """The MonitorPolicy of a tlog-policy file (bytes) that may hold
    `monitor` and `monitor-quorum` lines; tlogpolicy.PolicyError naming the
    line and the rule otherwise. The lines of section 5b are read by
    tlogpolicy.py's own functions. A policy with monitor lines may omit the
    `quorum` line (then no witness is required, as with `quorum none`); one
    without them needs it, as in section 5b."""
    p, defined = MonitorPolicy(), {}
    for number, raw in enumerate(data.split(b"\n"), 1):
        bad = tlogpolicy.BAD_OCTET.search(raw)
        if bad:
            raise tlogpolicy.PolicyError(number, "byte 0x%02x: only tab, newline, printable ASCII and bytes above "
                                                 "0x7f are allowed" % bad.group()[0])
        line = raw.decode("utf-8", "surrogateescape").strip(" \t")
        if not line or line.startswith("#"):
            continue
        fields = tlogpolicy.BLANK.split(line)
        add = ADDERS.get(fields[0])
        if add is None:
            raise tlogpolicy.PolicyError(number, "unknown keyword '%s' (want %s)" % (fields[0], KEYWORDS))
        rule = add(p, defined, number, fields)
        if rule:
            raise tlogpolicy.PolicyError(number, rule)
    if p.quorum is None:
        if not p.monitors:
            raise tlogpolicy.PolicyError(None, "no quorum line (use 'quorum none' for none)")
        p.quorum = "none"
    if p.monitors and p.monitor_quorum_line is None:
        p.monitor_quorum = len(p.monitors)
    return p


def add_group(p, defined, number, fields):
    for m in fields[3:]:
        if m in p.monitors:
            return "member '%s' is a monitor: monitors are not witnesses and are in no group" % m
    return tlogpolicy.add_group(p, defined, number, fields)


def add_quorum(p, defined, number, fields):
    if len(fields) == 2 and fields[1] in p.monitors:
        return "quorum '%s' is a monitor: monitors are not witnesses (use monitor-quorum)" % fields[1]
    return tlogpolicy.add_quorum(p, defined, number, fields)


def add_monitor(p, defined, number, fields):
    if len(fields) not in (3, 4):
        return "want 'monitor NAME VKEY [URL]'"
    if p.monitor_quorum_line is not None:
        return "a monitor line after the monitor-quorum line (line %d), which follows every monitor line" % (
            p.monitor_quorum_line)
    try:
        key = parse_monitor_vkey(fields[2])
    except MonitorKeyError as e:
        return str(e)
    for other, k in p.monitors.items():
        if k.public == key.public:
            return "this monitor's public key is that of monitor '%s'" % other
    rule = tlogpolicy.define(defined, fields[1], "monitor", number)
    if rule:
        return rule
    p.monitors[fields[1]] = key
    p.monitor_urls[fields[1]] = fields[3] if len(fields) == 4 else None


def add_monitor_quorum(p, defined, number, fields):
    if len(fields) != 2:
        return "want 'monitor-quorum K|all|any'"
    if p.monitor_quorum_line is not None:
        return "a second monitor-quorum line (the first is line %d)" % p.monitor_quorum_line
    n = len(p.monitors)
    if n == 0:
        return "monitor-quorum without a monitor line before it"
    k = {"all": n, "any": 1}.get(fields[1])
    if k is None and re.fullmatch(r"[0-9]{1,20}", fields[1]):
        k = int(fields[1])
    if k is None or not 1 <= k <= n:
        return "monitor-quorum must be all, any or a decimal k with 1 <= k <= %d (the monitor lines)" % n
    p.monitor_quorum, p.monitor_quorum_line = k, number


ADDERS = {
    "log": tlogpolicy.add_log,
    "witness": tlogpolicy.add_witness,
    "group": add_group,
    "quorum": add_quorum,
    "monitor": add_monitor,
    "monitor-quorum": add_monitor_quorum,
}


def check_time_note(policy, note):
    """The map cosignature times [(monitor name, time)], in policy order, of
    a cosigned checkpoint-time note (bytes) under a MonitorPolicy:
    - the note is signed by one of the policy's logs (PERMISSION_DENIED
      otherwise) and reads as a time note (INVALID_ARGUMENT otherwise);
    - without monitors, nothing more: map cosignature lines are lines of
      unknown keys;
    - each policy monitor's line is read by map_cosignature_time()
      (PERMISSION_DENIED naming the monitor when it does not hold);
    - the monitors that cosigned meet the monitor-quorum
      (FAILED_PRECONDITION naming those that did not cosign otherwise).
    Witnesses cosign checkpoints, not time notes: tlogpolicy.check_checkpoint
    checks them."""
    try:
        _, sigs = packnote.signature_lines(note)
    except Failure as e:
        raise MapCosignatureError("time note: %s" % e, "INVALID_ARGUMENT")
    signers = {(name, kid) for name, kid, _ in sigs}
    logs = [k for k in policy.logs if (k.name, k.key_id) in signers]
    if not logs:
        raise MapCosignatureError("time note: no signature by a log of the policy", "PERMISSION_DENIED")
    try:
        time_note = open_time_note(note, logs[0])
    except MapCosignatureError as e:
        if "does not verify" in str(e):
            e.code = "PERMISSION_DENIED"
        raise
    times = {}
    for name, key in policy.monitors.items():
        try:
            when = map_cosignature_time(key, time_note)
        except MapCosignatureError as e:
            raise MapCosignatureError("checkpoint-time: monitor %s: %s" % (name, e))
        if when is not None:
            times[name] = when
    cosigned = [(name, times[name]) for name in policy.monitors if name in times]
    if not policy.monitor_quorum_met(times):
        message = "checkpoint-time: the policy's monitor-quorum %d of %d is not met: no map cosignature from %s" % (
            policy.monitor_quorum, len(policy.monitors), ", ".join(policy.missing_monitors(times)))
        if cosigned:
            message += "; cosigned by " + ", ".join(name for name, _ in cosigned)
        raise MapCosignatureError(message, "FAILED_PRECONDITION")
    return cosigned


def monitored_line(policy, cosigned):
    """The line after a verifier's OK line and its witnessed: line (section
    7, "Monitored packs"): the monitor-quorum met, and each monitor with a
    valid line, in policy order, with its time."""
    return "monitored: monitor-quorum %d of %d met; map cosigned by %s" % (
        policy.monitor_quorum, len(policy.monitors),
        ", ".join("%s at %s (%d)" % (name, tlogpolicy.utc_seconds(when), when) for name, when in cosigned))
