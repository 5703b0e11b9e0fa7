// /metrics: the ledger's figures in the Prometheus text format (0.0.4),
// read from what each component keeps about itself (util/stats) when
// scraped.
//
//   ledger_appends_total{kind,result}        receipts by kind and result
//   ledger_append_request_receipts           histogram: receipts per request
//   ledger_commit_entries                    histogram: new entries per group commit
//   ledger_build_seconds                     histogram: the writer building one batch
//   ledger_replicate_seconds                 histogram: one batch's commit to the replicated log
//   ledger_commit_seconds                    histogram: one synced RocksDB write
//   ledger_commit_idle_seconds               histogram: the committer waiting for the next batch
//   ledger_checkpoint_seconds                histogram: signing one checkpoint at the interval
//   ledger_fsync_seconds                     histogram: each file sync RocksDB makes
//   ledger_append_queue_receipts             gauge: receipts waiting for the writer
//   ledger_tree_size                         gauge: entries in the log
//   ledger_checkpoint_tree_size              gauge: entries the latest checkpoint covers
//   ledger_checkpoint_age_seconds            gauge: since the latest checkpoint was signed
//   ledger_steps{team,state}                 gauge: steps by outcome (recounted at most every 30 s)
//   ledger_unknown_steps_declared_total      steps the sweeper declared unknown
//   ledger_sweep_failures_total              declarations that failed (per step and sweep)
//   ledger_sweep_overdue_steps               gauge: due steps the last sweep left undeclared
//   ledger_exports_total{scope,result}       evidence packs exported
//   ledger_proofs_served_total{type}         inclusion and consistency proofs served
//   ledger_store_failed                      1 when the store failed and cannot resume
//   ledger_store_memory_budget_bytes         gauge: --store-memory-mb, in bytes
//   ledger_store_cache_bytes                 gauge: what RocksDB's one cache holds (blocks,
//                                            indexes, filters, the memtables' charge)
//   ledger_store_memtable_bytes              gauge: the memtables
//   ledger_store_table_reader_bytes          gauge: table readers outside the cache
//   ledger_rpc_seconds{method}               histogram: a call's duration (a stream's life)
//   ledger_rpcs_total{method,code}           calls by method and status code ("ok" included)
//   ledger_denied_total{team,kind}           receipts appended with decision deny
//   ledger_cost_charged_micros{team}         gauge: cost charged to the team's runs, in the
//                                            projections (recounted with ledger_steps)
//   ledger_team_unknown_steps_declared_total{team}  steps the sweeper declared unknown
//   ledger_build_info{version,compiler}      1; the build's source revision and compiler
//   process_start_time_seconds, process_cpu_seconds_total, process_resident_memory_bytes,
//   process_virtual_memory_bytes, process_open_fds, process_max_fds   the process (Linux /proc)
//
// Thread-safe.
#ifndef OPS_METRICS_H_
#define OPS_METRICS_H_

#include <chrono>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "export/service/export_service.h"
#include "ledger/rpc/auth/policy.h"
#include "ledger/rpc/server/rpc_log.h"
#include "ledger/rpc/service/service.h"
#include "ledger/storage/log/log.h"
#include "query/sweeper/sweeper.h"
#include "util/sync/mutex.h"

namespace ledger::ops {

struct Sources {
  const log::Log* log = nullptr;                     // required
  const service::LedgerService* ledger = nullptr;    // required
  const exporter::ExportService* exports = nullptr;  // optional
  const query::Sweeper* sweeper = nullptr;           // optional
  const server::RpcStats* rpc = nullptr;             // optional
  bool projections = false;                          // steps can be counted
};

class Metrics {
 public:
  // Everything in `sources` MUST outlive this.
  explicit Metrics(Sources sources) : sources_(sources) {}

  std::string Render();

 private:
  using StepCounts = std::vector<std::tuple<std::string, std::string, uint64_t>>;  // team, state, n
  using TeamCosts = std::vector<std::pair<std::string, int64_t>>;                  // team, charged µ
  // Steps by team and state, and charged cost by team, from the projections
  // (recounted at most every 30 s).
  std::pair<StepCounts, TeamCosts> CountSteps();

  const Sources sources_;
  sync::Mutex mu_;
  StepCounts steps_ ABSL_GUARDED_BY(mu_);
  TeamCosts costs_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point steps_at_ ABSL_GUARDED_BY(mu_){};
};

// Whether `identity` may read /metrics, whose figures name every team: the
// metrics role, admin, or a reader or auditor of every team (with TLS; in
// plain text everyone is "local", admin). PERMISSION_DENIED naming the
// identity and the rule otherwise.
absl::Status MayScrape(const auth::Policy& policy, std::string_view identity);

}  // namespace ledger::ops

#endif  // OPS_METRICS_H_
