// ledgerctl: the ledger's command-line client and local tools. Its commands,
// what each reads and examples are the table of ledgerctl_commands.cc
// (`ledgerctl help COMMAND`); their handlers are here and in the files
// ledgerctl.h names.
//
// Output is meant for scripts: JSON lines, or exact bytes (notes, leaves).
#include "cmd/ledgerctl.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "cmd/flags.h"
#include "cmd/ledgerctl_commands.h"
#include "cmd/loopback.h"
#include "cmd/shard_map.h"
#include "cmd/verify_options.h"
#include "export.grpc.pb.h"
#include "export/verify/cc/verify.h"
#include "grpc/support/log.h"
#include "grpcpp/grpcpp.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/tlogpolicy/tlogpolicy.h"
#include "ledger/storage/log/audit.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/log/run_heads.h"
#include "ledger_service.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "query.grpc.pb.h"
#include "query/projector/projector.h"
#include "util/text/progress.h"
#include "util/text/terminal.h"

namespace ledger::ctl {

int Fail(const absl::Status& s) {
  // A message may quote the ledger's or a file's values (util/text).
  std::cerr << "ledgerctl: " << text::TerminalEscape(std::string(s.message())) << "\n";
  return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

absl::Status FromGrpc(const grpc::Status& s) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace ledger::ctl

namespace {

namespace pb = ledger::ctl::pb;
using ledger::cmd::Flags;
using ledger::ctl::Fail;
using ledger::ctl::FromGrpc;
using ledger::ctl::Json;
using ledger::ctl::RunSummary;
using ledger::ctl::Steps;
using ledger::ctl::Watch;

constexpr size_t kBatchReceipts = 1000;
constexpr size_t kBatchBytes = 3 * 1024 * 1024;

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

// A stub for an address, on the command's channel credentials.
using Connect = std::function<pb::LedgerService::Stub*(const std::string& address)>;

// The leader a follower of a replicated shard names when it refuses an
// append ("... leader=HOST:PORT ..."), else "".
std::string LeaderNamed(const grpc::Status& s) {
  if (s.error_code() != grpc::StatusCode::UNAVAILABLE) return "";
  const std::string& m = s.error_message();
  size_t at = m.find("leader=");
  if (at == std::string::npos) return "";
  at += 7;
  size_t end = m.find_first_of(" ;)", at);
  return m.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// The last clause of a gRPC message ("... ipv4:127.0.0.1:1: Failed to
// connect to remote host: Connection refused" gives "Connection
// refused"), for the lines that say why a batch is retried.
std::string LastClause(const std::string& message) {
  size_t at = message.rfind(": ");
  return at == std::string::npos ? message : message.substr(at + 2);
}

constexpr int kAttempts = 9;

// Sends one batch to `address`, retrying with back-off while the ledger is
// busy or unreachable: a retry by receipt_id never appends twice. Each
// retry is said on stderr ("retrying (n)..."), and so is giving up, with
// the address. A follower's refusal that names the leader sends the batch
// there at once (with the same credentials: under TLS the leader's
// certificate is checked as any).
grpc::Status SendBatch(const std::string& address, const pb::AppendRequest& request, pb::AppendResponse* response,
                       const Connect& connect) {
  auto backoff = std::chrono::milliseconds(50);
  std::string at = address, followed;
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    response->Clear();
    grpc::Status s = connect(at)->Append(&ctx, request, response);
    if (std::string leader = LeaderNamed(s); !leader.empty() && leader != followed && attempt < kAttempts) {
      followed = at = leader;
      continue;
    }
    if (s.ok() || !Retryable(s.error_code())) return s;
    const std::string code = absl::StatusCodeToString(static_cast<absl::StatusCode>(s.error_code()));
    const std::string why = ledger::text::TerminalEscape(LastClause(s.error_message()));
    if (attempt == kAttempts) {
      std::cerr << "ledgerctl: append: gave up after " << kAttempts << " attempts: the ledger at " << at
                << (s.error_code() == grpc::StatusCode::UNAVAILABLE
                        ? absl::StrCat(" is unavailable (", why, "); is ledgerd running there (--server)?")
                        : absl::StrCat(" is busy (", code, ": ", why, "); try again later"))
                << "\n";
      return s;
    }
    std::cerr << "ledgerctl: append: " << at << ": " << code << ": " << why << "; retrying (" << attempt << ")...\n";
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
}

// The address of a receipt's team: the server, or its shard's.
using Route = std::function<std::string(const std::string& team)>;

// What an output line says of the input line it answers: "line N
// (receipt_id ID): " (without the id when there is none to read).
std::string LineOf(size_t line, const std::string& receipt_id) {
  if (receipt_id.empty()) return absl::StrCat("line ", line, ": ");
  return absl::StrCat("line ", line, " (receipt_id ", receipt_id, "): ");
}

// The receipt_id of a line that is not a valid receipt, if it has one.
std::string ReceiptIdOf(const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return "";
  auto id = j.find("receipt_id");
  return id != j.end() && id->is_string() ? id->get<std::string>() : "";
}

// One line of input per receipt; every line gets one line of output, in
// order. An error line names the input line and the receipt_id.
int Append(const Route& route, const Connect& connect, std::istream& in) {
  bool all_ok = true;
  std::vector<Json> pending;       // output lines of the current batch, in order
  std::vector<size_t> sent;        // indexes in `pending` of the receipts sent
  std::vector<std::string> where;  // LineOf each receipt sent
  pb::AppendRequest request;
  size_t bytes = 0;

  auto flush = [&]() -> absl::Status {
    // One request per server, in the receipts' order within it.
    std::map<std::string, std::pair<pb::AppendRequest, std::vector<size_t>>> parts;
    for (int k = 0; k < request.receipts_size(); ++k) {
      auto& part = parts[route(request.receipts(k).team())];
      *part.first.add_receipts() = request.receipts(k);
      part.second.push_back(static_cast<size_t>(k));
    }
    for (auto& [address, part] : parts) {
      const auto& [sub, ks] = part;
      pb::AppendResponse response;
      grpc::Status s = SendBatch(address, sub, &response, connect);
      if (!s.ok() || response.results_size() != sub.receipts_size()) {
        absl::Status err = s.ok() ? absl::InternalError("server returned the wrong number of results") : FromGrpc(s);
        if (!Retryable(s.error_code())) {
          std::cerr << "ledgerctl: append: " << ledger::text::TerminalEscape(std::string(err.message())) << "\n";
        }
        for (size_t k : ks) pending[sent[k]] = ErrorJson(err.code(), where[k] + std::string(err.message()));
        all_ok = false;
        continue;
      }
      for (int i = 0; i < response.results_size(); ++i) {
        const auto& r = response.results(i);
        const size_t k = ks[static_cast<size_t>(i)];
        if (r.code() != 0) {
          pending[sent[k]] = ErrorJson(static_cast<absl::StatusCode>(r.code()), where[k] + r.message());
          all_ok = false;
          continue;
        }
        Json line{{"seq", r.seq()}, {"leaf_hash", Hex(r.leaf_hash())}};
        if (r.duplicate()) line["duplicate"] = true;
        pending[sent[k]] = line;
      }
    }
    for (const auto& line : pending) std::cout << line.dump() << "\n";
    std::cout.flush();
    pending.clear();
    sent.clear();
    where.clear();
    request.Clear();
    bytes = 0;
    return absl::OkStatus();
  };

  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto receipt = ledger::receipt::FromJsonText(line);
    if (!receipt.ok()) {
      pending.push_back(ErrorJson(receipt.status().code(),
                                  LineOf(number, ReceiptIdOf(line)) + std::string(receipt.status().message())));
      all_ok = false;
    } else {
      sent.push_back(pending.size());
      where.push_back(LineOf(number, receipt->receipt_id()));
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
  auto cosigned = flags.Int("cosignatures");
  if (!cosigned.ok()) return Fail(cosigned.status());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(*timeout);
  while (true) {
    grpc::ClientContext ctx;
    pb::GetCheckpointRequest request;
    request.set_tree_size(static_cast<uint64_t>(*size));
    pb::Checkpoint cp;
    grpc::Status s = stub.GetCheckpoint(&ctx, request, &cp);
    if (!s.ok()) return Fail(FromGrpc(s));
    if (cp.tree_size() >= static_cast<uint64_t>(*at_least) && cp.cosignatures_size() >= *cosigned) {
      if (!flags.Bool("time-note")) {
        std::cout << (cp.cosigned_note().empty() ? cp.note() : cp.cosigned_note());
        return 0;
      }
      if (cp.time_note().empty()) {
        return Fail(absl::NotFoundError(
            absl::StrCat("the checkpoint of size ", cp.tree_size(), " was signed before the ledger signed times")));
      }
      std::cout << (cp.cosigned_time_note().empty() ? cp.time_note() : cp.cosigned_time_note());
      return 0;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      if (*cosigned > 0) {
        return Fail(absl::DeadlineExceededError(absl::StrCat("no checkpoint covers ", *at_least, " entries with ",
                                                             *cosigned, " cosignatures yet (latest: ", cp.tree_size(),
                                                             " entries, ", cp.cosignatures_size(), " cosignatures)")));
      }
      return Fail(absl::DeadlineExceededError(
          absl::StrCat("no checkpoint covers ", *at_least, " entries yet (latest: ", cp.tree_size(), ")")));
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

int Backup(pb::LedgerService::Stub& stub, const Flags& flags) {
  if (flags.Get("out").empty()) {
    return Fail(
        absl::InvalidArgumentError("backup: --out DIR (a new directory under the server's --backup-root) is required"));
  }
  grpc::ClientContext ctx;
  pb::BackupRequest request;
  request.set_dir(flags.Get("out"));
  pb::BackupResponse response;
  grpc::Status s = stub.Backup(&ctx, request, &response);
  if (!s.ok()) return Fail(FromGrpc(s));
  std::cout << Json{{"dir", response.dir()}, {"tree_size", response.tree_size()}, {"checkpoint", response.checkpoint()}}
                   .dump()
            << "\n";
  return 0;
}

// CONTRACT section 5d: the log moves to a new key.
int RotateKey(pb::LedgerService::Stub& stub, const Flags& flags) {
  auto transition = flags.Int("transition-sizes");
  if (!transition.ok()) return Fail(transition.status());
  if (*transition < 0) return Fail(absl::InvalidArgumentError("--transition-sizes: want a size >= 0"));
  grpc::ClientContext ctx;
  pb::RotateKeyRequest request;
  request.set_new_key(flags.Get("new-key"));
  request.set_transition_sizes(static_cast<uint64_t>(*transition));
  pb::RotateKeyResponse response;
  grpc::Status s = stub.RotateKey(&ctx, request, &response);
  if (!s.ok()) return Fail(FromGrpc(s));
  std::cout << Json{{"seq", response.seq()},
                    {"old_key", response.old_key()},
                    {"new_key", response.new_key()},
                    {"note", response.note()}}
                   .dump()
            << "\n";
  return 0;
}

// CONTRACT section 5d: the rotations with their proofs, for --key-history.
int KeyHistory(pb::LedgerService::Stub& stub, const Flags& flags) {
  grpc::ClientContext ctx;
  pb::KeyHistory response;
  grpc::Status s = stub.GetKeyHistory(&ctx, pb::GetKeyHistoryRequest(), &response);
  if (!s.ok()) return Fail(FromGrpc(s));
  if (flags.Get("out").empty()) {
    std::cout << response.json();
    return 0;
  }
  std::ofstream out(flags.Get("out"), std::ios::binary | std::ios::trunc);
  out << response.json();
  out.close();
  if (!out) return Fail(absl::UnavailableError(absl::StrCat("--out: cannot write ", flags.Get("out"))));
  return 0;
}

// The C2SP tlog-proof form (c2sp.org/tlog-proof@v1): the index, the
// inclusion path in base64, an empty line, and the checkpoint of the
// proof's tree size with every cosignature the ledger holds for it.
int PrintTlogProof(pb::LedgerService::Stub& stub, const pb::InclusionProof& proof) {
  grpc::ClientContext ctx;
  pb::GetCheckpointRequest request;
  request.set_tree_size(proof.tree_size());
  pb::Checkpoint cp;
  grpc::Status s = stub.GetCheckpoint(&ctx, request, &cp);
  if (!s.ok()) {
    return Fail(absl::FailedPreconditionError(
        absl::StrCat("prove --format tlog-proof: no signed checkpoint of size ", proof.tree_size(),
                     " (give --size of a signed checkpoint, or none for the latest): ", s.error_message())));
  }
  std::string out = absl::StrCat("c2sp.org/tlog-proof@v1\nindex ", proof.seq(), "\n");
  for (const std::string& h : proof.hashes()) absl::StrAppend(&out, ledger::hash::Base64(h), "\n");
  std::cout << out << "\n" << (cp.cosigned_note().empty() ? cp.note() : cp.cosigned_note());
  return 0;
}

int Prove(pb::LedgerService::Stub& stub, const Flags& flags) {
  pb::GetInclusionProofRequest request;
  if (flags.Has("seq")) {
    auto seq = flags.Int("seq");
    if (!seq.ok()) return Fail(seq.status());
    request.set_seq(static_cast<uint64_t>(*seq));
  } else if (flags.Has("receipt-id")) {
    if (flags.Get("team").empty()) {
      return Fail(absl::InvalidArgumentError("prove: --receipt-id needs --team (receipt ids are unique per team)"));
    }
    request.set_receipt_id(flags.Get("receipt-id"));
    request.set_team(flags.Get("team"));
  } else {
    return Fail(absl::InvalidArgumentError("prove: give --seq N or --team T --receipt-id ID"));
  }
  auto size = flags.Int("size");
  if (!size.ok()) return Fail(size.status());
  request.set_tree_size(static_cast<uint64_t>(*size));
  const std::string& format = flags.Get("format");
  if (format != "json" && format != "tlog-proof") {
    return Fail(absl::InvalidArgumentError("prove: --format must be json or tlog-proof"));
  }
  grpc::ClientContext ctx;
  pb::InclusionProof proof;
  grpc::Status s = stub.GetInclusionProof(&ctx, request, &proof);
  if (!s.ok()) return Fail(FromGrpc(s));
  if (format == "tlog-proof") return PrintTlogProof(stub, proof);
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
  Json out{{"from_size", proof.from_size()}, {"to_size", proof.to_size()}, {"proof", HashList(proof.hashes())}};
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

int Export(pb::ExportService::Stub& stub, const Flags& flags) {
  pb::ExportRequest req;
  if (!flags.Get("run").empty() && flags.Get("run").find('/') != std::string::npos) {
    const std::string& run = flags.Get("run");
    req.mutable_run()->set_team(run.substr(0, run.find('/')));
    req.mutable_run()->set_run_id(run.substr(run.find('/') + 1));
  } else if (!flags.Get("seq").empty() && flags.Get("seq").find(':') != std::string::npos) {
    const std::string& range = flags.Get("seq");
    try {
      req.mutable_seqs()->set_from_seq(std::stoull(range.substr(0, range.find(':'))));
      req.mutable_seqs()->set_to_seq(std::stoull(range.substr(range.find(':') + 1)));
    } catch (const std::exception&) {
      return Fail(absl::InvalidArgumentError("--seq: want A:B"));
    }
  } else if (!flags.Get("team").empty()) {
    absl::Time from, to;
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, flags.Get("from"), &from, &err)) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("--from: want RFC 3339 time: ", err)));
    }
    if (!absl::ParseTime(absl::RFC3339_full, flags.Get("to"), &to, &err)) {
      return Fail(absl::InvalidArgumentError(absl::StrCat("--to: want RFC 3339 time: ", err)));
    }
    req.mutable_team()->set_team(flags.Get("team"));
    req.mutable_team()->set_from_us(absl::ToUnixMicros(from));
    req.mutable_team()->set_to_us(absl::ToUnixMicros(to));
  } else {
    return Fail(
        absl::InvalidArgumentError("export: give --run TEAM/RUN, --seq A:B, or --team T --from RFC3339 --to RFC3339"));
  }
  if (!flags.Get("since").empty()) {
    std::ifstream in(flags.Get("since"), std::ios::binary);
    if (!in) return Fail(absl::NotFoundError(absl::StrCat("--since: cannot read ", flags.Get("since"))));
    std::stringstream note;
    note << in.rdbuf();
    req.set_since_checkpoint(note.str());
  }
  req.set_allow_empty(flags.Bool("allow-empty"));
  auto pack_format = flags.Int("pack-format");
  if (!pack_format.ok() || *pack_format < 5 || *pack_format > 9) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--pack-format: want 5, 6, 7, 8 or 9, found '",
                                                        ledger::text::TerminalEscape(flags.Get("pack-format")), "'")));
  }
  req.set_pack_format(static_cast<uint32_t>(*pack_format));
  const std::string& out = flags.Get("out");
  if (out.empty()) return Fail(absl::InvalidArgumentError("export: --out FILE is required"));
  std::string tmp = out + ".part";
  std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
  if (!file) return Fail(absl::UnavailableError(absl::StrCat("export: cannot write ", tmp)));
  // The server tells how far the pack's building is, when there is a
  // terminal to show it on.
  ledger::text::ProgressMeter progress("exporting", "entries", !flags.Bool("no-progress"));
  req.set_progress(progress.shown());
  grpc::ClientContext ctx;
  auto reader = stub.Export(&ctx, req);
  pb::ExportChunk chunk;
  uint64_t bytes = 0;
  while (reader->Read(&chunk)) {
    if (chunk.has_progress()) {
      if (chunk.progress().entries_total() > 0) progress.SetTotal(chunk.progress().entries_total());
      progress.Set(chunk.progress().entries());
    }
    file.write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
    bytes += chunk.data().size();
  }
  grpc::Status s = reader->Finish();
  progress.Finish();
  file.close();
  if (!s.ok() || !file) {
    std::remove(tmp.c_str());
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) {  // the scope has no entry (proto/export.proto)
      return Fail(absl::NotFoundError(absl::StrCat("export: ", s.error_message(), ": no pack written; check the ",
                                                   req.has_run() ? "team and run id" : "team and times",
                                                   ", or give --allow-empty for a pack that proves it empty")));
    }
    return Fail(s.ok() ? absl::UnavailableError("export: write failed") : FromGrpc(s));
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    return Fail(absl::UnavailableError(absl::StrCat("export: cannot rename to ", out)));
  }
  std::cout << "wrote " << out << " (" << bytes << " bytes)\n";
  return 0;
}

}  // namespace

