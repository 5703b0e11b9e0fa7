#!/usr/bin/env python3
"""Transparency-log policies (c2sp.org/tlog-policy) and Ed25519 cosignatures
(c2sp.org/tlog-cosignature, cosignature/v1), with the standard library and
`cryptography` only, written from the C2SP texts and CONTRACT.md sections 5b
and 5c (the `monitor` and `monitor-quorum` lines, monitor keys).

parse() reads a policy; check_checkpoint() checks the cosignature lines of a
checkpoint the log's key already opened against it and evaluates the quorum.
The policy's monitors cosign checkpoint-time notes: mapcosign.py checks
their lines. Nothing here does I/O.

Usage: tlogpolicy.py --vectors tests/vectors/tlog_policy.json tests/vectors/cosignature.json
  parses the vectors' policy, checks each set of cosigners against its
  quorum and missing witnesses, refuses each bad policy with its error, and
  verifies the cosignature vector. Exit 0 when all hold; 1, naming the
  first that does not.
"""
import base64
import hashlib
import json
import re
import struct
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

EM_DASH = "\u2014"
# A key's type bytes: one byte, or 0xff (C2SP signed-note, a type without an
# assigned byte) followed by an identifier, ASCII, no terminator (1 + 34
# bytes for a monitor key, CONTRACT section 5c).
TYPE_ED25519, TYPE_COSIGNATURE = b"\x01", b"\x04"
TYPE_MONITOR = b"\xff" + b"evidence-ledger/map-cosignature/v1"
KEY_TYPES = {TYPE_ED25519: "0x01 (Ed25519)", TYPE_COSIGNATURE: "0x04 (cosignature/v1)",
             TYPE_MONITOR: "0xff evidence-ledger/map-cosignature/v1"}
# What a monitor key is not, though its Ed25519 key may be the same.
NOT_MONITOR_KEYS = {TYPE_COSIGNATURE: "a witness key (type 0x04)", TYPE_ED25519: "a log key (type 0x01)"}
BLANK = re.compile(r"[ \t]+")
# The policy's octets: tab, newline, printable ASCII and any byte above 0x7f.
BAD_OCTET = re.compile(rb"[^\t\n\x20-\x7e\x80-\xff]")
MAX_TIME = (1 << 63) - 1


class PolicyError(Exception):
    """A policy that breaks a rule of tlog-policy; line is 1-based, or None
    for the whole file."""

    def __init__(self, line, message):
        super().__init__("line %d: %s" % (line, message) if line else message)
        self.line, self.message = line, message


class Refused(Exception):
    """A checkpoint that does not hold under a policy; the message names the
    witness or the quorum (CONTRACT.md section 7, "Witnessed packs")."""


class Key:
    """A verifier key (c2sp.org/signed-note): name, 4-byte ID, type bytes,
    32-byte public key."""

    def __init__(self, name, key_id, key_type, public):
        self.name, self.key_id, self.type, self.public = name, key_id, key_type, public

    def vkey_id(self):
        """NAME+ID, as errors name a key."""
        return "%s+%s" % (self.name, self.key_id.hex())

    def vkey(self):
        """The verifier key's text, its key ID in lower case."""
        return "%s+%s" % (self.vkey_id(), base64.b64encode(self.type + self.public).decode())


def parse_vkey(text, key_type):
    """A vkey `name+hex ID+base64(type || 32-byte key)` of the type bytes
    asked for (KEY_TYPES); ValueError saying which rule it breaks."""
    parts = text.split("+", 2)
    if len(parts) != 3 or not parts[0]:
        raise ValueError("want NAME+ID+KEY")
    name, key_id, data = parts
    if not re.fullmatch(r"[0-9a-fA-F]{8}", key_id):
        raise ValueError("the key id must be 8 hex digits")
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError:
        raw = b""
    if len(raw) != len(key_type) + 32 or not raw.startswith(key_type):
        raise ValueError("key data must be base64 of %s and 32 bytes" % KEY_TYPES[key_type])
    want = hashlib.sha256(name.encode("utf-8", "surrogateescape") + b"\n" + raw).digest()[:4]
    if want != bytes.fromhex(key_id):
        raise ValueError("key id %s does not match the key" % key_id)
    return Key(name, want, key_type, raw[len(key_type):])


