#include "util/tls/probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>
#include <utility>

#include "absl/time/clock.h"

namespace ledger::tls {
namespace {

struct Deleter {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
  void operator()(SSL* s) const { SSL_free(s); }
  void operator()(BIO* b) const { BIO_free(b); }
  void operator()(X509* x) const { X509_free(x); }
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
template <typename T>
using Owned = std::unique_ptr<T, Deleter>;

// A connected socket, closed when it goes.
class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

// HOST and PORT of "HOST:PORT" or "[IPV6]:PORT".
std::optional<std::pair<std::string, std::string>> Split(std::string_view address) {
  size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == address.size()) return std::nullopt;
  std::string_view host = address.substr(0, colon), port = address.substr(colon + 1);
  if (host.starts_with('[') && host.ends_with(']')) host = host.substr(1, host.size() - 2);
  if (host.empty() || (host.find(':') != std::string_view::npos && !address.starts_with('['))) return std::nullopt;
  return std::make_pair(std::string(host), std::string(port));
}

int Remaining(absl::Time deadline) {
  return static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
}

// A TCP connection to the address by `deadline`, blocking, its reads and
// writes bounded by what is left of it.
std::optional<int> Connect(std::string_view address, absl::Time deadline) {
  auto parts = Split(address);
  if (!parts) return std::nullopt;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(parts->first.c_str(), parts->second.c_str(), &hints, &found) != 0) return std::nullopt;
  std::optional<int> connected;
  for (addrinfo* a = found; a != nullptr && !connected; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    bool ok = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    if (!ok && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int error = 0;
      socklen_t len = sizeof error;
      ok = ::poll(&p, 1, Remaining(deadline)) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 &&
           error == 0;
    }
    if (ok) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      connected = fd;
    } else {
      ::close(fd);
    }
  }
  freeaddrinfo(found);
  return connected;
}

// Bounds the socket's next reads and writes by what is left of `deadline`.
void Bound(int fd, absl::Time deadline) {
  int ms = std::max(1, Remaining(deadline));
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool UseClientCertificate(SSL_CTX* ctx, const ClientCertificate& client) {
  Owned<BIO> cert_bio(BIO_new_mem_buf(client.cert_pem.data(), static_cast<int>(client.cert_pem.size())));
  Owned<BIO> key_bio(BIO_new_mem_buf(client.key_pem.data(), static_cast<int>(client.key_pem.size())));
  Owned<X509> cert(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  Owned<EVP_PKEY> key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  return cert && key && SSL_CTX_use_certificate(ctx, cert.get()) == 1 && SSL_CTX_use_PrivateKey(ctx, key.get()) == 1;
}

// Called when the server asks for a client certificate and none is set:
// notes that it asked, and sends none.
int NoteAsked(SSL* ssl, X509**, EVP_PKEY**) {
  *static_cast<bool*>(SSL_get_app_data(ssl)) = true;
  return 0;
}

// The alert a failed TLS call received, without OpenSSL's "tlsv13 alert "
// or "sslv3 alert " prefix; "" when the failure was not an alert.
std::string ReceivedAlert(unsigned long error) {
  const char* reason = ERR_reason_error_string(error);
  std::string text = reason != nullptr ? reason : "";
  size_t at = text.find(" alert ");
  return at == std::string::npos ? "" : text.substr(at + 7);
}

}  // namespace

Probe ProbeTls(std::string_view address, const ClientCertificate& client, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  auto fd = Connect(address, deadline);
  if (!fd) return {};
  Socket socket(*fd);
  Owned<SSL_CTX> ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return {};
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  const bool with_cert = !client.cert_pem.empty();
  if (with_cert && !UseClientCertificate(ctx.get(), client)) return {};
  if (!with_cert) SSL_CTX_set_client_cert_cb(ctx.get(), NoteAsked);
  static const unsigned char kAlpn[] = {2, 'h', '2'};
  SSL_CTX_set_alpn_protos(ctx.get(), kAlpn, sizeof kAlpn);
  Owned<SSL> ssl(SSL_new(ctx.get()));
  bool asked = false;
  if (!ssl || SSL_set_fd(ssl.get(), socket.fd()) != 1) return {};
  SSL_set_app_data(ssl.get(), &asked);
  ERR_clear_error();
  Bound(socket.fd(), deadline);
  // A refusal of the client's certificate is an alert, in the handshake
  // (TLS 1.2) or at the first read after it (TLS 1.3).
  auto refused = [&](unsigned long error) -> std::optional<Probe> {
    std::string alert = ReceivedAlert(error);
    if (alert.empty()) return std::nullopt;
    if (!with_cert && (asked || alert == "certificate required")) return Probe{Speaks::kTlsWantsClientCert, alert};
    if (with_cert) return Probe{Speaks::kTlsRefusedCert, alert};
    return Probe{Speaks::kTls, alert};
  };
  if (SSL_connect(ssl.get()) != 1) {
    unsigned long error = ERR_peek_last_error();
    if (ERR_GET_LIB(error) == ERR_LIB_SSL && (ERR_GET_REASON(error) == SSL_R_WRONG_VERSION_NUMBER ||
                                              ERR_GET_REASON(error) == SSL_R_PACKET_LENGTH_TOO_LONG)) {
      return {Speaks::kPlainText, ""};
    }
    if (auto p = refused(error)) return *p;
    return {asked ? Speaks::kTlsWantsClientCert : Speaks::kUnknown, ""};
  }
  // A server that took the handshake waits for the client's first bytes;
  // a refusal comes at once.
  Bound(socket.fd(), std::min(deadline, absl::Now() + absl::Seconds(1)));
  char byte;
  int n = SSL_read(ssl.get(), &byte, 1);
  if (n > 0) return {Speaks::kTls, ""};
  const int why = SSL_get_error(ssl.get(), n);
  const unsigned long error = ERR_peek_last_error();
  if (why == SSL_ERROR_SSL) {
    if (auto p = refused(error)) return *p;
  }
  // Closed (not merely quiet until the deadline) after asking for a
  // certificate it was not given.
  const bool closed = why == SSL_ERROR_ZERO_RETURN ||
                      (why == SSL_ERROR_SSL && ERR_GET_REASON(error) == SSL_R_UNEXPECTED_EOF_WHILE_READING) ||
                      (why == SSL_ERROR_SYSCALL && errno != EAGAIN && errno != EWOULDBLOCK);
  if (closed && with_cert) return {Speaks::kTlsRefusedCert, ""};
  return {closed && asked ? Speaks::kTlsWantsClientCert : Speaks::kTls, ""};
}

}  // namespace ledger::tls
