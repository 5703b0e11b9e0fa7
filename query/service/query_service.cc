#include "query/service/query_service.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/rpc/server/status.h"
#include "query/projector/keys.h"
#include "query/projector/projector.h"

namespace ledger::query {
namespace {

using projection::Table;

constexpr int kDefaultPageSize = 100;
constexpr int kMaxPageSize = 1000;
constexpr char kTokenVersion = 0x01;
constexpr int64_t kMaxHistoryBuckets = 366;

grpc::Status Invalid(std::string_view field, std::string_view rule) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, absl::StrCat(std::string(field), ": ", std::string(rule)));
}

using server::ToGrpc;

// Admits the caller and checks that it may query `team`.
absl::StatusOr<auth::Caller> Allow(auth::Gate* gate, grpc::ServerContext* ctx, const std::string& team) {
  auto caller = gate->Admit(*ctx);
  if (!caller.ok()) return caller.status();
  if (auto s = caller->Check(auth::Action::kQuery, team); !s.ok()) return s;
  return caller;
}

// The team rule of receipts (ledger/format/receipt), naming `field`.
grpc::Status CheckTeam(std::string_view field, const std::string& team) {
  return ToGrpc(receipt::CheckTeam(field, team));
}

// The key just after every key starting with `prefix`.
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty() && static_cast<uint8_t>(prefix.back()) == 0xff) prefix.pop_back();
  if (!prefix.empty()) prefix.back() = static_cast<char>(static_cast<uint8_t>(prefix.back()) + 1);
  return prefix;
}

std::string EncodeToken(std::string_view row) { return hash::Base64(std::string(1, kTokenVersion) + std::string(row)); }

absl::StatusOr<std::string> DecodeToken(const std::string& token, std::string_view prefix) {
  auto raw = hash::Base64Decode(token);
  if (!raw.ok() || raw->empty() || (*raw)[0] != kTokenVersion || raw->compare(1, prefix.size(), prefix) != 0) {
    return absl::InvalidArgumentError("page_token: not a token of this query");
  }
  return raw->substr(1);
}

grpc::Status CheckPageSize(int32_t requested, int* size) {
  if (requested < 0 || requested > kMaxPageSize) return Invalid("page_size", "must be 0..1000 (0: 100)");
  *size = requested == 0 ? kDefaultPageSize : requested;
  return grpc::Status::OK;
}

grpc::Status CheckFilter(const pb::StepFilter& f) {
  if (grpc::Status s = CheckTeam("filter.team", f.team()); !s.ok()) return s;
  if (f.run_id().size() > 128) return Invalid("filter.run_id", "at most 128 bytes");
  if (f.trace_id().size() > 128) return Invalid("filter.trace_id", "at most 128 bytes");
  if (f.from_us() < 0 || f.to_us() < 0 || (f.to_us() != 0 && f.to_us() < f.from_us())) {
    return Invalid("filter.from_us", "need 0 <= from_us <= to_us (to_us 0: no bound)");
  }
  for (int s : f.states()) {
    if (s <= 0 || !pb::StepState_IsValid(s)) return Invalid("filter.states", "unknown state");
  }
  for (int a : f.anomalies()) {
    if (a <= 0 || !pb::Anomaly_IsValid(a)) return Invalid("filter.anomalies", "unknown anomaly");
  }
  return grpc::Status::OK;
}

bool Matches(const pb::StepFilter& f, const pb::Step& s) {
  if (s.team() != f.team()) return false;
  if (!f.run_id().empty() && s.run_id() != f.run_id()) return false;
  if (!f.trace_id().empty() && s.trace_id() != f.trace_id()) return false;
  if (f.states_size() > 0 && std::find(f.states().begin(), f.states().end(), s.state()) == f.states().end()) {
    return false;
  }
  if (f.anomalies_size() > 0 && std::none_of(s.anomalies().begin(), s.anomalies().end(), [&](int a) {
        return std::find(f.anomalies().begin(), f.anomalies().end(), a) != f.anomalies().end();
      })) {
    return false;
  }
  if (s.first_at_us() < f.from_us()) return false;
  if (f.to_us() != 0 && s.first_at_us() >= f.to_us()) return false;
  return true;
}

}  // namespace