// Plain text (where CheckPlainText allows it), or TLS with a client
// certificate when --tls-ca is given.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(const Flags& flags,
                                                                             grpc::ChannelArguments* args) {
  if (flags.Get("tls-ca").empty()) {
    if (!flags.Get("cert").empty() || !flags.Get("key").empty()) {
      return absl::InvalidArgumentError("--tls-ca: required with --cert and --key");
    }
    return grpc::InsecureChannelCredentials();
  }
  if (flags.Get("cert").empty() != flags.Get("key").empty()) {
    return absl::InvalidArgumentError("--cert and --key: give both or neither");
  }
  grpc::SslCredentialsOptions ssl;
  struct File {
    const char* flag;
    std::string* into;
  };
  for (File f :
       {File{"tls-ca", &ssl.pem_root_certs}, File{"cert", &ssl.pem_cert_chain}, File{"key", &ssl.pem_private_key}}) {
    if (flags.Get(f.flag).empty()) continue;
    std::ifstream in(flags.Get(f.flag), std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("--", f.flag, ": cannot read ", flags.Get(f.flag)));
    std::stringstream text;
    text << in.rdbuf();
    *f.into = text.str();
  }
  if (!flags.Get("tls-server-name").empty()) {
    args->SetSslTargetNameOverride(flags.Get("tls-server-name"));
  }
  return grpc::SslCredentials(ssl);
}

