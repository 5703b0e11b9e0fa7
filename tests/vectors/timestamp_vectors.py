#!/usr/bin/env python3
"""Writes, or checks, tests/vectors/timestamp.json: checkpoint-time notes
carrying RFC 3161 time-stamp lines (CONTRACT section 5e), made with a real
TSA (`openssl ts -reply`) and Python's `cryptography`, not the ledger's code.

The file holds:
- `ledger_vkey`: the key of checkpoint_time.json, which signs every note;
- `tsa_roots_pem`: the root of the TSA that stamps (an RSA root, the TSA's
  certificate ECDSA P-256 with extended key usage timeStamping, critical);
  `other_roots_pem`: the root of another TSA, made the same way;
- `max_delay_s`: the bound of section 5e's time rule, 60;
- `cases`: notes of version 4 (size 8), each with `want` `ok` (then `tsa`,
  the common name, and `gen_time`, as a verifier prints them) or
  `refused` (then `error`, the words of section 5e's refusal, which a
  verifier's message contains) when read with `tsa_roots_pem`;
- `request_b64` / `response_b64` / `response_nonce_hex` / `response_text`:
  one TimeStampReq and the TSA's TimeStampResp to it, with its nonce, for
  the ledger's own reading of a reply.

A TSA stamps with its clock, so the file cannot be made twice alike: it is
written once (--write) and checked: without --write, every case is read
again by the rules of section 5e, with `openssl ts -verify` for the token's
signature and chain and Python for the rest; exit 0 when every case gives
its `want`, 1 otherwise.
"""
import base64
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "timestamp.json")
ORIGIN = "evidence-ledger.test/vectors"
ROOT_B64 = "XcnaeacGWamtVZy3Ad7ZoqudgjqtL0lgz+Nw7/RgQyg="
RUNS_B64 = base64.b64encode(bytes(range(32))).decode()
TEAMS_B64 = base64.b64encode(bytes(range(32, 64))).decode()
TSA_NAME = "tsa"
DASH = "\u2014"


def openssl(*args, cwd, data=None):
    r = subprocess.run(["openssl", *args], cwd=cwd, input=data, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args)}: {r.stderr.decode(errors='replace')}")
    return r.stdout


def stamp_id(name):
    # Section 5e: a key ID made from a key with no public key bytes.
    return hashlib.sha256(name.encode() + b"\n\xff" + b"evidence-ledger/rfc3161/v1").digest()[:4]


def note_text(time_us):
    return (f"evidence-ledger/checkpoint-time/v4\n{ORIGIN}\n8\n{ROOT_B64}\n"
            f"runs {RUNS_B64}\nteams {TEAMS_B64}\ntime {time_us}\n")


def signed(text, seed):
    # Section 5: the ledger's signature line over the note text.
    key = Ed25519PrivateKey.from_private_bytes(seed)
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    key_id = hashlib.sha256(ORIGIN.encode() + b"\n\x01" + public).digest()[:4]
    sig = key.sign(text.encode())
    return text + "\n" + f"{DASH} {ORIGIN} {base64.b64encode(key_id + sig).decode()}\n"


def stamp_line(token, name=TSA_NAME):
    return f"{DASH} {name} {base64.b64encode(stamp_id(name) + token).decode()}\n"


TSA_CONF = """
[ tsa ]
default_tsa = tsa1
[ tsa1 ]
dir = {dir}
serial = {dir}/serial
crypto_device = builtin
signer_cert = {dir}/tsa.pem
certs = {dir}/tsa.pem
signer_key = {dir}/tsa.key
signer_digest = sha256
default_policy = 1.3.6.1.4.1.57264.2.1
digests = sha256
accuracy = secs:1
clock_precision_digits = 0
ordering = no
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
"""

EXT = """
[ root ]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[ tsa ]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = critical,timeStamping
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
"""


def make_tsa(dir, label):
    """A root and a TSA under it, in `dir`; returns the root's PEM."""
    os.makedirs(dir)
    with open(os.path.join(dir, "ext.cnf"), "w") as f:
        f.write(EXT)
    with open(os.path.join(dir, "tsa.cnf"), "w") as f:
        f.write(TSA_CONF.format(dir=dir))
    with open(os.path.join(dir, "serial"), "w") as f:
        f.write("01\n")
    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "root.key", cwd=dir)
    openssl("req", "-new", "-key", "root.key", "-subj", f"/O=Vectors/CN={label} Root", "-out", "root.csr", cwd=dir)
    openssl("x509", "-req", "-in", "root.csr", "-signkey", "root.key", "-days", "36500", "-sha256",
            "-extfile", "ext.cnf", "-extensions", "root", "-out", "root.pem", cwd=dir)
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "tsa.key", cwd=dir)
    openssl("req", "-new", "-key", "tsa.key", "-subj", f"/O=Vectors/CN={label}", "-out", "tsa.csr", cwd=dir)
    openssl("x509", "-req", "-in", "tsa.csr", "-CA", "root.pem", "-CAkey", "root.key", "-CAcreateserial",
            "-days", "36500", "-sha256", "-extfile", "ext.cnf", "-extensions", "tsa", "-out", "tsa.pem", cwd=dir)
    with open(os.path.join(dir, "root.pem")) as f:
        return f.read()


