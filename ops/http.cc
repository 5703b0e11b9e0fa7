#include "ops/http.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "auth/identity.h"

namespace ledger::ops {
namespace {

constexpr size_t kMaxHeaderBytes = 16 * 1024;
constexpr int kReadTimeoutMs = 10'000;

const char* Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

// One accepted connection, plain or TLS; blocking I/O bounded by socket
// timeouts.
class Conn {
 public:
  Conn(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  ~Conn() {
    if (ssl_ != nullptr) {
      SSL_shutdown(ssl_);
      SSL_free(ssl_);
    }
  }
  ssize_t Read(char* buf, size_t n) {
    if (ssl_ == nullptr) {
      ssize_t r;
      do r = ::recv(fd_, buf, n, 0);
      while (r < 0 && errno == EINTR);
      return r;
    }
    int r = SSL_read(ssl_, buf, static_cast<int>(n));
    return r > 0 ? r : -1;
  }
  bool Write(std::string_view data) {
    while (!data.empty()) {
      ssize_t n;
      if (ssl_ == nullptr) {
        n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
      } else {
        n = SSL_write(ssl_, data.data(), static_cast<int>(data.size()));
      }
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

 private:
  int fd_;
  SSL* ssl_;
};

// Reads until the end of the headers. False on timeout, EOF or overflow
// (*too_large set for overflow).
bool ReadHead(Conn& conn, std::string* head, bool* too_large) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kReadTimeoutMs);
  char buf[4096];
  while (head->find("\r\n\r\n") == std::string::npos) {
    if (head->size() > kMaxHeaderBytes) {
      *too_large = true;
      return false;
    }
    if (std::chrono::steady_clock::now() > deadline) return false;
    ssize_t n = conn.Read(buf, sizeof buf);
    if (n <= 0) return false;
    head->append(buf, static_cast<size_t>(n));
  }
  if (head->find("\r\n\r\n") > kMaxHeaderBytes) {
    *too_large = true;
    return false;
  }
  return true;
}

void SetTimeouts(int fd) {
  timeval rcv{kReadTimeoutMs / 1000, 0}, snd{60, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof rcv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd);
}

absl::StatusOr<std::shared_ptr<SSL_CTX>> NewTlsContext(const HttpTls& tls) {
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (ctx == nullptr) return absl::InternalError("http tls: SSL_CTX_new failed");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  auto bio_of = [](const std::string& pem) {
    return std::unique_ptr<BIO, decltype(&BIO_free)>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
                                                     BIO_free);
  };
  auto cert_bio = bio_of(tls.cert_pem);
  X509* cert = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr);
  if (cert == nullptr || SSL_CTX_use_certificate(ctx.get(), cert) != 1) {
    X509_free(cert);
    return absl::InvalidArgumentError("http tls: the server certificate is not usable");
  }
  X509_free(cert);
  while (X509* extra = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr)) {
    SSL_CTX_add_extra_chain_cert(ctx.get(), extra);  // owned by ctx
  }
  ERR_clear_error();
  auto key_bio = bio_of(tls.key_pem);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
  bool key_ok = key != nullptr && SSL_CTX_use_PrivateKey(ctx.get(), key) == 1 &&
                SSL_CTX_check_private_key(ctx.get()) == 1;
  EVP_PKEY_free(key);
  if (!key_ok) return absl::InvalidArgumentError("http tls: the private key is not usable with the certificate");
  X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
  auto ca_bio = bio_of(tls.client_ca_pem);
  int cas = 0;
  while (X509* ca = PEM_read_bio_X509(ca_bio.get(), nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, ca);
    X509_free(ca);
    ++cas;
  }
  ERR_clear_error();
  if (cas == 0) return absl::InvalidArgumentError("http tls: no client CA certificate");
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return ctx;
}

// The identity of the peer's verified certificate, or "".
std::string PeerIdentity(SSL* ssl) {
  X509* peer = SSL_get1_peer_certificate(ssl);
  if (peer == nullptr) return "";
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_X509(bio.get(), peer);
  X509_free(peer);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  auto id = auth::IdentityOfCertificate(std::string_view(data, static_cast<size_t>(n)));
  return id.ok() ? *id : "";
}

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
        int d = absl::ascii_isdigit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
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


absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen, HttpHandler handler,
                                                              int max_connections, const HttpTls* tls) {
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
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->handler_ = std::move(handler);
  server->max_connections_ = max_connections;
  server->tls_ = tls_ctx;
  int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  bool ok = fd >= 0 && ::bind(fd, found->ai_addr, found->ai_addrlen) == 0 && ::listen(fd, 64) == 0;
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
  server->listen_fd_ = fd;
  server->address_ = absl::StrCat(listen.substr(0, colon), ":", real_port);
  server->acceptor_ = std::thread([s = server.get()] { s->Accept(); });
  return server;
}