namespace {

// The channels of one invocation: to --server, or to the shards of
// --shard-map; each address's channel made once.
class Connections {
 public:
  static absl::StatusOr<std::unique_ptr<Connections>> Open(const Flags& flags) {
    auto c = std::unique_ptr<Connections>(new Connections(flags));
    c->args_.SetMaxReceiveMessageSize(64 * 1024 * 1024);
    auto creds = ChannelCredentials(flags, &c->args_);
    if (!creds.ok()) return creds.status();
    c->creds_ = *std::move(creds);
    if (!flags.Get("shard-map").empty()) {
      auto loaded = ledger::cmd::ShardMap::Load(flags.Get("shard-map"));
      if (!loaded.ok()) return loaded.status();
      c->shards_ = *std::move(loaded);
    }
    return c;
  }

  const std::optional<ledger::cmd::ShardMap>& shards() const { return shards_; }

  // The channel to `address`; a call on it that fails to connect because
  // the TLS options do not match the server says so (TlsDiagnosis).
  std::shared_ptr<grpc::Channel> Channel(const std::string& address) {
    auto& c = channels_[address];
    if (c == nullptr) {
      c = grpc::experimental::CreateCustomChannelWithInterceptors(address, creds_, args_,
                                                                  ledger::ctl::TlsDiagnosis(tls_, address));
    }
    return c;
  }

