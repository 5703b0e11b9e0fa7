#include "monitor/client/monitors.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/note.h"
#include "util/jsonlog/jsonlog.h"

namespace ledger::monitors {
namespace {

constexpr size_t kHeldPerMonitor = 1024;

// The tree size of a time note (its third line), 0 when it has none.
uint64_t SizeOf(std::string_view note) {
  size_t first = note.find('\n');
  size_t second = first == std::string_view::npos ? first : note.find('\n', first + 1);
  size_t third = second == std::string_view::npos ? second : note.find('\n', second + 1);
  if (third == std::string_view::npos) return 0;
  uint64_t size = 0;
  for (char c : note.substr(second + 1, third - second - 1)) {
    if (c < '0' || c > '9') return 0;
    size = size * 10 + static_cast<uint64_t>(c - '0');
  }
  return size;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Monitors>> Monitors::Start(tlogpolicy::Policy policy, LatestFn latest, Post post,
                                                          Options options) {
  std::unique_ptr<Monitors> m(new Monitors(std::move(policy), std::move(latest), std::move(post), std::move(options)));
  for (const tlogpolicy::Monitor& monitor : m->policy_.monitors()) {
    if (monitor.url.empty()) continue;
    auto state = std::make_unique<State>();
    state->monitor = &monitor;
    state->id = hash::Sha256(monitor.key.vkey());
    m->states_.push_back(std::move(state));
  }
  if (m->states_.empty()) {
    return absl::InvalidArgumentError("monitors: the policy names no monitor with a URL (monitor NAME VKEY URL)");
  }
  m->thread_ = std::thread([p = m.get()] { p->Run(); });
  return m;
}

Monitors::Monitors(tlogpolicy::Policy policy, LatestFn latest, Post post, Options options)
    : policy_(std::move(policy)), latest_(std::move(latest)), post_(std::move(post)), options_(std::move(options)) {}

Monitors::~Monitors() {
  {
    sync::MutexLock lock(&stop_mu_);
    stop_ = true;
  }
  stop_cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

void Monitors::Run() {
  while (true) {
    {
      sync::MutexLock lock(&stop_mu_);
      auto deadline = sync::CondVar::Clock::now() + std::chrono::milliseconds(options_.interval_ms);
      while (!stop_ && stop_cv_.WaitUntil(&stop_mu_, deadline)) {
      }
      if (stop_) return;
    }
    auto note = latest_();
    if (!note.ok()) continue;
    for (auto& state : states_) Ask(*state, *note).IgnoreError();  // counted in its metrics, logged
  }
}

void Monitors::Hold(State& m, const std::string& note, Held held) {
  if (m.held.contains(note)) return;
  m.held.emplace(note, std::move(held));
  m.order.push_back(note);
  if (m.order.size() > kHeldPerMonitor) {
    m.held.erase(m.order.front());
    m.order.pop_front();
  }
  m.cosigned_size = std::max(m.cosigned_size, SizeOf(note));
}

absl::Status Monitors::Failed(State& m, stats::Counter& counter, absl::Status status) {
  counter.Add();
  if (m.last_error != status.message()) {
    jsonlog::Warn("monitor_failed").Str("monitor", m.monitor->name).Msg(std::string(status.message())).Emit();
    m.last_error = std::string(status.message());
  }
  return status;
}

absl::Status Monitors::Ask(State& m, const std::string& note) {
  sync::MutexLock lock(&m.mu);
  if (m.held.contains(note)) return absl::OkStatus();
  const std::string& name = m.monitor->name;
  auto reply = post_(m.monitor->url + "/cosign", note);
  if (!reply.ok())
    return Failed(m, m.unavailable, absl::UnavailableError(absl::StrCat(name, ": ", reply.status().message())));
  std::string said = reply->body.substr(0, reply->body.find('\n'));
  if (reply->status == 409) {
    return Failed(m, m.conflicts, absl::OutOfRangeError(absl::StrCat(name, ": ", said)));
  }
  if (reply->status == 422 || reply->status == 403 || reply->status == 400) {
    return Failed(m, m.refused, absl::PermissionDeniedError(absl::StrCat(name, " refused the note: ", said)));
  }
  if (reply->status != 200) {
    return Failed(m, m.unavailable, absl::UnavailableError(absl::StrCat(name, ": HTTP ", reply->status, ": ", said)));
  }
  auto time = m.monitor->key.Verify(note + reply->body);
  if (!time.ok()) {
    return Failed(m, m.refused,
                  absl::PermissionDeniedError(absl::StrCat(name,
                                                           ": its answer is not its map cosignature "
                                                           "of the note: ",
                                                           time.status().message())));
  }
  Hold(m, note, {name, *time, reply->body});
  m.cosignatures.Add();
  m.last_error.clear();
  // Kept beside the note (a failure to keep it loses nothing but that: the
  // line is held in memory, and the monitor gives it again when asked).
  if (options_.keep) {
    if (absl::Status s = options_.keep(SizeOf(note), m.id, reply->body); !s.ok()) {
      jsonlog::Warn("map_cosignature_not_kept").Str("monitor", name).Msg(std::string(s.message())).Emit();
    }
  }
  return absl::OkStatus();
}

std::vector<Held> Monitors::For(std::string_view time_note) const {
  std::vector<Held> out;
  const std::string key(time_note);
  std::optional<std::vector<std::pair<hash::Hash, std::string>>> kept;  // read once, when needed
  for (const auto& state : states_) {
    {
      sync::MutexLock lock(&state->mu);
      if (auto it = state->held.find(key); it != state->held.end()) {
        out.push_back(it->second);
        continue;
      }
    }
    // Not in memory: the line kept beside the note, verified again (it
    // is of the note of that size, which may be another note's text).
    if (!options_.kept) continue;
    if (!kept.has_value()) {
      auto read = options_.kept(SizeOf(time_note));
      if (!read.ok()) {
        jsonlog::Warn("map_cosignatures_unreadable").Msg(std::string(read.status().message())).Emit();
        return out;
      }
      kept = *std::move(read);
    }
    for (const auto& [id, line] : *kept) {
      if (id != state->id) continue;
      auto time = state->monitor->key.Verify(key + line);
      if (time.ok()) out.push_back({state->monitor->name, *time, line});
    }
  }
  return out;
}

std::string Monitors::Cosigned(std::string_view time_note) const {
  std::string out(time_note);
  for (const Held& h : For(time_note)) out += h.line;
  return out;
}

absl::StatusOr<std::string> Monitors::CosignedWithQuorum(std::string_view time_note, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  const std::string note(time_note);
  while (true) {
    std::string cosigned = Cosigned(note);
    auto evaluation = policy_.EvaluateMonitors(cosigned);
    if (!evaluation.ok()) return evaluation.status();
    if (evaluation->quorum) return cosigned;
    // Ask the monitors that lack a line; stop early when each of them
    // answered that it will not cosign this note.
    std::vector<std::string> answers;
    bool may_yet = false, asked_ok = false;
    for (auto& state : states_) {
      if (std::find(evaluation->missing.begin(), evaluation->missing.end(), state->monitor->name) ==
          evaluation->missing.end()) {
        continue;
      }
      absl::Status asked = Ask(*state, note);
      if (asked.ok()) {
        asked_ok = true;
        continue;
      }
      answers.push_back(std::string(asked.message()));
      may_yet = may_yet || absl::IsUnavailable(asked);
    }
    // A policy monitor without a URL is never asked.
    if (answers.empty() && !may_yet) may_yet = true;
    if (asked_ok) continue;  // a line came: evaluate again at once
    if (!may_yet || std::chrono::steady_clock::now() >= deadline) {
      return absl::UnavailableError(absl::StrCat(
          "the time note of size ", SizeOf(note), " lacks the monitor quorum ", policy_.monitor_quorum(), " after ",
          wait.count(), " ms: no map cosignature from ", absl::StrJoin(evaluation->missing, ", "),
          answers.empty() ? "" : absl::StrCat(" (", absl::StrJoin(answers, "; "), ")")));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string Monitors::RenderMetrics() const {
  std::string total =
      "# HELP ledger_map_cosignatures_total Map cosignatures received from each monitor.\n"
      "# TYPE ledger_map_cosignatures_total counter\n";
  std::string failures =
      "# HELP ledger_map_cosign_failures_total Requests to a monitor that brought no cosignature, by reason.\n"
      "# TYPE ledger_map_cosign_failures_total counter\n";
  std::string size =
      "# HELP ledger_map_cosigned_tree_size Tree size of the latest time note each monitor cosigned.\n"
      "# TYPE ledger_map_cosigned_tree_size gauge\n";
  for (const auto& state : states_) {
    const std::string& name = state->monitor->name;
    absl::StrAppend(&total, "ledger_map_cosignatures_total{monitor=\"", name, "\"} ", state->cosignatures.value(),
                    "\n");
    for (auto [reason, n] :
         {std::pair{"conflict", state->conflicts.value()}, std::pair{"refused", state->refused.value()},
          std::pair{"unavailable", state->unavailable.value()}}) {
      absl::StrAppend(&failures, "ledger_map_cosign_failures_total{monitor=\"", name, "\",reason=\"", reason, "\"} ", n,
                      "\n");
    }
    sync::MutexLock lock(&state->mu);
    absl::StrAppend(&size, "ledger_map_cosigned_tree_size{monitor=\"", name, "\"} ", state->cosigned_size, "\n");
  }
  return total + failures + size;
}

}  // namespace ledger::monitors
