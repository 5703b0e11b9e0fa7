"""Hostile evidence packs against `ledgerctl verify`.

Each case is built from a real pack (exported by the calling script) and
written twice: as ordinary gzip (what tar or Python would make) and as the
ledger's own blocked gzip. For each, verify must exit 1 (a failure it could
name, not a crash) with the reason expected, write nothing outside its
temporary directory (it runs with an empty working directory and TMPDIR,
and both must be empty afterwards, and no file a hostile name points at may
appear), and stay within bounded memory (peak resident size measured with
wait4, limit below).

Usage: hostile_pack_test.py BUILD_DIR PACK VKEY_FILE WORK_DIR
"""
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zlib

MAX_RSS_MB = 100


def blocked_gzip(data):
    """The ledger's blocked gzip (export/gzip/blocked_gzip.h), here with zlib."""
    out = bytearray()
    for at in range(0, max(len(data), 1), 1 << 20):
        block = data[at:at + (1 << 20)]
        c = zlib.compressobj(1, zlib.DEFLATED, -15)
        body = c.compress(block) + c.flush()
        length = 20 + len(body) + 8
        out += bytes([0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 8, 0, ord("E"), ord("L"), 4, 0])
        out += length.to_bytes(4, "little") + body
        out += zlib.crc32(block).to_bytes(4, "little") + (len(block) & 0xffffffff).to_bytes(4, "little")
    return bytes(out)


