// ledgerctl replication: a node's place in its replicated shard.
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cmd/ledgerctl.h"

namespace ledger::ctl {

int Replication(pb::LedgerService::Stub& stub, const Flags& flags) {
  grpc::ClientContext ctx;
  pb::Replication r;
  grpc::Status s = stub.GetReplication(&ctx, pb::GetReplicationRequest(), &r);
  if (!s.ok()) return Fail(FromGrpc(s));
  if (flags.Bool("json")) {
    Json nodes = Json::array();
    for (const auto& n : r.nodes()) {
      nodes.push_back({{"node_id", n.node_id()},
                       {"address", n.address()},
                       {"applied_size", n.applied_size()},
                       {"lag_entries", r.applied_size() > n.applied_size() ? r.applied_size() - n.applied_size() : 0},
                       {"seconds_since_report", n.seconds_since_report()}});
    }
    std::cout << Json{{"replicated", r.replicated()},
                      {"node_id", r.node_id()},
                      {"role", r.role()},
                      {"epoch", r.epoch()},
                      {"applied_size", r.applied_size()},
                      {"shard_size", r.shard_size()},
                      {"leader", r.leader()},
                      {"leader_address", r.leader_address()},
                      {"failure", r.failure()},
                      {"takeovers", r.takeovers()},
                      {"nodes", nodes}}
                     .dump()
              << "\n";
    return 0;
  }
  if (!r.replicated()) {
    std::cout << "a single node (no --replication): " << r.applied_size() << " entries\n";
    return 0;
  }
  std::cout << "node " << r.node_id() << ": " << r.role() << ", epoch " << r.epoch() << ", applied " << r.applied_size()
            << " of " << r.shard_size() << "\n";
  if (!r.failure().empty()) std::cout << "stopped: " << r.failure() << "\n";
  std::cout << "leader: "
            << (r.leader_address().empty() ? std::string("none known")
                                           : absl::StrCat(r.leader(), " at ", r.leader_address()))
            << "\n";
  for (const auto& n : r.nodes()) {
    std::cout << "  " << n.node_id() << " (" << n.address() << "): applied " << n.applied_size() << ", behind by "
              << (r.applied_size() > n.applied_size() ? r.applied_size() - n.applied_size() : 0) << ", reported "
              << static_cast<int64_t>(n.seconds_since_report() * 1000) << " ms ago\n";
  }
  return 0;
}

}  // namespace ledger::ctl
