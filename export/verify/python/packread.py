"""Reading a pack strictly (CONTRACT.md section 7, "Reading a pack
strictly"), with the standard library only: the gzip stream and the tar
members, JSON with no key twice, JSON-lines files whose every line ends in a
newline, decimal numbers and base64 written one way only, and shown(), the
one way a value taken from a pack is printed.

Every failure is a packerror.Failure naming the file and the rule.
"""
import base64
import io
import json
import re
import tarfile
import zlib

from packerror import Failure

# The characters a terminal must not be handed raw: C0 and C1 controls and
# DEL as \xHH, the bidi controls as \u{HHHH}.
_BIDI = {0x061C, 0x200E, 0x200F} | set(range(0x202A, 0x202F)) | set(range(0x2066, 0x206A))
_UNSHOWN = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,18}")
MAX_JSON = 1 << 20  # the JSON members but entries, proofs and outcomes
SMALL_JSON = ("manifest.json", "run-head.json", "team-window.json", "consistency.json")


def _escape(match):
    c = ord(match.group())
    if 0xDC80 <= c <= 0xDCFF:  # a byte that is not UTF-8, kept by surrogateescape
        return "\\x%02x" % (c - 0xDC00)
    if c < 0x20 or 0x7F <= c <= 0x9F:
        return "\\x%02x" % c
    return "\\u{%04x}" % c


def shown(value):
    """value (a str, or bytes read as UTF-8) as it may be printed: each C0 or
    C1 control and DEL as \\xHH, each bidi control as \\u{HHHH}, each byte
    that is not UTF-8 as \\xHH of the byte; nothing else changes."""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "surrogateescape")
    elif not isinstance(value, str):
        value = str(value)
    return _UNSHOWN.sub(_escape, value)


class _Twice(Exception):
    pass


class KeyTwice(Failure):
    """A JSON object of a pack with a key twice."""


def _no_key_twice(pairs):
    obj = {}
    for k, v in pairs:
        if k in obj:
            raise _Twice(k)
        obj[k] = v
    return obj


def _not_json(constant):
    raise ValueError("%s is not JSON" % constant)


def load_json(data, where):
    """data (bytes) parsed as JSON with no key twice in any object and no NaN
    or Infinity; Failure starting with `where` otherwise."""
    try:
        return json.loads(data, object_pairs_hook=_no_key_twice, parse_constant=_not_json)
    except _Twice as e:
        raise KeyTwice("%s: key %s twice" % (where, shown(e.args[0])))
    except RecursionError:
        raise Failure("%s: not JSON (nested too deep)" % where)
    except ValueError as e:  # UnicodeDecodeError is one
        raise Failure("%s: not JSON (%s)" % (where, shown(str(e))))


def jsonl_lines(data, name):
    """The lines of a JSON-lines file, each ended by a newline (an empty file
    has none); Failure naming the last line when it has no newline."""
    if data and not data.endswith(b"\n"):
        raise Failure("%s: line %d: no newline at its end" % (name, data.count(b"\n") + 1))
    return data.split(b"\n")[:-1]


def count_lines(data, name):
    """The number of lines of a file of lines (a .jsonl file,
    multiproof.txt), each ended by a newline; Failure as jsonl_lines() says
    otherwise."""
    if data and not data.endswith(b"\n"):
        raise Failure("%s: line %d: no newline at its end" % (name, data.count(b"\n") + 1))
    return data.count(b"\n")


def each_line(data, name):
    """The lines of jsonl_lines(), one at a time as they are asked for, so
    that no list of them is held; the check of the last newline comes
    before the first line."""
    count_lines(data, name)
    start = 0
    while start < len(data):
        end = data.index(b"\n", start)
        yield data[start:end]
        start = end + 1


def decimal(text, where):
    """A decimal number as the contract writes one (ASCII digits, no sign,
    no leading zero, no space or '_', below 2^63); Failure otherwise."""
    if not isinstance(text, str) or not _DECIMAL.fullmatch(text) or int(text) >= 1 << 63:
        raise Failure("%s: want a decimal number (digits only, no leading zero), found '%s'" % (where, shown(text)))
    return int(text)


def canonical_base64(text):
    """The bytes of standard base64 written the one way RFC 4648 writes them
    (padding, no stray bits, nothing else), or None."""
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        return None
    return raw if base64.b64encode(raw).decode() == text else None


