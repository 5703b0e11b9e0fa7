#!/usr/bin/env python3
"""The rooms of docs/rooms.json, checked against the build: every library
of the tree is in the table, and no library links one of a room below its
own (rooms are listed from the bottom up: a folder uses folders of its room
or of rooms above it in the table, never below). docs/design.md shows the
table as layers.py --markdown renders it, and the check fails when the two
differ.

Usage: layers.py SOURCE_DIR      exit 0 when the build keeps the rooms, 1 naming each edge that does not
       layers.py --markdown [SOURCE_DIR]   print the table as docs/design.md shows it"""
import json
import os
import re
import subprocess
import sys

ROOMS = os.path.join("docs", "rooms.json")
DESIGN = os.path.join("docs", "design.md")
BEGIN = "<!-- rooms: docs/rooms.json as scripts/checks/layers.py --markdown renders it -->\n"
END = "<!-- end of rooms -->\n"


def load_rooms(root):
    with open(os.path.join(root, ROOMS), encoding="utf-8") as f:
        return json.load(f)["rooms"]


def rooms_by_library(rooms):
    """{library: (room index, room, folder)}."""
    libraries = {}
    for index, room in enumerate(rooms):
        for folder in room["folders"]:
            for lib in folder["libraries"]:
                libraries[lib] = (index, room["room"], folder["folder"])
    return libraries


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


def build_graph(root):
    """{library: (folder, [linked names])} from every CMakeLists.txt."""
    files = subprocess.run(["git", "-C", root, "ls-files", "*CMakeLists.txt", "CMakeLists.txt"],
                           capture_output=True, text=True, check=True).stdout.split()
    graph = {}
    for f in files:
        text = re.sub(r"#[^\n]*", "", open(os.path.join(root, f), encoding="utf-8").read())
        folder = os.path.dirname(f)
        for name in re.findall(r"add_library\(\s*([A-Za-z_0-9]+)", text):
            graph.setdefault(name, (folder, []))
        for name, args in re.findall(r"target_link_libraries\(\s*([A-Za-z_0-9]+)([^)]*)\)", text):
            if name in graph:
                graph[name][1].extend(args.split())
    return graph


def main():
    args = sys.argv[1:]
    if args[:1] == ["--markdown"]:
        sys.stdout.write(markdown(load_rooms(os.path.abspath(args[1] if len(args) > 1 else "."))))
        return 0
    root = os.path.abspath(args[0] if args else ".")
    table = load_rooms(root)
    rooms = rooms_by_library(table)
    graph = build_graph(root)
    problems = []
    if shown_table(root) != markdown(table):
        problems.append("%s does not show %s as it is: put the output of scripts/checks/layers.py --markdown "
                        "between its lines %r and %r" % (DESIGN, ROOMS, BEGIN.strip(), END.strip()))
    for lib, (folder, _) in sorted(graph.items()):
        if lib not in rooms:
            problems.append("%s (%s/): not in %s" % (lib, folder, ROOMS))
        elif rooms[lib][2].rstrip("/") != folder:
            problems.append("%s: %s says %s, the build has it in %s/" % (lib, ROOMS, rooms[lib][2], folder))
    for lib, (folder, links) in sorted(graph.items()):
        if lib not in rooms:
            continue
        for dep in links:
            if dep in rooms and rooms[dep][0] > rooms[lib][0]:
                problems.append("%s (room '%s') links %s of room '%s', below it" %
                                (lib, rooms[lib][1], dep, rooms[dep][1]))
    for p in problems:
        print("FAIL: " + p)
    if problems:
        return 1
    edges = sum(1 for _, links in graph.values() for d in links if d in rooms)
    print("layers: %d libraries in %d rooms, %d edges between them, none running back up" %
          (len(graph), len({r[1] for r in rooms.values()}), edges))
    return 0


if __name__ == "__main__":
    sys.exit(main())
