"""The manifest and the scope (CONTRACT.md section 7, "The manifest"), with
the standard library only: manifest.json read strictly by its grammar, the
pack's files against the digests it lists, and a scope as written on a
command line (--expect-scope) read and compared with the manifest's.

A pack that breaks a rule is a packerror.Failure; a scope asked for that
cannot be read, a packerror.UsageError.
"""
import datetime
import hashlib
import json
import re

from packerror import Failure, UsageError
from packread import load_json, shown

HEX64 = re.compile(r"[0-9a-f]{64}\Z")
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)\Z")


def expected_scope(text):
    """A scope as written on a command line: run:TEAM/RUN, seq:A:B (B
    excluded) or team:TEAM,FROM,TO (RFC 3339, TO excluded), as the manifest
    writes it; UsageError otherwise."""
    kind, _, rest = text.partition(":")
    if kind == "run":
        team, slash, run = rest.partition("/")
        if not team or not slash or not run:
            raise UsageError("expected scope: want run:TEAM/RUN")
        return {"kind": "run", "team": team, "run_id": run}
    if kind == "seq":
        parts = rest.split(":")
        if len(parts) != 2 or not all(p.isdigit() for p in parts) or int(parts[0]) >= int(parts[1]):
            raise UsageError("expected scope: want seq:A:B with A < B")
        return {"kind": "seq", "from_seq": int(parts[0]), "to_seq": int(parts[1])}
    if kind == "team":
        parts = rest.split(",")
        if len(parts) != 3 or not parts[0] or not all(RFC3339.match(p) for p in parts[1:]):
            raise UsageError("expected scope: want team:TEAM,FROM,TO with RFC 3339 times, FROM before TO")
        epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        us = [(datetime.datetime.fromisoformat(p.replace("Z", "+00:00")) - epoch) // datetime.timedelta(microseconds=1)
              for p in parts[1:]]
        if us[0] >= us[1]:
            raise UsageError("expected scope: want team:TEAM,FROM,TO with RFC 3339 times, FROM before TO")
        return {"kind": "team", "team": parts[0], "from_us": us[0], "to_us": us[1]}
    raise UsageError("expected scope: want run:TEAM/RUN, seq:A:B or team:TEAM,FROM,TO")


