// query_bench: query latency with many steps stored.
//
//   query_bench [--steps N] [--data DIR] [--calls N]
//   query_bench --server HOST:PORT [--calls N]
//
// Fills a ledger (in this process, through Log::Append: real sequencer,
// projector and RocksDB) with N steps (agent_start + agent_exec each; three
// teams, runs of 20 steps) unless DIR already holds them, then serves it on
// a loopback port and measures, over gRPC from one client: GetStep of random
// steps, and ListSteps of 100 rows (newest page of a team, a run's page, a
// state's page, and a page 50 pages deep through page tokens), and
// inclusion proofs of random entries against the latest checkpoint. Prints one
// JSON line of p50/p99 latencies in milliseconds.
//
// With --server it fills nothing and measures a running ledgerd (plaintext
// gRPC) as it is: the steps queried are those of entries drawn at random from
// its whole log (read with GetEntries, not timed), so old steps are asked
// for as often as new ones.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <iostream>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cmd/flags.h"
#include "grpcpp/grpcpp.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/keys/key_file.h"
#include "ledger/rpc/server/server.h"
#include "ledger/rpc/service/service.h"
#include "ledger/storage/log/log.h"
#include "ledger_service.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "query.grpc.pb.h"
#include "query/projector/keys.h"
#include "query/projector/projector.h"
#include "query/service/query_service.h"

