#!/usr/bin/env python3
"""Rebuilds an evidence pack the way an operator holding the ledger's signing
key could: changes its files, recomputes outcomes.json, the manifest's
digests and counts, and re-signs the manifest (CONTRACT section 7) with the
key from the data directory's signing.key (PRIVATE+KEY+name+id+base64 of
0x01 and the Ed25519 seed).

In a pack of format 6 (multiproof.txt, CONTRACT sections 6 and 7), an entry
dropped is dropped as its operator could: multiproof.txt is rewritten to the
multiproof of the seqs left, every hash of which the pack gives (the dropped
entry's leaf hash and the hashes beside it).

Usage: repack.py IN.tar.gz OUT.tar.gz --key signing.key [--outcomes TOOL] CHANGE...
       repack.py --root PACK.tar.gz   print the root that the pack's entries and multiproof lead to
CHANGE is one of:
  flip-entry:N      change one hex digit of entry line N's span_id (stays canonical)
  fix-leaf-hash:N   write entry line N's new leaf hash into its proof line (formats 1 to 5)
  flip-hash:N       change the first hex digit of line N of multiproof.txt (format 6)
  drop:N            remove entry line N and its proof line (format 6: the multiproof of the rest)
  checkpoint:FILE   replace the checkpoint, and the manifest's tree_size and root
  vkey:FILE         replace ledger.vkey
  scope-kind:KIND   rename the scope's kind
  scope:JSON        replace the scope
  mutate:SEED       one change drawn by SEED: a byte of entries.jsonl,
                    proofs.jsonl (multiproof.txt in format 6) or checkpoint
                    replaced, or an entry (and its proof line) dropped,
                    repeated or swapped with the next
  unsigned-counts   after re-signing, change counts.entries in the manifest
  remove:NAME       remove the file NAME and its digest
  format:N          set the manifest's format (below 6 in a pack of format 6:
                    proofs.jsonl for multiproof.txt, each entry's path
                    derived from the multiproof)
  window-drop:KEY   remove KEY (before, after or head) from team-window.json
  time-note-v2      re-sign checkpoint-time (version 3 or 4) as a version 2
                    note (its teams line removed)
  time-note-v3      re-sign a version 4 checkpoint-time as a version 3 note
                    (the same lines: its runs root keeps the v2 run keys)
Lines are numbered from 0.
"""
import argparse
import base64
import gzip
import hashlib
import io
import json
import random
import struct
import subprocess
import sys
import tarfile

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def read_pack(path):
    files = {}
    with tarfile.open(path, "r:gz") as tar:
        for m in tar.getmembers():
            top, name = m.name.split("/", 1)
            files[name] = tar.extractfile(m).read()
    return top, files


def write_pack(path, top, files):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(top + "/" + name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(files[name]))
    with open(path, "wb") as f:
        f.write(gzip.compress(raw.getvalue(), mtime=0))


def sign_note(text, skey):
    _, _, name, key_id, data = skey.strip().split("+", 4)
    seed = base64.b64decode(data)[1:]
    sig = Ed25519PrivateKey.from_private_bytes(seed).sign(text.encode())
    blob = struct.pack(">I", int(key_id, 16)) + sig
    return (text + "\n\u2014 " + name + " " + base64.b64encode(blob).decode() + "\n").encode()


def time_header(text, version):
    """A checkpoint-time note's text with the header of version, the lines
    left as they are."""
    header, rest = text.split("\n", 1)
    if not header.startswith("evidence-ledger/checkpoint-time/v"):
        sys.exit("repack.py: checkpoint-time: not a time note")
    return "evidence-ledger/checkpoint-time/v%d\n%s" % (version, rest)


def leaf_hash(leaf):
    return hashlib.sha256(b"\x00" + leaf).hexdigest()


def lines(data):
    return data.split(b"\n")[:-1] if data else []


def split(n):
    """The largest power of two below n (RFC 9162 2.1.1), n >= 2."""
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def walk(size, seqs, leaf_hashes, nodes, known=None):
    """ROOT(0, size) of CONTRACT section 6 over the entries at seqs (ascending)
    and the multiproof's hashes (bytes); known, a dict, gets the hash of every
    subtree (lo, hi) the walk computes. None when the list does not fit."""
    state = {"seq": 0, "node": 0}

    def root(lo, hi):
        i = state["seq"]
        if i == len(seqs) or seqs[i] >= hi:
            if state["node"] == len(nodes):
                raise ValueError("the multiproof ends early")
            h = nodes[state["node"]]
            state["node"] += 1
        elif hi - lo == 1:
            h = leaf_hashes[i]
            state["seq"] += 1
        else:
            k = split(hi - lo)
            h = hashlib.sha256(b"\x01" + root(lo, lo + k) + root(lo + k, hi)).digest()
        if known is not None:
            known[(lo, hi)] = h
        return h

    try:
        return root(0, max(size, 1))
    except ValueError:
        return None


