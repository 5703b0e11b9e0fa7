"""The transparency-log formats the witness tests need, written from the C2SP
specs and RFC 6962 alone (standard library and `cryptography`), not from the
C++: Merkle tree hashes and consistency proofs (RFC 6962 2.1), signed notes
and verifier keys (c2sp.org/signed-note), checkpoints (c2sp.org/tlog-checkpoint),
cosignature/v1 (c2sp.org/tlog-cosignature), and an add-checkpoint client
(c2sp.org/tlog-witness)."""
import base64
import hashlib
import http.client
import struct

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

EM_DASH = "\u2014"


def leaf_hash(data):
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def mth(leaves):
    """RFC 6962 2.1 Merkle Tree Hash of a list of leaf hashes."""
    n = len(leaves)
    if n == 0:
        return hashlib.sha256(b"").digest()
    if n == 1:
        return leaves[0]
    k = 1
    while k * 2 < n:
        k *= 2
    return node_hash(mth(leaves[:k]), mth(leaves[k:]))


def consistency_proof(m, leaves):
    """RFC 6962 2.1.2 PROOF(m, D[n])."""
    def subproof(m, d, b):
        n = len(d)
        if m == n:
            return [] if b else [mth(d)]
        k = 1
        while k * 2 < n:
            k *= 2
        if m <= k:
            return subproof(m, d[:k], b) + [mth(d[k:])]
        return subproof(m - k, d[k:], False) + [mth(d[:k])]
    return [] if m == 0 else subproof(m, leaves, True)


def b64(b):
    return base64.b64encode(b).decode()


def raw_public(key):
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


class LogKey:
    """A log's Ed25519 note key (signature type 0x01); the name is the origin."""

    def __init__(self, name, seed=None):
        self.name = name
        self.key = Ed25519PrivateKey.from_private_bytes(seed) if seed else Ed25519PrivateKey.generate()
        self.pub = raw_public(self.key)
        self.key_id = hashlib.sha256(name.encode() + b"\n\x01" + self.pub).digest()[:4]

    def vkey(self):
        return "%s+%s+%s" % (self.name, self.key_id.hex(), b64(b"\x01" + self.pub))

    def sign(self, text):
        sig = self.key.sign(text.encode())
        return text + "\n" + "%s %s %s\n" % (EM_DASH, self.name, b64(self.key_id + sig))


def checkpoint_text(origin, size, root):
    return "%s\n%d\n%s\n" % (origin, size, b64(root))


def parse_vkey(vkey):
    name, key_id, data = vkey.strip().split("+", 2)
    raw = base64.b64decode(data)
    return name, bytes.fromhex(key_id), raw[0], raw[1:]


def verify_cosignature(vkey, text, line):
    """The time of `line`, a cosignature/v1 by the witness of `vkey` on the
    checkpoint `text`; raises ValueError when it does not verify."""
    name, key_id, alg, pub = parse_vkey(vkey)
    if alg != 0x04:
        raise ValueError("not a cosignature/v1 key")
    if key_id != hashlib.sha256(name.encode() + b"\n\x04" + pub).digest()[:4]:
        raise ValueError("key id is not SHA-256(name || 0x0A || 0x04 || key)[:4]")
    prefix = EM_DASH + " " + name + " "
    if not line.startswith(prefix) or not line.endswith("\n"):
        raise ValueError("not a signature line of %s: %r" % (name, line))
    data = base64.b64decode(line[len(prefix):-1], validate=True)
    if len(data) != 4 + 8 + 64 or data[:4] != key_id:
        raise ValueError("cosignature is not key id || u64 time || 64-byte signature")
    (time,) = struct.unpack(">Q", data[4:12])
    message = ("cosignature/v1\ntime %d\n" % time + text).encode()
    Ed25519PublicKey.from_public_bytes(pub).verify(data[12:], message)  # raises InvalidSignature
    return time


def add_checkpoint_body(old, proof, note):
    return ("old %d\n" % old + "".join(b64(h) + "\n" for h in proof) + "\n" + note).encode()


def post_add_checkpoint(address, body, timeout=10):
    """(status, content type, body text) of POST /add-checkpoint."""
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("POST", "/add-checkpoint", body=body)
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type"), r.read().decode()
    finally:
        conn.close()


def get(address, path, timeout=10):
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type"), r.read().decode()
    finally:
        conn.close()


def open_note(vkey, note):
    """The text of `note` when it carries a valid signature by the Ed25519
    note key `vkey` (type 0x01); signatures by other keys are ignored."""
    name, key_id, alg, pub = parse_vkey(vkey)
    if alg != 0x01:
        raise ValueError("not an Ed25519 note key")
    text, sigs = note.rsplit("\n\n", 1)
    text += "\n"
    for line in sigs.splitlines():
        prefix = EM_DASH + " " + name + " "
        if line.startswith(prefix):
            data = base64.b64decode(line[len(prefix):])
            if data[:4] == key_id:
                Ed25519PublicKey.from_public_bytes(pub).verify(data[4:], text.encode())
                return text
    raise ValueError("no signature by " + name)


def signature_lines(note):
    return [line + "\n" for line in note.rsplit("\n\n", 1)[1].splitlines()]


def root_from_inclusion(index, size, leaf, path):
    """RFC 9162 2.1.3.2: the root an inclusion path leads to."""
    if index >= size:
        raise ValueError("index beyond the tree")
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            raise ValueError("path too long")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ValueError("path too short")
    return r


def parse_tlog_proof(text):
    """(index, path, checkpoint note) of a c2sp.org/tlog-proof@v1."""
    head, note = text.split("\n\n", 1)
    lines = head.split("\n")
    if lines[0] != "c2sp.org/tlog-proof@v1":
        raise ValueError("not a tlog-proof")
    rest = lines[1:]
    if rest and rest[0].startswith("extra "):
        rest = rest[1:]
    if not rest[0].startswith("index "):
        raise ValueError("no index line")
    return int(rest[0][6:]), [base64.b64decode(h, validate=True) for h in rest[1:]], note