def stamp(dir, text, nonce=False):
    """The TSA in `dir` stamps `text`: (token DER, request DER, response DER)."""
    with open(os.path.join(dir, "text"), "wb") as f:
        f.write(text.encode())
    openssl("ts", "-query", "-data", "text", "-sha256", "-cert", *([] if nonce else ["-no_nonce"]),
            "-out", "q.tsq", cwd=dir)
    openssl("ts", "-reply", "-queryfile", "q.tsq", "-config", "tsa.cnf", "-section", "tsa1", "-out", "r.tsr",
            cwd=dir)
    openssl("ts", "-reply", "-in", "r.tsr", "-token_out", "-out", "t.tst", cwd=dir)
    read = lambda name: open(os.path.join(dir, name), "rb").read()
    return read("t.tst"), read("q.tsq"), read("r.tsr")


def token_text(dir, token):
    with open(os.path.join(dir, "check.tst"), "wb") as f:
        f.write(token)
    return openssl("ts", "-reply", "-in", "check.tst", "-token_in", "-text", cwd=dir).decode()


def gen_time(text):
    # "Time stamp: Dec  5 09:00:00 2026 GMT" (OpenSSL's words), to ISO 8601.
    m = re.search(r"Time stamp: (\w+ +\d+ \d\d:\d\d:\d\d(?:\.\d+)? \d+) GMT", text)
    when = m.group(1)
    frac = ""
    if "." in when:
        head, rest = when.split(".", 1)
        digits, year = rest.split(" ")
        when, frac = f"{head} {year}", "." + digits
    t = datetime.datetime.strptime(re.sub(" +", " ", when), "%b %d %H:%M:%S %Y")
    return t.strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"


def write():
    with open(os.path.join(HERE, "checkpoint_time.json")) as f:
        base = json.load(f)
    seed = bytes.fromhex(base["ed25519_seed_hex"])
    with tempfile.TemporaryDirectory() as tmp:
        tsa_dir, other_dir = os.path.join(tmp, "tsa"), os.path.join(tmp, "other")
        roots = make_tsa(tsa_dir, "Vectors TSA")
        other_roots = make_tsa(other_dir, "Other TSA")
        now_us = int(time.time()) * 1_000_000
        good_text = note_text(now_us - 2_500_000)
        good_token, request, response = stamp(tsa_dir, good_text, nonce=True)
        info = token_text(tsa_dir, good_token)
        nonce = re.search(r"Nonce: (0x[0-9A-Fa-f]+|\d+)", info).group(1)
        nonce_hex = format(int(nonce, 0), "x")
        good = signed(good_text, seed)
        cases = [{"name": "stamped", "note": good + stamp_line(good_token), "want": "ok",
                  "tsa": "Vectors TSA", "gen_time": gen_time(info)}]
        cases.append({"name": "no stamp line", "note": good, "want": "refused",
                      "error": "time stamp: missing"})
        cases.append({"name": "two stamp lines", "note": good + stamp_line(good_token) + stamp_line(good_token),
                      "want": "refused", "error": "time stamp: more than one time-stamp line"})
        other_text = note_text(now_us - 1_500_000)
        cases.append({"name": "another note's token", "note": signed(other_text, seed) + stamp_line(good_token),
                      "want": "refused", "error": "time stamp: it stamps another text"})
        forged_token, _, _ = stamp(other_dir, good_text)
        cases.append({"name": "stamped by a TSA not of the roots", "note": good + stamp_line(forged_token),
                      "want": "refused", "error": "time stamp: not signed by a TSA of --tsa-root"})
        tampered = bytearray(good_token)
        tampered[-10] ^= 0x01  # inside the signature, the token's last field
        cases.append({"name": "token altered in its signature", "note": good + stamp_line(bytes(tampered)),
                      "want": "refused", "error": "time stamp: not signed by a TSA of --tsa-root"})
        cases.append({"name": "not a token", "note": good + stamp_line(b"\x30\x03\x02\x01\x01"),
                      "want": "refused", "error": "time stamp: not an RFC 3161 time-stamp token"})
        late_text = note_text(now_us + 3_600_000_000)
        late_token, _, _ = stamp(tsa_dir, late_text)
        cases.append({"name": "note's time after its stamp", "note": signed(late_text, seed) + stamp_line(late_token),
                      "want": "refused", "error": "after its stamp's time"})
        back_text = note_text(now_us - 3_600_000_000)
        back_token, _, _ = stamp(tsa_dir, back_text)
        cases.append({"name": "backdated by an hour", "note": signed(back_text, seed) + stamp_line(back_token),
                      "want": "refused", "error": "stamped late, or backdated"})
        edge_text = note_text(now_us - 50_000_000)
        edge_token, _, _ = stamp(tsa_dir, edge_text)
        cases.append({"name": "stamped 50 s after its time, within the bound", "want": "ok",
                      "note": signed(edge_text, seed) + stamp_line(edge_token), "tsa": "Vectors TSA",
                      "gen_time": gen_time(token_text(tsa_dir, edge_token))})
        renamed = "tsa.example.com"
        cases.append({"name": "another TSA name", "note": good + stamp_line(good_token, renamed), "want": "ok",
                      "tsa": "Vectors TSA", "gen_time": gen_time(info)})
        cases.append({"name": "a line of another key is not a stamp", "want": "refused",
                      "note": good + f"{DASH} {TSA_NAME} {base64.b64encode(b'abcd' + good_token).decode()}\n",
                      "error": "time stamp: missing"})
    out = {
        "comment": "Checkpoint-time notes with RFC 3161 time-stamp lines (CONTRACT section 5e), stamped by a real "
                   "TSA (openssl ts -reply); made by timestamp_vectors.py --write with openssl and Python's "
                   "cryptography, not the ledger's code.",
        "ledger_vkey": base["verifier_key"],
        "tsa_name": TSA_NAME,
        "stamp_id_hex": stamp_id(TSA_NAME).hex(),
        "tsa_roots_pem": roots,
        "other_roots_pem": other_roots,
        "max_delay_s": 60,
        "cases": cases,
        "request_b64": base64.b64encode(request).decode(),
        "response_b64": base64.b64encode(response).decode(),
        "response_nonce_hex": nonce_hex,
        "response_text": good_text,
    }
    with open(PATH, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=True)
        f.write("\n")


