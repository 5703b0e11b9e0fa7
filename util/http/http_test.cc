#include "util/http/http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace ledger::http {
namespace {

std::string Exchange(const std::string& address, const std::string& raw) {
  int port = std::stoi(address.substr(address.rfind(':') + 1));
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return "connect failed";
  ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

TEST(Http, RoutesQueriesAndRefusals) {
  auto server = HttpServer::Start("127.0.0.1:0", [](const HttpRequest& r) {
    if (r.path != "/echo") return Text(404, "no\n");
    return Text(200, r.path + "|" + r.query.at("team") + "|" + r.headers.at("x-id"));
  });
  ASSERT_TRUE(server.ok()) << server.status();
  std::string addr = (*server)->address();
  std::string ok = Exchange(addr, "GET /echo?team=team%2Da+x HTTP/1.1\r\nHost: x\r\nX-Id: 7\r\n\r\n");
  EXPECT_EQ(ok.substr(0, 15), "HTTP/1.1 200 OK");
  EXPECT_NE(ok.find("Content-Length: 16\r\n"), std::string::npos) << ok;
  EXPECT_EQ(ok.substr(ok.size() - 16), "/echo|team-a x|7");
  EXPECT_EQ(Exchange(addr, "GET /other HTTP/1.1\r\n\r\n").substr(0, 12), "HTTP/1.1 404");
  EXPECT_EQ(Exchange(addr, "POST /echo HTTP/1.1\r\n\r\n").substr(0, 12), "HTTP/1.1 405");
  EXPECT_EQ(Exchange(addr, "GET /echo?team=%zz HTTP/1.1\r\n\r\n").substr(0, 12), "HTTP/1.1 400");
  EXPECT_EQ(Exchange(addr, "NONSENSE\r\n\r\n").substr(0, 12), "HTTP/1.1 400");
  EXPECT_EQ(Exchange(addr, "GET / HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n").substr(0, 12),
            "HTTP/1.1 431");
  std::string head = Exchange(addr, "HEAD /echo?team=a HTTP/1.1\r\nX-Id: 1\r\n\r\n");
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");  // headers only
}

// Bodies come with a Content-Length or in chunks (as Node's http client
// sends a piped body); either way the handler sees the data, within the limit.
TEST(Http, PostBodiesByLengthOrInChunksWithinTheLimit) {
  HttpOptions options;
  options.max_body_bytes = 10;
  options.chunked_bodies = true;
  auto server = HttpServer::Start(
      "127.0.0.1:0", [](const HttpRequest& r) { return Text(200, "[" + r.body + "]"); }, options);
  ASSERT_TRUE(server.ok()) << server.status();
  std::string addr = (*server)->address();
  auto body_of = [](const std::string& response) { return response.substr(response.find("\r\n\r\n") + 4); };
  EXPECT_EQ(body_of(Exchange(addr, "POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")), "[hello]");
  EXPECT_EQ(body_of(Exchange(addr,
                             "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "3;ext=1\r\nhel\r\n7\r\nlo, wor\r\n0\r\nX-Trailer: t\r\n\r\n")),
            "[hello, wor]");
  std::string chunked = "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(Exchange(addr, chunked + "6\r\nhello,\r\n5\r\n worl\r\n0\r\n\r\n").substr(0, 12), "HTTP/1.1 413");
  EXPECT_EQ(Exchange(addr, chunked + "zz\r\nhello\r\n0\r\n\r\n").substr(0, 12), "HTTP/1.1 400");
  EXPECT_EQ(Exchange(addr, chunked + "2\r\nhello\r\n0\r\n\r\n").substr(0, 12), "HTTP/1.1 400");
  EXPECT_EQ(Exchange(addr, "POST /p HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n").substr(0, 12), "HTTP/1.1 411");
  EXPECT_EQ(Exchange(addr, "POST /p HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world").substr(0, 12), "HTTP/1.1 413");
  // Without chunked_bodies, chunks are refused.
  options.chunked_bodies = false;
  auto strict = HttpServer::Start(
      "127.0.0.1:0", [](const HttpRequest& r) { return Text(200, r.body); }, options);
  ASSERT_TRUE(strict.ok()) << strict.status();
  EXPECT_EQ(Exchange((*strict)->address(), chunked + "2\r\nhe\r\n0\r\n\r\n").substr(0, 12), "HTTP/1.1 411");
}

// A connection to `address` from `source`, or -1.
int Connect(const std::string& address, const char* source = "127.0.0.1") {
  int port = std::stoi(address.substr(address.rfind(':') + 1));
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes (at most `seconds`).
std::string ReadAll(int fd, int seconds = 5) {
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(Http, ServesFarMoreIdleConnectionsThanThreads) {
  HttpOptions options;
  options.max_per_peer = 1000;
  options.workers = 2;
  auto server = HttpServer::Start(
      "127.0.0.1:0", [](const HttpRequest&) { return Text(200, "ok\n"); }, options);
  ASSERT_TRUE(server.ok()) << server.status();
  std::vector<int> idle;
  for (int i = 0; i < 200; ++i) {
    int fd = Connect((*server)->address());
    ASSERT_GE(fd, 0);
    ::send(fd, "GET / HTTP/1.1\r\n", 16, MSG_NOSIGNAL);  // and never the rest
    idle.push_back(fd);
  }
  EXPECT_EQ(Exchange((*server)->address(), "GET / HTTP/1.1\r\n\r\n").substr(0, 15), "HTTP/1.1 200 OK");
  for (int fd : idle) ::close(fd);
}

TEST(Http, RequestDeadlineBoundsATrickleAsAWhole) {
  HttpOptions options;
  options.request_deadline_ms = 600;
  auto server = HttpServer::Start(
      "127.0.0.1:0", [](const HttpRequest&) { return Text(200, "ok\n"); }, options);
  ASSERT_TRUE(server.ok()) << server.status();
  int fd = Connect((*server)->address());
  ASSERT_GE(fd, 0);
  auto started = std::chrono::steady_clock::now();
  bool closed = false;
  // A byte every 100 ms: no single read waits long, the whole never ends.
  for (int i = 0; i < 40 && !closed; ++i) {
    closed = ::send(fd, "G", 1, MSG_NOSIGNAL) < 0;
    char c;
    closed = closed || ::recv(fd, &c, 1, MSG_DONTWAIT) == 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto lasted = std::chrono::steady_clock::now() - started;
  EXPECT_TRUE(closed);
  EXPECT_LT(lasted, std::chrono::milliseconds(1500));
  ::close(fd);
}

TEST(Http, CapsConnectionsPerPeerAddress) {
  HttpOptions options;
  options.max_per_peer = 3;
  auto server = HttpServer::Start(
      "127.0.0.1:0", [](const HttpRequest&) { return Text(200, "ok\n"); }, options);
  ASSERT_TRUE(server.ok()) << server.status();
  std::vector<int> held;
  held.reserve(3);
  for (int i = 0; i < 3; ++i) held.push_back(Connect((*server)->address(), "127.0.0.2"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // accepted
  int over = Connect((*server)->address(), "127.0.0.2");
  EXPECT_EQ(ReadAll(over), "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  ::close(over);
  // Another address is not affected; a closed connection frees its place.
  EXPECT_EQ(Exchange((*server)->address(), "GET / HTTP/1.1\r\n\r\n").substr(0, 15), "HTTP/1.1 200 OK");
  ::close(held.back());
  held.pop_back();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int again = Connect((*server)->address(), "127.0.0.2");
  ::send(again, "GET / HTTP/1.1\r\n\r\n", 18, MSG_NOSIGNAL);
  EXPECT_EQ(ReadAll(again).substr(0, 15), "HTTP/1.1 200 OK");
  ::close(again);
  for (int fd : held) ::close(fd);
}

TEST(Http, BodiesStillArrivingAreBoundedPerPeerAddress) {
  HttpOptions options;
  options.max_body_bytes = 64 << 10;
  options.max_body_bytes_per_peer = 100 << 10;
  options.chunked_bodies = true;
  auto server = HttpServer::Start(
      "127.0.0.1:0", [](const HttpRequest& r) { return Text(200, std::to_string(r.body.size())); }, options);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string addr = (*server)->address();
  // A chunked upload of 20 KiB, not finished: the server holds 40 KiB of
  // it (the chunk as sent, and its data decoded).
  const std::string chunk = absl::StrCat(absl::Hex(20 << 10), "\r\n", std::string(20 << 10, 'x'), "\r\n");
  auto begin = [&](const char* source) {
    int fd = Connect(addr, source);
    std::string head = "POST /v1/traces HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk;
    ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // read by the server
    return fd;
  };
  auto finish = [](int fd) {
    ::send(fd, "0\r\n\r\n", 5, MSG_NOSIGNAL);
    std::string out = ReadAll(fd);
    ::close(fd);
    return out.substr(0, out.find("\r\n")) + " " + out.substr(out.find("\r\n\r\n") + 4);
  };
  int a = begin("127.0.0.3"), b = begin("127.0.0.3");
  // A third would make 120 KiB arriving at once from 127.0.0.3.
  int c = begin("127.0.0.3");
  EXPECT_EQ(finish(c),
            "HTTP/1.1 429 Too Many Requests body: this address has more than 102400 bytes of request bodies arriving "
            "at once; finish or close the others first\n");
  // Another address has a bound of its own; the first two finish.
  EXPECT_EQ(finish(begin("127.0.0.4")), "HTTP/1.1 200 OK 20480");
  EXPECT_EQ(finish(a), "HTTP/1.1 200 OK 20480");
  // A finished body and a closed connection free their bytes.
  ::close(b);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int d = begin("127.0.0.3"), e = begin("127.0.0.3");
  EXPECT_EQ(finish(d), "HTTP/1.1 200 OK 20480");
  EXPECT_EQ(finish(e), "HTTP/1.1 200 OK 20480");
  // Content-Length bodies count too.
  int f = begin("127.0.0.3"), g = begin("127.0.0.3");
  int h = Connect(addr, "127.0.0.3");
  std::string sized = "POST /v1/traces HTTP/1.1\r\nContent-Length: 60000\r\n\r\n" + std::string(40000, 'y');
  ::send(h, sized.data(), sized.size(), MSG_NOSIGNAL);
  EXPECT_EQ(ReadAll(h).substr(0, 12), "HTTP/1.1 429");
  for (int fd : {f, g, h}) ::close(fd);
}

TEST(Http, QuickPathsDoNotWaitBehindSlowHandlers) {
  std::atomic<bool> release{false};
  HttpOptions options;
  options.workers = 1;
  options.quick_paths = {"/healthz"};
  auto server = HttpServer::Start(
      "127.0.0.1:0",
      [&](const HttpRequest& r) {
        for (int i = 0; r.path == "/slow" && !release && i < 500; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return Text(200, r.path + "\n");
      },
      options);
  ASSERT_TRUE(server.ok()) << server.status();
  std::vector<std::thread> slow;
  slow.reserve(3);
  for (int i = 0; i < 3; ++i) {
    slow.emplace_back([&] { Exchange((*server)->address(), "GET /slow HTTP/1.1\r\n\r\n"); });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the worker is busy, two wait
  auto started = std::chrono::steady_clock::now();
  std::string probe = Exchange((*server)->address(), "GET /healthz?x=1 HTTP/1.1\r\n\r\n");
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
  EXPECT_EQ(probe.substr(probe.size() - 9), "/healthz\n");
  EXPECT_FALSE(release.load());
  release = true;
  for (std::thread& t : slow) t.join();
}

TEST(Http, WhenFullTheLongestWaitingConnectionMakesRoom) {
  HttpOptions options;
  options.max_connections = 20;
  options.max_per_peer = 5;
  auto server = HttpServer::Start(
      "127.0.0.1:0", [](const HttpRequest&) { return Text(200, "ok\n"); }, options);
  ASSERT_TRUE(server.ok()) << server.status();
  // Five slow connections from each of eight addresses: twice the room.
  std::vector<int> slow;
  for (int a = 2; a < 10; ++a) {
    std::string source = "127.0.0." + std::to_string(a);
    for (int i = 0; i < 5; ++i) {
      int fd = Connect((*server)->address(), source.c_str());
      ASSERT_GE(fd, 0);
      ::send(fd, "GET / HTTP/1.1\r\n", 16, MSG_NOSIGNAL);
      slow.push_back(fd);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(Exchange((*server)->address(), "GET / HTTP/1.1\r\n\r\n").substr(0, 15), "HTTP/1.1 200 OK");
  // The first ones were closed to make room; the last ones still wait.
  EXPECT_EQ(ReadAll(slow.front(), 1), "");
  char c;
  EXPECT_EQ(::recv(slow.back(), &c, 1, MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EAGAIN);
  for (int fd : slow) ::close(fd);
}

TEST(Http, AResponseThatMakesNoProgressIsDropped) {
  HttpOptions options;
  options.send_idle_ms = 300;
  const std::string body(16 << 20, 'x');
  auto server = HttpServer::Start(
      "127.0.0.1:0", [&](const HttpRequest&) { return Text(200, body); }, options);
  ASSERT_TRUE(server.ok()) << server.status();
  int fd = Connect((*server)->address());
  ASSERT_GE(fd, 0);
  ::send(fd, "GET / HTTP/1.1\r\n\r\n", 18, MSG_NOSIGNAL);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // reads nothing meanwhile
  std::string got = ReadAll(fd, 2);
  EXPECT_EQ(got.substr(0, 15), "HTTP/1.1 200 OK");
  EXPECT_LT(got.size(), body.size());  // cut short: the rest was never sent
  ::close(fd);
}

// Connects to `address` and sends `raw`; the socket, for the caller to read.
int SendRequest(const std::string& address, const std::string& raw) {
  int port = std::stoi(address.substr(address.rfind(':') + 1));
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int small = 4096;  // a small receive buffer: the server's sending stalls until we read
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  return fd;
}

// A file of `content` with no name, in `dir`, as the dashboard makes one.
std::shared_ptr<BodyFile> UnlinkedFile(const std::string& dir, const std::string& content, std::shared_ptr<void> hold) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR, 0600);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  return std::make_shared<BodyFile>(fd, std::move(hold));
}

std::string Patterned(size_t size, char seed) {
  std::string content(size, seed);
  for (size_t i = 0; i < content.size(); i += 7) content[i] = static_cast<char>(seed + i % 26);
  return content;
}

TEST(Http, StreamsABodyFileAndReleasesIt) {
  testing::TempDir dir;
  std::string content = Patterned(300 * 1024, 'a');
  auto released = std::make_shared<std::atomic<int>>(0);
  auto server = HttpServer::Start("127.0.0.1:0", [&](const HttpRequest&) {
    HttpResponse r;
    r.file = UnlinkedFile(dir.path(), content, std::shared_ptr<void>(nullptr, [released](void*) { ++*released; }));
    return r;
  });
  ASSERT_TRUE(server.ok()) << server.status();
  std::string got = Exchange((*server)->address(), "GET / HTTP/1.1\r\n\r\n");
  ASSERT_NE(got.find("Content-Length: 307200\r\n"), std::string::npos) << got.substr(0, 200);
  EXPECT_EQ(got.substr(got.find("\r\n\r\n") + 4), content);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // the file never had a name
  for (int i = 0; i < 200 && released->load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(released->load(), 1);
  std::string head = Exchange((*server)->address(), "HEAD / HTTP/1.1\r\n\r\n");
  EXPECT_NE(head.find("Content-Length: 307200\r\n"), std::string::npos);
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n");
}

// The dashboard's pack downloads once shared a file name per handler
// thread: a second download made on the thread while the first was still
// being sent truncated and rewrote the first's file. With one worker, a
// slow reader's body stays its own while others are answered.
TEST(Http, ABodyStillBeingSentIsNotTouchedByTheNextResponse) {
  testing::TempDir dir;
  HttpOptions options;
  options.workers = 1;
  auto server = HttpServer::Start(
      "127.0.0.1:0",
      [&](const HttpRequest& r) {
        HttpResponse out;
        out.file = UnlinkedFile(dir.path(), Patterned(r.path == "/a" ? 4 << 20 : 1 << 20, r.path == "/a" ? 'a' : 'A'),
                                nullptr);
        return out;
      },
      options);
  ASSERT_TRUE(server.ok()) << server.status();
  int slow = SendRequest((*server)->address(), "GET /a HTTP/1.1\r\n\r\n");
  char first[1024];
  ssize_t started = ::recv(slow, first, sizeof first, 0);
  ASSERT_GT(started, 0);  // its response has started
  for (int i = 0; i < 3; ++i) {
    std::string other = Exchange((*server)->address(), "GET /b HTTP/1.1\r\n\r\n");
    EXPECT_EQ(other.substr(other.find("\r\n\r\n") + 4), Patterned(1 << 20, 'A'));
  }
  std::string got = std::string(first, static_cast<size_t>(started)) + ReadAll(slow, 30);
  ::close(slow);
  EXPECT_EQ(got.substr(got.find("\r\n\r\n") + 4), Patterned(4 << 20, 'a'));
}

// Slow requests (pack downloads) run on threads of their own: a page is
// answered while every worker for them is busy, and one identity gets at
// most slow_per_identity of them at once.
TEST(Http, SlowRequestsHaveAPoolOfTheirOwnAndABoundPerIdentity) {
  HttpOptions options;
  options.workers = 1;
  options.slow_suffixes = {"/pack.tar.gz"};
  options.slow_workers = 1;
  options.slow_per_identity = 2;
  options.slow_queue = 3;
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  auto server = HttpServer::Start(
      "127.0.0.1:0",
      [&](const HttpRequest& r) {
        if (!r.path.ends_with("/pack.tar.gz")) return Text(200, "page\n");
        ++started;
        while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        return Text(200, "pack\n");
      },
      options);
  ASSERT_TRUE(server.ok()) << server.status();
  std::string addr = (*server)->address();
  int first = SendRequest(addr, "GET /teams/a/runs/r/pack.tar.gz HTTP/1.1\r\n\r\n");
  int second = SendRequest(addr, "GET /teams/a/runs/s/pack.tar.gz HTTP/1.1\r\n\r\n");
  for (int i = 0; i < 500 && started.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(started.load(), 1);
  // A page, while the one slow worker is held and a second download waits.
  std::string page = Exchange(addr, "GET /teams/a HTTP/1.1\r\n\r\n");
  EXPECT_EQ(page.substr(page.size() - 5), "page\n");
  // A third download from the same peer is refused, and says why.
  std::string third = Exchange(addr, "GET /teams/a/runs/t/pack.tar.gz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(third.substr(0, 12), "HTTP/1.1 429") << third;
  EXPECT_NE(third.find("pack downloads: at most 2 at once for one identity"), std::string::npos) << third;
  release = true;
  EXPECT_EQ(ReadAll(first).substr(0, 15), "HTTP/1.1 200 OK");
  EXPECT_EQ(ReadAll(second).substr(0, 15), "HTTP/1.1 200 OK");
  ::close(first);
  ::close(second);
  // Turns are given back: the same peer may download again.
  std::string again = Exchange(addr, "GET /teams/a/runs/t/pack.tar.gz HTTP/1.1\r\n\r\n");
  EXPECT_EQ(again.substr(0, 15), "HTTP/1.1 200 OK") << again;
}

// A header sent twice reaches the handler as one value, joined with ", "
// (RFC 9110 section 5.3): the last one cannot hide the first.
TEST(Http, AHeaderSentTwiceHasItsValuesJoined) {
  auto server = HttpServer::Start("127.0.0.1:0", [](const HttpRequest& r) { return Text(200, r.headers.at("x-id")); });
  ASSERT_TRUE(server.ok()) << server.status();
  std::string out = Exchange((*server)->address(), "GET / HTTP/1.1\r\nX-Id: 1\r\nx-id:  2 \r\n\r\n");
  EXPECT_EQ(out.substr(out.find("\r\n\r\n") + 4), "1, 2");
}

// identify makes a request another's (a user a trusted proxy names): the
// handler and the bound on slow requests see that identity, with the one
// it came through in `via`; what identify refuses never reaches the handler.
TEST(Http, IdentifyMakesTheRequestAnothersOrRefusesIt) {
  HttpOptions options;
  options.slow_suffixes = {"/pack.tar.gz"};
  options.slow_per_identity = 1;
  options.identify = [](HttpRequest& head) -> std::optional<HttpResponse> {
    auto user = head.headers.find("x-user");
    if (user == head.headers.end()) return std::nullopt;
    if (user->second == "mallory") return Text(403, "x-user: not mallory\n");
    head.via = "proxy";
    head.identity = "user:" + user->second;
    return std::nullopt;
  };
  std::atomic<bool> release{false};
  std::atomic<int> handled{0};
  auto server = HttpServer::Start(
      "127.0.0.1:0",
      [&](const HttpRequest& r) {
        ++handled;
        while (r.path.ends_with("/pack.tar.gz") && !release.load()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        return Text(200, r.identity + "|" + r.via);
      },
      options);
  ASSERT_TRUE(server.ok()) << server.status();
  std::string addr = (*server)->address();
  auto body_of = [](const std::string& response) { return response.substr(response.find("\r\n\r\n") + 4); };
  EXPECT_EQ(body_of(Exchange(addr, "GET / HTTP/1.1\r\nX-User: alice\r\n\r\n")), "user:alice|proxy");
  EXPECT_EQ(body_of(Exchange(addr, "GET / HTTP/1.1\r\n\r\n")), "|");
  handled = 0;
  std::string refused = Exchange(addr, "GET / HTTP/1.1\r\nX-User: mallory\r\nX-Request-Id: r-1\r\n\r\n");
  EXPECT_EQ(refused.substr(0, 12), "HTTP/1.1 403") << refused;
  EXPECT_NE(refused.find("X-Request-Id: r-1\r\n"), std::string::npos) << refused;
  EXPECT_EQ(body_of(refused), "x-user: not mallory\n");
  EXPECT_EQ(handled.load(), 0);
  // One slow request at once per identity: alice's own, not the peer's.
  int alice = SendRequest(addr, "GET /teams/a/runs/r/pack.tar.gz HTTP/1.1\r\nX-User: alice\r\n\r\n");
  for (int i = 0; i < 500 && handled.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::string again = Exchange(addr, "GET /teams/a/runs/s/pack.tar.gz HTTP/1.1\r\nX-User: alice\r\n\r\n");
  EXPECT_EQ(again.substr(0, 12), "HTTP/1.1 429") << again;
  // Bob's, from the same peer address, meanwhile.
  int bob = SendRequest(addr, "GET /teams/a/runs/t/pack.tar.gz HTTP/1.1\r\nX-User: bob\r\n\r\n");
  for (int i = 0; i < 500 && handled.load() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(handled.load(), 2);
  release = true;
  EXPECT_EQ(body_of(ReadAll(bob)), "user:bob|proxy");
  EXPECT_EQ(body_of(ReadAll(alice)), "user:alice|proxy");
  ::close(alice);
  ::close(bob);
}

TEST(Http, UrlDecodeRefusesABrokenEscape) {
  EXPECT_EQ(*UrlDecode("a%20b+c"), "a b c");
  EXPECT_EQ(UrlDecode("%2").status().message(), "url: bad escape");
  EXPECT_EQ(UrlDecode("%g0").status().message(), "url: bad escape");
}

}  // namespace
}  // namespace ledger::http
