// Appending, shared by the unary and streamed calls of the LedgerService:
// which receipts of a request the caller may append, the response's results
// in request order, and the append stream's reactor. Inside ledger_service.
#ifndef LEDGER_RPC_SERVICE_INTERNAL_APPEND_H_
#define LEDGER_RPC_SERVICE_INTERNAL_APPEND_H_

#include <vector>

#include "absl/status/status.h"
#include "ledger/rpc/auth/gate.h"
#include "ledger/rpc/server/timers.h"
#include "ledger/rpc/service/service.h"
#include "ledger/storage/log/log.h"

namespace ledger::service {

// The receipts of a request that the caller may append, and why each other
// one may not. A receipt without a team passes here and is refused by
// validation.
struct Screened {
  std::vector<const receipt::Receipt*> allowed;
  std::vector<absl::Status> denied;  // by request index; OK when allowed
};

// Pointers into `request`, which MUST outlive the append.
Screened Screen(const auth::Caller& caller, const pb::AppendRequest& request);

// One result per receipt of the request, in its order: the denied ones'
// refusals between the outcomes of the allowed ones.
void FillResults(const Screened& screened, const std::vector<sequencer::Outcome>& outcomes, pb::AppendResponse* out);

// Every receipt of a request failed with the same status (stream mode).
void FillAllFailed(int n, const absl::Status& s, pb::AppendResponse* out);

// The reactor of one AppendStream call. `caller` holds one of its
// identity's concurrent calls for the stream's life.
grpc::ServerBidiReactor<pb::AppendRequest, pb::AppendResponse>* NewAppendStream(LedgerService* service, log::Log* log,
                                                                                auth::Gate* gate, auth::Caller caller,
                                                                                grpc::CallbackServerContext* ctx,
                                                                                server::IdleStreams* idle,
                                                                                server::Later* later);

}  // namespace ledger::service

#endif  // LEDGER_RPC_SERVICE_INTERNAL_APPEND_H_
