// pack_bench: evidence-pack export and verification of one large run.
//
//   pack_bench [--entries N] [--data DIR] [--store-memory-mb MB]
//              [--pack-format 5|6] [--scope run|seq|team] [--runs K]
//
// Fills a ledger (in this process, through Log::Append, projections off:
// export does not read them) with one run of N entries (steps of start,
// three model calls, a tool call and an exec) unless DIR holds it, then
// exports the run's pack and verifies it offline, each in a process of its
// own (this program with --phase export or --phase verify), and prints one
// JSON line: seconds, entries per second, pack size, and each phase's peak
// resident memory (getrusage in that process), to show whether memory
// grows with the pack. The export opens the store with RocksDB's memory
// bounded by --store-memory-mb (as ledgerd's --store-memory-mb does; its
// cache counts in the export's peak).
//
// --scope: the pack of the run (default), of the seq range of the whole log,
// or of team-a's window over the whole log (all of them N entries with one
// run). --runs K: K runs take turns, a step at a time (the log holds N x K
// entries, the exported run every K-th step's): a run interleaved with
// others, whose inclusion proofs share less.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cmd/flags.h"
#include "export/exporter/exporter.h"
#include "export/verify/cc/verify.h"
#include "ledger/keys/key_file.h"
#include "ledger/storage/log/log.h"
#include "nlohmann/json.hpp"