class _Gunzip(io.RawIOBase):
    """The inflated bytes of a file of gzip members, one after the other;
    Failure when the file ends inside a member or holds bytes after them."""

    def __init__(self, f):
        self.f, self.z, self.pending, self.started = f, zlib.decompressobj(31), b"", False

    def readable(self):
        return True

    def _more(self):
        """Inflates the next piece into self.pending; False at the end."""
        while not self.pending:
            if self.z.eof:
                rest = self.z.unused_data
                while len(rest) < 2:
                    more = self.f.read(1 << 16)
                    if not more:
                        break
                    rest += more
                if not rest:
                    return False
                if not rest.startswith(b"\x1f\x8b"):
                    raise Failure("archive: bytes after the gzip stream")
                self.z = zlib.decompressobj(31)
                self.pending = self._inflate(rest)
                continue
            data = self.z.unconsumed_tail or self.f.read(1 << 16)
            if not data:
                if self.started or self.z.unused_data:
                    raise Failure("archive: the gzip stream ends inside a member")
                raise Failure("archive: not gzip (empty)")
            self.pending = self._inflate(data)
        return True

    def _inflate(self, data):
        self.started = True
        try:
            return self.z.decompress(data, 1 << 20)
        except zlib.error as e:
            raise Failure("archive: not gzip (%s)" % e)

    def readinto(self, buf):
        if not self._more():
            return 0
        n = min(len(buf), len(self.pending))
        buf[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n

    def drain(self):
        """Reads to the end of the file (tar's padding after its end)."""
        while self._more():
            self.pending = b""


def _member_name(m, top, last):
    """The file name of tar member m checked against the rules: directly in
    the one top folder, after the member before it (last), a regular file of
    mode 0644 and mtime 0; None for the top folder's own directory entry."""
    name = m.name
    if m.isdir() and last is None and name.rstrip("/") and "/" not in name.rstrip("/") and m.mtime == 0:
        return None  # the top folder itself, first
    if last is not None and name <= last:
        raise Failure("%s: not after %s: a pack's members are in sorted name order, each once" % (
            shown(name), shown(last)))
    if not m.isreg() or m.type not in (tarfile.REGTYPE, tarfile.AREGTYPE):
        raise Failure("%s: not a regular file" % shown(name))
    parts = name.split("/")
    if len(parts) != 2 or not parts[0] or not parts[1] or parts[0] in (".", "..") or parts[1] in (".", ".."):
        raise Failure("%s: not a file directly in the top folder" % shown(name))
    if top is not None and parts[0] != top:
        raise Failure("%s: a second top folder" % shown(name))
    if m.mode != 0o644:
        raise Failure("%s: mode %04o, a pack's files are of mode 0644" % (shown(name), m.mode))
    if m.mtime != 0:
        raise Failure("%s: mtime %d, a pack's files have mtime 0" % (shown(name), m.mtime))
    return parts


def read_pack(path, known, max_file):
    """{file name: bytes} of the pack at path: gzip members with nothing
    after them, holding a tar whose members are the files `known` names,
    each once, in sorted order, directly in one top folder, regular, mode
    0644, mtime 0; a JSON member of SMALL_JSON at most 1 MiB."""
    files, top, last = {}, None, None
    with open(path, "rb") as raw:
        stream = _Gunzip(raw)
        try:
            tar = tarfile.open(fileobj=io.BufferedReader(stream, 1 << 16), mode="r|")
            for m in tar:
                parts = _member_name(m, top, last)
                last = m.name
                if parts is None:
                    top = m.name.rstrip("/")
                    continue
                top = parts[0]
                if parts[1] not in known:
                    raise Failure("%s: not a file of an evidence pack" % shown(m.name))
                if parts[1] in SMALL_JSON and m.size > MAX_JSON:
                    raise Failure("%s: larger than 1 MiB (%d bytes)" % (parts[1], m.size))
                if m.size > max_file:
                    raise Failure("%s: too large" % parts[1])
                files[parts[1]] = tar.extractfile(m).read()
            stream.drain()
        except tarfile.TarError as e:
            raise Failure("archive: not a tar archive (%s)" % shown(str(e)))
    return files
