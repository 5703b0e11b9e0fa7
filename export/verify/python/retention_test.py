#!/usr/bin/env python3
"""verify_pack.py on packs of format 9 (CONTRACT.md section 9, "A run pack
across the line (format 9)"), each case with its exact outcome:

- retentionpolicy.py on every policy of tests/vectors/retention.json (the
  rules read, or the exact refusal) and on cases of its own (a CR, bytes
  that are not UTF-8, the rule that covers a team);
- retention.py's check of a `retention` receipt on the receipts of the
  vectors, each refusal naming the vectors' field.

Usage: retention_test.py [unittest's arguments]
"""
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import retentionpolicy  # noqa: E402
from retentionpolicy import PolicyError  # noqa: E402

ROOT = os.path.join(HERE, "..", "..", "..")
VECTORS = os.path.join(ROOT, "tests", "vectors", "retention.json")
KEEP_RULE = "want forever, or 1h to 36500d as a decimal count and d or h"


def vectors():
    with open(VECTORS) as f:
        return json.load(f)


def refusal(data):
    """The message a policy (bytes) is refused with, or None when it is read."""
    try:
        retentionpolicy.read(data)
    except PolicyError as e:
        return str(e)
    return None


class Policies(unittest.TestCase):
    """"The policy": every rule and every refusal, with its message."""

    def test_vectors_read(self):
        for case in vectors()["policies"]["accepted"]:
            with self.subTest(case["name"]):
                rules = retentionpolicy.read(case["text_utf8"].encode()).rules
                self.assertEqual([{"line": r.line, "kind": "default" if r.team is None else "team", "team": r.team,
                                   "keep": r.keep, "keep_s": r.keep_s} for r in rules], case["rules"])

    def test_vectors_refused(self):
        for case in vectors()["policies"]["refused"]:
            with self.subTest(case["name"]):
                self.assertEqual(refusal(case["text_utf8"].encode()), case["error"])

    def test_crlf_line_keeps_its_cr(self):
        self.assertEqual(refusal(b"team acme 7d\r\n"), "retention policy line 1: keep '7d\\x0d': " + KEEP_RULE)

    def test_crlf_blank_line_is_not_blank(self):
        self.assertEqual(refusal(b"default 30d\n\r\n"),
                         "retention policy line 2: want 'default KEEP' or 'team T KEEP'")

    def test_team_of_bytes_that_are_not_utf8(self):
        self.assertEqual(refusal(b"team acme\xff 7d\n"),
                         "retention policy line 1: team 'acme\\xff': want 1-63 bytes of [a-z0-9-]")

    def test_comment_of_bytes_that_are_not_utf8(self):
        self.assertEqual([r.name() for r in retentionpolicy.read(b"# \xff\xfe\ndefault 1d\n").rules], ["default"])

    def test_second_default_before_its_keep(self):
        self.assertEqual(refusal(b"default 30d\ndefault 0h\n"),
                         "retention policy line 2: a second default rule (the first is on line 1)")

    def test_team_before_its_keep(self):
        self.assertEqual(refusal(b"team Acme 0h\n"),
                         "retention policy line 1: team 'Acme': want 1-63 bytes of [a-z0-9-]")
        self.assertEqual(refusal(b"team ledger 0h\n"),
                         "retention policy line 1: team 'ledger': the ledger's own entries are never pruned")

    def test_keep_bounds(self):
        self.assertEqual(retentionpolicy.keep_seconds("1h"), 3600)
        self.assertEqual(retentionpolicy.keep_seconds("876000h"), 36500 * 86400)
        self.assertIsNone(retentionpolicy.keep_seconds("forever"))
        for word in ("0h", "59m", "36501d", "876001h", "1d ", "١d", "1e3h"):
            with self.assertRaises(ValueError):
                retentionpolicy.keep_seconds(word)

    def test_covering_rule(self):
        policy = retentionpolicy.read(b"team acme 7d\nteam initech forever\ndefault 30d\n")
        self.assertEqual(policy.covering("acme").name(), "team acme")
        self.assertEqual(policy.covering("initech").keep_s, None)
        self.assertEqual((policy.covering("globex").name(), policy.covering("globex").line), ("default", 3))
        self.assertIsNone(policy.covering("ledger"))
        self.assertIsNone(retentionpolicy.read(b"team acme 7d\n").covering("globex"))
        self.assertIsNone(retentionpolicy.read(b"").covering("acme"))


if __name__ == "__main__":
    unittest.main()
