#include "util/http/http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "util/http/internal/tls.h"
#include "util/http/message.h"
#include "util/jsonlog/jsonlog.h"
#include "util/sync/mutex.h"
#include "util/tasks/tasks.h"

namespace ledger::http {
namespace {

using message::Chunks;
using message::ContentLength;
using message::DecodeChunks;
using message::IsRefusal;
using message::kChunked;
using message::kMaxHeaderBytes;
using message::LogRefusal;
using message::ParseHead;
using message::Prepare;
using message::Prepared;
using message::Respond;
using tls::NewTlsContext;
using tls::PeerIdentity;
using Clock = std::chrono::steady_clock;

constexpr size_t kFileChunk = 64 * 1024;
constexpr int kTickMs = 100;  // how often deadlines are looked at

}  // namespace

HttpResponse Text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

absl::StatusOr<std::string> UrlDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%') {
      if (i + 2 >= s.size()) return absl::InvalidArgumentError("url: bad escape");
      int v = 0;
      for (int k = 1; k <= 2; ++k) {
        char c = s[i + k];
        int d = absl::ascii_isdigit(c)   ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                         : -1;
        if (d < 0) return absl::InvalidArgumentError("url: bad escape");
        v = v * 16 + d;
      }
      out.push_back(static_cast<char>(v));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

namespace {

// "ip" and "ip:port" of a peer.
std::pair<std::string, std::string> PeerName(const sockaddr_storage& peer) {
  char ip[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (peer.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&peer);
    ::inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
    port = ntohs(a->sin_port);
  } else if (peer.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&peer);
    ::inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
    port = ntohs(a->sin6_port);
  }
  return {ip, absl::StrCat(ip, ":", port)};
}

}  // namespace

BodyFile::~BodyFile() { ::close(fd_); }

// The loop's side of HttpServer; see http.h. Connections are touched by the
// loop thread only; workers see a copy of the request and hand back a
// Prepared response through `done_`.
class EventLoop {
 public:
  EventLoop(HttpHandler handler, HttpOptions options, std::shared_ptr<SSL_CTX> tls, int listen_fd)
      : handler_(std::move(handler)),
        options_(std::move(options)),
        body_bytes_per_peer_(options_.max_body_bytes_per_peer > 0 ? options_.max_body_bytes_per_peer
                                                                  : 4 * options_.max_body_bytes),
        with_tls_(tls != nullptr),
        tls_(std::move(tls)),
        listen_fd_(listen_fd),
        epoll_fd_(::epoll_create1(EPOLL_CLOEXEC)),
        wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
        workers_(std::make_unique<tasks::Pool>(static_cast<size_t>(std::max(1, options_.workers)))),
        quick_(std::make_unique<tasks::Pool>(1)),
        slow_(std::make_unique<tasks::Pool>(static_cast<size_t>(std::max(1, options_.slow_workers)))) {
    Watch(listen_fd_, kListenId, EPOLLIN);
    Watch(wake_fd_, kWakeId, EPOLLIN);
    thread_ = std::thread([this] { Run(); });
  }

  bool with_tls() const { return with_tls_; }
  std::shared_ptr<SSL_CTX> Tls() ABSL_LOCKS_EXCLUDED(tls_mu_) {
    sync::MutexLock lock(&tls_mu_);
    return tls_;
  }
  void SetTls(std::shared_ptr<SSL_CTX> ctx) ABSL_LOCKS_EXCLUDED(tls_mu_) {
    sync::MutexLock lock(&tls_mu_);
    tls_ = std::move(ctx);
  }

  ~EventLoop() {
    {
      sync::MutexLock lock(&mu_);
      stopping_ = true;
    }
    Wake();
    thread_.join();
    workers_.reset();  // running handlers return; queued ones are skipped
    quick_.reset();
    slow_.reset();
    ::close(wake_fd_);
    ::close(epoll_fd_);
    ::close(listen_fd_);
  }

 private:
  static constexpr uint64_t kListenId = 0, kWakeId = 1;

