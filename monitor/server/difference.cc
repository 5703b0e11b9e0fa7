// The evidence of a map root the replay does not share: which key the
// ledger misstates, its heads, and the first entry where they differ
// (CONTRACT section 5c, "When the roots differ").
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/receipt/redaction.h"
#include "ledger/format/retention/pruned.h"
#include "ledger/format/runmap/proof_json.h"
#include "monitor/server/locate.h"
#include "monitor/server/monitor.h"
#include "nlohmann/json.hpp"

namespace ledger::monitor {
namespace {

constexpr uint64_t kWidth = 256;      // entries in a full bundle
constexpr uint64_t kWalkBack = 4096;  // entries a walk back reads at most
constexpr int kAttempts = 3;          // descents begun again when the ledger moves on

nlohmann::json HeadJson(const std::optional<runmap::Head>& h) {
  if (!h.has_value()) return nullptr;
  return {{"count", h->count}, {"last_seq", h->last_seq}, {"last_leaf_hash", hash::Hex(h->last_leaf_hash)}};
}

// The ledger's answer for one key.
struct MapAnswer {
  uint64_t tree_size = 0;
  std::string time_note;
  runmap::KeyedPath proof;
};

absl::StatusOr<MapAnswer> ParseMapAnswer(const std::string& path, const std::string& body) {
  const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("tree_size") || !j["tree_size"].is_number_unsigned() ||
      !j.contains("time_note") || !j["time_note"].is_string() || !j.contains("proof")) {
    return absl::DataLossError(absl::StrCat("GET ", path, ": not {\"tree_size\",\"time_note\",\"proof\"}"));
  }
  auto proof = runmap::ParseProof(j["proof"].dump());
  if (!proof.ok()) return absl::DataLossError(absl::StrCat("GET ", path, ": proof: ", proof.status().message()));
  return MapAnswer{j["tree_size"].get<uint64_t>(), j["time_note"].get<std::string>(), *std::move(proof)};
}

}  // namespace

// Entries read one at a time from the log's bundles of a tree of `size`,
// the last bundle kept.
class Monitor::EntryReader {
 public:
  EntryReader(const Monitor& monitor, uint64_t size) : monitor_(monitor), size_(size) {}

  absl::StatusOr<std::string> Leaf(uint64_t seq) {
    if (seq >= size_) return absl::OutOfRangeError(absl::StrCat("entry ", seq, ": beyond tree size ", size_));
    const uint64_t index = seq / kWidth;
    if (index != index_ || leaves_.empty()) {
      const uint64_t width = std::min(kWidth, size_ - index * kWidth);
      const std::string path = absl::StrCat("/tlog/", EntryBundlePath(index, width));
      auto body = monitor_.Get(path);
      if (!body.ok()) return body.status();
      auto leaves = ParseEntryBundle(*body, width);
      if (!leaves.ok()) return absl::UnavailableError(absl::StrCat("GET ", path, ": ", leaves.status().message()));
      leaves_.assign(leaves->begin(), leaves->end());
      index_ = index;
    }
    return leaves_[seq % kWidth];
  }

  absl::StatusOr<receipt::Entry> Entry(uint64_t seq) {
    auto leaf = Leaf(seq);
    if (!leaf.ok()) return leaf.status();
    if (retention::LooksPruned(*leaf)) return absl::NotFoundError(absl::StrCat("entry ", seq, " was pruned"));
    return receipt::ParseStored(*leaf);
  }

 private:
  const Monitor& monitor_;
  const uint64_t size_;
  uint64_t index_ = 0;
  std::vector<std::string> leaves_;
};

