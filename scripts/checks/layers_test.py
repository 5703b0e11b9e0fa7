#!/usr/bin/env python3
"""layers.py catches what it is for, on this tree's own build graph and
table: a library moved into another room's folder, ledger-witness linking
the operations room (and so RocksDB and gRPC), a link up the rooms, an
include up the rooms, a library not named after its folder, a link to a
library's target instead of its alias, an include of another folder's
internal/ header, and the store's header reached from above the storage
room (directly, through a header, or through its testing header outside a
test). Each is made on a copy of what layers.py read.

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
            layers.check_aliases(graph) or layers.check_internal(root) or layers.check_private(root, table)):
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
    # The store reached from above the storage room, as the exporter, tiles
    # and metrics once reached it.
    def plant(plants):
        def read(path):
            text = open(os.path.join(root, path), encoding="utf-8", errors="replace").read()
            return text + "".join('#include "%s"\n' % h for h in plants.get(path, []))
        return read
    store_h, testing_h = "ledger/storage/store/store.h", "ledger/storage/store/testing.h"
    expect("ops/metrics.cc includes store.h",
           layers.check_private(root, table, plant({"ops/metrics.cc": [store_h]})),
           "ops/metrics.cc (room 'operations') reaches ledger/storage/store/store.h, private to room 'storage', "
           "through ops/metrics.cc -> ledger/storage/store/store.h")
    expect("ops/tiles/tiles.h includes store.h, tiles.cc reaches it",
           layers.check_private(root, table, plant({"ops/tiles/tiles.h": [store_h]})),
           "ops/tiles/tiles.cc (room 'operations') reaches ledger/storage/store/store.h, private to room 'storage', "
           "through ops/tiles/tiles.cc -> ops/tiles/tiles.h -> ledger/storage/store/store.h")
    expect("log_view.h includes store.h, every reader reaches it",
           layers.check_private(root, table, plant({"ledger/storage/log/log_view.h": [store_h]})),
           "query/sweeper/sweeper.cc (room 'services') reaches ledger/storage/store/store.h")
    expect("export/exporter/exporter.cc includes the store's testing header",
           layers.check_private(root, table, plant({"export/exporter/exporter.cc": [testing_h]})),
           "export/exporter/exporter.cc (room 'services') reaches ledger/storage/store/testing.h")
    # A test reaches the store through its testing header only.
    if layers.check_private(root, table, plant({"query/service/query_service_test.cc": [testing_h]})):
        failures.append("a test that includes ledger/storage/store/testing.h is refused")
    expect("ops/tiles/tiles_test.cc includes store.h itself",
           layers.check_private(root, table, plant({"ops/tiles/tiles_test.cc": [store_h]})),
           "ops/tiles/tiles_test.cc (room 'operations') reaches ledger/storage/store/store.h")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