  // kDrain: answered before its request was read whole; what the client
  // still sends is read and dropped for a moment, so that closing with
  // unread bytes (a reset) does not destroy the answer before the client
  // reads it.
  enum class Phase { kHandshake, kRead, kHandle, kWrite, kDrain };

  struct Connection {
    uint64_t id = 0;
    int fd = -1;
    SSL* ssl = nullptr;  // owned; null in plain text
    std::string ip, peer, identity;
    std::string via;          // options_.identify made the request identity's through this one
    bool identified = false;  // options_.identify ran
    Phase phase = Phase::kRead;
    Clock::time_point deadline;  // of the request head; while writing, of the next progress
    uint32_t events = 0;         // as registered with epoll
    std::string in;
    size_t chunk_at = 0;       // a chunked body: where its next chunk starts in `in`
    std::string chunked_body;  // and what was decoded so far
    size_t held = 0;           // bytes of a body still arriving, counted in held_by_peer_
    bool admitted = false;     // options_.admit let its POST in
    bool drain = false;        // answered from kRead: drained after the answer
    size_t drained = 0;
    std::string out;
    size_t sent = 0;
    std::shared_ptr<BodyFile> file;  // sent after `out`, from file_at to file_size
    uint64_t file_at = 0, file_size = 0;
  };

  void Watch(int fd, uint64_t id, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = id;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }

  // Registers `events` for c (none: not watched).
  void Want(Connection& c, uint32_t events) {
    if (events == c.events) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = c.id;
    int op = c.events == 0 ? EPOLL_CTL_ADD : events == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
    ::epoll_ctl(epoll_fd_, op, c.fd, &ev);
    c.events = events;
  }

