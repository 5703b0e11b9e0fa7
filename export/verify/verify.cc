#include "export/verify/verify.h"

#include <atomic>
#include <filesystem>
#include <future>
#include <tuple>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "export/pack/pack.h"
#include "ledger/hash/hash.h"
#include "ledger/merkle/merkle.h"
#include "ledger/note/note.h"
#include "ledger/receipt/entry.h"

namespace ledger::verify {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Reads a proof line: the exporter's exact form
// {"seq":N,"leaf_hash":"<hex>","inclusion":["<hex>",...]} fast, anything
// else through the general JSON parser. False if it is not a proof line.
bool ParseProofLine(std::string_view line, int64_t* seq, std::string* leaf_hash,
                    std::vector<hash::Hash>* path) {
  path->clear();
  constexpr std::string_view kSeq = "{\"seq\":", kLeaf = ",\"leaf_hash\":\"", kInc = "\",\"inclusion\":[";
  std::string_view s = line;
  bool fast = s.substr(0, kSeq.size()) == kSeq;
  if (fast) {
    s.remove_prefix(kSeq.size());
    size_t digits = 0;
    int64_t v = 0;
    while (digits < s.size() && digits < 16 && s[digits] >= '0' && s[digits] <= '9') {
      v = v * 10 + (s[digits] - '0');
      ++digits;
    }
    fast = digits > 0 && (s[0] != '0' || digits == 1) && s.substr(digits, kLeaf.size()) == kLeaf &&
           s.size() >= digits + kLeaf.size() + 64 + kInc.size() &&
           s.substr(digits + kLeaf.size() + 64, kInc.size()) == kInc;
    if (fast) {
      *seq = v;
      leaf_hash->assign(s.substr(digits + kLeaf.size(), 64));
      s.remove_prefix(digits + kLeaf.size() + 64 + kInc.size());
      while (fast && !s.empty() && s[0] == '"' && s.size() >= 66 && s[65] == '"') {
        auto h = hash::ParseHex(s.substr(1, 64));
        if (!h.ok()) {
          fast = false;
          break;
        }
        path->push_back(*h);
        s.remove_prefix(66);
        if (!s.empty() && s[0] == ',' && s.size() > 1 && s[1] == '"') s.remove_prefix(1);
      }
      fast = fast && s == "]}";
    }
  }
  if (fast) return true;
  path->clear();
  nlohmann::json proof = nlohmann::json::parse(line, nullptr, false);
  if (proof.is_discarded() || !proof.is_object() || !proof.contains("seq") ||
      !proof["seq"].is_number_unsigned() || !proof.contains("leaf_hash") ||
      !proof["leaf_hash"].is_string() || !proof.contains("inclusion") ||
      !proof["inclusion"].is_array() || proof.size() != 3) {
    return false;
  }
  *seq = proof["seq"].get<int64_t>();
  *leaf_hash = proof["leaf_hash"].get<std::string>();
  for (const auto& h : proof["inclusion"]) {
    if (!h.is_string()) return false;
    auto parsed = hash::ParseHex(h.get<std::string>());
    if (!parsed.ok()) return false;
    path->push_back(*parsed);
  }
  return true;
}

Result Fail(Result r, std::string file, int64_t seq, std::string message) {
  r.ok = false;
  r.file = std::move(file);
  r.seq = seq;
  r.message = std::move(message);
  return r;
}

}  // namespace

nlohmann::json Result::Json() const {
  nlohmann::json j = {{"ok", ok},
                      {"trusted_key_in_pack", trusted_key_in_pack},
                      {"origin", origin},
                      {"tree_size", tree_size},
                      {"entries", entries}};
  if (since_size.has_value()) j["consistent_with_size"] = *since_size;
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
    out += "WARNING: no --vkey given; the key inside the pack was trusted. Compare it with the "
           "ledger operator's published key.\n";
  }
  if (ok) {
    absl::StrAppend(&out, "OK: ", entries, " entries of ", scope, " verified against the checkpoint of ",
                    origin, " at tree size ", tree_size, ".\n");
    if (since_size.has_value()) {
      absl::StrAppend(&out, "The checkpoint is consistent with the earlier one at size ", *since_size,
                      ".\n");
    }
  } else {
    absl::StrAppend(&out, "FAILED: ", file, seq >= 0 ? absl::StrCat(" seq ", seq) : "", ": ",
                    message, "\n");
  }
  return out;
}

