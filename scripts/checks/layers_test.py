#!/usr/bin/env python3
"""layers.py catches what it is for, on this tree's own build graph and
table: a library moved into another room's folder, ledger-witness linking
the operations room (and so RocksDB and gRPC), a link up the rooms, and an
include up the rooms. Each is made on a copy of what layers.py read.

Usage: layers_test.py SOURCE_DIR"""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layers  # noqa: E402


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    table = layers.load_table(root)
    rooms = layers.rooms_by_library(table["rooms"])
    graph = layers.build_graph(root)
    failures = []

    def expect(what, problems, text):
        if not any(text in p for p in problems):
            failures.append("%s: no problem naming %r in %s" % (what, text, problems))
        else:
            print("refused: %s: %s" % (what, next(p for p in problems if text in p)))

    if (layers.check_rules(table, graph, rooms) or layers.check_includes(root, table["rooms"]) or
            layers.check_folders(table["rooms"], graph)[0]):
        failures.append("the tree itself does not pass")
    # ledger-witness as it linked before util/http: through ledger::ops.
    g = copy.deepcopy(graph)
    g["ledger-witness"][2].append("ledger::ops")
    expect("ledger-witness links ledger::ops", layers.check_rules(table, g, rooms), "ledger-witness reaches RocksDB::rocksdb")
    expect("ledger-witness links ledger::ops", layers.check_rules(table, g, rooms), "ledger-witness reaches gRPC::grpc++")
    # A library whose folder the table puts in another room.
    t = copy.deepcopy(table)
    for room in t["rooms"]:
        for f in room["folders"]:
            if f["folder"] == "util/http/":
                f["libraries"].remove("ledger::util_http")
            if f["folder"] == "ops/":
                f["libraries"].append("ledger::util_http")
    expect("ledger::util_http listed under ops/", layers.check_folders(t["rooms"], graph)[0],
           "ledger::util_http: docs/rooms.json says ops/, the build has it in util/http/")
    # An include up the rooms, from a file of util/.
    def read(path):
        text = open(os.path.join(root, path), encoding="utf-8", errors="replace").read()
        if path == "util/http/http.h":
            text += '#include "ledger/storage/log/log.h"\n'
        return text
    expect("util/http/http.h includes ledger/storage/log/log.h", layers.check_includes(root, table["rooms"], read),
           "util/http/http.h (room 'utilities') includes ledger/storage/log/log.h of room 'storage'")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
