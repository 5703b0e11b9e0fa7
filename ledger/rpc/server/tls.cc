#include "ledger/rpc/server/tls.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpc/grpc.h"
#include "grpc/grpc_security.h"

namespace ledger::server {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Cert = std::unique_ptr<X509, X509Free>;

Bio Reader(const std::string& pem) { return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

// The certificates of `pem`, in order; empty when it holds none or one
// does not parse.
std::vector<Cert> Certificates(const std::string& pem) {
  std::vector<Cert> out;
  Bio bio = Reader(pem);
  while (bio != nullptr) {
    Cert c(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (c == nullptr) break;
    out.push_back(std::move(c));
  }
  return out;
}

absl::Status Invalid(std::string_view part, std::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(part), ": ", std::string(rule)));
}

absl::Status Check(const TlsPem& pem) {
  std::vector<Cert> chain = Certificates(pem.cert);
  if (chain.empty()) return Invalid("cert", "holds no PEM certificate");
  Bio bio = Reader(pem.key);
  std::unique_ptr<EVP_PKEY, KeyFree> key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (key == nullptr) return Invalid("key", "not a PEM private key");
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    return Invalid("key", "is not the key of the certificate's first (leaf) certificate");
  }
  if (!pem.client_ca.empty() && Certificates(pem.client_ca).empty()) {
    return Invalid("client_ca", "holds no PEM certificate");
  }
  return absl::OkStatus();
}

}  // namespace

// gRPC's SSL server credentials made with the fetcher. grpc++ offers no
// wrapper for them, so this is one: it adds the port with the C core's
// credentials.
class ServerTls::Fetched final : public grpc::ServerCredentials {
 public:
  explicit Fetched(ServerTls* tls, bool client_certificates) {
    grpc_ssl_server_credentials_options* options = grpc_ssl_server_credentials_create_options_using_config_fetcher(
        client_certificates ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                            : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
        &ServerTls::Fetch, tls);
    creds_ = grpc_ssl_server_credentials_create_with_options(options);
  }
  ~Fetched() override { grpc_server_credentials_release(creds_); }

  void SetAuthMetadataProcessor(const std::shared_ptr<grpc::AuthMetadataProcessor>&) override {}

 private:
  int AddPortToServer(const std::string& addr, grpc_server* server) override {
    return grpc_server_add_http2_port(server, addr.c_str(), creds_);
  }

  grpc_server_credentials* creds_;
};

absl::StatusOr<std::unique_ptr<ServerTls>> ServerTls::Create(TlsPem pem) {
  if (auto s = Check(pem); !s.ok()) return s;
  return std::unique_ptr<ServerTls>(new ServerTls(std::move(pem)));
}

ServerTls::~ServerTls() = default;

absl::Status ServerTls::Replace(TlsPem pem) {
  if (auto s = Check(pem); !s.ok()) return s;
  sync::MutexLock lock(&mu_);
  if (pem.client_ca.empty() != pem_.client_ca.empty()) {
    return absl::FailedPreconditionError(
        "client_ca: client certificates are asked for or not as at start; restart to change that");
  }
  pem_ = std::move(pem);
  ++generation_;
  return absl::OkStatus();
}

std::shared_ptr<grpc::ServerCredentials> ServerTls::Credentials() {
  sync::MutexLock lock(&mu_);
  return std::make_shared<Fetched>(this, !pem_.client_ca.empty());
}

grpc_ssl_certificate_config_reload_status ServerTls::Fetch(void* self, grpc_ssl_server_certificate_config** config) {
  auto* tls = static_cast<ServerTls*>(self);
  sync::MutexLock lock(&tls->mu_);
  if (tls->fetched_ == tls->generation_) return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
  grpc_ssl_pem_key_cert_pair pair{tls->pem_.key.c_str(), tls->pem_.cert.c_str()};
  *config = grpc_ssl_server_certificate_config_create(
      tls->pem_.client_ca.empty() ? nullptr : tls->pem_.client_ca.c_str(), &pair, 1);
  tls->fetched_ = tls->generation_;
  return GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW;
}

}  // namespace ledger::server
