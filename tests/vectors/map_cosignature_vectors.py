#!/usr/bin/env python3
"""Writes, or checks byte for byte, tests/vectors/map_cosignature.json, made
from CONTRACT section 5c ("Monitors and map cosignatures",
docs/contract/monitors.md) with Python's `cryptography`, not the ledger's
code.

The file holds:
- `key`: a monitor key from a fixed seed: its type bytes, public key, key ID,
  verifier key and key file;
- `note`: the version 4 checkpoint-time note of checkpoint_time.json;
- `cosignatures`: that note cosigned at two times, each with the exact
  signed message and line, and the note with the line appended;
- `refused`: lines a verifier must refuse or ignore on that note, each with
  what it must say (`refusal`: "ignored" when the line is not the monitor's,
  else the first words of the refusal);
- `policies`: tlog-policy texts with monitor lines (each with the quorum
  line section 5b requires), which sets of monitors' cosignatures meet
  each, and texts a parser must refuse.

Usage: map_cosignature_vectors.py [--write]
  without --write, recomputes the file and compares it with the stored one;
  exit 0 when it holds, 1 when it differs.
"""
import base64
import hashlib
import json
import os
import struct
import sys

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "map_cosignature.json")
IDENTIFIER = b"evidence-ledger/map-cosignature/v1"
TYPE = b"\xff" + IDENTIFIER
HEADER = "evidence-ledger/map-cosignature/v1"
EM_DASH = "\u2014"


def b64(data):
    return base64.b64encode(data).decode()


class Key:
    def __init__(self, name, seed, type_bytes=TYPE):
        self.name, self.seed, self.type = name, seed, type_bytes
        self.private = Ed25519PrivateKey.from_private_bytes(seed)
        self.public = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.key_id = hashlib.sha256(name.encode() + b"\n" + type_bytes + self.public).digest()[:4]

    def vkey(self):
        return "%s+%s+%s" % (self.name, self.key_id.hex(), b64(self.type + self.public))

    def key_file(self):
        return "PRIVATE+KEY+%s+%s+%s" % (self.name, self.key_id.hex(), b64(self.type + self.seed))

    def message(self, text, when, header=HEADER):
        return "%s\ntime %d\n%s" % (header, when, text)

    def line(self, text, when, header=HEADER, key_id=None, tamper=None):
        sig = self.private.sign(self.message(text, when, header).encode())
        data = (key_id or self.key_id) + struct.pack(">Q", when) + sig
        if tamper:
            data = tamper(data)
        return "%s %s %s\n" % (EM_DASH, self.name, b64(data))


def note_text(note):
    return note[:note.rindex("\n\n") + 1]


