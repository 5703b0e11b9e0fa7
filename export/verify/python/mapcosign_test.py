#!/usr/bin/env python3
"""export/verify/python/mapcosign.py and the monitor lines of tlogpolicy.py
(CONTRACT.md section 5c, written from its text, not from the vectors'
generator nor the C++) against every vector of
tests/vectors/map_cosignature.json, then cases of their own made with the
vectors' monitor seed:

- key: the monitor's verifier key and key file read, type bytes, key ID and
  public key as the vectors say; the witness key of the same seed and the
  log's key refused as monitor keys;
- note and cosignatures: the signed message byte for byte, each cosigned
  note's time;
- refused: each line ignored (no time) or refused with the vectors' words,
  and then with section 7's whole words; two lines by the monitor, a line
  on a note of version 3;
- policies: each set of monitors in `meets` passes check_monitored() with
  their `policy_lines` on the note and gives the monitored: line, each in
  `does_not_meet` fails with FAILED_PRECONDITION naming exactly the
  monitors missing;
- invalid_policies: each refused, at its line, in the words of
  INVALID_POLICY_REASONS (those ledger-verify-go gives);
- own cases: the syntax of the monitor lines, the quorum line still
  required, a time note missing.

Usage: mapcosign_test.py   (exit 0 when every case holds, 1 naming those that do not)
"""
import base64
import hashlib
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