  // The server of this command: --server, or the shard of --shard, --team
  // or the TEAM of --run TEAM/RUN.
  absl::StatusOr<std::string> Target() const {
    if (!shards_) return flags_.Get("server");
    if (!flags_.Get("shard").empty()) {
      auto n = flags_.Int("shard");
      if (!n.ok()) return n.status();
      auto shard = shards_->Get(static_cast<int>(*n));
      if (!shard.ok()) return shard.status();
      return shard->address;
    }
    std::string team = flags_.Get("team");
    if (team.empty() && flags_.Get("run").find('/') != std::string::npos) {
      team = flags_.Get("run").substr(0, flags_.Get("run").find('/'));
    }
    if (team.empty()) {
      return absl::InvalidArgumentError("--shard-map: name the shard (--shard N) or the team (--team, --run TEAM/RUN)");
    }
    return shards_->For(team).address;
  }

 private:
  explicit Connections(const Flags& flags) : flags_(flags), tls_(ledger::ctl::TlsOptionsOf(flags)) {}
  const Flags& flags_;
  const ledger::ctl::TlsOptions tls_;
  grpc::ChannelArguments args_;
  std::shared_ptr<grpc::ChannelCredentials> creds_;
  std::optional<ledger::cmd::ShardMap> shards_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;
};

// Without --tls-ca, plain text only to a loopback address or a unix socket,
// unless --insecure: INVALID_ARGUMENT naming the first address off this
// machine (--server, or every shard's of --shard-map), before any is dialed.
absl::Status CheckPlainText(const Flags& flags, const std::optional<ledger::cmd::ShardMap>& shards) {
  if (!flags.Get("tls-ca").empty() || flags.Bool("insecure")) return absl::OkStatus();
  auto check = [](const std::string& where, const std::string& address) {
    if (ledger::cmd::IsLoopback(address) || absl::StartsWith(address, "unix:")) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        where, "address \"", address,
        "\" is not a loopback address: give TLS options (--tls-ca, --cert and --key), or ask for plain text "
        "explicitly with --insecure"));
  };
  if (!shards) return check("--server: ", flags.Get("server"));
  for (const ledger::cmd::Shard& shard : shards->shards()) {
    if (auto s = check(absl::StrCat("--shard-map: shard ", shard.shard, ": "), shard.address); !s.ok()) return s;
  }
  return absl::OkStatus();
}

