#include "util/http/client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace ledger::http {
namespace {

using Clock = std::chrono::steady_clock;

int Remaining(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(ms);
}

// Waits for `events` on fd until the deadline; false on timeout or error.
bool Wait(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  while (true) {
    int r = ::poll(&p, 1, Remaining(deadline));
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

using Ctx = std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)>;
using Ssl = std::unique_ptr<SSL, decltype(&SSL_free)>;

absl::StatusOr<Ctx> ClientContext(const TlsClient& tls, const char* peer) {
  Ctx ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  if (ctx == nullptr) return absl::InternalError("tls: SSL_CTX_new failed");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  auto bio_of = [](const std::string& pem) {
    return std::unique_ptr<BIO, decltype(&BIO_free)>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
                                                     BIO_free);
  };
  auto ca = bio_of(tls.ca_pem);
  int cas = 0;
  while (X509* cert = PEM_read_bio_X509(ca.get(), nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx.get()), cert);
    X509_free(cert);
    ++cas;
  }
  ERR_clear_error();
  if (cas == 0)
    return absl::InvalidArgumentError(absl::StrCat(peer, " tls: no CA certificate to verify the ", peer, " with"));
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (!tls.cert_pem.empty()) {
    auto cert_bio = bio_of(tls.cert_pem);
    auto key_bio = bio_of(tls.key_pem);
    X509* cert = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr);
    EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
    bool ok = cert != nullptr && key != nullptr && SSL_CTX_use_certificate(ctx.get(), cert) == 1 &&
              SSL_CTX_use_PrivateKey(ctx.get(), key) == 1 && SSL_CTX_check_private_key(ctx.get()) == 1;
    X509_free(cert);
    EVP_PKEY_free(key);
    ERR_clear_error();
    if (!ok)
      return absl::InvalidArgumentError(absl::StrCat(peer, " tls: the client certificate and key are not usable"));
  }
  return ctx;
}

// The request over TLS on the connected socket `fd`; the reply's bytes.
absl::StatusOr<std::string> Exchange(int fd, const TlsClient& tls, const std::string& host, const std::string& request,
                                     const std::string& authority, Clock::time_point deadline, const char* peer,
                                     size_t max_answer) {
  auto ctx = ClientContext(tls, peer);
  if (!ctx.ok()) return ctx.status();
  // Blocking from here, each read and write bounded by what is left.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  timeval tv{Remaining(deadline) / 1000, (Remaining(deadline) % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  Ssl ssl(SSL_new(ctx->get()), SSL_free);
  SSL_set_fd(ssl.get(), fd);
  in6_addr ip6;
  in_addr ip4;
  bool is_ip = ::inet_pton(AF_INET, host.c_str(), &ip4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &ip6) == 1;
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl.get());
  if (is_ip) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl.get(), host.c_str());
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
  }
  auto failed = [&](std::string_view what) {
    long verify = SSL_get_verify_result(ssl.get());
    ERR_clear_error();
    return absl::UnavailableError(
        absl::StrCat(peer, " ", authority, ": tls ", std::string(what),
                     verify != X509_V_OK ? absl::StrCat(": ", X509_verify_cert_error_string(verify)) : ""));
  };
  if (SSL_connect(ssl.get()) != 1) return failed("handshake");
  for (size_t sent = 0; sent < request.size();) {
    int n = SSL_write(ssl.get(), request.data() + sent, static_cast<int>(request.size() - sent));
    if (n <= 0) return failed("write");
    sent += static_cast<size_t>(n);
  }
  std::string in;
  char buf[4096];
  while (true) {
    int n = SSL_read(ssl.get(), buf, sizeof buf);
    if (n > 0) {
      in.append(buf, static_cast<size_t>(n));
      if (in.size() > max_answer)
        return absl::DataLossError(absl::StrCat(peer, " ", authority, ": answer above ", max_answer, " bytes"));
      continue;
    }
    int e = SSL_get_error(ssl.get(), n);
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && !in.empty())) break;
    return failed("read");
  }
  return in;
}

