#!/usr/bin/env python3
"""export/verify/python/mapcosign.py (CONTRACT.md section 5c, written from
its text, not from the vectors' generator nor the C++) against every vector
of tests/vectors/map_cosignature.json, then a few cases of its own made with
the vectors' monitor seed:

- key: the monitor's verifier key and key file read, type bytes, key ID and
  public key as the vectors say; the witness key of the same seed and the
  log's key refused as monitor keys;
- note and cosignatures: the signed message byte for byte, each cosigned
  note's time;
- refused: each line ignored (no time) or refused with the vectors' words,
  two lines by the monitor, a line on a note of version 3;
- policies: each set of monitors in `meets` passes check_time_note() with
  their `policy_lines` on the note, each in `does_not_meet` fails with
  FAILED_PRECONDITION naming exactly the monitors missing;
- invalid_policies: each refused, at the line and for the rule its `what`
  names (see INVALID_POLICY_REASONS for the one that is refused earlier).

Usage: mapcosign_test.py   (exit 0 when every case holds, 1 naming those that do not)
"""
import base64
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mapcosign  # noqa: E402
import tlogpolicy  # noqa: E402

VECTORS = os.path.join(HERE, "..", "..", "..", "tests", "vectors", "map_cosignature.json")
FAILURES = []
CHECKED = [0]

# The line and the words of the refusal of each invalid policy, by its
# `what`: the rule it breaks as this implementation reads section 5c.
# "a monitor named in a group": its witness line's key ID (d87ae8f2) is that
# of the key under the name monitor.example/m1, not witness.example/w1
# (7bede9df), so section 5b refuses the policy at line 2 before the group
# line is read; own_cases() checks the group rule with a witness key whose ID
# matches.
INVALID_POLICY_REASONS = {
    "a witness key as a monitor": (2, "monitor verifier key: a witness key (type 0x04"),
    "a monitor named in a group": (2, "witness verifier key: key id d87ae8f2 does not match the key"),
    "the quorum naming a monitor": (3, "quorum 'm1' is a monitor"),
    "monitor-quorum above the number of monitors": (3, "monitor-quorum must be all, any or a decimal k"),
    "monitor-quorum 0": (3, "monitor-quorum must be all, any or a decimal k"),
    "monitor-quorum before a monitor line": (4, "a monitor line after the monitor-quorum line"),
    "two monitor-quorum lines": (4, "a second monitor-quorum line"),
    "two monitors with one public key": (3, "this monitor's public key is that of monitor 'm1'"),
    "a monitor and a witness of one name": (3, "'m1' is already defined on line 2"),
    "monitor-quorum without monitors": (2, "monitor-quorum without a monitor line"),
}


def expect(name, got, want):
    CHECKED[0] += 1
    if got != want:
        FAILURES.append("%s:\n  got:  %r\n  want: %r" % (name, got, want))
    else:
        print("ok: %s" % name)


def outcome(fn):
    """("ok", value) of fn(), or (class name, message[, code]) of what it raises."""
    try:
        return "ok", fn()
    except mapcosign.MapCosignatureError as e:
        return "refused", str(e), e.code
    except (mapcosign.MonitorKeyError, tlogpolicy.PolicyError) as e:
        return type(e).__name__, str(e)


def expect_refusal(name, fn, words, code=None):
    """fn() raises MapCosignatureError whose message starts with `words`
    (and has `code` when given)."""
    got = outcome(fn)
    ok = got[0] == "refused" and got[1].startswith(words) and (code is None or got[2] == code)
    want = "refused: " + words + (" (%s)" % code if code else "")
    expect(name, want if ok else got, want)
    if ok:
        print("    %s" % got[1])


