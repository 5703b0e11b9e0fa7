#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "cmd/ledgerctl.h"
#include "ledger/format/receipt/receipt.h"
#include "query/projector/projector.h"
#include "util/text/money.h"
#include "util/text/terminal.h"

namespace ledger::ctl {
namespace {

std::string Time(int64_t us) {
  if (us <= 0) return "-";
  time_t secs = static_cast<time_t>(us / 1'000'000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Parses "a,b" into enum values by their JSON names (1..max). An unknown
// name is INVALID_ARGUMENT naming the flag, the nearest valid name when one
// is close, and every valid name.
template <typename E>
absl::Status ParseNames(const std::string& list, const std::string& flag, std::string (*name)(E), int max,
                        std::vector<E>* out) {
  if (list.empty()) return absl::OkStatus();
  std::vector<std::string> names;
  for (int v = 1; v <= max; ++v) names.push_back(name(static_cast<E>(v)));
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    auto it = std::find(names.begin(), names.end(), part);
    if (it != names.end()) {
      out->push_back(static_cast<E>(it - names.begin() + 1));
      continue;
    }
    std::string near = cmd::Nearest(std::string(part), names);
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": unknown value '", part, "'",
                                                   near.empty() ? "" : absl::StrCat("; did you mean '", near, "'?"),
                                                   " (", absl::StrJoin(names, ", "), ")"));
  }
  return absl::OkStatus();
}

// --team, when given, as the receipts' team rule says (ledger/format/receipt).
absl::Status CheckTeamFlag(const Flags& flags) {
  if (!flags.Has("team")) return absl::OkStatus();
  return receipt::CheckTeam("--team", flags.Get("team"));
}

absl::StatusOr<pb::StepFilter> Filter(const Flags& flags) {
  if (auto s = CheckTeamFlag(flags); !s.ok()) return s;
  pb::StepFilter f;
  f.set_team(flags.Get("team"));
  f.set_run_id(flags.Get("run"));
  std::vector<pb::StepState> states;
  if (auto s =
          ParseNames<pb::StepState>(flags.Get("state"), "state", ledger::query::StateName, pb::StepState_MAX, &states);
      !s.ok()) {
    return s;
  }
  for (auto st : states) f.add_states(st);
  std::vector<pb::Anomaly> anomalies;
  if (auto s = ParseNames<pb::Anomaly>(flags.Get("anomaly"), "anomaly", ledger::query::AnomalyName, pb::Anomaly_MAX,
                                       &anomalies);
      !s.ok()) {
    return s;
  }
  for (auto a : anomalies) f.add_anomalies(a);
  return f;
}

// JSON with every character outside ASCII as \uXXXX: the same values, and
// nothing a terminal acts on (nlohmann::json escapes only C0 controls).
template <typename JsonType>
std::string AsciiJson(const JsonType& j) {
  return j.dump(-1, ' ', /*ensure_ascii=*/true);
}

// Prints rows as columns as wide as their widest cell (the last one
// unpadded), two spaces apart. Cells hold what emitters wrote (ids,
// reasons): escaped for the terminal (util/text).
void PrintColumns(std::vector<std::vector<std::string>> rows) {
  for (auto& row : rows) {
    for (auto& cell : row) cell = ledger::text::TerminalEscape(cell);
  }
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size());
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(width[i] - row[i].size() + 2, ' ');
    }
    std::printf("%s\n", line.c_str());
  }
}

// The steps as a table; with a TEAM column when they may come from several teams.
void PrintStepTable(const std::vector<pb::Step>& steps, bool team) {
  std::vector<std::vector<std::string>> rows;
  auto row = [&](std::vector<std::string> cells) {
    if (!team) cells.erase(cells.begin());
    rows.push_back(std::move(cells));
  };
  row({"TEAM", "STATE", "RUN", "STEP", "TRY", "STARTED (UTC)", "CALLS", "CHARGED", "SEQS", "ANOMALIES"});
  for (const auto& s : steps) {
    std::string state = ledger::query::StateName(s.state());
    if (s.state() == pb::STEP_STATE_FAILED) {
      state = ledger::query::StatusName(s.exec_status());
    }
    if (s.state() == pb::STEP_STATE_UNKNOWN) state = "UNKNOWN(!)";
    std::string anomalies;
    for (int a : s.anomalies()) {
      if (!anomalies.empty()) anomalies += ",";
      anomalies += ledger::query::AnomalyName(static_cast<pb::Anomaly>(a));
    }
    const auto& c = s.calls();
    std::string calls = absl::StrCat(c.model_calls_allowed() + c.tool_calls_allowed(), "/",
                                     c.model_calls_denied() + c.tool_calls_denied());
    std::string seqs = s.seqs_size() > 0 ? absl::StrCat(s.seqs(0), "..", s.seqs(s.seqs_size() - 1)) : "-";
    row({s.team(), state, s.run_id(), s.step_id(), absl::StrCat(s.attempt()), Time(s.first_at_us()), calls,
         ledger::text::Dollars(s.charged_cost_micros()), seqs, anomalies.empty() ? "-" : anomalies});
  }
  PrintColumns(std::move(rows));
}

// Up to `limit` steps matching `filter`, newest first.
absl::StatusOr<std::vector<pb::Step>> ListSteps(pb::QueryService::Stub& stub, const pb::StepFilter& filter,
                                                int64_t limit) {
  pb::ListStepsRequest req;
  *req.mutable_filter() = filter;
  req.set_page_size(static_cast<int32_t>(std::min<int64_t>(limit, 1000)));
  std::vector<pb::Step> steps;
  while (static_cast<int64_t>(steps.size()) < limit) {
    pb::ListStepsResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = stub.ListSteps(&ctx, req, &resp);
    if (!s.ok()) return FromGrpc(s);
    for (auto& st : *resp.mutable_steps()) {
      if (static_cast<int64_t>(steps.size()) < limit) steps.push_back(std::move(st));
    }
    if (resp.next_page_token().empty()) break;
    req.set_page_token(resp.next_page_token());
  }
  return steps;
}

}  // namespace

