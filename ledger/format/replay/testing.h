// For tests: the leaves of a log as the sequencer writes them (version 2,
// with their chains), and the tree, maps and checkpoint-time note they
// give, computed apart from Replay.
#ifndef LEDGER_FORMAT_REPLAY_TESTING_H_
#define LEDGER_FORMAT_REPLAY_TESTING_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/note/note.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/runmap/runmap.h"

namespace ledger::replay::testing {

class Leaves {
 public:
  // Appends the next entry, of `team`'s run `run_id`; its leaf.
  std::string Next(const std::string& team, const std::string& run_id) {
    Fields f = FieldsOf(team, run_id);
    return Commit(team, run_id, f);
  }

  struct Fields {
    uint64_t seq = 0;
    hash::Hash prev{};
    std::optional<uint64_t> run_prev, team_prev;
    std::string receipt;
  };
  Fields FieldsOf(const std::string& team, const std::string& run_id) const {
    Fields f;
    f.seq = leaves_.size();
    f.prev = leaves_.empty() ? receipt::kZeroHash : hash::LeafHash(leaves_.back());
    if (auto it = run_last_.find(team + "/" + run_id); it != run_last_.end()) f.run_prev = it->second;
    if (auto it = team_last_.find(team); it != team_last_.end()) f.team_prev = it->second;
    auto r = receipt::FromJsonText(absl::StrCat(R"({"receipt_id":"r-)", leaves_.size(),
                                                R"(","kind":"agent_start","team":")", team, R"(","run_id":")", run_id,
                                                R"(","step_id":"s1","attempt":1,"occurred_at_us":1767225600000000,)",
                                                R"("decision":"allow","timeout_ms":1000})"));
    EXPECT_TRUE(r.ok()) << r.status();
    f.receipt = *receipt::Canonicalize(*r, receipt::Author::kEmitter);
    return f;
  }
  std::string Encode(const Fields& f) const {
    std::string leaf;
    receipt::EncodeLeafV2To(&leaf, f.seq, f.prev, f.run_prev, f.team_prev, 1767225600000000 + f.seq, "gw", f.receipt);
    return leaf;
  }
  std::string Commit(const std::string& team, const std::string& run_id, const Fields& f) {
    std::string leaf = Encode(f);
    run_last_[team + "/" + run_id] = leaves_.size();
    team_last_[team] = leaves_.size();
    leaves_.push_back(leaf);
    runs_[team + "/" + run_id] = {runs_[team + "/" + run_id].count + 1, f.seq, hash::LeafHash(leaf)};
    teams_[team] = {teams_[team].count + 1, f.seq, hash::LeafHash(leaf)};
    return leaf;
  }

  // The maps and note of the leaves so far, computed apart from Replay.
  runmap::RunMap RunMap() const {
    runmap::RunMap m;
    for (const auto& [name, head] : runs_) {
      size_t slash = name.find('/');
      EXPECT_TRUE(
          m.Set(runmap::RunKeyOf(name.substr(0, slash), name.substr(slash + 1), runmap::KeyVersion::kV2), head).ok());
    }
    return m;
  }
  runmap::RunMap TeamMap() const {
    runmap::RunMap m;
    for (const auto& [team, head] : teams_) EXPECT_TRUE(m.Set(runmap::TeamKeyOf(team), head).ok());
    return m;
  }
  note::CheckpointTime Note() const {
    merkle::Frontier tree;
    for (const std::string& leaf : leaves_) tree.Append(hash::LeafHash(leaf), [](int, uint64_t, const hash::Hash&) {});
    note::CheckpointTime t;
    t.checkpoint = {origin_, leaves_.size(), tree.Root()};
    t.time_us = 1767225600000000;
    t.run_map_root = RunMap().Root();
    t.team_map_root = TeamMap().Root();
    t.runs_keyed_by_team = true;
    return t;
  }
  const std::vector<std::string>& leaves() const { return leaves_; }
  void set_origin(std::string origin) { origin_ = std::move(origin); }
  std::map<std::string, runmap::Head>& runs() { return runs_; }
  std::map<std::string, runmap::Head>& teams() { return teams_; }

 private:
  std::string origin_ = "example.org/log";
  std::vector<std::string> leaves_;
  std::map<std::string, uint64_t> run_last_, team_last_;
  std::map<std::string, runmap::Head> runs_, teams_;
};

}  // namespace ledger::replay::testing

#endif  // LEDGER_FORMAT_REPLAY_TESTING_H_