int ShowRoute(Connections& c, const Flags& flags) {
  if (!c.shards()) return Fail(absl::InvalidArgumentError("route: needs --shard-map"));
  if (flags.Get("team").empty()) return Fail(absl::InvalidArgumentError("route: needs --team"));
  const ledger::cmd::Shard& shard = c.shards()->For(flags.Get("team"));
  std::cout << Json{{"team", flags.Get("team")}, {"shard", shard.shard}, {"address", shard.address}}.dump() << "\n";
  return 0;
}

// Each receipt to its team's shard (or --server).
int AppendRouted(Connections& c, const Flags& flags) {
  std::map<std::string, std::unique_ptr<pb::LedgerService::Stub>> stubs;
  Connect connect = [&](const std::string& address) {
    auto& stub = stubs[address];
    if (stub == nullptr) stub = pb::LedgerService::NewStub(c.Channel(address));
    return stub.get();
  };
  Route route = [&](const std::string& team) {
    return c.shards() ? c.shards()->For(team).address : flags.Get("server");
  };
  std::string file = flags.positional().size() > 1 ? flags.positional()[1] : "-";
  if (file == "-") return Append(route, connect, std::cin);
  std::ifstream in(file);
  if (!in) return Fail(absl::NotFoundError(absl::StrCat("append: cannot read ", file)));
  return Append(route, connect, in);
}

