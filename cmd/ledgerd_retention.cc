#include "cmd/ledgerd_retention.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "ledger/format/retention/policy.h"
#include "util/files/files.h"
#include "util/jsonlog/jsonlog.h"
#include "util/sync/mutex.h"

namespace ledger::cmd {

class Retention {
 public:
  Retention(retention::Policy policy, std::chrono::seconds interval, log::Log* log)
      : policy_(std::move(policy)), interval_(interval), log_(log), thread_([this] { Run(); }) {}
  ~Retention() {
    {
      sync::MutexLock lock(&mu_);
      stopping_ = true;
      cv_.SignalAll();
    }
    thread_.join();
  }

 private:
  void Run() {
    while (true) {
      Pass();
      sync::MutexLock lock(&mu_);
      const auto until = std::chrono::steady_clock::now() + interval_;
      while (!stopping_ && cv_.WaitUntil(&mu_, until)) {
      }
      if (stopping_) return;
    }
  }

  void Pass() {
    const auto start = std::chrono::steady_clock::now();
    auto done = log_->Prune(policy_);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!done.ok()) {
      jsonlog::Error("retention_failed")
          .Msg(absl::StrCat("retention pass: ", done.status().ToString(),
                            " (the next pass, or the next start, finishes what it began)"))
          .Emit();
      return;
    }
    std::string lines;
    for (const auto& r : done->rules) {
      absl::StrAppend(&lines, lines.empty() ? "" : "; ", r.team.empty() ? "default" : "team " + r.team, " below seq ",
                      r.below_seq);
    }
    if (done->pass == 0) {
      jsonlog::Info("retention_unchanged")
          .Msg(absl::StrCat("retention: no line moved (", lines.empty() ? "no pass yet" : lines, ")"))
          .Emit();
      return;
    }
    jsonlog::Info("retention_pass")
        .Int("pass", static_cast<int64_t>(done->pass))
        .Int("pruned", static_cast<int64_t>(done->pruned))
        .Msg(absl::StrCat("retention pass ", done->pass, ": ", done->pruned, " entries pruned in ",
                          absl::StrCat(static_cast<int64_t>(seconds * 1000)), " ms (", lines, ")"))
        .Emit();
  }

  const retention::Policy policy_;
  const std::chrono::seconds interval_;
  log::Log* const log_;
  sync::Mutex mu_;
  sync::CondVar cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: it starts once the rest is set
};

absl::StatusOr<std::shared_ptr<Retention>> StartRetention(const Flags& flags, const LedgerdConfig& config,
                                                          log::Log* log) {
  const std::string& path = flags.Get("retention-policy");
  if (path.empty()) return std::shared_ptr<Retention>();
  auto text = files::ReadFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(), absl::StrCat("--retention-policy: ", text.status().message()));
  }
  auto policy = retention::Policy::Parse(*text);
  if (!policy.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--retention-policy: ", path, ": ", policy.status().message()));
  }
  return std::make_shared<Retention>(*std::move(policy), std::chrono::seconds(config.retention_interval_s), log);
}

}  // namespace ledger::cmd
