#!/usr/bin/env python3
"""layers.py catches what it is for, on this tree's own build graph and
table: a library moved into another room's folder, ledger-witness linking
the operations room (and so RocksDB and gRPC), a link up the rooms, an
include up the rooms, a library not named after its folder, a link to a
library's target instead of its alias, and an include of another folder's
internal/ header. Each is made on a copy of what layers.py read.

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
            layers.check_folders(table["rooms"], graph)[0] or layers.check_names(graph) or
            layers.check_aliases(graph) or layers.check_internal(root)):
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
    # A library named other than after its folder, and a link past its alias.
    g = copy.deepcopy(graph)
    g["ledger::http"] = g.pop("ledger::util_http")
    expect("util/http's library named ledger::http", layers.check_names(g),
           "ledger::http (util/http/): the library of util/http/ is named ledger::util_http")
    g = copy.deepcopy(graph)
    g["ledger-witness"][2].append("ledger_util_http")
    expect("ledger-witness links ledger_util_http", layers.check_aliases(g),
           "ledger-witness links ledger_util_http: link its alias, ledger::util_http")
    # Internal headers: another folder's refused, a subfolder's library
    # included; the folder's own files may.
    planted = {"ledger/storage/log/log.cc": "ledger/storage/store/internal/rows.h",
               "ops/tiles/tiles.cc": "ops/internal/timeline.h",
               "ledger/storage/store/store_test.cc": "ledger/storage/store/internal/rows.h",
               "ledger/storage/store/internal/rows.h": "ledger/storage/store/internal/store_rep.h"}

    def read_internal(path):
        text = open(os.path.join(root, path), encoding="utf-8", errors="replace").read()
        return text + ('#include "%s"\n' % planted[path] if path in planted else "")
    internal = layers.check_internal(root, read_internal)
    expect("ledger/storage/log/log.cc includes the store's internal rows.h", internal,
           "ledger/storage/log/log.cc includes ledger/storage/store/internal/rows.h, internal to ledger/storage/store/")
    expect("ops/tiles/tiles.cc includes ops/internal/timeline.h", internal,
           "ops/tiles/tiles.cc includes ops/internal/timeline.h, internal to ops/")
    if any(p.startswith(("ledger/storage/store/store_test.cc ", "ledger/storage/store/internal/rows.h "))
           for p in internal):
        failures.append("the store's own files refused its internal headers: %s" % internal)
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