grpc::Status QueryService::GetStep(grpc::ServerContext* ctx, const pb::GetStepRequest* request, pb::Step* response) {
  if (grpc::Status s = CheckTeam("team", request->team()); !s.ok()) return s;
  auto caller = Allow(gate_, ctx, request->team());
  if (!caller.ok()) return ToGrpc(caller.status());
  if (request->run_id().empty() || request->step_id().empty()) {
    return Invalid(request->run_id().empty() ? "run_id" : "step_id", "required");
  }
  if (request->attempt() < 0) return Invalid("attempt", "must be >= 1 (0: 1)");
  StepKey key{request->team(), request->run_id(), request->step_id(), request->attempt() == 0 ? 1 : request->attempt()};
  auto raw = log_->View().GetProjection(Table::kSteps, EncodeStepKey(key));
  if (!raw.ok()) return ToGrpc(raw.status());
  if (!raw->has_value()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("step: no step '", key.step_id, "' (attempt ", key.attempt, ") in run '",
                                     key.run_id, "' of team ", key.team));
  }
  if (!response->ParseFromString(**raw)) {
    return grpc::Status(grpc::StatusCode::DATA_LOSS, "projection: malformed step record");
  }
  return grpc::Status::OK;
}

grpc::Status QueryService::ListSteps(grpc::ServerContext* ctx, const pb::ListStepsRequest* request,
                                     pb::ListStepsResponse* response) {
  const pb::StepFilter& f = request->filter();
  if (auto s = CheckFilter(f); !s.ok()) return s;
  auto caller = Allow(gate_, ctx, f.team());
  if (!caller.ok()) return ToGrpc(caller.status());
  int page_size = 0;
  if (auto s = CheckPageSize(request->page_size(), &page_size); !s.ok()) return s;
  std::string prefix;
  if (!f.run_id().empty()) {
    prefix = RunTimePrefix(EncodeRunKey(f.team(), f.run_id()));
  } else if (f.states_size() == 1) {
    prefix = StatePrefix(f.team(), f.states(0));
  } else {
    prefix = TeamTimePrefix(f.team());
  }
  std::string lower = prefix + U64(static_cast<uint64_t>(f.from_us()));
  std::string upper = f.to_us() != 0 ? prefix + U64(static_cast<uint64_t>(f.to_us())) : PrefixEnd(prefix);
  if (!request->page_token().empty()) {
    auto after = DecodeToken(request->page_token(), prefix);
    if (!after.ok()) return ToGrpc(after.status());
    upper = std::min(upper, *after);
  }
  const log::LogView view = log_->View();
  // Rows looked at per page, matching or not: a filter that matches little
  // returns short pages with a token rather than scanning a whole team.
  const int budget = 20 * page_size + 1000;
  int examined = 0;
  std::string last_row;
  bool more = false;
  absl::Status read;
  absl::Status scanned =
      view.ScanProjection(Table::kIndex, lower, upper, /*reverse=*/true, [&](std::string_view row, std::string_view) {
        if (response->steps_size() >= page_size || examined >= budget) {
          more = true;
          return false;
        }
        ++examined;
        last_row = std::string(row);
        auto raw = view.GetProjection(Table::kSteps, StepKeyOfRow(row, prefix.size()));
        pb::Step step;
        if (!raw.ok() || !raw->has_value() || !step.ParseFromString(**raw)) {
          read = absl::DataLossError("projection: an indexed step record is missing or malformed");
          return false;
        }
        if (Matches(f, step)) *response->add_steps() = std::move(step);
        return true;
      });
  if (!scanned.ok()) return ToGrpc(scanned);
  if (!read.ok()) return ToGrpc(read);
  if (more) response->set_next_page_token(EncodeToken(last_row));
  return grpc::Status::OK;
}

