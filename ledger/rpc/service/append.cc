#include "ledger/rpc/service/internal/append.h"

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/arena.h"
#include "ledger/rpc/server/status.h"
#include "util/sync/mutex.h"

namespace ledger::service {

using auth::Action;
using server::IdleStreams;
using server::Later;
using server::ToGrpc;

Screened Screen(const auth::Caller& caller, const pb::AppendRequest& request) {
  Screened out;
  out.allowed.reserve(request.receipts_size());
  out.denied.resize(request.receipts_size());
  bool all = caller.CoversAllTeams(Action::kAppend);
  for (int i = 0; i < request.receipts_size(); ++i) {
    const receipt::Receipt& r = request.receipts(i);
    if (!all && !r.team().empty()) {
      absl::Status s = caller.Check(Action::kAppend, r.team());
      if (!s.ok()) {
        out.denied[i] = absl::PermissionDeniedError(absl::StrCat("team: ", s.message()));
        continue;
      }
    }
    out.allowed.push_back(&r);
  }
  return out;
}

namespace {

void FillResult(const absl::Status& s, pb::AppendResult* r) {
  r->set_code(static_cast<int>(s.code()));
  r->set_message(std::string(s.message()));
}

}  // namespace

void FillResults(const Screened& screened, const std::vector<sequencer::Outcome>& outcomes, pb::AppendResponse* out) {
  out->mutable_results()->Reserve(static_cast<int>(screened.denied.size()));
  size_t next = 0;
  for (const absl::Status& denied : screened.denied) {
    pb::AppendResult* r = out->add_results();
    if (!denied.ok()) {
      FillResult(denied, r);
      continue;
    }
    const sequencer::Outcome& o = outcomes[next++];
    if (o.status.ok()) {
      r->set_seq(o.seq);
      r->set_leaf_hash(std::string(hash::AsBytes(o.leaf_hash)));
      r->set_duplicate(o.duplicate);
    } else {
      FillResult(o.status, r);
    }
  }
}

void FillAllFailed(int n, const absl::Status& s, pb::AppendResponse* out) {
  for (int i = 0; i < n; ++i) FillResult(s, out->add_results());
}

namespace {

// Batches in, results out in request order. Up to kMaxInFlight batches are
// being appended at once; beyond that the reactor stops reading, which is
// the stream's back-pressure. The reactor finishes only when no append is
// in flight, so the log's callbacks never outlive it.
class AppendStreamReactor final : public grpc::ServerBidiReactor<pb::AppendRequest, pb::AppendResponse> {
 public:
  // `caller` holds one of its identity's concurrent calls for the
  // stream's life.
  AppendStreamReactor(LedgerService* service, log::Log* log, auth::Gate* gate, auth::Caller caller,
                      grpc::CallbackServerContext* ctx, IdleStreams* idle, Later* later)
      : service_(service), log_(log), gate_(gate), caller_(std::move(caller)), ctx_(ctx), idle_(idle), later_(later) {
    last_us_ = IdleStreams::NowUs();
    idle_->Add(ctx_, &last_us_);
    // A new policy reaches an idle stream too.
    subscription_ = gate_->Subscribe([this] {
      sync::MutexLock lock(&mu_);
      if (!finished_ && revoked_.ok()) StillAllowed();
    });
    StartRead(next_->request);
  }

  void OnReadDone(bool ok) override {
    last_us_ = IdleStreams::NowUs();
    sync::MutexLock lock(&mu_);
    if (!ok) {
      reads_done_ = true;
      MaybeFinish();
      return;
    }
    // Each batch is checked against the policy in force when it arrives.
    if (finished_ || !revoked_.ok() || !StillAllowed()) return;
    // The slot owns the request it was read into until its response is
    // written; the next read goes into a new one.
    slots_.push_back(std::exchange(next_, std::make_unique<Slot>()));
    Slot* slot = slots_.back().get();
    ++in_flight_;
    int n = slot->request->receipts_size();
    slot->screened = Screen(caller_, *slot->request);
    mu_.Unlock();
    int64_t hold_us = 0;
    absl::Status s = gate_->Spend(caller_, n, &hold_us);
    if (!s.ok() && hold_us > 0) {
      // Over the rate: answered late, and meanwhile the batch counts as in
      // flight, which slows the stream's reading.
      later_->Run(hold_us, [this, slot, n, s] {
        sync::MutexLock l(&mu_);
        FillAllFailed(n, s, slot->response);
        Complete(slot);
      });
      s = absl::OkStatus();
    } else if (s.ok()) {
      if (slot->screened.allowed.empty()) {
        mu_.Lock();
        FillResults(slot->screened, {}, slot->response);
        Complete(slot);
        mu_.Unlock();
      } else {
        s = log_->Append(caller_.identity, slot->screened.allowed, [this, slot](std::vector<sequencer::Outcome> out) {
          sync::MutexLock l(&mu_);
          FillResults(slot->screened, out, slot->response);
          Complete(slot);
        });
      }
    }
    mu_.Lock();
    if (!s.ok()) {
      FillAllFailed(n, s, slot->response);
      Complete(slot);
    }
    if (finished_ || !revoked_.ok()) return;  // no more reads
    if (in_flight_ < kMaxInFlight) {
      StartRead(next_->request);
    } else {
      read_paused_ = true;
    }
  }

