// http_server_compare: the one HTTP server (util/http/http.h) against
// GNU libmicrohttpd (Debian's libmicrohttpd-dev: four threads of its own
// epoll loop each, 512 connections, a 10 s idle timeout) and cpp-httplib
// (libcpp-httplib-dev: its default pool of max(8, cores - 1) threads, each
// holding a connection from accept to close; a 10 s read timeout), serving
// the same three paths on loopback, in turns in one process. Ours runs four
// handler threads beside its loop, 512 connections, a 10 s deadline for a
// whole request head. For each:
//   - requests per second of GET /small (3 bytes) and GET /bundle (64 KiB)
//     from 8 client threads, a connection per request (Connection: close),
//     plain and, with --tls-dir, HTTPS with client certificates;
//   - POST /echo with a chunked body (Transfer-Encoding: chunked) answered;
//   - slow clients: --slow connections that send a request head one byte
//     every 200 ms and never finish it, while 4 client threads keep asking
//     GET /small with a 2 s timeout for --seconds: the share of those
//     requests answered (and how soon the first was), their p99 latency,
//     and how many slow connections are still open at the end.
// Limits per peer address are off on both (every client is on loopback):
// the global limit of 512 is what the slow clients meet.
// One JSON object: each round's figures and the medians per server.
//
//   http_server_compare [--rounds 3] [--seconds 3] [--slow 600] [--tls-dir DIR]
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cmd/flags.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "util/files/files.h"
#include "util/http/http.h"

namespace {

using Clock = std::chrono::steady_clock;

const std::string kSmall = "ok\n";
const std::string kBundle(64 * 1024, 'b');

struct Pem {
  std::string ca, cert, key, client_cert, client_key;
};

// A server under test: its port, stopped when destroyed.
class Server {
 public:
  virtual ~Server() = default;
  int port = 0;
};

class Ours : public Server {
 public:
  explicit Ours(const Pem* tls) {
    ledger::http::HttpOptions o;
    o.max_connections = 512;
    o.max_per_peer = 4096;  // every client is on loopback: the global limit alone
    o.request_deadline_ms = 10'000;
    o.workers = 4;
    o.max_body_bytes = 1 << 20;
    o.chunked_bodies = true;
    ledger::http::HttpTls t;
    if (tls != nullptr) t = {tls->cert, tls->key, tls->ca};
    auto s = ledger::http::HttpServer::Start(
        "127.0.0.1:0",
        [](const ledger::http::HttpRequest& r) {
          if (r.method == "POST") return ledger::http::Text(200, absl::StrCat(r.body.size()));
          return ledger::http::Text(200, r.path == "/bundle" ? kBundle : kSmall);
        },
        o, tls != nullptr ? &t : nullptr);
    if (!s.ok()) {
      std::cerr << s.status() << "\n";
      std::exit(1);
    }
    server_ = *std::move(s);
    port = std::stoi(server_->address().substr(server_->address().rfind(':') + 1));
  }

 private:
  std::unique_ptr<ledger::http::HttpServer> server_;
};

class Mhd : public Server {
 public:
  explicit Mhd(const Pem* tls) {
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (tls != nullptr) flags |= MHD_USE_TLS;
    daemon_ = tls != nullptr
                  ? MHD_start_daemon(flags, 0, nullptr, nullptr, &Access, nullptr, MHD_OPTION_THREAD_POOL_SIZE, 4u,
                                     MHD_OPTION_CONNECTION_LIMIT, 512u, MHD_OPTION_PER_IP_CONNECTION_LIMIT, 0u,
                                     MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_NOTIFY_COMPLETED, &Completed,
                                     nullptr, MHD_OPTION_HTTPS_MEM_KEY, tls->key.c_str(), MHD_OPTION_HTTPS_MEM_CERT,
                                     tls->cert.c_str(), MHD_OPTION_HTTPS_MEM_TRUST, tls->ca.c_str(), MHD_OPTION_END)
                  : MHD_start_daemon(flags, 0, nullptr, nullptr, &Access, nullptr, MHD_OPTION_THREAD_POOL_SIZE, 4u,
                                     MHD_OPTION_CONNECTION_LIMIT, 512u, MHD_OPTION_PER_IP_CONNECTION_LIMIT, 0u,
                                     MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_NOTIFY_COMPLETED, &Completed,
                                     nullptr, MHD_OPTION_END);
    if (daemon_ == nullptr) {
      std::cerr << "MHD_start_daemon failed\n";
      std::exit(1);
    }
    port = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT)->port;
  }
  ~Mhd() override { MHD_stop_daemon(daemon_); }

