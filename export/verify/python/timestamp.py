"""RFC 3161 time-stamp lines on checkpoint-time notes (CONTRACT.md section
5e, docs/contract/timestamps.md), with the standard library and
`cryptography` only, written from the contract's text, not from the
ledger's code nor from the vectors' generator.

- stamp_id() and stamp_tokens(): which signature lines of a note are
  time-stamp lines (a line whose data starts with the stamp ID of its own
  key name), and the tokens they carry.
- load_roots() reads the certificates of a --tsa-root PEM file; options()
  reads the two flags.
- check() makes section 5e's checks of a note, in the section's order and
  in its words, and returns the Stamp (the TSA's name, genTime); pack_line()
  is what verify_pack.py prints of a pack's note, or the Failure naming
  `checkpoint-time` it raises.

cryptography 38 (Debian 12) loads certificates and verifies signatures but
has no CMS nor chain-building API, so the token is read by the small
strict DER reader below and the chain is built here. Nothing here does I/O
but options(), which reads the --tsa-root file. Tests: timestamp_test.py.
"""
import collections
import datetime
import hashlib
import re

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import NameOID

from packerror import Failure, UsageError
from packnote import signature_lines, signed_time

STAMP_ID_TAIL = b"\n\xff" + b"evidence-ledger/rfc3161/v1"
NOT_CHECKED = "time stamp: present, not checked (no --tsa-root)"
DEFAULT_MAX_DELAY_S = 60

ID_SIGNED_DATA = "1.2.840.113549.1.7.2"
ID_CT_TST_INFO = "1.2.840.113549.1.9.16.1.4"
ID_CONTENT_TYPE = "1.2.840.113549.1.9.3"
ID_MESSAGE_DIGEST = "1.2.840.113549.1.9.4"
ID_SIGNING_CERTIFICATE = "1.2.840.113549.1.9.16.2.12"
ID_SIGNING_CERTIFICATE_V2 = "1.2.840.113549.1.9.16.2.47"
ID_KP_TIME_STAMPING = "1.3.6.1.5.5.7.3.8"
SHA1, SHA256 = "1.3.14.3.2.26", "2.16.840.1.101.3.4.2.1"
DIGESTS = {SHA256: hashes.SHA256, "2.16.840.1.101.3.4.2.2": hashes.SHA384, "2.16.840.1.101.3.4.2.3": hashes.SHA512}
DIGEST_NAMES = {SHA1: "SHA-1", SHA256: "SHA-256", "2.16.840.1.101.3.4.2.2": "SHA-384",
                "2.16.840.1.101.3.4.2.3": "SHA-512", "1.2.840.113549.2.5": "MD5"}
# The SignerInfo's signature algorithms section 5e allows: (key type, hash,
# or None when rsaEncryption leaves the hash to the digest algorithm).
SIGNATURE_ALGORITHMS = {
    "1.2.840.113549.1.1.1": ("RSA", None),
    "1.2.840.113549.1.1.11": ("RSA", hashes.SHA256), "1.2.840.113549.1.1.12": ("RSA", hashes.SHA384),
    "1.2.840.113549.1.1.13": ("RSA", hashes.SHA512),
    "1.2.840.10045.4.3.2": ("ECDSA", hashes.SHA256), "1.2.840.10045.4.3.3": ("ECDSA", hashes.SHA384),
    "1.2.840.10045.4.3.4": ("ECDSA", hashes.SHA512),
}
GENERALIZED_TIME = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})([0-9]{2})([0-9]{2})([0-9]{2})(?:\.([0-9]+))?Z")
EPOCH = datetime.datetime(1970, 1, 1)

# An accepted token: tsa, the first CN of the signer's certificate (its whole
# subject without one); gen_time, ISO 8601 UTC at the token's precision;
# gen_time_us, genTime in microseconds, its fraction truncated.
Stamp = collections.namedtuple("Stamp", "tsa gen_time gen_time_us")


class TimeStampError(Failure):
    """A time-stamp line that section 5e refuses; the message is the
    section's words, from `time stamp: `."""


