// ledgerctl: the ledger's command-line client and local tools.
//
//   ledgerctl keygen --origin O --out FILE
//   ledgerctl --server HOST:PORT append [FILE|-]
//   ledgerctl --server HOST:PORT checkpoint [--at-least N] [--size S]
//   ledgerctl --server HOST:PORT vkey
//   ledgerctl --server HOST:PORT prove (--seq N | --receipt-id ID) [--size S]
//   ledgerctl --server HOST:PORT consistency --from A [--to B]
//   ledgerctl --server HOST:PORT entries --from A --to B
//
// Output is meant for scripts: JSON lines, or exact bytes (notes, leaves).
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cmd/flags.h"
#include "grpcpp/grpcpp.h"
#include "ledger/hash/hash.h"
#include "ledger/log/key_file.h"
#include "ledger/receipt/receipt.h"
#include "ledger_service.grpc.pb.h"
#include "nlohmann/json.hpp"

namespace {

namespace pb = evidence::ledger::v1;
using ledger::cmd::Flags;
using Json = nlohmann::ordered_json;

constexpr size_t kBatchReceipts = 1000;
constexpr size_t kBatchBytes = 3 * 1024 * 1024;

int Fail(const absl::Status& s) {
  std::cerr << "ledgerctl: " << s.message() << "\n";
  return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

absl::Status FromGrpc(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

std::string Hex(const std::string& bytes) { return ledger::hash::Hex(bytes); }

Json ErrorJson(absl::StatusCode code, absl::string_view message) {
  return Json{{"error", Json{{"code", absl::StatusCodeToString(code)}, {"message", std::string(message)}}}};
}

Json HashList(const google::protobuf::RepeatedPtrField<std::string>& hashes) {
  Json list = Json::array();
  for (const auto& h : hashes) list.push_back(Hex(h));
  return list;
}

bool Retryable(grpc::StatusCode c) {
  return c == grpc::StatusCode::UNAVAILABLE || c == grpc::StatusCode::RESOURCE_EXHAUSTED;
}

// Sends one batch, retrying with back-off while the ledger is busy or
// unreachable: a retry by receipt_id never appends twice.
grpc::Status SendBatch(pb::LedgerService::Stub& stub, const pb::AppendRequest& request,
                       pb::AppendResponse* response) {
  auto backoff = std::chrono::milliseconds(50);
  for (int attempt = 0;; ++attempt) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    response->Clear();
    grpc::Status s = stub.Append(&ctx, request, response);
    if (s.ok() || !Retryable(s.error_code()) || attempt == 8) return s;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
}

// One line of input per receipt; every line gets one line of output, in order.
int Append(pb::LedgerService::Stub& stub, std::istream& in) {
  bool all_ok = true;
  std::vector<Json> pending;  // output lines of the current batch, in order
  std::vector<size_t> sent;   // indexes in `pending` of the receipts sent
  pb::AppendRequest request;
  size_t bytes = 0;

  auto flush = [&]() -> absl::Status {
    if (request.receipts_size() > 0) {
      pb::AppendResponse response;
      grpc::Status s = SendBatch(stub, request, &response);
      if (!s.ok() || response.results_size() != request.receipts_size()) {
        absl::Status err = s.ok() ? absl::InternalError("server returned the wrong number of results")
                                  : FromGrpc(s);
        for (size_t i : sent) pending[i] = ErrorJson(err.code(), err.message());
        all_ok = false;
      } else {
        for (int k = 0; k < response.results_size(); ++k) {
          const auto& r = response.results(k);
          if (r.code() != 0) {
            pending[sent[k]] = ErrorJson(static_cast<absl::StatusCode>(r.code()), r.message());
            all_ok = false;
            continue;
          }
          Json line{{"seq", r.seq()}, {"leaf_hash", Hex(r.leaf_hash())}};
          if (r.duplicate()) line["duplicate"] = true;
          pending[sent[k]] = line;
        }
      }
    }
    for (const auto& line : pending) std::cout << line.dump() << "\n";
    std::cout.flush();
    pending.clear();
    sent.clear();
    request.Clear();
    bytes = 0;
    return absl::OkStatus();
  };

  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto receipt = ledger::receipt::FromJsonText(line);
    if (!receipt.ok()) {
      pending.push_back(ErrorJson(receipt.status().code(), receipt.status().message()));
      all_ok = false;
    } else {
      sent.push_back(pending.size());
      pending.emplace_back();
      bytes += line.size();
      *request.add_receipts() = *std::move(receipt);
    }
    if (pending.size() >= kBatchReceipts || bytes >= kBatchBytes) flush().IgnoreError();
  }
  flush().IgnoreError();
  return all_ok ? 0 : 1;
}

int Checkpoint(pb::LedgerService::Stub& stub, const Flags& flags) {
  auto at_least = flags.Int("at-least");
  auto size = flags.Int("size");
  auto timeout = flags.Int("timeout-ms");
  if (!at_least.ok()) return Fail(at_least.status());
  if (!size.ok()) return Fail(size.status());
  if (!timeout.ok()) return Fail(timeout.status());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(*timeout);
  while (true) {
    grpc::ClientContext ctx;
    pb::GetCheckpointRequest request;
    request.set_tree_size(static_cast<uint64_t>(*size));
    pb::Checkpoint cp;
    grpc::Status s = stub.GetCheckpoint(&ctx, request, &cp);
    if (!s.ok()) return Fail(FromGrpc(s));
    if (cp.tree_size() >= static_cast<uint64_t>(*at_least)) {
      std::cout << cp.note();
      return 0;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Fail(absl::DeadlineExceededError(absl::StrCat(
          "no checkpoint covers ", *at_least, " entries yet (latest: ", cp.tree_size(), ")")));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int Vkey(pb::LedgerService::Stub& stub) {
  grpc::ClientContext ctx;
  pb::VerifierKey key;
  grpc::Status s = stub.GetVerifierKey(&ctx, pb::GetVerifierKeyRequest(), &key);
  if (!s.ok()) return Fail(FromGrpc(s));
  std::cout << key.vkey() << "\n";
  return 0;
}

int Prove(pb::LedgerService::Stub& stub, const Flags& flags) {
  pb::GetInclusionProofRequest request;
  if (flags.Has("seq")) {
    auto seq = flags.Int("seq");
    if (!seq.ok()) return Fail(seq.status());
    request.set_seq(static_cast<uint64_t>(*seq));
  } else if (flags.Has("receipt-id")) {
    request.set_receipt_id(flags.Get("receipt-id"));
  } else {
    return Fail(absl::InvalidArgumentError("prove: give --seq N or --receipt-id ID"));
  }
  auto size = flags.Int("size");
  if (!size.ok()) return Fail(size.status());
  request.set_tree_size(static_cast<uint64_t>(*size));
  grpc::ClientContext ctx;
  pb::InclusionProof proof;
  grpc::Status s = stub.GetInclusionProof(&ctx, request, &proof);
  if (!s.ok()) return Fail(FromGrpc(s));
  Json out{{"seq", proof.seq()},
           {"leaf_hash", Hex(proof.leaf_hash())},
           {"tree_size", proof.tree_size()},
           {"inclusion", HashList(proof.hashes())}};
  std::cout << out.dump() << "\n";
  return 0;
}

int Consistency(pb::LedgerService::Stub& stub, const Flags& flags) {
  auto from = flags.Int("from");
  auto to = flags.Int("to");
  if (!from.ok()) return Fail(from.status());
  if (!to.ok()) return Fail(to.status());
  pb::GetConsistencyProofRequest request;
  request.set_from_size(static_cast<uint64_t>(*from));
  request.set_to_size(static_cast<uint64_t>(*to));
  grpc::ClientContext ctx;
  pb::ConsistencyProof proof;
  grpc::Status s = stub.GetConsistencyProof(&ctx, request, &proof);
  if (!s.ok()) return Fail(FromGrpc(s));
  Json out{{"from_size", proof.from_size()},
           {"to_size", proof.to_size()},
           {"proof", HashList(proof.hashes())}};
  std::cout << out.dump() << "\n";
  return 0;
}

int Entries(pb::LedgerService::Stub& stub, const Flags& flags) {
  auto from = flags.Int("from");
  auto to = flags.Int("to");
  if (!from.ok()) return Fail(from.status());
  if (!to.ok()) return Fail(to.status());
  pb::GetEntriesRequest request;
  request.set_from_seq(static_cast<uint64_t>(*from));
  request.set_to_seq(static_cast<uint64_t>(*to));
  grpc::ClientContext ctx;
  auto reader = stub.GetEntries(&ctx, request);
  pb::Entry entry;
  while (reader->Read(&entry)) std::cout << entry.leaf() << "\n";
  grpc::Status s = reader->Finish();
  if (!s.ok()) return Fail(FromGrpc(s));
  return 0;
}

int Keygen(const Flags& flags) {
  if (flags.Get("out").empty()) return Fail(absl::InvalidArgumentError("keygen: --out FILE is required"));
  auto signer = ledger::log::CreateKeyFile(flags.Get("out"), flags.Get("origin"));
  if (!signer.ok()) return Fail(signer.status());
  std::cout << signer->VerifierKey() << "\n";
  return 0;
}

constexpr char kUsage[] =
    "usage:\n"
    "  ledgerctl keygen --origin O --out FILE\n"
    "  ledgerctl --server HOST:PORT append [FILE|-]\n"
    "  ledgerctl --server HOST:PORT checkpoint [--at-least N] [--size S]\n"
    "  ledgerctl --server HOST:PORT vkey\n"
    "  ledgerctl --server HOST:PORT prove (--seq N | --receipt-id ID) [--size S]\n"
    "  ledgerctl --server HOST:PORT consistency --from A [--to B]\n"
    "  ledgerctl --server HOST:PORT entries --from A --to B\n\n"
    "options:\n";

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  flags.Define("server", "127.0.0.1:7420", "ledger address HOST:PORT");
  flags.Define("origin", "evidence-ledger.local/dev", "keygen: the log's origin (the key name)");
  flags.Define("out", "", "keygen: where to write the new key (mode 0600, never overwritten)");
  flags.Define("at-least", "0", "checkpoint: wait until the checkpoint covers N entries");
  flags.Define("timeout-ms", "30000", "checkpoint: how long to wait for --at-least");
  flags.Define("seq", "0", "prove: the entry's seq");
  flags.Define("receipt-id", "", "prove: the entry's receipt_id");
  flags.Define("size", "0", "tree size to prove against (0: the latest checkpoint)");
  flags.Define("from", "0", "consistency: old tree size; entries: first seq");
  flags.Define("to", "0", "consistency: new tree size (0: latest checkpoint); entries: end seq (exclusive)");
  flags.Define("help", "", "print this help", true);
  if (auto s = flags.Parse(argc, argv, 1); !s.ok()) return Fail(s);
  if (flags.Bool("help") || flags.positional().empty()) {
    std::cout << kUsage << flags.Usage();
    return flags.Bool("help") ? 0 : 2;
  }
  const std::string& command = flags.positional()[0];
  if (command == "keygen") return Keygen(flags);

  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 * 1024 * 1024);
  auto channel = grpc::CreateCustomChannel(flags.Get("server"), grpc::InsecureChannelCredentials(), args);
  auto stub = pb::LedgerService::NewStub(channel);
  if (command == "append") {
    std::string file = flags.positional().size() > 1 ? flags.positional()[1] : "-";
    if (file == "-") return Append(*stub, std::cin);
    std::ifstream in(file);
    if (!in) return Fail(absl::NotFoundError(absl::StrCat("append: cannot read ", file)));
    return Append(*stub, in);
  }
  if (command == "checkpoint") return Checkpoint(*stub, flags);
  if (command == "vkey") return Vkey(*stub);
  if (command == "prove") return Prove(*stub, flags);
  if (command == "consistency") return Consistency(*stub, flags);
  if (command == "entries") return Entries(*stub, flags);
  return Fail(absl::InvalidArgumentError(absl::StrCat("unknown command '", command, "'")));
}
