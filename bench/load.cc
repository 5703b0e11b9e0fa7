// ledger_load: a gRPC load generator for the ledger, with a raw RocksDB
// baseline in the same run.
//
//   ledger_load --mode stream|unary --clients N --duration S --batch B
//               [--window W] [--server HOST:PORT] [--baseline=false]
//
// Without --server it starts a ledger in this process on a temporary data
// directory (real gRPC over loopback, real RocksDB with synced writes). It
// then drives N clients for S seconds: unary clients send one request of B
// receipts at a time; stream clients keep W batches of B in flight on one
// AppendStream each. Ack latency is from sending a request to receiving its
// result. The baseline then writes the same leaf bytes straight into a
// RocksDB, with the same sync, batch size and concurrency, for as long.
// Prints one JSON line.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cmd/flags.h"
#include "grpcpp/grpcpp.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/tlogpolicy/tlogpolicy.h"
#include "ledger/rpc/server/server.h"
#include "ledger/rpc/service/service.h"
#include "ledger/storage/log/log.h"
#include "ledger_service.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "query/projector/projector.h"
#include "rocksdb/db.h"
#include "rocksdb/write_batch.h"
#include "util/sync/mutex.h"
#include "witness/client/log_source.h"
#include "witness/client/witnesses.h"

namespace {

namespace pb = evidence::ledger::v1;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

// Receipt ids are unique across runs against the same ledger.
const std::string& RunPrefix() {
  static const std::string prefix = absl::StrCat("load-", Clock::now().time_since_epoch().count(), "-");
  return prefix;
}

// What the clients send: "calls" (model calls only) or "steps" (per step:
// agent_start, three model calls, a tool call, agent_exec; one step in 50
// never completes).
std::string g_workload = "steps";
// Receipts per second each client sends at most (0: as fast as answered).
double g_rate_per_client = 0;

// Sleeps until `sent` receipts are due at the client's rate since `start`.
void Pace(std::chrono::steady_clock::time_point start, uint64_t sent) {
  if (g_rate_per_client <= 0) return;
  std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                            std::chrono::duration<double>(sent / g_rate_per_client)));
}

pb::Receipt MakeCall(int client, uint64_t i);

