// retention_fill: a ledger's data directory filled over simulated months,
// and retention passes over it, on the ledger's clock injected (the
// retention tests and bench/retention.sh). The log, its projections and its
// pass are the product's own; only the clock is the test's.
//
//   retention_fill fill DATA --entries N --days D [--run-hours H] [--origin O]
//       N entries over D simulated days from 2026-01-01T00:00:00Z, an hour
//       of them per append: teams acme (half of them), globex (a third)
//       and audit (the rest; entry n's team by n / 2 % 6: 0-2 acme, 3-4
//       globex, 5 audit), a run per team and H hours (default 1: run-<h>
//       for hour h; run-<h / H> otherwise), a step (agent_start
//       and agent_exec) every 50th entry, a call's target naming its seq
//       ("MARK-<seq>-"). A checkpoint is signed after each hour; every
//       checkpoint note is written to DATA/checkpoints.jsonl as
//       {"size":S,"note":"..."}. The key is DATA/signing.key, as ledgerd's.
//   retention_fill prune DATA --policy FILE --day D [--origin O]
//       one retention pass at the start of simulated day D; prints
//       {"pass":P,"pruned":N,"rules":[{"team":T,"below_seq":L},...]}.
//
// Exit 0 on success, 1 with the error on standard error.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/retention/policy.h"
#include "ledger/keys/signing_key.h"
#include "ledger/storage/log/log.h"
#include "nlohmann/json.hpp"
#include "query/projector/projector.h"
#include "util/files/files.h"

namespace {

constexpr int64_t kT0 = 1767225600000000;  // 2026-01-01T00:00:00Z
constexpr int64_t kHour = int64_t{3600} * 1000000;

int Fail(const std::string& why) {
  std::cerr << "retention_fill: " << why << "\n";
  return 1;
}

std::string Flag(int argc, char** argv, const std::string& name, const std::string& fallback = "") {
  for (int i = 3; i + 1 < argc; ++i) {
    if (argv[i] == "--" + name) return argv[i + 1];
  }
  return fallback;
}

absl::StatusOr<std::unique_ptr<ledger::log::Log>> OpenLog(const std::string& data, const std::string& origin,
                                                          std::atomic<int64_t>* now,
                                                          ledger::query::StepProjector* projector) {
  std::error_code ec;
  std::filesystem::create_directories(data, ec);
  if (ec) return absl::UnavailableError(absl::StrCat(data, ": ", ec.message()));
  auto signer = ledger::keys::OpenLogSigner(data, "", origin);
  if (!signer.ok()) return signer.status();
  ledger::log::Log::Options o;
  o.data_dir = data;
  o.origin = origin;
  o.checkpoint_interval_ms = 3'600'000;  // signed by the tool, on its clock
  o.sequencer.clock = [now] { return now->load(); };
  o.sequencer.projector = projector;
  return ledger::log::Log::Open(o, *signer);
}

std::string Receipt(uint64_t seq, const std::string& team, const std::string& run) {
  const std::string id = absl::StrCat("r-", seq);
  if (seq % 50 == 0) {
    return absl::StrCat(R"({"receipt_id":")", id, R"(","kind":"agent_start","team":")", team, R"(","run_id":")", run,
                        R"(","step_id":"s-)", seq, R"(","occurred_at_us":1,"decision":"allow","timeout_ms":60000})");
  }
  if (seq % 50 == 1) {
    return absl::StrCat(R"({"receipt_id":")", id, R"(","kind":"agent_exec","team":")", team, R"(","run_id":")", run,
                        R"(","step_id":"s-)", seq - 1, R"(","occurred_at_us":2,"start_receipt_id":"r-)", seq - 1,
                        R"(","status":"succeeded","exit_code":0})");
  }
  return absl::StrCat(R"({"receipt_id":")", id, R"(","kind":"tool_call","team":")", team, R"(","run_id":")", run,
                      R"(","occurred_at_us":3,"tool":"crm","target":"MARK-)", seq,
                      R"(-customer-record","decision":"allow","latency_ms":12,"request_sha256":")",
                      std::string(64, 'a'), R"("})");
}

