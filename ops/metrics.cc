#include "ops/metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "query.pb.h"

#ifndef LEDGER_REVISION
#define LEDGER_REVISION "unknown"
#endif

namespace ledger::ops {
namespace {

// The shortest text that reads back as `v`.
std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "NaN";
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

// A histogram's samples; `labels` ("k=\"v\",") go before le.
void HistogramLines(std::string* out, std::string_view name, const std::string& labels,
                    const stats::Histogram::Snapshot& s, double scale = 1) {
  const std::string n(name);
  for (size_t i = 0; i < s.bounds.size(); ++i) {
    absl::StrAppend(out, n, "_bucket{", labels, "le=\"", Number(s.bounds[i] * scale), "\"} ", s.cumulative[i], "\n");
  }
  std::string plain = labels.empty() ? "" : absl::StrCat("{", labels.substr(0, labels.size() - 1), "}");
  absl::StrAppend(out, n, "_bucket{", labels, "le=\"+Inf\"} ", s.count, "\n", n, "_sum", plain, " ",
                  Number(s.sum * scale), "\n", n, "_count", plain, " ", s.count, "\n");
}

// `scale` converts the recorded unit (e.g. microseconds) to the exposed one.
void Histogram(std::string* out, std::string_view name, std::string_view help, const stats::Histogram& h,
               double scale = 1) {
  Head(out, name, "histogram", help);
  HistogramLines(out, name, "", h.Read(), scale);
}

// The process's own figures, from /proc (Linux), as Prometheus' clients name
// them; and what was built.
void Process(std::string* out) {
  Head(out, "ledger_build_info", "gauge", "1, labelled with the build's source revision and compiler.");
  absl::StrAppend(out, "ledger_build_info", Labels({"version", "compiler"}, {LEDGER_REVISION, __VERSION__}), " 1\n");
  std::ifstream stat("/proc/self/stat");
  std::string line;
  std::getline(stat, line);
  size_t close = line.rfind(')');
  if (close == std::string::npos) return;
  std::vector<std::string> f = absl::StrSplit(line.substr(close + 2), ' ');  // f[0] is field 3 (state)
  if (f.size() < 22) return;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  double boot = 0;
  std::ifstream procstat("/proc/stat");
  for (std::string l; std::getline(procstat, l);) {
    if (l.rfind("btime ", 0) == 0) boot = std::stod(l.substr(6));
  }
  Gauge(out, "process_start_time_seconds", "Start time of the process since the epoch, in seconds.",
        boot + std::stod(f[19]) / tick);
  Head(out, "process_cpu_seconds_total", "counter", "User and system CPU time spent, in seconds.");
  absl::StrAppend(out, "process_cpu_seconds_total ", Number((std::stod(f[11]) + std::stod(f[12])) / tick), "\n");
  Gauge(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.", std::stod(f[20]));
  Gauge(out, "process_resident_memory_bytes", "Resident memory size in bytes.", std::stod(f[21]) * page);
  std::error_code ec;
  double fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::end(it);
       it.increment(ec)) {
    ++fds;
  }
  Gauge(out, "process_open_fds", "Open file descriptors.", fds);
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    Gauge(out, "process_max_fds", "The limit of open file descriptors.", static_cast<double>(limit.rlim_cur));
  }
}

}  // namespace