def check_key(v):
    k = v["key"]
    key = mapcosign.parse_monitor_vkey(k["vkey"])
    expect("key: name", key.name, k["name"])
    expect("key: key ID", key.key_id.hex(), k["key_id_hex"])
    expect("key: public key", key.public.hex(), k["public_key_hex"])
    expect("key: type bytes", mapcosign.MONITOR_TYPE.hex(), k["type_hex"])
    expect("key: 67 bytes before base64", len(base64.b64decode(k["vkey"].split("+", 2)[2])), 67)
    expect("key: written back", key.vkey(), k["vkey"])
    file_key, seed = mapcosign.parse_monitor_key_file(k["key_file"])
    expect("key file: seed", seed.hex(), k["seed_hex"])
    expect("key file: its verifier key", file_key.vkey(), k["vkey"])
    witness = tlogpolicy.parse_vkey(k["witness_vkey_of_the_same_seed"], tlogpolicy.TYPE_COSIGNATURE)
    expect("witness key of the same seed: same public key, another key ID",
           (witness.public == key.public, witness.key_id != key.key_id), (True, True))
    got = outcome(lambda: mapcosign.parse_monitor_vkey(k["witness_vkey_of_the_same_seed"]))
    expect("witness key of the same seed: refused as a monitor key", got[:1] + (got[1][:52],),
           ("MonitorKeyError", "monitor verifier key: a witness key (type 0x04, cosi"))
    got = outcome(lambda: mapcosign.parse_monitor_vkey(v["log_vkey"]))
    expect("log key: refused as a monitor key", got[:1] + (got[1][:47],),
           ("MonitorKeyError", "monitor verifier key: a log key (type 0x01, Ed2"))
    return key, seed


def check_cosignatures(v, key):
    note = mapcosign.open_time_note(v["note"].encode(), v["log_vkey"])
    expect("note: version 4", note.version, 4)
    expect("note: its time in seconds", note.seconds(), v["note_time"])
    expect("note: the monitor did not cosign it", mapcosign.map_cosignature_time(key, note), None)
    for c in v["cosignatures"]:
        name = "cosignature at %d" % c["time"]
        expect(name + ": signed message", mapcosign.signed_message(note.text, c["time"]),
               c["signed_message"].encode())
        expect(name + ": the note with its line", v["note"] + c["line"], c["cosigned_note"])
        got = outcome(lambda: mapcosign.verify(c["cosigned_note"].encode(), v["log_vkey"], key.vkey()))
        expect(name + ": verifies", got, ("ok", c["time"]))


def check_refused(v, key):
    def read(text):
        return lambda: mapcosign.verify(text.encode(), v["log_vkey"], key.vkey())

    for r in v["refused"]:
        name = "refused: %s" % r["what"]
        if r["refusal"] == "ignored":
            expect(name + ": ignored", outcome(read(v["note"] + r["line"])), ("ok", None))
        else:
            expect_refusal(name, read(v["note"] + r["line"]), r["refusal"])
    t = v["two_lines_by_the_monitor"]
    expect_refusal("two lines by the monitor", read(t["cosigned_note"]), t["refusal"])
    t = v["note_of_version_3"]
    expect_refusal("a note of version 3", read(t["cosigned_note"]), t["refusal"])
    # The whole words of each refusal, as section 7 ("Monitored packs")
    # writes them; None where the line is ignored.
    by = key.vkey_id()
    signature = "map cosignature: signature by %s does not verify" % by
    words = [None, signature, signature,
             "map cosignature: time %d is before the note's time %d (seconds): a monitor cannot have cosigned a "
             "note before the ledger signed it" % (v["note_time"] - 1, v["note_time"]),
             "map cosignature: time 0: want 1 <= time <= 2^63-1",
             "map cosignature: length: want 76 bytes (key ID, time, signature), found 75",
             signature, None]
    expect("refused: one worded refusal for each line", len(words), len(v["refused"]))
    for r, want in zip(v["refused"], words):
        if want is not None:
            expect("refused: %s: in section 7's words" % r["what"], outcome(read(v["note"] + r["line"])),
                   ("refused", want, "PERMISSION_DENIED"))
    expect("two lines by the monitor: in section 7's words", outcome(read(v["two_lines_by_the_monitor"][
        "cosigned_note"])), ("refused", "map cosignature: two lines by %s" % by, "PERMISSION_DENIED"))
    expect("a note of version 3: in section 7's words", outcome(read(v["note_of_version_3"]["cosigned_note"])),
           ("refused", "map cosignature: only a checkpoint-time note of version 4 is cosigned by monitors",
            "PERMISSION_DENIED"))
    line = v["cosignatures"][0]["line"]
    expect("one line twice: two lines", outcome(read(v["note"] + line + line)),
           ("refused", "map cosignature: two lines by %s" % by, "PERMISSION_DENIED"))