def nodes_of(size, seqs, known):
    """NODES(0, size) of seqs, from the subtree hashes known."""
    held = set(seqs)

    def nodes(lo, hi):
        if not any(lo <= s < hi for s in held):
            return [known[(lo, hi)]]
        if hi - lo == 1:
            return []
        k = split(hi - lo)
        return nodes(lo, lo + k) + nodes(lo + k, hi)

    return nodes(0, max(size, 1))


def proofs_of(size, entries, multiproof):
    """proofs.jsonl's lines for the entries, each entry's RFC 9162 path
    derived from the pack's multiproof (CONTRACT section 6, "One entry's
    proof from a multiproof")."""
    known = {}
    seqs = entry_seqs(entries)
    leaf_hashes = [hashlib.sha256(b"\x00" + e).digest() for e in entries]
    nodes = [bytes.fromhex(line.decode()) for line in multiproof]
    if walk(size, seqs, leaf_hashes, nodes, known) is None:
        sys.exit("repack.py: the pack's multiproof does not fit its entries")
    out = []
    for seq, h in zip(seqs, leaf_hashes):
        path, lo, hi = [], 0, size
        while hi - lo > 1:
            k = split(hi - lo)
            if seq < lo + k:
                path.append(known[(lo + k, hi)].hex())
                hi = lo + k
            else:
                path.append(known[(lo, lo + k)].hex())
                lo += k
        out.append(json.dumps({"seq": seq, "leaf_hash": h.hex(), "inclusion": path[::-1]},
                              separators=(",", ":")).encode())
    return out


def entry_seqs(entries):
    return [json.loads(e)["seq"] for e in entries]


def multiproof_root(size, entries, multiproof):
    """The root the entries and multiproof.txt's lines lead to (hex)."""
    nodes = [bytes.fromhex(line.decode()) for line in multiproof]
    root = walk(size, entry_seqs(entries), [hashlib.sha256(b"\x00" + e).digest() for e in entries], nodes)
    return root.hex() if root is not None else None


def multiproof_without(size, entries, multiproof, keep):
    """multiproof.txt's lines for the entries at the indexes keep, from the
    pack's entries and multiproof (the one that proves them)."""
    known = {}
    seqs = entry_seqs(entries)
    nodes = [bytes.fromhex(line.decode()) for line in multiproof]
    if walk(size, seqs, [hashlib.sha256(b"\x00" + e).digest() for e in entries], nodes, known) is None:
        sys.exit("repack.py: the pack's multiproof does not fit its entries")
    return [h.hex().encode() for h in nodes_of(size, [seqs[i] for i in keep], known)]


def mutate(rnd, files, entries, proofs):
    """Applies one change drawn by rnd; prints what it changed. In format 6
    proofs are multiproof.txt's lines, which an entry repeated or swapped
    leaves as they are."""
    multi = "multiproof.txt" in files
    name = rnd.choice(["entries.jsonl", "entries.jsonl", "proofs.jsonl", "checkpoint"])
    if name != "checkpoint" and rnd.random() < 0.4 and len(entries) > 1:
        op, k = rnd.choice(["drop", "repeat", "swap"]), rnd.randrange(len(entries) - 1)
        if op == "drop":
            drop(files, entries, proofs, k)
        elif op == "repeat":
            entries.insert(k, entries[k])
            if not multi:
                proofs.insert(k, proofs[k])
        else:
            entries[k], entries[k + 1] = entries[k + 1], entries[k]
            if not multi:
                proofs[k], proofs[k + 1] = proofs[k + 1], proofs[k]
        print("%s line %d" % (op, k))
        return
    if name == "proofs.jsonl" and multi:
        name = "multiproof.txt" if proofs else "entries.jsonl"
    rows = {"entries.jsonl": entries, "proofs.jsonl": proofs, "multiproof.txt": proofs}.get(name)
    data = bytearray(files[name]) if rows is None else None
    if rows is not None:
        k = rnd.randrange(len(rows))
        data = bytearray(rows[k])
    pos = rnd.randrange(len(data))
    old, data[pos] = data[pos], rnd.choice(b' ",:{}[]0123456789abcdefABCDEF\\ue')
    if rows is not None:
        rows[k] = bytes(data)
        print("%s line %d byte %d: %r to %r" % (name, k, pos, chr(old), chr(data[pos])))
    else:
        files[name] = bytes(data)
        print("%s byte %d: %r to %r" % (name, pos, chr(old), chr(data[pos])))


def drop(files, entries, proofs, k):
    """Removes entry line k; in format 6 proofs are multiproof.txt's lines,
    rewritten to the multiproof of the entries left."""
    if "multiproof.txt" in files:
        size = int(files["checkpoint"].decode().split("\n")[1])
        proofs[:] = multiproof_without(size, entries, proofs, [i for i in range(len(entries)) if i != k])
        del entries[k]
    else:
        del entries[k], proofs[k]