std::pair<Metrics::StepCounts, Metrics::TeamCosts> Metrics::CountSteps() {
  sync::MutexLock lock(&mu_);
  auto now = std::chrono::steady_clock::now();
  if (steps_at_ != std::chrono::steady_clock::time_point{} && now - steps_at_ < std::chrono::seconds(30)) {
    return {steps_, costs_};
  }
  std::map<std::string, int64_t> costs;
  const log::LogView view = sources_.log->View();
  absl::Status runs =
      view.ScanProjection(projection::Table::kRuns, "", "\x80", false, [&](std::string_view, std::string_view value) {
        evidence::ledger::v1::Run run;
        if (run.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
          costs[run.team()] += run.charged_cost_micros();
        }
        return true;
      });
  costs_.assign(runs.ok() ? costs.begin() : costs.end(), costs.end());
  // State index rows: 'S', team length, team, state byte, time, step key.
  std::map<std::pair<std::string, int>, uint64_t> counts;
  absl::Status s =
      view.ScanProjection(projection::Table::kIndex, "S", "T", false, [&](std::string_view key, std::string_view) {
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
  return {steps_, costs_};
}

std::string Metrics::Render() {
  std::string out;
  const log::Log& log = *sources_.log;
  const log::LogView view = log.View();  // the store's health and memory
  const service::LedgerService::Stats& ledger = sources_.ledger->stats();
  Family(&out, "ledger_appends_total", "Receipts by kind and result (ok, duplicate, or the refusal's code).",
         {"kind", "result"}, ledger.appends);
  Histogram(&out, "ledger_append_request_receipts", "Receipts per append request.", ledger.request_receipts);
  if (const sequencer::Sequencer::Stats* seq = log.sequencer_stats()) {
    Histogram(&out, "ledger_commit_entries", "New entries per group commit.", seq->batch_entries);
    Histogram(&out, "ledger_build_seconds",
              "Time the writer took to build one batch (seqs, leaves, chains, tree nodes, projections).", seq->build_us,
              1e-6);
    Histogram(&out, "ledger_replicate_seconds",
              "Duration of one batch's commit to the replicated log (--replication: the fence, the leaves and the "
              "notification in one PostgreSQL transaction, the synchronous standby's wait), before its RocksDB write.",
              seq->replicate_us, 1e-6);
    Histogram(&out, "ledger_commit_seconds", "Duration of one synced RocksDB write (a group commit).", seq->commit_us,
              1e-6);
    Histogram(&out, "ledger_commit_idle_seconds", "Time the committer waited for the writer's next batch.",
              seq->idle_us, 1e-6);
  }
  Histogram(&out, "ledger_checkpoint_seconds",
            "Duration of signing one checkpoint at the interval (maps, signature, the replicated log's and the "
            "store's copies).",
            log.checkpoint_us(), 1e-6);
  Histogram(&out, "ledger_fsync_seconds", "Duration of each file sync the store makes.", view.sync_us(), 1e-6);
  Gauge(&out, "ledger_append_queue_receipts", "Receipts queued for the writer.", static_cast<double>(log.queued()));
  Gauge(&out, "ledger_tree_size", "Entries in the log.", static_cast<double>(log.head().size));
  auto [cp_size, cp_at_us] = log.LatestCheckpointTime();
  Gauge(&out, "ledger_checkpoint_tree_size", "Entries the latest signed checkpoint covers.",
        static_cast<double>(cp_size));
  if (cp_at_us > 0) {
    Gauge(&out, "ledger_checkpoint_age_seconds", "Seconds since the latest checkpoint was signed (or found at start).",
          static_cast<double>(sequencer::SystemClockMicros() - cp_at_us) / 1e6);
  }
  if (sources_.projections) {
    auto [steps, costs] = CountSteps();
    Head(&out, "ledger_steps", "gauge", "Steps by team and outcome (recounted at most every 30 s).");
    for (const auto& [team, state, n] : steps) {
      absl::StrAppend(&out, "ledger_steps", Labels({"team", "state"}, {team, state}), " ", n, "\n");
    }
    Head(&out, "ledger_cost_charged_micros", "gauge",
         "Cost charged to the team's runs, in micro-units: a failed or unknown step at least its reserved cost "
         "(recounted at most every 30 s).");
    for (const auto& [team, micros] : costs) {
      absl::StrAppend(&out, "ledger_cost_charged_micros", Labels({"team"}, {team}), " ", micros, "\n");
    }
  }
  Family(&out, "ledger_denied_total", "Receipts appended with decision deny, by team and kind.", {"team", "kind"},
         sources_.ledger->stats().denied);
  if (sources_.sweeper != nullptr) {
    Head(&out, "ledger_unknown_steps_declared_total", "counter", "Steps declared unknown since start.");
    absl::StrAppend(&out, "ledger_unknown_steps_declared_total ", sources_.sweeper->declared(), "\n");
    Family(&out, "ledger_team_unknown_steps_declared_total", "Steps declared unknown since start, by team.", {"team"},
           sources_.sweeper->declared_by_team());
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
        view.failure().ok() ? 0 : 1);
  const store::Memory memory = view.MemoryUse();
  Gauge(&out, "ledger_store_memory_budget_bytes",
        "What the store's RocksDB may hold in its cache, memtables included (--store-memory-mb).",
        static_cast<double>(memory.budget));
  Gauge(&out, "ledger_store_cache_bytes",
        "What the store's cache holds: blocks, indexes, filters and the memtables' charge.",
        static_cast<double>(memory.cache));
  Gauge(&out, "ledger_store_memtable_bytes", "The store's memtables (charged to its cache).",
        static_cast<double>(memory.memtables));
  Gauge(&out, "ledger_store_table_reader_bytes",
        "Memory the store's table readers hold outside the cache (top-level indexes and filters).",
        static_cast<double>(memory.table_readers));
  if (sources_.rpc != nullptr) {
    Head(&out, "ledger_rpc_seconds", "histogram", "Duration of gRPC calls (of a stream: its whole life), by method.");
    for (const auto& [labels, snapshot] : sources_.rpc->seconds.Read()) {
      HistogramLines(&out, "ledger_rpc_seconds", absl::StrCat("method=\"", LabelValue(labels[0]), "\","), snapshot);
    }
    Family(&out, "ledger_rpcs_total", "gRPC calls by method and status code.", {"method", "code"}, sources_.rpc->calls);
  }
  Process(&out);
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