def scope_text(scope):
    return json.dumps(scope, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def parse_manifest(data):
    """manifest.json read strictly by its grammar (export/manifest/manifest.h,
    CONTRACT.md section 7): Failure naming the field and its rule otherwise.
    A run scope has from_seq in a pack of format 9, and there always
    (section 9)."""
    def bad(field, rule):
        return Failure("manifest.json: %s: %s" % (field, rule))

    def exact_keys(obj, prefix, keys):
        for k in sorted(keys):
            if k not in obj:
                raise bad(prefix + k, "missing")
        for k in sorted(obj):
            if k not in keys:
                raise bad(shown(prefix + k), "not a field of the manifest")

    def uint(v, field):
        if type(v) is not int or not 0 <= v < 1 << 64:
            raise bad(field, "want an unsigned integer")
        return v

    def integer(v, field):
        if type(v) is not int or not -(1 << 63) <= v < 1 << 63:
            raise bad(field, "want an integer")
        return v

    def name(v, field):
        if not isinstance(v, str) or not v:
            raise bad(field, "want a non-empty string")
        return v

    m = load_json(data, "manifest.json")
    if not isinstance(m, dict):
        raise bad("manifest", "not a JSON object")
    if type(m.get("format")) is not int or m["format"] not in (1, 2, 3, 4, 5, 6, 7, 8, 9):
        raise bad("format", "want 1, 2, 3, 4, 5, 6, 7, 8 or 9, found %s"
                  % (shown(json.dumps(m["format"], ensure_ascii=False)) if "format" in m else "none"))
    keys = {"counts", "files", "format", "origin", "root", "scope", "tree_size"}
    if m["format"] >= 2:
        keys.add("unknown_grace_ms")
    exact_keys(m, "", keys)
    name(m["origin"], "origin")
    s = m["scope"]
    if not isinstance(s, dict):
        raise bad("scope", "want an object")
    kind = s.get("kind")
    from_seq = kind == "run" and "from_seq" in s  # a run pack from a seq (CONTRACT.md section 9)
    if m["format"] == 9 and not from_seq:
        raise bad("scope", "a pack of format 9 is a run pack from a seq (from_seq)")
    if from_seq and m["format"] != 9:
        raise bad("scope.from_seq", "only a run pack of format 9 starts at a seq")
    if kind == "run":
        exact_keys(s, "scope.", {"kind", "team", "run_id"} | ({"from_seq"} if from_seq else set()))
        name(s["team"], "scope.team")
        name(s["run_id"], "scope.run_id")
        if from_seq and uint(s["from_seq"], "scope.from_seq") < 1:
            raise bad("scope.from_seq", "want at least 1")
    elif kind == "team":
        if "from_seq" not in s or "to_seq" not in s:
            raise bad("scope", "a team window names its seqs (from_seq, to_seq)")
        exact_keys(s, "scope.", {"kind", "team", "from_us", "to_us", "from_seq", "to_seq"})
        name(s["team"], "scope.team")
        if integer(s["from_us"], "scope.from_us") >= integer(s["to_us"], "scope.to_us"):
            raise bad("scope.from_us", "want less than to_us")
    elif kind == "seq":
        exact_keys(s, "scope.", {"kind", "from_seq", "to_seq"})
    else:
        raise bad("scope.kind", 'want "run", "team" or "seq"')
    if kind != "run":
        low, high = uint(s["from_seq"], "scope.from_seq"), uint(s["to_seq"], "scope.to_seq")
        if (low >= high) if kind == "seq" else (low > high):
            raise bad("scope.to_seq", "want from_seq < to_seq" if kind == "seq" else "want from_seq <= to_seq")
    uint(m["tree_size"], "tree_size")
    if not isinstance(m["root"], str) or not HEX64.match(m["root"]):
        raise bad("root", "want 64 lower-case hex digits")
    if not isinstance(m["counts"], dict):
        raise bad("counts", "want an object")
    exact_keys(m["counts"], "counts.", {"entries"})
    uint(m["counts"]["entries"], "counts.entries")
    if m["format"] >= 2:
        uint(m["unknown_grace_ms"], "unknown_grace_ms")
    if not isinstance(m["files"], dict):
        raise bad("files", "want an object")
    for f, sha in m["files"].items():
        if not f:
            raise bad("files", "a file name is empty")
        if not isinstance(sha, str) or not HEX64.match(sha):
            raise bad(shown("files." + f), "want 64 lower-case hex digits")
    if (scope_text(m) + "\n").encode() != data:
        raise bad("manifest", "not in the one form the exporter writes (keys sorted, each once, no spaces, "
                              "one newline at the end)")
    return m


def check_files(files, manifest):
    """Every file of the pack but manifest.json and manifest.sig listed in the
    manifest with its SHA-256, and every file the manifest lists in the pack."""
    for name in ("manifest.json", "manifest.sig"):
        if name in manifest["files"]:
            raise Failure("manifest.json: lists %s, whose digest it cannot hold" % name)
    for name, data in sorted(files.items()):
        if name in ("manifest.json", "manifest.sig"):
            continue
        if name not in manifest["files"]:
            raise Failure("%s: not listed in the manifest" % name)
        want = manifest["files"][name]
        got = hashlib.sha256(data).hexdigest()
        if want != got:
            raise Failure("%s: SHA-256 expected %s, found %s" % (name, want, got))
    for name in sorted(manifest["files"]):
        if name not in files:
            raise Failure("%s: listed in the manifest but missing" % shown(name))


def check_scope(scope, expect):
    """The manifest's scope is the one asked for (expected_scope()): of its
    kind, with the fields the command line gives."""
    keys = {"run": ("team", "run_id"), "seq": ("from_seq", "to_seq"), "team": ("team", "from_us", "to_us")}
    if (not isinstance(scope, dict) or scope.get("kind") != expect["kind"]
            or any(scope.get(k) != expect[k] for k in keys[expect["kind"]])):
        raise Failure("manifest.json: scope is %s, expected %s (--expect-scope)"
                      % (shown(scope_text(scope)), shown(scope_text(expect))))
