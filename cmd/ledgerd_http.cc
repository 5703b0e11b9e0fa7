#include "cmd/ledgerd_http.h"

#include "absl/strings/str_cat.h"
#include "ops/tiles/tiles.h"

namespace ledger::cmd {

ledger::http::HttpResponse Operate(const ledger::http::HttpRequest& r, const ledger::log::Log& log,
                                   ledger::ops::Metrics* metrics, ledger::ops::Dashboard* dashboard,
                                   const ledger::auth::Gate* gate, bool stopping,
                                   const ledger::witnesses::Witnesses* witnesses, bool tlog_public,
                                   const ledger::replication::Node* node, const ledger::monitors::Monitors* monitors,
                                   const ledger::tsa::Stamper* stamper) {
  using ledger::http::Text;
  if (r.path == "/healthz") return Text(200, "ok\n");
  if (r.path == "/readyz" || r.path == "/readyz/leader") {
    if (stopping) return Text(503, "stopping\n");
    if (absl::Status failed = log.View().failure(); !failed.ok())
      return Text(503, absl::StrCat("store failed: ", failed.message(), "\n"));
    if (!log.integrity().ok()) return Text(503, absl::StrCat("appends refused: ", log.integrity().message(), "\n"));
    if (node == nullptr) return Text(200, "ready\n");
    // Replicated: /readyz for reads (every node that follows or leads),
    // /readyz/leader for appends (the leader only).
    const auto st = node->state();
    if (st.role == ledger::replication::Role::kLeader) {
      return Text(200, absl::StrCat("ready: leader, epoch ", st.epoch, "; appends and reads\n"));
    }
    if (st.role == ledger::replication::Role::kFollower && r.path == "/readyz") {
      return Text(200, absl::StrCat("ready: follower, applied ", st.applied, " of ", st.fence_size, "; reads only; ",
                                    st.leader_address.empty() ? std::string("no leader known")
                                                              : absl::StrCat("appends go to ", st.leader_address),
                                    "\n"));
    }
    return Text(
        503, absl::StrCat("not ready for ", r.path == "/readyz" ? "reads" : "appends", ": ",
                          ledger::replication::RoleName(st.role),
                          st.failure.empty() ? "" : absl::StrCat(" (", st.failure, ")"),
                          st.leader_address.empty() ? "" : absl::StrCat("; the leader is ", st.leader_address), "\n"));
  }
  if (metrics == nullptr) return Text(404, "not found: /healthz, /readyz\n");
  if (r.path == "/metrics") {
    if (gate != nullptr && gate->tls()) {
      if (absl::Status s = ledger::ops::MayScrape(*gate->policy(), r.identity); !s.ok()) {
        return Text(403, absl::StrCat(s.message(), "\n"));
      }
    }
    ledger::http::HttpResponse m =
        Text(200, metrics->Render() + (witnesses ? witnesses->RenderMetrics() : "") +
                      (monitors ? monitors->RenderMetrics() : "") + (stamper ? stamper->RenderMetrics() : "") +
                      (node ? node->RenderMetrics() : ""));
    m.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return m;
  }
  if (r.path == "/checkpoint" || r.path == "/checkpoint/time-note") {
    // The latest checkpoint with the witnesses' cosignatures held for it:
    // what every verifier and witness is given, to any verified client;
    // and its checkpoint-time note, which monitors check and cosign.
    if (gate != nullptr && gate->tls() && r.identity.empty()) {
      return Text(403, "client certificate: names no identity\n");
    }
    auto cp = log.Checkpoint(0);
    if (!cp.ok()) return Text(404, "no checkpoint signed yet\n");
    if (r.path == "/checkpoint") return Text(200, witnesses ? witnesses->Cosigned(cp->note) : cp->note);
    if (cp->time_note.empty()) return Text(404, "the latest checkpoint has no time note\n");
    return Text(200, monitors ? monitors->Cosigned(cp->time_note) : cp->time_note);
  }
  if (r.path.rfind("/map/", 0) == 0) {
    auto policy = gate != nullptr && gate->tls() ? gate->policy() : nullptr;
    return ledger::ops::tiles::ServeMapProof(r, log, {policy.get(), tlog_public});
  }
  if (r.path.rfind("/tlog/", 0) == 0) {
    // The log as C2SP tlog-tiles, bounded by the latest checkpoint (ops/tiles/tiles.h).
    const ledger::log::LogView view = log.View();
    const std::string& note = view.checkpoint().note;
    if (note.empty()) return Text(404, "no checkpoint signed yet\n");
    auto policy = gate != nullptr && gate->tls() ? gate->policy() : nullptr;
    return ledger::ops::tiles::Serve(r, view, witnesses ? witnesses->Cosigned(note) : note,
                                     {policy.get(), tlog_public});
  }
  if (dashboard == nullptr) return Text(404, "no dashboard: ledgerd runs with --projections=false\n");
  return dashboard->Handle(r);
}

}  // namespace ledger::cmd
