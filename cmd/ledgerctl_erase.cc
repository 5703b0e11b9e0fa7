// ledgerctl erase: one admin asks for an entry's erasure, another approves
// it with the same command (CONTRACT section 8).
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cmd/ledgerctl.h"

namespace ledger::ctl {

int Erase(pb::LedgerService::Stub& stub, const Flags& flags) {
  uint64_t seq = 0;
  if (flags.Get("seq").empty() || !absl::SimpleAtoi(flags.Get("seq"), &seq)) {
    return Fail(absl::InvalidArgumentError("--seq: want the entry's seq, a number >= 0"));
  }
  if (flags.Get("reason").empty())
    return Fail(absl::InvalidArgumentError("--reason: required, why the entry is erased"));
  grpc::ClientContext ctx;
  pb::EraseRequest request;
  request.set_seq(seq);
  request.set_reason(flags.Get("reason"));
  pb::EraseResponse response;
  grpc::Status s = stub.Erase(&ctx, request, &response);
  if (!s.ok()) return Fail(FromGrpc(s));
  if (response.pending()) {
    std::cout << Json{{"seq", seq}, {"pending", true}, {"requested_by", response.requested_by()}}.dump() << "\n";
    std::cerr << "ledgerctl: entry " << seq
              << " is to be erased once another admin runs this same command (within an hour)\n";
    return 0;
  }
  std::cout << Json{{"seq", seq},
                    {"erased", true},
                    {"redaction_seq", response.redaction_seq()},
                    {"requested_by", response.requested_by()}}
                   .dump()
            << "\n";
  return 0;
}

}  // namespace ledger::ctl
