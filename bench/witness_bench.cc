// witness_bench: add-checkpoint requests per second through a witness's
// HTTP server (the same witness::Witness and http::HttpServer ledger-witness
// runs, in process, records fsynced in a temporary directory), from N
// logs each submitting its next checkpoint (one more leaf, with its
// consistency proof) as soon as the last one was cosigned.
//
//   witness_bench [--logs N] [--seconds S] [--dir DIR]
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cmd/flags.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/note/note.h"
#include "util/http/client.h"
#include "util/http/http.h"
#include "witness/server/witness.h"

namespace {

using ledger::hash::Hash;

// One log: its key and tree, growing one leaf per checkpoint.
class Log {
 public:
  explicit Log(int i)
      : key_(*ledger::note::Signer::FromSeed(absl::StrCat("bench.example/log", i),
                                             std::string(32, static_cast<char>(i + 1)))) {}
  const ledger::note::Signer& key() const { return key_; }
  // The add-checkpoint body from the current size to one leaf more.
  std::string NextBody() {
    uint64_t old = frontier_.size();
    frontier_.Append(ledger::hash::LeafHash(absl::StrCat(old)), [&](int level, uint64_t index, const Hash& h) {
      nodes_[{level, index}] = h;
    });
    uint64_t size = frontier_.size();
    std::string body = absl::StrCat("old ", old, "\n");
    if (old > 0) {
      std::vector<Hash> proof = *ledger::merkle::ConsistencyProof(old, size, node_);
      for (const Hash& h : proof) {
        absl::StrAppend(&body, ledger::hash::Base64(ledger::hash::AsBytes(h)), "\n");
      }
    }
    return absl::StrCat(
        body, "\n",
        *key_.Sign(ledger::note::FormatCheckpoint({key_.name(), size, *ledger::merkle::RootHash(size, node_)})));
  }

 private:
  ledger::note::Signer key_;
  ledger::merkle::Frontier frontier_;
  std::map<std::pair<int, uint64_t>, Hash> nodes_;
  std::function<absl::StatusOr<Hash>(int, uint64_t)> node_ = [this](int level, uint64_t index) -> absl::StatusOr<Hash> {
    return nodes_.at({level, index});
  };
};

}  // namespace

int main(int argc, char** argv) {
  ledger::cmd::Flags flags;
  flags.Define("logs", "8", "logs submitting at once (one client thread each)");
  flags.Define("seconds", "5", "how long to measure");
  flags.Define("dir", "", "where the witness keeps its records (default: a new directory under $TMPDIR)");
  if (auto s = flags.Parse(argc, argv, 1); !s.ok()) {
    std::cerr << s.message() << "\n" << flags.Usage();
    return 2;
  }
  int n = static_cast<int>(*flags.Int("logs"));
  int seconds = static_cast<int>(*flags.Int("seconds"));
  std::string dir = flags.Get("dir");
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp ? tmp : "/tmp") + "/witness-bench-XXXXXX";
    dir = mkdtemp(tmpl.data());
  }
  std::vector<std::unique_ptr<Log>> logs;
  std::vector<ledger::note::Verifier> keys;
  for (int i = 0; i < n; ++i) {
    logs.push_back(std::make_unique<Log>(i));
    keys.push_back(*ledger::note::Verifier::Parse(logs.back()->key().VerifierKey()));
  }
  auto witness = ledger::witness::Witness::Open(dir, *ledger::cosign::Cosigner::Generate("bench.example/witness"), keys,
                                                [] { return static_cast<uint64_t>(std::time(nullptr)); });
  if (!witness.ok()) {
    std::cerr << witness.status() << "\n";
    return 1;
  }
  ledger::http::HttpOptions options;
  options.max_body_bytes = 64 * 1024;
  options.max_per_peer = options.max_connections;  // every client is on loopback
  ledger::witness::Witness& w = **witness;
  auto server = ledger::http::HttpServer::Start(
      "127.0.0.1:0",
      [&w](const ledger::http::HttpRequest& r) {
        ledger::witness::Reply reply = w.AddCheckpoint(r.body);
        ledger::http::HttpResponse out = ledger::http::Text(reply.status, std::move(reply.body));
        out.content_type = reply.content_type;
        return out;
      },
      options);
  if (!server.ok()) {
    std::cerr << server.status() << "\n";
    return 1;
  }
  std::string url = absl::StrCat("http://", (*server)->address(), "/add-checkpoint");
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> ok{0}, failed{0};
  std::vector<std::thread> clients;
  auto start = std::chrono::steady_clock::now();
  for (auto& log : logs) {
    clients.emplace_back([&, log = log.get()] {
      while (!stop) {
        auto reply = ledger::http::HttpPost(url, log->NextBody(), 10'000);
        if (reply.ok() && reply->status == 200)
          ++ok;
        else
          ++failed;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (auto& t : clients) t.join();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "logs " << n << ", " << elapsed << " s: " << ok << " cosigned, " << failed << " failed, "
            << static_cast<uint64_t>(ok / elapsed) << " add-checkpoint/s (each record fsynced before the answer)\n";
  server->reset();
  if (flags.Get("dir").empty()) std::filesystem::remove_all(dir);
  return failed == 0 ? 0 : 1;
}