def parse_monitor_vkey(text):
    """A monitor's verifier key (CONTRACT section 5c): parse_vkey() of
    TYPE_MONITOR, its name UTF-8 without white space; a witness's or a
    log's key is refused by name, even over the same Ed25519 key."""
    try:
        key = parse_vkey(text, TYPE_MONITOR)
    except ValueError:
        for key_type, what in NOT_MONITOR_KEYS.items():
            try:
                parse_vkey(text, key_type)
            except ValueError:
                continue
            raise ValueError("%s is not a monitor key (type %s)" % (what, KEY_TYPES[TYPE_MONITOR]))
        raise
    try:
        key.name.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("the key name is not UTF-8")
    if any(c.isspace() for c in key.name):
        raise ValueError("the key name '%s' holds white space" % key.name)
    return key


class Policy:
    """logs: [Key]; witnesses: {name: Key} in the order of their lines;
    groups: {name: (k, [member])}; quorum: a witness or group name, or 'none';
    monitors: {name: Key} in the order of their lines; monitor_quorum: how
    many of them must cosign a checkpoint-time note (all of them without a
    monitor-quorum line, whose number is monitor_quorum_line)."""

    def __init__(self):
        self.logs, self.witnesses, self.groups, self.quorum = [], {}, {}, None
        self.monitors, self.monitor_quorum, self.monitor_quorum_line = {}, 0, None

    def log_named(self, origin):
        return [k for k in self.logs if k.name == origin]

    def is_log(self, key):
        return any((k.name, k.key_id, k.public) == (key.name, key.key_id, key.public) for k in self.logs)

    def met(self, name, cosigned):
        """Whether `name` (a witness or group) witnessed: a witness by a
        valid line, a group by k of its members."""
        if name in self.witnesses:
            return name in cosigned
        k, members = self.groups[name]
        return sum(self.met(m, cosigned) for m in members) >= k

    def named_witnesses(self, name):
        """The witnesses `name` reaches through its groups."""
        if name == "none":
            return set()
        if name in self.witnesses:
            return {name}
        return set().union(*(self.named_witnesses(m) for m in self.groups[name][1]))


def parse(data):
    """The Policy of a tlog-policy file (bytes), with its monitors; PolicyError
    naming the line and the rule otherwise. Names are opaque octets (held as
    str with surrogate escapes); URLs are read and ignored. The quorum line
    is required, monitors or not."""
    p, defined = Policy(), {}
    for number, raw in enumerate(data.split(b"\n"), 1):
        bad = BAD_OCTET.search(raw)
        if bad:
            raise PolicyError(number, "byte 0x%02x: only tab, newline, printable ASCII and bytes above 0x7f are "
                                      "allowed" % bad.group()[0])
        line = raw.decode("utf-8", "surrogateescape").strip(" \t")
        if not line or line.startswith("#"):
            continue
        fields = BLANK.split(line)
        parse_line(p, defined, number, fields)
    if p.quorum is None:
        raise PolicyError(None, "no quorum line (use 'quorum none' for none)")
    if p.monitor_quorum_line is None:
        p.monitor_quorum = len(p.monitors)
    return p


def parse_line(p, defined, number, fields):
    """Adds one line's definition to p; defined maps each witness, group and
    monitor name (one namespace) to its line. PolicyError naming the rule
    otherwise."""
    add = {"log": add_log, "witness": add_witness, "group": add_group, "quorum": add_quorum,
           "monitor": add_monitor, "monitor-quorum": add_monitor_quorum}.get(fields[0])
    if add is None:
        raise PolicyError(number, "unknown keyword '%s' (want log, witness, group, quorum, monitor or "
                                  "monitor-quorum)" % fields[0])
    rule = add(p, defined, number, fields)
    if rule:
        raise PolicyError(number, rule)


