#!/usr/bin/env python3
"""The rooms of README's Layout table, checked against the build: every
library of the tree is in the table, and no library links one of a room
below its own (rooms are listed from the bottom up: a folder uses folders
of its room or of rooms above it in the table, never below).

Usage: layers.py SOURCE_DIR      exit 0 when the build keeps the rooms, 1 naming each edge that does not"""
import os
import re
import subprocess
import sys


def rooms_from_readme(root):
    """{library: (room index, room, folder)} from README's Layout table."""
    text = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    table = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    libraries, room, order = {}, None, []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[1] in ("folder", "---") or not cells[1].startswith("`"):
            continue
        if cells[0]:
            room = cells[0]
            order.append(room)
        for lib in re.findall(r"`([a-z_0-9]+)`", cells[2]):
            libraries[lib] = (len(order) - 1, room, cells[1].strip("`"))
    return libraries


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
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    rooms = rooms_from_readme(root)
    graph = build_graph(root)
    problems = []
    for lib, (folder, _) in sorted(graph.items()):
        if lib not in rooms:
            problems.append("%s (%s/): not in README's Layout table" % (lib, folder))
        elif rooms[lib][2].rstrip("/") != folder:
            problems.append("%s: README's table says %s, the build has it in %s/" % (lib, rooms[lib][2], folder))
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
