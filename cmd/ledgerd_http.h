// ledgerd's HTTP endpoints (operating.md, "HTTP endpoints"): health and
// readiness, /metrics, the checkpoint and its time note, the log as C2SP
// tlog-tiles, the maps' paths for monitors, and the dashboard.
#ifndef CMD_LEDGERD_HTTP_H_
#define CMD_LEDGERD_HTTP_H_

#include "ledger/rpc/auth/gate.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/replication/node.h"
#include "monitor/client/monitors.h"
#include "ops/dashboard.h"
#include "ops/metrics.h"
#include "tsa/client/stamper.h"
#include "util/http/http.h"
#include "witness/client/witnesses.h"

namespace ledger::cmd {

// The operators' HTTP endpoints. `dashboard` is null without projections;
// `gate` too on the plain-text health port, which serves no /metrics.
ledger::http::HttpResponse Operate(const ledger::http::HttpRequest& r, const ledger::log::Log& log,
                                   ledger::ops::Metrics* metrics, ledger::ops::Dashboard* dashboard,
                                   const ledger::auth::Gate* gate, bool stopping,
                                   const ledger::witnesses::Witnesses* witnesses = nullptr, bool tlog_public = false,
                                   const ledger::replication::Node* node = nullptr,
                                   const ledger::monitors::Monitors* monitors = nullptr,
                                   const ledger::tsa::Stamper* stamper = nullptr);

}  // namespace ledger::cmd

#endif  // CMD_LEDGERD_HTTP_H_
