#!/usr/bin/env python3
"""Every relative link of the tracked Markdown files resolves: the file or
folder it names is in the tree, and an anchor (#name) names a heading of
the Markdown file it points into, as GitHub makes anchors of headings.
Links in code (fenced blocks, `spans`) and to other sites are not followed.

Usage: doc_links.py SOURCE_DIR      exit 0 when every link resolves, 1 naming each one that does not"""
import os
import re
import subprocess
import sys
import urllib.parse

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text):
    """(line number, line) outside fenced code blocks, with inline code spans blanked."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield number, re.sub(r"(`+)(?:(?!\1).)+\1", lambda s: " " * len(s.group(0)), line)


def anchors(text):
    """The anchors GitHub gives the headings of `text`."""
    seen, out = {}, set()
    for _, line in prose_lines(text):
        m = HEADING.match(line)
        if not m:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(2))
        slug = re.sub(r"[^\w\- ]", "", title.replace("`", "").lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else "%s-%d" % (slug, n))
    return out


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    tracked = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True,
                             check=True).stdout.splitlines()
    files = set(tracked)
    folders = {os.path.dirname(f) for f in tracked}
    for f in list(folders):
        while f:
            f = os.path.dirname(f)
            folders.add(f)
    texts, headings, problems, links = {}, {}, [], 0

    def text_of(path):
        if path not in texts:
            with open(os.path.join(root, path), encoding="utf-8") as f:
                texts[path] = f.read()
        return texts[path]

    def anchors_of(path):
        if path not in headings:
            headings[path] = anchors(text_of(path))
        return headings[path]

    for doc in sorted(f for f in files if f.endswith(".md")):
        for number, line in prose_lines(text_of(doc)):
            for target in LINK.findall(line):
                if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                    continue  # another site, or mailto:
                links += 1
                path, _, anchor = urllib.parse.unquote(target).partition("#")
                where = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
                if where.startswith(".."):
                    problems.append("%s:%d: %s leaves the tree" % (doc, number, target))
                elif where not in files and where.rstrip("/") not in folders:
                    problems.append("%s:%d: %s: no such file or folder in the tree" % (doc, number, target))
                elif anchor and where.endswith(".md") and anchor not in anchors_of(where):
                    problems.append("%s:%d: %s: %s has no heading with the anchor #%s" %
                                    (doc, number, target, where, anchor))
    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    print("doc links: %d relative links in %d Markdown files, every one resolves" %
          (links, sum(1 for f in files if f.endswith(".md"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
