// The verifier's public helpers (kept checkpoints, expected scopes, signed
// times) and how a Result is told: JSON, and the summary people read.
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "export/verify/cc/verify.h"
#include "ledger/format/note/note.h"
#include "util/text/terminal.h"

namespace ledger::verify {
namespace {

// "A at 2026-01-01T00:00:00Z (1767225600), B at ...": who cosigned, when.
std::string Cosigners(const std::vector<tlogpolicy::Cosigned>& cosigned) {
  std::string out;
  for (size_t i = 0; i < cosigned.size(); ++i) {
    absl::StrAppend(
        &out, i ? ", " : "", text::TerminalEscape(cosigned[i].witness), " at ",
        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(static_cast<int64_t>(cosigned[i].time)),
                         absl::UTCTimeZone()),
        " (", cosigned[i].time, ")");
  }
  return out;
}

// "witnessed: quorum Q met; cosigned by A at 2026-01-01T00:00:00Z (1767225600), B at ...\n"
std::string WitnessedLine(const std::string& quorum, const std::vector<tlogpolicy::Cosigned>& cosigned) {
  std::string out = absl::StrCat("witnessed: quorum ", quorum, " met; ");
  if (cosigned.empty()) return out + "no cosignature\n";
  return absl::StrCat(out, "cosigned by ", Cosigners(cosigned), "\n");
}

// "monitored: monitor-quorum 2 of 3 met; map cosigned by m1 at 2026-01-01T00:00:00Z (1767225600), ...\n"
std::string MonitoredLine(size_t quorum, size_t monitors, const std::vector<tlogpolicy::Cosigned>& cosigned) {
  return absl::StrCat("monitored: monitor-quorum ", quorum, " of ", monitors, " met; map cosigned by ",
                      Cosigners(cosigned), "\n");
}

}  // namespace

KeptCheckpoint SplitKeptCheckpoint(const std::string& file) {
  // The first line that is a time note's header, of either format.
  size_t at = std::string::npos;
  for (const char* h : {note::kCheckpointTimeHeader, note::kCheckpointTimeHeaderV2, note::kCheckpointTimeHeaderV3,
                        note::kCheckpointTimeHeaderV4}) {
    const std::string header = absl::StrCat(h, "\n");
    size_t found = file.compare(0, header.size(), header) == 0 ? 0 : file.find("\n" + header);
    if (found != std::string::npos && found > 0) ++found;
    at = std::min(at, found);
  }
  if (at == std::string::npos) return {file, ""};
  return {file.substr(0, at), file.substr(at)};
}

absl::StatusOr<KeptTime> KeptCheckpointNote(const std::string& vkey, const KeptCheckpoint& kept) {
  auto verifier = note::Verifier::Parse(vkey);
  if (!verifier.ok()) return verifier.status();
  auto cp_text = verifier->Open(kept.checkpoint);
  if (!cp_text.ok()) return absl::InvalidArgumentError(cp_text.status().message());
  auto cp = note::ParseCheckpoint(*cp_text);
  if (!cp.ok()) return absl::InvalidArgumentError(cp.status().message());
  auto text = verifier->Open(kept.time_note);
  if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat("time note: ", text.status().message()));
  auto t = note::ParseCheckpointTime(*text);
  if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("time note: ", t.status().message()));
  if (t->checkpoint.origin != cp->origin || t->checkpoint.size != cp->size || t->checkpoint.root != cp->root) {
    return absl::InvalidArgumentError("time note: not the time note of the checkpoint before it");
  }
  return KeptTime{t->time_us, t->version(), t->run_map_root, t->team_map_root};
}

absl::StatusOr<int64_t> KeptCheckpointTime(const std::string& vkey, const KeptCheckpoint& kept) {
  auto note = KeptCheckpointNote(vkey, kept);
  if (!note.ok()) return note.status();
  return note->time_us;
}

std::string SignedTime(int64_t time_us) {
  return absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromUnixMicros(time_us), absl::UTCTimeZone()),
                      " (", time_us, " us)");
}