namespace {

namespace pb = evidence::ledger::v1;
using Clock = std::chrono::steady_clock;

std::string Team(uint64_t step) { return absl::StrCat("team-", step % 3); }
std::string Run(uint64_t step) { return absl::StrCat("run-", step / 20); }
std::string StepId(uint64_t step) { return absl::StrCat("step-", step); }

// A step to query.
struct StepRef {
  std::string team, run, step;
};

absl::Status Fill(ledger::log::Log& log, uint64_t from, uint64_t to) {
  const uint64_t kPerAppend = 500;  // steps: 1,000 receipts
  std::vector<std::future<void>> pending;
  auto last_report = Clock::now();
  for (uint64_t first = from; first < to; first += kPerAppend) {
    auto receipts = std::make_shared<std::vector<pb::Receipt>>();
    for (uint64_t k = first; k < std::min(to, first + kPerAppend); ++k) {
      pb::Receipt start;
      start.set_receipt_id(absl::StrCat("qb-", k, "-start"));
      start.set_team(Team(k));
      start.set_run_id(Run(k));
      start.set_step_id(StepId(k));
      start.set_occurred_at_us(1767225600000000 + static_cast<int64_t>(k));
      start.mutable_agent_start()->set_decision(pb::DECISION_ALLOW);
      start.mutable_agent_start()->set_timeout_ms(86'400'000);
      start.mutable_agent_start()->set_cost_reserved_micros(1000);
      pb::Receipt exec = start;
      exec.set_receipt_id(absl::StrCat("qb-", k, "-exec"));
      exec.clear_agent_start();
      exec.mutable_agent_exec()->set_start_receipt_id(start.receipt_id());
      exec.mutable_agent_exec()->set_status(k % 7 == 3 ? pb::EXEC_STATUS_FAILED : pb::EXEC_STATUS_SUCCEEDED);
      exec.mutable_agent_exec()->set_cost_micros(250);
      receipts->push_back(std::move(start));
      if (k % 50 != 49) receipts->push_back(std::move(exec));  // some stay pending
    }
    std::vector<const pb::Receipt*> ptrs;
    for (const auto& r : *receipts) ptrs.push_back(&r);
    auto done = std::make_shared<std::promise<void>>();
    pending.push_back(done->get_future());
    absl::Status s;
    while (true) {
      s = log.Append("bench", ptrs, [receipts, done](std::vector<ledger::sequencer::Outcome> out) {
        for (const auto& o : out) {
          if (!o.status.ok()) std::cerr << "append: " << o.status << "\n";
        }
        done->set_value();
      });
      if (!absl::IsResourceExhausted(s)) break;
      pending.front().wait();
    }
    if (!s.ok()) return s;
    while (pending.size() > 32) {
      pending.front().wait();
      pending.erase(pending.begin());
    }
    if (Clock::now() - last_report > std::chrono::seconds(5)) {
      std::cerr << "filled " << first << " / " << to << " steps\n";
      last_report = Clock::now();
    }
  }
  for (auto& f : pending) f.wait();
  return absl::OkStatus();
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

nlohmann::json Summary(const std::vector<double>& ms) {
  return {{"calls", ms.size()},
          {"p50_ms", Percentile(ms, 0.5)},
          {"p99_ms", Percentile(ms, 0.99)},
          {"max_ms", Percentile(ms, 1.0)}};
}

// Draws entries at random from a running ledger's log (GetEntries, by seqs)
// until `n` of them are steps' starts or completions, and returns their steps.
absl::StatusOr<std::vector<StepRef>> SampleSteps(pb::LedgerService::Stub& ledger, uint64_t entries, int n,
                                                 std::mt19937_64& rng) {
  std::vector<StepRef> refs;
  while (static_cast<int>(refs.size()) < n) {
    std::vector<uint64_t> seqs;
    for (int i = 0; i < 1000; ++i) seqs.push_back(rng() % entries);
    std::sort(seqs.begin(), seqs.end());
    seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
    pb::GetEntriesRequest req;
    for (uint64_t seq : seqs) req.add_seqs(seq);
    grpc::ClientContext ctx;
    auto reader = ledger.GetEntries(&ctx, req);
    pb::Entry e;
    while (reader->Read(&e)) {
      auto entry = ledger::receipt::ParseLeaf(e.leaf());
      if (!entry.ok()) return entry.status();
      const auto& r = entry->receipt;
      // A step exists once its start or its completion is in the log (a
      // call may name a step the ledger has no record of).
      if (r.has_agent_start() || r.has_agent_exec()) refs.push_back({r.team(), r.run_id(), r.step_id()});
    }
    if (grpc::Status s = reader->Finish(); !s.ok()) return absl::UnavailableError(s.error_message());
  }
  std::shuffle(refs.begin(), refs.end(), rng);
  refs.resize(static_cast<size_t>(n));
  return refs;
}

// Times the queries over `channel`: GetStep of each of `refs`, ListSteps
// pages of their teams, runs and the succeeded state, deep pages of `teams`,
// and inclusion proofs of random entries of the first `entries`.
nlohmann::json Measure(const std::shared_ptr<grpc::Channel>& channel, const std::vector<StepRef>& refs,
                       const std::vector<std::string>& teams, uint64_t entries, int calls, std::mt19937_64& rng) {
  auto stub = pb::QueryService::NewStub(channel);
  auto timed = [&](auto call) {
    auto t0 = Clock::now();
    grpc::Status s = call();
    double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!s.ok()) std::cerr << "query failed: " << s.error_message() << "\n";
    return ms;
  };

  std::vector<double> get_step, list_team, list_run, list_state, list_deep;
  for (const StepRef& ref : refs) {
    get_step.push_back(timed([&] {
      pb::GetStepRequest req;
      req.set_team(ref.team);
      req.set_run_id(ref.run);
      req.set_step_id(ref.step);
      pb::Step out;
      grpc::ClientContext ctx;
      return stub->GetStep(&ctx, req, &out);
    }));
  }
  auto list = [&](pb::ListStepsRequest req, int* rows) {
    pb::ListStepsResponse out;
    grpc::ClientContext ctx;
    grpc::Status s = stub->ListSteps(&ctx, req, &out);
    if (rows) *rows = out.steps_size();
    return s;
  };
  int rows = 0;
  for (const StepRef& ref : refs) {
    pb::ListStepsRequest req;
    req.mutable_filter()->set_team(ref.team);
    req.set_page_size(100);
    list_team.push_back(timed([&] { return list(req, &rows); }));
    req.mutable_filter()->set_run_id(ref.run);
    list_run.push_back(timed([&] { return list(req, nullptr); }));
    req.mutable_filter()->clear_run_id();
    req.mutable_filter()->add_states(pb::STEP_STATE_SUCCEEDED);
    list_state.push_back(timed([&] { return list(req, nullptr); }));
  }
  // Deep pages: follow tokens 50 pages down, timing each page.
  for (const std::string& team : teams) {
    pb::ListStepsRequest req;
    req.mutable_filter()->set_team(team);
    req.set_page_size(100);
    for (int page = 0; page < std::max(1, calls / 150); ++page) {
      pb::ListStepsResponse out;
      double ms = timed([&] {
        grpc::ClientContext ctx;
        return stub->ListSteps(&ctx, req, &out);
      });
      list_deep.push_back(ms);
      if (out.next_page_token().empty()) break;
      req.set_page_token(out.next_page_token());
    }
  }
  // Inclusion proofs of random entries against the latest checkpoint.
  auto ledger = pb::LedgerService::NewStub(channel);
  std::vector<double> prove;
  for (int i = 0; i < calls; ++i) {
    uint64_t seq = rng() % entries;
    prove.push_back(timed([&] {
      pb::GetInclusionProofRequest req;
      req.set_seq(seq);
      pb::InclusionProof out;
      grpc::ClientContext ctx;
      return ledger->GetInclusionProof(&ctx, req, &out);
    }));
  }
  return {{"get_step", Summary(get_step)},
          {"list_steps_team_100", Summary(list_team)},
          {"list_steps_run", Summary(list_run)},
          {"list_steps_state_100", Summary(list_state)},
          {"list_steps_following_tokens_100", Summary(list_deep)},
          {"inclusion_proof", Summary(prove)},
          {"rows_per_team_page", rows}};
}

// --server: a running ledgerd as it is.
int MeasureServer(const std::string& address, int calls) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto ledger = pb::LedgerService::NewStub(channel);
  pb::Checkpoint checkpoint;
  {
    grpc::ClientContext ctx;
    if (grpc::Status s = ledger->GetCheckpoint(&ctx, {}, &checkpoint); !s.ok()) {
      std::cerr << "GetCheckpoint: " << s.error_message() << "\n";
      return 1;
    }
  }
  uint64_t entries = checkpoint.tree_size();
  if (entries == 0) {
    std::cerr << "the ledger's latest checkpoint is of an empty log\n";
    return 1;
  }
  std::mt19937_64 rng(1);
  auto refs = SampleSteps(*ledger, entries, calls, rng);
  if (!refs.ok()) {
    std::cerr << "sampling steps: " << refs.status() << "\n";
    return 1;
  }
  std::vector<std::string> teams;
  for (const StepRef& r : *refs) {
    if (teams.size() < 3 && std::find(teams.begin(), teams.end(), r.team) == teams.end()) teams.push_back(r.team);
  }
  nlohmann::json out = {{"server", address}, {"entries", entries}};
  out.update(Measure(channel, *refs, teams, entries, calls, rng));
  std::cout << out.dump() << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ledger::cmd::Flags flags;
  flags.Define("steps", "1000000", "steps to store");
  flags.Define("data", "", "data directory to fill or reuse (default: a temporary one)");
  flags.Define("calls", "5000", "calls per measured query");
  flags.Define("server", "", "measure this running ledgerd (plaintext gRPC HOST:PORT) instead of filling one");
  if (auto s = flags.Parse(argc, argv, 1); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 2;
  }
  int calls = static_cast<int>(*flags.Int("calls"));
  if (!flags.Get("server").empty()) return MeasureServer(flags.Get("server"), calls);
  uint64_t steps = static_cast<uint64_t>(*flags.Int("steps"));
  std::string data = flags.Get("data");
  bool temporary = data.empty();
  if (temporary) data = absl::StrCat(std::filesystem::temp_directory_path().string(), "/query-bench-", ::getpid());

