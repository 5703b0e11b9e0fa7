#include "export/verify/verify.h"

#include <algorithm>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "export/pack/pack.h"
#include "export/verify/digest_thread.h"
#include "export/verify/stream_check.h"
#include "ledger/cosign/cosign.h"
#include "ledger/hash/hash.h"
#include "ledger/merkle/merkle.h"
#include "ledger/note/note.h"
#include "ledger/runmap/proof_json.h"

namespace ledger::verify {
namespace {

// The pack is read once, in archive order, and never extracted: small files
// are kept in memory, entries.jsonl and proofs.jsonl are checked as they
// stream out of the archive (stream_check.h), and every file is hashed on
// the way. A file that comes before what it needs (a pack whose names are
// not in the order the exporter writes them) is spilled to a private
// temporary file and checked after the archive.
constexpr size_t kSmallFileBytes = size_t{1} << 20;

// A checkpoint's body, read before its signature can be checked (the key
// may come later in the archive); it is verified before anything that
// used it is reported.
std::optional<note::Checkpoint> UncheckedCheckpoint(std::string_view signed_note) {
  size_t end = signed_note.find("\n\n");
  if (end == std::string_view::npos) return std::nullopt;
  auto cp = note::ParseCheckpoint(signed_note.substr(0, end + 1));
  if (!cp.ok()) return std::nullopt;
  return *cp;
}

// A message as an auditor's terminal and JSON may show it: a hostile pack
// chooses some of its text (names, hashes), so every byte outside printable
// ASCII, and the backslash, is written \xNN.
std::string Printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out += c;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    }
  }
  return out;
}

// A scope as asked for with --expect-scope, for messages: a team window's
// seqs are found by the exporter, not asked for.
std::string AskedScopeJson(const Scope& s) {
  if (!s.is_team_window()) return manifest::ScopeJson(s);
  nlohmann::json j = {{"kind", "team"}, {"team", s.team}, {"from_us", s.from_us}, {"to_us", s.to_us}};
  return j.dump();
}

bool SameScope(const Scope& pack, const Scope& want) {
  if (pack.kind() != want.kind()) return false;
  if (want.is_run()) return pack.team == want.team && pack.run_id == want.run_id;
  if (want.is_team_window()) return pack.team == want.team && pack.from_us == want.from_us && pack.to_us == want.to_us;
  return pack.from_seq == want.from_seq && pack.to_seq == want.to_seq;
}

Result Fail(Result r, const std::string& file, int64_t seq, const std::string& message) {
  r.ok = false;
  r.file = Printable(file);
  r.seq = seq;
  r.message = Printable(message);
  return r;
}

