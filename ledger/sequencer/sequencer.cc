#include "ledger/sequencer/sequencer.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ledger/receipt/entry.h"

namespace ledger::sequencer {
namespace {

std::string RunKey(const Submission& s) {
  std::string key = s.team;
  key.push_back('\0');  // teams never contain NUL
  key.append(s.run_id);
  return key;
}

}  // namespace

Submission Submission::Of(receipt::Receipt& r, std::string canonical, std::string emitter) {
  Submission s;
  s.receipt_id = std::move(*r.mutable_receipt_id());
  s.team = std::move(*r.mutable_team());
  s.run_id = std::move(*r.mutable_run_id());
  s.digest = hash::Sha256(canonical);
  s.canonical = std::move(canonical);
  s.emitter = std::move(emitter);
  return s;
}

int64_t SystemClockMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<std::unique_ptr<Sequencer>> Sequencer::Start(store::Store* store,
                                                            Options options) {
  auto state = store->ReadState();
  if (!state.ok()) return state.status();
  auto frontier = merkle::Frontier::Load(state->size, [&](int level, uint64_t index) {
    return store->GetNode(level, index);
  });
  if (!frontier.ok()) {
    return absl::DataLossError(absl::StrCat("tree of size ", state->size,
                                            " cannot be loaded: ",
                                            std::string(frontier.status().message())));
  }
  return std::unique_ptr<Sequencer>(
      new Sequencer(store, std::move(options), *std::move(frontier), *state));
}

Sequencer::Sequencer(store::Store* store, Options options, merkle::Frontier frontier,
                     store::State state)
    : store_(store),
      options_(std::move(options)),
      frontier_(std::move(frontier)),
      state_(state) {
  head_ = {state_.size, frontier_.Root(), state_.head};
  writer_ = std::thread([this] { Run(); });
}

Sequencer::~Sequencer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

absl::Status Sequencer::Submit(std::vector<Submission> items, Done done) {
  size_t n = items.size();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return absl::UnavailableError("ledger: shutting down");
    if (queued_ + n > options_.max_queued) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "ledger: append queue is full (", queued_, " receipts waiting); retry with back-off"));
    }
    queued_ += n;
    queue_.push_back({std::move(items), std::move(done)});
  }
  cv_.notify_one();
  return absl::OkStatus();
}

Head Sequencer::committed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return head_;
}

void Sequencer::Run() {
  std::vector<Request> work;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
      if (queue_.empty()) return;  // stopping, nothing left
      size_t taken = 0;
      while (!queue_.empty() &&
             (work.empty() || taken + queue_.front().items.size() <= options_.max_batch)) {
        taken += queue_.front().items.size();
        work.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      queued_ -= taken;
    }
    Process(work);
    work.clear();
  }
}

void Sequencer::Process(std::vector<Request>& requests) {
  // Work on copies: they replace the real head only after the commit.
  merkle::Frontier frontier = frontier_;
  store::State state = state_;
  store::Batch batch = store_->NewBatch();

  absl::flat_hash_map<std::string, store::ReceiptRef> new_ids;
  // The last seq of each run this batch appends to; written once per run.
  struct RunHead {
    const Submission* submission;
    uint64_t seq;
  };
  absl::flat_hash_map<std::string, RunHead> run_heads;
  std::vector<std::vector<Outcome>> outcomes(requests.size());
  // Outcomes that depend on this batch being committed.
  std::vector<Outcome*> pending;

  for (size_t r = 0; r < requests.size(); ++r) {
    auto& items = requests[r].items;
    outcomes[r].resize(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      Submission& s = items[i];
      Outcome& out = outcomes[r][i];
      const std::string& id = s.receipt_id;
      const hash::Hash& digest = s.digest;

      std::optional<store::ReceiptRef> existing;
      bool existing_is_new = false;
      if (auto it = new_ids.find(id); it != new_ids.end()) {
        existing = it->second;
        existing_is_new = true;
      } else {
        auto found = store_->FindReceipt(id);
        if (!found.ok()) {
          out.status = absl::UnavailableError(
              absl::StrCat("storage: receipt index unreadable: ",
                           std::string(found.status().message())));
          continue;
        }
        existing = *found;
      }
      if (existing.has_value()) {
        if (existing->digest != digest) {
          out.status = absl::AlreadyExistsError(absl::StrCat(
              "receipt_id: '", id, "' is already in the log (seq ", existing->seq,
              ") with different content"));
          continue;
        }
        out.seq = existing->seq;
        out.leaf_hash = existing->leaf_hash;
        out.duplicate = true;
        if (existing_is_new) pending.push_back(&out);
        continue;
      }

      std::optional<uint64_t> run_prev;
      std::string run_key = RunKey(s);
      if (auto it = run_heads.find(run_key); it != run_heads.end()) {
        run_prev = it->second.seq;
      } else {
        auto head = store_->GetRunHead(s.team, s.run_id);
        if (!head.ok()) {
          out.status = absl::UnavailableError(absl::StrCat(
              "storage: run index unreadable: ", std::string(head.status().message())));
          continue;
        }
        run_prev = *head;
      }

      uint64_t seq = state.size;
      int64_t logged_at = std::max(options_.clock(), state.last_logged_at_us);
      std::string leaf = receipt::EncodeLeaf(seq, state.head, run_prev, logged_at,
                                             s.emitter, s.canonical);
      hash::Hash leaf_hash = hash::LeafHash(leaf);
      batch.PutEntry(seq, leaf);
      store::ReceiptRef ref{seq, leaf_hash, digest};
      batch.PutReceipt(id, ref);
      frontier.Append(leaf_hash, [&](int level, uint64_t index, const hash::Hash& h) {
        batch.PutNode(level, index, h);
      });
      new_ids.emplace(id, ref);
      run_heads[run_key] = {&s, seq};
      state.size = seq + 1;
      state.head = leaf_hash;
      state.last_logged_at_us = logged_at;

      out.seq = seq;
      out.leaf_hash = leaf_hash;
      pending.push_back(&out);
    }
  }

  if (state.size != state_.size) {
    for (const auto& [key, head] : run_heads) {
      batch.PutRunHead(head.submission->team, head.submission->run_id, head.seq);
    }
    batch.PutState(state);
    absl::Status committed = store_->Commit(std::move(batch));
    if (committed.ok()) {
      frontier_ = std::move(frontier);
      state_ = state;
      std::lock_guard<std::mutex> lock(mu_);
      head_ = {state_.size, frontier_.Root(), state_.head};
    } else {
      absl::Status failed = absl::UnavailableError(absl::StrCat(
          "storage: write failed, nothing of this batch was appended; retry: ",
          std::string(committed.message())));
      for (Outcome* o : pending) *o = Outcome{failed};
    }
  }

  for (size_t r = 0; r < requests.size(); ++r) {
    requests[r].done(std::move(outcomes[r]));
  }
}

}  // namespace ledger::sequencer
