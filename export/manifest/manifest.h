// The evidence pack's manifest.json (CONTRACT.md section 7): one type, one
// encoder and one strict parser, used by the exporter that writes it, the
// verifier that checks it and the report that shows it.
//
// Grammar. The manifest is one JSON object, keys sorted, no whitespace,
// followed by one "\n" (as nlohmann::json::dump() writes it); a manifest
// that is not byte for byte its own re-encoding is refused, so no key is
// duplicated and nothing is said twice. Every key below is required unless
// marked; no other key is allowed, at any level.
//
//   counts            object {"entries": uint}: the lines of entries.jsonl
//   files             object, file name -> string, 64 lower-case hex: the
//                     SHA-256 of that file of the pack (every file but
//                     manifest.json and manifest.sig)
//   format            uint, 1 to 9 (the exporter writes kFormatVersion, 8
//                     for a pack holding an erased entry, 9 for a run pack
//                     across the retention line): a pack of format F from 2
//                     to 5 carries a checkpoint-time note of version F - 1,
//                     of format 6 to 9 one of version 4
//   origin            string, not empty: the log's origin
//   root              string, 64 lower-case hex: the checkpoint's root
//   scope             object, one of:
//                       {"kind":"run","run_id":S,"team":S}, S not empty
//                       {"from_seq":uint,"kind":"run","run_id":S,"team":S}
//                        (format 9 only, and always there), from_seq >= 1:
//                        the run's entries from that seq, the line below
//                        which its team's entries were pruned
//                       {"from_seq":uint,"from_us":int,"kind":"team",
//                        "team":S,"to_seq":uint,"to_us":int}, from_us < to_us,
//                        from_seq <= to_seq: the window's seqs [from, to)
//                       {"from_seq":uint,"kind":"seq","to_seq":uint},
//                        from_seq < to_seq
//   tree_size         uint: the checkpoint's size
//   unknown_grace_ms  uint (formats 2 to 9, and required there): the
//                     ledger's grace (ledgerd --unknown-grace-ms) past a
//                     step's timeout before it declares the step unknown
//
// Format 1 is the manifest of packs written before format 2 existed; it is
// still read. Format 3 has the fields of format 2 and says more of the pack:
// its checkpoint-time note is of format 2 (with the run-head map root), and
// a run pack carries run-head.json (CONTRACT section 7). Format 4 has the
// fields of format 3: its checkpoint-time note is of format 3 (with the
// team-head map root too), and a team window carries team-window.json.
// Format 5 has the fields of format 4 and a note of version 4 (run keys of
// version 2). Format 6 has the fields of format 5 and says that the pack
// proves its entries' inclusion with multiproof.txt, not proofs.jsonl.
// Format 7 has the fields of format 6 and says that report.html holds
// "Keys and time" (CONTRACT section 7, "The page's keys and time").
// Format 8 has the fields of format 7 and may carry redactions.jsonl
// (CONTRACT section 8). Format 9 has the fields of format 8, a run scope
// with from_seq, retention.jsonl and retention-policy.txt (CONTRACT
// section 9, "A run pack across the line"). DO
// NOT CHANGE the meaning of a field of a format: a new field is a new
// format.
//
// Thread-safe: pure functions.
#ifndef EXPORT_MANIFEST_MANIFEST_H_
#define EXPORT_MANIFEST_MANIFEST_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace ledger::manifest {

inline constexpr int kFormatVersion = 7;

// What a pack holds: a run, a seq range, or a team's time window. The kind
// follows from the fields: a run names its run_id (and team), a team window
// its team and no run, a seq range neither. The exporter is asked for a
// Scope and the manifest states it; for a team window the manifest also
// states the window's seqs [from_seq, to_seq), which the exporter finds.
struct Scope {
  std::string team;
  std::string run_id;
  uint64_t from_seq = 0;
  uint64_t to_seq = 0;
  int64_t from_us = 0;
  int64_t to_us = 0;

  bool is_run() const { return !run_id.empty(); }
  // A run pack across the retention line (format 9): from_seq >= 1.
  bool is_run_from() const { return is_run() && from_seq > 0; }
  bool is_team_window() const { return run_id.empty() && !team.empty(); }
  // "run", "team" or "seq", as the manifest writes it.
  std::string_view kind() const { return is_run() ? "run" : is_team_window() ? "team" : "seq"; }
};

struct Manifest {
  int format = kFormatVersion;
  std::string origin;
  Scope scope;
  uint64_t tree_size = 0;
  std::string root;  // hex
  uint64_t entries = 0;
  // Stated from format 2 on.
  std::optional<uint64_t> unknown_grace_ms;
  // name -> hex SHA-256
  std::map<std::string, std::string> files;
};

// The scope as the manifest writes it: {"kind":...} with its fields, keys
// sorted, no whitespace.
std::string ScopeJson(const Scope& scope);

// manifest.json's bytes. `m` MUST follow the grammar (a bug otherwise:
// the parser would refuse what the exporter wrote).
std::string Encode(const Manifest& m);

// Parses manifest.json strictly by the grammar above; INVALID_ARGUMENT
// naming the field (dotted: "scope.team") and its rule otherwise.
absl::StatusOr<Manifest> Parse(std::string_view text);

}  // namespace ledger::manifest

#endif  // EXPORT_MANIFEST_MANIFEST_H_