pb::Receipt MakeReceipt(int client, uint64_t i) {
  if (g_workload == "calls") return MakeCall(client, i);
  uint64_t step = i / 6, part = i % 6;
  std::string step_id = absl::StrCat("step-", step);
  std::string run_id = absl::StrCat(RunPrefix(), "run-", client, "-", step / 20);
  std::string start_id = absl::StrCat(RunPrefix(), client, "-", step, "-start");
  if (part == 0 || part == 5) {
    pb::Receipt r;
    r.set_team(absl::StrCat("team-", client % 3));
    r.set_run_id(run_id);
    r.set_step_id(step_id);
    r.set_workflow("CodeWorkflow");
    r.set_agent("coder");
    r.set_occurred_at_us(1767225600000000 + static_cast<int64_t>(i));
    if (part == 0) {
      r.set_receipt_id(start_id);
      auto* a = r.mutable_agent_start();
      a->set_decision(pb::DECISION_ALLOW);
      a->set_timeout_ms(600'000);
      a->set_cost_reserved_micros(50'000);
      a->set_namespace_("team-code");
      a->set_sandbox("coder");
      a->set_command_sha256("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
    } else {
      if (step % 50 == 49) return MakeCall(client, i);  // the worker died
      r.set_receipt_id(absl::StrCat(RunPrefix(), client, "-", step, "-exec"));
      auto* x = r.mutable_agent_exec();
      x->set_start_receipt_id(start_id);
      x->set_status(step % 10 == 3 ? pb::EXEC_STATUS_FAILED : pb::EXEC_STATUS_SUCCEEDED);
      x->set_exit_code(step % 10 == 3 ? 1 : 0);
      x->set_duration_ms(static_cast<int64_t>(1000 + step % 5000));
      x->set_output_sha256("60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752");
      x->set_cost_micros(1200);
    }
    return r;
  }
  pb::Receipt r = MakeCall(client, i);
  r.set_run_id(run_id);
  r.set_step_id(step_id);
  if (part == 4) {
    r.clear_model_call();
    auto* t = r.mutable_tool_call();
    t->set_tool("git");
    t->set_target("https://git.internal/repo");
    t->set_decision(pb::DECISION_ALLOW);
    t->set_status_code(200);
    t->set_latency_ms(40);
  }
  return r;
}

pb::Receipt MakeCall(int client, uint64_t i) {
  pb::Receipt r;
  r.set_receipt_id(absl::StrCat(RunPrefix(), client, "-", i));
  r.set_team(absl::StrCat("team-", client % 3));
  r.set_run_id(absl::StrCat("run-", client, "-", i / 50));
  r.set_step_id(absl::StrCat("step-", (i / 10) % 5));
  r.set_workflow("CodeWorkflow");
  r.set_agent("coder");
  r.set_occurred_at_us(1767225600000000 + static_cast<int64_t>(i));
  r.set_trace_id("4bf92f3577b34da6a3ce929d0e0e4736");
  r.set_span_id("00f067aa0ba902b7");
  auto* m = r.mutable_model_call();
  m->set_provider("openai");
  m->set_model("demo-openai");
  m->set_route("openai/demo-openai");
  m->set_decision(i % 9 == 0 ? pb::DECISION_DENY : pb::DECISION_ALLOW);
  m->set_input_tokens(static_cast<int64_t>(1000 + i % 3000));
  m->set_output_tokens(static_cast<int64_t>(i % 700));
  m->set_cost_micros(static_cast<int64_t>(i % 50000));
  m->set_request_sha256("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
  m->set_response_sha256("60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752");
  m->set_status_code(200);
  m->set_latency_ms(static_cast<int64_t>(i % 4000));
  return r;
}

// Latency samples, each standing for `count` receipts.
struct Samples {
  std::vector<std::pair<int64_t, uint32_t>> v;  // (microseconds, receipts)
  uint64_t receipts = 0;
  uint64_t errors = 0;
  void Add(int64_t us, uint32_t n) {
    v.emplace_back(us, n);
    receipts += n;
  }
  void Merge(const Samples& o) {
    v.insert(v.end(), o.v.begin(), o.v.end());
    receipts += o.receipts;
    errors += o.errors;
  }
  double PercentileMs(double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    uint64_t total = 0;
    for (const auto& s : v) total += s.second;
    uint64_t want = static_cast<uint64_t>(p * static_cast<double>(total)), seen = 0;
    for (const auto& s : v) {
      seen += s.second;
      if (seen > want) return static_cast<double>(s.first) / 1000.0;
    }
    return static_cast<double>(v.back().first) / 1000.0;
  }
};

int64_t Micros(Clock::duration d) { return std::chrono::duration_cast<std::chrono::microseconds>(d).count(); }

Json Summary(Samples& s, double seconds) {
  return Json{{"receipts", s.receipts},           {"receipts_per_s", static_cast<double>(s.receipts) / seconds},
              {"p50_ms", s.PercentileMs(0.50)},   {"p99_ms", s.PercentileMs(0.99)},
              {"p999_ms", s.PercentileMs(0.999)}, {"errors", s.errors}};
}

void CountResults(const pb::AppendResponse& resp, Samples* s, int64_t us) {
  uint32_t ok = 0;
  for (const auto& r : resp.results()) {
    if (r.code() == 0) {
      ++ok;
    } else {
      ++s->errors;
    }
  }
  if (ok > 0) s->Add(us, ok);
}

// One logical client: a chain of unary calls, each sent when the previous
// one is answered. Driven by gRPC's callback API, so 64 clients cost no 64
// blocked threads in the load generator.
class UnaryClient {
 public:
  UnaryClient(pb::LedgerService::Stub* stub, int id, int batch, Clock::time_point end, Samples* out)
      : stub_(stub), id_(id), batch_(batch), end_(end), out_(out) {}

  void Start() { Send(); }

  void Wait() {
    ledger::sync::MutexLock lock(&mu_);
    while (!done_) cv_.Wait(&mu_);
  }

 private:
  void Send() {
    if (Clock::now() >= end_) {
      ledger::sync::MutexLock lock(&mu_);
      done_ = true;
      cv_.SignalAll();
      return;
    }
    Pace(begun_, next_);
    request_.Clear();
    for (int k = 0; k < batch_; ++k) *request_.add_receipts() = MakeReceipt(id_, next_++);
    response_.Clear();
    ctx_ = std::make_unique<grpc::ClientContext>();
    sent_ = Clock::now();
    stub_->async()->Append(ctx_.get(), &request_, &response_, [this](grpc::Status s) {
      int64_t us = Micros(Clock::now() - sent_);
      if (s.ok()) {
        CountResults(response_, out_, us);
      } else {
        out_->errors += batch_;
      }
      Send();
    });
  }

  pb::LedgerService::Stub* const stub_;
  const int id_;
  const int batch_;
  const Clock::time_point end_;
  Samples* const out_;
  uint64_t next_ = 0;
  const Clock::time_point begun_ = Clock::now();
  pb::AppendRequest request_;
  pb::AppendResponse response_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  Clock::time_point sent_;
  ledger::sync::Mutex mu_;
  ledger::sync::CondVar cv_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

void StreamClient(std::shared_ptr<grpc::Channel> channel, int id, int batch, int window, Clock::time_point end,
                  Samples* out) {
  auto stub = pb::LedgerService::NewStub(channel);
  grpc::ClientContext ctx;
  auto stream = stub->AppendStream(&ctx);
  ledger::sync::Mutex mu;
  ledger::sync::CondVar cv;
  std::deque<Clock::time_point> sent;
  std::thread writer([&] {
    uint64_t i = 0;
    const Clock::time_point begun = Clock::now();
    while (Clock::now() < end) {
      Pace(begun, i);
      pb::AppendRequest req;
      for (int k = 0; k < batch; ++k) *req.add_receipts() = MakeReceipt(id, i++);
      {
        ledger::sync::MutexLock lock(&mu);
        while (static_cast<int>(sent.size()) >= window) cv.Wait(&mu);
        sent.push_back(Clock::now());
      }
      if (!stream->Write(req)) break;
    }
    stream->WritesDone();
  });
  pb::AppendResponse resp;
  while (stream->Read(&resp)) {
    Clock::time_point t0;
    {
      ledger::sync::MutexLock lock(&mu);
      t0 = sent.front();
      sent.pop_front();
    }
    cv.Signal();
    CountResults(resp, out, Micros(Clock::now() - t0));
  }
  writer.join();
  grpc::Status s = stream->Finish();
  if (!s.ok()) std::cerr << "stream " << id << ": " << s.error_message() << "\n";
}

// The same leaf bytes written straight into RocksDB with the same sync,
// batch size and number of concurrent writers.
Json RocksBaseline(const std::string& dir, int writers, int batch, double seconds) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.IncreaseParallelism(2);
  rocksdb::DB* raw = nullptr;
  rocksdb::Status st = rocksdb::DB::Open(options, dir, &raw);
  if (!st.ok()) return Json{{"error", st.ToString()}};
  std::unique_ptr<rocksdb::DB> db(raw);
  auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<Samples> samples(writers);
  std::vector<std::thread> threads;
  std::atomic<uint64_t> next_key{0};
  for (int w = 0; w < writers; ++w) {
    threads.emplace_back([&, w] {
      uint64_t i = 0;
      rocksdb::WriteOptions wo;
      wo.sync = true;
    hash_loop:
      while (Clock::now() < end) {
        rocksdb::WriteBatch wb;
        for (int k = 0; k < batch; ++k) {
          pb::Receipt r = MakeReceipt(w, i++);
          std::string canonical = ledger::receipt::Encode(r);
          uint64_t key = next_key++;
          std::string leaf = ledger::receipt::EncodeLeaf(key, ledger::hash::Hash{}, key, 1, "local", canonical);
          std::string k8(8, '\0');
          for (int b = 0; b < 8; ++b) k8[b] = static_cast<char>(key >> (56 - 8 * b));
          wb.Put(k8, leaf).PermitUncheckedError();
        }
        auto t0 = Clock::now();
        rocksdb::Status s = db->Write(wo, &wb);
        if (!s.ok()) {
          samples[w].errors += batch;
          goto hash_loop;
        }
        samples[w].Add(Micros(Clock::now() - t0), batch);
      }
    });
  }
  for (auto& t : threads) t.join();
  Samples all;
  for (auto& s : samples) all.Merge(s);
  db.reset();
  return Summary(all, seconds);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Submits each checkpoint of `log` to the witnesses of `policy` with a URL,
// over plain HTTP, as ledgerd --witness-policy does.
absl::StatusOr<std::unique_ptr<ledger::witnesses::Witnesses>> StartWitnesses(const ledger::log::Log* log,
                                                                             const std::string& policy,
                                                                             const std::string& dir) {
  auto parsed = ledger::tlogpolicy::Policy::Parse(policy);
  if (!parsed.ok()) return parsed.status();
  std::filesystem::create_directories(dir);
  ledger::witnesses::Source source = ledger::witnesses::LogSource(log);
  auto post = [](const std::string& url, const std::string& body) {
    return ledger::http::HttpPost(url, body, 5000, nullptr);
  };
  return ledger::witnesses::Witnesses::Start(
      *std::move(parsed), std::move(source), post,
      {.data_dir = dir, .poll_ms = 100, .max_backoff_ms = 10'000, .now_s = nullptr, .shared = {}});
}

int Fail(const absl::Status& s) {
  std::cerr << "ledger_load: " << s.message() << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  ledger::cmd::Flags flags;
  flags.Define("mode", "stream", "stream or unary");
  flags.Define("clients", "4", "concurrent clients");
  flags.Define("duration", "10", "seconds of load");
  flags.Define("batch", "100", "receipts per request");
  flags.Define("window", "4", "stream: batches in flight per stream");
  flags.Define("server", "", "an external ledger HOST:PORT (default: one in this process)");
  flags.Define("baseline", "true", "also measure raw RocksDB with the same writes", true);
  flags.Define("workload", "steps", "steps (start, calls, exec) or calls (model calls only)");
  flags.Define("projections", "true", "the in-process ledger keeps projections (step outcomes)", true);
  flags.Define("run-map", "true", "the in-process ledger keeps the run-head map and signs its root", true);
  flags.Define("signing-key", "", "the in-process ledger's key file (default: a new key)");
  flags.Define("witness-policy", "",
               "a tlog-policy: the in-process ledger submits each checkpoint to its witnesses with a URL, "
               "as ledgerd --witness-policy does");
  flags.Define("witnesses", "true", "use --witness-policy (false: ignore it, for ratios)", true);
  flags.Define("rate", "0", "receipts per second in all, spread over the clients (0: as fast as answered)");
  flags.Define("help", "", "print this help", true);
  if (auto s = flags.Parse(argc, argv, 1); !s.ok()) return Fail(s);
  if (flags.Bool("help")) {
    std::cout << "usage: ledger_load [options]\n" << flags.Usage();
    return 0;
  }
  auto clients = flags.Int("clients"), batch = flags.Int("batch"), window = flags.Int("window");
  auto duration = flags.Int("duration");
  for (auto* v : {&clients, &batch, &window, &duration}) {
    if (!v->ok()) return Fail(v->status());
    if (**v < 1) return Fail(absl::InvalidArgumentError("--clients, --batch, --window, --duration: must be >= 1"));
  }
  auto rate = flags.Int("rate");
  if (!rate.ok() || *rate < 0) return Fail(absl::InvalidArgumentError("--rate: receipts per second, >= 0"));
  g_rate_per_client = static_cast<double>(*rate) / static_cast<double>(*clients);
  const std::string mode = flags.Get("mode");
  g_workload = flags.Get("workload");
  if (g_workload != "steps" && g_workload != "calls") {
    return Fail(absl::InvalidArgumentError("--workload: steps or calls"));
  }
  if (mode != "stream" && mode != "unary") return Fail(absl::InvalidArgumentError("--mode: stream or unary"));

  std::string tmp = absl::StrCat(std::filesystem::temp_directory_path().string(), "/ledger-load-", ::getpid());
  ledger::query::StepProjector projector;
  std::unique_ptr<ledger::log::Log> log;
  ledger::auth::Gate gate({}, nullptr);
  std::unique_ptr<ledger::service::LedgerService> ledger;
  std::unique_ptr<ledger::server::Server> server;
  std::unique_ptr<ledger::witnesses::Witnesses> witnesses;
  std::string address = flags.Get("server");
  if (address.empty()) {
    ledger::log::Log::Options o;
    o.data_dir = tmp + "/ledger";
    o.origin = "load.test/log";
    if (flags.Bool("projections")) o.sequencer.projector = &projector;
    o.run_map = flags.Bool("run-map");
    auto signer = ledger::note::Signer::Generate(o.origin);
    if (!flags.Get("signing-key").empty()) {
      signer = ledger::note::Signer::ParseKeyFile(ReadAll(flags.Get("signing-key")));
      if (signer.ok()) o.origin = signer->name();
    }
    if (!signer.ok()) return Fail(signer.status());
    auto opened = ledger::log::Log::Open(o, *signer);
    if (!opened.ok()) return Fail(opened.status());
    log = *std::move(opened);
    if (!flags.Get("witness-policy").empty() && flags.Bool("witnesses")) {
      auto started = StartWitnesses(log.get(), ReadAll(flags.Get("witness-policy")), tmp);
      if (!started.ok()) return Fail(started.status());
      witnesses = *std::move(started);
    }
    ledger = std::make_unique<ledger::service::LedgerService>(log.get(), &gate);
    auto started = ledger::server::Server::Start(&gate, "127.0.0.1:0", {ledger.get()});
    if (!started.ok()) return Fail(started.status());
    server = *std::move(started);
    address = server->address();
  }

  int channels = static_cast<int>(std::min<int64_t>(*clients, 8));
  std::vector<std::shared_ptr<grpc::Channel>> chans;
  for (int c = 0; c < channels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt("ledger.load.channel", c);  // distinct connections
    args.SetMaxReceiveMessageSize(64 << 20);
    chans.push_back(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
  }
  auto start = Clock::now();
  auto end = start + std::chrono::seconds(*duration);
  std::vector<Samples> samples(*clients);
  if (mode == "unary") {
    std::vector<std::unique_ptr<pb::LedgerService::Stub>> stubs;
    for (auto& ch : chans) stubs.push_back(pb::LedgerService::NewStub(ch));
    std::vector<std::unique_ptr<UnaryClient>> unary;
    for (int c = 0; c < *clients; ++c) {
      unary.push_back(std::make_unique<UnaryClient>(stubs[c % channels].get(), c, *batch, end, &samples[c]));
    }
    for (auto& u : unary) u->Start();
    for (auto& u : unary) u->Wait();
  } else {
    std::vector<std::thread> threads;
    for (int c = 0; c < *clients; ++c) {
      threads.emplace_back(StreamClient, chans[c % channels], c, *batch, *window, end, &samples[c]);
    }
    for (auto& t : threads) t.join();
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Samples all;
  for (auto& s : samples) all.Merge(s);

  Json out{{"mode", mode}, {"clients", *clients}, {"batch", *batch}, {"workload", g_workload}};
  if (log != nullptr) {
    out["projections"] = flags.Bool("projections");
    out["run_map"] = flags.Bool("run-map");
  }
  if (mode == "stream") out["window"] = *window;
  out["duration_s"] = seconds;
  out["ledger"] = Summary(all, seconds);
  if (log != nullptr) out["tree_size"] = log->head().size;
  if (witnesses != nullptr) {
    // How many witnesses cosigned the checkpoint signed last: the submissions ran.
    std::this_thread::sleep_for(std::chrono::seconds(2));
    auto latest = log->Checkpoint(0);
    out["witnesses_cosigned_latest"] = latest.ok() ? witnesses->For(latest->note).size() : 0;
  }
  witnesses.reset();
  server.reset();
  log.reset();
  if (flags.Bool("baseline")) {
    std::error_code ec;
    std::filesystem::create_directories(tmp, ec);  // an external --server made none
    int writers = static_cast<int>(mode == "stream" ? *clients * *window : *clients);
    out["rocksdb_baseline"] =
        RocksBaseline(tmp + "/baseline", writers, static_cast<int>(*batch), static_cast<double>(*duration));
    double base = out["rocksdb_baseline"].value("receipts_per_s", 0.0);
    out["ratio_to_baseline"] = base > 0 ? out["ledger"]["receipts_per_s"].get<double>() / base : 0.0;
  }
  std::error_code ec;
  std::filesystem::remove_all(tmp, ec);
  std::cout << out.dump() << std::endl;
  return 0;
}
