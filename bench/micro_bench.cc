// Micro-benchmarks of the append hot path: canonical encoding, leaf hashing,
// Merkle append, checkpoint signing.
//   build/bench/micro_bench
#include <benchmark/benchmark.h>

#include "ledger/format/hash/hash.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/note/note.h"
#include "ledger/format/projection/projection.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"
#include "query/projector/projector.h"

namespace {

namespace pb = evidence::ledger::v1;

pb::Receipt ModelCall() {
  return *ledger::receipt::FromJsonText(
      R"({"receipt_id":"team-code.run-0042.step-1.model.3","kind":"model_call",)"
      R"("team":"team-code","run_id":"run-0042","step_id":"step-1","workflow":"CodeWorkflow",)"
      R"("agent":"coder","occurred_at_us":1767225600123456,)"
      R"("trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7",)"
      R"("provider":"openai","model":"demo-openai","route":"openai/demo-openai",)"
      R"("decision":"allow","input_tokens":1834,"output_tokens":412,"cost_micros":33690,)"
      R"("request_sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",)"
      R"("response_sha256":"60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752",)"
      R"("status_code":200,"latency_ms":1290,"credential_id":"cred-team-code-1",)"
      R"("attributes":{"gateway":"gw-eu-1","policy.version":"2026-11-01"}})");
}

void BM_CanonicalizeModelCall(benchmark::State& state) {
  const pb::Receipt base = ModelCall();
  size_t bytes = 0;
  for (auto _ : state) {
    pb::Receipt r = base;
    auto c = ledger::receipt::Canonicalize(r, ledger::receipt::Author::kEmitter);
    bytes = c->size();
    benchmark::DoNotOptimize(c);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["receipt_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_CanonicalizeModelCall);

void BM_EncodeOnly(benchmark::State& state) {
  const pb::Receipt r = ModelCall();
  for (auto _ : state) benchmark::DoNotOptimize(ledger::receipt::Encode(r));
}
BENCHMARK(BM_EncodeOnly);

void BM_EncodeLeaf(benchmark::State& state) {
  pb::Receipt r = ModelCall();
  std::string canonical = *ledger::receipt::Canonicalize(r, ledger::receipt::Author::kEmitter);
  ledger::hash::Hash prev = ledger::hash::Sha256("prev");
  uint64_t seq = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ledger::receipt::EncodeLeaf(seq + 1, prev, seq, 1767225600123456,
                                                         "spiffe://cluster/ns/team-code/sa/gateway", canonical));
    ++seq;
  }
}
BENCHMARK(BM_EncodeLeaf);

std::string ModelCallLeaf() {
  std::string canonical = *ledger::receipt::Canonicalize(ModelCall(), ledger::receipt::Author::kEmitter);
  return ledger::receipt::EncodeLeaf(7, ledger::hash::Sha256("prev"), 3, 1767225600123456,
                                     "spiffe://cluster/ns/team-code/sa/gateway", canonical);
}

// ParseLeaf: its fast path, ReadLeaf, on a canonical leaf.
void BM_ParseLeaf(benchmark::State& state) {
  std::string leaf = ModelCallLeaf();
  for (auto _ : state) benchmark::DoNotOptimize(ledger::receipt::ParseLeaf(leaf));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(leaf.size()));
}
BENCHMARK(BM_ParseLeaf);

// The reference reader it falls back to (and names the rules with).
void BM_ParseLeafByTree(benchmark::State& state) {
  std::string leaf = ModelCallLeaf();
  for (auto _ : state) benchmark::DoNotOptimize(ledger::receipt::ParseLeafByTree(leaf));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(leaf.size()));
}
BENCHMARK(BM_ParseLeafByTree);

void BM_LeafHash(benchmark::State& state) {
  std::string leaf(static_cast<size_t>(state.range(0)), 'x');
  for (auto _ : state) benchmark::DoNotOptimize(ledger::hash::LeafHash(leaf));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_LeafHash)->Arg(256)->Arg(1024)->Arg(4096);