class NotDer(Exception):
    """Bytes that are not the DER the token's grammar asks for."""


# -- a strict DER reader: definite, minimal lengths; one-byte tags ------------------------------------------------

class Der:
    """One DER element: tag (its identifier octet), der (all its bytes) and
    body (its contents)."""

    def __init__(self, tag, der, body):
        self.tag, self.der, self.body = tag, der, body

    def children(self, what, tag=0x30):
        """The elements inside a constructed element of this tag."""
        self.want(tag, what)
        return elements(self.body)

    def want(self, tag, what):
        if self.tag != tag:
            raise NotDer("%s: want tag 0x%02x, found 0x%02x" % (what, tag, self.tag))
        return self


def element(data, at):
    """(the Der at data[at:], the offset after it)."""
    if at + 2 > len(data):
        raise NotDer("truncated")
    tag, first, start = data[at], data[at + 1], at + 2
    if tag & 0x1F == 0x1F:
        raise NotDer("a tag of more than one byte")
    length = first
    if first & 0x80:
        count = first & 0x7F
        if not 1 <= count <= 4 or start + count > len(data):
            raise NotDer("an indefinite, too long or truncated length")
        length = int.from_bytes(data[start:start + count], "big")
        start += count
        if length < 0x80 or data[start - count] == 0:  # DER writes every length the shortest way
            raise NotDer("a length not written the shortest way")
    if start + length > len(data):
        raise NotDer("truncated")
    return Der(tag, data[at:start + length], data[start:start + length]), start + length


def elements(data):
    out, at = [], 0
    while at < len(data):
        e, at = element(data, at)
        out.append(e)
    return out


def one(data, what):
    """The one element data holds, nothing after it."""
    e, end = element(data, 0)
    if end != len(data):
        raise NotDer("%s: %d bytes after it" % (what, len(data) - end))
    return e