namespace {

namespace pb = evidence::ledger::v1;
using Clock = std::chrono::steady_clock;

long PeakRssKb() {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

uint64_t g_runs = 1;

pb::Receipt Make(uint64_t i) {
  pb::Receipt r;
  uint64_t step = i / 6, part = i % 6;
  r.set_receipt_id(absl::StrCat("pb-", i));
  r.set_team("team-a");
  r.set_run_id(step % g_runs == 0 ? "big-run" : absl::StrCat("other-", step % g_runs));
  r.set_step_id(absl::StrCat("step-", step));
  r.set_occurred_at_us(1767225600000000 + static_cast<int64_t>(i));
  if (part == 0) {
    r.mutable_agent_start()->set_decision(pb::DECISION_ALLOW);
    r.mutable_agent_start()->set_timeout_ms(86'400'000);
  } else if (part == 5) {
    r.mutable_agent_exec()->set_start_receipt_id(absl::StrCat("pb-", step * 6));
    r.mutable_agent_exec()->set_status(pb::EXEC_STATUS_SUCCEEDED);
    r.mutable_agent_exec()->set_cost_micros(100);
  } else if (part == 4) {
    r.mutable_tool_call()->set_tool("git");
    r.mutable_tool_call()->set_decision(pb::DECISION_ALLOW);
  } else {
    auto* m = r.mutable_model_call();
    m->set_route("openai/demo");
    m->set_decision(pb::DECISION_ALLOW);
    m->set_input_tokens(1200);
    m->set_output_tokens(300);
    m->set_cost_micros(40);
    m->set_request_sha256("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
  }
  return r;
}

// The bench's ledger in `data`, its key created there the first time.
absl::StatusOr<std::unique_ptr<ledger::log::Log>> OpenLog(const std::string& data, uint64_t memory_mb = 0) {
  ledger::log::Log::Options o;
  o.data_dir = data;
  if (memory_mb > 0) o.store_memory_bytes = memory_mb << 20;
  o.origin = "pack-bench.test/log";
  auto key = ledger::keys::LoadOrCreateKey(data, "", o.origin);
  if (!key.ok()) return key.status();
  return ledger::log::Log::Open(o, *key);
}

// The entries of the run a run pack holds: every g_runs-th step (of six
// entries, the last one cut short) of the n x g_runs the log holds.
uint64_t RunEntries(uint64_t n) {
  uint64_t total = n * g_runs, count = 0;
  for (uint64_t step = 0; step * 6 < total; step += g_runs) count += std::min<uint64_t>(6, total - step * 6);
  return count;
}

// The export or the verification alone, in this process: one JSON line.
// The scope of --scope over a log of `size` entries.
ledger::exporter::Scope BenchScope(const std::string& scope, uint64_t size) {
  if (scope == "seq") return {"", "", 0, size};
  if (scope == "team") return {"team-a", "", 0, 0, 1, 4102444800000000};  // logged_at_us: the clock
  return {"team-a", "big-run"};
}

int Phase(const std::string& phase, const std::string& data, uint64_t n, uint64_t memory_mb, int format,
          const std::string& scope) {
  std::string pack = absl::StrCat(data, "/", scope, "-", format, ".tar.gz");
  auto t = Clock::now();
  bool ok = false;
  if (phase == "export") {
    auto log = OpenLog(data, memory_mb);
    if (!log.ok()) {
      std::cerr << log.status() << "\n";
      return 1;
    }
    long before = PeakRssKb();
    t = Clock::now();
    absl::Status exported =
        ledger::exporter::ExportPack(**log, BenchScope(scope, (*log)->head().size), pack, {.pack_format = format});
    if (!exported.ok()) std::cerr << exported << "\n";
    ok = exported.ok();
    double s = std::chrono::duration<double>(Clock::now() - t).count();
    std::ofstream((data + "/vkey")) << (*log)->verifier_key() << "\n";
    std::cout << nlohmann::json{{"s", s},
                                {"ok", ok},
                                {"rss_kb_open", before},
                                {"peak_rss_kb", PeakRssKb()},
                                {"rocksdb_table_readers_kb", (*log)->View().MemoryUse().table_readers / 1024}}
                     .dump()
              << std::endl;
    return ok ? 0 : 1;
  }
  std::ifstream in(data + "/vkey");
  ledger::verify::Options vo;
  std::getline(in, vo.vkey);
  auto verified = ledger::verify::VerifyPack(pack, vo);
  ok = verified.ok() && verified->ok && (scope != "run" || verified->entries == RunEntries(n));
  if (verified.ok() && !verified->ok) std::cerr << verified->Summary();
  double s = std::chrono::duration<double>(Clock::now() - t).count();
  std::cout << nlohmann::json{{"s", s}, {"ok", ok}, {"peak_rss_kb", PeakRssKb()}}.dump() << std::endl;
  return ok ? 0 : 1;
}

// Runs this program for one phase and returns its JSON line.
nlohmann::json RunPhase(const std::string& phase, const std::string& data, uint64_t n, uint64_t memory_mb, int format,
                        const std::string& scope) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string cmd =
      absl::StrCat("'", self, "' --phase ", phase, " --entries ", n, " --data '", data, "' --store-memory-mb ",
                   memory_mb, " --pack-format ", format, " --scope ", scope, " --runs ", g_runs);
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (p != nullptr && std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  if (p == nullptr || ::pclose(p) != 0) return {{"ok", false}};
  return nlohmann::json::parse(out, nullptr, false);
}

}  // namespace

int main(int argc, char** argv) {
  ledger::cmd::Flags flags;
  flags.Define("entries", "1000000", "entries in the run");
  flags.Define("data", "", "data directory to fill or reuse (default: a temporary one)");
  flags.Define("phase", "all", "all, or export or verify alone (in this process)");
  flags.Define("store-memory-mb", "64", "the export's bound on RocksDB's memory (ledgerd's --store-memory-mb)");
  flags.Define("pack-format", "6", "the pack format to export, 5 or 6");
  flags.Define("scope", "run", "run, seq (the whole log) or team (team-a's window over the whole log)");
  flags.Define("runs", "1", "runs taking turns a step at a time; the pack is of one of them");
  if (auto s = flags.Parse(argc, argv, 1); !s.ok()) {
    std::cerr << s.message() << "\n";
    return 2;
  }
  uint64_t n = static_cast<uint64_t>(*flags.Int("entries"));
  std::string data = flags.Get("data");
  uint64_t memory_mb = static_cast<uint64_t>(*flags.Int("store-memory-mb"));
  int format = static_cast<int>(*flags.Int("pack-format"));
  std::string scope = flags.Get("scope");
  g_runs = static_cast<uint64_t>(std::max<int64_t>(1, *flags.Int("runs")));
  if (flags.Get("phase") != "all") return Phase(flags.Get("phase"), data, n, memory_mb, format, scope);
  bool temporary = data.empty();
  if (temporary) data = absl::StrCat(std::filesystem::temp_directory_path().string(), "/pack-bench-", ::getpid());
  std::filesystem::create_directories(data);
  double fill_s = 0;
  {
    auto log = OpenLog(data);
    if (!log.ok()) {
      std::cerr << log.status() << "\n";
      return 1;
    }
    auto t = Clock::now();
    for (uint64_t first = (*log)->head().size; first < n * g_runs; first += 1000) {
      auto receipts = std::make_shared<std::vector<pb::Receipt>>();
      for (uint64_t i = first; i < std::min(n * g_runs, first + 1000); ++i) receipts->push_back(Make(i));
      std::vector<const pb::Receipt*> ptrs;
      for (const auto& r : *receipts) ptrs.push_back(&r);
      std::promise<void> done;
      absl::Status s =
          (*log)->Append("bench", ptrs, [&](std::vector<ledger::sequencer::Outcome>) { done.set_value(); });
      if (!s.ok()) {
        std::cerr << s << "\n";
        return 1;
      }
      done.get_future().wait();
    }
    if (auto s = (*log)->SignCheckpoint(); !s.ok()) std::cerr << s << "\n";
    fill_s = std::chrono::duration<double>(Clock::now() - t).count();
  }
  nlohmann::json exported = RunPhase("export", data, n, memory_mb, format, scope);
  nlohmann::json verified = RunPhase("verify", data, n, memory_mb, format, scope);
  std::string pack = absl::StrCat(data, "/", scope, "-", format, ".tar.gz");
  double export_s = exported.value("s", 0.0), verify_s = verified.value("s", 0.0);
  nlohmann::json out = {{"entries", n},
                        {"pack_format", format},
                        {"scope", scope},
                        {"runs", g_runs},
                        {"fill_s", fill_s},
                        {"export_s", export_s},
                        {"export_entries_per_s", export_s > 0 ? static_cast<double>(n) / export_s : 0},
                        {"export_store_memory_mb", memory_mb},
                        {"export_peak_rss_kb", exported.value("peak_rss_kb", 0)},
                        {"export_rss_kb_after_open", exported.value("rss_kb_open", 0)},
                        {"export_rocksdb_table_readers_kb", exported.value("rocksdb_table_readers_kb", 0)},
                        {"pack_bytes", std::filesystem::exists(pack) ? std::filesystem::file_size(pack) : 0},
                        {"verify_s", verify_s},
                        {"verify_entries_per_s", verify_s > 0 ? static_cast<double>(n) / verify_s : 0},
                        {"verify_peak_rss_kb", verified.value("peak_rss_kb", 0)},
                        {"verified", exported.value("ok", false) && verified.value("ok", false)}};
  if (temporary) std::filesystem::remove_all(data);
  std::cout << out.dump() << std::endl;
  return out["verified"].get<bool>() ? 0 : 1;
}