def check_policies(v):
    for i, p in enumerate(v["policies"]):
        policy = mapcosign.parse_policy(p["text"].encode())
        label = "policy %d (%s, monitor-quorum %d)" % (i, ", ".join(policy.monitors), policy.monitor_quorum)
        for names in p["meets"]:
            note = v["note"] + "".join(v["policy_lines"][n] for n in names)
            expect("%s: %s meets it" % (label, names), policy.monitor_quorum_met(set(names)), True)
            got = outcome(lambda: [n for n, _ in mapcosign.check_time_note(policy, note.encode())])
            expect("%s: the note cosigned by %s passes" % (label, names), got, ("ok", names))
        for names in p["does_not_meet"]:
            note = v["note"] + "".join(v["policy_lines"][n] for n in names)
            expect("%s: %s does not meet it" % (label, names), policy.monitor_quorum_met(set(names)), False)
            got = outcome(lambda: mapcosign.check_time_note(policy, note.encode()))
            missing = [n for n in policy.monitors if n not in names]
            ok = (got[0] == "refused" and got[2] == "FAILED_PRECONDITION"
                  and got[1].split("no map cosignature from ")[-1].split(";")[0].split(", ") == missing)
            expect("%s: the note cosigned by %s refused naming %s" % (label, names, missing),
                   "FAILED_PRECONDITION naming %s" % missing if ok else got,
                   "FAILED_PRECONDITION naming %s" % missing)
    policy = mapcosign.parse_policy(v["policies"][0]["text"].encode())
    note = mapcosign.open_time_note(v["note"].encode(), v["log_vkey"])
    for name, line in v["policy_lines"].items():
        one = mapcosign.open_time_note((v["note"] + line).encode(), v["log_vkey"])
        when = mapcosign.map_cosignature_time(policy.monitors[name], one)
        expect("policy line of %s verifies, not before the note" % name,
               when is not None and when >= note.seconds(), True)
    for bad in v["invalid_policies"]:
        got = outcome(lambda: mapcosign.parse_policy(bad["text"].encode()))
        expect("invalid policy (%s): refused" % bad["what"], got[0], "PolicyError")
        want = INVALID_POLICY_REASONS.get(bad["what"])
        if want and got[0] == "PolicyError":
            at = "line %d: %s" % want
            expect("invalid policy (%s): %s" % (bad["what"], at), got[1][:len(at)], at)