def tar_bytes(members):
    """A ustar archive of (TarInfo, bytes or None) in order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def member_bytes(member):
    """One member as it sits in a tar: header, content, padding to 512."""
    info, data = member
    data = data or b""
    return info.tobuf(format=tarfile.USTAR_FORMAT) + data + b"\0" * (-len(data) % 512)


def regular(name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    return info, data


def special(name, kind, target=""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def main():
    build, pack, vkey_file, work = sys.argv[1:5]
    ledgerctl = os.path.join(build, "cmd", "ledgerctl")
    with tarfile.open(pack, "r:gz") as t:
        files = [(m.name, t.extractfile(m).read()) for m in t]
    names = [n for n, _ in files]
    assert names == sorted(names) and all(n.startswith("evidence/") for n in names), names
    good = [regular(n, d) for n, d in files]
    trap = os.path.join(work, "trap")  # where absolute and ".." names point
    os.makedirs(trap)

    def replaced(name, data):
        return [regular(n, data if n == "evidence/" + name else d) for n, d in files]

    bomb_header = tarfile.TarInfo("evidence/entries.jsonl")
    bomb_header.size = 1 << 30  # a gigabyte of zeros, no line end
    bomb_header.mode = 0o644

    huge = tarfile.TarInfo("evidence/report.html")
    huge.size = 100 << 30
    huge.mode = 0o644
    cases = [
        ("absolute name", [regular(trap + "/abs", b"x")] + good, "archive", r"absolute or empty name"),
        ("dot-dot name", [regular("../up", b"x")] + good, "archive", r"'\.\.' or '\.'"),
        ("nested dot-dot", good[:1] + [regular("evidence/../../trap/up", b"x")] + good[1:], "archive",
         r"not a file directly in the top folder"),
        ("symlink", [special("evidence/checkpoint", tarfile.SYMTYPE, "/etc/passwd")] + good[1:], "archive",
         r"not a regular file"),
        ("hard link", good + [special("evidence/zz", tarfile.LNKTYPE, "evidence/checkpoint")], "archive",
         r"not a regular file"),
        ("character device", [special("evidence/checkpoint", tarfile.CHRTYPE)] + good[1:], "archive",
         r"not a regular file"),
        ("fifo", [special("evidence/checkpoint", tarfile.FIFOTYPE)] + good[1:], "archive", r"not a regular file"),
        ("directory", [special("evidence/sub", tarfile.DIRTYPE)] + good, "archive", r"not a regular file"),
        ("duplicate name", good + [good[0]], "archive", r"duplicate name"),
        ("unknown file", good + [regular("evidence/extra.sh", b"#!/bin/sh\n")], "archive",
         r"not a file of an evidence pack"),
        ("second top folder", good + [regular("other/checkpoint", b"x")], "archive", r"a second top folder"),
        ("name not UTF-8", good + [regular("evidence/\udcff\udcfe", b"x")], "archive",
         r"not a file of an evidence pack"),
        ("missing file", [m for m in good if m[0].name != "evidence/report.html"], "report.html", r"^missing$"),
        ("entries not UTF-8", replaced("entries.jsonl", b'{"emitter":"\xff\xfe"}\n'), "entries.jsonl",
         r"^SHA-256 expected "),
        ("oversized manifest", replaced("manifest.json", b" " * (2 << 20)), "manifest.json",
         r"^larger than 1 MiB$"),
    ]
    failures = []

    def run(label, blob, want_file, want, expect_ok=False):
        path = os.path.join(work, "case.tar.gz")
        with open(path, "wb") as f:
            f.write(blob)
        cwd, tmp = os.path.join(work, "cwd"), os.path.join(work, "tmp")
        for d in (cwd, tmp):
            os.makedirs(d, exist_ok=True)
        env = dict(os.environ, TMPDIR=tmp)
        with open(os.path.join(work, "out"), "wb") as o, open(os.path.join(work, "err"), "wb") as e:
            p = subprocess.Popen([ledgerctl, "verify", path, "--vkey", vkey_file, "--json"], cwd=cwd, env=env,
                                 stdout=o, stderr=e)
            _, status, usage = os.wait4(p.pid, 0)
        returncode = os.waitstatus_to_exitcode(status)
        out, err = open(os.path.join(work, "out"), "rb").read(), open(os.path.join(work, "err"), "rb").read()
        rss_mb = usage.ru_maxrss / 1024
        problems = []
        if expect_ok:
            if returncode != 0 or not json.loads(out).get("ok"):
                problems.append(f"exit {returncode}, {out.decode(errors='replace')[:300]}")
        elif returncode != 1:
            problems.append(f"exit {returncode}, stderr {err.decode(errors='replace')[:300]}")
        else:
            result = json.loads(out)
            failure = result.get("failure", {})
            if result.get("ok") is not False or failure.get("file") != want_file or \
                    not re.search(want, failure.get("message", "")):
                problems.append(f"result {json.dumps(result)[:400]}")
        left = os.listdir(cwd) + os.listdir(tmp) + os.listdir(trap)
        if left:
            problems.append(f"files written: {left}")
        if rss_mb > MAX_RSS_MB:
            problems.append(f"peak memory {rss_mb:.0f} MB")
        status_text = "ok" if not problems else "FAIL " + "; ".join(problems)
        print(f"{label}: {status_text}")
        if problems:
            failures.append(label)
        return rss_mb

    for label, members, want_file, want in cases:
        data = tar_bytes(members)
        run(label + " (gzip)", gzip.compress(data, mtime=0), want_file, want)
        run(label + " (blocked gzip)", blocked_gzip(data), want_file, want)

    whole = tar_bytes(good)
    for framing, blob in (("gzip", gzip.compress(whole, mtime=0)), ("blocked gzip", blocked_gzip(whole))):
        run(f"truncated ({framing})", blob[: len(blob) // 2], "archive", r"truncat|unexpected end|EOF")
        run(f"not gzip ({framing})", b"PK\x03\x04" + blob[4:200], "archive", r".")
        declared = huge.tobuf(format=tarfile.GNU_FORMAT)  # says 100 GiB (base-256 size), no content
        run(f"declared 100 GiB ({framing})",
            (gzip.compress if framing == "gzip" else blocked_gzip)(member_bytes(good[0]) + declared),
            "archive", r"larger than the limit")

    # A sparse file (GNU tar's holes): its data would have gaps; refused.
    sparse_dir = os.path.join(work, "sparse")
    os.makedirs(os.path.join(sparse_dir, "evidence"))
    for name, data in files:
        with open(os.path.join(sparse_dir, name), "wb") as f:
            if name == "evidence/report.html":
                f.seek(1 << 20)  # a hole of a megabyte, then the report
            f.write(data)
    # Mode and mtime as a pack's, so that the holes are what is refused.
    sparse_tar = subprocess.run(["tar", "--sparse", "--format=gnu", "--sort=name", "--owner=0", "--group=0",
                                 "--mode=0644", "--mtime=@0", "-cf", "-", "-C", sparse_dir, "evidence"],
                                check=True, stdout=subprocess.PIPE).stdout
    shutil.rmtree(sparse_dir)
    # tar adds the folder itself first; the reader would refuse that before
    # it reached the holes, so it is cut out: the first 512-byte header.
    assert sparse_tar[156:157] == b"5", "the folder's header first"
    sparse_tar = sparse_tar[512:]
    for framing, wrap in (("gzip", lambda d: gzip.compress(d, mtime=0)), ("blocked gzip", blocked_gzip)):
        run(f"sparse file ({framing})", wrap(sparse_tar), "archive", r"a sparse file")

    # The same files in another order (proofs and the manifest before the
    # entries), as an auditor's own tar might write them: the contract says
    # sorted names (CONTRACT.md section 7, read strictly), so it is refused,
    # naming the member out of order.
    for order in (["evidence/proofs.jsonl", "evidence/manifest.json", "evidence/report.html"],
                  ["evidence/report.html", "evidence/proofs.jsonl", "evidence/entries.jsonl"]):
        reordered = sorted(good, key=lambda m: (m[0].name not in order,
                                                order.index(m[0].name) if m[0].name in order else 0))
        first = order[0].split("/")[1] + ", " + order[1].split("/")[1]
        for framing, wrap in (("gzip", lambda d: gzip.compress(d, mtime=0)), ("blocked gzip", blocked_gzip)):
            run(f"{first} first, refused ({framing})", wrap(tar_bytes(reordered)), "archive",
                r"not in sorted name order")

    # A decompression bomb: a gigabyte of zeros (about a megabyte packed) as
    # entries.jsonl, one endless line. Verified in bounded memory; refused by
    # its digest.
    head = b"".join(member_bytes(m) for m in good if m[0].name < "evidence/entries.jsonl")
    tail = b"".join(member_bytes(m) for m in good if m[0].name > "evidence/entries.jsonl") + b"\0" * 1024
    zero_block = blocked_gzip(b"\0" * (1 << 20))
    bomb_blob = (blocked_gzip(head + bomb_header.tobuf(format=tarfile.USTAR_FORMAT)) +
                 zero_block * 1024 + blocked_gzip(tail))
    rss = run("decompression bomb, 1 GiB of zeros (blocked gzip)", bomb_blob, "entries.jsonl", r"^SHA-256 expected ")
    print(f"bomb: {len(bomb_blob) >> 10} KiB packed, peak resident memory {rss:.0f} MB")
    if failures:
        print(f"FAIL: {len(failures)} case(s): {failures}")
        sys.exit(1)
    print(f"hostile packs: {len(cases) * 2 + 9} cases refused with their reason, nothing written, memory bounded;"
          " reordered packs verified")


if __name__ == "__main__":
    main()