void BM_MerkleAppend(benchmark::State& state) {
  ledger::merkle::Frontier f;
  ledger::hash::Hash leaf = ledger::hash::Sha256("leaf");
  size_t nodes = 0;
  for (auto _ : state) {
    f.Append(leaf, [&](int, uint64_t, const ledger::hash::Hash&) { ++nodes; });
  }
  benchmark::DoNotOptimize(nodes);
}
BENCHMARK(BM_MerkleAppend);

void BM_MerkleRoot(benchmark::State& state) {
  ledger::merkle::Frontier f;
  ledger::hash::Hash leaf = ledger::hash::Sha256("leaf");
  for (int i = 0; i < 1'000'003; ++i) f.Append(leaf, [](int, uint64_t, const ledger::hash::Hash&) {});
  for (auto _ : state) benchmark::DoNotOptimize(f.Root());
}
BENCHMARK(BM_MerkleRoot);

// The step projector over a batch of 6,000 entries (1,000 steps: start,
// three model calls, a tool call, exec), the shape of a busy ledger's batch.
void BM_ProjectStepsBatch(benchmark::State& state) {
  std::vector<pb::Receipt> receipts;
  for (int step = 0; step < 1000; ++step) {
    std::string sid = "step-" + std::to_string(step), run = "run-" + std::to_string(step / 20);
    auto base = [&](const std::string& id) {
      pb::Receipt r;
      r.set_receipt_id(id);
      r.set_team("team-a");
      r.set_run_id(run);
      r.set_step_id(sid);
      r.set_occurred_at_us(1767225600000000);
      return r;
    };
    pb::Receipt start = base(sid + ".start");
    start.mutable_agent_start()->set_decision(pb::DECISION_ALLOW);
    start.mutable_agent_start()->set_timeout_ms(60000);
    receipts.push_back(start);
    for (int c = 0; c < 4; ++c) {
      pb::Receipt call = base(sid + ".call" + std::to_string(c));
      call.mutable_model_call()->set_route("m");
      call.mutable_model_call()->set_decision(pb::DECISION_ALLOW);
      call.mutable_model_call()->set_cost_micros(100);
      receipts.push_back(call);
    }
    pb::Receipt exec = base(sid + ".exec");
    exec.mutable_agent_exec()->set_start_receipt_id(sid + ".start");
    exec.mutable_agent_exec()->set_status(pb::EXEC_STATUS_SUCCEEDED);
    receipts.push_back(exec);
  }
  std::vector<ledger::projection::Entry> entries;
  for (size_t i = 0; i < receipts.size(); ++i) {
    entries.push_back({i, 1767225600000000 + static_cast<int64_t>(i), "local", &receipts[i]});
  }
  ledger::query::StepProjector projector;
  for (auto _ : state) {
    ledger::projection::OverlayTxn txn(nullptr, nullptr);
    benchmark::DoNotOptimize(projector.Apply(entries, txn));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(entries.size()));
}
BENCHMARK(BM_ProjectStepsBatch)->Unit(benchmark::kMillisecond);

void BM_SignCheckpoint(benchmark::State& state) {
  auto signer = *ledger::note::Signer::Generate("ledger.example.com/prod");
  ledger::note::Checkpoint c{"ledger.example.com/prod", 123456789, ledger::hash::Sha256("root")};
  for (auto _ : state) benchmark::DoNotOptimize(signer.Sign(ledger::note::FormatCheckpoint(c)));
}
BENCHMARK(BM_SignCheckpoint);

void BM_VerifyCheckpoint(benchmark::State& state) {
  auto signer = *ledger::note::Signer::Generate("ledger.example.com/prod");
  auto verifier = *ledger::note::Verifier::Parse(signer.VerifierKey());
  std::string note = *signer.Sign(
      ledger::note::FormatCheckpoint({"ledger.example.com/prod", 123456789, ledger::hash::Sha256("root")}));
  for (auto _ : state) benchmark::DoNotOptimize(verifier.Open(note));
}
BENCHMARK(BM_VerifyCheckpoint);

}  // namespace

BENCHMARK_MAIN();
