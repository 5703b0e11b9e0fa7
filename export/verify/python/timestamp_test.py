#!/usr/bin/env python3
"""export/verify/python/timestamp.py and verify_pack.py's --tsa-root and
--tsa-max-delay (CONTRACT.md section 5e, written from its text, not from
the vectors' generator nor the C++):

- VectorCases: every case of tests/vectors/timestamp.json, with its roots
  and bound, gives its want (the TSA's name and genTime, or the section's
  words); then the vectors' tokens read with the other TSA's roots, with a
  bound below their delay, without roots, and edited where an edit is
  judged before the signature (hash algorithm, bytes after the token, a
  length, the TSTInfo's version, the certificates, the TSTInfo's digest,
  the signing-certificate-v2 hash).
- OwnTokens: tokens made here by a TSA of this test (its certificates by
  cryptography's builder, the CMS by the DER encoder below) for the rules
  the vectors cannot reach with a valid signature: extended key usage,
  validity at genTime, intermediates, each signed attribute, the sid by
  key identifier, RSA, fractional genTime and the seconds of the time rule.
- PackCases: verify_pack.py on packs built here from tests/vectors/leaves.json
  whose time note carries a stamp line or none, with and without the flags.

Usage: timestamp_test.py   (unittest; exit 0 when every test passes)
"""
import base64
import datetime
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import NameOID, ObjectIdentifier

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import packnote  # noqa: E402
import timestamp  # noqa: E402
from keyset_test import Signer, canonical, leaf_hash, mth, path, sign, tar_gz  # noqa: E402
from packerror import Failure, UsageError  # noqa: E402

VECTORS = os.path.join(HERE, "..", "..", "..", "tests", "vectors")
VERIFY = os.path.join(HERE, "verify_pack.py")
DASH = "\u2014"
NOT_SIGNED = "time stamp: not signed by a TSA of --tsa-root: "
MISSING = "time stamp: missing: --tsa-root requires the checkpoint-time note to carry a time-stamp token"


def load(name):
    with open(os.path.join(VECTORS, name)) as f:
        return json.load(f)


def refusal(fn):
    """The message of the Failure fn() raises, or "accepted"."""
    try:
        fn()
    except Failure as e:
        return str(e)
    return "accepted"


# -- DER, written here to build tokens ------------------------------------------------------------------------------

def tlv(tag, *parts):
    body = b"".join(parts)
    n = len(body)
    if n < 0x80:
        return bytes([tag, n]) + body
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + body


def oid_der(dotted):
    arcs = [int(a) for a in dotted.split(".")]
    out = b""
    for arc in [arcs[0] * 40 + arcs[1]] + arcs[2:]:
        chunk = [arc & 0x7F]
        while arc > 0x7F:
            arc >>= 7
            chunk.insert(0, 0x80 | arc & 0x7F)
        out += bytes(chunk)
    return tlv(0x06, out)