def oid(e, what):
    body = e.want(0x06, what).body
    if not body or body[-1] & 0x80:
        raise NotDer("%s: not an object identifier" % what)
    arcs, value = [], 0
    for b in body:
        value = value << 7 | b & 0x7F
        if not b & 0x80:
            arcs.append(value)
            value = 0
    first = min(arcs[0] // 40, 2)
    return ".".join(str(a) for a in [first, arcs[0] - 40 * first] + arcs[1:])


def integer(e, what):
    return int.from_bytes(e.want(0x02, what).body, "big", signed=True)


def algorithm(e, what):
    """(OID, parameters' DER or None) of an AlgorithmIdentifier."""
    fields = e.children(what)
    if not 1 <= len(fields) <= 2:
        raise NotDer("%s: want an algorithm and its parameters" % what)
    return oid(fields[0], what), fields[1].der if len(fields) == 2 else None


def digest_of(alg, what):
    """The hashes class of a digest AlgorithmIdentifier (parameters absent
    or NULL) of SHA-256, SHA-384 or SHA-512."""
    if alg[0] not in DIGESTS or alg[1] not in (None, b"\x05\x00"):
        raise NotDer("%s: %s is not SHA-256, SHA-384 or SHA-512" % (what, algorithm_name(alg)))
    return DIGESTS[alg[0]]


def algorithm_name(alg):
    name = alg[0] + (" (%s)" % DIGEST_NAMES[alg[0]] if alg[0] in DIGEST_NAMES else "")
    return name if alg[1] in (None, b"\x05\x00") else name + " with parameters " + alg[1].hex()


def digest(hash_class, data):
    h = hashes.Hash(hash_class())
    h.update(data)
    return h.finalize()


# -- the token ----------------------------------------------------------------------------------------------------

class Token:
    """What a DER TimeStampToken says (RFC 3161 section 2.4.2, RFC 5652):
    tst_info (the TSTInfo's DER, the eContent), imprint_algorithm and
    hashed_message, gen_time (text) and gen_time_us, certificates
    (x509.Certificate, in token order) and the one SignerInfo's sid
    (("issuer_serial", (issuer DER, serial)) or ("key_id", bytes)),
    digest_algorithm, signed_attrs (the [0] element, None without it),
    signature_algorithm and signature."""


def parse_token(data):
    """The Token of DER bytes; NotDer saying what is not as section 5e
    asks."""
    content = one(data, "ContentInfo").children("ContentInfo")
    if len(content) != 2 or oid(content[0], "contentType") != ID_SIGNED_DATA:
        raise NotDer("the ContentInfo is not of type id-signedData")
    fields = one(content[1].want(0xA0, "content").body, "SignedData").children("SignedData")
    if len(fields) < 4:
        raise NotDer("SignedData: too few fields")
    integer(fields[0], "SignedData version")
    fields[1].want(0x31, "digestAlgorithms")
    t = Token()
    read_tst_info(t, fields[2])
    rest = fields[3:-1]
    t.certificates = certificates(rest[0]) if rest and rest[0].tag == 0xA0 else []
    if [e.tag for e in rest] not in ([], [0xA0], [0xA1], [0xA0, 0xA1]):
        raise NotDer("SignedData: unexpected fields before signerInfos")
    signers = fields[-1].children("signerInfos", 0x31)
    if len(signers) != 1:
        raise NotDer("want exactly one SignerInfo, found %d" % len(signers))
    read_signer_info(t, signers[0])
    return t


def read_tst_info(t, encap):
    """The encapContentInfo: of type id-ct-TSTInfo, holding the TSTInfo."""
    fields = encap.children("encapContentInfo")
    if len(fields) != 2 or oid(fields[0], "eContentType") != ID_CT_TST_INFO:
        raise NotDer("the encapContentInfo is not of type id-ct-TSTInfo with its content")
    t.tst_info = one(fields[1].want(0xA0, "eContent").body, "eContent").want(0x04, "eContent").body
    info = one(t.tst_info, "TSTInfo").children("TSTInfo")
    if len(info) < 5 or integer(info[0], "TSTInfo version") != 1:
        raise NotDer("TSTInfo: want version 1, a policy, a messageImprint, a serialNumber and a genTime")
    oid(info[1], "policy")
    imprint = info[2].children("messageImprint")
    if len(imprint) != 2:
        raise NotDer("messageImprint: want hashAlgorithm and hashedMessage")
    t.imprint_algorithm = algorithm(imprint[0], "hashAlgorithm")
    t.hashed_message = imprint[1].want(0x04, "hashedMessage").body
    integer(info[3], "serialNumber")
    t.gen_time, t.gen_time_us = generalized_time(info[4].want(0x18, "genTime").body)


def generalized_time(body):
    """(ISO 8601 text at the token's precision, microseconds) of a
    GeneralizedTime in UTC, with or without fractional seconds."""
    m = GENERALIZED_TIME.fullmatch(body.decode("ascii", "replace"))
    if m is None:
        raise NotDer("genTime: want YYYYMMDDHHMMSS[.fraction]Z, found %r" % body)
    try:
        when = datetime.datetime(*(int(g) for g in m.groups()[:6]))
    except ValueError:
        raise NotDer("genTime: no such date %r" % body)
    fraction = m.group(7) or ""
    us = (when - EPOCH) // datetime.timedelta(seconds=1) * 1000000 + int((fraction + "000000")[:6])
    return when.strftime("%Y-%m-%dT%H:%M:%S") + ("." + fraction if fraction else "") + "Z", us


def certificates(e):
    """The X.509 certificates of SignedData's [0] certificates, in order
    (other certificate choices are not certificates a chain can use)."""
    out = []
    for n, c in enumerate(elements(e.body), 1):
        if c.tag != 0x30:
            continue
        try:
            out.append(x509.load_der_x509_certificate(c.der))
        except ValueError as err:
            raise NotDer("certificate %d cannot be read: %s" % (n, err))
    return out


def read_signer_info(t, e):
    fields = e.children("SignerInfo")
    if len(fields) < 5:
        raise NotDer("SignerInfo: too few fields")
    integer(fields[0], "SignerInfo version")
    if fields[1].tag == 0x30:
        issuer_serial = fields[1].children("issuerAndSerialNumber")
        if len(issuer_serial) != 2:
            raise NotDer("issuerAndSerialNumber: want issuer and serialNumber")
        t.sid = ("issuer_serial", (issuer_serial[0].want(0x30, "issuer").der, integer(issuer_serial[1], "serial")))
    else:
        t.sid = ("key_id", fields[1].want(0x80, "subjectKeyIdentifier").body)
    t.digest_algorithm = algorithm(fields[2], "digestAlgorithm")
    at = 3
    t.signed_attrs = None
    if fields[at].tag == 0xA0:
        t.signed_attrs = fields[at]
        at += 1
    if len(fields) < at + 2 or len(fields) > at + 3:
        raise NotDer("SignerInfo: want signatureAlgorithm and signature after the signed attributes")
    t.signature_algorithm = algorithm(fields[at], "signatureAlgorithm")
    t.signature = fields[at + 1].want(0x04, "signature").body


# -- section 5e's checks --------------------------------------------------------------------------------------------

def stamp_id(name):
    """The 4 bytes a time-stamp line's data starts with: a key ID made from
    a key with no public key bytes."""
    return hashlib.sha256(name.encode("utf-8") + STAMP_ID_TAIL).digest()[:4]


def stamp_tokens(sigs):
    """The data after the stamp ID of each time-stamp line among a note's
    signature lines (packnote.signature_lines()'s list)."""
    return [rest for name, key_id, rest in sigs if key_id == stamp_id(name)]


def check(note, time_us, roots, max_delay_s=DEFAULT_MAX_DELAY_S):
    """The Stamp of the one time-stamp line of a checkpoint-time note
    (bytes; its `time` time_us), given TSA roots (x509.Certificate, at
    least one) and the bound in seconds. TimeStampError, in section 5e's
    order and words, when the note holds more than one line or none, the
    line is not a token, its hash algorithm is not SHA-256, it stamps
    another text, it is not signed by a TSA of the roots, or the times
    break the time rule."""
    text, sigs = signature_lines(note)
    tokens = stamp_tokens(sigs)
    if len(tokens) > 1:
        raise TimeStampError("time stamp: more than one time-stamp line")
    if not tokens:
        raise TimeStampError("time stamp: missing: --tsa-root requires the checkpoint-time note to carry a "
                             "time-stamp token")
    try:
        token = parse_token(tokens[0])
    except NotDer as e:
        raise TimeStampError("time stamp: not an RFC 3161 time-stamp token: %s" % e)
    if token.imprint_algorithm[0] != SHA256 or token.imprint_algorithm[1] not in (None, b"\x05\x00"):
        raise TimeStampError("time stamp: hash algorithm %s is not SHA-256" % algorithm_name(token.imprint_algorithm))
    own = hashlib.sha256(text).digest()
    if token.hashed_message != own:
        raise TimeStampError("time stamp: it stamps another text (imprint %s, the note's text hashes to %s)"
                             % (token.hashed_message.hex(), own.hex()))
    try:
        signer = signed_by(token, roots)
    except Untrusted as e:
        raise TimeStampError("time stamp: not signed by a TSA of --tsa-root: %s" % e)
    time_rule(time_us, token, max_delay_s)
    return Stamp(tsa_name(signer), token.gen_time, token.gen_time_us)


def time_rule(t, token, max_delay_s):
    """Section 5e's time rule: seconds compared, then the bound."""
    g = token.gen_time_us
    if t // 1000000 > g // 1000000:
        raise TimeStampError("time stamp: the note's time %s is after its stamp's time %s"
                             % (signed_time(t), token.gen_time))
    if g - t > max_delay_s * 1000000:
        raise TimeStampError("time stamp: the note's time %s is %s s before its stamp's time %s, more than the bound "
                             "of %d s: stamped late, or backdated"
                             % (signed_time(t), seconds_text(g - t), token.gen_time, max_delay_s))


def seconds_text(us):
    return ("%d.%06d" % divmod(us, 1000000)).rstrip("0").rstrip(".")


def tsa_name(cert):
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return names[0].value if names else cert.subject.rfc4514_string()


class Untrusted(Exception):
    """Why a token is not signed by a TSA of the roots."""


def signed_by(token, roots):
    """The signer's certificate, once the signed attributes, the signature,
    the extended key usage and the chain to the roots at genTime hold;
    Untrusted saying which does not."""
    try:
        signer = signer_certificate(token)
        check_signed_attributes(token, signer)
        check_signature(token, signer)
        check_time_stamping_only(signer)
        check_chain(signer, token.certificates, roots, token.gen_time_us)
    except NotDer as e:  # a field judged here, not by parse_token()
        raise Untrusted(str(e))
    return signer


def signer_certificate(token):
    """The certificate among the token's that the SignerInfo's sid names."""
    kind, value = token.sid
    for cert in token.certificates:
        if kind == "issuer_serial" and (names(cert)[0], cert.serial_number) == value:
            return cert
        if kind == "key_id" and subject_key_id(cert) == value:
            return cert
    raise Untrusted("the signer's certificate (%s) is not among the token's certificates"
                    % ("by issuer and serial number" if kind == "issuer_serial" else "subject key identifier %s"
                       % value.hex()))


def names(cert):
    """(issuer, subject) of a certificate, as the DER of its TBSCertificate
    writes them: names are matched byte for byte."""
    tbs = one(cert.tbs_certificate_bytes, "TBSCertificate").children("TBSCertificate")
    at = 1 if tbs[0].tag == 0xA0 else 0
    return tbs[at + 2].der, tbs[at + 4].der


def subject_key_id(cert):
    try:
        return cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    except x509.ExtensionNotFound:
        return None


def check_signed_attributes(token, signer):
    """content-type id-ct-TSTInfo, message-digest of the TSTInfo by the
    SignerInfo's digest algorithm, and each signing-certificate(-v2)
    attribute's first certificate ID the hash of the signer's certificate
    (at least one of the two present)."""
    if token.signed_attrs is None:
        raise Untrusted("the SignerInfo has no signed attributes")
    attrs = attributes(token.signed_attrs)
    if ID_CONTENT_TYPE not in attrs or oid(attrs[ID_CONTENT_TYPE], "content-type") != ID_CT_TST_INFO:
        raise Untrusted("the signed attributes' content-type is not id-ct-TSTInfo")
    hash_class = digest_of(token.digest_algorithm, "the SignerInfo's digest algorithm")
    if ID_MESSAGE_DIGEST not in attrs or attrs[ID_MESSAGE_DIGEST].want(0x04, "message-digest").body != digest(
            hash_class, token.tst_info):
        raise Untrusted("the signed attributes' message-digest is not the digest of the TSTInfo")
    cert_ids = [a for a in (ID_SIGNING_CERTIFICATE, ID_SIGNING_CERTIFICATE_V2) if a in attrs]
    if not cert_ids:
        raise Untrusted("the signed attributes hold no signing-certificate nor signing-certificate-v2")
    for attr in cert_ids:
        name = "signing-certificate-v2" if attr == ID_SIGNING_CERTIFICATE_V2 else "signing-certificate"
        hash_class, cert_hash = first_cert_id(attrs[attr], attr == ID_SIGNING_CERTIFICATE_V2, name)
        if digest(hash_class, signer.public_bytes(Encoding.DER)) != cert_hash:
            raise Untrusted("the %s attribute names another certificate than the signer's (%s)"
                            % (name, signer.subject.rfc4514_string()))


def attributes(signed_attrs):
    """{attribute type: its one value} of the signed attributes; Untrusted
    when one is written twice or without exactly one value."""
    out = {}
    try:
        for attr in signed_attrs.children("signedAttrs", 0xA0):
            fields = attr.children("Attribute")
            if len(fields) != 2:
                raise NotDer("Attribute: want a type and its values")
            kind, values = oid(fields[0], "attrType"), fields[1].children("attrValues", 0x31)
            if kind in out or len(values) != 1:
                raise NotDer("attribute %s: want it once, with one value" % kind)
            out[kind] = values[0]
    except NotDer as e:
        raise Untrusted("signed attributes: %s" % e)
    return out


def first_cert_id(value, v2, name):
    """(hash class, certHash) of the first ESSCertID (SHA-1) or ESSCertIDv2
    (its hashAlgorithm, by default SHA-256) of a SigningCertificate(V2)."""
    try:
        ids = value.children(name)
        first = ids[0].children("certs")[0].children("ESSCertID") if ids and ids[0].body else []
        if not first:
            raise NotDer("no certificate ID")
        hash_class = hashes.SHA1
        if v2:
            hash_class = hashes.SHA256
            if first[0].tag == 0x30:
                hash_class = digest_of(algorithm(first.pop(0), "hashAlgorithm"), "hashAlgorithm")
        return hash_class, first[0].want(0x04, "certHash").body
    except IndexError:
        raise Untrusted("%s attribute: no certificate ID" % name)
    except NotDer as e:
        raise Untrusted("%s attribute: %s" % (name, e))


def check_signature(token, signer):
    """The signature over the DER of the signed attributes as a SET (its
    [0] tag read as 0x31), by the signer's public key."""
    if token.signature_algorithm[0] not in SIGNATURE_ALGORITHMS:
        raise Untrusted("signature algorithm %s is not RSA PKCS #1 v1.5 or ECDSA with SHA-256, SHA-384 or SHA-512"
                        % token.signature_algorithm[0])
    kind, hash_class = SIGNATURE_ALGORITHMS[token.signature_algorithm[0]]
    if hash_class is None:
        try:
            hash_class = digest_of(token.digest_algorithm, "the SignerInfo's digest algorithm")
        except NotDer as e:
            raise Untrusted(str(e))
    signed = b"\x31" + token.signed_attrs.der[1:]
    key = signer.public_key()
    try:
        if kind == "RSA" and isinstance(key, rsa.RSAPublicKey):
            key.verify(token.signature, signed, padding.PKCS1v15(), hash_class())
        elif kind == "ECDSA" and isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(token.signature, signed, ec.ECDSA(hash_class()))
        else:
            raise Untrusted("the signer's certificate holds no %s key" % kind)
    except InvalidSignature:
        raise Untrusted("the signature does not verify with the key of the signer's certificate (%s)"
                        % signer.subject.rfc4514_string())


def check_time_stamping_only(signer):
    """RFC 3161 section 2.3: extended key usage, critical, timeStamping only."""
    try:
        eku = signer.extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    except x509.ExtensionNotFound:
        raise Untrusted("the signer's certificate has no extended key usage")
    purposes = [p.dotted_string for p in eku.value]
    if not eku.critical or purposes != [ID_KP_TIME_STAMPING]:
        raise Untrusted("the signer's certificate's extended key usage is %s, with %s: want it critical, with "
                        "id-kp-timeStamping (%s) only" % ("critical" if eku.critical else "not critical",
                                                           ", ".join(purposes), ID_KP_TIME_STAMPING))


def check_chain(signer, pool, roots, g):
    """From the signer's certificate through the token's certificates to a
    root: each certificate signed by the next (its issuer by name, byte for
    byte), each valid at genTime (g, microseconds), those between the signer
    and the root certificate authorities. A root may be the signer's
    certificate itself."""
    path, cert = [signer], signer
    while True:
        valid_at(cert, g)
        if any(cert == root for root in roots):
            return
        issuer_name = names(cert)[0]
        root = next((r for r in roots if names(r)[1] == issuer_name and signs(r, cert)), None)
        if root is not None:
            valid_at(root, g)
            return
        issuer = next((c for c in pool if c not in path and names(c)[1] == issuer_name and signs(c, cert)), None)
        if issuer is None:
            raise Untrusted("%s is issued by %s, neither a root of --tsa-root nor a certificate of the token that "
                            "signs it" % (subject(cert), issuer_of(cert)))
        if not is_ca(issuer):
            raise Untrusted("%s issues %s but is not a certificate authority" % (subject(issuer), subject(cert)))
        path.append(issuer)
        cert = issuer


def subject(cert):
    return cert.subject.rfc4514_string() or "(empty subject)"


def issuer_of(cert):
    return cert.issuer.rfc4514_string() or "(empty issuer)"


def signs(issuer, cert):
    """Whether issuer's public key verifies cert's signature over its TBSCertificate."""
    key = issuer.public_key()
    try:
        if isinstance(key, rsa.RSAPublicKey):
            key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))
        elif isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(cert.signature, cert.tbs_certificate_bytes)
        else:
            return False
    except (InvalidSignature, UnsupportedAlgorithm, TypeError, ValueError):
        return False
    return True


