#include "export/verify/verify.h"

#include <algorithm>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "export/pack/pack.h"
#include "export/verify/digest_thread.h"
#include "export/verify/stream_check.h"
#include "ledger/hash/hash.h"
#include "ledger/merkle/merkle.h"
#include "ledger/note/note.h"

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

std::optional<Scope> ScopeOf(const std::string& manifest_text) {
  nlohmann::json m = nlohmann::json::parse(manifest_text, nullptr, false);
  if (m.is_discarded() || !m.is_object() || !m.contains("scope") || !m["scope"].is_object()) return std::nullopt;
  const nlohmann::json& s = m["scope"];
  Scope scope;
  try {
    scope.kind = s.value("kind", "");
    scope.team = s.value("team", "");
    scope.run_id = s.value("run_id", "");
    scope.from_us = s.value("from_us", int64_t{0});
    scope.to_us = s.value("to_us", int64_t{0});
    scope.from_seq = s.value("from_seq", uint64_t{0});
    scope.to_seq = s.value("to_seq", uint64_t{0});
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  if (scope.kind != "run" && scope.kind != "team" && scope.kind != "seq") return std::nullopt;
  if (scope.kind == "team" && (!s.contains("from_seq") || !s.contains("to_seq"))) return std::nullopt;
  return scope;
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

// A scope as the manifest writes it, for messages.
std::string ScopeJson(const Scope& s) {
  nlohmann::json j = {{"kind", s.kind}};
  if (s.kind == "run") {
    j["team"] = s.team;
    j["run_id"] = s.run_id;
  } else if (s.kind == "team") {
    j["team"] = s.team;
    j["from_us"] = s.from_us;
    j["to_us"] = s.to_us;
  } else {
    j["from_seq"] = s.from_seq;
    j["to_seq"] = s.to_seq;
  }
  return j.dump();
}

bool SameScope(const Scope& pack, const Scope& want) {
  if (pack.kind != want.kind) return false;
  if (want.kind == "run") return pack.team == want.team && pack.run_id == want.run_id;
  if (want.kind == "team") return pack.team == want.team && pack.from_us == want.from_us && pack.to_us == want.to_us;
  return pack.from_seq == want.from_seq && pack.to_seq == want.to_seq;
}

Result Fail(Result r, std::string file, int64_t seq, std::string message) {
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

// What the report is made from (pack::WriteReport): the manifest without
// its "files", as the exporter gives it before the digests exist. A
// manifest whose fields the report reads are not of their types (a pack
// made to throw) is refused, naming them.
absl::StatusOr<nlohmann::json> ReportHeader(const std::string& manifest_text) {
  nlohmann::json m = nlohmann::json::parse(manifest_text, nullptr, false);
  if (m.is_discarded() || !m.is_object() || !m.contains("origin") || !m["origin"].is_string() ||
      !m.contains("tree_size") || !m["tree_size"].is_number_unsigned() || !m.contains("root") ||
      !m["root"].is_string() || !m.contains("scope") || !m["scope"].is_object() || !m.contains("counts") ||
      !m["counts"].is_object() || !m["counts"].contains("entries") || !m["counts"]["entries"].is_number_unsigned()) {
    return absl::InvalidArgumentError(
        "the manifest's origin, tree_size, root, scope and counts.entries, which the report shows, are not "
        "a string, a count, a string, an object and a count");
  }
  m.erase("files");
  return m;
}

// The report rebuilt with the exporter's own function, a piece at a time.
absl::Status RebuildReport(const std::string& manifest_text, pack::Outcomes& outcomes,
                           const std::string& checkpoint_note, absl::FunctionRef<void(std::string_view)> out) {
  auto header = ReportHeader(manifest_text);
  if (!header.ok()) return header.status();
  try {
    return pack::WriteReport(*header, outcomes, checkpoint_note, out);
  } catch (const nlohmann::json::exception&) {
    return absl::InvalidArgumentError("the manifest's fields cannot be shown in a report");
  }
}

// Where the pack's report first differs from the one rebuilt: reads the
// archive again (only when the digests differ) and compares the two as
// they come, holding neither. "at byte N (line L)" of the pack's report.
std::string ReportDifference(const std::string& pack_path, const std::string& manifest_text,
                             pack::Outcomes& outcomes, const std::string& checkpoint_note) {
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
  return absl::StrCat("differs from the report rebuilt from the checked entries, outcomes, checkpoint and "
                      "manifest, first at byte ", *differs, " (line ", line, ")");
}

}  // namespace

absl::StatusOr<Scope> ParseExpectedScope(const std::string& text) {
  Scope s;
  auto bad = [&](const char* rule) { return absl::InvalidArgumentError(absl::StrCat("expected scope: ", rule)); };
  auto split = [](const std::string& rest, char sep) -> std::vector<std::string> {
    return absl::StrSplit(rest, sep);
  };
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
  s.kind = kind;
  return s;
}

nlohmann::json Result::Json() const {
  nlohmann::json j = {{"ok", ok},
                      {"trusted_key_in_pack", trusted_key_in_pack},
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
  if (!ok) {
    j["failure"] = {{"file", file}, {"message", message}};
    if (seq >= 0) j["failure"]["seq"] = seq;
  }
  return j;
}

std::string Result::Summary() const {
  std::string out;
  if (trusted_key_in_pack) {
    out += "WARNING: --trust-pack-key: the key inside the pack was trusted; this result proves nothing "
           "about the ledger's identity. Compare the pack's ledger.vkey with the ledger operator's "
           "published key.\n";
  }
  if (ok) {
    absl::StrAppend(&out, "OK: ", entries, " entries of ", scope, " verified against the checkpoint of ",
                    origin, " at tree size ", tree_size, ", root ", root, ".\n");
    if (since_size.has_value()) {
      absl::StrAppend(&out, "The checkpoint is consistent with the earlier one at size ", *since_size, ", root ",
                      since_root, since_given ? " (the one given with --since)" : "", ".\n");
    }
  } else {
    absl::StrAppend(&out, "FAILED: ", file, seq >= 0 ? absl::StrCat(" seq ", seq) : "", ": ",
                    message, "\n");
  }
  return out;
}

absl::StatusOr<Result> VerifyPack(const std::string& pack_path, const Options& options) {
  if (options.trust_pack_key && !options.vkey.empty()) {
    return absl::InvalidArgumentError("verify: a key given and trust_pack_key set: give one or the other");
  }
  if (!options.trust_pack_key) {
    if (options.vkey.empty()) {
      return absl::InvalidArgumentError("verify: no key given (vkey) and trust_pack_key not set");
    }
    if (auto given = note::Verifier::Parse(options.vkey); !given.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("verify: vkey: ", given.status().message()));
    }
  }
  Result r;
  pack::ScratchDir dir("ledger-verify");
  if (dir.path().empty()) {
    return absl::UnavailableError("verify: cannot create a temporary directory (set TMPDIR to a writable one)");
  }
  auto reader = pack::PackReader::Open(pack_path, pack::Limits());
  if (!reader.ok()) return Fail(r, "archive", -1, std::string(reader.status().message()));

  // One pass over the archive.
  std::map<std::string, std::string> small, digests, spilled;
  std::optional<note::Checkpoint> unchecked_cp;
  std::optional<Scope> scope;
  pack::Outcomes outcomes;
  StreamCheck stream(dir.path(), &outcomes);
  // The outcomes' digest, recomputed while the proofs are checked, then the
  // report's, rebuilt from them.
  std::shared_future<absl::StatusOr<std::string>> outcomes_digest;
  std::future<absl::StatusOr<std::string>> report_digest;
  // Checks entries.jsonl or proofs.jsonl.
  auto check = [&](const std::string& name, NextPiece next) -> absl::Status {
    if (name == pack::kProofs) {
      // The manifest and checkpoint are read by now; their texts are what
      // the checks below hold the report to.
      if (outcomes_digest.valid()) {
        report_digest = std::async(std::launch::async, [&outcomes, outcomes_digest, manifest = small[pack::kManifest],
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
    outcomes_digest = std::async(std::launch::async, [&outcomes]() -> absl::StatusOr<std::string> {
      hash::Sha256Stream recomputed;
      if (auto s = outcomes.Write([&](std::string_view piece) { recomputed.Update(piece); }); !s.ok()) return s;
      return hash::Hex(recomputed.Final());
    });
    return absl::OkStatus();
  };
  auto ready = [&](const std::string& name) {
    if (name == pack::kEntries) return unchecked_cp.has_value();
    return stream.entries_checked() && scope.has_value();
  };
  DigestThread file_digest;
  while (true) {
    auto name = (*reader)->Next();
    if (!name.ok()) return Fail(r, "archive", -1, std::string(name.status().message()));
    if (!name->has_value()) break;
    const std::string file = **name;
    auto next = [&]() -> absl::StatusOr<std::string_view> {
      auto piece = (*reader)->Read();
      if (piece.ok()) file_digest.Update(*piece);
      return piece;
    };
    absl::Status read;
    if (file == pack::kEntries || file == pack::kProofs) {
      if (ready(file)) {
        read = check(file, next);
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
      if (file == pack::kManifest) scope = ScopeOf(content);
    }
    if (!read.ok()) return Fail(r, "archive", -1, std::string(read.message()));
    digests[file] = hash::Hex(file_digest.Final());
  }
  // Files that came before what they need.
  for (const char* name : {pack::kEntries, pack::kProofs}) {
    if (!spilled.count(name) || !ready(name)) continue;
    std::ifstream in(spilled[name], std::ios::binary);
    std::string buf(1 << 18, '\0');
    auto next = [&]() -> absl::StatusOr<std::string_view> {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      return std::string_view(buf.data(), static_cast<size_t>(in.gcount()));
    };
    if (auto s = check(name, next); !s.ok()) return s;
  }

  for (const char* name : {pack::kCheckpoint, pack::kEntries, pack::kVkey, pack::kManifest,
                           pack::kManifestSig, pack::kOutcomes, pack::kProofs, pack::kReport}) {
    if (!digests.count(name)) return Fail(r, name, -1, "missing");
  }

  // The key.
  std::string pack_vkey = small[pack::kVkey];
  while (!pack_vkey.empty() && pack_vkey.back() == '\n') pack_vkey.pop_back();
  std::string vkey = options.vkey;
  if (options.trust_pack_key) {
    vkey = pack_vkey;
    r.trusted_key_in_pack = true;
  } else if (vkey != pack_vkey) {
    return Fail(r, pack::kVkey, -1,
                absl::StrCat("expected the given key ", vkey, ", found ", pack_vkey));
  }
  auto verifier = note::Verifier::Parse(vkey);
  if (!verifier.ok()) return Fail(r, pack::kVkey, -1, std::string(verifier.status().message()));

  // The manifest and every file's digest.
  const std::string& manifest_text = small[pack::kManifest];
  auto signed_digest = verifier->Open(small[pack::kManifestSig]);
  if (!signed_digest.ok()) {
    return Fail(r, pack::kManifestSig, -1, std::string(signed_digest.status().message()));
  }
  std::string digest = hash::Hex(hash::Sha256(manifest_text)) + "\n";
  if (*signed_digest != digest) {
    return Fail(r, pack::kManifest, -1,
                absl::StrCat("SHA-256 is ", digest.substr(0, 64), ", the signature covers ",
                             signed_digest->substr(0, 64)));
  }
  nlohmann::json manifest = nlohmann::json::parse(manifest_text, nullptr, false);
  if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("files") ||
      !manifest["files"].is_object() || manifest.value("format", 0) != pack::kFormatVersion) {
    return Fail(r, pack::kManifest, -1, "not a format 1 manifest");
  }
  r.origin = manifest.value("origin", "");
  r.tree_size = manifest.value("tree_size", uint64_t{0});
  r.scope = manifest["scope"].dump();
  // An entry the digests below cannot check is refused, not skipped.
  for (const char* self : {pack::kManifest, pack::kManifestSig}) {
    if (manifest["files"].contains(self)) {
      return Fail(r, pack::kManifest, -1, absl::StrCat("lists ", self, ", whose digest it cannot hold"));
    }
  }
  for (const auto& [name, sha] : digests) {
    if (name == pack::kManifest || name == pack::kManifestSig) continue;
    if (!manifest["files"].contains(name)) return Fail(r, name, -1, "not listed in the manifest");
    const nlohmann::json& listed = manifest["files"][name];
    std::string want = listed.is_string() ? listed.get<std::string>() : "";
    if (sha != want) return Fail(r, name, -1, absl::StrCat("SHA-256 expected ", want, ", found ", sha));
  }
  for (const auto& [name, sha] : manifest["files"].items()) {
    if (!digests.count(name)) return Fail(r, name, -1, "listed in the manifest but missing");
  }

  // The checkpoint.
  auto cp_text = verifier->Open(small[pack::kCheckpoint]);
  if (!cp_text.ok()) return Fail(r, pack::kCheckpoint, -1, std::string(cp_text.status().message()));
  auto cp = note::ParseCheckpoint(*cp_text);
  if (!cp.ok()) return Fail(r, pack::kCheckpoint, -1, std::string(cp.status().message()));
  if (cp->origin != r.origin || cp->origin != verifier->name()) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("origin '", cp->origin, "', manifest and key say '", r.origin, "'"));
  }
  if (cp->size != r.tree_size || hash::Hex(cp->root) != manifest.value("root", "")) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("size ", cp->size, " root ", hash::Hex(cp->root), ", the manifest says size ",
                             r.tree_size, " root ", manifest.value("root", "")));
  }
  // What the entries were checked against, before the signature was, is
  // what the signature covers.
  if (!unchecked_cp || unchecked_cp->size != cp->size || unchecked_cp->root != cp->root) {
    return Fail(r, pack::kCheckpoint, -1, "its text is not the one its signature covers");
  }
  r.root = hash::Hex(cp->root);

  // What the auditor asked for.
  if (options.expect_scope && (!scope || !SameScope(*scope, *options.expect_scope))) {
    return Fail(r, pack::kManifest, -1,
                absl::StrCat("scope is ", r.scope, ", expected ", ScopeJson(*options.expect_scope),
                             " (--expect-scope)"));
  }
  if (cp->size < options.not_older_than) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("tree size ", cp->size, " is older than the ", options.not_older_than,
                             " asked for (--not-older-than)"));
  }
  if (options.not_older_than_root && cp->size == options.not_older_than && cp->root != *options.not_older_than_root) {
    return Fail(r, pack::kCheckpoint, -1,
                absl::StrCat("root ", hash::Hex(cp->root), " at tree size ", cp->size, ", the checkpoint given with "
                             "--not-older-than has root ", hash::Hex(*options.not_older_than_root)));
  }

  // The consistency proof from an earlier checkpoint, when there is one;
  // from the auditor's, when given.
  std::optional<note::Checkpoint> since;
  if (!options.since.empty()) {
    auto since_text = verifier->Open(options.since);
    if (!since_text.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", since_text.status().message()));
    auto parsed = note::ParseCheckpoint(*since_text);
    if (!parsed.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", parsed.status().message()));
    since = *parsed;
  }
  const std::string* consistency = digests.count(pack::kConsistency) ? &small[pack::kConsistency] : nullptr;
  if (std::string failure = CheckConsistency(*verifier, *cp, consistency, since, &r); !failure.empty()) {
    return Fail(r, pack::kConsistency, -1, failure);
  }

  // Entries and proofs.
  if (!scope) {
    std::string kind;
    if (manifest["scope"].is_object() && manifest["scope"].contains("kind") && manifest["scope"]["kind"].is_string()) {
      kind = manifest["scope"]["kind"].get<std::string>();
    }
    if (kind == "team") {
      return Fail(r, pack::kManifest, -1, "scope: a team window names its seqs (from_seq, to_seq)");
    }
    return Fail(r, pack::kManifest, -1, absl::StrCat("scope: unknown or malformed scope of kind '", kind, "'"));
  }
  if (!stream.entries_checked() || !stream.proofs_checked()) {
    return absl::InternalError("verify: entries or proofs were not checked");
  }
  if (auto first = stream.first_failure()) return Fail(r, first->file, first->seq, first->message);
  if (stream.more_proofs_than_entries()) return Fail(r, pack::kProofs, -1, "more proofs than entries");
  std::optional<uint64_t> last_seq = stream.last_seq();
  if (scope->kind == "seq" && (!last_seq || *last_seq + 1 != scope->to_seq)) {
    return Fail(r, pack::kEntries, -1, "the seq range ends early");
  }
  r.entries = stream.entries();
  if (!manifest.contains("counts") || !manifest["counts"].is_object() ||
      r.entries != manifest["counts"].value("entries", uint64_t{0})) {
    return Fail(r, pack::kManifest, -1,
                absl::StrCat("counts.entries says ",
                             manifest.contains("counts") && manifest["counts"].is_object()
                                 ? manifest["counts"].value("entries", uint64_t{0})
                                 : uint64_t{0},
                             ", the pack has ", r.entries));
  }

  // Outcomes, compared by digest, so that neither document is held in memory.
  if (!outcomes_digest.valid()) return absl::InternalError("verify: outcomes were not recomputed");
  auto recomputed = outcomes_digest.get();
  if (!recomputed.ok()) return Fail(r, pack::kOutcomes, -1, std::string(recomputed.status().message()));
  if (*recomputed != digests[pack::kOutcomes]) {
    return Fail(r, pack::kOutcomes, -1, "differs from the outcomes recomputed from the entries");
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
  r.ok = true;
  return r;
}

}  // namespace ledger::verify
