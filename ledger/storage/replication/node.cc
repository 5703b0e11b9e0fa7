#include "ledger/storage/replication/node.h"

#include <pthread.h>

#include <algorithm>
#include <future>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/format/receipt/receipt.h"
#include "util/jsonlog/jsonlog.h"

namespace ledger::replication {
namespace {

constexpr size_t kCatchUpBytes = 16 << 20;  // leaves read per round

int64_t NowMicros() { return sequencer::SystemClockMicros(); }

// The leaf is the ledger's leader_epoch entry of `epoch`. Canonical JSON
// escapes every '"' inside a string, so these bytes occur only as the
// receipt's own receipt_id and the leaf's own emitter.
bool IsEpochLeaf(const std::string& leaf, int64_t epoch) {
  return leaf.find(absl::StrCat("\"receipt_id\":\"", std::string(receipt::kLedgerIdPrefix), "epoch.", epoch, "\"")) !=
             std::string::npos &&
         leaf.find(absl::StrCat("\"emitter\":\"", std::string(receipt::kLedgerEmitter), "\"")) != std::string::npos;
}

}  // namespace

const char* RoleName(Role r) {
  switch (r) {
    case Role::kStarting:
      return "starting";
    case Role::kFollower:
      return "follower";
    case Role::kLeader:
      return "leader";
    case Role::kFailed:
      return "failed";
  }
  return "?";
}

absl::StatusOr<std::unique_ptr<Node>> Node::Create(Options options) {
  if (options.node_id.empty()) return absl::InvalidArgumentError("--node-id: required with --replication");
  if (options.node_id.size() > 64 ||
      options.node_id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
          std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-id: 1 to 64 of [A-Za-z0-9._-], not '", options.node_id, "'"));
  }
  if (options.address.empty()) return absl::InvalidArgumentError("--advertise: required with --replication");
  auto node = std::unique_ptr<Node>(new Node(std::move(options)));
  auto commits = ShardLog::Open(node->options_.db);
  if (!commits.ok()) return commits.status();
  auto loop = ShardLog::Open(node->options_.db);
  if (!loop.ok()) return loop.status();
  node->commits_ = *std::move(commits);
  node->loop_ = *std::move(loop);
  return node;
}

Node::~Node() { Stop(); }

void Node::Stop() {
  {
    sync::MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void Node::Release() {
  int64_t epoch = 0;
  {
    sync::MutexLock lock(&mu_);
    if (state_.role != Role::kLeader) return;
    state_.role = Role::kFollower;
    state_.open = false;
    epoch = state_.epoch;
  }
  sync::MutexLock lock(&commit_mu_);
  absl::Status released = commits_->Release(epoch, options_.node_id);
  jsonlog::Info("replication_released")
      .Str("node", options_.node_id)
      .Int("epoch", epoch)
      .Str("result", released.ok() ? "ok" : std::string(released.message()))
      .Emit();
}

Node::State Node::state() const {
  sync::MutexLock lock(&mu_);
  return state_;
}

bool Node::Submits() const {
  sync::MutexLock lock(&mu_);
  return state_.role == Role::kLeader && state_.open;
}

absl::StatusOr<ShardLog*> Node::WitnessConnection() {
  if (witness_ == nullptr) {
    auto opened = ShardLog::Open(options_.db);
    if (!opened.ok()) return opened.status();
    witness_ = *std::move(opened);
  }
  return witness_.get();
}

absl::Status Node::RecordCosignature(const StoredCosignature& c) {
  sync::MutexLock lock(&witness_mu_);
  auto db = WitnessConnection();
  if (!db.ok()) return db.status();
  return (*db)->PutCosignature(c);
}

absl::StatusOr<std::vector<StoredCosignature>> Node::Cosignatures() {
  sync::MutexLock lock(&witness_mu_);
  auto db = WitnessConnection();
  if (!db.ok()) return db.status();
  return (*db)->Cosignatures();
}

absl::Status Node::NotLeader() const {
  sync::MutexLock lock(&mu_);
  if (state_.role == Role::kFailed) {
    return absl::UnavailableError(absl::StrCat("replication: node ", options_.node_id, " stopped: ", state_.failure));
  }
  if (state_.leader_address.empty()) {
    return absl::UnavailableError(
        absl::StrCat("replication: node ", options_.node_id, " does not lead and no leader is known yet; retry"));
  }
  return absl::UnavailableError(absl::StrCat("replication: node ", options_.node_id, " follows; the leader is ",
                                             state_.leader, " at leader=", state_.leader_address, " (epoch ",
                                             state_.epoch, "); send appends there"));
}

sequencer::Replicate Node::ReplicateHook() {
  return [this](const sequencer::ReplicatedBatch& batch) -> absl::Status {
    int64_t epoch = 0;
    bool leading = false, open = false;
    uint64_t epoch_seq = 0;
    {
      sync::MutexLock lock(&mu_);
      leading = state_.role == Role::kLeader;
      epoch = state_.epoch;
      open = state_.open;
      epoch_seq = state_.epoch_seq;
    }
    if (!leading) return NotLeader();
    // An epoch's first batch starts with its leader_epoch entry (CONTRACT
    // §3): nothing else is committed in the epoch before it.
    const bool opens =
        !open && batch.first_seq == epoch_seq && !batch.leaves->empty() && IsEpochLeaf(batch.leaves->front(), epoch);
    if (!open && !opens) return Opening(epoch);
    absl::Status committed;
    {
      sync::MutexLock lock(&commit_mu_);
      committed = commits_->Commit(epoch, batch);
    }
    if (!committed.ok()) {
      StepDown(epoch, committed);
      return committed;
    }
    sync::MutexLock lock(&mu_);
    state_.fence_size = batch.size;
    state_.last_commit_us = NowMicros();
    if (opens && state_.epoch == epoch) state_.open = true;
    return absl::OkStatus();
  };
}

absl::Status Node::Opening(int64_t epoch) const {
  return absl::UnavailableError(absl::StrCat("replication: node ", options_.node_id, " is taking the lead (epoch ",
                                             epoch, ") and appends its leader_epoch entry first; retry"));
}

log::Log::Options::Replicated Node::LogHooks() {
  log::Log::Options::Replicated hooks;
  hooks.writable = [this]() -> absl::Status {
    {
      sync::MutexLock lock(&mu_);
      if (state_.role == Role::kLeader) return absl::OkStatus();
    }
    return NotLeader();
  };
  hooks.open = [this]() -> absl::Status {
    int64_t epoch = 0;
    {
      sync::MutexLock lock(&mu_);
      if (state_.role != Role::kLeader) return NotLeader();
      if (state_.open) return absl::OkStatus();
      epoch = state_.epoch;
    }
    return Opening(epoch);
  };
  hooks.publish = [this](const log::SignedCheckpoint& cp) -> absl::Status {
    int64_t epoch = 0;
    {
      sync::MutexLock lock(&mu_);
      if (state_.role != Role::kLeader) return absl::UnavailableError("replication: this node no longer leads");
      epoch = state_.epoch;
    }
    absl::Status stored;
    {
      sync::MutexLock lock(&commit_mu_);
      stored = commits_->PutCheckpoint(epoch, cp.size, cp.note, cp.time_note);
    }
    if (!stored.ok()) StepDown(epoch, stored);
    return stored;
  };
  return hooks;
}

void Node::StepDown(int64_t epoch, const absl::Status& why) {
  {
    sync::MutexLock lock(&mu_);
    if (state_.role != Role::kLeader || state_.epoch != epoch) return;
    state_.role = Role::kFollower;
    state_.open = false;
    ++state_.step_downs;
    ++state_.commit_failures;
    state_.leader.clear();
    state_.leader_address.clear();
  }
  jsonlog::Warn("replication_step_down")
      .Str("node", options_.node_id)
      .Int("epoch", epoch)
      .Msg(std::string(why.message()))
      .Emit();
  cv_.SignalAll();
}

void Node::Fail(const absl::Status& why) {
  {
    sync::MutexLock lock(&mu_);
    state_.role = Role::kFailed;
    state_.failure = std::string(why.message());
  }
  jsonlog::Error("replication_stopped")
      .Str("node", options_.node_id)
      .Str("code", absl::StatusCodeToString(why.code()))
      .Msg(std::string(why.message()))
      .Emit();
}

bool Node::Sleep(std::chrono::milliseconds d) {
  const auto deadline = sync::CondVar::Clock::now() + d;
  sync::MutexLock lock(&mu_);
  while (!stopping_ && cv_.WaitUntil(&mu_, deadline)) {
  }
  return !stopping_;
}

absl::Status Node::Start(log::Log* log) {
  log_ = log;
  const sequencer::Head head = log->head();
  auto fence = loop_->Init(head.size, head.root);
  if (!fence.ok()) return fence.status();
  if (head.size > fence->size) {
    return absl::FailedPreconditionError(
        absl::StrCat("replication: this node's log holds ", head.size, " entries, the shard committed ", fence->size,
                     ": entries past the fence were never committed; start it from an empty data directory or a "
                     "backup of the shard"));
  }
  if (head.size == fence->size && head.root != fence->root) {
    return absl::DataLossError(absl::StrCat("replication: this node's tree of size ", head.size, " has root ",
                                            hash::Hex(head.root), ", the shard's ", hash::Hex(fence->root),
                                            ": this store is not the shard's"));
  }
  if (head.size < fence->size) {
    auto first = loop_->FirstKept();
    if (!first.ok()) return first.status();
    if (!first->has_value() || **first > head.size) {
      return absl::FailedPreconditionError(absl::StrCat(
          "replication: this node's log holds ", head.size, " entries and the shard keeps batches from ",
          first->has_value() ? absl::StrCat(**first) : std::string("none"),
          " only: start it from a backup of the shard (--restore-from) taken at a size the kept tail reaches"));
    }
  }
  if (auto s = loop_->Listen(); !s.ok()) return s;
  {
    sync::MutexLock lock(&mu_);
    state_.role = Role::kFollower;
    state_.applied = head.size;
    state_.fence_size = fence->size;
    state_.epoch = fence->epoch;
    if (fence->lease_live) {
      state_.leader = fence->holder;
      state_.leader_address = fence->address;
    }
  }
  jsonlog::Info("replication_started")
      .Str("node", options_.node_id)
      .Int("applied", static_cast<int64_t>(head.size))
      .Int("shard_size", static_cast<int64_t>(fence->size))
      .Int("epoch", fence->epoch)
      .Emit();
  thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

absl::Status Node::CatchUp(const Fence& fence, bool all) {
  uint64_t local = log_->head().size;
  uint64_t target = fence.size;
  // The leader's checkpoints past this node's latest one: a deposed leader
  // holds entries its own checkpoints do not cover yet.
  const uint64_t signed_size = log_->LatestCheckpointTime().first;
  std::vector<StoredCheckpoint> checkpoints;
  if (signed_size < fence.size) {
    auto cps = loop_->Checkpoints(signed_size, fence.size);
    if (!cps.ok()) return cps.status();
    checkpoints = *std::move(cps);
    if (!all) target = checkpoints.empty() ? local : std::max(local, checkpoints.back().size);
  }
  size_t next_cp = 0;
  // Takes the leader's checkpoint of the size this node's log is at, if any.
  auto adopt_at_local = [&]() -> absl::Status {
    while (next_cp < checkpoints.size() && checkpoints[next_cp].size < local) ++next_cp;
    if (next_cp < checkpoints.size() && checkpoints[next_cp].size == local) {
      const StoredCheckpoint& cp = checkpoints[next_cp++];
      return log_->AdoptCheckpoint(cp.note, cp.time_note);
    }
    return absl::OkStatus();
  };
  if (auto s = adopt_at_local(); !s.ok()) return s;
  while (local < target) {
    auto batches = loop_->Batches(local, kCatchUpBytes);
    if (!batches.ok()) return batches.status();
    if (batches->empty() || batches->front().first_seq != local) {
      return absl::FailedPreconditionError(
          absl::StrCat("replication: the shard no longer keeps the batch at ", local,
                       " (trimmed): restart this node from a backup of the shard (--restore-from)"));
    }
    for (StoredBatch& b : *batches) {
      if (b.first_seq != local || local >= target) break;
      if (b.size > target) {
        return absl::DataLossError(absl::StrCat("replication: batch [", b.first_seq, ", ", b.size,
                                                ") runs past the checkpoint of size ", target));
      }
      auto head = log_->Replay(std::move(b.leaves), b.size, b.root);
      if (!head.ok()) {
        // A leader that just stepped down may still be writing batches it
        // committed behind the fence before (two at most: the sequencer
        // replicates a batch while it writes the one before): its log then
        // grows by itself, and the replay of such a batch finds its
        // entries. Such growth must end where one of the fence's batches
        // does, with its root.
        const sequencer::Head now = log_->head();
        if (!absl::IsDataLoss(head.status()) || now.size <= local) return head.status();
        auto ends_there =
            std::find_if(batches->begin(), batches->end(), [&](const StoredBatch& c) { return c.size == now.size; });
        if (ends_there == batches->end() || ends_there->root != now.root) {
          return absl::DataLossError(absl::StrCat(
              "replication: this node's log grew to ", now.size, " entries with root ", hash::Hex(now.root),
              " while it followed, and no committed batch ends there so: ", head.status().message()));
        }
        jsonlog::Info("replication_own_batch")
            .Str("node", options_.node_id)
            .Int("size", static_cast<int64_t>(now.size))
            .Msg("a batch this node committed while it led reached its store after it stepped down; it is the fence's")
            .Emit();
        local = now.size;
        {
          sync::MutexLock lock(&mu_);
          state_.applied = local;
        }
        if (auto s = adopt_at_local(); !s.ok()) return s;
        break;  // read the batches again from here
      }
      local = head->size;
      {
        sync::MutexLock lock(&mu_);
        state_.applied = local;
        state_.last_commit_us = NowMicros();
      }
      if (auto s = adopt_at_local(); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Node::Lead(const Fence& taken) {
  const auto started = std::chrono::steady_clock::now();
  // No other node can commit in this epoch: what the fence holds is final.
  if (auto s = CatchUp(taken, /*all=*/true); !s.ok()) return s;
  const sequencer::Head head = log_->head();
  if (head.size != taken.size || head.root != taken.root) {
    return absl::DataLossError(absl::StrCat("replication: after every committed batch this node's tree is of size ",
                                            head.size, " with root ", hash::Hex(head.root), ", the fence's ",
                                            taken.size, " with root ", hash::Hex(taken.root)));
  }
  int64_t previous_epoch = 0;
  {
    sync::MutexLock lock(&mu_);
    previous_epoch = state_.epoch;
    state_.role = Role::kLeader;
    state_.epoch = taken.epoch;
    state_.leader = options_.node_id;
    state_.leader_address = options_.address;
    state_.fence_size = taken.size;
    state_.open = false;
    state_.epoch_seq = taken.size;
    ++state_.failovers;
  }
  // The epoch's first entry, then its first checkpoint.
  if (options_.before_epoch_entry) options_.before_epoch_entry();
  if (absl::Status appended = AppendEpochEntry(taken); !appended.ok()) {
    jsonlog::Error("replication_epoch_entry")
        .Str("node", options_.node_id)
        .Int("epoch", taken.epoch)
        .Msg(std::string(appended.message()))
        .Emit();
    StepDown(taken.epoch, appended);
    return absl::OkStatus();
  }
  absl::Status signed_now = log_->SignCheckpoint();
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  {
    sync::MutexLock lock(&mu_);
    state_.takeover_ms = took;
  }
  jsonlog::Warn("replication_leading")
      .Str("node", options_.node_id)
      .Int("epoch", taken.epoch)
      .Int("previous_epoch", previous_epoch)
      .Int("size", static_cast<int64_t>(taken.size))
      .Int("takeover_ms", took)
      .Str("checkpoint", signed_now.ok() ? "signed" : std::string(signed_now.message()))
      .Emit();
  return absl::OkStatus();
}

absl::Status Node::AppendEpochEntry(const Fence& taken) {
  auto entry = std::make_shared<receipt::Receipt>(
      receipt::LeaderEpoch(taken.epoch, options_.node_id, taken.size, hash::Hex(taken.root), NowMicros()));
  auto result = std::make_shared<std::promise<sequencer::Outcome>>();
  std::future<sequencer::Outcome> outcome = result->get_future();
  absl::Status queued = log_->AppendAsLedger({entry.get()}, [entry, result](std::vector<sequencer::Outcome> out) {
    result->set_value(out.empty() ? sequencer::Outcome{absl::InternalError("no outcome")} : std::move(out[0]));
  });
  if (!queued.ok()) return queued;
  // The commit's own deadline bounds this; the margin covers the local write.
  if (outcome.wait_for(options_.db.timeout * 4 + std::chrono::seconds(5)) != std::future_status::ready) {
    return absl::DeadlineExceededError("replication: the leader_epoch entry was not committed in time");
  }
  sequencer::Outcome got = outcome.get();
  if (!got.status.ok()) return got.status;
  if (got.duplicate || got.seq != taken.size) {
    return absl::DataLossError(absl::StrCat("replication: the leader_epoch entry of epoch ", taken.epoch, " got seq ",
                                            got.seq, got.duplicate ? " (a duplicate)" : "", ", not ", taken.size));
  }
  return absl::OkStatus();
}

void Node::Run() {
  pthread_setname_np(pthread_self(), "ledger-replica");
  auto last_trim = std::chrono::steady_clock::now();
  while (true) {
    State now = state();
    {
      sync::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    if (now.role == Role::kFailed) {
      if (!Sleep(std::chrono::seconds(1))) return;
      continue;
    }
    if (now.role == Role::kLeader) {
      absl::Status renewed = loop_->Renew(now.epoch, options_.node_id, options_.lease);
      if (renewed.ok()) {
        sync::MutexLock lock(&mu_);
        ++state_.renewals;
      } else if (absl::IsFailedPrecondition(renewed)) {
        StepDown(now.epoch, renewed);
        continue;
      }
      // A renewal that did not reach the database changes nothing: the
      // fence, not the lease, keeps a deposed leader from committing.
      (void)loop_->Report(options_.node_id, options_.address, log_->head().size);
      if (auto nodes = loop_->Nodes(); nodes.ok()) {
        sync::MutexLock lock(&mu_);
        state_.nodes = *std::move(nodes);
        state_.applied = log_->head().size;
      }
      if (std::chrono::steady_clock::now() - last_trim >= options_.trim_every) {
        last_trim = std::chrono::steady_clock::now();
        if (auto trimmed = loop_->Trim(options_.trim_grace); trimmed.ok() && *trimmed > 0) {
          jsonlog::Info("replication_trimmed").Int("batches", static_cast<int64_t>(*trimmed)).Emit();
        }
        if (auto tail = loop_->Tail(); tail.ok()) {
          sync::MutexLock lock(&mu_);
          state_.tail_batches = tail->batches;
          state_.tail_bytes = tail->bytes;
        }
      }
      if (!Sleep(options_.lease / 3)) return;
      continue;
    }
    // A follower.
    auto fence = loop_->Read();
    if (!fence.ok()) {
      jsonlog::Warn("replication_unreachable")
          .Str("node", options_.node_id)
          .Msg(std::string(fence.status().message()))
          .Emit();
      if (!Sleep(options_.poll)) return;
      continue;
    }
    {
      sync::MutexLock lock(&mu_);
      state_.fence_size = fence->size;
      state_.epoch = std::max(state_.epoch, fence->epoch);
      state_.leader = fence->lease_live ? fence->holder : "";
      state_.leader_address = fence->lease_live ? fence->address : "";
    }
    if (absl::Status s = CatchUp(*fence, /*all=*/false); !s.ok()) {
      if (absl::IsDataLoss(s) || absl::IsFailedPrecondition(s)) {
        Fail(s);
        continue;
      }
      jsonlog::Warn("replication_catch_up").Str("node", options_.node_id).Msg(std::string(s.message())).Emit();
      if (!Sleep(options_.poll)) return;
      continue;
    }
    (void)loop_->Report(options_.node_id, options_.address, log_->head().size);
    if (!fence->lease_live) {
      auto taken = loop_->TakeOver(options_.node_id, options_.address, options_.lease);
      if (taken.ok() && taken->has_value()) {
        if (absl::Status s = Lead(**taken); !s.ok()) {
          Fail(s);
        }
        continue;
      }
    }
    auto notified = loop_->WaitNotify(options_.poll);
    if (!notified.ok() && !Sleep(options_.poll)) return;
  }
}

std::string Node::RenderMetrics() const {
  State s = state();
  std::string out;
  auto gauge = [&](const std::string& name, const std::string& help, double v) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " gauge\n", name, " ", v, "\n");
  };
  auto counter = [&](const std::string& name, const std::string& help, uint64_t v) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " counter\n", name, " ", v, "\n");
  };
  absl::StrAppend(&out, "# HELP ledger_replication_role This node's role (1 for the role it has).\n",
                  "# TYPE ledger_replication_role gauge\n");
  for (Role r : {Role::kStarting, Role::kFollower, Role::kLeader, Role::kFailed}) {
    absl::StrAppend(&out, "ledger_replication_role{role=\"", RoleName(r), "\"} ", s.role == r ? 1 : 0, "\n");
  }
  gauge("ledger_replication_epoch", "The shard's epoch as this node last saw it.", static_cast<double>(s.epoch));
  gauge("ledger_replication_applied_entries", "Entries this node has committed or applied.",
        static_cast<double>(s.applied));
  gauge("ledger_replication_lag_entries", "Entries the shard committed that this node has not applied.",
        static_cast<double>(s.fence_size > s.applied ? s.fence_size - s.applied : 0));
  gauge("ledger_replication_lag_seconds", "Seconds since this node last committed or applied a batch, while behind.",
        s.fence_size > s.applied && s.last_commit_us > 0 ? static_cast<double>(NowMicros() - s.last_commit_us) / 1e6
                                                         : 0.0);
  counter("ledger_replication_lease_renewals_total", "Lease renewals by this node.", s.renewals);
  counter("ledger_replication_takeovers_total", "Times this node took the lease over.", s.failovers);
  counter("ledger_replication_step_downs_total", "Times this node stopped leading after a failed commit.",
          s.step_downs);
  gauge("ledger_replication_tail_batches", "Batches the database keeps (the leader's view).",
        static_cast<double>(s.tail_batches));
  gauge("ledger_replication_tail_bytes", "Bytes of the database's batch table (the leader's view).",
        static_cast<double>(s.tail_bytes));
  if (s.role == Role::kLeader && !s.nodes.empty()) {
    absl::StrAppend(&out,
                    "# HELP ledger_replication_node_lag_entries Entries each node of the shard has not applied "
                    "(the leader's view).\n# TYPE ledger_replication_node_lag_entries gauge\n");
    for (const NodeReport& n : s.nodes) {
      absl::StrAppend(&out, "ledger_replication_node_lag_entries{node=\"", n.node, "\"} ",
                      s.applied > n.applied ? s.applied - n.applied : 0, "\n");
    }
    absl::StrAppend(&out,
                    "# HELP ledger_replication_node_report_age_seconds Seconds since each node last reported what "
                    "it applied.\n# TYPE ledger_replication_node_report_age_seconds gauge\n");
    for (const NodeReport& n : s.nodes) {
      absl::StrAppend(&out, "ledger_replication_node_report_age_seconds{node=\"", n.node, "\"} ", n.seconds_ago, "\n");
    }
  }
  if (s.takeover_ms >= 0) {
    gauge("ledger_replication_takeover_ms", "The last take-over, from the lease won to leading.",
          static_cast<double>(s.takeover_ms));
  }
  return out;
}

}  // namespace ledger::replication