  void OnWriteDone(bool ok) override {
    last_us_ = IdleStreams::NowUs();
    std::unique_ptr<Slot> written;  // freed after the lock: it holds a whole batch
    sync::MutexLock lock(&mu_);
    writing_ = false;
    written = std::move(slots_.front());
    slots_.pop_front();
    if (!ok) broken_ = true;
    if (read_paused_ && in_flight_ < kMaxInFlight && !broken_ && revoked_.ok()) {
      read_paused_ = false;
      StartRead(next_->request);
    }
    WriteNext();
    MaybeFinish();
  }

  void OnCancel() override {
    sync::MutexLock lock(&mu_);
    broken_ = true;
    MaybeFinish();
  }

  void OnDone() override {
    gate_->Unsubscribe(subscription_);
    idle_->Remove(ctx_);
    delete this;
  }

 private:
  static constexpr int kMaxInFlight = 8;

  // Whether the caller may still append under the policy in force. If not,
  // the stream reads no more, and once the batches it took are answered it
  // ends with the refusal (PERMISSION_DENIED naming the identity).
  bool StillAllowed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    gate_->Refresh(&caller_);
    absl::Status s = caller_.CheckRole(Action::kAppend);
    if (s.ok()) return true;
    revoked_ = s;
    MaybeFinish();
    return false;
  }

  // A batch's request and response live in its arena: parsing a request
  // of a thousand receipts then takes a few blocks of memory instead of an
  // allocation per string, and they are freed at once.
  struct Slot {
    google::protobuf::Arena arena{ArenaOptions()};
    pb::AppendRequest* request = google::protobuf::Arena::CreateMessage<pb::AppendRequest>(&arena);
    Screened screened;
    pb::AppendResponse* response = google::protobuf::Arena::CreateMessage<pb::AppendResponse>(&arena);
    bool ready = false;

    static google::protobuf::ArenaOptions ArenaOptions() {
      google::protobuf::ArenaOptions o;
      o.start_block_size = 16 << 10;
      o.max_block_size = 256 << 10;
      return o;
    }
  };

  void Complete(Slot* slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    service_->Count(*slot->request, *slot->response);
    slot->ready = true;
    --in_flight_;
    WriteNext();
    MaybeFinish();
  }

  void WriteNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || broken_ || slots_.empty() || !slots_.front()->ready) return;
    writing_ = true;
    StartWrite(slots_.front()->response);
  }

  void MaybeFinish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || in_flight_ > 0 || writing_) return;
    if (broken_ || ((reads_done_ || !revoked_.ok()) && slots_.empty())) {
      finished_ = true;
      Finish(broken_ ? grpc::Status::OK : ToGrpc(revoked_));
    }
  }

  LedgerService* const service_;
  log::Log* const log_;
  auth::Gate* const gate_;
  // Its identity is fixed; its policy is replaced under mu_ (Refresh).
  auth::Caller caller_;
  uint64_t subscription_ = 0;
  grpc::CallbackServerContext* const ctx_;
  IdleStreams* const idle_;
  Later* const later_;
  std::atomic<int64_t> last_us_;
  sync::Mutex mu_;
  std::unique_ptr<Slot> next_ = std::make_unique<Slot>();  // the batch being read
  std::deque<std::unique_ptr<Slot>> slots_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool read_paused_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status revoked_ ABSL_GUARDED_BY(mu_);  // not OK: the caller lost the right to append
};

}  // namespace

grpc::ServerBidiReactor<pb::AppendRequest, pb::AppendResponse>* NewAppendStream(LedgerService* service, log::Log* log,
                                                                                auth::Gate* gate, auth::Caller caller,
                                                                                grpc::CallbackServerContext* ctx,
                                                                                IdleStreams* idle, Later* later) {
  return new AppendStreamReactor(service, log, gate, std::move(caller), ctx, idle, later);
}

}  // namespace ledger::service