// Steps of --team, or, with --shard-map and no --team or --shard, of every shard.
int StepsRouted(Connections& c, const Flags& flags) {
  std::vector<std::unique_ptr<pb::QueryService::Stub>> owned;
  if (c.shards() && flags.Get("team").empty() && flags.Get("shard").empty()) {
    for (const auto& shard : c.shards()->shards()) owned.push_back(pb::QueryService::NewStub(c.Channel(shard.address)));
  } else {
    auto address = c.Target();
    if (!address.ok()) return Fail(address.status());
    owned.push_back(pb::QueryService::NewStub(c.Channel(*address)));
  }
  std::vector<pb::QueryService::Stub*> all;
  for (auto& s : owned) all.push_back(s.get());
  return Steps(all, flags);
}

// The commands, by what they need: nothing but their flags, the connections
// (routing by team), or one server's service.
using Offline = int (*)(const Flags&);
using Routed = int (*)(Connections&, const Flags&);
using OnLedger = int (*)(pb::LedgerService::Stub&, const Flags&);
using OnQuery = int (*)(pb::QueryService::Stub&, const Flags&);

const std::map<std::string_view, Offline> kOffline = {{"keygen", ledger::ctl::Keygen},
                                                      {"rebuild", ledger::ctl::Rebuild},
                                                      {"audit", ledger::ctl::AuditStore},
                                                      {"verify", ledger::ctl::Verify},
                                                      {"pack-proof", ledger::ctl::PackProof},
                                                      {"policy-check", ledger::ctl::PolicyCheck},
                                                      {"retention-check", ledger::ctl::RetentionCheck},
                                                      {"prove-team", ledger::ctl::ProveTeam}};