HttpServer::~HttpServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  while (open_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void HttpServer::Accept() {
  while (!stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
    if (fd < 0) continue;
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (peer.ss_family == AF_INET) {
      auto* a = reinterpret_cast<sockaddr_in*>(&peer);
      ::inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
      port = ntohs(a->sin_port);
    } else if (peer.ss_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&peer);
      ::inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
      port = ntohs(a->sin6_port);
    }
    if (open_.load() >= max_connections_) {
      if (tls_ == nullptr) {
        Conn(fd, nullptr).Write("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
      }
      ::close(fd);
      continue;
    }
    ++open_;
    std::thread([this, fd, peer_name = absl::StrCat(ip, ":", port)] {
      Serve(fd, peer_name);
      ::close(fd);
      --open_;
    }).detach();
  }
}

void HttpServer::Serve(int fd, std::string peer) {
  SetTimeouts(fd);
  HttpRequest request;
  request.peer = std::move(peer);
  SSL* ssl = nullptr;
  if (tls_ != nullptr) {
    ssl = SSL_new(static_cast<SSL_CTX*>(tls_.get()));
    if (ssl == nullptr) return;
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) != 1) {  // no certificate, another CA, expired: refused here
      SSL_free(ssl);
      ERR_clear_error();
      return;
    }
    request.identity = PeerIdentity(ssl);
  }
  Conn conn(fd, ssl);
  std::string head;
  bool too_large = false;
  HttpResponse response;
  if (!ReadHead(conn, &head, &too_large)) {
    if (!too_large) return;
    response = Text(431, "request headers too large\n");
  } else {
    std::vector<std::string> lines = absl::StrSplit(head.substr(0, head.find("\r\n\r\n")), "\r\n");
    std::vector<std::string> first = absl::StrSplit(lines[0], ' ');
    if (first.size() != 3 || first[2].rfind("HTTP/1.", 0) != 0) {
      response = Text(400, "bad request line\n");
    } else {
      request.method = first[0];
      std::string target = first[1];
      size_t q = target.find('?');
      request.raw_path = target.substr(0, q);
      auto path = UrlDecode(request.raw_path);
      bool bad = !path.ok();
      if (path.ok()) request.path = *path;
      if (q != std::string::npos) {
        std::vector<std::string> pairs = absl::StrSplit(target.substr(q + 1), '&', absl::SkipEmpty());
        for (std::string_view pair : pairs) {
          size_t eq = pair.find('=');
          auto k = UrlDecode(pair.substr(0, eq));
          auto v = UrlDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
          if (!k.ok() || !v.ok()) bad = true;
          else request.query[*k] = *v;
        }
      }
      for (size_t i = 1; i < lines.size(); ++i) {
        size_t colon = lines[i].find(':');
        if (colon == std::string::npos) continue;
        request.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
            std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
      }
      if (bad) {
        response = Text(400, "bad escape in the URL\n");
      } else if (request.method != "GET" && request.method != "HEAD") {
        response = Text(405, "only GET and HEAD\n");
        response.headers["Allow"] = "GET, HEAD";
      } else {
        response = handler_(request);
      }
    }
  }
  std::ifstream file;
  uint64_t length = response.body.size();
  if (!response.file_to_send_and_remove.empty()) {
    file.open(response.file_to_send_and_remove, std::ios::binary | std::ios::ate);
    length = file ? static_cast<uint64_t>(file.tellg()) : 0;
    file.seekg(0);
  }
  std::string out = absl::StrCat("HTTP/1.1 ", response.status, " ", Reason(response.status),
                                 "\r\nContent-Type: ", response.content_type, "\r\nContent-Length: ", length,
                                 "\r\nConnection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n");
  for (const auto& [k, v] : response.headers) absl::StrAppend(&out, k, ": ", v, "\r\n");
  out += "\r\n";
  bool sent = conn.Write(out);
  if (request.method != "HEAD" && sent) {
    if (file.is_open()) {
      char buf[64 * 1024];
      while (sent && file.read(buf, sizeof buf), file.gcount() > 0) {
        sent = conn.Write(std::string_view(buf, static_cast<size_t>(file.gcount())));
      }
    } else {
      conn.Write(response.body);
    }
  }
  if (!response.file_to_send_and_remove.empty()) std::remove(response.file_to_send_and_remove.c_str());
}

}  // namespace ledger::ops
