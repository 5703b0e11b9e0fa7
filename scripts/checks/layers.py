#!/usr/bin/env python3
"""The rooms of docs/rooms.json, checked against the build and the sources:

- every library of the tree is in the table, in the folder the table says,
  named after its folder as ledger_library() names it (cmake/LedgerHelpers.cmake:
  ledger::<path below the root, '/' -> '_', without "ledger/">, e.g.
  ledger::format_hash for ledger/format/hash/) and linked by that alias;
  every other target (executables, tests) is in a folder of the table, and
  its room is its folder's (the longest folder of the table its path starts
  with);
- no library or executable links a library of a room above its own (rooms
  are listed from the bottom up: a folder uses folders of its room or of
  rooms below it); a test may link what it tests through;
- no source file includes a header of a room above its own (a test's files
  may include the test helpers of tests/);
- a header under a folder's internal/ is included only by the files of that
  folder (its library's sources and tests, and its other internal headers);
- the rules of the table's "rules" hold on the whole link graph: a target
  named there reaches none of the names or rooms it must not, through any
  chain of links (a static library brings everything it links).

docs/design.md shows the table as layers.py --markdown renders it, and the
check fails when the two differ.

Usage: layers.py SOURCE_DIR      exit 0 when the build keeps the rooms, 1 naming each edge that does not
       layers.py --markdown [SOURCE_DIR]   print the table as docs/design.md shows it"""
import json
import os
import re
import subprocess
import sys

ROOMS = os.path.join("docs", "rooms.json")
DESIGN = os.path.join("docs", "design.md")
# A test's sources, which may include the test helpers of tests/.
TEST_FILES = ("_test.cc", "_testing.h", "_test_fixture.h")
BEGIN = "<!-- rooms: docs/rooms.json as scripts/checks/layers.py --markdown renders it -->\n"
END = "<!-- end of rooms -->\n"


def load_table(root):
    with open(os.path.join(root, ROOMS), encoding="utf-8") as f:
        return json.load(f)


def rooms_by_library(rooms):
    """{library: (room index, room, folder)}."""
    libraries = {}
    for index, room in enumerate(rooms):
        for folder in room["folders"]:
            for lib in folder["libraries"]:
                libraries[lib] = (index, room["room"], folder["folder"])
    return libraries


def room_of_path(rooms, path):
    """(room index, room) of the longest folder of the table `path` is in; None when none."""
    best = None
    for index, room in enumerate(rooms):
        for folder in room["folders"]:
            f = folder["folder"]
            if (path + "/").startswith(f) and (best is None or len(f) > len(best[2])):
                best = (index, room["room"], f)
    return best[:2] if best else None


def markdown(rooms):
    """The table of rooms in Markdown, a room's name on its first folder's row."""
    def row(cells):
        return "|" + "".join(" %s |" % c if c else " |" for c in cells)

    lines = [row(["room", "folder", "library", "what"]), "|---|---|---|---|"]
    for room in rooms:
        for i, folder in enumerate(room["folders"]):
            lines.append(row([room["room"] if i == 0 else "", "`%s`" % folder["folder"],
                              ", ".join("`%s`" % lib for lib in folder["libraries"]), folder["what"]]))
    return "\n".join(lines) + "\n"


def shown_table(root):
    """The table between BEGIN and END in docs/design.md, None when it has none."""
    with open(os.path.join(root, DESIGN), encoding="utf-8") as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0]


def tracked(root, *patterns):
    return subprocess.run(["git", "-C", root, "ls-files"] + list(patterns),
                          capture_output=True, text=True, check=True).stdout.split()


# The keywords of ledger_library() (cmake/LedgerHelpers.cmake).
LIBRARY_KEYWORDS = ("NAME", "SRCS", "HDRS", "DEPS", "PRIVATE_DEPS", "INTERFACE")


def library_call(args):
    """{keyword: [words]} of a ledger_library() call's arguments."""
    lists, key = {}, None
    for word in args.split():
        if word in LIBRARY_KEYWORDS:
            key = word
            lists.setdefault(key, [])
        elif key is not None:
            lists[key].append(word)
    return lists