absl::StatusOr<Scope> ParseExpectedScope(const std::string& text) {
  Scope s;
  auto bad = [&](const char* rule) { return absl::InvalidArgumentError(absl::StrCat("expected scope: ", rule)); };
  auto split = [](const std::string& rest, char sep) -> std::vector<std::string> { return absl::StrSplit(rest, sep); };
  size_t colon = text.find(':');
  std::string kind = text.substr(0, colon), rest = colon == std::string::npos ? "" : text.substr(colon + 1);
  if (kind == "run") {
    size_t slash = rest.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size()) return bad("want run:TEAM/RUN");
    s.team = rest.substr(0, slash);
    s.run_id = rest.substr(slash + 1);
  } else if (kind == "seq") {
    std::vector<std::string> parts = split(rest, ':');
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &s.from_seq) || !absl::SimpleAtoi(parts[1], &s.to_seq) ||
        s.from_seq >= s.to_seq) {
      return bad("want seq:A:B with A < B");
    }
  } else if (kind == "team") {
    std::vector<std::string> parts = split(rest, ',');
    absl::Time from, to;
    std::string err;
    if (parts.size() != 3 || parts[0].empty() || !absl::ParseTime(absl::RFC3339_full, parts[1], &from, &err) ||
        !absl::ParseTime(absl::RFC3339_full, parts[2], &to, &err) || to <= from) {
      return bad("want team:TEAM,FROM,TO with RFC 3339 times, FROM before TO");
    }
    s.team = parts[0];
    s.from_us = absl::ToUnixMicros(from);
    s.to_us = absl::ToUnixMicros(to);
  } else {
    return bad("want run:TEAM/RUN, seq:A:B or team:TEAM,FROM,TO");
  }
  return s;
}

nlohmann::json Result::Json() const {
  nlohmann::json j = {{"ok", ok},
                      {"trusted_key_in_pack", trusted_key_in_pack},
                      {"report_rebuilt", ok && !report_by_digest},
                      {"origin", origin},
                      {"tree_size", tree_size},
                      {"root", root},
                      {"entries", entries}};
  if (since_size.has_value()) {
    j["consistent_with_size"] = *since_size;
    j["consistent_with_root"] = since_root;
    j["consistent_with_since"] = since_given;
  }
  if (!scope.empty()) j["scope"] = nlohmann::json::parse(scope, nullptr, false);
  if (run_complete.has_value()) {
    j["complete"] = {{"entries", *run_complete}, {"up_to_seq", tree_size - 1}};
    j["complete"]["no_completion_proven"] = unsettled;
  }
  if (!team_window.empty()) j["team_window"] = team_window;
  if (signed_at_us) {
    j["signed_at_us"] = *signed_at_us;
    j["signed_at"] = absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromUnixMicros(*signed_at_us), absl::UTCTimeZone());
  }
  if (quorum) {
    j["witnessed"] = {{"quorum", *quorum}, {"cosigned", nlohmann::json::array()}};
    for (const tlogpolicy::Cosigned& c : cosigned) {
      j["witnessed"]["cosigned"].push_back({{"witness", c.witness}, {"time", c.time}});
    }
  }
  if (monitor_quorum) {
    j["monitored"] = {
        {"monitor_quorum", *monitor_quorum}, {"monitors", monitors}, {"cosigned", nlohmann::json::array()}};
    for (const tlogpolicy::Cosigned& c : monitored) {
      j["monitored"]["cosigned"].push_back({{"monitor", c.witness}, {"time", c.time}});
    }
  }
  if (!leader_epochs.empty()) j["leader_epochs"] = leader_epochs;
  if (!key.empty()) j["key"] = {{"vkey", key}, {"from", key_from}};
  if (!key_rotations.empty()) j["key_rotations"] = key_rotations;
  if (!erasures.empty()) j["redactions"] = erasures;
  if (pruned_before) {
    const PrunedBefore& p = *pruned_before;
    j["pruned_before"] = {{"from_seq", p.from_seq},
                          {"count", p.count},
                          {"pass", p.pass},
                          {"rule", p.rule},
                          {"cutoff_us", p.cutoff_us},
                          {"retention_seq", p.retention_seq},
                          {"policy_sha256", p.policy_sha256}};
  }
  if (stamp) j["time_stamp"] = {{"checked", true}, {"tsa", stamp->tsa}, {"gen_time", stamp->gen_time}};
  if (stamp_unchecked) j["time_stamp"] = {{"checked", false}};
  if (!ok) {
    j["failure"] = {{"file", file}, {"message", message}};
    if (seq >= 0) j["failure"]["seq"] = seq;
  }
  return j;
}