absl::StatusOr<Result> VerifyPack(const std::string& pack_path, const Options& options) {
  Result r;
  pack::ScratchDir dir("ledger-verify");
  if (dir.path().empty()) return absl::UnavailableError("verify: cannot create a temporary directory");
  std::map<std::string, std::string> digests;
  auto files = pack::ExtractArchive(pack_path, dir.path(), pack::Limits(), &digests);
  if (!files.ok()) return Fail(r, "archive", -1, std::string(files.status().message()));
  for (const char* name : {pack::kCheckpoint, pack::kEntries, pack::kVkey, pack::kManifest,
                           pack::kManifestSig, pack::kOutcomes, pack::kProofs, pack::kReport}) {
    if (!files->count(name)) return Fail(r, name, -1, "missing");
  }
  auto file = [&](const char* name) { return files->at(name); };

  // The key.
  std::string pack_vkey = ReadAll(file(pack::kVkey));
  while (!pack_vkey.empty() && pack_vkey.back() == '\n') pack_vkey.pop_back();
  std::string vkey = options.vkey;
  if (vkey.empty()) {
    vkey = pack_vkey;
    r.trusted_key_in_pack = true;
  } else if (vkey != pack_vkey) {
    return Fail(r, pack::kVkey, -1,
                absl::StrCat("expected the given key ", vkey, ", found ", pack_vkey));
  }
  auto verifier = note::Verifier::Parse(vkey);
  if (!verifier.ok()) return Fail(r, pack::kVkey, -1, std::string(verifier.status().message()));

  // The manifest and every file's digest.
  std::string manifest_text = ReadAll(file(pack::kManifest));
  auto signed_digest = verifier->Open(ReadAll(file(pack::kManifestSig)));
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
      manifest.value("format", 0) != pack::kFormatVersion) {
    return Fail(r, pack::kManifest, -1, "not a format 1 manifest");
  }
  r.origin = manifest.value("origin", "");
  r.tree_size = manifest.value("tree_size", uint64_t{0});
  r.scope = manifest["scope"].dump();
  for (const auto& [name, path] : *files) {
    if (name == pack::kManifest || name == pack::kManifestSig) continue;
    if (!manifest["files"].contains(name)) return Fail(r, name, -1, "not listed in the manifest");
    const nlohmann::json& listed = manifest["files"][name];
    std::string want = listed.is_string() ? listed.get<std::string>() : "";
    if (digests[name] != want) {
      return Fail(r, name, -1, absl::StrCat("SHA-256 expected ", want, ", found ", digests[name]));
    }
  }
  for (const auto& [name, sha] : manifest["files"].items()) {
    if (!files->count(name)) return Fail(r, name, -1, "listed in the manifest but missing");
  }

  // The checkpoint.
  std::string note_text = ReadAll(file(pack::kCheckpoint));
  auto cp_text = verifier->Open(note_text);
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

  // The consistency proof from an earlier checkpoint, when there is one.
  if (files->count(pack::kConsistency)) {
    nlohmann::json c = nlohmann::json::parse(ReadAll(file(pack::kConsistency)), nullptr, false);
    if (c.is_discarded() || !c.is_object() || !c.contains("old_checkpoint") ||
        !c["old_checkpoint"].is_string() || !c.contains("proof") || !c["proof"].is_array()) {
      return Fail(r, pack::kConsistency, -1, "not {\"old_checkpoint\":...,\"proof\":[...]}");
    }
    auto old_text = verifier->Open(c["old_checkpoint"].get<std::string>());
    if (!old_text.ok()) {
      return Fail(r, pack::kConsistency, -1,
                  absl::StrCat("old_checkpoint: ", old_text.status().message()));
    }
    auto old = note::ParseCheckpoint(*old_text);
    if (!old.ok() || old->origin != cp->origin) {
      return Fail(r, pack::kConsistency, -1, "old_checkpoint: not a checkpoint of this log");
    }
    std::vector<hash::Hash> proof;
    for (const auto& h : c["proof"]) {
      auto parsed = h.is_string() ? hash::ParseHex(h.get<std::string>())
                                  : absl::StatusOr<hash::Hash>(absl::InvalidArgumentError("hash"));
      if (!parsed.ok()) return Fail(r, pack::kConsistency, -1, "proof: not a list of hex hashes");
      proof.push_back(*parsed);
    }
    if (auto s = merkle::VerifyConsistency(old->size, cp->size, old->root, cp->root, proof); !s.ok()) {
      return Fail(r, pack::kConsistency, -1, std::string(s.message()));
    }
    r.since_size = old->size;
  }

  // Entries and proofs, line by line, on two threads: this one reads both
  // files and checks each proof; the other decodes each entry, checks its
  // links and scope and projects it into outcomes. Each stops at its first
  // failure; the one reported is the first in line order, and within a line
  // in the order a single pass would meet them (the stage).
  const nlohmann::json& scope = manifest["scope"];
  std::string kind = scope.value("kind", "");
  if (kind != "run" && kind != "team" && kind != "seq") {
    return Fail(r, pack::kManifest, -1, absl::StrCat("unknown scope kind '", kind, "'"));
  }
  struct Failure {
    uint64_t line;
    int stage;  // 0 decoding, 1 missing proof, 2 order, 3 tree size, 4 proof, 5 links and scope
    std::string file;
    int64_t seq;
    std::string message;
    bool operator<(const Failure& o) const { return std::tie(line, stage) < std::tie(o.line, o.stage); }
  };
  struct Batch {
    uint64_t first_line = 0;
    std::string leaves;  // concatenated
    std::vector<size_t> ends;
    std::vector<hash::Hash> hashes;
  };
  std::optional<Failure> entry_failure, proof_failure;
  std::atomic<bool> entry_failed{false};
  std::optional<uint64_t> last_seq;
  hash::Hash last_hash{};
  pack::Outcomes outcomes;
  const std::string scope_team = scope.value("team", ""), scope_run = scope.value("run_id", "");
  const int64_t from_us = scope.value("from_us", int64_t{0}), to_us = scope.value("to_us", int64_t{0});
  const uint64_t from_seq = scope.value("from_seq", uint64_t{0});
  auto check_entries = [&](Batch batch) {
    size_t begin = 0;
    for (size_t k = 0; k < batch.ends.size() && !entry_failure; ++k) {
      std::string_view leaf(batch.leaves.data() + begin, batch.ends[k] - begin);
      begin = batch.ends[k];
      uint64_t line = batch.first_line + k;
      auto fail = [&](int stage, int64_t seq, std::string message) {
        entry_failure = Failure{line, stage, pack::kEntries, seq, std::move(message)};
        entry_failed = true;
      };
      auto entry = receipt::ParseLeaf(leaf);
      if (!entry.ok()) {
        fail(0, last_seq ? static_cast<int64_t>(*last_seq + 1) : -1, std::string(entry.status().message()));
        break;
      }
      int64_t seq = static_cast<int64_t>(entry->seq);
      if (last_seq.has_value() && entry->seq <= *last_seq) {
        fail(2, seq, absl::StrCat("seq after ", *last_seq, " is not ascending"));
      } else if (entry->seq >= cp->size) {
        fail(3, seq, absl::StrCat("not in the checkpoint's tree of size ", cp->size));
      } else if (last_seq.has_value() && entry->seq == *last_seq + 1 && entry->prev != last_hash) {
        fail(5, seq, absl::StrCat("prev expected ", hash::Hex(last_hash), ", found ", hash::Hex(entry->prev)));
      } else if (kind == "run" && (entry->receipt.team() != scope_team || entry->receipt.run_id() != scope_run)) {
        fail(5, seq, "not an entry of the pack's run");
      } else if (kind == "run" && entry->run_prev != last_seq) {
        fail(5, seq,
             absl::StrCat("run_prev expected ", last_seq ? std::to_string(*last_seq) : "none (the run's first entry)",
                          ", found ", entry->run_prev ? std::to_string(*entry->run_prev) : "none"));
      } else if (kind == "team" && (entry->receipt.team() != scope_team || entry->logged_at_us < from_us ||
                                    entry->logged_at_us >= to_us)) {
        fail(5, seq, "not an entry of the pack's team and time window");
      } else if (kind == "seq" && entry->seq != (last_seq ? *last_seq + 1 : from_seq)) {
        fail(5, seq, absl::StrCat("seq expected ", last_seq ? *last_seq + 1 : from_seq, " (the range has a gap)"));
      }
      if (entry_failure) break;
      last_seq = entry->seq;
      last_hash = batch.hashes[k];
      if (auto st = outcomes.Add(*std::move(entry)); !st.ok()) {
        fail(5, seq, std::string(st.message()));
        break;
      }
      ++r.entries;
    }
  };

  std::ifstream entries(file(pack::kEntries), std::ios::binary);
  std::ifstream proofs(file(pack::kProofs), std::ios::binary);
  std::string leaf, proof_line, proof_leaf_hash;
  std::vector<hash::Hash> path;
  merkle::InclusionVerifier inclusion(cp->size, cp->root);
  Batch batch;
  std::future<void> checking;
  auto hand_over = [&] {
    if (checking.valid()) checking.get();
    if (!batch.ends.empty()) checking = std::async(std::launch::async, check_entries, std::move(batch));
    batch = Batch();
  };
  uint64_t line = 0;
  for (; !proof_failure && !entry_failed && std::getline(entries, leaf); ++line) {
    if (batch.ends.empty()) batch.first_line = line;
    hash::Hash leaf_hash = hash::LeafHash(leaf);
    batch.leaves += leaf;
    batch.ends.push_back(batch.leaves.size());
    batch.hashes.push_back(leaf_hash);
    // The seq at the end of a canonical leaf; a leaf without one fails to
    // decode on the other thread, which comes first within the line.
    auto tail = receipt::SeqOf(leaf);
    int64_t seq = tail.ok() ? static_cast<int64_t>(*tail) : -1;
    auto fail = [&](int stage, std::string message) {
      proof_failure = Failure{line, stage, pack::kProofs, seq, std::move(message)};
    };
    int64_t proof_seq = -1;
    if (!std::getline(proofs, proof_line)) {
      fail(1, "fewer proofs than entries");
    } else if (!tail.ok()) {
      fail(4, "not the proof line of this entry");
    } else if (!ParseProofLine(proof_line, &proof_seq, &proof_leaf_hash, &path) || proof_seq != seq) {
      fail(4, "not the proof line of this entry");
    } else if (proof_leaf_hash != hash::Hex(leaf_hash)) {
      fail(4, absl::StrCat("leaf_hash expected ", hash::Hex(leaf_hash), ", found ", proof_leaf_hash));
    } else if (*tail < cp->size) {
      if (auto st = inclusion.Verify(*tail, leaf_hash, path); !st.ok()) fail(4, std::string(st.message()));
    }
    if (batch.ends.size() >= 2048) hand_over();
  }
  // The checking thread MUST be joined before anything it uses goes.
  hand_over();
  if (checking.valid()) checking.get();
  std::optional<Failure> first = entry_failure;
  if (proof_failure && (!first || *proof_failure < *first)) first = proof_failure;
  if (first) return Fail(r, first->file, first->seq, first->message);
  if (std::getline(proofs, proof_line)) return Fail(r, pack::kProofs, -1, "more proofs than entries");
  if (kind == "seq" && (!last_seq || *last_seq + 1 != scope.value("to_seq", uint64_t{0}))) {
    return Fail(r, pack::kEntries, -1, "the seq range ends early");
  }
  if (r.entries != manifest["counts"].value("entries", uint64_t{0})) {
    return Fail(r, pack::kManifest, -1,
                absl::StrCat("counts.entries says ", manifest["counts"].value("entries", 0), ", the pack has ",
                             r.entries));
  }

  // Outcomes.
  // Compared by digest, so that neither document is held in memory.
  hash::Sha256Stream recomputed;
  if (auto s = outcomes.Write([&](std::string_view piece) { recomputed.Update(piece); }); !s.ok()) {
    return Fail(r, pack::kOutcomes, -1, std::string(s.message()));
  }
  if (hash::Hex(recomputed.Final()) != digests[pack::kOutcomes]) {
    return Fail(r, pack::kOutcomes, -1, "differs from the outcomes recomputed from the entries");
  }
  r.ok = true;
  return r;
}

}  // namespace ledger::verify