const std::map<std::string_view, Routed> kRouted = {
    {"route", ShowRoute}, {"append", AppendRouted}, {"steps", StepsRouted}};
const std::map<std::string_view, OnLedger> kOnLedger = {
    {"checkpoint", Checkpoint},
    {"vkey", [](pb::LedgerService::Stub& stub, const Flags&) { return Vkey(stub); }},
    {"backup", Backup},
    {"rotate-key", RotateKey},
    {"erase", ledger::ctl::Erase},
    {"key-history", KeyHistory},
    {"prove", Prove},
    {"prove-run",
     [](pb::LedgerService::Stub& stub, const Flags& flags) { return ledger::ctl::ProveRun(&stub, flags); }},
    {"consistency", Consistency},
    {"entries", Entries},
    {"replication", ledger::ctl::Replication}};
const std::map<std::string_view, OnQuery> kOnQuery = {{"run", RunSummary}, {"watch", Watch}};

// The handlers name the commands of the table (ledgerctl_commands.cc), no
// more and no fewer: a command without help, or help of no command, is a
// bug, and every run of ledgerctl says so.
void CheckTable() {
  std::set<std::string_view> handled = {"export"}, listed;
  for (const auto& [name, handler] : kOffline) handled.insert(name);
  for (const auto& [name, handler] : kRouted) handled.insert(name);
  for (const auto& [name, handler] : kOnLedger) handled.insert(name);
  for (const auto& [name, handler] : kOnQuery) handled.insert(name);
  for (const ledger::ctl::Command& c : ledger::ctl::Commands()) listed.insert(c.name);
  if (handled != listed) {
    std::cerr << "ledgerctl: the handlers and the table of commands (ledgerctl_commands.cc) differ\n";
    std::abort();
  }
}

