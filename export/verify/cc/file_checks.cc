#include "export/verify/cc/internal/file_checks.h"

#include <algorithm>
#include <fstream>
#include <istream>
#include <streambuf>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "export/verify/cc/internal/signature_lines.h"
#include "export/verify/cc/internal/strict_json.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/runmap/proof_json.h"

namespace ledger::verify {

// Checks consistency.json (`json`, null when the pack has none) against the
// checkpoint `cp`, and that it starts at `since` when given; notes the
// earlier checkpoint in `r`. What fails, or "".
std::string CheckConsistency(const note::Verifier& verifier, const note::KeySet* keys, const note::Checkpoint& cp,
                             const std::string* json, const std::optional<note::Checkpoint>& since, Result* r) {
  if (json == nullptr) {
    // With --since the file is required, at equal sizes too (the exporter
    // writes it with an empty proof): CONTRACT.md section 7.
    if (!since) return "";
    return absl::StrCat("missing: --since asks for consistency with the checkpoint at size ", since->size);
  }
  auto parsed = ParseStrictJson(*json);
  if (!parsed.ok()) return std::string(parsed.status().message());
  const nlohmann::json& c = *parsed;
  if (!c.is_object()) return "not {\"old_checkpoint\":...,\"proof\":[...]}";
  for (const auto& [key, value] : c.items()) {
    if (key != "old_checkpoint" && key != "proof") return absl::StrCat(key, ": not a field");
  }
  if (!c.contains("old_checkpoint") || !c["old_checkpoint"].is_string() || !c.contains("proof") ||
      !c["proof"].is_array()) {
    return "not {\"old_checkpoint\":...,\"proof\":[...]}";
  }
  const std::string& old_note = c["old_checkpoint"].get_ref<const std::string&>();
  const note::Verifier* old_key = &verifier;
  if (keys != nullptr) {
    // The key of the old checkpoint's own size (CONTRACT section 5d).
    auto claimed = note::ClaimedCheckpoint(old_note);
    if (!claimed.ok()) return absl::StrCat("old_checkpoint: ", claimed.status().message());
    const note::KeySet::Range* at = keys->At(claimed->size);
    if (at == nullptr) return absl::StrCat("old_checkpoint: size ", claimed->size, ": no key is trusted for it");
    old_key = &at->verifier;
  }
  if (std::string bad = CheckSignatureLines(old_note, old_key->name(), old_key->key_id()); !bad.empty()) {
    return absl::StrCat("old_checkpoint: ", bad);
  }
  auto old_text = old_key->Open(old_note);
  if (!old_text.ok()) return absl::StrCat("old_checkpoint: ", old_text.status().message());
  auto old = note::ParseCheckpoint(*old_text);
  if (!old.ok() || old->origin != cp.origin) return "old_checkpoint: not a checkpoint of this log";
  if (since && (since->origin != old->origin || since->size != old->size || since->root != old->root)) {
    return absl::StrCat("old_checkpoint is size ", old->size, " root ", hash::Hex(old->root), ", --since is size ",
                        since->size, " root ", hash::Hex(since->root));
  }
  std::vector<hash::Hash> proof;
  for (const auto& h : c["proof"]) {
    hash::Hash parsed;
    if (!h.is_string() || !hash::ParseHexTo(h.get_ref<const std::string&>(), &parsed)) {
      return "proof: not a list of hex hashes";
    }
    proof.push_back(parsed);
  }
  if (auto s = merkle::VerifyConsistency(old->size, cp.size, old->root, cp.root, proof); !s.ok()) {
    return std::string(s.message());
  }
  r->since_size = old->size;
  r->since_root = hash::Hex(old->root);
  r->since_given = since.has_value();
  return "";
}

// Checks checkpoint-time (`time_note`, null when the pack has none): from
// format 2 on it is there, signed by the key, naming exactly the pack's
// checkpoint; notes its time in `r`. What fails, or "".
std::string CheckTime(const note::Verifier& verifier, const note::Checkpoint& cp, const manifest::Manifest& m,
                      const std::string* time_note, Result* r) {
  if (time_note == nullptr) {
    return m.format >= 2 ? "missing: a format 2 pack carries its checkpoint's time note" : "";
  }
  if (m.format < 2) return "a format 1 pack carries no time note";
  if (std::string bad = CheckSignatureLines(*time_note, verifier.name(), verifier.key_id()); !bad.empty()) return bad;
  auto text = verifier.Open(*time_note);
  if (!text.ok()) return std::string(text.status().message());
  auto t = note::ParseCheckpointTime(*text);
  if (!t.ok()) return std::string(t.status().message());
  // Section 7's table: a format F pack carries a version F - 1 note (a
  // format 2 pack no run-head.json), format 6 a version 4 one; a note of a
  // lower version is named by what it lacks, below.
  int version = std::min(m.format - 1, 4);
  if (t->version() > version) {
    return absl::StrCat("format ", m.format, " pack with a version ", t->version(), " note: a format ", m.format,
                        " pack carries a version ", version, " note");
  }
  if (t->checkpoint.origin != cp.origin || t->checkpoint.size != cp.size || t->checkpoint.root != cp.root) {
    return absl::StrCat("names the checkpoint of ", t->checkpoint.origin, " at size ", t->checkpoint.size, " root ",
                        hash::Hex(t->checkpoint.root), ", the pack's is size ", cp.size, " root ", hash::Hex(cp.root));
  }
  if (m.format >= 5 && !t->runs_keyed_by_team) {
    return absl::StrCat("a format ", m.format, " pack carries a version 4 note (with run keys of version 2)");
  }
  if (m.format >= 4 && !t->team_map_root.has_value()) {
    return "a format 4 pack carries a version 3 note (with the team-head map root)";
  }
  if (m.format >= 3 && !t->run_map_root.has_value()) {
    return "a format 3 pack carries a version 2 note (with the run-head map root)";
  }
  r->signed_at_us = t->time_us;
  r->note_version = t->version();
  r->run_map_root = t->run_map_root;
  r->team_map_root = t->team_map_root;
  return "";
}

// The run-head proof of a format 3 pack (CONTRACT section 7, "Proven
// completeness"): what fails, or "". Notes what is proven in `r`.
std::string CheckRunHead(const manifest::Manifest& m, const std::string* run_head, const StreamCheck& stream,
                         Result* r) {
  if (run_head == nullptr && m.scope.is_run() && r->run_map_root.has_value()) {
    // Also a format 1 or 2 manifest: the ledger that signed the map root
    // proves the run against it (a pack without the proof is a forgery).
    return "missing: a run pack whose checkpoint-time note signs a run-head map root carries its run's head proof";
  }
  if (m.format < 3 || !m.scope.is_run()) {
    return run_head == nullptr ? "" : "only a run pack carries a run-head proof";
  }
  if (run_head == nullptr) return "missing: a format 3 run pack carries its run's head proof";
  std::string text = *run_head;
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (auto twice = DuplicateKey(text)) return absl::StrCat("key ", *twice, " twice");
  auto proof = runmap::ParseProof(text);
  if (!proof.ok()) return std::string(proof.status().message());
  // The run keys of the note's version (CONTRACT section 6a, "Which run key").
  auto key = runmap::RunKey(m.scope.team, m.scope.run_id,
                            runmap::KeysOfNote(r->note_version).value_or(runmap::KeyVersion::kV2));
  if (!key.ok()) return std::string(key.status().message());
  std::string run = absl::StrCat(m.scope.team, "/", m.scope.run_id);
  if (proof->key != *key) {
    return absl::StrCat("key ", hash::Hex(proof->key), " is not the run key of ", run, " (", hash::Hex(*key), ")");
  }
  auto leads_to = runmap::ProofRoot(*proof);
  if (!leads_to.ok()) return std::string(leads_to.status().message());
  if (*leads_to != *r->run_map_root) {
    return absl::StrCat("the proof leads to map root ", hash::Hex(*leads_to), ", the checkpoint-time note signs ",
                        hash::Hex(*r->run_map_root));
  }
  const uint64_t n = m.tree_size;
  if (!proof->path.found.has_value()) {
    if (stream.entries() != 0) {
      return absl::StrCat("the map shows no entry of ", run, " up to tree size ", n, ", the pack holds ",
                          stream.entries());
    }
    r->run_complete = 0;
    return "";
  }
  const runmap::Head& head = proof->path.found->head;
  if (m.scope.is_run_from() && stream.entries() >= head.count) {
    return absl::StrCat("the run has ", head.count, " entries up to tree size ", n, ", the pack holds ",
                        stream.entries(), " from seq ", m.scope.from_seq,
                        ": a run pack from a seq holds fewer entries than its run");
  }
  if (!m.scope.is_run_from() && stream.entries() != head.count) {
    return absl::StrCat("the run has ", head.count, " entries up to tree size ", n, ", the pack holds ",
                        stream.entries());
  }
  if (stream.last_seq() != head.last_seq || stream.last_leaf_hash() != head.last_leaf_hash) {
    return absl::StrCat("the run's last entry up to tree size ", n, " is seq ", head.last_seq, " with leaf hash ",
                        hash::Hex(head.last_leaf_hash), ", the pack's last is seq ",
                        stream.last_seq() ? absl::StrCat(*stream.last_seq()) : "none", " with leaf hash ",
                        stream.last_seq() ? hash::Hex(stream.last_leaf_hash()) : "none");
  }
  r->run_complete = head.count;
  if (r->pruned_before.has_value()) r->pruned_before->count = head.count - stream.entries();
  return "";
}

// In a run pack, a step shown pending although its deadline (start +
// timeout + the manifest's grace) is before the signed time: what fails,
// or "".
std::string CheckDeadlines(const manifest::Manifest& m, std::optional<int64_t> signed_at_us, pack::Outcomes& outcomes) {
  // Only a run pack holds every entry of its steps up to the checkpoint: in
  // a window or range, a step's settling entry may lie outside the pack.
  if (!signed_at_us || !m.unknown_grace_ms || !m.scope.is_run()) return "";
  // Past a century the grace cannot make anything overdue; capped so that
  // sums stay in range.
  int64_t grace_us = static_cast<int64_t>(std::min<uint64_t>(*m.unknown_grace_ms, uint64_t{1} << 42)) * 1000;
  auto overdue = pack::FirstOverdueStep(outcomes, grace_us, *signed_at_us);
  if (!overdue.ok()) return std::string(overdue.status().message());
  if (!*overdue) return "";
  const pack::OverdueStep& s = **overdue;
  return absl::StrCat("step ", s.team, "/", s.run_id, "/", s.step_id, " attempt ", s.attempt,
                      " is pending, but its deadline (start + timeout + the manifest's unknown_grace_ms ",
                      *m.unknown_grace_ms, ") ", SignedTime(s.deadline_us), " is before the checkpoint's signed time ",
                      SignedTime(*signed_at_us), ": an honest ledger declares it unknown before signing");
}

// The times the auditor kept with earlier checkpoints: the pack's MUST be
// stated and not before them. What fails, or "".
std::string CheckTimeOrder(std::optional<int64_t> signed_at_us, std::optional<int64_t> since_us,
                           std::optional<int64_t> not_older_than_us) {
  for (auto [kept, flag] : {std::pair{since_us, "--since"}, std::pair{not_older_than_us, "--not-older-than"}}) {
    if (!kept) continue;
    if (!signed_at_us) {
      return absl::StrCat("missing: the checkpoint given with ", flag,
                          " has a signed time, so every later checkpoint has one");
    }
    if (*signed_at_us < *kept) {
      return absl::StrCat("time ", SignedTime(*signed_at_us), " is before ", SignedTime(*kept),
                          ", the time of the checkpoint given with ", flag, " (times never go backwards)");
    }
  }
  return "";
}

std::string CheckKeptRoots(const Result& r, int kept_version, const std::optional<hash::Hash>& kept_run_root,
                           const std::optional<hash::Hash>& kept_team_root, const char* flag) {
  // Runs keyed otherwise (a note signed again as version 4 when the ledger
  // began to key runs by team) have another root for the same runs.
  const bool runs_alike = runmap::KeysOfNote(kept_version) == runmap::KeysOfNote(r.note_version);
  for (auto [kept, pack_root, map] :
       {std::tuple{&kept_run_root, &r.run_map_root, "runs"}, std::tuple{&kept_team_root, &r.team_map_root, "teams"}}) {
    if (!kept->has_value() || !pack_root->has_value() || **kept == **pack_root) continue;
    if (kept == &kept_run_root && !runs_alike) continue;
    return absl::StrCat(map, " root ", hash::Hex(**pack_root), " at tree size ", r.tree_size,
                        ", the note kept with the checkpoint given with ", flag, " signs ", hash::Hex(**kept),
                        " at that size");
  }
  return "";
}

namespace {

// A witness's cosignature times are whole seconds: the time is after one
// only when it is in a later second.
std::string CheckCosignatureTimes(int64_t signed_at_us, const std::vector<std::pair<std::string, uint64_t>>& times) {
  const int64_t seconds = signed_at_us / 1'000'000;
  for (const auto& [witness, time] : times) {
    if (seconds <= 0 || static_cast<uint64_t>(seconds) <= time) continue;
    return absl::StrCat("time ", SignedTime(signed_at_us), " is after the cosignature time ", time, " of witness ",
                        witness, ": a witness cosigns a checkpoint after the ledger signed it");
  }
  return "";
}

}  // namespace

std::string CheckTimeAgainstEntries(const Result& r, const StreamCheck& stream,
                                    const std::vector<std::pair<std::string, uint64_t>>& cosignature_times) {
  if (auto v2 = stream.first_version2_seq(); v2 && !r.team_map_root) {
    return absl::StrCat(r.signed_at_us ? absl::StrCat("a version ", r.run_map_root ? 2 : 1, " note") : "missing",
                        ", but entries.jsonl holds a leaf of version 2 (seq ", *v2,
                        "): a ledger that writes version 2 leaves signs version 3 notes");
  }
  if (!r.signed_at_us) return "";
  if (auto latest = stream.latest_logged(); latest && *r.signed_at_us < latest->logged_at_us) {
    return absl::StrCat("time ", SignedTime(*r.signed_at_us), " is before entry ", latest->seq, "'s logged_at_us ",
                        SignedTime(latest->logged_at_us), ": the ledger signs a checkpoint after it logs its entries");
  }
  return CheckCosignatureTimes(*r.signed_at_us, cosignature_times);
}

std::string CheckGrace(const manifest::Manifest& m, std::optional<uint64_t> expect_grace_ms) {
  if (!expect_grace_ms || m.unknown_grace_ms == expect_grace_ms) return "";
  return absl::StrCat(
      "unknown_grace_ms: ", m.unknown_grace_ms ? absl::StrCat(*m.unknown_grace_ms) : "none (a format 1 pack)",
      ", the auditor expects ", *expect_grace_ms, " (--expect-grace-ms)");
}

namespace {

// A file of the archive as a stream, the reader's pieces in turn.
class PieceBuffer : public std::streambuf {
 public:
  explicit PieceBuffer(pack::PackReader& reader) : reader_(reader) {}