// The request in plain text on the connected non-blocking socket `fd`; the
// reply's bytes.
absl::StatusOr<std::string> ExchangePlain(int fd, const std::string& request, const std::string& authority,
                                          Clock::time_point deadline, const char* peer, size_t max_answer) {
  for (size_t sent = 0; sent < request.size();) {
    ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!Wait(fd, POLLOUT, deadline))
        return absl::UnavailableError(absl::StrCat(peer, " ", authority, ": send timed out"));
    } else {
      return absl::UnavailableError(absl::StrCat(peer, " ", authority, ": send: ", std::strerror(errno)));
    }
  }
  std::string in;
  char buf[4096];
  while (true) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      in.append(buf, static_cast<size_t>(n));
      if (in.size() > max_answer)
        return absl::DataLossError(absl::StrCat(peer, " ", authority, ": answer above ", max_answer, " bytes"));
    } else if (n == 0) {
      break;
    } else if (errno == EAGAIN || errno == EINTR) {
      if (!Wait(fd, POLLIN, deadline))
        return absl::UnavailableError(absl::StrCat(peer, " ", authority, ": no answer in time"));
    } else {
      return absl::UnavailableError(absl::StrCat(peer, " ", authority, ": recv: ", std::strerror(errno)));
    }
  }
  return in;
}

// Status line, Content-Type and body of an HTTP/1.x answer.
absl::StatusOr<Reply> ParseReply(const std::string& in, const std::string& authority, const char* peer) {
  size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string::npos || in.rfind("HTTP/1.", 0) != 0 || in.size() < 12) {
    return absl::DataLossError(absl::StrCat(peer, " ", authority, ": the answer is not HTTP"));
  }
  Reply reply;
  reply.status = std::atoi(in.substr(9, 3).c_str());
  std::string head = in.substr(0, head_end);
  for (size_t at = head.find("\r\n"); at != std::string::npos; at = head.find("\r\n", at + 2)) {
    size_t eol = head.find("\r\n", at + 2);
    std::string line = head.substr(at + 2, eol == std::string::npos ? std::string::npos : eol - at - 2);
    size_t c = line.find(':');
    if (c != std::string::npos && absl::AsciiStrToLower(line.substr(0, c)) == "content-type") {
      reply.content_type = std::string(absl::StripAsciiWhitespace(line.substr(c + 1)));
    }
  }
  reply.body = in.substr(head_end + 4);
  return reply;
}

}  // namespace

absl::StatusOr<Reply> Fetch(std::string_view method, const std::string& url, const std::string& body,
                            const FetchOptions& options) {
  const char* peer = options.peer;
  const TlsClient* tls = options.tls;
  if (method != "GET" && method != "POST") {
    return absl::InvalidArgumentError(absl::StrCat(peer, ": method ", std::string(method), ": want GET or POST"));
  }
  bool https = url.rfind("https://", 0) == 0;
  if (!https && url.rfind("http://", 0) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(peer, " url '", url, "': want http:// or https://host:port/path"));
  }
  if (https && tls == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(peer, " url '", url, "': https needs a CA to verify the ", peer, " with"));
  }
  std::string rest = url.substr(https ? 8 : 7);
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "/" : rest.substr(slash);
  size_t colon = authority.rfind(':');
  std::string host = authority.substr(0, colon);
  std::string port = colon == std::string::npos ? (https ? "443" : "80") : authority.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (host.empty() || port.empty()) return absl::InvalidArgumentError(absl::StrCat(peer, " url '", url, "': no host"));

  auto deadline = Clock::now() + std::chrono::milliseconds(options.timeout_ms);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat(peer, " ", authority, ": ", gai_strerror(rc)));
  }
  Fd s;
  s.fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int rc = s.fd < 0 ? -1 : ::connect(s.fd, found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  if (rc != 0 && errno != EINPROGRESS) {
    return absl::UnavailableError(absl::StrCat(peer, " ", authority, ": connect: ", std::strerror(errno)));
  }
  if (rc != 0) {
    int err = 0;
    socklen_t len = sizeof err;
    if (!Wait(s.fd, POLLOUT, deadline))
      return absl::UnavailableError(absl::StrCat(peer, " ", authority, ": connect timed out"));
    ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return absl::UnavailableError(absl::StrCat(peer, " ", authority, ": connect: ", std::strerror(err)));
  }
  std::string request =
      method == "POST"
          ? absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: ", authority, "\r\nContent-Type: ", options.content_type,
                         "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n", body)
          : absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: ", authority, "\r\nConnection: close\r\n\r\n");
  std::string in;
  if (https) {
    auto got = Exchange(s.fd, *tls, host, request, authority, deadline, peer, options.max_answer);
    if (!got.ok()) return got.status();
    in = *std::move(got);
  } else {
    auto got = ExchangePlain(s.fd, request, authority, deadline, peer, options.max_answer);
    if (!got.ok()) return got.status();
    in = *std::move(got);
  }
  return ParseReply(in, authority, peer);
}

absl::StatusOr<Reply> HttpPost(const std::string& url, const std::string& body, int timeout_ms, const TlsClient* tls) {
  return Fetch("POST", url, body, {.timeout_ms = timeout_ms, .tls = tls, .peer = "witness"});
}

}  // namespace ledger::http
