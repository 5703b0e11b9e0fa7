#include "ledger/storage/sequencer/sequencer.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/storage/store/store.h"

namespace ledger::sequencer {
namespace {

std::string RunKey(const Submission& s) {
  std::string key = s.receipt->team();
  key.push_back('\0');  // teams never contain NUL
  key.append(s.receipt->run_id());
  return key;
}

// Projection records cover entries [0, value): written with every batch, so
// that a store whose projections lag its log is noticed.
void PutProjectedSize(projection::OverlayTxn& txn, uint64_t size) {
  std::string v;
  for (int i = 7; i >= 0; --i) v.push_back(static_cast<char>(size >> (8 * i)));
  txn.Put(projection::Table::kIndex, projection::kProjectedSizeKey, v);
}

double MicrosSince(std::chrono::steady_clock::time_point start) {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace

Submission Submission::Of(const receipt::Receipt& r, std::string canonical, std::string emitter) {
  Submission s;
  s.receipt = &r;
  s.digest = hash::Sha256(canonical);
  s.canonical = std::move(canonical);
  s.emitter = std::move(emitter);
  s.id_key = store::EncodeReceiptKey(s.key());
  return s;
}

store::ReceiptKey Submission::key() const {
  return {emitter == receipt::kLedgerEmitter ? store::IdSpace::kLedger : store::IdSpace::kEmitter, receipt->team(),
          receipt->receipt_id()};
}

int64_t SystemClockMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<std::unique_ptr<Sequencer>> Sequencer::Start(store::Store* store, Options options) {
  auto state = store->ReadState();
  if (!state.ok()) return state.status();
  auto frontier =
      merkle::Frontier::Load(state->size, [&](int level, uint64_t index) { return store->GetNode(level, index); });
  if (!frontier.ok()) {
    return absl::DataLossError(
        absl::StrCat("tree of size ", state->size, " cannot be loaded: ", std::string(frontier.status().message())));
  }
  return std::unique_ptr<Sequencer>(new Sequencer(store, std::move(options), *std::move(frontier), *state));
}

// A batch built by the writer, committed by the committer.
struct Sequencer::Prepared {
  std::vector<Request> requests;
  std::vector<std::vector<Outcome>> outcomes;
  std::vector<Outcome*> pending;  // outcomes that hold only if this commits
  std::optional<store::Batch> batch;
  bool has_entries = false;
  bool replay = false;
  uint64_t first_seq = 0;
  // The new leaves, for Options::replicate (else empty).
  std::vector<std::string> leaves;
  // A replayed leaf that differs from the one built (Replay).
  absl::Status replay_error;
  merkle::Frontier frontier;  // the head after this batch
  store::State state;
  // Idempotency keys (Submission::id_key) and run heads this batch adds, for batches built on it
  // before it is committed.
  absl::flat_hash_map<std::string, store::ReceiptRef> new_ids;
  absl::flat_hash_map<std::string, store::RunHead> run_heads;
  absl::flat_hash_map<std::string, store::RunHead> team_heads;  // by team
  // The runs and teams this batch changes, keyed for the maps (with
  // Options::track_runs only).
  std::vector<RunChange> changed_runs;
  std::vector<RunChange> changed_teams;
  // Projection records this batch writes; reads fall through to the batch
  // being committed, then the store.
  std::unique_ptr<projection::OverlayTxn> txn;
  // Set by the commit stages, under mu_: committed once the batch is
  // settled, with its result; aborted when a batch before it failed (it is
  // then neither replicated nor stored).
  bool committed = false;
  bool aborted = false;
  absl::Status result;
};

Sequencer::Sequencer(store::Store* store, Options options, merkle::Frontier frontier, store::State state)
    : store_(store),
      options_(std::move(options)),
      frontier_(frontier),
      state_(state),
      durable_frontier_(std::move(frontier)),
      durable_state_(state) {
  head_ = {state_.size, frontier_.Root(), state_.head, state_.last_logged_at_us};
  if (options_.replicate) replicator_ = std::thread([this] { RunReplicator(); });
  committer_ = std::thread([this] { RunCommitter(); });
  writer_ = std::thread([this] { Run(); });
}

Sequencer::~Sequencer() { Stop(); }

void Sequencer::Stop() {
  if (!writer_.joinable()) return;
  {
    sync::MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  writer_.join();
  {
    sync::MutexLock lock(&mu_);
    committer_stop_ = true;
  }
  replicate_cv_.SignalAll();
  commit_cv_.SignalAll();
  if (replicator_.joinable()) replicator_.join();
  committer_.join();
}

absl::Status Sequencer::Submit(std::vector<Submission> items, Done done) {
  size_t n = items.size();
  {
    sync::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("ledger: shutting down");
    if (queued_ + n > options_.max_queued) {
      return absl::ResourceExhaustedError(
          absl::StrCat("ledger: append queue is full (", queued_, " receipts waiting); retry with back-off"));
    }
    queued_ += n;
    std::string emitter = items.empty() ? std::string() : items.front().emitter;
    auto lane = lanes_.try_emplace(emitter).first;
    if (lane->second.empty()) turns_.push_back(emitter);
    const size_t slice = std::max<size_t>(1, options_.emitter_slice);
    if (n <= slice) {
      lane->second.push_back({std::move(emitter), std::move(items), std::move(done)});
    } else {
      // Slices, each answered into one outcome vector; the last one
      // answered (on the writer thread, so no two at once) calls `done`.
      struct Joined {
        std::vector<Outcome> outcomes;
        size_t unanswered;
        Done done;
      };
      auto joined = std::make_shared<Joined>(Joined{std::vector<Outcome>(n), (n + slice - 1) / slice, std::move(done)});
      for (size_t from = 0; from < n; from += slice) {
        auto begin = items.begin() + static_cast<std::ptrdiff_t>(from);
        auto end = items.begin() + static_cast<std::ptrdiff_t>(std::min(n, from + slice));
        lane->second.push_back({emitter,
                                {std::make_move_iterator(begin), std::make_move_iterator(end)},
                                [joined, from](std::vector<Outcome> out) {
                                  std::move(out.begin(), out.end(),
                                            joined->outcomes.begin() + static_cast<std::ptrdiff_t>(from));
                                  if (--joined->unanswered == 0) joined->done(std::move(joined->outcomes));
                                }});
      }
    }
  }
  cv_.Signal();
  return absl::OkStatus();
}

absl::Status Sequencer::Replay(std::vector<std::string> leaves, ReplayDone done) {
  // The receipts the submissions point at, kept until `done`.
  struct Replayed {
    std::vector<std::string> leaves;
    std::vector<receipt::Entry> entries;
  };
  auto replayed = std::make_shared<Replayed>();
  replayed->leaves = std::move(leaves);
  replayed->entries.reserve(replayed->leaves.size());
  std::vector<Submission> items;
  items.reserve(replayed->leaves.size());
  for (const std::string& leaf : replayed->leaves) {
    auto entry = receipt::ParseLeaf(leaf);
    if (!entry.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("replayed leaf ", replayed->entries.size(), ": ", entry.status().message()));
    }
    replayed->entries.push_back(*std::move(entry));
  }
  for (size_t i = 0; i < replayed->entries.size(); ++i) {
    const receipt::Entry& e = replayed->entries[i];
    Submission s = Submission::Of(e.receipt, receipt::Encode(e.receipt), e.emitter);
    s.replayed_leaf = &replayed->leaves[i];
    s.replayed_at_us = e.logged_at_us;
    items.push_back(std::move(s));
  }
  const size_t n = items.size();
  Done finish = [this, replayed, done = std::move(done)](std::vector<Outcome> outcomes) {
    absl::Status status;
    for (size_t i = 0; i < outcomes.size() && status.ok(); ++i) {
      if (!outcomes[i].status.ok()) {
        status = outcomes[i].status;
      } else if (outcomes[i].duplicate) {
        status = absl::DataLossError(absl::StrCat("replayed entry ", replayed->entries[i].seq,
                                                  ": its receipt is already in this node's log (seq ", outcomes[i].seq,
                                                  "): this store is not the leader's"));
      }
    }
    done(status, committed());
  };
  {
    sync::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("ledger: shutting down");
    queued_ += n;
    static const std::string kLane("\x01replay");  // no emitter's name
    auto lane = lanes_.try_emplace(kLane).first;
    if (lane->second.empty()) turns_.push_back(kLane);
    lane->second.push_back({kLane, std::move(items), std::move(finish), true});
  }
  cv_.Signal();
  return absl::OkStatus();
}

std::vector<Sequencer::Request> Sequencer::TakeQueued() {
  std::vector<Request> work;
  size_t taken = 0;
  while (!turns_.empty()) {
    auto lane = lanes_.find(turns_.front());
    size_t n = lane->second.front().items.size();
    if (!work.empty() && taken + n > options_.max_batch) break;
    // A replayed batch holds nothing else: it is not replicated again.
    if (!work.empty() && lane->second.front().replay != work.front().replay) break;
    taken += n;
    work.push_back(std::move(lane->second.front()));
    lane->second.pop_front();
    std::string emitter = std::move(turns_.front());
    turns_.pop_front();
    if (lane->second.empty()) {
      lanes_.erase(lane);
    } else {
      turns_.push_back(std::move(emitter));
    }
  }
  queued_ -= taken;
  return work;
}

void Sequencer::Requeue(std::vector<Request> requests) {
  for (auto it = requests.rbegin(); it != requests.rend(); ++it) {
    queued_ += it->items.size();
    auto& lane = lanes_[it->emitter];
    if (lane.empty()) turns_.push_front(it->emitter);
    lane.push_front(std::move(*it));
  }
}

Head Sequencer::committed() const {
  sync::MutexLock lock(&mu_);
  return head_;
}

Head Sequencer::TakeCommitted(std::vector<RunChange>* changed, std::vector<RunChange>* changed_teams) {
  sync::MutexLock lock(&mu_);
  auto take = [](absl::flat_hash_map<runmap::Key, runmap::Head>& from, std::vector<RunChange>* to) {
    to->clear();
    to->reserve(from.size());
    for (const auto& [key, head] : from) to->push_back({key, head});
    from.clear();
  };
  take(changed_runs_, changed);
  if (changed_teams != nullptr) take(changed_teams_, changed_teams);
  return head_;
}

Head Sequencer::WaitCommitted(uint64_t size, std::chrono::milliseconds timeout) const {
  const auto deadline = sync::CondVar::Clock::now() + timeout;
  sync::MutexLock lock(&mu_);
  while (head_.size <= size && !stopping_ && committed_cv_.WaitUntil(&mu_, deadline)) {
  }
  return head_;
}

void Sequencer::HandOver(Prepared* p) {
  handed_over_.push_back(p);
  (options_.replicate ? to_replicate_ : to_commit_).push_back(p);
}

void Sequencer::Settle(Prepared* p, absl::Status result) {
  p->result = std::move(result);
  p->committed = true;
  auto it = std::find(handed_over_.begin(), handed_over_.end(), p);
  if (!p->result.ok()) {
    // Built on `p`: not to be replicated or stored.
    for (auto later = it + 1; later != handed_over_.end(); ++later) (*later)->aborted = true;
  }
  handed_over_.erase(it);
  cv_.SignalAll();
}

void Sequencer::RunReplicator() {
  pthread_setname_np(pthread_self(), "ledger-shardlog");
  sync::MutexLock lock(&mu_);
  auto idle_since = std::chrono::steady_clock::now();
  while (true) {
    while (to_replicate_.empty() && !committer_stop_) replicate_cv_.Wait(&mu_);
    if (to_replicate_.empty()) return;
    Prepared* p = to_replicate_.front();
    to_replicate_.pop_front();
    stats_.idle_us.Observe(MicrosSince(idle_since));
    absl::Status result;
    if (!p->aborted && p->has_entries && !p->replay) {
      mu_.Unlock();
      auto started = std::chrono::steady_clock::now();
      result = options_.replicate({p->first_seq, &p->leaves, p->state.size, p->frontier.Root()});
      stats_.replicate_us.Observe(MicrosSince(started));
      if (!result.ok()) result = absl::Status(result.code(), absl::StrCat("replication: ", result.message()));
      mu_.Lock();
    }
    idle_since = std::chrono::steady_clock::now();
    if (p->aborted) {
      Settle(p, absl::AbortedError("a batch before this one failed"));
    } else if (!result.ok()) {
      Settle(p, std::move(result));
    } else {
      to_commit_.push_back(p);
      commit_cv_.SignalAll();
    }
  }
}

void Sequencer::RunCommitter() {
  pthread_setname_np(pthread_self(), "ledger-commit");
  sync::MutexLock lock(&mu_);
  auto idle_since = std::chrono::steady_clock::now();
  while (true) {
    while (to_commit_.empty() && !committer_stop_) commit_cv_.Wait(&mu_);
    if (to_commit_.empty()) return;
    Prepared* p = to_commit_.front();
    to_commit_.pop_front();
    if (!options_.replicate) stats_.idle_us.Observe(MicrosSince(idle_since));
    if (p->aborted) {
      Settle(p, absl::AbortedError("a batch before this one failed"));
      continue;
    }
    absl::Status result;
    if (p->has_entries) {
      mu_.Unlock();
      auto started = std::chrono::steady_clock::now();
      result = store_->Commit(*p->batch);
      stats_.commit_us.Observe(MicrosSince(started));
      stats_.batch_entries.Observe(static_cast<double>(p->pending.size()));
      mu_.Lock();
    }
    idle_since = std::chrono::steady_clock::now();
    Settle(p, std::move(result));
  }
}

size_t Sequencer::queued() const {
  sync::MutexLock lock(&mu_);
  return queued_;
}

bool Sequencer::Finish(Prepared& p) {
  {
    sync::MutexLock lock(&mu_);
    while (!p.committed) cv_.Wait(&mu_);
    if (p.aborted) {
      Requeue(std::move(p.requests));
      return false;
    }
    if (p.result.ok()) {
      head_ = {p.state.size, p.frontier.Root(), p.state.head, p.state.last_logged_at_us};
      for (const RunChange& c : p.changed_runs) changed_runs_[c.key] = c.head;
      for (const RunChange& c : p.changed_teams) changed_teams_[c.key] = c.head;
    }
  }
  committed_cv_.SignalAll();
  bool ok = p.result.ok();
  if (ok) {
    durable_frontier_ = p.frontier;
    durable_state_ = p.state;
  } else {
    // A failed sync may still leave the batch in the WAL: after a restart it
    // may be in the log. Retrying by receipt_id is right either way.
    absl::Status failed = p.replay ? p.result
                                   : absl::UnavailableError(absl::StrCat(
                                         absl::StartsWith(p.result.message(), "replication: ")
                                             ? std::string(p.result.message())
                                             : absl::StrCat("storage: write failed (", p.result.message(), ")"),
                                         "; the receipt is not acknowledged: retry with the same receipt_id"));
    for (Outcome* o : p.pending) *o = Outcome{failed};
    // What was built on this batch is rebuilt from the durable head.
    frontier_ = durable_frontier_;
    state_ = durable_state_;
  }
  for (size_t r = 0; r < p.requests.size(); ++r) p.requests[r].done(std::move(p.outcomes[r]));
  return ok;
}

void Sequencer::FinishOldest(std::deque<std::unique_ptr<Prepared>>& in_flight) {
  const bool ok = Finish(*in_flight.front());
  // The next batch's projection reads fell through to the oldest's records
  // until now: they are stored, or the next batch is aborted.
  if (in_flight.size() > 1 && in_flight[1]->txn != nullptr) in_flight[1]->txn->DetachBase();
  in_flight.pop_front();
  if (ok) return;
  while (!in_flight.empty()) {
    Finish(*in_flight.back());
    in_flight.pop_back();
  }
}

void Sequencer::Run() {
  pthread_setname_np(pthread_self(), "ledger-writer");
  // Handed over to the commit stages, oldest first: at most two, so that a
  // batch is built only on one that is not in the store yet (the second),
  // never on two.
  std::deque<std::unique_ptr<Prepared>> in_flight;
  while (true) {
    std::vector<Request> work;
    bool oldest_done = false;
    {
      sync::MutexLock lock(&mu_);
      while (!stopping_ && !(!in_flight.empty() && in_flight.front()->committed) &&
             (turns_.empty() || in_flight.size() >= 2)) {
        cv_.Wait(&mu_);
      }
      oldest_done = !in_flight.empty() && in_flight.front()->committed;
      if (!oldest_done && in_flight.size() < 2) work = TakeQueued();
    }
    if (oldest_done || (work.empty() && !in_flight.empty())) {
      FinishOldest(in_flight);
      continue;
    }
    if (work.empty()) return;  // stopping, nothing queued, nothing in flight
    // Built while the batches before it are being committed.
    auto started = std::chrono::steady_clock::now();
    std::unique_ptr<Prepared> next = Prepare(std::move(work), in_flight.empty() ? nullptr : in_flight.back().get());
    stats_.build_us.Observe(MicrosSince(started));
    {
      sync::MutexLock lock(&mu_);
      // A batch it was built on failed meanwhile: it is aborted, never
      // handed over, and its requests are queued again once that one is
      // finished.
      if (std::any_of(in_flight.begin(), in_flight.end(),
                      [](const std::unique_ptr<Prepared>& q) { return q->committed && !q->result.ok(); })) {
        next->aborted = true;
        next->committed = true;
        next->result = absl::AbortedError("a batch before this one failed");
      } else {
        HandOver(next.get());
      }
    }
    replicate_cv_.SignalAll();
    commit_cv_.SignalAll();
    in_flight.push_back(std::move(next));
  }
}

// The receipts of the batch Prepare builds, between its steps.
struct Sequencer::Placement {
  // The head of each run this batch appends to, as of its last entry in
  // the batch; written once per run. The leaf hash is set when that entry
  // is hashed.
  struct RunHead {
    const Submission* submission;
    store::RunHead head;
  };
  std::vector<RunHead> run_heads;
  absl::flat_hash_map<std::string, size_t> run_index;  // RunKey -> run_heads
  // The same for teams.
  std::vector<RunHead> team_heads;
  absl::flat_hash_map<std::string, size_t> team_index;  // team -> team_heads
  // A receipt this batch appends: placed in the first pass, hashed into the
  // chain in the second, while the projector (if any) runs beside it.
  struct Placed {
    const Submission* submission;
    Outcome* out;
    uint64_t seq;
    int64_t logged_at_us;
    std::optional<uint64_t> run_prev;
    size_t run;  // index in run_heads
    std::optional<uint64_t> team_prev;
    size_t team;  // index in team_heads
  };
  std::vector<Placed> placed;
  absl::flat_hash_map<std::string_view, size_t> placed_ids;  // id_key -> placed
  // Retries of a receipt placed earlier in this batch: the outcome and the
  // index in placed of the first.
  std::vector<std::pair<Outcome*, size_t>> retries_of_placed;
  std::vector<projection::Entry> entries;  // what the projector sees
};

std::unique_ptr<Sequencer::Prepared> Sequencer::Prepare(std::vector<Request> requests, const Prepared* base) {
  std::unique_ptr<Prepared> p = NewPrepared(std::move(requests), base);
  projection::Projector* projector = options_.projector;
  const uint64_t first_seq = state_.size;
  Placement placement;
  Place(*p, base, placement);

  // The projector needs seqs and times only: it runs while the chain is
  // hashed. It writes only the projection part of the batch.
  absl::Status projection_error;
  std::future<absl::Status> projected;
  if (projector != nullptr && !placement.entries.empty()) {
    projected = std::async(std::launch::async, [&] { return projector->Apply(placement.entries, *p->txn); });
  }
  HashIntoChain(*p, placement);
  if (projected.valid()) projection_error = projected.get();

  p->first_seq = first_seq;
  p->has_entries = state_.size != first_seq;
  if (p->has_entries) PutHeads(*p, placement);
  if (!projection_error.ok()) {
    Abandon(*p, base,
            absl::UnavailableError(
                absl::StrCat("projection: ", projection_error.message(), "; nothing of this batch was appended")));
    return p;
  }
  if (!p->replay_error.ok()) {
    Abandon(*p, base, p->replay_error);
    return p;
  }
  p->frontier = frontier_;
  p->state = state_;
  return p;
}

std::unique_ptr<Sequencer::Prepared> Sequencer::NewPrepared(std::vector<Request> requests, const Prepared* base) {
  auto p = std::make_unique<Prepared>();
  p->requests = std::move(requests);
  p->replay = !p->requests.empty() && p->requests.front().replay;
  p->batch = store_->NewBatch(base != nullptr ? &*base->batch : nullptr);
  if (options_.projector != nullptr) {
    p->txn = std::make_unique<projection::OverlayTxn>(
        base != nullptr ? base->txn.get() : nullptr,
        [store = store_](projection::Table t, std::string_view key) { return store->GetProjection(t, key); },
        &*p->batch);
  }
  p->outcomes.resize(p->requests.size());
  return p;
}

void Sequencer::Place(Prepared& p, const Prepared* base, Placement& placement) {
  uint64_t next_seq = state_.size;
  int64_t last_logged_at = state_.last_logged_at_us;
  for (size_t r = 0; r < p.requests.size(); ++r) {
    auto& items = p.requests[r].items;
    p.outcomes[r].resize(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      Submission& s = items[i];
      Outcome& out = p.outcomes[r][i];
      if (Answered(s, base, p, placement, out)) {
        if (s.replayed_leaf != nullptr && p.replay_error.ok()) {
          // The leader appended it, so its id was new there.
          p.replay_error = absl::DataLossError(absl::StrCat(
              "replayed entry ", next_seq, ": receipt_id '", s.receipt->receipt_id(), "' of team '", s.receipt->team(),
              "' is already in this node's log (seq ", out.seq, "): this store is not the leader's"));
        }
        continue;
      }

      // The run's head before this entry: this batch, the batch being
      // committed, the store.
      std::optional<store::RunHead> prev;
      std::string run_key = RunKey(s);
      auto in_batch = placement.run_index.find(run_key);
      if (in_batch != placement.run_index.end()) {
        prev = placement.run_heads[in_batch->second].head;
      } else if (!StoredRunHead(s, run_key, base, &prev, out)) {
        continue;
      }
      std::optional<store::RunHead> team_prev_head;
      auto team_in_batch = placement.team_index.find(s.receipt->team());
      if (team_in_batch != placement.team_index.end()) {
        team_prev_head = placement.team_heads[team_in_batch->second].head;
      } else if (!StoredTeamHead(s, base, &team_prev_head, out)) {
        continue;
      }
      uint64_t seq = next_seq++;
      last_logged_at = s.replayed_leaf != nullptr ? s.replayed_at_us : std::max(options_.clock(), last_logged_at);
      std::optional<uint64_t> run_prev;
      if (prev.has_value()) run_prev = prev->last_seq;
      size_t run;
      if (in_batch != placement.run_index.end()) {
        run = in_batch->second;
      } else {
        run = placement.run_heads.size();
        placement.run_index.emplace(std::move(run_key), run);
        placement.run_heads.push_back({&s, {}});
      }
      placement.run_heads[run].submission = &s;
      placement.run_heads[run].head = {prev.has_value() ? prev->count + 1 : 1, seq, {}};
      std::optional<uint64_t> team_prev;
      if (team_prev_head.has_value()) team_prev = team_prev_head->last_seq;
      size_t team;
      if (team_in_batch != placement.team_index.end()) {
        team = team_in_batch->second;
      } else {
        team = placement.team_heads.size();
        placement.team_index.emplace(s.receipt->team(), team);
        placement.team_heads.push_back({&s, {}});
      }
      placement.team_heads[team].submission = &s;
      placement.team_heads[team].head = {team_prev_head.has_value() ? team_prev_head->count + 1 : 1, seq, {}};
      placement.placed_ids.emplace(s.id_key, placement.placed.size());
      placement.placed.push_back({&s, &out, seq, last_logged_at, run_prev, run, team_prev, team});
      if (options_.projector != nullptr) {
        placement.entries.push_back({seq, last_logged_at, s.emitter, s.receipt});
      }
    }
  }
}

bool Sequencer::Answered(const Submission& s, const Prepared* base, Prepared& p, Placement& placement, Outcome& out) {
  const std::string& id = s.receipt->receipt_id();
  // Where the receipt id may already be (among the team's, or the ledger's
  // own): this batch, the batch being committed, the store.
  if (auto it = placement.placed_ids.find(s.id_key); it != placement.placed_ids.end()) {
    const Placement::Placed& first = placement.placed[it->second];
    if (first.submission->digest != s.digest) {
      out.status = absl::AlreadyExistsError(
          absl::StrCat("receipt_id: '", id, "' is already in the log (seq ", first.seq, ") with different content"));
    } else {
      placement.retries_of_placed.emplace_back(&out, it->second);
      p.pending.push_back(&out);
    }
    return true;
  }
  std::optional<store::ReceiptRef> existing;
  bool existing_is_pending = false;
  if (base != nullptr) {
    if (auto it = base->new_ids.find(s.id_key); it != base->new_ids.end()) {
      existing = it->second;
      existing_is_pending = true;
    }
  }
  if (!existing_is_pending) {
    auto found = store_->FindReceipt(s.key());
    if (!found.ok()) {
      out.status =
          absl::UnavailableError(absl::StrCat("storage: receipt index unreadable: ", found.status().message()));
      return true;
    }
    existing = *found;
  }
  if (!existing.has_value()) return false;
  if (existing->digest != s.digest) {
    out.status = absl::AlreadyExistsError(
        absl::StrCat("receipt_id: '", id, "' is already in the log (seq ", existing->seq, ") with different content"));
    return true;
  }
  out.seq = existing->seq;
  out.leaf_hash = existing->leaf_hash;
  out.duplicate = true;
  if (existing_is_pending) p.pending.push_back(&out);
  return true;
}

bool Sequencer::StoredRunHead(const Submission& s, const std::string& run_key, const Prepared* base,
                              std::optional<store::RunHead>* prev, Outcome& out) {
  if (base != nullptr) {
    if (auto it = base->run_heads.find(run_key); it != base->run_heads.end()) {
      *prev = it->second;
      return true;
    }
  }
  auto head = store_->GetRunHead(s.receipt->team(), s.receipt->run_id());
  if (!head.ok()) {
    out.status = absl::UnavailableError(absl::StrCat("storage: run index unreadable: ", head.status().message()));
    return false;
  }
  *prev = *head;
  return true;
}

bool Sequencer::StoredTeamHead(const Submission& s, const Prepared* base, std::optional<store::RunHead>* prev,
                               Outcome& out) {
  if (base != nullptr) {
    if (auto it = base->team_heads.find(s.receipt->team()); it != base->team_heads.end()) {
      *prev = it->second;
      return true;
    }
  }
  auto head = store_->GetTeamHead(s.receipt->team());
  if (!head.ok()) {
    out.status = absl::UnavailableError(absl::StrCat("storage: team index unreadable: ", head.status().message()));
    return false;
  }
  *prev = *head;
  return true;
}

void Sequencer::HashIntoChain(Prepared& p, Placement& placement) {
  store::Batch& batch = *p.batch;
  std::string leaf;  // one buffer for every leaf of the batch
  for (const Placement::Placed& e : placement.placed) {
    const Submission& s = *e.submission;
    leaf.clear();
    if (options_.team_chain) {
      receipt::EncodeLeafV2To(&leaf, e.seq, state_.head, e.run_prev, e.team_prev, e.logged_at_us, s.emitter,
                              s.canonical);
    } else {
      receipt::EncodeLeafTo(&leaf, e.seq, state_.head, e.run_prev, e.logged_at_us, s.emitter, s.canonical);
    }
    if (s.replayed_leaf != nullptr && leaf != *s.replayed_leaf && p.replay_error.ok()) {
      p.replay_error = absl::DataLossError(absl::StrCat(
          "replayed entry ", e.seq, ": the leaf built from this node's log differs from the leader's (", leaf.size(),
          " bytes here, ", s.replayed_leaf->size(), " there): this store is not the leader's"));
    }
    if (options_.replicate && !p.replay) p.leaves.push_back(leaf);
    hash::Hash leaf_hash = hash::LeafHash(leaf);
    if (store::RunHead& head = placement.run_heads[e.run].head; head.last_seq == e.seq) {
      head.last_leaf_hash = leaf_hash;
    }
    if (store::RunHead& head = placement.team_heads[e.team].head; head.last_seq == e.seq) {
      head.last_leaf_hash = leaf_hash;
    }
    batch.PutEntry(e.seq, leaf);
    batch.PutRunSeq(s.receipt->team(), s.receipt->run_id(), e.seq);
    store::ReceiptRef ref{e.seq, leaf_hash, s.digest};
    batch.PutReceipt(s.key(), ref);
    frontier_.Append(leaf_hash,
                     [&](int level, uint64_t index, const hash::Hash& h) { batch.PutNode(level, index, h); });
    p.new_ids.emplace(s.id_key, ref);
    state_.size = e.seq + 1;
    state_.head = leaf_hash;
    state_.last_logged_at_us = e.logged_at_us;
    e.out->seq = e.seq;
    e.out->leaf_hash = leaf_hash;
    p.pending.push_back(e.out);
  }
  for (auto [out, index] : placement.retries_of_placed) {
    out->seq = placement.placed[index].out->seq;
    out->leaf_hash = placement.placed[index].out->leaf_hash;
    out->duplicate = true;
  }
}

void Sequencer::PutHeads(Prepared& p, const Placement& placement) {
  store::Batch& batch = *p.batch;
  for (const auto& [key, index] : placement.run_index) {
    const Placement::RunHead& run = placement.run_heads[index];
    const receipt::Receipt& r = *run.submission->receipt;
    batch.PutRunHead(r.team(), r.run_id(), run.head);
    p.run_heads.emplace(key, run.head);
    if (options_.track_runs) {
      p.changed_runs.push_back({runmap::RunKeyOf(r.team(), r.run_id(), runmap::KeyVersion::kV2),
                                {run.head.count, run.head.last_seq, run.head.last_leaf_hash}});
    }
  }
  for (const auto& [team, index] : placement.team_index) {
    const store::RunHead& head = placement.team_heads[index].head;
    batch.PutTeamHead(team, head);
    p.team_heads.emplace(team, head);
    if (options_.track_runs) {
      p.changed_teams.push_back({runmap::TeamKeyOf(team), {head.count, head.last_seq, head.last_leaf_hash}});
    }
  }
  batch.PutState(state_);
  if (options_.projector != nullptr) {
    PutProjectedSize(*p.txn, state_.size);
    batch.PutProjections(p.txn->writes());
  }
}

void Sequencer::Abandon(Prepared& p, const Prepared* base, const absl::Status& error) {
  for (Outcome* o : p.pending) *o = Outcome{error};
  p.pending.clear();
  p.has_entries = false;
  p.new_ids.clear();
  p.run_heads.clear();
  p.changed_runs.clear();
  p.team_heads.clear();
  p.changed_teams.clear();
  p.leaves.clear();
  p.txn.reset();
  // The head is what it was before this batch.
  frontier_ = base != nullptr ? base->frontier : durable_frontier_;
  state_ = base != nullptr ? base->state : durable_state_;
  p.frontier = frontier_;
  p.state = state_;
}

}  // namespace ledger::sequencer