nlohmann::json Monitor::Difference(const std::string& signed_note, const note::CheckpointTime& refused, bool teams) {
  const std::string map = teams ? "teams" : "runs";
  auto not_located = [](std::string_view why) { return nlohmann::json{{"not_located", std::string(why)}}; };
  auto ask = [&](const runmap::Key& key) -> absl::StatusOr<MapAnswer> {
    const std::string path = absl::StrCat("/map/", map, "/", hash::Hex(key));
    auto body = Get(path);
    if (!body.ok()) return body.status();
    return ParseMapAnswer(path, *body);
  };
  for (int attempt = 1;; ++attempt) {
    // The ledger answers at its latest checkpoint: which one?
    auto first = ask(runmap::Key{});
    if (!first.ok()) return not_located(absl::StrCat("the ledger's map: ", first.status().message()));
    const uint64_t size = first->tree_size;
    if (size < refused.checkpoint.size) {
      return not_located(absl::StrCat("the ledger answers at tree size ", size, ", below the refused note's ",
                                      refused.checkpoint.size));
    }
    // At a later note: the replay carried on to it, in a copy.
    std::optional<replay::Replay> later;
    note::CheckpointTime at = refused;
    std::string at_note = signed_note;
    if (size > refused.checkpoint.size) {
      auto copy = replay::Replay::Decode(replay_.Encode());
      if (!copy.ok()) return not_located(std::string(copy.status().message()));
      EntryReader reader(*this, size);
      for (uint64_t seq = refused.checkpoint.size; seq < size; ++seq) {
        auto leaf = reader.Leaf(seq);
        if (!leaf.ok())
          return not_located(absl::StrCat("the entries after the refused note: ", leaf.status().message()));
        if (std::optional<replay::Finding> finding = copy->Append(*leaf); finding.has_value()) {
          return not_located(absl::StrCat("the entries after the refused note: ", finding->Text()));
        }
      }
      auto text = keys_.Open(first->time_note, size);
      auto t = text.ok() ? note::ParseCheckpointTime(*text) : absl::StatusOr<note::CheckpointTime>(text.status());
      if (!t.ok())
        return not_located(absl::StrCat("the ledger's time note of tree size ", size, ": ", t.status().message()));
      if (t->checkpoint.size != size || t->checkpoint.root != copy->root()) {
        return not_located(absl::StrCat("the ledger's time note of tree size ", size, " is not of the entries' tree"));
      }
      at = *t;
      at_note = first->time_note;
      later = *std::move(copy);
    }
    replay::Replay& replay = later.has_value() ? *later : replay_;
    const std::optional<hash::Hash>& signed_root = teams ? at.team_map_root : at.run_map_root;
    if (!signed_root.has_value())
      return not_located(absl::StrCat("the note of tree size ", size, " signs no ", map, " root"));
    runmap::RunMap& ours = teams ? replay.team_map() : replay.run_map();
    bool moved = false;
    auto located =
        LocateDifference(ours, *signed_root, [&](const runmap::Key& key) -> absl::StatusOr<runmap::KeyedPath> {
          auto answer = ask(key);
          if (!answer.ok()) return answer.status();
          if (answer->tree_size != size) {
            moved = true;
            return absl::UnavailableError(
                absl::StrCat("the ledger moved from tree size ", size, " to ", answer->tree_size));
          }
          return answer->proof;
        });
    if (moved && attempt < kAttempts) continue;
    if (absl::IsNotFound(located.status())) {
      return not_located(
          absl::StrCat("the ledger's ", map, " map at its checkpoint of tree size ", size, " is the entries' again"));
    }
    if (!located.ok()) return not_located(std::string(located.status().message()));

    nlohmann::json out = {
        {"map", map},
        {"key", hash::Hex(located->key)},
        {"ledger_head", HeadJson(located->ledger_head)},
        {"replayed_head", HeadJson(located->replayed_head)},
        {"first_differing_seq", nullptr},
        {"moved_back", false},
        {"proof", nlohmann::json::parse(runmap::EncodeProof(located->proof))},
        {"at_tree_size", size},
        {"at_note", at_note},
        {"proofs_asked", located->proofs_asked + 1},
    };
    EntryReader reader(*this, size);
    // The run (team) named by the entry a head ends at, when it is of the key.
    const auto& named = located->replayed_head.has_value() ? located->replayed_head : located->ledger_head;
    if (named.has_value()) {
      auto entry = reader.Entry(named->last_seq);
      if (entry.ok()) {
        const std::string& team = entry->receipt.team();
        const std::string& run_id = entry->receipt.run_id();
        const runmap::Key key =
            teams ? runmap::TeamKeyOf(team) : runmap::RunKeyOf(team, run_id, runmap::KeyVersion::kV2);
        if (key == located->key) {
          out["team"] = team;
          if (!teams) out["run_id"] = run_id;
        } else {
          out["named_entry"] = absl::StrCat("entry ", named->last_seq, " is of ", team, teams ? "" : "/",
                                            teams ? "" : run_id, ", not of this key");
        }
      }
    }
    // The first entry where they differ: walk back the run (team) chain.
    const std::optional<runmap::Head>& mine = located->replayed_head;
    const std::optional<runmap::Head>& theirs = located->ledger_head;
    auto prev_of = [&](const receipt::Entry& e) { return teams ? e.team_prev : e.run_prev; };
    if (mine.has_value() && theirs.has_value() && theirs->count == mine->count) {
      out["first_differing_seq"] = mine->last_seq;
    } else if (mine.has_value() && (!theirs.has_value() || theirs->count < mine->count)) {
      const uint64_t target = theirs.has_value() ? theirs->count + 1 : 1;
      uint64_t seq = mine->last_seq, count = mine->count;
      std::string stopped;
      while (count > target && stopped.empty()) {
        if (mine->count - count >= kWalkBack) {
          stopped = absl::StrCat("walked ", kWalkBack, " entries back to seq ", seq, ", entry ", count, " of ",
                                 map == "runs" ? "the run" : "the team");
          break;
        }
        auto entry = reader.Entry(seq);
        if (!entry.ok()) {
          stopped = absl::StrCat("entry ", seq, ": ", entry.status().message());
        } else if (!prev_of(*entry).has_value()) {
          stopped = absl::StrCat("entry ", seq, " names no previous entry of its chain");
        } else {
          seq = *prev_of(*entry);
          --count;
        }
      }
      if (stopped.empty()) {
        out["first_differing_seq"] = seq;
        if (theirs.has_value()) {
          auto entry = reader.Entry(seq);
          auto before = entry.ok() && prev_of(*entry).has_value()
                            ? reader.Leaf(*prev_of(*entry))
                            : absl::StatusOr<std::string>(absl::NotFoundError(""));
          out["moved_back"] =
              before.ok() && *prev_of(*entry) == theirs->last_seq && hash::LeafHash(*before) == theirs->last_leaf_hash;
        }
      } else {
        out["walk"] = stopped;
      }
    }
    return out;
  }
}

}  // namespace ledger::monitor