grpc::Status QueryService::GetRun(grpc::ServerContext* ctx, const pb::GetRunRequest* request, pb::Run* response) {
  if (grpc::Status s = CheckTeam("team", request->team()); !s.ok()) return s;
  auto caller = Allow(gate_, ctx, request->team());
  if (!caller.ok()) return ToGrpc(caller.status());
  if (request->run_id().empty()) return Invalid("run_id", "required");
  auto raw = log_->View().GetProjection(Table::kRuns, EncodeRunKey(request->team(), request->run_id()));
  if (!raw.ok()) return ToGrpc(raw.status());
  if (!raw->has_value()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        absl::StrCat("run: no run '", request->run_id(), "' in team ", request->team()));
  }
  if (!response->ParseFromString(**raw)) {
    return grpc::Status(grpc::StatusCode::DATA_LOSS, "projection: malformed run record");
  }
  return grpc::Status::OK;
}

grpc::Status QueryService::ListRuns(grpc::ServerContext* ctx, const pb::ListRunsRequest* request,
                                    pb::ListRunsResponse* response) {
  if (grpc::Status s = CheckTeam("team", request->team()); !s.ok()) return s;
  auto caller = Allow(gate_, ctx, request->team());
  if (!caller.ok()) return ToGrpc(caller.status());
  if (request->from_us() < 0 || request->to_us() < 0) return Invalid("from_us", "must be >= 0");
  int page_size = 0;
  if (auto s = CheckPageSize(request->page_size(), &page_size); !s.ok()) return s;
  std::string prefix = RunsPrefix(request->team());
  std::string lower = prefix + U64(static_cast<uint64_t>(request->from_us()));
  std::string upper = request->to_us() != 0 ? prefix + U64(static_cast<uint64_t>(request->to_us())) : PrefixEnd(prefix);
  if (!request->page_token().empty()) {
    auto after = DecodeToken(request->page_token(), prefix);
    if (!after.ok()) return ToGrpc(after.status());
    upper = std::min(upper, *after);
  }
  const log::LogView view = log_->View();
  std::string last_row;
  bool more = false;
  absl::Status read;
  absl::Status scanned =
      view.ScanProjection(Table::kIndex, lower, upper, /*reverse=*/true, [&](std::string_view row, std::string_view) {
        if (response->runs_size() >= page_size) {
          more = true;
          return false;
        }
        last_row = std::string(row);
        auto raw = view.GetProjection(Table::kRuns, row.substr(prefix.size() + 8));
        pb::Run run;
        if (!raw.ok() || !raw->has_value() || !run.ParseFromString(**raw)) {
          read = absl::DataLossError("projection: an indexed run record is missing or malformed");
          return false;
        }
        *response->add_runs() = std::move(run);
        return true;
      });
  if (!scanned.ok()) return ToGrpc(scanned);
  if (!read.ok()) return ToGrpc(read);
  if (more) response->set_next_page_token(EncodeToken(last_row));
  return grpc::Status::OK;
}