def define(defined, name, what, number):
    if name == "none":
        return "'none' is reserved and cannot name a %s" % what
    if name in defined:
        return "'%s' is already defined on line %d" % (name, defined[name])
    defined[name] = number
    return None


def add_log(p, defined, number, fields):
    if len(fields) not in (2, 3):
        return "want 'log VKEY [URL]'"
    try:
        key = parse_vkey(fields[1], TYPE_ED25519)
    except ValueError as e:
        return "log verifier key: %s" % e
    if any(k.public == key.public for k in p.logs):
        return "this log's key is listed twice"
    p.logs.append(key)


def add_witness(p, defined, number, fields):
    if len(fields) not in (3, 4):
        return "want 'witness NAME VKEY [URL]'"
    try:
        key = parse_vkey(fields[2], TYPE_COSIGNATURE)
    except ValueError as e:
        return "witness verifier key: %s" % e
    if any(k.public == key.public for k in p.witnesses.values()):
        return "this witness's key is listed twice"
    rule = define(defined, fields[1], "witness", number)
    if rule:
        return rule
    p.witnesses[fields[1]] = key


def add_group(p, defined, number, fields):
    if len(fields) < 4:
        return "want 'group NAME all|any|K MEMBER...' with at least one member"
    name, threshold, members = fields[1], fields[2], fields[3:]
    rule = define(defined, name, "group", number)
    if rule:
        return rule
    for m in members:
        if m == "none":
            return "'none' cannot be a group member"
        if m not in defined or defined[m] == number:
            return "member '%s' is not defined on an earlier line" % m
        if m in p.monitors:
            return "member '%s' is a monitor: monitors are not witnesses" % m
    if len(set(members)) != len(members):
        return "member '%s' is listed twice" % next(m for m in members if members.count(m) > 1)
    n = len(members)
    k = count(threshold, n)
    if k is None:
        return "threshold must be all, any or a decimal k with 1 <= k <= %d" % n
    p.groups[name] = (k, members)


def count(text, n):
    """all, any or a decimal k of n, as a group's threshold and the
    monitor-quorum are written: k, or None unless 1 <= k <= n."""
    k = {"all": n, "any": 1}.get(text)
    if k is None and re.fullmatch(r"[0-9]{1,20}", text):
        k = int(text)
    return k if k is not None and 1 <= k <= n else None


def add_quorum(p, defined, number, fields):
    if len(fields) != 2:
        return "want 'quorum NAME' or 'quorum none'"
    if p.quorum is not None:
        return "a second quorum line"
    if fields[1] != "none" and fields[1] not in defined:
        return "quorum '%s' is not defined on an earlier line" % fields[1]
    if fields[1] in p.monitors:
        return "quorum '%s' is a monitor: monitors are not witnesses" % fields[1]
    p.quorum = fields[1]


def add_monitor(p, defined, number, fields):
    """`monitor NAME VKEY [URL]` (CONTRACT section 5c): a name of the one
    namespace, a monitor key no other monitor has, before the
    monitor-quorum line."""
    if len(fields) not in (3, 4):
        return "want 'monitor NAME VKEY [URL]'"
    if p.monitor_quorum_line is not None:
        return "a monitor line after the monitor-quorum line (line %d), which follows every monitor line" % (
            p.monitor_quorum_line)
    try:
        key = parse_monitor_vkey(fields[2])
    except ValueError as e:
        return "monitor verifier key: %s" % e
    if any(k.public == key.public for k in p.monitors.values()):
        return "this monitor's key is listed twice"
    rule = define(defined, fields[1], "monitor", number)
    if rule:
        return rule
    p.monitors[fields[1]] = key


def add_monitor_quorum(p, defined, number, fields):
    """`monitor-quorum K|all|any`, once, after every monitor line."""
    if len(fields) != 2:
        return "want 'monitor-quorum all|any|K'"
    if p.monitor_quorum_line is not None:
        return "a second monitor-quorum line"
    if not p.monitors:
        return "monitor-quorum without a monitor line before it"
    k = count(fields[1], len(p.monitors))
    if k is None:
        return "monitor-quorum must be all, any or a decimal k with 1 <= k <= %d" % len(p.monitors)
    p.monitor_quorum, p.monitor_quorum_line = k, number