 protected:
  int_type underflow() override {
    auto piece = reader_.Read();
    if (!piece.ok() || piece->empty()) return traits_type::eof();
    char* at = const_cast<char*>(piece->data());
    setg(at, at, at + piece->size());
    return traits_type::to_int_type(*at);
  }

 private:
  pack::PackReader& reader_;
};

}  // namespace

std::optional<std::string> ArchivedFileDuplicateKey(const std::string& pack_path, const std::string& name) {
  auto reader = pack::PackReader::Open(pack_path, pack::Limits());
  if (!reader.ok()) return std::nullopt;
  while (true) {
    auto next = (*reader)->Next();
    if (!next.ok() || !next->has_value()) return std::nullopt;
    if (**next == name) break;
  }
  PieceBuffer buffer(**reader);
  std::istream in(&buffer);
  return DuplicateKey(in);
}

// What the report is made from (pack::WriteReport): the manifest without
// its files, as the exporter gives it before the digests exist.
absl::StatusOr<manifest::Manifest> ReportHeader(const std::string& manifest_text) {
  auto m = manifest::Parse(manifest_text);
  if (!m.ok()) return m.status();
  m->files.clear();
  return m;
}

// The report rebuilt with the exporter's own function, a piece at a time,
// from `outcomes` fed every checked entry: the page lists the entries
// (pack::ReportEntries) as well as their outcomes.
absl::Status RebuildReport(const std::string& manifest_text, pack::Outcomes& outcomes,
                           const std::string& checkpoint_note, const std::string& time_note,
                           absl::FunctionRef<void(std::string_view)> out) {
  auto header = ReportHeader(manifest_text);
  if (!header.ok()) return header.status();
  return pack::WriteReport(*header, outcomes, checkpoint_note, time_note, out);
}

// Where the pack's report first differs from the one rebuilt: reads the
// archive again (only when the digests differ) and compares the two as
// they come, holding neither. "at byte N (line L)" of the pack's report.
std::string ReportDifference(const std::string& pack_path, const std::string& manifest_text, pack::Outcomes& outcomes,
                             const std::string& checkpoint_note, const std::string& time_note) {
  auto reader = pack::PackReader::Open(pack_path, pack::Limits());
  if (!reader.ok()) return std::string(reader.status().message());
  while (true) {
    auto name = (*reader)->Next();
    if (!name.ok()) return std::string(name.status().message());
    if (!name->has_value()) return "missing";
    if (**name == pack::kReport) break;
  }
  std::string_view pending;  // of the pack's report, read but not yet compared
  bool pack_ended = false;
  uint64_t offset = 0, line = 1;
  std::optional<uint64_t> differs;
  std::string error;
  // Compares `piece` of the rebuilt report with the pack's next bytes.
  auto compare = [&](std::string_view piece) {
    while (!differs && !piece.empty()) {
      if (pending.empty() && !pack_ended) {
        auto read = (*reader)->Read();
        if (!read.ok()) {
          error = std::string(read.status().message());
          differs = offset;
          return;
        }
        pending = *read;
        pack_ended = pending.empty();
      }
      if (pack_ended) {
        differs = offset;
        return;
      }
      size_t n = std::min(pending.size(), piece.size()), k = 0;
      while (k < n && pending[k] == piece[k]) ++k;
      for (size_t i = 0; i < k; ++i) line += piece[i] == '\n';
      offset += k;
      if (k < n) {
        differs = offset;
        return;
      }
      pending.remove_prefix(n);
      piece.remove_prefix(n);
    }
  };
  absl::Status rebuilt = RebuildReport(manifest_text, outcomes, checkpoint_note, time_note, compare);
  if (!rebuilt.ok()) return std::string(rebuilt.message());
  if (!error.empty()) return error;
  if (!differs) {
    if (pending.empty() && !pack_ended) {
      auto read = (*reader)->Read();
      if (!read.ok()) return std::string(read.status().message());
      pending = *read;
    }
    if (pending.empty()) return "differs from the report rebuilt from the pack";  // not reached: digests differ
    differs = offset;
  }
  return absl::StrCat(
      "differs from the report rebuilt from the checked entries, outcomes, checkpoint and "
      "manifest, first at byte ",
      *differs, " (line ", line, ")");
}

}  // namespace ledger::verify