 private:
  static MHD_Result Access(void*, MHD_Connection* c, const char* url, const char* method, const char*,
                           const char* upload, size_t* upload_size, void** state) {
    if (std::strcmp(method, "POST") == 0) {
      if (*state == nullptr) {
        *state = new std::string();
        return MHD_YES;
      }
      auto* body = static_cast<std::string*>(*state);
      if (*upload_size != 0) {
        body->append(upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
      }
      return Answer(c, std::to_string(body->size()));
    }
    return Answer(c, std::strcmp(url, "/bundle") == 0 ? kBundle : kSmall);
  }
  static MHD_Result Answer(MHD_Connection* c, const std::string& text) {
    MHD_Response* r =
        MHD_create_response_from_buffer(text.size(), const_cast<char*>(text.data()), MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    MHD_Result ok = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ok;
  }
  static void Completed(void*, MHD_Connection*, void** state, MHD_RequestTerminationCode) {
    delete static_cast<std::string*>(*state);
    *state = nullptr;
  }

  MHD_Daemon* daemon_ = nullptr;
};

class Httplib : public Server {
 public:
  Httplib(const Pem* tls, const std::string& dir) {
    if (tls != nullptr) {
      server_ = std::make_unique<httplib::SSLServer>((dir + "/server.pem").c_str(), (dir + "/server.key").c_str(),
                                                     (dir + "/ca.pem").c_str());
    } else {
      server_ = std::make_unique<httplib::Server>();
    }
    server_->set_read_timeout(10, 0);
    server_->Get("/small", [](const httplib::Request&, httplib::Response& r) { r.set_content(kSmall, "text/plain"); });
    server_->Get("/bundle",
                 [](const httplib::Request&, httplib::Response& r) { r.set_content(kBundle, "text/plain"); });
    server_->Post("/echo", [](const httplib::Request& q, httplib::Response& r) {
      r.set_content(std::to_string(q.body.size()), "text/plain");
    });
    port = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Httplib() override {
    server_->stop();
    thread_.join();
  }

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
};

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One request on a connection of its own; whether a 200 came back whole
// (the connection's end) within timeout_ms.
bool Request(int port, SSL_CTX* tls, const std::string& request, int timeout_ms) {
  int fd = Connect(port);
  if (fd < 0) return false;
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::string in;
  char buf[16384];
  bool ok = false;
  if (tls != nullptr) {
    SSL* ssl = SSL_new(tls);
    SSL_set_fd(ssl, fd);
    if (SSL_connect(ssl) == 1 && SSL_write(ssl, request.data(), static_cast<int>(request.size())) > 0) {
      for (int n; (n = SSL_read(ssl, buf, sizeof buf)) > 0;) in.append(buf, static_cast<size_t>(n));
      ok = true;
    }
    SSL_free(ssl);
    ERR_clear_error();
  } else if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) in.append(buf, static_cast<size_t>(n));
    ok = true;
  }
  ::close(fd);
  return ok && in.starts_with("HTTP/1.1 200");
}

std::string Get(const char* path) {
  return absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n");
}

// Requests per second of `request` from `threads` threads for `seconds`;
// exits when one fails.
double Rate(int port, SSL_CTX* tls, const std::string& request, int threads, double seconds) {
  std::atomic<int64_t> done{0};
  std::atomic<bool> failed{false};
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  const auto start = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&] {
      while (Clock::now() < end && !failed) {
        if (Request(port, tls, request, 10'000)) {
          ++done;
        } else {
          failed = true;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  if (failed) {
    std::cerr << "a request failed\n";
    std::exit(1);
  }
  return done / std::chrono::duration<double>(Clock::now() - start).count();
}

// Slow clients against the server while others ask; see the file's comment.
nlohmann::json SlowClients(int port, int slow, double seconds) {
  std::vector<int> fds;
  for (int i = 0; i < slow; ++i) {
    int fd = Connect(port);
    if (fd >= 0) {
      ::send(fd, "GET /small HTTP/1.1\r\nHost: bench\r\nX-Slow: ", 42, MSG_NOSIGNAL);
      fds.push_back(fd);
    }
  }
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    while (!stop) {
      for (int fd : fds) ::send(fd, "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  std::atomic<int64_t> ok{0}, failed{0};
  std::atomic<int64_t> first_ok_ms{-1};
  const auto began = Clock::now();
  std::vector<std::vector<double>> latencies(4);
  std::vector<std::thread> ts;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      while (Clock::now() < end) {
        const auto a = Clock::now();
        if (Request(port, nullptr, Get("/small"), 2000)) {
          ++ok;
          int64_t none = -1;
          first_ok_ms.compare_exchange_strong(
              none, std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - began).count());
          latencies[t].push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
        } else {
          ++failed;
        }
      }
    });
  }
  for (auto& t : ts) t.join();
  stop = true;
  trickle.join();
  int open = 0;
  for (int fd : fds) {
    pollfd p{fd, POLLIN, 0};
    char c;
    // Closed by the server: readable with EOF (or reset).
    if (::poll(&p, 1, 0) == 0 || (::recv(fd, &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN)) ++open;
    ::close(fd);
  }
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  const double total = static_cast<double>(ok + failed);
  return {{"slow_connected", fds.size()},
          {"answered_share", total == 0 ? 0.0 : ok / total},
          {"answered", ok.load()},
          {"refused_or_timed_out", failed.load()},
          {"first_answered_ms", first_ok_ms.load()},
          {"p99_ms", all.empty() ? -1.0 : all[all.size() * 99 / 100]},
          {"slow_still_open", open}};
}

bool ChunkedPost(int port) {
  const std::string request =
      "POST /echo HTTP/1.1\r\nHost: bench\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
  return Request(port, nullptr, request, 5000);
}

}  // namespace

int main(int argc, char** argv) {
  ledger::cmd::Flags flags;
  flags.Define("rounds", "3", "rounds, each server once a round, alternating which goes first");
  flags.Define("seconds", "3", "seconds of each measurement");
  flags.Define("slow", "600", "slow connections");
  flags.Define("tls-dir", "", "a directory with ca.pem, server.pem, server.key, client.pem, client.key");
  if (auto s = flags.Parse(argc, argv, 1); !s.ok()) {
    std::cerr << s.message() << "\n" << flags.Usage();
    return 2;
  }
  const int rounds = static_cast<int>(*flags.Int("rounds"));
  const double seconds = static_cast<double>(*flags.Int("seconds"));
  const int slow = static_cast<int>(*flags.Int("slow"));
  std::optional<Pem> pem;
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> client(nullptr, SSL_CTX_free);
  if (!flags.Get("tls-dir").empty()) {
    auto read = [&](const char* name) { return *ledger::files::ReadFile(flags.Get("tls-dir") + "/" + name); };
    pem = Pem{read("ca.pem"), read("server.pem"), read("server.key"), read("client.pem"), read("client.key")};
    client.reset(SSL_CTX_new(TLS_client_method()));
    const std::string dir = flags.Get("tls-dir");
    SSL_CTX_load_verify_locations(client.get(), (dir + "/ca.pem").c_str(), nullptr);
    SSL_CTX_set_verify(client.get(), SSL_VERIFY_PEER, nullptr);
    SSL_CTX_use_certificate_file(client.get(), (dir + "/client.pem").c_str(), SSL_FILETYPE_PEM);
    SSL_CTX_use_PrivateKey_file(client.get(), (dir + "/client.key").c_str(), SSL_FILETYPE_PEM);
  }
  nlohmann::json out = {{"rounds", nlohmann::json::array()}};
  for (int round = 0; round < rounds; ++round) {
    nlohmann::json r;
    for (int i = 0; i < 3; ++i) {
      const int which = (round + i) % 3;
      const std::string name = which == 0 ? "ours" : which == 1 ? "libmicrohttpd" : "cpp-httplib";
      auto make = [&](const Pem* tls) -> std::unique_ptr<Server> {
        if (which == 0) return std::make_unique<Ours>(tls);
        if (which == 1) return std::make_unique<Mhd>(tls);
        return std::make_unique<Httplib>(tls, flags.Get("tls-dir"));
      };
      nlohmann::json f;
      {
        auto s = make(nullptr);
        f["small_per_s"] = static_cast<int64_t>(Rate(s->port, nullptr, Get("/small"), 8, seconds));
        f["bundle_per_s"] = static_cast<int64_t>(Rate(s->port, nullptr, Get("/bundle"), 8, seconds));
        f["chunked_post"] = ChunkedPost(s->port);
      }
      if (pem.has_value()) {
        auto s = make(&*pem);
        f["tls_bundle_per_s"] = static_cast<int64_t>(Rate(s->port, client.get(), Get("/bundle"), 8, seconds));
      }
      {
        auto s = make(nullptr);
        f["slow_clients"] = SlowClients(s->port, slow, std::max(seconds, 12.0));
      }
      r[name] = f;
      std::cerr << name << " " << f.dump() << "\n";
    }
    out["rounds"].push_back(r);
  }
  std::cout << out.dump(1) << "\n";
  return 0;
}