grpc::Status QueryService::ListCalls(grpc::ServerContext* ctx, const pb::ListCallsRequest* request,
                                     pb::ListCallsResponse* response) {
  if (grpc::Status s = CheckTeam("team", request->team()); !s.ok()) return s;
  auto caller = Allow(gate_, ctx, request->team());
  if (!caller.ok()) return ToGrpc(caller.status());
  if (request->trace_id().empty()) {
    return Invalid("trace_id", "required, 32 lowercase hex digits, not all zero (W3C trace context)");
  }
  if (auto s = receipt::CheckTraceId("trace_id", request->trace_id()); !s.ok()) return ToGrpc(s);
  int page_size = 0;
  if (auto s = CheckPageSize(request->page_size(), &page_size); !s.ok()) return s;
  const std::string prefix = CallTracePrefix(request->team(), request->trace_id());
  std::string lower = prefix;
  if (!request->page_token().empty()) {
    auto after = DecodeToken(request->page_token(), prefix);
    if (!after.ok()) return ToGrpc(after.status());
    lower = *after + std::string(1, '\0');  // the first row after it
  }
  const log::LogView view = log_->View();
  std::string last_row;
  bool more = false;
  absl::Status read;
  absl::Status scanned = view.ScanProjection(
      Table::kIndex, lower, PrefixEnd(prefix), /*reverse=*/false, [&](std::string_view row, std::string_view value) {
        if (response->calls_size() >= page_size) {
          more = true;
          return false;
        }
        auto key = DecodeStepKey(value);
        if (row.size() != prefix.size() + 8 || !key.ok()) {
          read = absl::DataLossError("projection: malformed trace row of a call");
          return false;
        }
        last_row = std::string(row);
        pb::CallRef* call = response->add_calls();
        call->set_seq(ReadU64(row.substr(prefix.size())));
        call->set_run_id(key->run_id);
        call->set_step_id(key->step_id);
        call->set_attempt(key->attempt);
        if (!key->step_id.empty()) {
          auto step = view.GetProjection(Table::kSteps, value);
          if (!step.ok()) {
            read = step.status();
            return false;
          }
          call->set_step_in_log(step->has_value());
        }
        return true;
      });
  if (!scanned.ok()) return ToGrpc(scanned);
  if (!read.ok()) return ToGrpc(read);
  if (more) response->set_next_page_token(EncodeToken(last_row));
  return grpc::Status::OK;
}

grpc::Status QueryService::ListTeams(grpc::ServerContext* ctx, const pb::ListTeamsRequest*,
                                     pb::ListTeamsResponse* response) {
  auto caller = gate_->Admit(*ctx);
  if (!caller.ok()) return ToGrpc(caller.status());
  // Run index rows start 'U', the team's length, the team: one seek per team.
  std::string from = "U";
  while (response->teams_size() < 100'000) {
    std::string found;
    absl::Status s = log_->View().ScanProjection(projection::Table::kIndex, from, "V", false,
                                                 [&](std::string_view key, std::string_view) {
                                                   size_t n = key.size() > 1 ? static_cast<unsigned char>(key[1]) : 0;
                                                   if (key.size() >= 2 + n) found = std::string(key.substr(2, n));
                                                   return false;
                                                 });
    if (!s.ok()) return ToGrpc(s);
    if (found.empty()) break;
    if (caller->Check(auth::Action::kQuery, found).ok()) response->add_teams(found);
    from = RunsPrefix(found) + "\xff";
  }
  return grpc::Status::OK;
}

