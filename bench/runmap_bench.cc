// Micro-benchmarks of the run-head map at 10^3, 10^5 and 10^6 runs: building
// it, a checkpoint's update (1000 changed runs, then the root), proving one
// run (the p99 of single proofs, and the proof's size), and the resident
// memory per run of the in-memory map the ledger keeps.
// Runs of 50 teams.
//   build/bench/runmap_bench --benchmark_min_time=0.2
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ledger/format/runmap/runmap.h"

namespace {

using ledger::runmap::Head;
using ledger::runmap::Key;
using ledger::runmap::RunMap;

// RUNMAP_KEYS=1 measures run keys v1 (CONTRACT section 6a), otherwise v2:
// bench/runmap_keys.sh alternates them.
ledger::runmap::KeyVersion Keys() {
  static const ledger::runmap::KeyVersion keys = [] {
    const char* v = std::getenv("RUNMAP_KEYS");
    return v != nullptr && std::string(v) == "1" ? ledger::runmap::KeyVersion::kV1 : ledger::runmap::KeyVersion::kV2;
  }();
  return keys;
}

Key KeyOf(uint64_t i) {
  return *ledger::runmap::RunKey("team-" + std::to_string(i % 50), "run-" + std::to_string(i), Keys());
}

Head HeadOf(uint64_t i, uint64_t version) {
  return Head{version + 1, i * 8 + version, ledger::hash::Sha256(std::to_string(i + version))};
}

// One built map per size, shared by the benchmarks.
RunMap& Built(int64_t n) {
  static std::map<int64_t, std::unique_ptr<RunMap>> maps;
  auto& m = maps[n];
  if (!m) {
    m = std::make_unique<RunMap>();
    for (int64_t i = 0; i < n; ++i) (void)m->Set(KeyOf(i), HeadOf(i, 0));
    m->Root();
  }
  return *m;
}

void BM_RunMapBuild(benchmark::State& state) {
  std::vector<Key> keys;
  for (int64_t i = 0; i < state.range(0); ++i) keys.push_back(KeyOf(i));
  for (auto _ : state) {
    RunMap m;
    for (size_t i = 0; i < keys.size(); ++i) (void)m.Set(keys[i], HeadOf(i, 0));
    benchmark::DoNotOptimize(m.Root());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_RunMapBuild)->Arg(1000)->Arg(100000)->Arg(1000000)->Iterations(1)->Unit(benchmark::kMillisecond);

// A checkpoint's update: 1000 runs get a new head, then the root.
void BM_RunMapCheckpointUpdate(benchmark::State& state) {
  RunMap& m = Built(state.range(0));
  std::mt19937_64 rng(1);
  uint64_t version = 1, hashed = 0, changed = 0;
  for (auto _ : state) {
    for (int j = 0; j < 1000; ++j) {
      uint64_t i = rng() % state.range(0);
      (void)m.Set(KeyOf(i), HeadOf(i, version));
    }
    uint64_t before = m.nodes_hashed();
    benchmark::DoNotOptimize(m.Root());
    hashed += m.nodes_hashed() - before;
    changed += 1000;
    ++version;
  }
  state.counters["node_hashes_per_run"] = static_cast<double>(hashed) / changed;
  state.SetItemsProcessed(changed);
}
BENCHMARK(BM_RunMapCheckpointUpdate)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

// Proving one run (what Log::ProveRun does under its lock for a run pack),
// with the p99 of single proofs and the proof's size.
void BM_RunMapProve(benchmark::State& state) {
  RunMap& m = Built(state.range(0));
  std::mt19937_64 rng(2);
  uint64_t siblings = 0, max_siblings = 0, proofs = 0;
  std::vector<double> us;
  for (auto _ : state) {
    auto started = std::chrono::steady_clock::now();
    auto proof = m.Prove(KeyOf(rng() % state.range(0)));
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count());
    siblings += proof->siblings.size();
    max_siblings = std::max<uint64_t>(max_siblings, proof->siblings.size());
    ++proofs;
  }
  std::sort(us.begin(), us.end());
  state.counters["p99_us"] = us[us.size() * 99 / 100];
  state.counters["siblings_avg"] = static_cast<double>(siblings) / proofs;
  state.counters["siblings_max"] = static_cast<double>(max_siblings);
  state.counters["bytes_avg"] = 32.0 * siblings / proofs;
}

// Resident memory the map of n runs holds (leaves and cached nodes), from
// /proc/self/statm before and after building it.
void BM_RunMapMemory(benchmark::State& state) {
  auto rss = [] {
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  };
  for (auto _ : state) {
    uint64_t before = rss();
    auto m = std::make_unique<RunMap>();
    for (int64_t i = 0; i < state.range(0); ++i) (void)m->Set(KeyOf(i), HeadOf(i, 0));
    m->Root();
    state.counters["bytes_per_run"] = static_cast<double>(rss() - before) / static_cast<double>(state.range(0));
  }
}
BENCHMARK(BM_RunMapMemory)->Arg(100000)->Arg(1000000)->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RunMapProve)->Arg(1000)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
