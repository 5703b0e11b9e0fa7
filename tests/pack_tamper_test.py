"""Every tamper case against the three verifiers: `ledgerctl verify`,
`ledger-verify` (beside ledgerctl in the build) and export/verify/python/verify_pack.py
must each refuse, with the reason expected; ledger-verify prints exactly
what ledgerctl verify prints, with the same exit code.

Cases that a forger without the key could make (a flipped byte in any file, a
manifest whose digest is not the one signed) are made as such. Cases that
test the later checks (a dropped or reordered entry, a swapped proof hash, a
checkpoint signed by another key) re-sign the manifest with the ledger's own
key file, as only the ledger could, so that the verifiers reach them.

A case may expect verify_pack.py to accept a pack (ACCEPTED): it checks
outcomes.json and report.html by their digests in the signed manifest only,
so a pack re-signed by the ledger's key with another report holds for it;
ledgerctl verify rebuilds the report and refuses it.

Usage: pack_tamper_test.py LEDGERCTL VERIFY_PACK_PY RUN_PACK VKEY_FILE
       LEDGER_KEY_FILE OTHER_KEY_FILE WORK_DIR [SEQ_PACK TEAM_PACK [UNKNOWN_PACK]]
UNKNOWN_PACK: a run pack with a step declared UNKNOWN.
"""
import base64
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def signer(key_file):
    """sign(text) -> signed note, from a PRIVATE+KEY+name+id+base64 file."""
    _, _, name, key_id, key = open(key_file).read().strip().split("+", 4)
    raw = base64.b64decode(key)
    private = Ed25519PrivateKey.from_private_bytes(raw[1:])

    def sign(text):
        sig = private.sign(text)
        line = "\u2014 %s %s\n" % (name, base64.b64encode(bytes.fromhex(key_id) + sig).decode())
        return text + b"\n" + line.encode()
    return sign


def read_pack(path):
    with tarfile.open(path, "r:gz") as t:
        return [(m.name.split("/", 1)[1], t.extractfile(m).read()) for m in t]


def write_pack(files, path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.USTAR_FORMAT) as t:
        for name, data in files:
            info = tarfile.TarInfo("evidence/" + name)
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    open(path, "wb").write(buf.getvalue())


def resigned(files, sign, outcomes_tool=None):
    """The manifest rewritten over the files' digests and counts, signed;
    with outcomes_tool (tests/util/pack_outcomes), outcomes.json recomputed
    from the entries first, as the operator would."""
    d = dict(files)
    if outcomes_tool:
        d["outcomes.json"] = subprocess.run([outcomes_tool], input=d["entries.jsonl"], capture_output=True,
                                            check=True).stdout
    manifest = json.loads(d["manifest.json"])
    for name, data in d.items():
        if name not in ("manifest.json", "manifest.sig"):
            manifest["files"][name] = hashlib.sha256(data).hexdigest()
    manifest["counts"]["entries"] = d["entries.jsonl"].count(b"\n")
    text = (json.dumps(manifest, separators=(",", ":"), sort_keys=True) + "\n").encode()
    d["manifest.json"] = text
    d["manifest.sig"] = sign((hashlib.sha256(text).hexdigest() + "\n").encode())
    return sorted(d.items())


def rebuilt_report(files, build):
    """The files with report.html rebuilt from their manifest, checkpoint,
    checkpoint-time and entries by the exporter's own function
    (tests/util/pack_report), as an operator re-signing a pack of format 7
    (whose page lists the time note's lines) would."""
    d = dict(files)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name in ("manifest.json", "checkpoint", "checkpoint-time"):
            paths.append(os.path.join(tmp, name))
            open(paths[-1], "wb").write(d.get(name, b""))
        d["report.html"] = subprocess.run([os.path.join(build, "tests", "pack_report")] + paths,
                                          input=d["entries.jsonl"], capture_output=True, check=True).stdout
    return sorted(d.items())


ACCEPTED = "accepted"


