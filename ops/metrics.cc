#include "ops/metrics.h"

#include <cmath>
#include <cstdio>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "query.pb.h"

namespace ledger::ops {
namespace {

std::string Number(double v) {
  if (std::isinf(v)) return "+Inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string LabelValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

std::string Labels(const std::vector<std::string>& names, const std::vector<std::string>& values) {
  std::string out = "{";
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", names[i], "=\"", LabelValue(values[i]), "\"");
  }
  return out + "}";
}

void Head(std::string* out, std::string_view name, std::string_view type, std::string_view help) {
  absl::StrAppend(out, "# HELP ", std::string(name), " ", std::string(help), "\n# TYPE ", std::string(name), " ",
                  std::string(type), "\n");
}

void Gauge(std::string* out, std::string_view name, std::string_view help, double v) {
  Head(out, name, "gauge", help);
  absl::StrAppend(out, std::string(name), " ", Number(v), "\n");
}

void Family(std::string* out, std::string_view name, std::string_view help, const std::vector<std::string>& labels,
            const stats::CounterFamily& family) {
  Head(out, name, "counter", help);
  for (const auto& [values, n] : family.Read()) {
    absl::StrAppend(out, std::string(name), Labels(labels, values), " ", n, "\n");
  }
}

// `scale` converts the recorded unit (e.g. microseconds) to the exposed one.
void Histogram(std::string* out, std::string_view name, std::string_view help, const stats::Histogram& h,
               double scale = 1) {
  Head(out, name, "histogram", help);
  stats::Histogram::Snapshot s = h.Read();
  for (size_t i = 0; i < s.bounds.size(); ++i) {
    absl::StrAppend(out, std::string(name), "_bucket{le=\"", Number(s.bounds[i] * scale), "\"} ", s.cumulative[i],
                    "\n");
  }
  absl::StrAppend(out, std::string(name), "_bucket{le=\"+Inf\"} ", s.count, "\n", std::string(name), "_sum ",
                  Number(s.sum * scale), "\n", std::string(name), "_count ", s.count, "\n");
}

}  // namespace

Metrics::StepCounts Metrics::CountSteps() {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (steps_at_ != std::chrono::steady_clock::time_point{} && now - steps_at_ < std::chrono::seconds(30)) {
    return steps_;
  }
  // State index rows: 'S', team length, team, state byte, time, step key.
  std::map<std::pair<std::string, int>, uint64_t> counts;
  absl::Status s = sources_.log->store().ScanProjection(
      projection::Table::kIndex, "S", "T", false, [&](std::string_view key, std::string_view) {
        if (key.size() < 3) return true;
        size_t n = static_cast<unsigned char>(key[1]);
        if (key.size() < 3 + n) return true;
        ++counts[{std::string(key.substr(2, n)), static_cast<unsigned char>(key[2 + n])}];
        return true;
      });
  steps_.clear();
  if (s.ok()) {
    for (const auto& [k, n] : counts) {
      std::string state = evidence::ledger::v1::StepState_Name(static_cast<evidence::ledger::v1::StepState>(k.second));
      if (state.rfind("STEP_STATE_", 0) == 0) state = state.substr(11);
      steps_.emplace_back(k.first, absl::AsciiStrToLower(state), n);
    }
  }
  steps_at_ = now;
  return steps_;
}

std::string Metrics::Render() {
  std::string out;
  const log::Log& log = *sources_.log;
  const service::LedgerService::Stats& ledger = sources_.ledger->stats();
  Family(&out, "ledger_appends_total", "Receipts by kind and result (ok, duplicate, or the refusal's code).",
         {"kind", "result"}, ledger.appends);
  Histogram(&out, "ledger_append_request_receipts", "Receipts per append request.", ledger.request_receipts);
  if (const sequencer::Sequencer::Stats* seq = log.sequencer_stats()) {
    Histogram(&out, "ledger_commit_entries", "New entries per group commit.", seq->batch_entries);
    Histogram(&out, "ledger_commit_seconds", "Duration of one synced RocksDB write (a group commit).",
              seq->commit_us, 1e-6);
  }
  Histogram(&out, "ledger_fsync_seconds", "Duration of each file sync the store makes.", log.store().sync_us(),
            1e-6);
  Gauge(&out, "ledger_append_queue_receipts", "Receipts queued for the writer.", static_cast<double>(log.queued()));
  Gauge(&out, "ledger_tree_size", "Entries in the log.", static_cast<double>(log.head().size));
  auto [cp_size, cp_at_us] = log.LatestCheckpointTime();
  Gauge(&out, "ledger_checkpoint_tree_size", "Entries the latest signed checkpoint covers.",
        static_cast<double>(cp_size));
  if (cp_at_us > 0) {
    Gauge(&out, "ledger_checkpoint_age_seconds",
          "Seconds since the latest checkpoint was signed (or found at start).",
          static_cast<double>(sequencer::SystemClockMicros() - cp_at_us) / 1e6);
  }
  if (sources_.projections) {
    Head(&out, "ledger_steps", "gauge", "Steps by team and outcome (recounted at most every 30 s).");
    for (const auto& [team, state, n] : CountSteps()) {
      absl::StrAppend(&out, "ledger_steps", Labels({"team", "state"}, {team, state}), " ", n, "\n");
    }
  }
  if (sources_.sweeper != nullptr) {
    Head(&out, "ledger_unknown_steps_declared_total", "counter", "Steps declared unknown since start.");
    absl::StrAppend(&out, "ledger_unknown_steps_declared_total ", sources_.sweeper->declared(), "\n");
    Head(&out, "ledger_sweep_failures_total", "counter",
         "Declarations of due steps that failed (one per step and sweep); each step is logged once.");
    absl::StrAppend(&out, "ledger_sweep_failures_total ", sources_.sweeper->failures(), "\n");
    Head(&out, "ledger_sweep_overdue_steps", "gauge",
         "Due steps the last sweep could not declare unknown: anything above 0 needs an operator.");
    absl::StrAppend(&out, "ledger_sweep_overdue_steps ", sources_.sweeper->overdue(), "\n");
  }
  if (sources_.exports != nullptr) {
    Family(&out, "ledger_exports_total", "Evidence packs exported, by scope and result.", {"scope", "result"},
           sources_.exports->exports());
  }
  Family(&out, "ledger_proofs_served_total", "Proofs served, by type.", {"type"}, ledger.proofs);
  Gauge(&out, "ledger_store_failed", "1 when the store failed in a way it cannot resume from.",
        log.store().failure().ok() ? 0 : 1);
  return out;
}

absl::Status MayScrape(const auth::Policy& policy, std::string_view identity) {
  const auth::Rule* rule = policy.Find(identity);
  if (rule != nullptr && rule->Permits(auth::Action::kScrapeMetrics)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("identity '", std::string(identity),
                                                  "' may not scrape /metrics (the metrics role, admin, or a reader "
                                                  "or auditor of every team may)"));
}

}  // namespace ledger::ops