int Run(const std::string& command, const Flags& flags) {
  if (ledger::ctl::FindCommand(command) == nullptr) return Fail(ledger::ctl::UnknownCommand(command));
  if (auto it = kOffline.find(command); it != kOffline.end()) return it->second(flags);
  // prove-run replays a stopped ledger's log with --data, else asks the server.
  if (command == "prove-run" && !flags.Get("data").empty()) return ledger::ctl::ProveRun(nullptr, flags);
  auto connections = Connections::Open(flags);
  if (!connections.ok()) return Fail(connections.status());
  if (command != "route") {  // route reads the map alone
    if (auto s = CheckPlainText(flags, (*connections)->shards()); !s.ok()) return Fail(s);
  }
  if (auto it = kRouted.find(command); it != kRouted.end()) return it->second(**connections, flags);
  auto address = (*connections)->Target();
  if (!address.ok()) return Fail(address.status());
  auto channel = (*connections)->Channel(*address);
  if (auto it = kOnLedger.find(command); it != kOnLedger.end()) {
    return it->second(*pb::LedgerService::NewStub(channel), flags);
  }
  if (auto it = kOnQuery.find(command); it != kOnQuery.end()) {
    return it->second(*pb::QueryService::NewStub(channel), flags);
  }
  return Export(*pb::ExportService::NewStub(channel), flags);
}

// `ledgerctl help [COMMAND]`, `ledgerctl [COMMAND] --help`: the overview or
// the command's help on stdout, exit 0; an unknown command is bad usage.
int Help(const std::vector<std::string>& commands, const Flags& flags) {
  if (commands.empty()) {
    std::cout << ledger::ctl::Overview(flags);
    return 0;
  }
  if (commands.size() > 1) return Fail(absl::InvalidArgumentError("help: give one COMMAND"));
  const ledger::ctl::Command* command = ledger::ctl::FindCommand(commands[0]);
  if (command == nullptr) return Fail(ledger::ctl::UnknownCommand(commands[0]));
  std::cout << ledger::ctl::CommandHelp(*command, flags);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // ledgerctl says itself why a call failed (ledgerctl_tls.cc); gRPC's own
  // log lines ("Handshake failed ...") only when GRPC_VERBOSITY asks.
  if (std::getenv("GRPC_VERBOSITY") == nullptr) gpr_set_log_function([](gpr_log_func_args*) {});
  CheckTable();
  Flags flags;
  ledger::ctl::DefineCtlFlags(flags);
  if (auto s = flags.Parse(argc, argv, 1); !s.ok()) return Fail(s);
  if (!flags.Get("config").empty()) {
    if (auto s = flags.LoadConfig(flags.Get("config")); !s.ok()) return Fail(s);
  }
  const std::vector<std::string>& args = flags.positional();
  if (!args.empty() && args[0] == "help") return Help({args.begin() + 1, args.end()}, flags);
  if (flags.Bool("help")) return Help({args.begin(), args.begin() + (args.empty() ? 0 : 1)}, flags);
  if (args.empty()) {
    std::cerr << ledger::ctl::Overview(flags);
    return 2;
  }
  return Run(args[0], flags);
}