def report_unknown_as_succeeded(data):
    """report.html showing the UNKNOWN steps as succeeded: the warning gone,
    the rows and the timeline's bars and titles those of a success."""
    text = data.decode()
    assert '<tr class="unknown">' in text, "the pack has no unknown step"
    text = re.sub(r'<p class="flag"><strong>\d+ step\(s\) never reported a completion and were declared '
                  r'UNKNOWN\.</strong></p>\n', "", text)
    text = re.sub(r'<text [^>]*fill="#c00000" font-weight="bold">UNKNOWN</text>', "", text)
    text = text.replace('<rect class="step unknown"', '<rect class="step succeeded"')
    text = text.replace('fill="#c00000"><title>', 'fill="#4c9a2a"><title>')
    text = text.replace("UNKNOWN (no completion by the deadline)", "succeeded")
    text = text.replace('<tr class="unknown">', '<tr class="">').replace("<td>UNKNOWN</td>", "<td>succeeded</td>")
    return text.encode()


def first_difference(a, b):
    """(byte offset, line) where b first differs from a."""
    at = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return at, a[:at].count(b"\n") + 1


def edited(files, name, edit):
    return [(n, edit(d) if n == name else d) for n, d in files]


def lines_edited(files, edit):
    """entries.jsonl and proofs.jsonl with the same edit of their lines."""
    def apply(data):
        return b"".join(line + b"\n" for line in edit(data.split(b"\n")[:-1]))
    return [(n, apply(d) if n in ("entries.jsonl", "proofs.jsonl") else d) for n, d in files]