def build_graph(root):
    """{target: (kind, folder, [linked names])} from every CMakeLists.txt:
    libraries (ledger_library, named by their alias ledger::NAME; add_library),
    executables and tests (ledger_test). A library is named by its ledger::
    alias where it has one, and its links are as written."""
    graph, links = {}, []
    for f in tracked(root, "*CMakeLists.txt", "CMakeLists.txt"):
        text = re.sub(r"#[^\n]*", "", open(os.path.join(root, f), encoding="utf-8").read())
        folder = os.path.dirname(f)
        for args in re.findall(r"\bledger_library\(([^)]*)\)", text):
            call = library_call(args)
            graph.setdefault("ledger::" + call["NAME"][0],
                             ("library", folder, call.get("DEPS", []) + call.get("PRIVATE_DEPS", [])))
        aliases = dict((target, alias) for alias, target in
                       re.findall(r"\badd_library\(\s*(ledger::[A-Za-z_0-9]+)\s+ALIAS\s+([A-Za-z_0-9-]+)\s*\)", text))
        for kind, pattern in (("library", r"\badd_library\(\s*([A-Za-z_0-9-]+)(?!\S*\s+ALIAS)"),
                              ("executable", r"\badd_executable\(\s*([A-Za-z_0-9-]+)"),
                              ("test", r"\bledger_test\(\s*([A-Za-z_0-9-]+)")):
            for name in re.findall(pattern, text):
                graph.setdefault(aliases.get(name, name), (kind, folder, []))
        links += re.findall(r"\btarget_link_libraries\(\s*([A-Za-z_0-9-]+)([^)]*)\)", text)
    for name, args in links:
        name = alias_of(graph, name)
        if name in graph:
            graph[name][2].extend(a for a in args.split() if a not in ("PUBLIC", "PRIVATE", "INTERFACE"))
    return graph


def alias_of(graph, name):
    """The name the graph knows a target by: ledger::x for ledger_x when it has that alias."""
    if name.startswith("ledger_") and "ledger::" + name[len("ledger_"):] in graph:
        return "ledger::" + name[len("ledger_"):]
    return name


def check_aliases(graph):
    """A link that names a library by its target (ledger_x) rather than its alias (ledger::x)."""
    return ["%s links %s: link its alias, %s" % (name, dep, alias_of(graph, dep))
            for name, (_, _, links) in sorted(graph.items()) for dep in links if alias_of(graph, dep) != dep]


def reach(graph, target):
    """Every name `target` links, directly or through the libraries it links."""
    seen, todo = set(), list(graph[target][2])
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in graph:
            todo.extend(graph[name][2])
    return seen


def check_rules(table, graph, rooms):
    problems = []
    for rule in table.get("rules", []):
        for target in rule["targets"]:
            if target not in graph:
                problems.append("rule for %s: no such target" % target)
                continue
            reached = reach(graph, target)
            for banned in rule["must_not_reach"]:
                if banned.startswith("room:"):
                    hits = sorted(n for n in reached if n in rooms and rooms[n][1] == banned[5:])
                else:
                    hits = [banned] if banned in reached else []
                if hits:
                    problems.append("%s reaches %s (%s): %s" % (target, banned, ", ".join(hits), rule["why"]))
    return problems


def check_includes(root, rooms, read=None):
    """An include from a source to a header of a room above it. `read`
    (path -> text) reads the sources, from the tree unless given."""
    read = read or (lambda path: open(os.path.join(root, path), encoding="utf-8", errors="replace").read())
    problems = []
    for path in tracked(root, "*.cc", "*.h"):
        if path.endswith(TEST_FILES) or "/fuzz/" in path or path.startswith(("tests/", "bench/")):
            continue
        mine = room_of_path(rooms, os.path.dirname(path))
        if mine is None:
            continue
        text = read(path)
        for header in re.findall(r'^#include "([^"]+/[^"]+)"', text, re.M):
            theirs = room_of_path(rooms, os.path.dirname(header))
            if theirs and theirs[0] > mine[0]:
                problems.append("%s (room '%s') includes %s of room '%s', above it" % (path, mine[1], header, theirs[1]))
    return problems


def library_name(folder):
    """The name ledger_library() gives the library of `folder`: ledger/format/hash -> format_hash."""
    return re.sub(r"^ledger/", "", folder).replace("/", "_")


