// Retention (CONTRACT section 9): a pass's lines, its `retention` entries,
// the checkpoint that holds them, then the pruned entries' rows deleted a
// chunk at a time and the store compacted; at Open, a pass whose deletions
// did not finish is finished.
#include <algorithm>
#include <future>
#include <set>

#include "absl/strings/str_cat.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/redaction.h"
#include "ledger/format/replay/replay.h"
#include "ledger/format/retention/pruned.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/log/retention_pass.h"
#include "ledger/storage/store/store.h"

namespace ledger::log {
namespace {

// Entries read and deleted under one closing of the gate.
constexpr uint64_t kPruneChunk = 4096;

// The first key after every key that starts with `prefix`; "" when none
// is (a prefix of 0xff bytes only).
std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

}  // namespace

absl::StatusOr<RetentionPass> ReadRetentionPass(const store::Store& store, uint64_t pass) {
  RetentionPass out;
  auto head = store.GetRunHead(receipt::kLedgerTeam, receipt::kRetentionRun);
  if (!head.ok()) return head.status();
  if (!head->has_value()) return out;
  absl::Status walked = store.WalkLeavesBack(
      (*head)->last_seq, [&](uint64_t seq, std::string_view leaf) -> absl::StatusOr<std::optional<uint64_t>> {
        auto e = receipt::ParseLeaf(leaf);
        if (!e.ok() || !e->receipt.has_retention()) {
          return absl::DataLossError(absl::StrCat("entry ", seq, " of the run ledger.retention is not a retention"));
        }
        const auto p = static_cast<uint64_t>(e->receipt.retention().pass());
        const uint64_t want = pass != 0 ? pass : out.pass != 0 ? out.pass : p;
        if (p < want) return std::optional<uint64_t>();
        if (p == want) {
          out.pass = p;
          out.now_us = e->receipt.occurred_at_us();
          out.policy_sha256 = e->receipt.retention().policy_sha256();
          out.rules.push_back(receipt::RuleOf(e->receipt));
          out.seqs.push_back(seq);
        }
        return e->run_prev;
      });
  if (!walked.ok()) return walked;
  std::reverse(out.rules.begin(), out.rules.end());
  std::reverse(out.seqs.begin(), out.seqs.end());
  return out;
}

const receipt::RetentionRule* CoveringRule(const std::vector<receipt::RetentionRule>& rules, std::string_view team) {
  if (team == receipt::kLedgerTeam) return nullptr;
  const receipt::RetentionRule* fallback = nullptr;
  for (const auto& r : rules) {
    if (r.team == team) return &r;
    if (r.team.empty()) fallback = &r;
  }
  return fallback;
}

absl::StatusOr<uint64_t> Log::LineAt(int64_t cutoff_us) const {
  uint64_t best = 0, lo = 0, hi = sequencer_ ? sequencer_->committed().size : 0;
  while (lo <= hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    auto next = store_->NextTimedCheckpoint(mid);
    if (!next.ok()) return next.status();
    if (!next->has_value() || **next > hi) {
      if (mid == 0) break;
      hi = mid - 1;
      continue;
    }
    auto time = ReadCheckpointTime(**next);
    if (!time.ok()) return time.status();
    if (time->time_us <= cutoff_us) {
      best = **next;
      lo = **next + 1;
    } else {
      if (mid == 0) break;
      hi = mid - 1;
    }
  }
  return best;
}

absl::StatusOr<Log::Pruned> Log::Prune(const retention::Policy& policy) {
  if (options_.replicated.has_value()) {
    return absl::FailedPreconditionError(
        "retention: a replicated shard does not prune in this version: its followers would keep the bodies (CONTRACT "
        "section 9)");
  }
  if (sequencer_ == nullptr || !integrity_.ok()) {
    return integrity_.ok() ? absl::UnavailableError("log closed") : integrity_;
  }
  sync::MutexLock one(&erase_mu_);
  if (auto s = FinishPass(); !s.ok()) return s.status();
  auto last = ReadRetentionPass(*store_, 0);
  if (!last.ok()) return last.status();
  const int64_t now = options_.sequencer.clock ? options_.sequencer.clock() : sequencer::SystemClockMicros();
  std::vector<receipt::RetentionRule> rules;
  bool moved = false;
  for (const retention::Rule& rule : policy.rules()) {
    if (!rule.keep_s.has_value()) {
      rules.push_back({rule.team, 0, 0, 0});  // kept for good: stated, so the default does not cover its team
      continue;
    }
    receipt::RetentionRule r{rule.team, *rule.keep_s, now - *rule.keep_s * 1000000, 0};
    auto line = LineAt(r.cutoff_us);
    if (!line.ok()) return line.status();
    // A line never moves back: the rule's line at the pass before, if any.
    uint64_t was = 0;
    for (const auto& b : last->rules) {
      if (b.team == r.team) was = b.below_seq;
    }
    r.below_seq = std::max(*line, was);
    moved = moved || r.below_seq > was;
    rules.push_back(std::move(r));
  }
  Pruned out;
  out.rules = rules;
  if (!moved) {
    out.rules = last->rules;
    return out;
  }
  const uint64_t pass = last->pass + 1;
  {
    // The policy's bytes, kept before its entries name them: a run pack
    // across the line carries them (CONTRACT section 9, format 9).
    store::Batch batch = store_->NewBatch();
    batch.PutRetentionPolicy(policy.sha256(), policy.text());
    if (auto s = store_->Commit(batch); !s.ok()) return s;
  }
  std::vector<receipt::Receipt> receipts;
  receipts.reserve(rules.size());
  for (const auto& r : rules) receipts.push_back(receipt::Retention(pass, r, policy.sha256(), now));
  std::vector<const receipt::Receipt*> pointers;
  for (const auto& r : receipts) pointers.push_back(&r);
  std::promise<std::vector<sequencer::Outcome>> result;
  auto outcome = result.get_future();
  absl::Status queued =
      AppendAsLedger(pointers, [&result](std::vector<sequencer::Outcome> got) { result.set_value(std::move(got)); });
  if (!queued.ok()) return queued;
  for (const sequencer::Outcome& o : outcome.get()) {
    if (!o.status.ok()) return o.status;
  }
  // A checkpoint holds the pass's entries before any body goes.
  if (auto s = SignCheckpoint(); !s.ok()) return s;
  auto done = FinishPass();
  if (!done.ok()) return done.status();
  out.pass = pass;
  out.pruned = *done;
  return out;
}

absl::StatusOr<uint64_t> Log::FinishPass() {
  const store::Pruning pruning = store_->ReadPruning();
  auto pass = ReadRetentionPass(*store_, 0);
  if (!pass.ok()) return pass.status();
  if (pass->pass == 0 || pass->pass <= pruning.finished_pass) return 0;
  // Where the pass's deletions start: each rule's line at the last pass
  // that finished (0 for a rule new since).
  std::vector<receipt::RetentionRule> finished;
  if (pruning.finished_pass > 0) {
    auto f = ReadRetentionPass(*store_, pruning.finished_pass);
    if (!f.ok()) return f.status();
    finished = f->rules;
  }
  uint64_t from = UINT64_MAX, to = 0;
  for (const auto& r : pass->rules) {
    if (r.keep_s == 0) continue;  // kept for good: nothing to delete
    uint64_t was = 0;
    for (const auto& f : finished) {
      if (f.team == r.team) was = f.below_seq;
    }
    from = std::min(from, was);
    to = std::max(to, r.below_seq);
  }
  if (from >= to) from = to;  // also when every rule keeps for good (from stays UINT64_MAX)
  if (to > pruning.below) {
    // The log replayed up to the new floor, kept before any row goes: an
    // audit takes up the chains and maps there (store.h).
    replay::Replay state;
    if (pruning.below > 0) {
      auto kept = store_->PrunedReplay();
      if (!kept.ok()) return kept.status();
      auto decoded = replay::Replay::Decode(*kept);
      if (!decoded.ok()) return decoded.status();
      state = *std::move(decoded);
    }
    if (state.size() != pruning.below) {
      return absl::DataLossError(absl::StrCat("retention: the replay state kept is of size ", state.size(),
                                              ", the pruning floor is ", pruning.below));
    }
    absl::Status replayed = store_->ScanLeaves(pruning.below, to, [&](uint64_t seq, std::string_view leaf) {
      if (auto f = state.Append(leaf); f.has_value()) return absl::DataLossError(f->Text());
      return absl::OkStatus();
    });
    if (!replayed.ok()) return replayed;
    store::Batch batch = store_->NewBatch();
    batch.PutPruning({to, pruning.finished_pass});
    batch.PutPrunedReplay(state.Encode());
    if (auto s = store_->Commit(batch); !s.ok()) return s;
  }
  uint64_t pruned = 0;
  std::set<std::pair<std::string, std::string>> whole_runs;
  for (uint64_t at = from; at < to;) {
    const uint64_t end = std::min(to, at + kPruneChunk);
    auto n = PruneChunk(pass->rules, at, end, &whole_runs);
    if (!n.ok()) return n.status();
    pruned += *n;
    at = end;
  }
  if (auto s = store_->CompactPruned(to); !s.ok()) return s;
  store::Batch batch = store_->NewBatch();
  batch.PutPruning({std::max(pruning.below, to), pass->pass});
  if (auto s = store_->Commit(batch); !s.ok()) return s;
  return pruned;
}

absl::StatusOr<uint64_t> Log::PruneChunk(const std::vector<receipt::RetentionRule>& rules, uint64_t from, uint64_t to,
                                         std::set<std::pair<std::string, std::string>>* whole_runs) {
  // Appends wait meanwhile, so that no projection record of a run whose
  // records go changes under the deletion.
  CloseGate();
  auto reopen = [this] { OpenGate(); };
  uint64_t pruned = 0;
  absl::Status done = [&]() -> absl::Status {
    std::vector<receipt::Entry> entries;
    absl::Status read = store_->ScanLeaves(from, to, [&](uint64_t seq, std::string_view line) -> absl::Status {
      if (retention::LooksPruned(line)) return absl::OkStatus();
      auto e = receipt::ParseStored(line);
      if (!e.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", e.status().message()));
      const receipt::RetentionRule* rule = CoveringRule(rules, e->receipt.team());
      if (rule != nullptr && seq < rule->below_seq) entries.push_back(*std::move(e));
      return absl::OkStatus();
    });
    if (!read.ok()) return read;
    if (entries.empty()) return absl::OkStatus();
    store::Batch batch = store_->NewBatch();
    std::vector<projection::Entry> forgotten;
    std::vector<std::pair<std::string, std::string>> runs;
    for (const receipt::Entry& e : entries) {
      const receipt::Receipt& r = e.receipt;
      batch.DeleteEntry(e.seq);
      batch.DeleteRunSeq(r.team(), r.run_id(), e.seq);
      const store::ReceiptKey key{
          e.emitter == receipt::kLedgerEmitter ? store::IdSpace::kLedger : store::IdSpace::kEmitter, r.team(),
          r.receipt_id()};
      auto ref = store_->FindReceipt(key);
      if (!ref.ok()) return ref.status();
      if (ref->has_value() && (*ref)->seq == e.seq) batch.DeleteReceipt(key);
      forgotten.push_back({e.seq, e.logged_at_us, e.emitter, &e.receipt, e.erased});
      auto run = std::make_pair(r.team(), r.run_id());
      if (whole_runs->contains(run)) continue;
      auto head = store_->GetRunHead(r.team(), r.run_id());
      if (!head.ok()) return head.status();
      const receipt::RetentionRule* rule = CoveringRule(rules, r.team());
      if (head->has_value() && (*head)->last_seq < rule->below_seq) {
        whole_runs->insert(run);
        runs.push_back(std::move(run));
      }
    }
    if (projection::Projector* projector = options_.sequencer.projector; projector != nullptr) {
      projection::OverlayTxn txn(
          nullptr, [this](projection::Table t, std::string_view key) { return store_->GetProjection(t, key); });
      const projection::Projector::Scan scan = [this](projection::Table t, std::string_view prefix,
                                                      absl::FunctionRef<bool(std::string_view, std::string_view)> row) {
        return store_->ScanProjection(t, prefix, PrefixEnd(prefix), false, row);
      };
      if (auto s = projector->Forget(forgotten, runs, scan, txn); !s.ok()) return s;
      batch.PutProjectionsWithLog(txn.writes());
    }
    if (auto s = store_->Commit(batch); !s.ok()) return s;
    pruned = entries.size();
    return absl::OkStatus();
  }();
  reopen();
  if (!done.ok()) return done;
  return pruned;
}

}  // namespace ledger::log