def cosignature_time(key, text, blob):
    """The time of a cosignature/v1 (the bytes after the key ID: u64
    big-endian time || 64-byte Ed25519 signature) by `key` over the checkpoint
    `text` (every line, final newline included); None when it does not
    verify or its time is not 1 <= time <= 2^63-1."""
    if len(blob) != 8 + 64:
        return None
    (when,) = struct.unpack(">Q", blob[:8])
    if not 1 <= when <= MAX_TIME:
        return None
    message = ("cosignature/v1\ntime %d\n" % when).encode() + text
    try:
        Ed25519PublicKey.from_public_bytes(key.public).verify(blob[8:], message)
    except InvalidSignature:
        return None
    return when


def signature_lines(note):
    """(key name, decoded signature) of each signature line of a note (bytes);
    Refused when a line is not `— NAME base64`."""
    _, sep, sigs = note.rpartition(b"\n\n")
    out = []
    for line in sigs.decode("utf-8", "surrogateescape").split("\n")[:-1] if sep else []:
        name, _, b64 = line[2:].partition(" ")
        try:
            blob = base64.b64decode(b64, validate=True)
        except ValueError:
            blob = b""
        if not line.startswith(EM_DASH + " ") or not name or len(blob) < 5:
            raise Refused("checkpoint: a malformed signature line")
        out.append((name, blob))
    return out


def check_checkpoint(policy, text, note):
    """The cosignature times by witness name, in policy order, of a
    checkpoint note whose text (bytes, final newline included) the log's key
    already opened. Refused when a line bearing a policy witness's key name
    and ID does not verify, or when the quorum is not met; lines of other
    keys are ignored."""
    times = {}
    for key_name, blob in signature_lines(note):
        for name, key in policy.witnesses.items():
            if (key.name, key.key_id) != (key_name, blob[:4]):
                continue
            when = cosignature_time(key, text, blob[4:])
            if when is None:
                raise Refused("checkpoint: the cosignature of witness %s does not verify" % name)
            times.setdefault(name, when)
    cosigned = [(name, times[name]) for name in policy.witnesses if name in times]
    if policy.quorum != "none" and not policy.met(policy.quorum, times):
        named = policy.named_witnesses(policy.quorum)
        missing = [name for name in policy.witnesses if name in named and name not in times]
        message = "checkpoint: the policy's quorum %s is not met: no cosignature from %s" % (
            policy.quorum, ", ".join(missing))
        if cosigned:
            message += "; cosigned by " + ", ".join(name for name, _ in cosigned)
        raise Refused(message)
    return cosigned


def utc_seconds(seconds):
    """POSIX seconds as UTC ISO 8601 (YYYY-MM-DDTHH:MM:SSZ), for any time a
    cosignature can state (up to 2^63-1: years past 9999 are written out)."""
    days, rest = divmod(seconds, 86400)
    # Days to a civil date (proleptic Gregorian), as in Howard Hinnant's
    # chrono-compatible algorithms.
    z = days + 719468
    era, doe = divmod(z, 146097)
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day, month = doy - (153 * mp + 2) // 5 + 1, mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    return "%04d-%02d-%02dT%02d:%02d:%02dZ" % (year, month, day, rest // 3600, rest // 60 % 60, rest % 60)


def witnessed_line(policy, cosigned):
    """The line after a verifier's OK line."""
    if not cosigned:
        return "witnessed: quorum %s met; no cosignature" % policy.quorum
    return "witnessed: quorum %s met; cosigned by %s" % (
        policy.quorum, ", ".join("%s at %s (%d)" % (name, utc_seconds(when), when) for name, when in cosigned))