grpc::Status QueryService::GetTeamSummary(grpc::ServerContext* ctx, const pb::GetTeamSummaryRequest* request,
                                          pb::TeamSummary* response) {
  if (grpc::Status s = CheckTeam("team", request->team()); !s.ok()) return s;
  auto caller = Allow(gate_, ctx, request->team());
  if (!caller.ok()) return ToGrpc(caller.status());
  const std::string& team = request->team();
  response->set_team(team);
  const log::LogView view = log_->View();
  // Each state's rows, keys only.
  struct Counted {
    pb::StepState state;
    void (pb::TeamSummary::*set)(int64_t);
  };
  for (Counted c : {Counted{pb::STEP_STATE_PENDING, &pb::TeamSummary::set_steps_pending},
                    Counted{pb::STEP_STATE_SUCCEEDED, &pb::TeamSummary::set_steps_succeeded},
                    Counted{pb::STEP_STATE_FAILED, &pb::TeamSummary::set_steps_failed},
                    Counted{pb::STEP_STATE_DENIED, &pb::TeamSummary::set_steps_denied},
                    Counted{pb::STEP_STATE_UNKNOWN, &pb::TeamSummary::set_steps_unknown}}) {
    const std::string prefix = StatePrefix(team, c.state);
    int64_t n = 0;
    absl::Status s =
        view.ScanProjection(Table::kIndex, prefix, PrefixEnd(prefix), false, [&](std::string_view, std::string_view) {
          ++n;
          return true;
        });
    if (!s.ok()) return ToGrpc(s);
    (response->*c.set)(n);
  }
  // Overdue: the deadline rows up to now (every team's, few: a step leaves
  // them when it completes or is declared unknown), this team's counted.
  const auto now_us = static_cast<uint64_t>(clock_ ? clock_() : absl::ToUnixMicros(absl::Now()));
  const std::string deadlines(kDeadlinePrefix, sizeof kDeadlinePrefix - 1);
  int64_t overdue = 0;
  absl::Status read;
  absl::Status s = view.ScanProjection(Table::kIndex, deadlines, deadlines + U64(now_us), false,
                                       [&](std::string_view, std::string_view step_key) {
                                         auto key = DecodeStepKey(step_key);
                                         if (!key.ok()) {
                                           read = absl::DataLossError("projection: a deadline row names no step");
                                           return false;
                                         }
                                         if (key->team == team) ++overdue;
                                         return true;
                                       });
  if (!s.ok()) return ToGrpc(s);
  if (!read.ok()) return ToGrpc(read);
  response->set_steps_overdue(overdue);
  // The newest step's first entry, the newest run's last.
  int64_t last = 0;
  const std::string steps = TeamTimePrefix(team);
  s = view.ScanProjection(Table::kIndex, steps, PrefixEnd(steps), /*reverse=*/true,
                          [&](std::string_view row, std::string_view) {
                            if (row.size() >= steps.size() + 8) {
                              last = std::max(last, static_cast<int64_t>(ReadU64(row.substr(steps.size()))));
                            }
                            return false;
                          });
  if (!s.ok()) return ToGrpc(s);
  const std::string runs = RunsPrefix(team);
  s = view.ScanProjection(Table::kIndex, runs, PrefixEnd(runs), /*reverse=*/true,
                          [&](std::string_view row, std::string_view) {
                            auto raw = view.GetProjection(Table::kRuns, row.substr(runs.size() + 8));
                            pb::Run run;
                            if (raw.ok() && raw->has_value() && run.ParseFromString(**raw)) {
                              last = std::max(last, run.last_at_us());
                            }
                            return false;
                          });
  if (!s.ok()) return ToGrpc(s);
  response->set_last_activity_us(last);
  return History(view, *request, static_cast<int64_t>(now_us), response);
}

