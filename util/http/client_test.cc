#include "util/http/client.h"

#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/util/status_matchers.h"
#include "util/http/http.h"

namespace ledger::http {
namespace {

using ::ledger::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Cert = std::unique_ptr<X509, decltype(&X509_free)>;

std::string PemOf(X509* x) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_X509(bio.get(), x);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string PemOf(EVP_PKEY* k) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_PrivateKey(bio.get(), k, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

// A P-256 certificate of `cn` with the extensions given ("basicConstraints"
// and "subjectAltName" values), signed by `issuer` (itself when null).
Cert Issue(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key, const char* constraints,
           const char* san) {
  Cert x(X509_new(), X509_free);
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x.get()), static_cast<long>(std::hash<std::string>()(cn) & 0x7fffffff));
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), 3600);
  X509_set_pubkey(x.get(), key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(x.get()), "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x.get(), X509_get_subject_name(issuer != nullptr ? issuer : x.get()));
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : x.get(), x.get(), nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_basic_constraints, constraints}, std::pair{NID_subject_alt_name, san}}) {
    if (value == nullptr) continue;
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(x.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(x.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256());
  return x;
}

// A CA, the server's certificate for 127.0.0.1, a client's, and a server
// certificate for another address.
struct Pki {
  Key ca_key{EVP_EC_gen("P-256"), EVP_PKEY_free}, server_key{EVP_EC_gen("P-256"), EVP_PKEY_free},
      client_key{EVP_EC_gen("P-256"), EVP_PKEY_free};
  Cert ca = Issue(ca_key.get(), "test-ca", nullptr, nullptr, "critical,CA:TRUE", nullptr);
  Cert server = Issue(server_key.get(), "server", ca.get(), ca_key.get(), "CA:FALSE", "IP:127.0.0.1");
  Cert elsewhere = Issue(server_key.get(), "elsewhere", ca.get(), ca_key.get(), "CA:FALSE", "IP:10.9.8.7");
  Cert client = Issue(client_key.get(), "client-1", ca.get(), ca_key.get(), "CA:FALSE", "DNS:client-1");
};

// The one HTTP server, answering with the request's method, identity and
// body (or a big body for /big, a slow one for /slow).
class ClientTest : public ::testing::Test {
 protected:
  // As every program serving HTTP does (ledgerd, ledger-witness,
  // ledger-monitor): the server writes to peers that may have gone.
  static void SetUpTestSuite() { signal(SIGPIPE, SIG_IGN); }

  std::unique_ptr<HttpServer> Serve(const HttpTls* tls = nullptr, std::string_view san_cert = "") {
    HttpOptions options;
    options.max_body_bytes = 1 << 20;
    auto server = HttpServer::Start(
        "127.0.0.1:0",
        [](const HttpRequest& r) {
          if (r.path == "/big") return Text(200, std::string(100'000, 'x'));
          if (r.path == "/slow") std::this_thread::sleep_for(std::chrono::milliseconds(1500));
          if (r.path == "/missing") return Text(404, "no such thing\n");
          HttpResponse out =
              Text(200, absl::StrCat(r.method, " ", r.identity, " ",
                                     r.headers.count("content-type") ? r.headers.at("content-type") : "", " ", r.body));
          out.content_type = "application/x-test";
          return out;
        },
        options, tls);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }
  Pki pki_;
};

TEST_F(ClientTest, GetsAndPostsOverPlainHttp) {
  auto server = Serve();
  const std::string base = "http://" + server->address();
  auto got = Fetch("GET", base + "/x", "", {});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->content_type, "application/x-test");
  EXPECT_EQ(got->body, "GET   ");
  auto posted = Fetch("POST", base + "/add-checkpoint", std::string(5000, 'c'), {.content_type = "text/x-note"});
  ASSERT_TRUE(posted.ok()) << posted.status();
  EXPECT_EQ(posted->body, "POST  text/x-note " + std::string(5000, 'c'));
  auto missing = Fetch("GET", base + "/missing", "", {});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body, "no such thing\n");
}

TEST_F(ClientTest, AnAnswerAboveTheBoundIsDataLoss) {
  auto server = Serve();
  EXPECT_THAT(Fetch("GET", "http://" + server->address() + "/big", "", {.max_answer = 50'000, .peer = "log"}),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(StartsWith("log " + server->address() + ": "), HasSubstr("answer above 50000 bytes"))));
  EXPECT_TRUE(Fetch("GET", "http://" + server->address() + "/big", "", {.max_answer = 200'000}).ok());
}

TEST_F(ClientTest, UnreachableAndSlowPeersAreUnavailableNamingThem) {
  // A port nothing listens on: one just closed.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), len), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  const std::string closed = absl::StrCat("127.0.0.1:", ntohs(a.sin_port));
  EXPECT_THAT(Fetch("GET", "http://" + closed + "/", "", {.peer = "witness"}),
              StatusIs(absl::StatusCode::kUnavailable, StartsWith("witness " + closed + ": connect")));
  auto server = Serve();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(Fetch("GET", "http://" + server->address() + "/slow", "", {.timeout_ms = 300, .peer = "log"}),
              StatusIs(absl::StatusCode::kUnavailable, StartsWith("log " + server->address() + ": no answer in time")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1400));
}

TEST_F(ClientTest, MalformedRequestsAreRefusedBeforeAnythingIsSent) {
  EXPECT_THAT(Fetch("PUT", "http://127.0.0.1:1/", "", {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("want GET or POST")));
  EXPECT_THAT(Fetch("GET", "ftp://127.0.0.1/", "", {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("want http:// or https://")));
  EXPECT_THAT(Fetch("GET", "http:///x", "", {}), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no host")));
  EXPECT_THAT(Fetch("GET", "https://127.0.0.1:1/", "", {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("https needs a CA")));
  TlsClient no_ca{"not a certificate", "", ""};
  EXPECT_THAT(Fetch("GET", "https://127.0.0.1:1/", "", {.tls = &no_ca, .peer = "log"}),
              StatusIs(absl::StatusCode::kInvalidArgument, "log tls: no CA certificate to verify the log with"));
  TlsClient mismatched{PemOf(pki_.ca.get()), PemOf(pki_.client.get()), PemOf(pki_.server_key.get())};
  EXPECT_THAT(Fetch("GET", "https://127.0.0.1:1/", "", {.tls = &mismatched, .peer = "log"}),
              StatusIs(absl::StatusCode::kInvalidArgument, "log tls: the client certificate and key are not usable"));
}

TEST_F(ClientTest, HttpsVerifiesTheServerAndPresentsTheClientsCertificate) {
  const HttpTls tls{PemOf(pki_.server.get()), PemOf(pki_.server_key.get()), PemOf(pki_.ca.get())};
  auto server = Serve(&tls);
  const std::string url = "https://" + server->address() + "/x";
  const TlsClient client{PemOf(pki_.ca.get()), PemOf(pki_.client.get()), PemOf(pki_.client_key.get())};
  auto got = Fetch("POST", url, "note", {.tls = &client});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->body, "POST dns:client-1 text/plain note");
  // Another CA: the server is not trusted.
  Key other_key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  Cert other = Issue(other_key.get(), "other-ca", nullptr, nullptr, "critical,CA:TRUE", nullptr);
  const TlsClient strangers{PemOf(other.get()), PemOf(pki_.client.get()), PemOf(pki_.client_key.get())};
  EXPECT_THAT(Fetch("GET", url, "", {.tls = &strangers, .peer = "witness"}),
              StatusIs(absl::StatusCode::kUnavailable, StartsWith("witness " + server->address() + ": tls handshake")));
  // No client certificate: the server refuses the handshake.
  const TlsClient anonymous{PemOf(pki_.ca.get()), "", ""};
  EXPECT_THAT(Fetch("GET", url, "", {.tls = &anonymous}), StatusIs(absl::StatusCode::kUnavailable));
  // A certificate for another address.
  const HttpTls elsewhere_tls{PemOf(pki_.elsewhere.get()), PemOf(pki_.server_key.get()), PemOf(pki_.ca.get())};
  auto elsewhere = Serve(&elsewhere_tls);
  EXPECT_THAT(Fetch("GET", "https://" + elsewhere->address() + "/x", "", {.tls = &client}),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr(": tls handshake")));
}

// A peer that answers with `answer` whatever it is asked, then closes.
class RawPeer {
 public:
  explicit RawPeer(std::string answer) : answer_(std::move(answer)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), len);
    ::listen(fd_, 4);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    address_ = absl::StrCat("127.0.0.1:", ntohs(a.sin_port));
    thread_ = std::thread([this] {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      (void)::recv(c, buf, sizeof buf, 0);
      (void)::send(c, answer_.data(), answer_.size(), MSG_NOSIGNAL);
      ::shutdown(c, SHUT_RDWR);
      ::close(c);
    });
  }
  ~RawPeer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  const std::string& address() const { return address_; }

 private:
  std::string answer_, address_;
  int fd_ = -1;
  std::thread thread_;
};

TEST_F(ClientTest, AnAnswerThatIsNotHttpIsDataLoss) {
  RawPeer peer("SSH-2.0-OpenSSH_9.2\r\n\r\nnothing of HTTP here\r\n");
  EXPECT_THAT(Fetch("GET", "http://" + peer.address() + "/", "", {.peer = "log"}),
              StatusIs(absl::StatusCode::kDataLoss, StartsWith("log " + peer.address() + ": the answer is not HTTP")));
}

TEST_F(ClientTest, AChunkedAnswerIsReadWhole) {
  RawPeer peer(
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
      "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n");
  auto got = Fetch("GET", "http://" + peer.address() + "/", "", {});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->body, "hello, world");
}

}  // namespace
}  // namespace ledger::http