std::string Result::Summary() const {
  // Every value below but the counts came from the pack: escaped for the
  // terminal (util/text), so that a name cannot rewrite the lines around it.
  auto e = [](std::string_view value) { return text::TerminalEscape(value); };
  std::string out;
  if (trusted_key_in_pack) {
    out +=
        "WARNING: --trust-pack-key: the key inside the pack was trusted; this result proves nothing "
        "about the ledger's identity. Compare the pack's ledger.vkey with the ledger operator's "
        "published key.\n";
  }
  if (ok) {
    absl::StrAppend(&out, "OK: ", entries, " entries of ", e(scope), " verified against the checkpoint of ", e(origin),
                    " at tree size ", tree_size, ", root ", e(root),
                    signed_at_us ? absl::StrCat(", signed at ", SignedTime(*signed_at_us))
                                 : ", signing time: not stated (checkpoint signed before the ledger signed times)",
                    ".\n");
    if (quorum) absl::StrAppend(&out, WitnessedLine(*quorum, cosigned));
    if (monitor_quorum) absl::StrAppend(&out, MonitoredLine(*monitor_quorum, monitors, monitored));
    if (since_size.has_value()) {
      absl::StrAppend(&out, "The checkpoint is consistent with the earlier one at size ", *since_size, ", root ",
                      e(since_root), since_given ? " (the one given with --since)" : "", ".\n");
    }
    if (run_complete.has_value() && pruned_before.has_value()) {
      const PrunedBefore& p = *pruned_before;
      absl::StrAppend(&out, "complete from seq ", p.from_seq, ": every entry of the run from seq ", p.from_seq,
                      " up to seq ", tree_size - 1, " (run-head proof, ", *run_complete - p.count, " of its ",
                      *run_complete, " entries); the ", p.count, " before seq ", p.from_seq,
                      " were pruned under the retention policy (pass ", p.pass, ", rule ", e(p.rule), ", cutoff ",
                      SignedTime(p.cutoff_us), "), as entry ", p.retention_seq, " states.\n");
      for (const std::string& step : unsettled) {
        absl::StrAppend(&out, e(step), ": no completion in the log up to seq ", tree_size - 1, " (proven).\n");
      }
    } else if (run_complete.has_value()) {
      if (*run_complete == 0) {
        absl::StrAppend(&out, "complete: the run has no entry up to seq ", tree_size - 1, " (absence proof).\n");
      } else {
        absl::StrAppend(&out, "complete: every entry of the run up to seq ", tree_size - 1, " (run-head proof, ",
                        *run_complete, " entries).\n");
      }
      for (const std::string& step : unsettled) {
        absl::StrAppend(&out, e(step), ": no completion in the log up to seq ", tree_size - 1, " (proven).\n");
      }
    }
    if (!team_window.empty()) absl::StrAppend(&out, e(team_window), "\n");
    for (const std::string& epoch : leader_epochs) absl::StrAppend(&out, e(epoch), "\n");
    if (!key.empty()) {
      absl::StrAppend(&out, "signed by: ", e(key.substr(0, key.find('+', key.find('+') + 1))), " (", e(key_from),
                      ").\n");
    }
    for (const std::string& rotation : key_rotations) absl::StrAppend(&out, e(rotation), "\n");
    // What vouches for the time (CONTRACT section 7): the ledger's own
    // clock, the witnesses' cosignatures when a policy checked them.
    std::string evidence =
        signed_at_us ? absl::StrCat("the ledger's clock, ", SignedTime(*signed_at_us)) : std::string("no signed time");
    if (quorum) {
      absl::StrAppend(&evidence, cosigned.empty() ? "; no witness cosignature" : "; witnesses' cosignatures (",
                      cosigned.empty() ? "" : Cosigners(cosigned), cosigned.empty() ? "" : ")");
    } else {
      absl::StrAppend(&evidence, "; witnesses' cosignatures not checked (no --policy)");
    }
    if (stamp) {
      absl::StrAppend(&out, "time evidence: ", evidence, "; a time-stamp by TSA ", e(stamp->tsa), " at ",
                      stamp->gen_time, " (checked against --tsa-root).\n");
      absl::StrAppend(&out, "time stamp: stamped by TSA ", e(stamp->tsa), " at ", stamp->gen_time, ".\n");
    } else if (stamp_unchecked) {
      absl::StrAppend(&out, "time evidence: ", evidence,
                      "; a time-stamping authority's token, not checked (no --tsa-root).\n");
      out += "time stamp: present, not checked (no --tsa-root).\n";
    } else {
      absl::StrAppend(&out, "time evidence: ", evidence, "; no time-stamping authority's token.\n");
    }
    if (report_by_digest) {
      out +=
          "report.html: checked by its digest only (--report-by-digest): its words were not rebuilt from the "
          "entries.\n";
    }
    for (const std::string& erased : erasures) absl::StrAppend(&out, e(erased), "\n");
  } else {
    absl::StrAppend(&out, "FAILED: ", e(file), seq >= 0 ? absl::StrCat(" seq ", seq) : "", ": ", e(message), "\n");
  }
  return out;
}

}  // namespace ledger::verify
