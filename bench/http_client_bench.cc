// http_client_bench: the HTTP client (util/http/client.h) against the one
// HTTP server (util/http/http.h) in the same process, on loopback: what a
// monitor does (GETs of entry bundles, 64 KiB each) and what the ledger does
// for witnesses (POSTs of a checkpoint, a small answer), over plain HTTP and
// over HTTPS with client certificates. One JSON line of requests per second
// for each. bench/http_client.sh alternates two builds of it.
//
//   http_client_bench [--requests N] [--tls-dir DIR]
//
// DIR holds ca.pem, server.pem, server.key, client.pem, client.key (the
// server's certificate names 127.0.0.1); without it, plain HTTP only.
#include <chrono>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "cmd/flags.h"
#include "nlohmann/json.hpp"
#include "util/files/files.h"
#include "util/http/client.h"
#include "util/http/http.h"

namespace {

using Clock = std::chrono::steady_clock;

// Requests per second of `n` calls of `fetch`; exits on the first failure.
template <typename F>
double Rate(int n, F fetch) {
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<ledger::http::Reply> reply = fetch();
    if (!reply.ok() || reply->status != 200) {
      std::cerr << "request " << i << ": "
                << (reply.ok() ? absl::StrCat("HTTP ", reply->status) : reply.status().ToString()) << "\n";
      std::exit(1);
    }
  }
  return n / std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  ledger::cmd::Flags flags;
  flags.Define("requests", "2000", "requests of each kind");
  flags.Define("tls-dir", "", "a directory with ca.pem, server.pem, server.key, client.pem, client.key");
  if (auto s = flags.Parse(argc, argv, 1); !s.ok()) {
    std::cerr << s.message() << "\n" << flags.Usage();
    return 2;
  }
  const int n = static_cast<int>(*flags.Int("requests"));
  const std::string bundle(64 * 1024, 'b');
  const std::string checkpoint = "bench.example/log\n1000000\n" + std::string(44, 'r') + "\n\n\xe2\x80\x94 sig\n";
  ledger::http::HttpHandler handler = [&](const ledger::http::HttpRequest& r) {
    if (r.method == "POST")
      return ledger::http::Text(
          200,
          "\xe2\x80\x94 witness.example/w1 "
          "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n");
    ledger::http::HttpResponse out = ledger::http::Text(200, bundle);
    out.content_type = "application/octet-stream";
    return out;
  };
  ledger::http::HttpOptions options;
  options.max_body_bytes = 64 * 1024;
  nlohmann::json result;
  auto measure = [&](const std::string& scheme, const ledger::http::HttpTls* server_tls,
                     const ledger::http::TlsClient* client_tls) {
    auto server = ledger::http::HttpServer::Start("127.0.0.1:0", handler, options, server_tls);
    if (!server.ok()) {
      std::cerr << server.status() << "\n";
      std::exit(1);
    }
    const std::string base = absl::StrCat(scheme, "://", (*server)->address());
    result[scheme + "_get_64k_per_s"] = static_cast<int64_t>(Rate(n, [&] {
      return ledger::http::Fetch("GET", base + "/tlog/tile/entries/000", "",
                                 {.timeout_ms = 10'000, .max_answer = 1 << 20, .tls = client_tls, .peer = "log"});
    }));
    result[scheme + "_post_per_s"] = static_cast<int64_t>(Rate(n, [&] {
      return ledger::http::Fetch("POST", base + "/add-checkpoint", checkpoint,
                                 {.timeout_ms = 10'000, .tls = client_tls, .peer = "witness"});
    }));
  };
  measure("http", nullptr, nullptr);
  if (!flags.Get("tls-dir").empty()) {
    auto read = [&](const char* name) {
      auto text = ledger::files::ReadFile(flags.Get("tls-dir") + "/" + name);
      if (!text.ok()) {
        std::cerr << text.status() << "\n";
        std::exit(1);
      }
      return *text;
    };
    const ledger::http::HttpTls server_tls{read("server.pem"), read("server.key"), read("ca.pem")};
    const ledger::http::TlsClient client_tls{read("ca.pem"), read("client.pem"), read("client.key")};
    measure("https", &server_tls, &client_tls);
  }
  std::cout << result.dump() << "\n";
  return 0;
}