def own_cases(v, key, seed):
    """Cases the vectors do not hold, signed with the vectors' monitor seed."""
    note = mapcosign.open_time_note(v["note"].encode(), v["log_vkey"])

    def with_line(line):
        return lambda: mapcosign.verify(v["note"].encode() + line, v["log_vkey"], key.vkey())

    top = mapcosign.MAX_TIME
    expect("own: time 2^63-1 verifies", outcome(with_line(mapcosign.cosignature_line(key, seed, note.text, top))),
           ("ok", top))
    blob = key.key_id + struct.pack(">Q", top + 1) + bytes(64)
    expect_refusal("own: time 2^63 refused", with_line(("\u2014 %s %s\n" % (
        key.name, base64.b64encode(blob).decode())).encode()), "map cosignature: time")
    line = mapcosign.cosignature_line(key, seed, note.text, v["note_time"])
    long = base64.b64encode(base64.b64decode(line.split(b" ")[2]) + b"\0")
    expect_refusal("own: 77 bytes refused", with_line(line.rsplit(b" ", 1)[0] + b" " + long + b"\n"),
                   "map cosignature: length")
    expect("own: the line made here is the vectors' at the note's time", line.decode(), v["cosignatures"][0]["line"])
    three = v["note"] + v["cosignatures"][0]["line"] * 3
    expect_refusal("own: three lines by the monitor", lambda: mapcosign.verify(
        three.encode(), v["log_vkey"], key.vkey()), "map cosignature: two lines")
    v3 = v["note_of_version_3"]["cosigned_note"]
    only_others = v3.rsplit("\u2014 monitor.example/m1", 1)[0] + v["policy_lines"]["m2"]
    expect("own: a version 3 note with another monitor's line only", outcome(lambda: mapcosign.verify(
        only_others.encode(), v["log_vkey"], key.vkey())), ("ok", None))

    log = v["log_vkey"]
    m1 = v["key"]["vkey"]
    witness_ok = "witness.example/w1+7bede9df+" + v["key"]["witness_vkey_of_the_same_seed"].split("+", 2)[2]
    for what, text, want in [
        ("a monitor named in a group (witness key ID right)",
         "log %s\nwitness w1 %s\nmonitor m1 %s\ngroup g any w1 m1\nquorum g\n" % (log, witness_ok, m1),
         "line 4: member 'm1' is a monitor"),
        ("monitor-quorum all with no monitor",
         "log %s\nmonitor-quorum all\nquorum none\n" % log, "line 2: monitor-quorum without a monitor line"),
        ("a log key as a monitor", "log %s\nmonitor m1 %s\n" % (log, log),
         "line 2: monitor verifier key: a log key (type 0x01"),
        ("a monitor line without a key", "log %s\nmonitor m1\n" % log, "line 2: want 'monitor NAME VKEY [URL]'"),
        ("a monitor named none", "log %s\nmonitor none %s\n" % (log, m1), "line 2: 'none' is reserved"),
        ("no monitor and no quorum line", "log %s\n" % log, "no quorum line"),
        ("monitor-quorum k with a leading sign", "log %s\nmonitor m1 %s\nmonitor-quorum +1\n" % (log, m1),
         "line 3: monitor-quorum must be"),
    ]:
        got = outcome(lambda: mapcosign.parse_policy(text.encode()))
        expect("own: invalid policy (%s)" % what, got[:1] + (got[1][:len(want)],), ("PolicyError", want))
    # A witness and a monitor may hold one public key (their type bytes and
    # key IDs differ); section 5c forbids it only between two monitors.
    both = "log %s\nwitness w1 %s\nmonitor m1 %s\nquorum none\n" % (log, witness_ok, m1)
    expect("own: a witness and a monitor of one public key", outcome(
        lambda: list(mapcosign.parse_policy(both.encode()).monitors)), ("ok", ["m1"]))
    # Tools without section 5c refuse the new lines as unknown.
    got = outcome(lambda: tlogpolicy.parse(v["policies"][0]["text"].encode()))
    expect("own: tlogpolicy.parse refuses a monitor line", got[:1] + (got[1][:24],),
           ("PolicyError", "line 2: unknown keyword "))
    # Without monitors, map cosignature lines are lines of unknown keys.
    plain = mapcosign.parse_policy(("log %s\nquorum none\n" % log).encode())
    bad_line = v["note"] + [r for r in v["refused"] if r["refusal"] != "ignored"][0]["line"]
    expect("own: a policy without monitors ignores a bad map cosignature", outcome(
        lambda: mapcosign.check_time_note(plain, bad_line.encode())), ("ok", []))
    policy = mapcosign.parse_policy(v["policies"][2]["text"].encode())
    expect_refusal("own: a policy monitor's bad line refused, naming it", lambda: mapcosign.check_time_note(
        policy, (bad_line + v["policy_lines"]["m2"]).encode()), "checkpoint-time: monitor m1: map cosignature: "
        "signature by monitor.example/m1+8ceb3d9b does not verify", "PERMISSION_DENIED")
    # The ledger's public key under another name: a log of the policy that
    # did not sign the note.
    raw = base64.b64decode(v["log_vkey"].split("+", 2)[2])
    other_log = "log other.example/log+%s+%s\nmonitor m1 %s\n" % (
        mapcosign.key_id("other.example/log", b"", raw).hex(), v["log_vkey"].split("+", 2)[2], m1)
    foreign = mapcosign.parse_policy(other_log.encode())
    expect_refusal("own: a note no policy log signed", lambda: mapcosign.check_time_note(
        foreign, v["cosignatures"][0]["cosigned_note"].encode()), "time note: no signature by a log of the policy",
        "PERMISSION_DENIED")
    line = mapcosign.monitored_line(policy, [("m1", v["note_time"]), ("m2", v["note_time"] + 61)])
    expect("own: the line printed after the witnessed: line", line, "monitored: monitor-quorum 1 of 2 met; map "
           "cosigned by m1 at 2026-01-01T00:00:00Z (1767225600), m2 at 2026-01-01T00:01:01Z (1767225661)")


def main():
    with open(VECTORS, encoding="utf-8") as f:
        v = json.load(f)
    for field in ("cosignatures", "refused", "policies", "policy_lines", "invalid_policies"):
        expect("vectors: %s is not empty" % field, bool(v.get(field)), True)
    try:
        key, seed = check_key(v)
        check_cosignatures(v, key)
        check_refused(v, key)
        check_policies(v)
        own_cases(v, key, seed)
    except Exception as e:  # a crash is a failure too, named
        FAILURES.append("crashed: %s: %s" % (type(e).__name__, e))
    if FAILURES:
        for f in FAILURES:
            print("FAIL: %s" % f)
        print("FAIL: %d of %d checks" % (len(FAILURES), CHECKED[0]))
        return 1
    print("ok: all %d checks of map_cosignature.json and mapcosign.py's own cases" % CHECKED[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