# The whole refusal of each invalid policy, by its `what`.
NOT_A_MONITOR_KEY = "is not a monitor key (type 0xff evidence-ledger/map-cosignature/v1)"
INVALID_POLICY_REASONS = {
    "a witness key as a monitor": "line 2: monitor verifier key: a witness key (type 0x04) " + NOT_A_MONITOR_KEY,
    "a monitor named in a group": "line 4: member 'm1' is a monitor: monitors are not witnesses",
    "the quorum naming a monitor": "line 3: quorum 'm1' is a monitor: monitors are not witnesses",
    "monitor-quorum above the number of monitors":
        "line 3: monitor-quorum must be all, any or a decimal k with 1 <= k <= 1",
    "monitor-quorum 0": "line 3: monitor-quorum must be all, any or a decimal k with 1 <= k <= 1",
    "monitor-quorum before a monitor line":
        "line 4: a monitor line after the monitor-quorum line (line 3), which follows every monitor line",
    "two monitor-quorum lines": "line 4: a second monitor-quorum line",
    "two monitors with one public key": "line 3: this monitor's key is listed twice",
    "a monitor and a witness of one name": "line 3: 'm1' is already defined on line 2",
    "monitor-quorum without monitors": "line 2: monitor-quorum without a monitor line before it",
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
    except (ValueError, tlogpolicy.PolicyError) as e:
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
    key = tlogpolicy.parse_monitor_vkey(k["vkey"])
    expect("key: name", key.name, k["name"])
    expect("key: key ID", key.key_id.hex(), k["key_id_hex"])
    expect("key: public key", key.public.hex(), k["public_key_hex"])
    expect("key: type bytes", tlogpolicy.TYPE_MONITOR.hex(), k["type_hex"])
    expect("key: 67 bytes before base64", len(base64.b64decode(k["vkey"].split("+", 2)[2])), 67)
    expect("key: written back", key.vkey(), k["vkey"])
    upper = k["vkey"].replace("+%s+" % k["key_id_hex"], "+%s+" % k["key_id_hex"].upper(), 1)
    expect("key: its key ID read in upper case, written in lower case",
           outcome(lambda: tlogpolicy.parse_monitor_vkey(upper).vkey()), ("ok", k["vkey"]))
    file_key, seed = mapcosign.parse_monitor_key_file(k["key_file"])
    expect("key file: seed", seed.hex(), k["seed_hex"])
    expect("key file: its verifier key", file_key.vkey(), k["vkey"])
    witness = tlogpolicy.parse_vkey(k["witness_vkey_of_the_same_seed"], tlogpolicy.TYPE_COSIGNATURE)
    expect("witness key of the same seed: same public key, another key ID",
           (witness.public == key.public, witness.key_id != key.key_id), (True, True))
    expect("witness key of the same seed: refused as a monitor key",
           outcome(lambda: tlogpolicy.parse_monitor_vkey(k["witness_vkey_of_the_same_seed"])),
           ("ValueError", "a witness key (type 0x04) " + NOT_A_MONITOR_KEY))
    expect("log key: refused as a monitor key", outcome(lambda: tlogpolicy.parse_monitor_vkey(v["log_vkey"])),
           ("ValueError", "a log key (type 0x01) " + NOT_A_MONITOR_KEY))
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
    log = v["log_vkey"]
    for i, p in enumerate(v["policies"]):
        policy = tlogpolicy.parse(p["text"].encode())
        label = "policy %d (%s, monitor-quorum %d)" % (i, ", ".join(policy.monitors), policy.monitor_quorum)
        expect(label + ": quorum none, monitor-quorum as written", (policy.quorum, policy.monitor_quorum),
               ("none", [2, 2, 1][i]))
        for names in p["meets"]:
            note = v["note"] + "".join(v["policy_lines"][n] for n in names)
            got = outcome(lambda: mapcosign.check_monitored(policy, note.encode(), log))
            cosigned = [(n, line_time(v["policy_lines"][n])) for n in names]
            expect("%s: the note cosigned by %s passes" % (label, names), got, ("ok", cosigned))
            expect("%s: the note cosigned by %s: its monitored: line" % (label, names),
                   mapcosign.monitored_line(policy, cosigned), "monitored: monitor-quorum %d of %d met; map "
                   "cosigned by %s" % (policy.monitor_quorum, len(policy.monitors), ", ".join(
                       "%s at %s (%d)" % (n, tlogpolicy.utc_seconds(t), t) for n, t in cosigned)))
        for names in p["does_not_meet"]:
            note = v["note"] + "".join(v["policy_lines"][n] for n in names)
            missing = [n for n in policy.monitors if n not in names]
            want = ("checkpoint-time: the policy's monitor-quorum %d of %d is not met: no map cosignature from %s"
                    % (policy.monitor_quorum, len(policy.monitors), ", ".join(missing)))
            if names:
                want += "; cosigned by " + ", ".join(names)
            expect("%s: the note cosigned by %s refused naming %s" % (label, names, missing),
                   outcome(lambda: mapcosign.check_monitored(policy, note.encode(), log)),
                   ("refused", want, "FAILED_PRECONDITION"))
    policy = tlogpolicy.parse(v["policies"][0]["text"].encode())
    note = mapcosign.open_time_note(v["note"].encode(), log)
    for name, line in v["policy_lines"].items():
        one = mapcosign.open_time_note((v["note"] + line).encode(), log)
        when = mapcosign.map_cosignature_time(policy.monitors[name], one)
        expect("policy line of %s verifies, not before the note" % name,
               when is not None and when >= note.seconds(), True)
    expect("invalid policies: one worded refusal for each", len(INVALID_POLICY_REASONS), len(v["invalid_policies"]))
    for bad in v["invalid_policies"]:
        expect("invalid policy (%s)" % bad["what"], outcome(lambda: tlogpolicy.parse(bad["text"].encode())),
               ("PolicyError", INVALID_POLICY_REASONS.get(bad["what"])))


def line_time(line):
    """The time a map cosignature line states."""
    return struct.unpack(">Q", base64.b64decode(line.split(" ")[2])[4:12])[0]


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

    policy_rules(v)
    monitored(v)


def policy_rules(v):
    """The syntax of the monitor lines (section 5c), in ledger-verify-go's
    words."""
    log = v["log_vkey"]
    m = "monitor M " + v["key"]["vkey"]
    witness_ok = "witness.example/w1+7bede9df+" + v["key"]["witness_vkey_of_the_same_seed"].split("+", 2)[2]
    public = bytes.fromhex(v["key"]["public_key_hex"])
    spaced_id = hashlib.sha256("m\u00a0x\n".encode() + tlogpolicy.TYPE_MONITOR + public).digest()[:4]
    spaced = tlogpolicy.Key("m\u00a0x", spaced_id, tlogpolicy.TYPE_MONITOR, public)
    for text, want in [
        (m + " https://m.example\nquorum none\n", None),
        (m + "\nmonitor-quorum all\nquorum none\n", None),
        (m + "\nmonitor-quorum any\nquorum none\n", None),
        (m + "\nmonitor-quorum 1\nquorum none\n", None),
        # A witness and a monitor may hold one public key (their type bytes
        # and key IDs differ); section 5c forbids it only between two monitors.
        ("%s\n%s\nquorum none\n" % (witness_ok.join(["witness w1 ", ""]), m), None),
        (m + "\n", "no quorum line (use 'quorum none' for none)"),
        ("monitor none %s\nquorum none\n" % v["key"]["vkey"], "line 1: 'none' is reserved and cannot name a monitor"),
        ("monitor M\nquorum none\n", "line 1: want 'monitor NAME VKEY [URL]'"),
        (m + " https://m.example extra\nquorum none\n", "line 1: want 'monitor NAME VKEY [URL]'"),
        (m + "\nmonitor-quorum\nquorum none\n", "line 2: want 'monitor-quorum all|any|K'"),
        (m + "\nmonitor-quorum 01x\nquorum none\n",
         "line 2: monitor-quorum must be all, any or a decimal k with 1 <= k <= 1"),
        (m + "\nmonitor-quorum +1\nquorum none\n",
         "line 2: monitor-quorum must be all, any or a decimal k with 1 <= k <= 1"),
        ("monitor-quorum all\nquorum none\n", "line 1: monitor-quorum without a monitor line before it"),
        ("monitor M %s\nquorum none\n" % log,
         "line 1: monitor verifier key: a log key (type 0x01) " + NOT_A_MONITOR_KEY),
        (m + "x\nquorum none\n", "line 1: monitor verifier key: key data must be base64 of 0xff "
                                  "evidence-ledger/map-cosignature/v1 and 32 bytes"),
        (m.replace("+8ceb3d9b+", "+8ceb3d9c+") + "\nquorum none\n",
         "line 1: monitor verifier key: key id 8ceb3d9c does not match the key"),
        ("monitor M %s\nquorum none\n" % spaced.vkey(),
         "line 1: monitor verifier key: the key name 'm\u00a0x' holds white space"),
        # A witness is not a monitor either: its key is refused.
        ("witness W %s\nquorum W\n" % v["key"]["vkey"],
         "line 1: witness verifier key: key data must be base64 of 0x04 (cosignature/v1) and 32 bytes"),
        (m + "\nquorum none\nmonitors M\n",
         "line 3: unknown keyword 'monitors' (want log, witness, group, quorum, monitor or monitor-quorum)"),
    ]:
        got = outcome(lambda: tlogpolicy.parse(text.encode()))
        expect("own: policy %r" % text, got[0] if want is None else got,
               "ok" if want is None else ("PolicyError", want))
    expect("own: no monitor-quorum line: all the monitors", tlogpolicy.parse(
        (m + "\nmonitor N %s\nquorum none\n" % v["policies"][1]["text"].split("monitor m2 ")[1].split("\n")[0])
        .encode()).monitor_quorum, 2)


def monitored(v):
    """check_monitored() on notes the vectors do not hold."""
    log = v["log_vkey"]
    policy = tlogpolicy.parse(v["policies"][2]["text"].encode())  # m1, m2, monitor-quorum any
    bad_line = v["note"] + [r for r in v["refused"] if r["refusal"] != "ignored"][0]["line"]
    expect("own: a policy monitor's bad line refused, naming it, though the other cosigned", outcome(
        lambda: mapcosign.check_monitored(policy, (bad_line + v["policy_lines"]["m2"]).encode(), log)),
        ("refused", "checkpoint-time: monitor m1: map cosignature: signature by monitor.example/m1+8ceb3d9b does not "
         "verify", "PERMISSION_DENIED"))
    expect("own: no time note", outcome(lambda: mapcosign.check_monitored(policy, None, log)),
           ("refused", "checkpoint-time: missing: the policy's monitors cosign the checkpoint-time note",
            "FAILED_PRECONDITION"))
    v3 = v["note_of_version_3"]["cosigned_note"]
    expect("own: a policy monitor's line on a note of version 3", outcome(
        lambda: mapcosign.check_monitored(policy, v3.encode(), log)),
        ("refused", "checkpoint-time: monitor m1: map cosignature: only a checkpoint-time note of version 4 is "
         "cosigned by monitors", "PERMISSION_DENIED"))
    bare_v3 = v3[:v3.rindex("\u2014 monitor.example/m1")]
    expect("own: a note of version 3 with no monitor's line fails the monitor-quorum only", outcome(
        lambda: mapcosign.check_monitored(policy, bare_v3.encode(), log)),
        ("refused", "checkpoint-time: the policy's monitor-quorum 1 of 2 is not met: no map cosignature from m1, m2",
         "FAILED_PRECONDITION"))
    # Without monitors, map cosignature lines are lines of unknown keys.
    plain = tlogpolicy.parse(("log %s\nquorum none\n" % log).encode())
    expect("own: a policy without monitors ignores a bad map cosignature", outcome(
        lambda: mapcosign.check_monitored(plain, bad_line.encode(), log)), ("ok", []))


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