def main():
    if sys.argv[1:2] == ["--root"]:
        _, files = read_pack(sys.argv[2])
        size = int(files["checkpoint"].decode().split("\n")[1])
        print(multiproof_root(size, lines(files["entries.jsonl"]), lines(files["multiproof.txt"])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--key", required=True)
    ap.add_argument("--outcomes", default="")
    ap.add_argument("changes", nargs="*")
    args = ap.parse_intermixed_args()
    top, files = read_pack(args.src)
    manifest = json.loads(files["manifest.json"])
    # proofs: the lines of proofs.jsonl, or in format 6 of multiproof.txt.
    proof_file = "multiproof.txt" if "multiproof.txt" in files else "proofs.jsonl"
    entries, proofs = lines(files["entries.jsonl"]), lines(files[proof_file])
    unsigned_counts = False
    for change in args.changes:
        what, _, arg = change.partition(":")
        if what == "flip-entry":
            leaf = entries[int(arg)]
            i = leaf.index(b'"span_id":"') + len(b'"span_id":"')
            entries[int(arg)] = leaf[:i] + (b"0" if leaf[i:i + 1] != b"0" else b"1") + leaf[i + 1:]
        elif what == "fix-leaf-hash":
            if proof_file != "proofs.jsonl":
                sys.exit("repack.py: fix-leaf-hash: the pack has no proofs.jsonl")
            p = json.loads(proofs[int(arg)])
            p["leaf_hash"] = leaf_hash(entries[int(arg)])
            proofs[int(arg)] = json.dumps(p, separators=(",", ":")).encode()
        elif what == "flip-hash":
            if proof_file != "multiproof.txt":
                sys.exit("repack.py: flip-hash: the pack has no multiproof.txt")
            line = proofs[int(arg)]
            proofs[int(arg)] = (b"1" if line[:1] == b"0" else b"0") + line[1:]
        elif what == "drop":
            drop(files, entries, proofs, int(arg))
        elif what == "checkpoint":
            files["checkpoint"] = open(arg, "rb").read()
            body = files["checkpoint"].decode().split("\n")
            manifest["tree_size"] = int(body[1])
            manifest["root"] = base64.b64decode(body[2]).hex()
        elif what == "scope-kind":
            manifest["scope"]["kind"] = arg
        elif what == "scope":
            manifest["scope"] = json.loads(arg)
        elif what == "vkey":
            files["ledger.vkey"] = open(arg, "rb").read()
        elif what == "mutate":
            mutate(random.Random(int(arg)), files, entries, proofs)
        elif what == "unsigned-counts":
            unsigned_counts = True
        elif what == "remove":
            del files[arg], manifest["files"][arg]
        elif what == "format":
            manifest["format"] = int(arg)
            if int(arg) < 6 and proof_file == "multiproof.txt":
                size = int(files["checkpoint"].decode().split("\n")[1])
                proofs, proof_file = proofs_of(size, entries, proofs), "proofs.jsonl"
                del files["multiproof.txt"], manifest["files"]["multiproof.txt"]
                manifest["files"]["proofs.jsonl"] = ""
        elif what == "window-drop":
            window = json.loads(files["team-window.json"])
            del window[arg]
            files["team-window.json"] = json.dumps(window, separators=(",", ":")).encode()
        elif what == "time-note-v2":
            text = files["checkpoint-time"].decode().split("\n\n")[0] + "\n"
            text = "\n".join(l for l in text.split("\n") if not l.startswith("teams "))
            files["checkpoint-time"] = sign_note(time_header(text, 2), open(args.key).read())
        elif what == "time-note-v3":
            text = files["checkpoint-time"].decode().split("\n\n")[0] + "\n"
            files["checkpoint-time"] = sign_note(time_header(text, 3), open(args.key).read())
        else:
            sys.exit("repack.py: unknown change " + change)
    files["entries.jsonl"] = b"".join(e + b"\n" for e in entries)
    files[proof_file] = b"".join(p + b"\n" for p in proofs)
    if args.outcomes:  # kept as it was when the entries no longer parse
        r = subprocess.run([args.outcomes], input=files["entries.jsonl"], capture_output=True)
        if r.returncode == 0:
            files["outcomes.json"] = r.stdout
    manifest["counts"]["entries"] = len(entries)
    for name in manifest["files"]:
        manifest["files"][name] = hashlib.sha256(files[name]).hexdigest()
    files["manifest.json"] = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    skey = open(args.key).read()
    files["manifest.sig"] = sign_note(hashlib.sha256(files["manifest.json"]).hexdigest() + "\n", skey)
    if unsigned_counts:
        manifest["counts"]["entries"] += 1
        files["manifest.json"] = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    write_pack(args.dst, top, files)


if __name__ == "__main__":
    main()
