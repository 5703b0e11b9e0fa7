#include "ledger/rpc/auth/limiter.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"

namespace ledger::auth {
namespace {

int64_t SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Limiter::Limiter(Options options, Clock clock)
    : options_(options), clock_(clock ? std::move(clock) : Clock(SteadyMicros)) {}

Limiter::~Limiter() = default;

Limiter::Permit& Limiter::Permit::operator=(Permit&& other) noexcept {
  if (this != &other) {
    Release();
    limiter_ = other.limiter_;
    identity_ = std::move(other.identity_);
    other.limiter_ = nullptr;
  }
  return *this;
}

void Limiter::Permit::Release() {
  if (limiter_ != nullptr) limiter_->Leave(identity_);
  limiter_ = nullptr;
}

absl::StatusOr<Limiter::Permit> Limiter::Enter(std::string_view identity, int64_t* hold_us) {
  Permit p;
  if (options_.concurrency <= 0) return p;
  sync::MutexLock lock(&mu_);
  auto it = states_.find(identity);
  if (it == states_.end()) it = states_.emplace(std::string(identity), State{}).first;
  if (it->second.open >= options_.concurrency) {
    if (hold_us != nullptr) *hold_us = kBusyHoldUs;
    return absl::ResourceExhaustedError(absl::StrCat("identity '", std::string(identity), "' has ",
                                                     options_.concurrency,
                                                     " calls open, its limit; retry when one ends"));
  }
  ++it->second.open;
  p.limiter_ = this;
  p.identity_ = std::string(identity);
  return p;
}

void Limiter::Leave(const std::string& identity) {
  sync::MutexLock lock(&mu_);
  auto it = states_.find(identity);
  if (it != states_.end() && it->second.open > 0) --it->second.open;
}

absl::Status Limiter::Spend(std::string_view identity, int64_t cost, int64_t* hold_us) {
  if (options_.rate <= 0) return absl::OkStatus();
  int64_t now = clock_();
  sync::MutexLock lock(&mu_);
  auto it = states_.find(identity);
  if (it == states_.end()) it = states_.emplace(std::string(identity), State{}).first;
  State& s = it->second;
  if (s.fresh) {
    s.fresh = false;
    s.tokens = options_.rate;
  } else {
    double refill = static_cast<double>(now - s.refilled_us) * options_.rate / 1e6;
    s.tokens = std::min(options_.rate, s.tokens + std::max(0.0, refill));
  }
  s.refilled_us = now;
  double need = std::min(static_cast<double>(cost), options_.rate);
  if (s.tokens < need) {
    if (hold_us != nullptr) {
      double wait_us = (need - s.tokens) * 1e6 / options_.rate;
      *hold_us = std::min<int64_t>(kMaxHoldUs, static_cast<int64_t>(wait_us) + 1);
    }
    return absl::ResourceExhaustedError(absl::StrCat("identity '", std::string(identity), "' is over its rate of ",
                                                     options_.rate,
                                                     " receipts and calls a second; back off and retry"));
  }
  s.tokens -= static_cast<double>(cost);
  return absl::OkStatus();
}

}  // namespace ledger::auth