def int_der(n):
    return tlv(0x02, n.to_bytes(n.bit_length() // 8 + 1, "big", signed=True))


def alg(dotted, null=True):
    return tlv(0x30, oid_der(dotted), b"\x05\x00" if null else b"")


def attribute(dotted, value):
    return tlv(0x30, oid_der(dotted), tlv(0x31, value))


def stamp_line(token, name="tsa"):
    return "%s %s %s\n" % (DASH, name, base64.b64encode(timestamp.stamp_id(name) + token).decode())


# -- a TSA of this test -------------------------------------------------------------------------------------------

FROM, UNTIL = datetime.datetime(2025, 1, 1), datetime.datetime(2027, 1, 1)


def certificate(cn, key, issuer=None, ca=False, eku=("1.3.6.1.5.5.7.3.8",), eku_critical=True, not_after=UNTIL):
    """A certificate of CN=cn, O=Tests for key, by issuer ((certificate,
    key), None for self-signed)."""
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Tests"),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    b = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer[0].subject if issuer else name)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(FROM).not_valid_after(not_after)
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
         .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    if eku is not None:
        b = b.add_extension(x509.ExtendedKeyUsage([ObjectIdentifier(o) for o in eku]), critical=eku_critical)
    return b.sign(issuer[1] if issuer else key, hashes.SHA256())


def tst_info(text, gen_time, imprint_oid=timestamp.SHA256):
    imprint = tlv(0x30, alg(imprint_oid), tlv(0x04, hashlib.sha256(text).digest()))
    return tlv(0x30, int_der(1), oid_der("1.2.3.4"), imprint, int_der(7), tlv(0x18, gen_time.encode()))


def token(text, key, cert, certs, gen_time="20260101000003Z", cert_id="v2", sid="serial", content_type=None,
          digest=None, imprint_oid=timestamp.SHA256, signers=1, twice=False):
    """A TimeStampToken over text (bytes) signed by key, whose certificate
    is cert, holding certs; the keywords change one field each."""
    info = tst_info(text, gen_time, imprint_oid)
    cert_der = cert.public_bytes(Encoding.DER)
    ids = {"v2": attribute(timestamp.ID_SIGNING_CERTIFICATE_V2,
                           tlv(0x30, tlv(0x30, tlv(0x30, tlv(0x04, hashlib.sha256(cert_der).digest()))))),
           "v2-sha512": attribute(timestamp.ID_SIGNING_CERTIFICATE_V2, tlv(0x30, tlv(0x30, tlv(
               0x30, alg("2.16.840.1.101.3.4.2.3"), tlv(0x04, hashlib.sha512(cert_der).digest()))))),
           "v1": attribute(timestamp.ID_SIGNING_CERTIFICATE,
                           tlv(0x30, tlv(0x30, tlv(0x30, tlv(0x04, hashlib.sha1(cert_der).digest()))))),
           None: b""}
    attrs = (attribute(timestamp.ID_CONTENT_TYPE, oid_der(content_type or timestamp.ID_CT_TST_INFO))
             + attribute(timestamp.ID_MESSAGE_DIGEST, tlv(0x04, digest or hashlib.sha256(info).digest()))
             + ids[cert_id])
    if twice:
        attrs += attribute(timestamp.ID_CONTENT_TYPE, oid_der(timestamp.ID_CT_TST_INFO))
    if isinstance(key, rsa.RSAPrivateKey):
        signature = key.sign(tlv(0x31, attrs), padding.PKCS1v15(), hashes.SHA256())
        sig_alg = alg("1.2.840.113549.1.1.1")  # rsaEncryption: the hash is the digest algorithm's
    else:
        signature = key.sign(tlv(0x31, attrs), ec.ECDSA(hashes.SHA256()))
        sig_alg = alg("1.2.840.10045.4.3.2", False)
    if sid == "serial":
        sid_der = tlv(0x30, cert.issuer.public_bytes(), int_der(cert.serial_number))
    else:
        sid_der = tlv(0x80, x509.SubjectKeyIdentifier.from_public_key(cert.public_key()).digest)
    signer_info = tlv(0x30, int_der(1), sid_der, alg(timestamp.SHA256), tlv(0xA0, attrs), sig_alg, tlv(0x04, signature))
    signed_data = tlv(0x30, int_der(3), tlv(0x31, alg(timestamp.SHA256)),
                      tlv(0x30, oid_der(timestamp.ID_CT_TST_INFO), tlv(0xA0, tlv(0x04, info))),
                      tlv(0xA0, *[c.public_bytes(Encoding.DER) for c in certs]), tlv(0x31, signer_info * signers))
    return tlv(0x30, oid_der(timestamp.ID_SIGNED_DATA), tlv(0xA0, signed_data))


# -- the note and pack of these tests: leaves.json's log, checkpoint.json's key --------------------------------------

NOTE_TIME_US = 1767225601000000  # 2026-01-01T00:00:01Z, after the leaves' logged_at_us


class Log:
    def __init__(self):
        cp = load("checkpoint.json")
        self.ledger = Signer(bytes.fromhex(cp["ed25519_seed_hex"]), cp["origin"])
        self.leaves = [e["leaf_bytes_utf8"] for e in load("leaves.json")["entries"]]
        self.hashes = [leaf_hash(x) for x in self.leaves]
        self.root = mth(self.hashes)

    def text(self, time_us=NOTE_TIME_US):
        b64 = base64.b64encode(self.root).decode()
        return "evidence-ledger/checkpoint-time/v4\n%s\n%d\n%s\nruns %s\nteams %s\ntime %d\n" % (
            self.ledger.origin, len(self.leaves), b64, b64, b64, time_us)

    def note(self, stamps=(), time_us=NOTE_TIME_US):
        """The signed time note (bytes) with a stamp line per token."""
        return (sign(self.text(time_us), self.ledger) + "".join(stamp_line(t) for t in stamps)).encode()

    def pack(self, time_note, pack_format=5):
        """A seq-range pack of every leaf; without a time note, of format 1."""
        size, s = len(self.leaves), self.ledger
        files = {
            "checkpoint": sign("%s\n%d\n%s\n" % (s.origin, size, base64.b64encode(self.root).decode()), s).encode(),
            "ledger.vkey": (s.vkey + "\n").encode(),
            "entries.jsonl": "".join(x + "\n" for x in self.leaves).encode(),
            "proofs.jsonl": "".join(canonical({"seq": i, "leaf_hash": self.hashes[i].hex(), "inclusion": [
                h.hex() for h in path(i, self.hashes)]}) + "\n" for i in range(size)).encode(),
            "outcomes.json": b"{}\n", "report.html": b"<!doctype html>\n"}
        if time_note is not None:
            files["checkpoint-time"] = time_note
        manifest = {"counts": {"entries": size}, "files": {n: hashlib.sha256(d).hexdigest() for n, d in files.items()},
                    "format": pack_format, "origin": s.origin, "root": self.root.hex(),
                    "scope": {"from_seq": 0, "kind": "seq", "to_seq": size}, "tree_size": size}
        if pack_format >= 2:
            manifest["unknown_grace_ms"] = 0
        files["manifest.json"] = (canonical(manifest) + "\n").encode()
        files["manifest.sig"] = sign(hashlib.sha256(files["manifest.json"]).hexdigest() + "\n", s).encode()
        return tar_gz(files)


class Tsa:
    """A root, a TSA under it (ECDSA P-256), and the parts the cases vary."""

    def __init__(self):
        self.root_key = ec.generate_private_key(ec.SECP256R1())
        self.root = certificate("Test TSA Root", self.root_key, ca=True, eku=None)
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.cert = certificate("Test TSA", self.key, (self.root, self.root_key))

    def token(self, text, **kw):
        return token(text, self.key, self.cert, [self.cert], **kw)


# -- the cases --------------------------------------------------------------------------------------------------------

class VectorCases(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.v = load("timestamp.json")
        cls.roots = timestamp.load_roots(cls.v["tsa_roots_pem"].encode(), "tsa_roots_pem")
        cls.key = packnote.parse_vkey(cls.v["ledger_vkey"])
        cls.cases = {c["name"]: c for c in cls.v["cases"]}

    def note(self, name):
        """(note bytes, its time) of a case."""
        note = self.cases[name]["note"].encode()
        return note, packnote.checkpoint_time(note, self.key)[3]

    def outcome(self, name, roots=None, bound=None, note=None):
        n, t = self.note(name)
        try:
            return timestamp.check(note or n, t, roots or self.roots, bound or self.v["max_delay_s"])
        except timestamp.TimeStampError as e:
            return str(e)

    def good_token(self):
        return timestamp.stamp_tokens(packnote.signature_lines(self.note("stamped")[0])[1])[0]

    def with_token(self, data):
        """The good case's note with data in place of its token."""
        return self.note("no stamp line")[0] + stamp_line(data).encode()

    def test_the_stamp_id_of_the_vectors_name(self):
        self.assertEqual(timestamp.stamp_id(self.v["tsa_name"]).hex(), self.v["stamp_id_hex"])

    def test_every_case_gives_its_want(self):
        self.assertEqual(len(self.cases), 12)
        for name, case in self.cases.items():
            with self.subTest(name):
                got = self.outcome(name)
                if case["want"] == "ok":
                    self.assertIsInstance(got, timestamp.Stamp, got)
                    self.assertEqual((got.tsa, got.gen_time), (case["tsa"], case["gen_time"]))
                else:
                    self.assertIsInstance(got, str, got)
                    self.assertTrue(got.startswith("time stamp: "), got)
                    self.assertIn(case["error"], got)

    def test_whole_words_of_the_refusals(self):
        self.assertEqual(self.outcome("no stamp line"), MISSING)
        self.assertEqual(self.outcome("a line of another key is not a stamp"), MISSING)
        self.assertEqual(self.outcome("stamped by a TSA not of the roots"), NOT_SIGNED + (
            "CN=Other TSA,O=Vectors is issued by CN=Other TSA Root,O=Vectors, neither a root of --tsa-root nor a "
            "certificate of the token that signs it"))
        self.assertEqual(self.outcome("token altered in its signature"), NOT_SIGNED + (
            "the signature does not verify with the key of the signer's certificate (CN=Vectors TSA,O=Vectors)"))
        self.assertEqual(self.outcome("backdated by an hour"), (
            "time stamp: the note's time 2026-12-05T07:14:18.000000Z (1796454858000000 us) is 3601 s before its "
            "stamp's time 2026-12-05T08:14:19Z, more than the bound of 60 s: stamped late, or backdated"))
        self.assertEqual(self.outcome("note's time after its stamp"), (
            "time stamp: the note's time 2026-12-05T09:14:18.000000Z (1796462058000000 us) is after its stamp's "
            "time 2026-12-05T08:14:19Z"))

    def test_the_other_tsas_roots_refuse_the_good_case(self):
        other = timestamp.load_roots(self.v["other_roots_pem"].encode(), "other_roots_pem")
        self.assertEqual(self.outcome("stamped", roots=other), NOT_SIGNED + (
            "CN=Vectors TSA,O=Vectors is issued by CN=Vectors TSA Root,O=Vectors, neither a root of --tsa-root nor "
            "a certificate of the token that signs it"))
        both = timestamp.load_roots((self.v["other_roots_pem"] + self.v["tsa_roots_pem"]).encode(), "both")
        self.assertEqual(self.outcome("stamped", roots=both).tsa, "Vectors TSA")

    def test_the_bound_decides_the_51_s_case(self):
        name = "stamped 50 s after its time, within the bound"
        self.assertEqual(self.outcome(name, bound=51).gen_time, "2026-12-05T08:14:19Z")
        for bound in (1, 50):
            self.assertEqual(self.outcome(name, bound=bound), (
                "time stamp: the note's time 2026-12-05T08:13:28.000000Z (1796458408000000 us) is 51 s before its "
                "stamp's time 2026-12-05T08:14:19Z, more than the bound of %d s: stamped late, or backdated" % bound))

    def test_without_roots_a_stamp_is_present_not_checked(self):
        for name, want in (("stamped", timestamp.NOT_CHECKED), ("two stamp lines", timestamp.NOT_CHECKED),
                           ("token altered in its signature", timestamp.NOT_CHECKED), ("no stamp line", None),
                           ("a line of another key is not a stamp", None)):
            with self.subTest(name):
                self.assertEqual(timestamp.pack_line(self.note(name)[0], self.note(name)[1], None), want)
        self.assertIsNone(timestamp.pack_line(None, None, None))

    def test_the_pack_line_and_its_refusals(self):
        note, t = self.note("stamped")
        tsa = (self.roots, 60)
        self.assertEqual(timestamp.pack_line(note, t, tsa),
                         "time stamp: stamped by TSA Vectors TSA at 2026-12-05T08:14:19Z.")
        self.assertEqual(refusal(lambda: timestamp.pack_line(None, None, tsa)), "checkpoint-time: " + MISSING)
        self.assertEqual(refusal(lambda: timestamp.pack_line(self.note("no stamp line")[0], t, tsa)),
                         "checkpoint-time: " + MISSING)

    def test_a_hash_algorithm_other_than_sha256(self):
        good = self.good_token()
        imprint = tlv(0x30, alg(timestamp.SHA256), tlv(0x04, timestamp.parse_token(good).hashed_message))
        sha384 = tlv(0x30, alg("2.16.840.1.101.3.4.2.2"), imprint[-34:])
        self.assertEqual(good.count(imprint), 1)
        self.assertEqual(self.outcome("stamped", note=self.with_token(good.replace(imprint, sha384))),
                         "time stamp: hash algorithm 2.16.840.1.101.3.4.2.2 (SHA-384) is not SHA-256")

    def test_tokens_that_are_not_der_tokens(self):
        good = self.good_token()
        content = timestamp.one(good, "ContentInfo").body
        long_length = b"\x30\x83" + len(content).to_bytes(3, "big") + content
        tst = timestamp.parse_token(good).tst_info
        at = len(tst) - len(timestamp.one(tst, "TSTInfo").body)  # the version, after the TSTInfo's tag and length
        self.assertEqual(tst[at:at + 3], b"\x02\x01\x01")
        version_2 = good.replace(tst, tst[:at] + b"\x02\x01\x02" + tst[at + 3:])
        for data, why in ((good + b"\x00", "ContentInfo: 1 bytes after it"), (good[:-1], "truncated"),
                          (long_length, "a length not written the shortest way"),
                          (version_2, "TSTInfo: want version 1, a policy, a messageImprint, a serialNumber and a "
                                      "genTime"),
                          (b"\x30\x00", "the ContentInfo is not of type id-signedData")):
            with self.subTest(why):
                self.assertEqual(self.outcome("stamped", note=self.with_token(data)),
                                 "time stamp: not an RFC 3161 time-stamp token: " + why)

    def rebuilt(self, edit):
        """The good token with its SignedData's fields passed through edit."""
        good = timestamp.one(self.good_token(), "ContentInfo").children("ContentInfo")
        fields = timestamp.one(good[1].body, "SignedData").children("SignedData")
        return tlv(0x30, good[0].der, tlv(0xA0, tlv(0x30, *[f.der for f in edit(fields)])))

    def test_a_token_without_its_certificates(self):
        self.assertEqual(self.outcome("stamped", note=self.with_token(self.rebuilt(lambda f: f))).tsa, "Vectors TSA")
        bare = self.rebuilt(lambda fields: [f for f in fields if f.tag != 0xA0])
        self.assertEqual(self.outcome("stamped", note=self.with_token(bare)), NOT_SIGNED + (
            "the signer's certificate (by issuer and serial number) is not among the token's certificates"))

    def test_edits_the_signed_attributes_see(self):
        good = self.good_token()
        t = timestamp.parse_token(good)
        serial = tlv(0x02, b"\x02")  # the TSTInfo's serialNumber, after its policy and imprint
        self.assertEqual(t.tst_info.count(serial), 1)
        other_serial = good.replace(t.tst_info, t.tst_info.replace(serial, tlv(0x02, b"\x03")))
        cert_hash = hashlib.sha256(t.certificates[0].public_bytes(Encoding.DER)).digest()
        self.assertEqual(good.count(cert_hash), 1)
        other_cert = good.replace(cert_hash, bytes([cert_hash[0] ^ 1]) + cert_hash[1:])
        for data, why in ((other_serial, "the signed attributes' message-digest is not the digest of the TSTInfo"),
                          (other_cert, "the signing-certificate-v2 attribute names another certificate than the "
                                       "signer's (CN=Vectors TSA,O=Vectors)")):
            with self.subTest(why):
                self.assertEqual(self.outcome("stamped", note=self.with_token(data)), NOT_SIGNED + why)


class OwnTokens(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.log, cls.tsa = Log(), Tsa()

    def outcome(self, data, roots=None, time_us=NOTE_TIME_US, bound=60):
        note = self.log.note([data], time_us)
        try:
            return timestamp.check(note, time_us, roots or [self.tsa.root], bound)
        except timestamp.TimeStampError as e:
            return str(e)

    def text(self, time_us=NOTE_TIME_US):
        return self.log.text(time_us).encode()

    def assertStamped(self, got, tsa="Test TSA", gen_time="2026-01-01T00:00:03Z"):
        self.assertIsInstance(got, timestamp.Stamp, got)
        self.assertEqual((got.tsa, got.gen_time), (tsa, gen_time))

    def test_the_tsa_of_this_test_stamps(self):
        self.assertStamped(self.outcome(self.tsa.token(self.text())))

    def test_signing_certificates_and_sids(self):
        for kw in ({"cert_id": "v1"}, {"cert_id": "v2-sha512"}, {"sid": "key_id"}):
            with self.subTest(str(kw)):
                self.assertStamped(self.outcome(self.tsa.token(self.text(), **kw)))

    def test_each_signed_attribute_is_required(self):
        for kw, why in (({"cert_id": None}, "the signed attributes hold no signing-certificate nor "
                                            "signing-certificate-v2"),
                        ({"content_type": "1.2.840.113549.1.7.1"}, "the signed attributes' content-type is not "
                                                                   "id-ct-TSTInfo"),
                        ({"digest": bytes(32)}, "the signed attributes' message-digest is not the digest of the "
                                                "TSTInfo"),
                        ({"twice": True}, "signed attributes: attribute 1.2.840.113549.1.9.3: want it once, with one "
                                          "value")):
            with self.subTest(why):
                self.assertEqual(self.outcome(self.tsa.token(self.text(), **kw)), NOT_SIGNED + why)

    def test_the_extended_key_usage(self):
        key = self.tsa.key
        issuer = (self.tsa.root, self.tsa.root_key)
        for cert, why in (
                (certificate("Test TSA", key, issuer, eku=None), "the signer's certificate has no extended key usage"),
                (certificate("Test TSA", key, issuer, eku_critical=False),
                 "the signer's certificate's extended key usage is not critical, with 1.3.6.1.5.5.7.3.8: want it "
                 "critical, with id-kp-timeStamping (1.3.6.1.5.5.7.3.8) only"),
                (certificate("Test TSA", key, issuer, eku=("1.3.6.1.5.5.7.3.8", "1.3.6.1.5.5.7.3.1")),
                 "the signer's certificate's extended key usage is critical, with 1.3.6.1.5.5.7.3.8, "
                 "1.3.6.1.5.5.7.3.1: want it critical, with id-kp-timeStamping (1.3.6.1.5.5.7.3.8) only")):
            with self.subTest(why):
                self.assertEqual(self.outcome(token(self.text(), key, cert, [cert])), NOT_SIGNED + why)

    def test_validity_at_gen_time(self):
        expired = certificate("Test TSA", self.tsa.key, (self.tsa.root, self.tsa.root_key),
                              not_after=datetime.datetime(2026, 1, 1, 0, 0, 2))
        self.assertEqual(self.outcome(token(self.text(), self.tsa.key, expired, [expired])), NOT_SIGNED + (
            "CN=Test TSA,O=Tests is valid from 2025-01-01T00:00:00Z to 2026-01-01T00:00:02Z, not at genTime"))
        last_second = token(self.text(), self.tsa.key, expired, [expired], gen_time="20260101000002Z")
        self.assertStamped(self.outcome(last_second), gen_time="2026-01-01T00:00:02Z")
        old_root = certificate("Test TSA Root", self.tsa.root_key, ca=True, eku=None,
                               not_after=datetime.datetime(2026, 1, 1))
        self.assertEqual(self.outcome(self.tsa.token(self.text()), roots=[old_root]), NOT_SIGNED + (
            "CN=Test TSA Root,O=Tests is valid from 2025-01-01T00:00:00Z to 2026-01-01T00:00:00Z, not at genTime"))

    def test_chains_through_an_intermediate(self):
        mid_key = ec.generate_private_key(ec.SECP256R1())
        root = (self.tsa.root, self.tsa.root_key)
        for ca, carried, want in ((True, True, None), (True, False, "CN=Test TSA,O=Tests is issued by CN=Test CA,"
                                                       "O=Tests, neither a root of --tsa-root nor a certificate of "
                                                       "the token that signs it"),
                                  (False, True, "CN=Test CA,O=Tests issues CN=Test TSA,O=Tests but is not a "
                                                "certificate authority")):
            mid = certificate("Test CA", mid_key, root, ca=ca, eku=None)
            cert = certificate("Test TSA", self.tsa.key, (mid, mid_key))
            got = self.outcome(token(self.text(), self.tsa.key, cert, [cert] + ([mid] if carried else [])))
            with self.subTest(ca=ca, carried=carried):
                if want is None:
                    self.assertStamped(got)
                else:
                    self.assertEqual(got, NOT_SIGNED + want)

    def test_the_tsa_certificate_itself_as_the_root(self):
        self.assertStamped(self.outcome(self.tsa.token(self.text()), roots=[self.tsa.cert]))

    def test_an_rsa_tsa(self):
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        cert = certificate("RSA TSA", key, (self.tsa.root, self.tsa.root_key))
        self.assertStamped(self.outcome(token(self.text(), key, cert, [cert])), tsa="RSA TSA")

    def test_not_tokens(self):
        for kw, why in (({"gen_time": "20260101000003"}, "genTime: want YYYYMMDDHHMMSS[.fraction]Z, found "
                                                         "b'20260101000003'"),
                        ({"signers": 2}, "want exactly one SignerInfo, found 2")):
            with self.subTest(why):
                self.assertEqual(self.outcome(self.tsa.token(self.text(), **kw)),
                                 "time stamp: not an RFC 3161 time-stamp token: " + why)
        self.assertEqual(self.outcome(self.tsa.token(self.text(), imprint_oid=timestamp.SHA1)),
                         "time stamp: hash algorithm 1.3.14.3.2.26 (SHA-1) is not SHA-256")

    def test_seconds_are_compared(self):
        t = 1767225603500000  # 00:00:03.5, after a genTime of 00:00:03.123 in the same second
        data = self.tsa.token(self.text(t), gen_time="20260101000003.123Z")
        self.assertStamped(self.outcome(data, time_us=t), gen_time="2026-01-01T00:00:03.123Z")
        later = 1767225604000000
        self.assertEqual(self.outcome(self.tsa.token(self.text(later), gen_time="20260101000003.999999Z"),
                                      time_us=later),
                         "time stamp: the note's time 2026-01-01T00:00:04.000000Z (1767225604000000 us) is after its "
                         "stamp's time 2026-01-01T00:00:03.999999Z")

    def test_the_bound_counts_microseconds(self):
        data = self.tsa.token(self.text(), gen_time="20260101000011.0000001Z")  # 10.0000001 s after
        self.assertStamped(self.outcome(data, bound=10), gen_time="2026-01-01T00:00:11.0000001Z")
        data = self.tsa.token(self.text(), gen_time="20260101000011.000001Z")
        self.assertEqual(self.outcome(data, bound=10), (
            "time stamp: the note's time 2026-01-01T00:00:01.000000Z (1767225601000000 us) is 10.000001 s before its "
            "stamp's time 2026-01-01T00:00:11.000001Z, more than the bound of 10 s: stamped late, or backdated"))


class PackCases(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.log, cls.tsa = Log(), Tsa()
        cls.dir = tempfile.TemporaryDirectory()
        stamped = cls.log.note([cls.tsa.token(cls.log.text().encode())])
        cls.paths = {name: cls.write(name, data) for name, data in (
            ("stamped.tar.gz", cls.log.pack(stamped)), ("unstamped.tar.gz", cls.log.pack(cls.log.note())),
            ("format1.tar.gz", cls.log.pack(None, pack_format=1)),
            ("roots.pem", cls.tsa.root.public_bytes(Encoding.PEM)),
            ("other.pem", certificate("Other Root", ec.generate_private_key(ec.SECP256R1()), ca=True,
                                      eku=None).public_bytes(Encoding.PEM)),
            ("empty.pem", b"no certificate\n"), ("ledger.vkey", (cls.log.ledger.vkey + "\n").encode()))}
        cls.ok = ("OK: 3 entries of {\"from_seq\":0,\"kind\":\"seq\",\"to_seq\":3} verified against the checkpoint "
                  "of evidence-ledger.test/vectors at tree size 3, root %s, signed at 2026-01-01T00:00:01.000000Z "
                  "(1767225601000000 us)." % cls.log.root.hex())

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    @classmethod
    def write(cls, name, data):
        p = os.path.join(cls.dir.name, name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def run_verify(self, pack, *flags):
        r = subprocess.run([sys.executable, VERIFY, self.paths[pack], "--vkey", self.paths["ledger.vkey"],
                            "--no-progress"] + [self.paths.get(f, f) for f in flags], capture_output=True)
        return r.returncode, (r.stdout + r.stderr).decode().strip()

    def test_without_tsa_root(self):
        self.assertEqual(self.run_verify("stamped.tar.gz"), (0, self.ok + "\n" + timestamp.NOT_CHECKED))
        self.assertEqual(self.run_verify("unstamped.tar.gz"), (0, self.ok))

    def test_with_tsa_root(self):
        stamped = "time stamp: stamped by TSA Test TSA at 2026-01-01T00:00:03Z."
        self.assertEqual(self.run_verify("stamped.tar.gz", "--tsa-root", "roots.pem"), (0, self.ok + "\n" + stamped))
        self.assertEqual(self.run_verify("stamped.tar.gz", "--tsa-root", "roots.pem", "--tsa-max-delay", "2"),
                         (0, self.ok + "\n" + stamped))

    def test_refusals_name_checkpoint_time(self):
        late = ("FAILED: checkpoint-time: time stamp: the note's time 2026-01-01T00:00:01.000000Z (1767225601000000 "
                "us) is 2 s before its stamp's time 2026-01-01T00:00:03Z, more than the bound of 1 s: stamped late, "
                "or backdated")
        for args, want in (
                (("unstamped.tar.gz", "--tsa-root", "roots.pem"), "FAILED: checkpoint-time: " + MISSING),
                (("format1.tar.gz", "--tsa-root", "roots.pem"), "FAILED: checkpoint-time: " + MISSING),
                (("stamped.tar.gz", "--tsa-root", "other.pem"), "FAILED: checkpoint-time: " + NOT_SIGNED + (
                    "CN=Test TSA,O=Tests is issued by CN=Test TSA Root,O=Tests, neither a root of --tsa-root nor a "
                    "certificate of the token that signs it")),
                (("stamped.tar.gz", "--tsa-root", "roots.pem", "--tsa-max-delay", "1"), late)):
            with self.subTest(args):
                self.assertEqual(self.run_verify(*args), (1, want))
        self.assertEqual(self.run_verify("format1.tar.gz")[0], 0)

    def test_usage_errors(self):
        missing = os.path.join(self.dir.name, "none.pem")
        for flags, want in (
                (("--tsa-root", missing), "--tsa-root: cannot read %s" % missing),
                (("--tsa-root", "empty.pem"), "--tsa-root: %s holds no PEM certificate" % self.paths["empty.pem"]),
                (("--tsa-max-delay", "5"), "--tsa-max-delay without --tsa-root: no time stamp is checked"),
                (("--tsa-root", "roots.pem", "--tsa-max-delay", "05"),
                 "--tsa-max-delay: want whole seconds (digits only, no leading zero), found '05'")):
            with self.subTest(flags):
                self.assertEqual(self.run_verify("stamped.tar.gz", *flags), (2, "verify_pack.py: " + want))

    def test_options_read_the_flags(self):
        roots, bound = timestamp.options(self.paths["roots.pem"], None)
        self.assertEqual(([r.subject.rfc4514_string() for r in roots], bound), (["CN=Test TSA Root,O=Tests"], 60))
        self.assertIsNone(timestamp.options(None, None))
        with self.assertRaises(UsageError):
            timestamp.options(self.paths["roots.pem"], "-1")


if __name__ == "__main__":
    unittest.main()