def build():
    with open(os.path.join(HERE, "checkpoint_time.json")) as f:
        times = json.load(f)
    v4 = times["v4"]
    note = v4["note"]
    text = note_text(note)
    note_time = v4["time_us"] // 1000000
    monitor = Key("monitor.example/m1", bytes(range(0x21, 0x41)))
    other = Key("monitor.example/m2", bytes(range(0x41, 0x61)))
    third = Key("monitor.example/m3", bytes(range(0x61, 0x81)))
    # The same seed as a witness key (cosignature/v1, type 0x04).
    as_witness = Key(monitor.name, monitor.seed, b"\x04")

    cosignatures = []
    for when in (note_time, note_time + 3600):
        line = monitor.line(text, when)
        cosignatures.append({"time": when, "signed_message": monitor.message(text, when), "line": line,
                             "cosigned_note": note + line})

    later = note_time + 60
    changed_teams = text.replace("\nteams V", "\nteams W", 1)
    assert changed_teams != text
    refused = [
        {"what": "a cosignature/v1 line by the same Ed25519 key and name: its key ID is the witness key's",
         "line": as_witness.line(text, later, header="cosignature/v1"), "refusal": "ignored"},
        {"what": "a cosignature/v1 message signed by the monitor key (right key ID, wrong header)",
         "line": monitor.line(text, later, header="cosignature/v1"), "refusal": "map cosignature: signature"},
        {"what": "signed over a note whose teams line differs",
         "line": monitor.line(changed_teams, later), "refusal": "map cosignature: signature"},
        {"what": "a time before the note's own time",
         "line": monitor.line(text, note_time - 1), "refusal": "map cosignature: time"},
        {"what": "time 0", "line": monitor.line(text, 0), "refusal": "map cosignature: time"},
        {"what": "75 bytes, not 76",
         "line": monitor.line(text, later, tamper=lambda d: d[:-1]), "refusal": "map cosignature: length"},
        {"what": "the signature's last byte flipped",
         "line": monitor.line(text, later, tamper=lambda d: d[:-1] + bytes([d[-1] ^ 1])),
         "refusal": "map cosignature: signature"},
        {"what": "another monitor's key name and key ID (not this monitor's)",
         "line": other.line(text, later), "refusal": "ignored"},
    ]
    two_lines = note + monitor.line(text, later) + monitor.line(text, later + 1)
    v3 = times["v3"]["note"]

    m = {k.name: k for k in (monitor, other, third)}
    policy_head = "log %s\n" % times["verifier_key"]
    policies = [
        {"text": policy_head + "".join("monitor %s %s\n" % (n.split("/")[1], k.vkey()) for n, k in m.items())
         + "monitor-quorum 2\nquorum none\n",
         "meets": [["m1", "m2"], ["m1", "m3"], ["m2", "m3"], ["m1", "m2", "m3"]],
         "does_not_meet": [[], ["m1"], ["m2"], ["m3"]]},
        {"text": policy_head + "monitor m1 %s https://monitor.example/m1\nmonitor m2 %s\nquorum none\n"
         % (monitor.vkey(), other.vkey()),
         "comment": "no monitor-quorum line: all",
         "meets": [["m1", "m2"]], "does_not_meet": [["m1"], ["m2"]]},
        {"text": policy_head + "monitor m1 %s\nmonitor m2 %s\nmonitor-quorum any\nquorum none\n"
         % (monitor.vkey(), other.vkey()),
         "meets": [["m1"], ["m2"], ["m1", "m2"]], "does_not_meet": [[]]},
    ]
    invalid = [
        {"what": "a witness key as a monitor",
         "text": policy_head + "monitor m1 %s\n" % as_witness.vkey()},
        {"what": "a monitor named in a group",
         "text": policy_head + "witness w1 %s\nmonitor m1 %s\ngroup g any w1 m1\nquorum g\n"
         % (Key("witness.example/w1", bytes(range(0x81, 0xa1)), b"\x04").vkey(), monitor.vkey())},
        {"what": "the quorum naming a monitor",
         "text": policy_head + "monitor m1 %s\nquorum m1\n" % monitor.vkey()},
        {"what": "monitor-quorum above the number of monitors",
         "text": policy_head + "monitor m1 %s\nmonitor-quorum 2\n" % monitor.vkey()},
        {"what": "monitor-quorum 0",
         "text": policy_head + "monitor m1 %s\nmonitor-quorum 0\n" % monitor.vkey()},
        {"what": "monitor-quorum before a monitor line",
         "text": policy_head + "monitor m1 %s\nmonitor-quorum 1\nmonitor m2 %s\n" % (monitor.vkey(), other.vkey())},
        {"what": "two monitor-quorum lines",
         "text": policy_head + "monitor m1 %s\nmonitor-quorum 1\nmonitor-quorum 1\n" % monitor.vkey()},
        {"what": "two monitors with one public key",
         "text": policy_head + "monitor m1 %s\nmonitor m2 %s\n"
         % (monitor.vkey(), Key("monitor.example/copy", monitor.seed).vkey())},
        {"what": "a monitor and a witness of one name",
         "text": policy_head + "witness m1 %s\nmonitor m1 %s\n" % (as_witness.vkey(), monitor.vkey())},
        {"what": "monitor-quorum without monitors", "text": policy_head + "monitor-quorum any\n"},
    ]
    for p in invalid:  # each broken by its monitor lines alone, never by a missing quorum line
        if "\nquorum " not in p["text"]:
            p["text"] += "quorum none\n"
    # The policies' cosignature lines, by policy name, at one time.
    policy_lines = {n.split("/")[1]: k.line(text, later) for n, k in m.items()}

    return {
        "comment": "CONTRACT section 5c (docs/contract/monitors.md): a monitor key from a fixed seed, its map "
                   "cosignatures of the version 4 checkpoint-time note of checkpoint_time.json, lines a verifier "
                   "must refuse or ignore, and tlog-policies with monitor lines. Made with Python's cryptography "
                   "by map_cosignature_vectors.py, not the ledger's code.",
        "key": {"name": monitor.name, "seed_hex": monitor.seed.hex(), "type_hex": TYPE.hex(),
                "public_key_hex": monitor.public.hex(), "key_id_hex": monitor.key_id.hex(),
                "vkey": monitor.vkey(), "key_file": monitor.key_file(),
                "witness_vkey_of_the_same_seed": as_witness.vkey()},
        "log_vkey": times["verifier_key"],
        "note": note,
        "note_time": note_time,
        "cosignatures": cosignatures,
        "refused": refused,
        "two_lines_by_the_monitor": {"cosigned_note": two_lines, "refusal": "map cosignature: two lines"},
        "note_of_version_3": {"cosigned_note": v3 + monitor.line(note_text(v3), later),
                              "refusal": "map cosignature: only a checkpoint-time note of version 4"},
        "policies": policies,
        "policy_lines": policy_lines,
        "invalid_policies": invalid,
    }


def main():
    text = json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
    if "--write" in sys.argv[1:]:
        with open(PATH, "w") as f:
            f.write(text)
        print("wrote %s" % PATH)
        return 0
    with open(PATH) as f:
        if f.read() != text:
            print("FAIL: %s differs from what the contract's text gives; rerun with --write if the text changed"
                  % PATH)
            return 1
    print("ok: %s is what section 5c gives" % PATH)
    return 0


if __name__ == "__main__":
    sys.exit(main())