grpc::Status QueryService::History(const log::LogView& view, const pb::GetTeamSummaryRequest& request, int64_t now_us,
                                   pb::TeamSummary* response) const {
  const int64_t from = request.history_from_us(), width = request.bucket_us();
  if (width == 0) return grpc::Status::OK;
  if (width < 0 || from < 0) return Invalid("bucket_us", "history_from_us and bucket_us must be >= 0");
  if (from >= now_us) return Invalid("history_from_us", "must be before now");
  const int64_t n = (now_us - from + width - 1) / width;
  if (n > kMaxHistoryBuckets) return Invalid("bucket_us", absl::StrCat("at most ", kMaxHistoryBuckets, " buckets"));
  for (int64_t i = 0; i < n; ++i) response->add_history()->set_from_us(from + i * width);
  auto bucket = [&](uint64_t t) -> pb::TeamBucket* {
    if (static_cast<int64_t>(t) < from) return nullptr;
    const int64_t i = (static_cast<int64_t>(t) - from) / width;
    return i < n ? response->mutable_history(static_cast<int>(i)) : nullptr;
  };
  const std::string& team = request.team();
  // State rows: the prefix, first_at_us, the step key.
  struct Counted {
    pb::StepState state;
    int64_t (pb::TeamBucket::*get)() const;
    void (pb::TeamBucket::*set)(int64_t);
  };
  for (Counted c : {Counted{pb::STEP_STATE_UNKNOWN, &pb::TeamBucket::steps_unknown, &pb::TeamBucket::set_steps_unknown},
                    Counted{pb::STEP_STATE_FAILED, &pb::TeamBucket::steps_failed, &pb::TeamBucket::set_steps_failed}}) {
    const std::string prefix = StatePrefix(team, c.state);
    absl::Status s = view.ScanProjection(Table::kIndex, prefix + U64(static_cast<uint64_t>(from)), PrefixEnd(prefix),
                                         false, [&](std::string_view row, std::string_view) {
                                           if (row.size() < prefix.size() + 8) return true;
                                           if (pb::TeamBucket* b = bucket(ReadU64(row.substr(prefix.size())))) {
                                             (b->*c.set)((b->*c.get)() + 1);
                                           }
                                           return true;
                                         });
    if (!s.ok()) return ToGrpc(s);
  }
  // Runs by first entry, their charged cost.
  const std::string runs = RunsPrefix(team);
  absl::Status read;
  absl::Status s =
      view.ScanProjection(Table::kIndex, runs + U64(static_cast<uint64_t>(from)), PrefixEnd(runs), false,
                          [&](std::string_view row, std::string_view) {
                            if (row.size() < runs.size() + 8) return true;
                            pb::TeamBucket* b = bucket(ReadU64(row.substr(runs.size())));
                            if (b == nullptr) return true;
                            auto raw = view.GetProjection(Table::kRuns, row.substr(runs.size() + 8));
                            pb::Run run;
                            if (!raw.ok() || !raw->has_value() || !run.ParseFromString(**raw)) {
                              read = absl::DataLossError("projection: an indexed run record is missing or malformed");
                              return false;
                            }
                            b->set_charged_cost_micros(b->charged_cost_micros() + run.charged_cost_micros());
                            return true;
                          });
  if (!s.ok()) return ToGrpc(s);
  if (!read.ok()) return ToGrpc(read);
  return grpc::Status::OK;
}

grpc::Status QueryService::WatchSteps(grpc::ServerContext* ctx, const pb::WatchStepsRequest* request,
                                      grpc::ServerWriter<pb::StepChange>* writer) {
  const pb::StepFilter& f = request->filter();
  if (auto s = CheckFilter(f); !s.ok()) return s;
  if (request->after_seq() < -1) return Invalid("after_seq", "must be >= -1");
  auto caller = Allow(gate_, ctx, f.team());  // held for the watch's life
  if (!caller.ok()) return ToGrpc(caller.status());
  // The caller is checked against the policy in force before each change
  // and at each wake-up (at most 500 ms apart), so a policy that drops it
  // ends the watch even when nothing changes.
  auto allowed = [&] {
    gate_->Refresh(&*caller);
    return caller->Check(auth::Action::kQuery, f.team());
  };
  uint64_t next = static_cast<uint64_t>(request->after_seq() + 1);
  while (!ctx->IsCancelled()) {
    if (absl::Status s = allowed(); !s.ok()) return ToGrpc(s);
    uint64_t size = log_->head().size;
    if (next < size) {
      bool broken = false;
      absl::Status read;
      // Changes up to the committed size, not the view's: projections are of
      // the latest state.
      absl::Status scanned = log_->View().ScanProjection(
          Table::kChanges, U64(next), U64(size), false, [&](std::string_view, std::string_view value) {
            pb::StepChange change;
            if (!change.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
              read = absl::DataLossError("projection: malformed step change");
              return false;
            }
            if (!Matches(f, change.step())) return true;
            if (read = allowed(); !read.ok()) return false;
            if (!writer->Write(change)) {
              broken = true;
              return false;
            }
            return true;
          });
      if (!scanned.ok()) return ToGrpc(scanned);
      if (!read.ok()) return ToGrpc(read);
      if (broken) return grpc::Status(grpc::StatusCode::CANCELLED, "watch: client went away");
      next = size;
    }
    log_->WaitForMore(next, std::chrono::milliseconds(500));  // or time out to see cancellation
  }
  return grpc::Status(grpc::StatusCode::CANCELLED, "watch: cancelled");
}

}  // namespace ledger::query