def valid_at(cert, g):
    when = EPOCH + datetime.timedelta(microseconds=g)
    if not cert.not_valid_before <= when <= cert.not_valid_after:
        raise Untrusted("%s is valid from %sZ to %sZ, not at genTime"
                        % (subject(cert), cert.not_valid_before.isoformat(), cert.not_valid_after.isoformat()))


def is_ca(cert):
    try:
        return cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        return False


# -- what verify_pack.py asks ---------------------------------------------------------------------------------------

def load_roots(data, where):
    """The certificates of PEM data (bytes), one or more; UsageError naming
    `where` when it holds none or one that cannot be read."""
    blocks = re.findall(rb"-----BEGIN CERTIFICATE-----\r?\n.*?-----END CERTIFICATE-----", data, re.S)
    if not blocks:
        raise UsageError("%s holds no PEM certificate" % where)
    roots = []
    for n, block in enumerate(blocks, 1):
        try:
            roots.append(x509.load_pem_x509_certificate(block))
        except ValueError as e:
            raise UsageError("%s: certificate %d cannot be read: %s" % (where, n, e))
    return roots


def options(root_path, max_delay):
    """(roots, bound in seconds) of --tsa-root FILE and --tsa-max-delay
    SECONDS (text, or None for 60), or None without --tsa-root;
    UsageError naming the flag."""
    if root_path is None:
        if max_delay is not None:
            raise UsageError("--tsa-max-delay without --tsa-root: no time stamp is checked")
        return None
    try:
        with open(root_path, "rb") as f:
            data = f.read()
    except OSError:
        raise UsageError("--tsa-root: cannot read %s" % root_path)
    bound = DEFAULT_MAX_DELAY_S
    if max_delay is not None:
        if not re.fullmatch(r"0|[1-9][0-9]{0,9}", max_delay):
            raise UsageError("--tsa-max-delay: want whole seconds (digits only, no leading zero), found '%s'"
                             % max_delay)
        bound = int(max_delay)
    return load_roots(data, "--tsa-root: %s" % root_path), bound


def pack_line(note, time_us, tsa):
    """The line verify_pack.py prints of a pack's checkpoint-time note
    (bytes, None when the pack has none; its time time_us) given options()
    (tsa): None without a stamp line nor roots; NOT_CHECKED with a line
    and no roots; with roots the accepted stamp, or Failure naming
    `checkpoint-time`."""
    if tsa is None:
        present = note is not None and stamp_tokens(signature_lines(note)[1])
        return NOT_CHECKED if present else None
    if note is None:
        raise Failure("checkpoint-time: time stamp: missing: --tsa-root requires the checkpoint-time note to carry a "
                      "time-stamp token")
    try:
        stamp = check(note, time_us, *tsa)
    except TimeStampError as e:
        raise Failure("checkpoint-time: %s" % e)
    return "time stamp: stamped by TSA %s at %s." % (stamp.tsa, stamp.gen_time)