// Checks consistency.json (`json`, null when the pack has none) against the
// checkpoint `cp`, and that it starts at `since` when given; notes the
// earlier checkpoint in `r`. What fails, or "".
std::string CheckConsistency(const note::Verifier& verifier, const note::Checkpoint& cp, const std::string* json,
                             const std::optional<note::Checkpoint>& since, Result* r) {
  if (json == nullptr) {
    if (!since) return "";
    if (since->size != cp.size || since->root != cp.root) {
      return absl::StrCat("missing: --since asks for consistency with the checkpoint at size ", since->size);
    }
    r->since_size = since->size;
    r->since_root = hash::Hex(since->root);
    r->since_given = true;
    return "";
  }
  nlohmann::json c = nlohmann::json::parse(*json, nullptr, false);
  if (c.is_discarded() || !c.is_object() || !c.contains("old_checkpoint") || !c["old_checkpoint"].is_string() ||
      !c.contains("proof") || !c["proof"].is_array()) {
    return "not {\"old_checkpoint\":...,\"proof\":[...]}";
  }
  auto old_text = verifier.Open(c["old_checkpoint"].get<std::string>());
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
  auto text = verifier.Open(*time_note);
  if (!text.ok()) return std::string(text.status().message());
  auto t = note::ParseCheckpointTime(*text);
  if (!t.ok()) return std::string(t.status().message());
  if (t->checkpoint.origin != cp.origin || t->checkpoint.size != cp.size || t->checkpoint.root != cp.root) {
    return absl::StrCat("names the checkpoint of ", t->checkpoint.origin, " at size ", t->checkpoint.size, " root ",
                        hash::Hex(t->checkpoint.root), ", the pack's is size ", cp.size, " root ", hash::Hex(cp.root));
  }
  if (m.format >= 3 && !t->run_map_root.has_value()) {
    return "a format 3 pack carries a version 2 note (with the run-head map root)";
  }
  r->signed_at_us = t->time_us;
  r->run_map_root = t->run_map_root;
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
  auto proof = runmap::ParseProof(text);
  if (!proof.ok()) return std::string(proof.status().message());
  auto key = runmap::RunKey(m.scope.team, m.scope.run_id);
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
  if (stream.entries() != head.count) {
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
                           const std::string& checkpoint_note, absl::FunctionRef<void(std::string_view)> out) {
  auto header = ReportHeader(manifest_text);
  if (!header.ok()) return header.status();
  return pack::WriteReport(*header, outcomes, checkpoint_note, out);
}

// Where the pack's report first differs from the one rebuilt: reads the
// archive again (only when the digests differ) and compares the two as
// they come, holding neither. "at byte N (line L)" of the pack's report.
std::string ReportDifference(const std::string& pack_path, const std::string& manifest_text, pack::Outcomes& outcomes,
                             const std::string& checkpoint_note) {
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
  absl::Status rebuilt = RebuildReport(manifest_text, outcomes, checkpoint_note, compare);
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

}  // namespace

KeptCheckpoint SplitKeptCheckpoint(const std::string& file) {
  // The first line that is a time note's header, of either format.
  size_t at = std::string::npos;
  for (const char* h : {note::kCheckpointTimeHeader, note::kCheckpointTimeHeaderV2}) {
    const std::string header = absl::StrCat(h, "\n");
    size_t found = file.compare(0, header.size(), header) == 0 ? 0 : file.find("\n" + header);
    if (found != std::string::npos && found > 0) ++found;
    at = std::min(at, found);
  }
  if (at == std::string::npos) return {file, ""};
  return {file.substr(0, at), file.substr(at)};
}

absl::StatusOr<int64_t> KeptCheckpointTime(const std::string& vkey, const KeptCheckpoint& kept) {
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
  return t->time_us;
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

namespace {

// "witnessed: quorum Q met; cosigned by A at 2026-01-01T00:00:00Z (1767225600), B at ...\n"
std::string WitnessedLine(const std::string& quorum, const std::vector<tlogpolicy::Cosigned>& cosigned) {
  std::string out = absl::StrCat("witnessed: quorum ", quorum, " met; ");
  if (cosigned.empty()) return out + "no cosignature\n";
  out += "cosigned by ";
  for (size_t i = 0; i < cosigned.size(); ++i) {
    absl::StrAppend(
        &out, i ? ", " : "", cosigned[i].witness, " at ",
        absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(static_cast<int64_t>(cosigned[i].time)),
                         absl::UTCTimeZone()),
        " (", cosigned[i].time, ")");
  }
  return out + "\n";
}

// The policy's log key named as the pack's key (the name before the first
// '+'): the key when the auditor gave a policy and no key.
absl::StatusOr<std::string> PolicyKey(const tlogpolicy::Policy& policy, const std::string& pack_vkey) {
  std::string name = pack_vkey.substr(0, pack_vkey.find('+'));
  for (const tlogpolicy::Log& log : policy.logs()) {
    if (log.key.name() == name) return log.vkey;
  }
  return absl::InvalidArgumentError(absl::StrCat("--policy: no log of the policy is named ", name));
}

// The checks of a policy on the pack's checkpoint file, once its signature
// by `vkey` holds: `vkey` is a log of the policy, every line of a policy
// witness verifies, the quorum is met. Fills r.quorum and r.cosigned.
absl::Status CheckWitnesses(const tlogpolicy::Policy& policy, const std::string& vkey, const std::string& note,
                            Result& r) {
  bool listed = false;
  for (const tlogpolicy::Log& log : policy.logs()) listed = listed || log.vkey == vkey;
  if (!listed) {
    return absl::PermissionDeniedError(absl::StrCat(
        "the ledger's key ", vkey.substr(0, vkey.find('+', vkey.find('+') + 1)), " is not a log of the policy"));
  }
  auto parts = cosign::SplitNote(note);
  if (!parts.ok()) return parts.status();
  for (const tlogpolicy::Witness& w : policy.witnesses()) {
    auto time = w.key.Verify(*parts);
    if (!time.ok() && time.status().code() != absl::StatusCode::kNotFound) {
      return absl::PermissionDeniedError(absl::StrCat("the cosignature of witness ", w.name, " does not verify"));
    }
  }
  auto evaluation = policy.Evaluate(note);
  if (!evaluation.ok()) return evaluation.status();
  if (!evaluation->quorum) {
    std::vector<std::string> by;
    for (const tlogpolicy::Cosigned& c : evaluation->cosigned) by.push_back(c.witness);
    return absl::PermissionDeniedError(absl::StrCat(
        "the policy's quorum ", policy.quorum(), " is not met: no cosignature from ",
        absl::StrJoin(evaluation->missing, ", "), by.empty() ? "" : "; cosigned by " + absl::StrJoin(by, ", ")));
  }
  r.quorum = policy.quorum();
  r.cosigned = evaluation->cosigned;
  return absl::OkStatus();
}

}  // namespace

nlohmann::json Result::Json() const {
  nlohmann::json j = {{"ok", ok},         {"trusted_key_in_pack", trusted_key_in_pack},
                      {"origin", origin}, {"tree_size", tree_size},
                      {"root", root},     {"entries", entries}};
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
  if (!ok) {
    j["failure"] = {{"file", file}, {"message", message}};
    if (seq >= 0) j["failure"]["seq"] = seq;
  }
  return j;
}

std::string Result::Summary() const {
  std::string out;
  if (trusted_key_in_pack) {
    out +=
        "WARNING: --trust-pack-key: the key inside the pack was trusted; this result proves nothing "
        "about the ledger's identity. Compare the pack's ledger.vkey with the ledger operator's "
        "published key.\n";
  }
  if (ok) {
    absl::StrAppend(&out, "OK: ", entries, " entries of ", scope, " verified against the checkpoint of ", origin,
                    " at tree size ", tree_size, ", root ", root,
                    signed_at_us ? absl::StrCat(", signed at ", SignedTime(*signed_at_us))
                                 : ", signing time: not stated (checkpoint signed before the ledger signed times)",
                    ".\n");
    if (quorum) absl::StrAppend(&out, WitnessedLine(*quorum, cosigned));
    if (since_size.has_value()) {
      absl::StrAppend(&out, "The checkpoint is consistent with the earlier one at size ", *since_size, ", root ",
                      since_root, since_given ? " (the one given with --since)" : "", ".\n");
    }
    if (run_complete.has_value()) {
      if (*run_complete == 0) {
        absl::StrAppend(&out, "complete: the run has no entry up to seq ", tree_size - 1, " (absence proof).\n");
      } else {
        absl::StrAppend(&out, "complete: every entry of the run up to seq ", tree_size - 1, " (run-head proof, ",
                        *run_complete, " entries).\n");
      }
      for (const std::string& step : unsettled) {
        absl::StrAppend(&out, step, ": no completion in the log up to seq ", tree_size - 1, " (proven).\n");
      }
    }
  } else {
    absl::StrAppend(&out, "FAILED: ", file, seq >= 0 ? absl::StrCat(" seq ", seq) : "", ": ", message, "\n");
  }
  return out;
}

namespace {

// One verification of a pack, its steps in order (VerifyPack). Each step
// returns nullopt to go on, or what VerifyPack returns: a failed Result, or
// an error when the pack cannot be examined.
struct PackCheck {
  using Stop = std::optional<absl::StatusOr<Result>>;

  PackCheck(const std::string& pack_path, const Options& options)
      : pack_path(pack_path), options(options), dir("ledger-verify"), stream(dir.path(), &outcomes) {}

  Stop ReadArchive();
  Stop KeyAndManifest();
  Stop Checkpoint();
  Stop ConsistencyAndTime();
  Stop EntriesAndProofs();
  Stop OutcomesAndReport();

  // Checks entries.jsonl or proofs.jsonl, `next` giving its pieces.
  absl::Status CheckStreamed(const std::string& name, NextPiece next);
  // Whether what `name` is checked against was read.
  bool Ready(const std::string& name) const;
  Stop CheckSpilled();

  const std::string& pack_path;
  const Options& options;
  Result r;
  pack::ScratchDir dir;
  std::map<std::string, std::string> small, digests, spilled;
  std::optional<note::Checkpoint> unchecked_cp;
  // The manifest as parsed before its signature is checked (the key may
  // come later): its scope steers the proof pass, and nothing it said is
  // reported before the signature is.
  std::optional<absl::StatusOr<manifest::Manifest>> unchecked_manifest;
  std::optional<Scope> scope;
  pack::Outcomes outcomes;
  StreamCheck stream;
  // The outcomes' digest, recomputed while the proofs are checked, then the
  // report's, rebuilt from them.
  std::shared_future<absl::StatusOr<std::string>> outcomes_digest;
  std::future<absl::StatusOr<std::string>> report_digest;
  std::string vkey;  // the key the pack is checked with
  std::optional<note::Verifier> verifier;
  std::optional<note::Checkpoint> cp;  // once its signature holds
};

absl::Status PackCheck::CheckStreamed(const std::string& name, NextPiece next) {
  if (name == pack::kProofs) {
    // The manifest and checkpoint are read by now; their texts are what
    // the checks below hold the report to.
    if (outcomes_digest.valid()) {
      report_digest = std::async(
          std::launch::async,
          [&outcomes = outcomes, outcomes_digest = outcomes_digest, manifest = small[pack::kManifest],
           note = small[pack::kCheckpoint]]() -> absl::StatusOr<std::string> {
            if (!outcomes_digest.get().ok()) return outcomes_digest.get().status();
            hash::Sha256Stream rebuilt;
            auto s = RebuildReport(manifest, outcomes, note, [&](std::string_view piece) { rebuilt.Update(piece); });
            if (!s.ok()) return s;
            return hash::Hex(rebuilt.Final());
          });
    }
    return stream.Proofs(*unchecked_cp, *scope, next);
  }
  if (auto s = stream.Entries(unchecked_cp->size, next); !s.ok()) return s;
  outcomes_digest = std::async(std::launch::async, [&outcomes = outcomes]() -> absl::StatusOr<std::string> {
    hash::Sha256Stream recomputed;
    if (auto s = outcomes.Write([&](std::string_view piece) { recomputed.Update(piece); }); !s.ok()) return s;
    return hash::Hex(recomputed.Final());
  });
  return absl::OkStatus();
}

bool PackCheck::Ready(const std::string& name) const {
  if (name == pack::kEntries) return unchecked_cp.has_value();
  return stream.entries_checked() && scope.has_value();
}

// One pass over the archive: small files kept, entries and proofs checked
// as they stream (or spilled, when they come before what they need).
PackCheck::Stop PackCheck::ReadArchive() {
  if (dir.path().empty()) {
    return absl::UnavailableError("verify: cannot create a temporary directory (set TMPDIR to a writable one)");
  }
  auto opened = pack::PackReader::Open(pack_path, pack::Limits());
  if (!opened.ok()) return Fail(r, "archive", -1, std::string(opened.status().message()));
  pack::PackReader* reader = opened->get();
  DigestThread file_digest;
  while (true) {
    auto name = reader->Next();
    if (!name.ok()) return Fail(r, "archive", -1, std::string(name.status().message()));
    if (!name->has_value()) break;
    const std::string file = **name;
    auto next = [&]() -> absl::StatusOr<std::string_view> {
      auto piece = reader->Read();
      if (piece.ok()) file_digest.Update(*piece);
      return piece;
    };
    absl::Status read;
    if (file == pack::kEntries || file == pack::kProofs) {
      if (Ready(file)) {
        read = CheckStreamed(file, next);
      } else {
        std::string path = dir.path() + "/" + file;
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        while (true) {
          auto piece = next();
          if (!piece.ok() || piece->empty()) {
            read = piece.status();
            break;
          }
          out.write(piece->data(), static_cast<std::streamsize>(piece->size()));
        }
        out.close();
        if (!out) return absl::UnavailableError("verify: cannot write a temporary file");
        spilled[file] = path;
      }
    } else if (file == pack::kOutcomes || file == pack::kReport) {
      while (true) {
        auto piece = next();
        if (!piece.ok() || piece->empty()) {
          read = piece.status();
          break;
        }
      }
    } else {
      std::string& content = small[file];
      while (true) {
        auto piece = next();
        if (!piece.ok() || piece->empty()) {
          read = piece.status();
          break;
        }
        content.append(*piece);
        if (content.size() > kSmallFileBytes) {
          return Fail(r, file, -1, absl::StrCat("larger than ", kSmallFileBytes, " bytes"));
        }
      }
      if (file == pack::kCheckpoint) unchecked_cp = UncheckedCheckpoint(content);
      if (file == pack::kManifest) {
        unchecked_manifest = manifest::Parse(content);
        if (unchecked_manifest->ok()) scope = (*unchecked_manifest)->scope;
      }
    }
    if (!read.ok()) return Fail(r, "archive", -1, std::string(read.message()));
    digests[file] = hash::Hex(file_digest.Final());
  }
  return CheckSpilled();
}

// Files that came before what they need.
PackCheck::Stop PackCheck::CheckSpilled() {
  for (const char* name : {pack::kEntries, pack::kProofs}) {
    if (!spilled.count(name) || !Ready(name)) continue;
    std::ifstream in(spilled[name], std::ios::binary);
    std::string buf(1 << 18, '\0');
    auto next = [&]() -> absl::StatusOr<std::string_view> {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      return std::string_view(buf.data(), static_cast<size_t>(in.gcount()));
    };
    if (auto s = CheckStreamed(name, next); !s.ok()) return s;
  }

  return std::nullopt;
}

// The key, the manifest's signature and every file's digest.
PackCheck::Stop PackCheck::KeyAndManifest() {
  for (const char* name : {pack::kCheckpoint, pack::kEntries, pack::kVkey, pack::kManifest, pack::kManifestSig,
                           pack::kOutcomes, pack::kProofs, pack::kReport}) {
    if (!digests.count(name)) return Fail(r, name, -1, "missing");
  }

  // The key.
  std::string pack_vkey = small[pack::kVkey];
  while (!pack_vkey.empty() && pack_vkey.back() == '\n') pack_vkey.pop_back();
  vkey = options.vkey;
  if (vkey.empty() && !options.trust_pack_key) {
    auto named = PolicyKey(*options.policy, pack_vkey);
    if (!named.ok()) return named.status();
    vkey = *named;
  }
  if (options.trust_pack_key) {
    vkey = pack_vkey;
    r.trusted_key_in_pack = true;
  } else if (vkey != pack_vkey) {
    return Fail(r, pack::kVkey, -1, absl::StrCat("expected the given key ", vkey, ", found ", pack_vkey));
  }
  auto parsed = note::Verifier::Parse(vkey);
  if (!parsed.ok()) return Fail(r, pack::kVkey, -1, std::string(parsed.status().message()));
  verifier = *std::move(parsed);

  // The manifest and every file's digest.
  const std::string& manifest_text = small[pack::kManifest];
  auto signed_digest = verifier->Open(small[pack::kManifestSig]);
  if (!signed_digest.ok()) {
    return Fail(r, pack::kManifestSig, -1, std::string(signed_digest.status().message()));
  }
  std::string digest = hash::Hex(hash::Sha256(manifest_text)) + "\n";
  if (*signed_digest != digest) {
    return Fail(
        r, pack::kManifest, -1,
        absl::StrCat("SHA-256 is ", digest.substr(0, 64), ", the signature covers ", signed_digest->substr(0, 64)));
  }
  if (!unchecked_manifest->ok()) {
    return Fail(r, pack::kManifest, -1, std::string(unchecked_manifest->status().message()));
  }
  const manifest::Manifest& manifest = **unchecked_manifest;
  r.origin = manifest.origin;
  r.tree_size = manifest.tree_size;
  r.scope = manifest::ScopeJson(manifest.scope);
  // An entry the digests below cannot check is refused, not skipped.
  for (const char* self : {pack::kManifest, pack::kManifestSig}) {
    if (manifest.files.contains(self)) {
      return Fail(r, pack::kManifest, -1, absl::StrCat("lists ", self, ", whose digest it cannot hold"));
    }
  }
  for (const auto& [name, sha] : digests) {
    if (name == pack::kManifest || name == pack::kManifestSig) continue;
    auto listed = manifest.files.find(name);
    if (listed == manifest.files.end()) return Fail(r, name, -1, "not listed in the manifest");
    if (sha != listed->second) {
      return Fail(r, name, -1, absl::StrCat("SHA-256 expected ", listed->second, ", found ", sha));
    }
  }
  for (const auto& [name, sha] : manifest.files) {
    if (!digests.count(name)) return Fail(r, name, -1, "listed in the manifest but missing");
  }

  return std::nullopt;
}

PackCheck::Stop PackCheck::Checkpoint() {
  const manifest::Manifest& manifest = **unchecked_manifest;
  auto cp_text = verifier->Open(small[pack::kCheckpoint]);
  if (!cp_text.ok()) return Fail(r, pack::kCheckpoint, -1, std::string(cp_text.status().message()));
  auto parsed = note::ParseCheckpoint(*cp_text);
  if (!parsed.ok()) return Fail(r, pack::kCheckpoint, -1, std::string(parsed.status().message()));
  cp = *parsed;
  if (cp->origin != r.origin || cp->origin != verifier->name()) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("origin '", cp->origin, "', manifest and key say '", r.origin, "'"));
  }
  if (cp->size != r.tree_size || hash::Hex(cp->root) != manifest.root) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("size ", cp->size, " root ", hash::Hex(cp->root), ", the manifest says size ", r.tree_size,
                             " root ", manifest.root));
  }
  // What the entries were checked against, before the signature was, is
  // what the signature covers.
  if (!unchecked_cp || unchecked_cp->size != cp->size || unchecked_cp->root != cp->root) {
    return Fail(r, pack::kCheckpoint, -1, "its text is not the one its signature covers");
  }
  r.root = hash::Hex(cp->root);
  if (options.policy) {
    if (auto s = CheckWitnesses(*options.policy, vkey, small[pack::kCheckpoint], r); !s.ok()) {
      return Fail(r, pack::kCheckpoint, -1, std::string(s.message()));
    }
  }

  // What the auditor asked for.
  if (options.expect_scope && !SameScope(manifest.scope, *options.expect_scope)) {
    return Fail(
        r, pack::kManifest, -1,
        absl::StrCat("scope is ", r.scope, ", expected ", AskedScopeJson(*options.expect_scope), " (--expect-scope)"));
  }
  if (cp->size < options.not_older_than) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("tree size ", cp->size, " is older than the ", options.not_older_than,
                             " asked for (--not-older-than)"));
  }
  if (options.not_older_than_root && cp->size == options.not_older_than && cp->root != *options.not_older_than_root) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("root ", hash::Hex(cp->root), " at tree size ", cp->size,
                             ", the checkpoint given with "
                             "--not-older-than has root ",
                             hash::Hex(*options.not_older_than_root)));
  }

  return std::nullopt;
}