def check_vectors(policy_vectors, cosignature_vector):
    """Raises Refused naming the first vector that does not hold."""
    v = policy_vectors
    p = parse(v["policy"].encode())
    log = parse_vkey(v["log_vkey"], TYPE_ED25519)
    if not p.is_log(log) or p.quorum != "XY":
        raise Refused("policy: the log or the quorum is not the vectors'")
    text = v["checkpoint"].encode()
    for case in v["cases"]:
        try:
            got = [name for name, _ in check_checkpoint(p, text, case["note"].encode())]
            met, missing = True, []
        except Refused as e:
            got, met = None, False
            missing = str(e).split("no cosignature from ")[1].split(";")[0].split(", ")
        if met != case["quorum"] or missing != case["missing"] or (met and got != case["cosigners"]):
            raise Refused("case %s: quorum %s missing %s, the vectors say %s %s"
                          % (case["cosigners"], met, missing, case["quorum"], case["missing"]))
        print("ok: cosigned by %s: quorum %s, missing %s" % (case["cosigners"], "met" if met else "not met", missing))
    for w in v["witnesses"]:
        key = parse_vkey(w["vkey"], TYPE_COSIGNATURE)
        name, blob = signature_lines(("x\n\n" + w["cosignature"]).encode())[0]
        if (name, blob[:4]) != (key.name, key.key_id) or cosignature_time(key, text, blob[4:]) != w["time"]:
            raise Refused("witness %s: the cosignature does not verify at time %d" % (w["name"], w["time"]))
    for bad in v["bad_policies"]:
        try:
            parse(bad["text"].encode())
        except PolicyError as e:
            got = ("policy line %d: %s" % (e.line, e.message)) if e.line else "policy: " + e.message
            if got != bad["error"]:
                raise Refused("bad policy %r: refused with '%s', the vectors say '%s'" % (bad["text"], got,
                                                                                         bad["error"]))
            print("ok: refused: %s" % got)
            continue
        raise Refused("bad policy %r: accepted" % bad["text"])
    c = cosignature_vector
    key = parse_vkey(c["vkey"], TYPE_COSIGNATURE)
    name, blob = signature_lines(("x\n\n" + c["cosignature"]).encode())[0]
    if key.key_id.hex() != c["key_id_hex"] or key.public.hex() != c["public_key_hex"] or name != c["name"]:
        raise Refused("cosignature: the key id, key or name is not the vectors'")
    if cosignature_time(key, c["checkpoint"].encode(), blob[4:]) != c["time"]:
        raise Refused("cosignature: does not verify at time %d" % c["time"])
    if cosignature_time(key, c["checkpoint"].encode() + b"x\n", blob[4:]) is not None:
        raise Refused("cosignature: verifies over another checkpoint")
    print("ok: the cosignature of %s at %d verifies" % (name, c["time"]))


def main():
    if len(sys.argv) != 4 or sys.argv[1] != "--vectors":
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[2], encoding="utf-8") as f:
        policy_vectors = json.load(f)
    with open(sys.argv[3], encoding="utf-8") as f:
        cosignature_vector = json.load(f)
    try:
        check_vectors(policy_vectors, cosignature_vector)
    except (Refused, PolicyError) as e:
        print("FAIL: %s" % e)
        return 1
    # A policy naming monitors is read with them, never as naming none, and
    # still needs its quorum line (mapcosign_test.py checks every rule of
    # section 5c).
    public = bytes(range(32))
    m1 = Key("m1.example", hashlib.sha256(b"m1.example\n" + TYPE_MONITOR + public).digest()[:4], TYPE_MONITOR, public)
    p = parse(("monitor m1 %s\nmonitor-quorum any\nquorum none\n" % m1.vkey()).encode())
    if list(p.monitors) != ["m1"] or p.monitor_quorum != 1 or p.quorum != "none":
        print("FAIL: a policy naming monitor m1, monitor-quorum any: read as %s, %d" % (list(p.monitors),
                                                                                         p.monitor_quorum))
        return 1
    try:
        parse(("monitor m1 %s\n" % m1.vkey()).encode())
    except PolicyError as e:
        if str(e) != "no quorum line (use 'quorum none' for none)":
            print("FAIL: a policy of monitors without a quorum line refused for another reason: %s" % e)
            return 1
    else:
        print("FAIL: a policy of monitors without a quorum line was read")
        return 1
    print("ok: tlog-policy and cosignature/v1 vectors; a policy naming monitors read with them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
