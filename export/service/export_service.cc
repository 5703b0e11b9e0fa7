#include "export/service/export_service.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "export/exporter/exporter.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/rpc/server/status.h"

namespace ledger::exporter {

namespace pb = evidence::ledger::v1;

absl::Status ExportService::CheckScope(const auth::Caller& caller, const Scope& scope) const {
  if (!scope.team.empty()) return caller.Check(auth::Action::kExport, scope.team);
  if (caller.CoversAllTeams(auth::Action::kExport)) return absl::OkStatus();
  // A seq range: every entry in it must be of the caller's teams.
  uint64_t to = std::min(scope.to_seq, log_->head().size);
  if (scope.from_seq >= to) return absl::OkStatus();  // the exporter says what is wrong
  absl::Status denied;
  absl::Status read = log_->ScanEntries(scope.from_seq, to, [&](uint64_t seq, std::string_view leaf) {
    auto team = receipt::TeamOf(leaf);
    if (!team.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", team.status().message()));
    absl::Status s = caller.CheckEntry(auth::Action::kExport, *team, seq);
    if (!s.ok()) {
      denied = absl::PermissionDeniedError(absl::StrCat("seqs: ", s.message()));
      return denied;
    }
    return absl::OkStatus();
  });
  return denied.ok() ? read : denied;
}

grpc::Status ExportService::Export(grpc::ServerContext* ctx, const pb::ExportRequest* request,
                                   grpc::ServerWriter<pb::ExportChunk>* writer) {
  grpc::Status s = Build(ctx, request, writer);
  const char* scope = request->has_run() ? "run" : request->has_team() ? "team" : request->has_seqs() ? "seqs" : "none";
  std::string result =
      s.ok() ? "ok" : absl::AsciiStrToLower(absl::StatusCodeToString(static_cast<absl::StatusCode>(s.error_code())));
  exports_.With({scope, result})->Add();
  return s;
}

grpc::Status ExportService::Build(grpc::ServerContext* ctx, const pb::ExportRequest* request,
                                  grpc::ServerWriter<pb::ExportChunk>* writer) {
  auto caller = gate_->Admit(*ctx);
  if (!caller.ok()) return server::ToGrpc(caller.status());
  if (auto s = caller->CheckRole(auth::Action::kExport); !s.ok()) return server::ToGrpc(s);
  Scope scope;
  switch (request->scope_case()) {
    case pb::ExportRequest::kRun:
      scope.team = request->run().team();
      scope.run_id = request->run().run_id();
      if (scope.team.empty() || scope.run_id.empty()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "run: team and run_id are required");
      }
      break;
    case pb::ExportRequest::kSeqs:
      scope.from_seq = request->seqs().from_seq();
      scope.to_seq = request->seqs().to_seq();
      break;
    case pb::ExportRequest::kTeam:
      scope.team = request->team().team();
      scope.from_us = request->team().from_us();
      scope.to_us = request->team().to_us();
      if (scope.team.empty()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "team: required");
      }
      break;
    case pb::ExportRequest::SCOPE_NOT_SET:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "scope: give a run or a seq range");
  }
  if (auto s = CheckScope(*caller, scope); !s.ok()) return server::ToGrpc(s);
  std::optional<Staging::Lease> lease;
  if (staging_ != nullptr) lease.emplace(staging_);
  std::string path =
      absl::StrCat(staging_ != nullptr ? staging_->dir() : std::filesystem::temp_directory_path().string(), "/",
                   kPackPrefix, ::getpid(), "-", reinterpret_cast<uintptr_t>(ctx), ".tar.gz");
  // Progress, when asked for: at most every 250 ms, and the last.
  ProgressFn progress;
  std::chrono::steady_clock::time_point last_told;
  if (request->progress()) {
    progress = [&](uint64_t entries, std::optional<uint64_t> total) {
      auto now = std::chrono::steady_clock::now();
      bool last = total && entries == *total;
      if (!last && now - last_told < std::chrono::milliseconds(250)) return;
      last_told = now;
      pb::ExportChunk told;
      told.mutable_progress()->set_entries(entries);
      told.mutable_progress()->set_entries_total(total.value_or(0));
      writer->Write(told);  // a client gone is seen when the pack is sent
    };
  }
  ExportOptions options;
  options.since = request->since_checkpoint();
  options.lease = lease ? &*lease : nullptr;
  options.unknown_grace_ms = unknown_grace_ms_;
  options.cosign = cosign_;
  options.map_cosign = map_cosign_;
  options.empty = request->allow_empty() ? EmptyScope::kWrite : EmptyScope::kRefuse;
  options.progress = progress;
  options.pack_format = request->pack_format() == 0 ? kLatestPackFormat : static_cast<int>(request->pack_format());
  absl::Status built = ExportPack(*log_, scope, path, options);
  // While it is sent, the pack alone is held (less than what was staged,
  // so never refused).
  if (built.ok() && lease) lease->Set(DiskUsage(path)).IgnoreError();
  if (!built.ok()) {
    std::filesystem::remove(path);
    return grpc::Status(static_cast<grpc::StatusCode>(built.code()), std::string(built.message()));
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(64 * 1024);
  pb::ExportChunk chunk;
  bool sent = true;
  while (in && sent && !ctx->IsCancelled()) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() <= 0) break;
    chunk.set_data(buf.data(), static_cast<size_t>(in.gcount()));
    sent = writer->Write(chunk);
  }
  std::filesystem::remove(path);
  if (!sent || ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "export: cancelled");
  return grpc::Status::OK;
}

}  // namespace ledger::exporter