  ledger::query::StepProjector projector;
  ledger::log::Log::Options o;
  o.data_dir = data;
  o.origin = "query-bench.test/log";
  o.sequencer.projector = &projector;
  auto key = ledger::keys::LoadOrCreateKey((std::filesystem::create_directories(data), data), "", o.origin);
  auto log = ledger::log::Log::Open(o, *key);
  if (!log.ok()) {
    std::cerr << log.status() << "\n";
    return 1;
  }
  uint64_t have_steps = 0;
  {
    // Count the steps already stored by the last step key written.
    for (uint64_t s = steps; s > 0; s /= 2) {
      auto raw = (*log)->View().GetProjection(
          ledger::projection::Table::kSteps, ledger::query::EncodeStepKey({Team(s - 1), Run(s - 1), StepId(s - 1), 1}));
      if (raw.ok() && raw->has_value()) {
        have_steps = s;
        break;
      }
    }
  }
  auto fill_start = Clock::now();
  if (have_steps < steps) {
    if (auto s = Fill(**log, have_steps, steps); !s.ok()) {
      std::cerr << s << "\n";
      return 1;
    }
  }
  double fill_s = std::chrono::duration<double>(Clock::now() - fill_start).count();

  ledger::auth::Gate gate({}, nullptr);
  ledger::query::QueryService query(log->get(), &gate);
  ledger::service::LedgerService ledger_service(log->get(), &gate);
  auto server = ledger::server::Server::Start(&gate, "127.0.0.1:0", {&ledger_service, &query});
  auto channel = grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials());
  std::mt19937_64 rng(1);
  std::vector<StepRef> refs;
  for (int i = 0; i < calls; ++i) {
    uint64_t k = rng() % steps;
    refs.push_back({Team(k), Run(k), StepId(k)});
  }
  (*log)->SignCheckpoint().IgnoreError();
  uint64_t entries = (*log)->head().size;
  nlohmann::json out = {{"steps", steps}, {"entries", entries}, {"fill_s", fill_s}};
  out.update(Measure(channel, refs, {Team(0), Team(1), Team(2)}, entries, calls, rng));
  (*server)->Shutdown();
  log->reset();
  if (temporary) std::filesystem::remove_all(data);
  std::cout << out.dump() << std::endl;
  return 0;
}