int Fill(const std::string& data, const std::string& origin, uint64_t entries, int64_t days, int64_t run_hours) {
  std::atomic<int64_t> now{kT0};
  ledger::query::StepProjector projector;
  auto log = OpenLog(data, origin, &now, &projector);
  if (!log.ok()) return Fail(log.status().ToString());
  std::ofstream notes(data + "/checkpoints.jsonl");
  const int64_t hours = days * 24;
  uint64_t next = (*log)->head().size;
  for (int64_t h = 0; h < hours; ++h) {
    const uint64_t end = entries * static_cast<uint64_t>(h + 1) / static_cast<uint64_t>(hours);
    std::vector<ledger::receipt::Receipt> receipts;
    for (uint64_t seq = next; seq < end; ++seq) {
      // Entries of the same team and hour share a run; seq is the receipt's
      // number, not always its seq in the log (none is the ledger's here).
      const uint64_t k = seq / 2 % 6;  // a step's start (seq % 50 == 0) and completion in one team
      const std::string team = k < 3 ? "acme" : k < 5 ? "globex" : "audit";
      auto r = ledger::receipt::FromJsonText(Receipt(seq, team, absl::StrCat("run-", h / run_hours)));
      if (!r.ok()) return Fail(r.status().ToString());
      receipts.push_back(*std::move(r));
    }
    next = end;
    now = kT0 + h * kHour + 1;
    for (size_t from = 0; from < receipts.size(); from += ledger::log::kMaxReceiptsPerAppend) {
      std::vector<const ledger::receipt::Receipt*> batch;
      for (size_t i = from; i < std::min(receipts.size(), from + ledger::log::kMaxReceiptsPerAppend); ++i) {
        batch.push_back(&receipts[i]);
      }
      std::promise<std::vector<ledger::sequencer::Outcome>> done;
      auto outcome = done.get_future();
      auto s = (*log)->Append("cn:retention-fill", batch,
                              [&done](std::vector<ledger::sequencer::Outcome> o) { done.set_value(std::move(o)); });
      if (!s.ok()) return Fail(s.ToString());
      for (const auto& o : outcome.get()) {
        if (!o.status.ok()) return Fail(o.status.ToString());
      }
    }
    now = kT0 + (h + 1) * kHour - 1;
    if (auto s = (*log)->SignCheckpoint(); !s.ok()) return Fail(s.ToString());
    auto cp = (*log)->Checkpoint(0);
    if (!cp.ok()) return Fail(cp.status().ToString());
    notes << nlohmann::json{{"size", cp->size}, {"note", cp->note}}.dump() << "\n";
  }
  notes.close();
  std::cout << nlohmann::json{{"size", (*log)->head().size}}.dump() << "\n";
  return notes ? 0 : Fail("cannot write checkpoints.jsonl");
}

int Prune(const std::string& data, const std::string& origin, const std::string& policy_path, int64_t day) {
  auto text = ledger::files::ReadFile(policy_path);
  if (!text.ok()) return Fail(text.status().ToString());
  auto policy = ledger::retention::Policy::Parse(*text);
  if (!policy.ok()) return Fail(policy.status().ToString());
  std::atomic<int64_t> now{kT0 + day * 24 * kHour};
  ledger::query::StepProjector projector;
  auto log = OpenLog(data, origin, &now, &projector);  // finishes a pass a stop left midway
  if (!log.ok()) return Fail(log.status().ToString());
  auto done = (*log)->Prune(*policy);
  if (!done.ok()) return Fail(done.status().ToString());
  nlohmann::json rules = nlohmann::json::array();
  for (const auto& r : done->rules) rules.push_back({{"team", r.team}, {"below_seq", r.below_seq}});
  std::cout << nlohmann::json{{"pass", done->pass}, {"pruned", done->pruned}, {"rules", rules}}.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: retention_fill fill DATA --entries N --days D | prune DATA --policy FILE --day D\n";
    return 2;
  }
  const std::string command = argv[1], data = argv[2];
  const std::string origin = Flag(argc, argv, "origin", "retention.test/log");
  if (command == "fill") {
    uint64_t entries = 0;
    int64_t days = 0, run_hours = 1;
    if (!absl::SimpleAtoi(Flag(argc, argv, "entries"), &entries) ||
        !absl::SimpleAtoi(Flag(argc, argv, "days"), &days) || days < 1 ||
        !absl::SimpleAtoi(Flag(argc, argv, "run-hours", "1"), &run_hours) || run_hours < 1) {
      return Fail("fill: --entries N --days D [--run-hours H]");
    }
    return Fill(data, origin, entries, days, run_hours);
  }
  if (command == "prune") {
    int64_t day = 0;
    if (!absl::SimpleAtoi(Flag(argc, argv, "day"), &day)) return Fail("prune: --day D");
    return Prune(data, origin, Flag(argc, argv, "policy"), day);
  }
  return Fail("unknown command " + command);
}