PackCheck::Stop PackCheck::ConsistencyAndTime() {
  const manifest::Manifest& manifest = **unchecked_manifest;
  // The consistency proof from an earlier checkpoint, when there is one;
  // from the auditor's, when given.
  std::optional<note::Checkpoint> since;
  std::optional<int64_t> since_time;
  bool since_signs_map = false;  // the kept time note is version 2
  if (!options.since.empty()) {
    KeptCheckpoint kept = SplitKeptCheckpoint(options.since);
    if (!kept.time_note.empty()) {
      auto t = KeptCheckpointTime(vkey, kept);
      if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", t.status().message()));
      since_time = *t;
      since_signs_map = kept.time_note.starts_with(absl::StrCat(note::kCheckpointTimeHeaderV2, "\n"));
    }
    auto since_text = verifier->Open(kept.checkpoint);
    if (!since_text.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", since_text.status().message()));
    auto parsed = note::ParseCheckpoint(*since_text);
    if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", parsed.status().message()));
    since = *parsed;
  }
  const std::string* consistency = digests.count(pack::kConsistency) ? &small[pack::kConsistency] : nullptr;
  if (std::string failure = CheckConsistency(*verifier, *cp, consistency, since, &r); !failure.empty()) {
    return Fail(r, pack::kConsistency, -1, failure);
  }

  // The checkpoint's signed time.
  const std::string* time_note = digests.count(pack::kCheckpointTime) ? &small[pack::kCheckpointTime] : nullptr;
  if (std::string failure = CheckTime(*verifier, *cp, manifest, time_note, &r); !failure.empty()) {
    return Fail(r, pack::kCheckpointTime, -1, failure);
  }
  if (std::string failure = CheckTimeOrder(r.signed_at_us, since_time, options.not_older_than_time_us);
      !failure.empty()) {
    return Fail(r, pack::kCheckpointTime, -1, failure);
  }
  if (since_signs_map && r.signed_at_us && !r.run_map_root) {
    return Fail(r, pack::kCheckpointTime, -1,
                "a version 1 note, but the checkpoint given with --since has a version 2 note: a ledger that "
                "signs the run-head map root signs it with every later checkpoint");
  }

  return std::nullopt;
}

PackCheck::Stop PackCheck::EntriesAndProofs() {
  const manifest::Manifest& manifest = **unchecked_manifest;
  // Entries and proofs.
  if (!stream.entries_checked() || !stream.proofs_checked()) {
    return absl::InternalError("verify: entries or proofs were not checked");
  }
  if (auto first = stream.first_failure()) return Fail(r, first->file, first->seq, first->message);

  // That the pack is the whole run (the run chain, gap-free from the run's
  // first entry, was checked with the proofs).
  const std::string* run_head = digests.count(pack::kRunHead) ? &small[pack::kRunHead] : nullptr;
  if (std::string failure = CheckRunHead(manifest, run_head, stream, &r); !failure.empty()) {
    return Fail(r, pack::kRunHead, -1, failure);
  }
  if (stream.more_proofs_than_entries()) return Fail(r, pack::kProofs, -1, "more proofs than entries");
  std::optional<uint64_t> last_seq = stream.last_seq();
  if (scope->kind() == "seq" && (!last_seq || *last_seq + 1 != scope->to_seq)) {
    return Fail(r, pack::kEntries, -1, "the seq range ends early");
  }
  r.entries = stream.entries();
  if (r.entries != manifest.entries) {
    return Fail(r, pack::kManifest, -1,
                absl::StrCat("counts.entries says ", manifest.entries, ", the pack has ", r.entries));
  }

  return std::nullopt;
}

PackCheck::Stop PackCheck::OutcomesAndReport() {
  const manifest::Manifest& manifest = **unchecked_manifest;
  // Outcomes, compared by digest, so that neither document is held in memory.
  if (!outcomes_digest.valid()) return absl::InternalError("verify: outcomes were not recomputed");
  auto recomputed = outcomes_digest.get();
  if (!recomputed.ok()) return Fail(r, pack::kOutcomes, -1, std::string(recomputed.status().message()));
  if (*recomputed != digests[pack::kOutcomes]) {
    return Fail(r, pack::kOutcomes, -1, "differs from the outcomes recomputed from the entries");
  }
  if (auto s = CheckDeadlines(manifest, r.signed_at_us, outcomes); !s.empty()) {
    return Fail(r, pack::kOutcomes, -1, s);
  }
  if (r.run_complete.has_value()) {
    auto unsettled = pack::UnsettledSteps(outcomes);
    if (!unsettled.ok()) return Fail(r, pack::kOutcomes, -1, std::string(unsettled.status().message()));
    r.unsettled = *std::move(unsettled);
  }

  // The report, rebuilt from what was checked above by the exporter's own
  // function, byte for byte.
  if (!report_digest.valid()) return absl::InternalError("verify: the report was not rebuilt");
  auto rebuilt = report_digest.get();
  if (!rebuilt.ok()) return Fail(r, pack::kReport, -1, std::string(rebuilt.status().message()));
  if (*rebuilt != digests[pack::kReport]) {
    return Fail(r, pack::kReport, -1,
                ReportDifference(pack_path, small[pack::kManifest], outcomes, small[pack::kCheckpoint]));
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<Result> VerifyPack(const std::string& pack_path, const Options& options) {
  if (options.trust_pack_key && !options.vkey.empty()) {
    return absl::InvalidArgumentError("verify: a key given and trust_pack_key set: give one or the other");
  }
  if (!options.trust_pack_key && !(options.vkey.empty() && options.policy)) {
    if (options.vkey.empty()) {
      return absl::InvalidArgumentError("verify: no key given (vkey) and trust_pack_key not set");
    }
    if (auto given = note::Verifier::Parse(options.vkey); !given.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("verify: vkey: ", given.status().message()));
    }
  }
  PackCheck check(pack_path, options);
  for (auto step : {&PackCheck::ReadArchive, &PackCheck::KeyAndManifest, &PackCheck::Checkpoint,
                    &PackCheck::ConsistencyAndTime, &PackCheck::EntriesAndProofs, &PackCheck::OutcomesAndReport}) {
    if (PackCheck::Stop stop = (check.*step)()) return *std::move(stop);
  }
  check.r.ok = true;
  return check.r;
}

}  // namespace ledger::verify
