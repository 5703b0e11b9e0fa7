"""Retention policies (CONTRACT.md section 9, "The policy"), with the
standard library only, written from the contract's text: a policy file read
strictly, one rule a line, refused at its first line that breaks a rule
with the contract's message, and the rule that covers a team.

    policy = *( line LF ) [ line ]          lines end at LF; a CR is part of its line
    line   = "" / "#" *byte                 skipped (blank, comment)
           / "default" SP KEEP / "team" SP T SP KEEP
    KEEP   = "forever" / %x31-39 *DIGIT ( "d" / "h" )    1h (3,600 s) to 36500d (3,153,600,000 s)
    T      = 1*63( %x61-7A / DIGIT / "-" ), never "ledger"

Lines are numbered from 1, skipped ones included. read() returns a Policy;
a file that breaks a rule is a PolicyError whose message is the contract's
(`retention policy line N: ...`). Nothing here does I/O.
"""
import re

from packread import shown

PREFIX = "retention policy line %d: "
SHAPE = "want 'default KEEP' or 'team T KEEP'"
_TEAM = re.compile(r"[a-z0-9-]{1,63}\Z")
_KEEP = re.compile(r"([1-9][0-9]*)([dh])\Z")
KEEP_MIN_S, KEEP_MAX_S = 3600, 36500 * 86400
_UNIT_S = {"d": 86400, "h": 3600}


class PolicyError(Exception):
    """A policy that breaks a rule: the message names its first such line."""


class Rule:
    """One rule: line (its number), team (None for the default rule), keep
    (the word as written) and keep_s (its seconds; None for forever)."""

    def __init__(self, line, team, keep, keep_s):
        self.line, self.team, self.keep, self.keep_s = line, team, keep, keep_s

    def name(self):
        """The rule as messages and OK lines name it: `default` or `team T`."""
        return "default" if self.team is None else "team %s" % self.team


class Policy:
    """The rules of a policy, in the order of their lines."""

    def __init__(self, rules):
        self.rules = rules

    def covering(self, team):
        """The rule that covers team's entries: its own, else the default;
        None when there is neither, and always for the team `ledger`, whose
        entries are never pruned."""
        if team == "ledger":
            return None
        default = None
        for rule in self.rules:
            if rule.team == team:
                return rule
            if rule.team is None:
                default = rule
        return default


def keep_seconds(word):
    """The seconds of a KEEP (None for forever); ValueError when word is not
    one."""
    if word == "forever":
        return None
    m = _KEEP.match(word)
    if m is not None:
        seconds = int(m.group(1)) * _UNIT_S[m.group(2)]
        if KEEP_MIN_S <= seconds <= KEEP_MAX_S:
            return seconds
    raise ValueError(word)


def _lines(data):
    """(number, text) of each line of data (bytes): split at LF, a final LF
    ending the last line, a CR kept in its line. A byte that is not UTF-8
    is kept (surrogateescape): no team or KEEP holds one, a comment may."""
    text = data.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if text.endswith("\n") or not text:
        lines.pop()
    return enumerate(lines, 1)


def read(data):
    """The Policy of a file's bytes; PolicyError naming the first line that
    breaks a rule. Within a line the words are checked in order: for a team
    rule T's bytes, T `ledger`, a second rule for T, then KEEP; for the
    default, a second default, then KEEP."""
    rules, default_line, team_lines = [], None, {}
    for n, line in _lines(data):
        if line == "" or line.startswith("#"):
            continue
        words = line.split(" ")
        if "" in words or not ((len(words) == 2 and words[0] == "default")
                                or (len(words) == 3 and words[0] == "team")):
            raise PolicyError(PREFIX % n + SHAPE)
        team, keep = (None, words[1]) if words[0] == "default" else (words[1], words[2])
        if team is None:
            if default_line is not None:
                raise PolicyError(PREFIX % n + "a second default rule (the first is on line %d)" % default_line)
        else:
            if not _TEAM.match(team):
                raise PolicyError(PREFIX % n + "team '%s': want 1-63 bytes of [a-z0-9-]" % shown(team))
            if team == "ledger":
                raise PolicyError(PREFIX % n + "team 'ledger': the ledger's own entries are never pruned")
            if team in team_lines:
                raise PolicyError(PREFIX % n + "team '%s': a second rule for the team (the first is on line %d)"
                                  % (team, team_lines[team]))
        try:
            seconds = keep_seconds(keep)
        except ValueError:
            raise PolicyError(PREFIX % n + "keep '%s': want forever, or 1h to 36500d as a decimal count and d or h"
                              % shown(keep))
        if team is None:
            default_line = n
        else:
            team_lines[team] = n
        rules.append(Rule(n, team, keep, seconds))
    return Policy(rules)
