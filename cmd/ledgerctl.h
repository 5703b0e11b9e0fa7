// ledgerctl's commands, by file: ledgerctl_commands.cc (the table of
// commands: what each does and reads, its help), ledgerctl.cc (the log's
// commands, export, main), ledgerctl_tls.cc (why a connection failed, when TLS options do
// not match the server), ledgerctl_query.cc (step outcomes and runs),
// ledgerctl_prove_run.cc (run-head and team-head proofs),
// ledgerctl_replication.cc (a node of a replicated shard), ledgerctl_erase.cc
// (erasing one entry's body) and
// ledgerctl_files.cc (commands on files alone).
#ifndef CMD_LEDGERCTL_H_
#define CMD_LEDGERCTL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cmd/flags.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/client_interceptor.h"
#include "ledger_service.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "query.grpc.pb.h"

namespace ledger::ctl {

namespace pb = evidence::ledger::v1;
using cmd::Flags;
using Json = nlohmann::ordered_json;

// Prints "ledgerctl: <message>"; exit code 2 for usage errors, else 1.
int Fail(const absl::Status& s);
absl::Status FromGrpc(const grpc::Status& s);

// The TLS options of a command (--tls-ca, --cert, --key); all empty for
// plain text.
struct TlsOptions {
  std::string ca, cert, key;
};
TlsOptions TlsOptionsOf(const Flags& flags);

// What to give instead, when a probe of the handshake of the server at
// `address` (util/tls/probe.h) shows that `tls` does not match what it
// speaks: "the server at A speaks TLS: give --tls-ca, --cert and --key",
// "... wants a client certificate: give --cert and --key", "... refused
// the client certificate F (TLS alert: X): ...", "... speaks plain text,
// not TLS: ..."; "" when it shows nothing wrong with them.
std::string ExplainTlsMismatch(const TlsOptions& tls, const std::string& address);

// Interceptors for a channel to `address`: a call that failed to connect
// (closed or refused in the handshake) gets INVALID_ARGUMENT with
// ExplainTlsMismatch's message instead of its status, when there is one;
// any other status is left as it is.
std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> TlsDiagnosis(
    const TlsOptions& tls, const std::string& address);

// steps: one server, or (a shard map and no --team) every shard, whose
// teams are each asked and the answers merged newest first.
int Steps(const std::vector<pb::QueryService::Stub*>& stubs, const Flags& flags);
int RunSummary(pb::QueryService::Stub& stub, const Flags& flags);
int Watch(pb::QueryService::Stub& stub, const Flags& flags);
// prove-run (ledgerctl_prove_run.cc): from the server of `stub`, or with
// --data from a stopped ledger's store (then `stub` may be null).
int ProveRun(pb::LedgerService::Stub* stub, const Flags& flags);

// prove-team (ledgerctl_prove_run.cc): a team's head proof in the team-head
// map, replayed from a stopped ledger's store (--data, --size).
int ProveTeam(const Flags& flags);
// replication (ledgerctl_replication.cc): the node's role, epoch, applied
// size and leader; on the leader, every node's lag. --json for one object.
int Replication(pb::LedgerService::Stub& stub, const Flags& flags);
// erase (ledgerctl_erase.cc): asks for, or approves, the erasure of one
// entry's body (CONTRACT section 8).
int Erase(pb::LedgerService::Stub& stub, const Flags& flags);

// ledgerctl_files.cc: on a stopped ledger's data directory (--data), a
// pack, a key file or a checkpoint; no server.
int Rebuild(const Flags& flags);
int AuditStore(const Flags& flags);
// retention-check FILE: the policy's rules, or its refusal (exit 2).
int RetentionCheck(const Flags& flags);
int Verify(const Flags& flags);
// Verifies a pack, then prints one entry's inclusion proof derived from it.
int PackProof(const Flags& flags);
int Keygen(const Flags& flags);
int PolicyCheck(const Flags& flags);

}  // namespace ledger::ctl

#endif  // CMD_LEDGERCTL_H_