int Steps(const std::vector<pb::QueryService::Stub*>& stubs, const Flags& flags) {
  auto filter = Filter(flags);
  if (!filter.ok()) return Fail(filter.status());
  auto limit = flags.Int("limit");
  if (!limit.ok()) return Fail(limit.status());
  std::vector<pb::Step> steps;
  if (!filter->team().empty()) {
    auto listed = ListSteps(*stubs.front(), *filter, *limit);
    if (!listed.ok()) return Fail(listed.status());
    steps = *std::move(listed);
  } else {
    for (pb::QueryService::Stub* stub : stubs) {
      pb::ListTeamsResponse teams;
      grpc::ClientContext ctx;
      grpc::Status s = stub->ListTeams(&ctx, pb::ListTeamsRequest(), &teams);
      if (!s.ok()) return Fail(FromGrpc(s));
      for (const std::string& team : teams.teams()) {
        pb::StepFilter f = *filter;
        f.set_team(team);
        auto listed = ListSteps(*stub, f, *limit);
        if (!listed.ok()) return Fail(listed.status());
        for (auto& st : *listed) steps.push_back(std::move(st));
      }
    }
    std::stable_sort(steps.begin(), steps.end(),
                     [](const pb::Step& a, const pb::Step& b) { return a.first_at_us() > b.first_at_us(); });
    if (static_cast<int64_t>(steps.size()) > *limit) steps.resize(static_cast<size_t>(*limit));
  }
  if (flags.Bool("json")) {
    for (const auto& st : steps) std::cout << AsciiJson(ledger::query::StepJson(st)) << "\n";
  } else {
    PrintStepTable(steps, /*team=*/filter->team().empty());
  }
  return 0;
}

int RunSummary(pb::QueryService::Stub& stub, const Flags& flags) {
  if (auto s = receipt::CheckTeam("--team", flags.Get("team")); !s.ok()) return Fail(s);
  if (flags.Get("run").empty()) return Fail(absl::InvalidArgumentError("--run: required, the run_id"));
  pb::GetRunRequest req;
  req.set_team(flags.Get("team"));
  req.set_run_id(flags.Get("run"));
  pb::Run run;
  grpc::ClientContext ctx;
  grpc::Status s = stub.GetRun(&ctx, req, &run);
  if (!s.ok()) return Fail(FromGrpc(s));
  if (flags.Bool("json")) {
    std::cout << AsciiJson(ledger::query::RunJson(run)) << "\n";
    return 0;
  }
  auto e = [](const std::string& value) { return ledger::text::TerminalEscape(value); };
  std::printf("run %s of %s%s%s\n", e(run.run_id()).c_str(), e(run.team()).c_str(),
              run.workflow().empty() ? "" : ", workflow ", e(run.workflow()).c_str());
  std::printf("  entries %lld (seq %llu..%llu), %s .. %s\n", static_cast<long long>(run.entries()),
              static_cast<unsigned long long>(run.first_seq()), static_cast<unsigned long long>(run.last_seq()),
              Time(run.first_at_us()).c_str(), Time(run.last_at_us()).c_str());
  std::printf("  steps: %lld succeeded, %lld failed, %lld denied, %lld pending, %lld UNKNOWN\n",
              static_cast<long long>(run.steps_succeeded()), static_cast<long long>(run.steps_failed()),
              static_cast<long long>(run.steps_denied()), static_cast<long long>(run.steps_pending()),
              static_cast<long long>(run.steps_unknown()));
  for (const auto& u : run.unknown_steps()) {
    std::printf("  UNKNOWN: step %s attempt %lld never reported a completion\n", e(u.step_id()).c_str(),
                static_cast<long long>(u.attempt()));
  }
  const auto& c = run.calls();
  std::printf("  calls: model %lld allowed / %lld denied, tool %lld allowed / %lld denied, tokens %lld in / %lld out\n",
              static_cast<long long>(c.model_calls_allowed()), static_cast<long long>(c.model_calls_denied()),
              static_cast<long long>(c.tool_calls_allowed()), static_cast<long long>(c.tool_calls_denied()),
              static_cast<long long>(c.input_tokens()), static_cast<long long>(c.output_tokens()));
  std::printf("  cost: actual %s, charged %s; steps with anomalies: %lld\n",
              ledger::text::Dollars(run.actual_cost_micros()).c_str(),
              ledger::text::Dollars(run.charged_cost_micros()).c_str(), static_cast<long long>(run.anomalies()));
  return 0;
}

int Watch(pb::QueryService::Stub& stub, const Flags& flags) {
  if (auto s = receipt::CheckTeam("--team", flags.Get("team")); !s.ok()) return Fail(s);
  auto filter = Filter(flags);
  if (!filter.ok()) return Fail(filter.status());
  auto after = flags.Int("after-seq");
  if (!after.ok()) return Fail(after.status());
  pb::WatchStepsRequest req;
  *req.mutable_filter() = *filter;
  req.set_after_seq(*after);
  grpc::ClientContext ctx;
  auto reader = stub.WatchSteps(&ctx, req);
  pb::StepChange change;
  while (reader->Read(&change)) {
    nlohmann::json line = {{"seq", change.seq()}, {"step", ledger::query::StepJson(change.step())}};
    std::cout << AsciiJson(line) << std::endl;
  }
  grpc::Status s = reader->Finish();
  if (!s.ok()) return Fail(FromGrpc(s));
  return 0;
}

}  // namespace ledger::ctl