def main():
    ledgerctl, verify_py, pack, vkey_file, key_file, other_key_file, work = sys.argv[1:8]
    seq_pack, team_pack, unknown_pack = (sys.argv[8:11] + [None, None, None])[:3]
    vkey = open(vkey_file).read().strip()
    files = read_pack(pack)
    sign, other_sign = signer(key_file), signer(other_key_file)

    def flip(data):
        b = bytearray(data)
        b[len(b) // 2] ^= 1
        return bytes(b)

    def swap_first_proof_hash(data):
        at = data.index(b'"inclusion":["') + 14
        return data[:at] + (b"b" if data[at:at + 1] == b"a" else b"a") + data[at + 1:]

    def foreign_checkpoint(data):
        text = data.split(b"\n\n")[0] + b"\n"
        return other_sign(text)

    def signature_not_base64(data):
        return data[:-3] + b"!" + data[-2:]  # the signature line's last characters

    def manifest_changed(data):
        m = json.loads(data)
        m["origin"] = m["origin"] + "-forged"
        return (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()

    # (case, files, ledgerctl's reason, verify_pack.py's reason)
    cases = []
    for name, _ in files:
        ctl = {"manifest.json": r"^FAILED: manifest\.json: SHA-256 is [0-9a-f]{64}, the signature covers ",
               "manifest.sig": r"^FAILED: manifest\.sig: ",
               "ledger.vkey": r"^FAILED: ledger\.vkey: expected the given key "}.get(
                   name, r"^FAILED: %s: SHA-256 expected [0-9a-f]{64}, found [0-9a-f]{64}" % re.escape(name))
        py = {"manifest.json": r"^FAILED: manifest\.json: SHA-256 [0-9a-f]{64} is not the one signed",
              "manifest.sig": r"^FAILED: manifest\.sig: ",
              "ledger.vkey": r"^FAILED: ledger\.vkey: not the key given"}.get(
                  name, r"^FAILED: %s: SHA-256 expected [0-9a-f]{64}, found [0-9a-f]{64}" % re.escape(name))
        cases.append(("a flipped byte in " + name, edited(files, name, flip), ctl, py))
    cases += [
        ("a signature line that is not base64", edited(files, "manifest.sig", signature_not_base64),
         r"^FAILED: manifest\.sig: signature line 1: malformed$",
         r"^FAILED: manifest\.sig: signature line 1: malformed$"),
        ("a manifest changed, its signature not", edited(files, "manifest.json", manifest_changed),
         r"^FAILED: manifest\.json: SHA-256 is ", r"^FAILED: manifest\.json: SHA-256 [0-9a-f]{64} is not the one signed"),
        ("an entry dropped in the middle of the run",
         resigned(lines_edited(files, lambda ls: ls[:3] + ls[4:]), sign),
         r"^FAILED: entries\.jsonl seq \d+: run_prev expected \d+, found \d+",
         r"^FAILED: entries\.jsonl seq \d+: run_prev expected \d+, found \d+"),
        ("two entries reordered",
         resigned(lines_edited(files, lambda ls: ls[:4] + [ls[5], ls[4]] + ls[6:]), sign),
         r"^FAILED: entries\.jsonl seq \d+: (run_prev expected|seq after \d+ is not ascending)",
         r"^FAILED: entries\.jsonl seq \d+: (run_prev expected|not after seq)"),
        ("a proof hash swapped", resigned(edited(files, "proofs.jsonl", swap_first_proof_hash), sign),
         r"^FAILED: proofs\.jsonl seq \d+: inclusion: proof for index \d+ leads to root [0-9a-f]{64}",
         r"^FAILED: proofs\.jsonl seq \d+: inclusion proof does not lead to the checkpoint's root"),
        ("a checkpoint signed by another key", resigned(edited(files, "checkpoint", foreign_checkpoint), sign),
         r"^FAILED: checkpoint: signed note: no signature by ", r"^FAILED: checkpoint: no signature by "),
    ]
    def without(files, name):
        return [(n, d) for n, d in files if n != name]

    def proof_line_edited(edit):
        def apply(data):
            lines = data.split(b"\n")
            lines[2] = edit(lines[2])
            return b"\n".join(lines)
        return resigned(edited(files, "proofs.jsonl", apply), sign)

    def key_more(line):
        return line[:-1] + b',"note":"x"}'

    def upper_hash(line):
        at = line.index(b'"inclusion":["') + 14
        return line[:at] + line[at:at + 64].upper() + line[at + 64:]

    def manifest_field(key, value):
        def edit(data):
            m = json.loads(data)
            m[key] = value
            return (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()
        return resigned(edited(files, "manifest.json", edit), sign)

    def manifest_lists_signature():
        def edit(data):
            m = json.loads(data)
            m["files"]["manifest.sig"] = "00" * 32
            return (json.dumps(m, separators=(",", ":"), sort_keys=True) + "\n").encode()
        return resigned(edited(files, "manifest.json", edit), sign)

    cases += [
        ("a manifest of another format", manifest_field("format", 10),
         r"^FAILED: manifest\.json: format: want 1, 2, 3, 4, 5, 6, 7, 8 or 9, found 10$", None),
        ("a manifest with a key more", manifest_field("note", "x"),
         r"^FAILED: manifest\.json: note: not a field of the manifest$", None),
        ("a manifest whose root is in upper case", manifest_field("root", "AB" * 32),
         r"^FAILED: manifest\.json: root: want 64 lower-case hex digits$", None),
        ("a manifest naming another origin", manifest_field("origin", "another.example/log"),
         r"^FAILED: checkpoint: origin 'packs\.test/log', manifest and key say 'another\.example/log'", None),
        ("a manifest naming another tree size", manifest_field("tree_size", 7),
         r"^FAILED: checkpoint: size \d+ root [0-9a-f]{64}, the manifest says size 7 root [0-9a-f]{64}", None),
        ("a manifest listing its own signature, re-signed", manifest_lists_signature(),
         r"^FAILED: manifest\.json: lists manifest\.sig, whose digest it cannot hold$",
         r"^FAILED: manifest\.json: lists manifest\.sig, whose digest it cannot hold$"),
        ("consistency.json stripped (by someone without the key)", without(files, "consistency.json"),
         r"^FAILED: consistency\.json: listed in the manifest but missing",
         r"^FAILED: consistency\.json: listed in the manifest but missing"),
        ("a proof line with a key more", proof_line_edited(key_more),
         r"^FAILED: proofs\.jsonl seq \d+: not the proof line of this entry",
         r"^FAILED: proofs\.jsonl seq \d+: not the proof line of this entry"),
        ("a proof hash in upper case", proof_line_edited(upper_hash),
         r"^FAILED: proofs\.jsonl seq \d+: not the proof line of this entry",
         r"^FAILED: proofs\.jsonl seq \d+: not the proof line of this entry"),
    ]
    ledger_verify = os.path.join(os.path.dirname(ledgerctl), "ledger-verify")
    outcomes_tool = os.path.join(os.path.dirname(os.path.dirname(ledgerctl)), "tests", "pack_outcomes")
    if team_pack:
        team_files = read_pack(team_pack)
        team_entries = [json.loads(l) for l in dict(team_files)["entries.jsonl"].split(b"\n")[:-1]]
        window_first = json.loads(dict(team_files)["manifest.json"])["scope"]["from_seq"]

        def linked_to_previous(k):  # the entry after k is k's run's next, and links to it
            a, b = team_entries[k], team_entries[k + 1]
            return a["receipt"]["run_id"] == b["receipt"]["run_id"] and b.get("run_prev") == a["seq"]
        middle = next(k for k in range(len(team_entries) // 2, len(team_entries) - 1)
                      if linked_to_previous(k - 1) and linked_to_previous(k))
        assert linked_to_previous(0)
        cases += [
            ("an entry dropped inside a team window, a later one of its run linking to it",
             resigned(lines_edited(team_files, lambda ls: ls[:middle] + ls[middle + 1:]), sign, outcomes_tool),
             r"^FAILED: entries\.jsonl seq %d: run_prev expected %d \(the run's previous entry in the pack\), found %d"
             % (team_entries[middle + 1]["seq"], team_entries[middle - 1]["seq"], team_entries[middle]["seq"]), None),
            ("a team window's first entry dropped, the next of its run linking to it",
             resigned(lines_edited(team_files, lambda ls: ls[1:]), sign, outcomes_tool),
             r"^FAILED: entries\.jsonl seq %d: run_prev expected none or below %d \(the window's first seq\), found %d"
             % (team_entries[1]["seq"], window_first, team_entries[0]["seq"]), None),
        ]
    if seq_pack:
        seq_files = read_pack(seq_pack)
        cases += [
            ("the seq range's last entries dropped",
             resigned(lines_edited(seq_files, lambda ls: ls[:-2]), sign),
             r"^FAILED: entries\.jsonl: the seq range ends early",
             r"^FAILED: entries\.jsonl: the seq range ends early"),
            ("the seq range's first entry dropped",
             resigned(lines_edited(seq_files, lambda ls: ls[1:]), sign),
             r"^FAILED: entries\.jsonl seq \d+: seq expected \d+ \(the range has a gap\)",
             r"^FAILED: entries\.jsonl seq \d+: seq expected \d+ \(the range has a gap\)"),
        ]

    if unknown_pack:
        unknown_files = read_pack(unknown_pack)
        report = dict(unknown_files)["report.html"]
        at, line = first_difference(report, report_unknown_as_succeeded(report))
        cases += [
            ("report.html showing the UNKNOWN step as succeeded, the manifest re-signed with the ledger's key",
             resigned(edited(unknown_files, "report.html", report_unknown_as_succeeded), sign),
             r"^FAILED: report\.html: differs from the report rebuilt from the checked entries, outcomes, "
             r"checkpoint and manifest, first at byte %d \(line %d\) \(a pack of format 5 may hold the page of the "
             r"version that wrote it: --report-by-digest checks the page by its digest only\)$" % (at, line), ACCEPTED),
        ]

    # Packs that hold, written otherwise than the exporter writes them: both
    # verifiers accept them.
    def second_proof_spaced(data):
        lines = data.split(b"\n")
        lines[1] = json.dumps(json.loads(lines[1])).encode()  # ", " and ": "
        return b"\n".join(lines)

    valid = [
        ("a proof line written with spaces, the next one compact",
         resigned(edited(files, "proofs.jsonl", second_proof_spaced), sign)),
    ]
    failures = 0
    ledgerctl_said = {}

    def differs_from_ledgerctl(label, tool, p):
        """ledger-verify MUST print what ledgerctl verify printed (run just
        before it on the same pack), with the same exit code: 1 if not."""
        if tool == "ledgerctl":
            ledgerctl_said[label] = (p.returncode, p.stdout, p.stderr)
            return 0
        if tool != "ledger-verify" or (p.returncode, p.stdout, p.stderr) == ledgerctl_said[label]:
            return 0
        print("FAIL: %s: ledger-verify (exit %d) %r, ledgerctl verify (exit %d) %r"
              % (label, p.returncode, (p.stdout + p.stderr)[:300], ledgerctl_said[label][0],
                 (ledgerctl_said[label][1] + ledgerctl_said[label][2])[:300]))
        return 1

    for label, packed in valid:
        path = "%s/valid.tar.gz" % work
        write_pack(packed, path)
        for tool, cmd in (("ledgerctl", [ledgerctl, "verify", path, "--vkey", vkey_file]),
                          ("ledger-verify", [ledger_verify, path, "--vkey", vkey_file]),
                          ("verify_pack.py", ["/usr/bin/python3", verify_py, path, "--vkey", vkey_file])):
            p = subprocess.run(cmd, capture_output=True, text=True)
            out = (p.stdout + p.stderr).strip()
            failures += differs_from_ledgerctl(label, tool, p)
            if p.returncode != 0 or not re.search(r"^OK: ", out, re.M):
                print("FAIL: %s, %s refused a valid pack (exit %d): %s" % (label, tool, p.returncode, out[:400]))
                failures += 1
            else:
                print("%s: %s accepted it" % (label, tool))
    for label, tampered, ctl_want, py_want in cases:
        py_want = py_want or ctl_want
        path = "%s/tampered.tar.gz" % work
        write_pack(tampered, path)
        for tool, cmd, want in (("ledgerctl", [ledgerctl, "verify", path, "--vkey", vkey_file], ctl_want),
                                ("ledger-verify", [ledger_verify, path, "--vkey", vkey_file], ctl_want),
                                ("verify_pack.py", ["/usr/bin/python3", verify_py, path, "--vkey", vkey_file], py_want)):
            p = subprocess.run(cmd, capture_output=True, text=True)
            out = (p.stdout + p.stderr).strip()
            failures += differs_from_ledgerctl(label, tool, p)
            if want == ACCEPTED:
                if p.returncode != 0 or not re.search(r"^OK: ", out, re.M):
                    print("FAIL: %s, %s was to accept it, its digests being those signed (exit %d): %s"
                          % (label, tool, p.returncode, out[:400]))
                    failures += 1
                else:
                    print("%s: %s accepted it (it checks the report's digest against the manifest only)"
                          % (label, tool))
                continue
            if p.returncode == 0 or not re.search(want, out, re.M):
                print("FAIL: %s, %s (exit %d): %s" % (label, tool, p.returncode, out[:400]))
                failures += 1
            else:
                print("%s: %s refused it: %s" % (label, tool, [l for l in out.splitlines() if l.startswith("FAILED")][0][:140]))
    if failures:
        sys.exit(1)
    print("tampering: %d cases refused by ledgerctl verify and ledger-verify with the same output, and by "
          "verify_pack.py, with the reason (%d accepted by verify_pack.py as expected); %d valid packs accepted "
          "by all three" % (len(cases), sum(c[3] == ACCEPTED for c in cases), len(valid)))


if __name__ == "__main__":
    main()