def iso_to_us(iso):
    body = iso.rstrip("Z")
    frac = 0
    if "." in body:
        body, digits = body.split(".")
        frac = int((digits + "000000")[:6])
    t = datetime.datetime.strptime(body, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int(t.timestamp()) * 1_000_000 + frac


def check_case(case, roots_path, max_delay_s, tmp):
    """Section 5e's checks, in order: (True, (tsa, gen_time)) or (False, words)."""
    note = case["note"]
    text, _, sigs = note.partition("\n\n")
    text += "\n"
    stamps = []
    for line in sigs.splitlines():
        if not line.startswith(DASH + " "):
            continue
        name, _, b64 = line[2:].rpartition(" ")
        data = base64.b64decode(b64)
        if len(data) >= 5 and data[:4] == stamp_id(name):
            stamps.append(data[4:])
    if len(stamps) > 1:
        return False, "time stamp: more than one time-stamp line"
    if not stamps:
        return False, "time stamp: missing"
    token_path = os.path.join(tmp, "t.tst")
    with open(token_path, "wb") as f:
        f.write(stamps[0])
    r = subprocess.run(["openssl", "ts", "-reply", "-in", token_path, "-token_in", "-text"], capture_output=True)
    if r.returncode != 0:
        return False, "time stamp: not an RFC 3161 time-stamp token"
    info = r.stdout.decode()
    if "Hash Algorithm: sha256" not in info:
        return False, "time stamp: hash algorithm"
    block = re.search(r"Message data:\n((?:\s+[0-9a-f]{4} - .*\n)+)", info).group(1)
    digest = bytes.fromhex("".join(m.replace("-", " ").replace(" ", "")
                                   for m in re.findall(r"^\s+[0-9a-f]{4} - (.{47})", block, re.M)))
    if digest != hashlib.sha256(text.encode()).digest():
        return False, "time stamp: it stamps another text"
    g_iso = gen_time(info)
    g = iso_to_us(g_iso)
    v = subprocess.run(["openssl", "ts", "-verify", "-token_in", "-in", token_path, "-digest",
                        hashlib.sha256(text.encode()).hexdigest(), "-CAfile", roots_path,
                        "-attime", str(g // 1_000_000)], capture_output=True)
    if v.returncode != 0:
        return False, "time stamp: not signed by a TSA of --tsa-root"
    t = int(re.search(r"^time (\d+)$", text, re.M).group(1))
    if t // 1_000_000 > g // 1_000_000:
        return False, "after its stamp's time"
    if g - t > max_delay_s * 1_000_000:
        return False, "stamped late, or backdated"
    cn = re.search(r"TSA: DirName:.*?CN ?= ?([^,/\n]+)", info)
    return True, (cn.group(1).strip() if cn else None, g_iso)


def check():
    with open(PATH) as f:
        v = json.load(f)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        roots_path = os.path.join(tmp, "roots.pem")
        with open(roots_path, "w") as f:
            f.write(v["tsa_roots_pem"])
        for case in v["cases"]:
            ok, what = check_case(case, roots_path, v["max_delay_s"], tmp)
            if case["want"] == "ok":
                good = ok and what[0] == case["tsa"] and what[1] == case["gen_time"]
            else:
                good = not ok and case["error"] in what
            print(("ok  " if good else "BAD ") + case["name"] + ": " + str(what))
            bad += not good
    return 1 if bad else 0


if __name__ == "__main__":
    if "--write" in sys.argv[1:]:
        write()
    sys.exit(check())