  void Wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }

  bool stopping() {
    sync::MutexLock lock(&mu_);
    return stopping_;
  }

  void Run() {
    epoll_event events[64];
    Clock::time_point swept = Clock::now();
    while (!stopping()) {
      int n = ::epoll_wait(epoll_fd_, events, 64, kTickMs);
      for (int i = 0; i < n; ++i) {
        uint64_t id = events[i].data.u64;
        if (id == kListenId) {
          Accept();
        } else if (id == kWakeId) {
          uint64_t count;
          [[maybe_unused]] ssize_t r = ::read(wake_fd_, &count, sizeof count);
          TakeResponses();
        } else if (auto it = connections_.find(id); it != connections_.end()) {
          Advance(*it->second);
        }
      }
      if (Clock::now() - swept >= std::chrono::milliseconds(kTickMs)) {
        swept = Clock::now();
        Sweep(swept);
      }
    }
    while (!connections_.empty()) Close(*connections_.begin()->second);
  }

  void Accept() {
    while (true) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        // Out of descriptors: the listening socket stays readable, so it is
        // not watched until the next sweep (no spinning meanwhile).
        if (errno == EMFILE || errno == ENFILE) PauseAccepting(true);
        return;
      }
      auto [ip, peer] = PeerName(addr);
      auto known = per_peer_.find(ip);
      bool refused = known != per_peer_.end() && known->second >= options_.max_per_peer;
      // When full, the connection that has waited longest for its request
      // makes room: a flood of slow handshakes cannot keep newcomers out.
      if (!refused && static_cast<int>(connections_.size()) >= options_.max_connections) {
        refused = !EvictOldestUnanswered();
      }
      if (refused) {
        if (!with_tls_) {
          static constexpr char kBusy[] =
              "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
          [[maybe_unused]] ssize_t w = ::send(fd, kBusy, sizeof kBusy - 1, MSG_NOSIGNAL);
        }
        ::close(fd);
        continue;
      }
      int& from_peer = ++per_peer_[ip];
      auto c = std::make_unique<Connection>();
      c->id = next_id_++;
      c->fd = fd;
      c->ip = std::move(ip);
      c->peer = std::move(peer);
      c->deadline = Clock::now() + std::chrono::milliseconds(options_.request_deadline_ms);
      if (with_tls_) {
        c->ssl = SSL_new(Tls().get());
        if (c->ssl == nullptr) {
          ERR_clear_error();
          ::close(fd);
          if (--from_peer == 0) per_peer_.erase(c->ip);
          continue;
        }
        SSL_set_fd(c->ssl, fd);
        SSL_set_accept_state(c->ssl);
        c->phase = Phase::kHandshake;
      }
      Connection& added = *c;
      connections_.emplace(added.id, std::move(c));
      Want(added, EPOLLIN);
    }
  }

  // Closes the connection accepted first among those whose request has not
  // arrived yet; false when there is none.
  bool EvictOldestUnanswered() {
    Connection* oldest = nullptr;
    for (auto& [id, c] : connections_) {
      if ((c->phase == Phase::kHandshake || c->phase == Phase::kRead) &&
          (oldest == nullptr || c->deadline < oldest->deadline)) {
        oldest = c.get();
      }
    }
    if (oldest == nullptr) return false;
    Close(*oldest);
    return true;
  }

  void PauseAccepting(bool pause) {
    if (pause == accept_paused_) return;
    epoll_event ev{};
    ev.events = pause ? 0u : static_cast<uint32_t>(EPOLLIN);
    ev.data.u64 = kListenId;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
    accept_paused_ = pause;
  }

  void Close(Connection& c) {
    // The file goes first: a client that saw the end of its response finds it released.
    c.file.reset();
    if (c.ssl != nullptr) {
      if (c.phase == Phase::kWrite) SSL_shutdown(c.ssl);
      SSL_free(c.ssl);
      ERR_clear_error();
    }
    Want(c, 0);
    ::close(c.fd);
    Hold(c, 0);
    if (auto it = per_peer_.find(c.ip); it != per_peer_.end() && --it->second <= 0) per_peer_.erase(it);
    connections_.erase(c.id);  // c is gone
  }

  // Closes connections past their deadline.
  void Sweep(Clock::time_point now) {
    PauseAccepting(false);
    std::vector<Connection*> late;
    for (auto& [id, c] : connections_) {
      if (c->phase != Phase::kHandle && now > c->deadline) late.push_back(c.get());
    }
    for (Connection* c : late) Close(*c);
  }

  // The connection is readable or writable: goes as far as it can.
  void Advance(Connection& c) {
    if (c.phase == Phase::kHandshake && !Handshake(c)) return;
    if (c.phase == Phase::kRead)
      Read(c);
    else if (c.phase == Phase::kWrite)
      Write(c);
    else if (c.phase == Phase::kDrain)
      Drain(c);
  }

  // False when the handshake is not done (waiting, or the connection closed).
  bool Handshake(Connection& c) {
    int r = SSL_do_handshake(c.ssl);
    if (r == 1) {
      c.identity = PeerIdentity(c.ssl);
      c.phase = Phase::kRead;
      return true;
    }
    switch (SSL_get_error(c.ssl, r)) {
      case SSL_ERROR_WANT_READ:
        Want(c, EPOLLIN);
        return false;
      case SSL_ERROR_WANT_WRITE:
        Want(c, EPOLLOUT);
        return false;
      default:
        Close(c);
        return false;  // no certificate, another CA, expired, garbage
    }
  }

  // Reads at most `size` bytes of c into `buf`: how many, or 0 when none
  // can be read now (c is then watched for what it waits on) or c is
  // closed (end of stream or an error: c is gone).
  size_t Receive(Connection& c, char* buf, size_t size) {
    if (c.ssl != nullptr) {
      int r = SSL_read(c.ssl, buf, static_cast<int>(size));
      if (r > 0) return static_cast<size_t>(r);
      int e = SSL_get_error(c.ssl, r);
      if (e == SSL_ERROR_WANT_READ) {
        Want(c, EPOLLIN);
      } else if (e == SSL_ERROR_WANT_WRITE && c.phase != Phase::kDrain) {
        Want(c, EPOLLOUT);
      } else {
        Close(c);
      }
      return 0;
    }
    ssize_t n = ::recv(c.fd, buf, size, 0);
    if (n > 0) return static_cast<size_t>(n);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      Want(c, EPOLLIN);
    } else {
      Close(c);
    }
    return 0;
  }

  void Read(Connection& c) {
    char buf[4096];
    while (c.in.find("\r\n\r\n") == std::string::npos && c.in.size() <= kMaxHeaderBytes) {
      size_t n = Receive(c, buf, sizeof buf);
      if (n == 0) return;
      c.in.append(buf, n);
    }
    size_t end = c.in.find("\r\n\r\n");
    if (end == std::string::npos || end > kMaxHeaderBytes) {
      return Send(c, Prepare(Text(431, "request headers too large\n"), false));
    }
    if (options_.identify && !Identify(c, end + 4)) return;
    if (options_.max_body_bytes > 0) {
      if (options_.admit && !Admit(c, end + 4)) return;
      int64_t length = ContentLength(c.in);
      if (length == kChunked && options_.chunked_bodies) {
        if (!ReadChunked(c, end + 4)) return;
      } else if (length < 0) {
        return Send(c, Prepare(Text(411, options_.chunked_bodies
                                             ? "a body needs a Content-Length or chunked Transfer-Encoding\n"
                                             : "a body needs a Content-Length (no chunked bodies)\n"),
                               false));
      } else if (static_cast<uint64_t>(length) > options_.max_body_bytes) {
        return Send(c, Prepare(Text(413, absl::StrCat("body: at most ", options_.max_body_bytes, " bytes\n")), false));
      } else if (!ReadBody(c, end + 4, end + 4 + static_cast<size_t>(length))) {
        return;
      }
      Hold(c, 0);  // the body is whole: what it holds is the handler's now
    }
    // The handler may take a while (a pack is exported first): on a worker.
    c.phase = Phase::kHandle;
    Want(c, 0);
    HttpRequest request;
    request.peer = c.peer;
    request.identity = c.identity;
    request.via = c.via;
    std::string_view target = Target(c.in);
    tasks::Pool* pool = IsQuick(target) ? quick_.get() : workers_.get();
    if (IsSlow(target)) {
      if (auto refused = TakeSlowTurn(c); refused.has_value()) return Send(c, Prepare(*std::move(refused), false));
      pool = slow_.get();
    }
    pool->Run([this, id = c.id, head = std::move(c.in), request = std::move(request)]() mutable {
      if (stopping()) return;
      HttpResponse response = Respond(head, request, handler_, options_.max_body_bytes > 0);
      if (!request.request_id.empty()) response.headers["X-Request-Id"] = request.request_id;
      if (IsRefusal(response.status)) LogRefusal(request, response);
      Prepared prepared = Prepare(response, request.method == "HEAD");
      {
        sync::MutexLock lock(&mu_);
        ready_.emplace_back(id, std::move(prepared));
      }
      Wake();
    });
  }

  // Asks options_.identify whom the request whose head ends at `head_end`
  // is made for (once per request: c.identified), keeping the answer in
  // c.identity and c.via; false when it refused (and the answer is sent).
  // A head that does not parse is left to the handler's path, which answers
  // it 400.
  bool Identify(Connection& c, size_t head_end) {
    if (c.identified) return true;
    c.identified = true;
    HttpRequest head;
    head.peer = c.peer;
    head.identity = c.identity;
    if (ParseHead(std::string_view(c.in).substr(0, head_end), head).has_value()) return true;
    std::optional<HttpResponse> refused = options_.identify(head);
    if (!refused.has_value()) {
      c.identity = std::move(head.identity);
      c.via = std::move(head.via);
      return true;
    }
    refused->headers["X-Request-Id"] = head.request_id;
    if (IsRefusal(refused->status)) LogRefusal(head, *refused);
    Send(c, Prepare(*std::move(refused), head.method == "HEAD"));
    return false;
  }

  // Asks options_.admit about a POST whose head ends at `head_end` (once per
  // request: c.admitted); false when it refused (and the answer is sent).
  bool Admit(Connection& c, size_t head_end) {
    if (c.admitted) return true;
    HttpRequest head;
    head.peer = c.peer;
    head.identity = c.identity;
    head.via = c.via;
    std::optional<HttpResponse> refused = ParseHead(std::string_view(c.in).substr(0, head_end), head);
    if (!refused.has_value() && head.method == "POST") refused = options_.admit(head);
    if (!refused.has_value()) return c.admitted = true;
    if (IsRefusal(refused->status)) LogRefusal(head, *refused);
    Send(c, Prepare(*std::move(refused), false));
    return false;
  }

  // Counts `bytes` as what c holds of a body still arriving; false when
  // that takes its peer address past max_body_bytes_per_peer.
  bool Hold(Connection& c, size_t bytes) {
    if (bytes == c.held) return true;
    size_t& peer = held_by_peer_[c.ip];
    peer = peer - c.held + bytes;
    c.held = bytes;
    if (peer == 0) held_by_peer_.erase(c.ip);
    return bytes == 0 || peer <= body_bytes_per_peer_;
  }

  // Answers a request whose body took its peer past its bound, and lets go
  // of what it held.
  void RefuseHeldBody(Connection& c) {
    Hold(c, 0);
    c.in.clear();
    c.chunked_body.clear();
    Send(c, Prepare(Text(429, absl::StrCat("body: this address has more than ", body_bytes_per_peer_,
                                           " bytes of request bodies arriving at once; finish or close the others "
                                           "first\n")),
                    false));
  }

  // Reads until c.in holds `total` bytes (the head and the body starting at
  // `body_start`); false while waiting, or when the connection closed or was
  // answered (429). The request deadline covers the body too.
  bool ReadBody(Connection& c, size_t body_start, size_t total) {
    char buf[4096];
    while (c.in.size() < total) {
      if (!Hold(c, c.in.size() - std::min(body_start, c.in.size()))) return RefuseHeldBody(c), false;
      size_t n = Receive(c, buf, sizeof buf);
      if (n == 0) return false;
      c.in.append(buf, n);
    }
    c.in.resize(total);
    return true;
  }

  // Reads a chunked body that starts at c.in[body_start] until it is whole,
  // then leaves in c.in the head and the decoded body; false while waiting
  // or when the connection was answered (400, 413) or closed. The raw bytes
  // are bounded too: twice the limit, and a little more.
  bool ReadChunked(Connection& c, size_t body_start) {
    if (c.chunk_at == 0) c.chunk_at = body_start;
    char buf[4096];
    while (true) {
      Chunks got = DecodeChunks(c.in, &c.chunk_at, &c.chunked_body, options_.max_body_bytes);
      if (got == Chunks::kMore && c.in.size() - body_start > 2 * options_.max_body_bytes + 64 * 1024) {
        got = Chunks::kTooLarge;
      }
      if (got == Chunks::kDone) {
        c.in.resize(body_start);
        c.in += c.chunked_body;
        c.chunked_body.clear();
        Hold(c, 0);
        return true;
      }
      if (got == Chunks::kMore && !Hold(c, c.in.size() - body_start + c.chunked_body.size())) {
        return RefuseHeldBody(c), false;
      }
      if (got == Chunks::kBad) return Send(c, Prepare(Text(400, "malformed chunked body\n"), false)), false;
      if (got == Chunks::kTooLarge) {
        return Send(c, Prepare(Text(413, absl::StrCat("body: at most ", options_.max_body_bytes, " bytes\n")), false)),
               false;
      }
      size_t n = Receive(c, buf, sizeof buf);
      if (n == 0) return false;
      c.in.append(buf, n);
    }
  }

  // The path of `head`'s request line as sent, without the query.
  static std::string_view Target(std::string_view head) {
    size_t from = head.find(' ');
    if (from == std::string_view::npos) return {};
    size_t to = head.find_first_of(" ?\r", from + 1);
    return head.substr(from + 1, to == std::string_view::npos ? 0 : to - from - 1);
  }

  bool IsQuick(std::string_view target) const {
    return std::find(options_.quick_paths.begin(), options_.quick_paths.end(), target) != options_.quick_paths.end();
  }

  bool IsSlow(std::string_view target) const {
    return std::any_of(options_.slow_suffixes.begin(), options_.slow_suffixes.end(),
                       [&](const std::string& suffix) { return target.ends_with(suffix); });
  }

  // Counts c's slow request against the bounds of HttpOptions, or the
  // response that refuses it. Its turn is given back with its response.
  std::optional<HttpResponse> TakeSlowTurn(const Connection& c) {
    const std::string& who = c.identity.empty() ? c.ip : c.identity;
    if (static_cast<int>(slow_running_.size()) >= options_.slow_queue) {
      HttpResponse r = Text(
          503, absl::StrCat("busy: ", slow_running_.size(), " pack downloads are being built or wait; retry later\n"));
      r.headers["Retry-After"] = "5";
      return r;
    }
    if (slow_per_identity_[who] >= options_.slow_per_identity) {
      HttpResponse r = Text(429, absl::StrCat("pack downloads: at most ", options_.slow_per_identity,
                                              " at once for one identity; wait for yours to finish\n"));
      r.headers["Retry-After"] = "5";
      return r;
    }
    ++slow_per_identity_[who];
    slow_running_[c.id] = who;
    return std::nullopt;
  }

  void GiveBackSlowTurn(uint64_t id) {
    auto it = slow_running_.find(id);
    if (it == slow_running_.end()) return;
    if (auto n = slow_per_identity_.find(it->second); n != slow_per_identity_.end() && --n->second <= 0) {
      slow_per_identity_.erase(n);
    }
    slow_running_.erase(it);
  }

  // Responses the workers finished, to their connections.
  void TakeResponses() {
    std::vector<std::pair<uint64_t, Prepared>> ready;
    {
      sync::MutexLock lock(&mu_);
      ready.swap(ready_);
    }
    for (auto& [id, prepared] : ready) {
      GiveBackSlowTurn(id);
      auto it = connections_.find(id);
      if (it == connections_.end()) continue;  // its file, if any, is released with `ready`
      Send(*it->second, std::move(prepared));
    }
  }

  void Send(Connection& c, Prepared prepared) {
    c.drain = c.phase == Phase::kRead;
    if (c.drain) {
      Hold(c, 0);
      c.in.clear();
      c.chunked_body.clear();
    }
    c.phase = Phase::kWrite;
    c.out = std::move(prepared.bytes);
    c.sent = 0;
    c.file = std::move(prepared.file);
    c.file_at = 0;
    c.file_size = prepared.file_size;
    c.deadline = Clock::now() + std::chrono::milliseconds(options_.send_idle_ms);
    Write(c);
  }

  // The answer is sent: no more is written, and what the client still
  // sends is read and dropped until it closes, kDrainMs pass or
  // kDrainBytes are dropped.
  static constexpr int kDrainMs = 2000;
  static constexpr size_t kDrainBytes = 16 << 20;
  void StartDrain(Connection& c) {
    if (c.ssl != nullptr) {
      SSL_shutdown(c.ssl);
      ERR_clear_error();
    } else {
      ::shutdown(c.fd, SHUT_WR);
    }
    c.phase = Phase::kDrain;
    c.deadline = Clock::now() + std::chrono::milliseconds(kDrainMs);
    Drain(c);
  }

  void Drain(Connection& c) {
    char buf[16384];
    while (c.drained < kDrainBytes) {
      size_t n = Receive(c, buf, sizeof buf);
      if (n == 0) return;
      c.drained += n;
    }
    Close(c);
  }

  void Write(Connection& c) {
    while (true) {
      if (c.sent == c.out.size()) {
        c.out.clear();
        c.sent = 0;
        if (c.file != nullptr && c.file_at < c.file_size) {
          c.out.resize(static_cast<size_t>(std::min<uint64_t>(kFileChunk, c.file_size - c.file_at)));
          ssize_t n = ::pread(c.file->fd(), c.out.data(), c.out.size(), static_cast<off_t>(c.file_at));
          if (n <= 0) return Close(c);  // the file shrank or failed: the client sees a short body
          c.out.resize(static_cast<size_t>(n));
          c.file_at += static_cast<uint64_t>(n);
        }
        if (c.out.empty()) return c.drain ? StartDrain(c) : Close(c);  // all sent
      }
      const char* data = c.out.data() + c.sent;
      size_t left = c.out.size() - c.sent;
      ssize_t n;
      if (c.ssl != nullptr) {
        int r = SSL_write(c.ssl, data, static_cast<int>(std::min<size_t>(left, 1 << 20)));
        if (r <= 0) {
          int e = SSL_get_error(c.ssl, r);
          if (e == SSL_ERROR_WANT_WRITE) return Want(c, EPOLLOUT);
          if (e == SSL_ERROR_WANT_READ) return Want(c, EPOLLIN);
          return Close(c);
        }
        n = r;
      } else {
        n = ::send(c.fd, data, left, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return Want(c, EPOLLOUT);
        if (n <= 0) return Close(c);
      }
      c.sent += static_cast<size_t>(n);
      c.deadline = Clock::now() + std::chrono::milliseconds(options_.send_idle_ms);
    }
  }

  const HttpHandler handler_;
  const HttpOptions options_;
  const size_t body_bytes_per_peer_;
  const bool with_tls_;
  sync::Mutex tls_mu_;
  std::shared_ptr<SSL_CTX> tls_ ABSL_GUARDED_BY(tls_mu_);  // replaced by a reload
  const int listen_fd_, epoll_fd_, wake_fd_;
  std::unique_ptr<tasks::Pool> workers_;
  std::unique_ptr<tasks::Pool> quick_;  // for options_.quick_paths
  std::unique_ptr<tasks::Pool> slow_;   // for options_.slow_suffixes
  std::thread thread_;
  // The loop thread's own.
  std::map<uint64_t, std::unique_ptr<Connection>> connections_;
  std::map<std::string, int> per_peer_;
  std::map<std::string, size_t> held_by_peer_;    // bytes of bodies arriving, by address
  std::map<uint64_t, std::string> slow_running_;  // connection -> identity, while its slow request is out
  std::map<std::string, int> slow_per_identity_;
  uint64_t next_id_ = 2;
  bool accept_paused_ = false;
  sync::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::pair<uint64_t, Prepared>> ready_ ABSL_GUARDED_BY(mu_);  // responses for the loop
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen, HttpHandler handler,
                                                              const HttpOptions& options, const HttpTls* tls) {
  std::shared_ptr<SSL_CTX> tls_ctx;
  if (tls != nullptr) {
    auto made = NewTlsContext(*tls);
    if (!made.ok()) return made.status();
    tls_ctx = *std::move(made);
  }
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("http: '", listen, "' is not HOST:PORT"));
  }
  std::string host = listen.substr(0, colon), port = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat("http: '", listen, "': ", gai_strerror(rc)));
  }
  int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  bool ok = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 && ::listen(fd, 256) == 0;
  ::freeaddrinfo(found);
  if (!ok) {
    std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return absl::UnavailableError(absl::StrCat("http: cannot listen on ", listen, ": ", why));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  int real_port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                              : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->address_ = absl::StrCat(listen.substr(0, colon), ":", real_port);
  server->loop_ = std::make_unique<EventLoop>(std::move(handler), options, std::move(tls_ctx), fd);
  return server;
}

HttpServer::~HttpServer() = default;

absl::Status HttpServer::ReloadTls(const HttpTls& tls) {
  if (!loop_->with_tls()) return absl::FailedPreconditionError("http tls: this server was started without TLS");
  auto made = NewTlsContext(tls);
  if (!made.ok()) return made.status();
  loop_->SetTls(*std::move(made));
  return absl::OkStatus();
}

}  // namespace ledger::http
