// Per-identity limits: a rate (a token bucket refilled at `rate` units a
// second, holding at most one second's worth) and a concurrency cap (calls
// and streams open at once). Appends spend one unit per receipt, other
// calls one unit each. Exceeding either is RESOURCE_EXHAUSTED, which a
// client retries after backing off: one identity's flood spends its own
// budget, not the others'.
//
// Thread-safe.
#ifndef LEDGER_RPC_AUTH_LIMITER_H_
#define LEDGER_RPC_AUTH_LIMITER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "util/sync/mutex.h"

namespace ledger::auth {

class Limiter {
 public:
  struct Options {
    double rate = 0;      // units a second per identity; 0: unlimited
    int concurrency = 0;  // calls open at once per identity; 0: unlimited
  };
  // Monotonic microseconds; tests pass their own.
  using Clock = std::function<int64_t()>;

  explicit Limiter(Options options, Clock clock = nullptr);
  ~Limiter();

  // Holds one of the identity's concurrent calls until destroyed.
  class Permit {
   public:
    Permit() = default;
    Permit(Permit&& other) noexcept { *this = std::move(other); }
    Permit& operator=(Permit&& other) noexcept;
    ~Permit() { Release(); }

   private:
    friend class Limiter;
    void Release();
    Limiter* limiter_ = nullptr;
    std::string identity_;
  };

  // A refused caller should hear so only after this long (at most): the
  // time until its bucket could pay, or kBusyHoldUs when it has too many
  // calls open. Answering at once would let a flooder spend the server's
  // time on refusals as fast as it can send.
  static constexpr int64_t kBusyHoldUs = 100'000;
  static constexpr int64_t kMaxHoldUs = 1'000'000;

  // RESOURCE_EXHAUSTED naming the limit when `identity` has `concurrency`
  // calls open already; sets *hold_us (when given) to kBusyHoldUs.
  absl::StatusOr<Permit> Enter(std::string_view identity, int64_t* hold_us = nullptr);
  // RESOURCE_EXHAUSTED naming the limit when the identity's bucket holds
  // fewer than min(cost, rate) units; sets *hold_us (when given) to the
  // time until it would, at most kMaxHoldUs. A cost above one second's
  // worth is admitted only from a full bucket, and leaves it in debt.
  absl::Status Spend(std::string_view identity, int64_t cost, int64_t* hold_us = nullptr);

  const Options& options() const { return options_; }

 private:
  struct State {
    int open = 0;
    double tokens = 0;
    int64_t refilled_us = 0;
    bool fresh = true;
  };
  void Leave(const std::string& identity);

  const Options options_;
  const Clock clock_;
  sync::Mutex mu_;
  std::map<std::string, State, std::less<>> states_ ABSL_GUARDED_BY(mu_);
};

}  // namespace ledger::auth

#endif  // LEDGER_RPC_AUTH_LIMITER_H_
