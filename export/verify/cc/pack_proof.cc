#include "export/verify/cc/pack_proof.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "export/pack/pack.h"
#include "export/verify/cc/proof_line.h"
#include "ledger/format/merkle/multiproof.h"
#include "ledger/format/note/note.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/redaction.h"

namespace ledger::verify {
namespace {

// Calls fn(line) for each line of a file read a piece at a time.
absl::Status ForEachLine(pack::PackReader& reader, absl::FunctionRef<absl::Status(std::string_view)> fn) {
  std::string rest;
  while (true) {
    auto piece = reader.Read();
    if (!piece.ok()) return piece.status();
    if (piece->empty()) break;
    rest.append(*piece);
    size_t at = 0;
    for (size_t nl; (nl = rest.find('\n', at)) != std::string::npos; at = nl + 1) {
      if (auto s = fn(std::string_view(rest).substr(at, nl - at)); !s.ok()) return s;
    }
    rest.erase(0, at);
  }
  return rest.empty() ? absl::OkStatus() : fn(rest);
}

absl::Status Unreadable(const std::string& why) {
  return absl::DataLossError(absl::StrCat("pack-proof: ", why, " (verify the pack first)"));
}

}  // namespace

absl::StatusOr<EntryProof> ProveFromPack(const std::string& pack_path, uint64_t seq) {
  auto opened = pack::PackReader::Open(pack_path, pack::Limits());
  if (!opened.ok()) return opened.status();
  pack::PackReader& reader = **opened;
  EntryProof out;
  out.seq = seq;
  // The seqs and leaf hashes the multiproof walks: the entries', and those
  // of redactions.jsonl (format 8) and retention.jsonl (format 9), which
  // come after multiproof.txt in the archive.
  std::vector<std::pair<uint64_t, hash::Hash>> entries;
  std::vector<hash::Hash> nodes;
  std::optional<hash::Hash> root;
  bool held = false, proved = false, multiproof = false;
  auto leaves = [&](bool in_scope) {
    return [&, in_scope](std::string_view leaf) -> absl::Status {
      auto at = receipt::SeqOf(leaf);
      if (!at.ok()) return Unreadable(std::string(at.status().message()));
      hash::Hash h = hash::LeafHash(leaf);
      if (receipt::LooksRedacted(leaf)) {
        // An erased entry (CONTRACT section 8): the leaf hash its line states.
        auto redacted = receipt::ParseRedacted(leaf);
        if (!redacted.ok()) return Unreadable(std::string(redacted.status().message()));
        h = redacted->leaf_hash;
      }
      entries.emplace_back(*at, h);
      if (in_scope && *at == seq) {
        held = true;
        out.leaf_hash = h;
      }
      return absl::OkStatus();
    };
  };
  while (true) {
    auto name = reader.Next();
    if (!name.ok()) return name.status();
    if (!name->has_value()) break;
    const std::string& file = **name;
    if (file == pack::kCheckpoint) {
      while (true) {
        auto piece = reader.Read();
        if (!piece.ok()) return piece.status();
        if (piece->empty()) break;
        out.checkpoint.append(*piece);
      }
      auto cp = note::ParseCheckpoint(out.checkpoint.substr(0, out.checkpoint.find("\n\n") + 1));
      if (!cp.ok()) return Unreadable(std::string(cp.status().message()));
      out.tree_size = cp->size;
      root = cp->root;
    } else if (file == pack::kEntries || file == pack::kRedactions || file == pack::kRetention) {
      if (absl::Status read = ForEachLine(reader, leaves(file == pack::kEntries)); !read.ok()) return read;
    } else if (file == pack::kProofs) {
      absl::Status read = ForEachLine(reader, [&](std::string_view line) -> absl::Status {
        std::optional<ProofLine> p = ParseProofLine(line);
        if (!p) return Unreadable("proofs.jsonl: not a proof line");
        if (p->seq == static_cast<int64_t>(seq)) {
          out.path = p->path;
          proved = true;
        }
        return absl::OkStatus();
      });
      if (!read.ok()) return read;
    } else if (file == pack::kMultiproof) {
      multiproof = true;
      absl::Status read = ForEachLine(reader, [&](std::string_view line) -> absl::Status {
        auto h = hash::ParseHex(line);
        if (!h.ok()) return Unreadable("multiproof.txt: not a hash");
        nodes.push_back(*h);
        return absl::OkStatus();
      });
      if (!read.ok()) return read;
    } else {
      while (true) {  // not needed
        auto piece = reader.Read();
        if (!piece.ok()) return piece.status();
        if (piece->empty()) break;
      }
    }
  }
  if (!held) return absl::NotFoundError(absl::StrCat("pack-proof: seq ", seq, " is not in the pack"));
  if (multiproof) {
    // Walked once every file is read, each seq once and in order.
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    entries.erase(
        std::unique(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
        entries.end());
    merkle::MultiproofWalk walk(out.tree_size, seq);
    size_t used = 0;
    auto next = [&](uint64_t, uint64_t) -> absl::StatusOr<hash::Hash> {
      if (used == nodes.size()) return Unreadable("multiproof.txt: ends early");
      return nodes[used++];
    };
    for (const auto& [s, h] : entries) {
      if (auto added = walk.Add(s, h, next); !added.ok()) return added;
    }
    auto walked = walk.Finish(next);
    if (!walked.ok()) return walked.status();
    if (!root.has_value() || *walked != *root || used != nodes.size()) {
      return Unreadable("multiproof.txt: does not lead to the checkpoint's root");
    }
    out.path = walk.watched_path();
    proved = true;
  }
  if (!proved) return Unreadable(absl::StrCat("no proof of seq ", seq));
  return out;
}

std::string TlogProofText(const EntryProof& proof) {
  std::string out = absl::StrCat("c2sp.org/tlog-proof@v1\nindex ", proof.seq, "\n");
  for (const hash::Hash& h : proof.path) {
    absl::StrAppend(&out, hash::Base64(std::string_view(reinterpret_cast<const char*>(h.data()), h.size())), "\n");
  }
  return out + "\n" + proof.checkpoint;
}

}  // namespace ledger::verify