def check_names(graph):
    """A library not named after its folder: ledger::<library_name(folder)>,
    or ledger::<library_name(folder)>_<what> in a top folder that holds more
    than one (cmd/)."""
    problems = []
    for name, (kind, folder, _) in sorted(graph.items()):
        if kind != "library":
            continue
        expected = "ledger::" + library_name(folder)
        if name != expected and not ("/" not in folder and name.startswith(expected + "_")):
            either = " or %s_<what>" % expected if "/" not in folder else ""
            problems.append("%s (%s/): the library of %s/ is named %s%s (ledger_library, cmake/LedgerHelpers.cmake)" %
                            (name, folder, folder, expected, either))
    return problems


def owner_of(path):
    """The folder whose internal/ holds `path`, or None (ledger/storage/store/internal/rows.h: ledger/storage/store)."""
    parts = path.split("/")
    return "/".join(parts[:parts.index("internal")]) if "internal" in parts[:-1] else None


def check_internal(root, read=None):
    """An include of a header under some folder's internal/ from a file of
    another folder. `read` (path -> text) reads the sources, from the tree
    unless given."""
    read = read or (lambda path: open(os.path.join(root, path), encoding="utf-8", errors="replace").read())
    problems = []
    for path in tracked(root, "*.cc", "*.h"):
        mine = owner_of(path) or os.path.dirname(path)
        for header in re.findall(r'^#include "([^"]+/internal/[^"]+)"', read(path), re.M):
            owner = owner_of(header)
            if owner != mine:
                problems.append("%s includes %s, internal to %s/: only the files of %s/ may" %
                                (path, header, owner, owner))
    return problems


def check_folders(table_rooms, graph):
    """(problems, {target: (room index, room)}): each library in the table,
    in the folder the table says; every other target in a folder of a room."""
    rooms = rooms_by_library(table_rooms)
    problems, room_of = [], {}
    for name, (kind, folder, _) in sorted(graph.items()):
        if kind == "library":
            if name not in rooms:
                problems.append("%s (%s/): not in %s" % (name, folder, ROOMS))
                continue
            if rooms[name][2].rstrip("/") != folder:
                problems.append("%s: %s says %s, the build has it in %s/" % (name, ROOMS, rooms[name][2], folder))
            room_of[name] = rooms[name][:2]
        else:
            found = room_of_path(table_rooms, folder)
            if found is None:
                problems.append("%s %s (%s/): its folder is in no room of %s" % (kind, name, folder, ROOMS))
                continue
            room_of[name] = found
    return problems, room_of


def main():
    args = sys.argv[1:]
    if args[:1] == ["--markdown"]:
        sys.stdout.write(markdown(load_table(os.path.abspath(args[1] if len(args) > 1 else "."))["rooms"]))
        return 0
    root = os.path.abspath(args[0] if args else ".")
    table = load_table(root)
    rooms = rooms_by_library(table["rooms"])
    graph = build_graph(root)
    problems = []
    if shown_table(root) != markdown(table["rooms"]):
        problems.append("%s does not show %s as it is: put the output of scripts/checks/layers.py --markdown "
                        "between its lines %r and %r" % (DESIGN, ROOMS, BEGIN.strip(), END.strip()))
    folder_problems, room_of = check_folders(table["rooms"], graph)
    problems += folder_problems
    for name, (kind, folder, links) in sorted(graph.items()):
        # A test may link what it tests through (a program's options, say).
        if name not in room_of or kind == "test":
            continue
        for dep in links:
            if dep in rooms and rooms[dep][0] > room_of[name][0]:
                problems.append("%s %s (room '%s') links %s of room '%s', above it" %
                                (kind, name, room_of[name][1], dep, rooms[dep][1]))
    problems += check_names(graph)
    problems += check_aliases(graph)
    problems += check_rules(table, graph, rooms)
    problems += check_includes(root, table["rooms"])
    problems += check_internal(root)
    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    edges = sum(1 for _, _, links in graph.values() for d in links if d in rooms)
    kinds = {k: sum(1 for v in graph.values() if v[0] == k) for k in ("library", "executable", "test")}
    print("layers: %d libraries, %d executables and %d tests in %d rooms, %d edges between them, none running "
          "up; %d rules hold; no include runs up; each library is named after its folder and no other folder "
          "includes its internal/ headers" %
          (kinds["library"], kinds["executable"], kinds["test"], len(table["rooms"]), edges,
           sum(len(r["targets"]) for r in table.get("rules", []))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
