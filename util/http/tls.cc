#include "util/http/internal/tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "util/tls/identity.h"

namespace ledger::http::tls {

absl::StatusOr<std::shared_ptr<SSL_CTX>> NewTlsContext(const HttpTls& tls) {
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (ctx == nullptr) return absl::InternalError("http tls: SSL_CTX_new failed");
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
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
  bool key_ok =
      key != nullptr && SSL_CTX_use_PrivateKey(ctx.get(), key) == 1 && SSL_CTX_check_private_key(ctx.get()) == 1;
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
  // A client resuming a session (Node's https agent does, on its next
  // connection) is refused by OpenSSL with an internal error alert unless
  // the server names a session id context when it verifies clients.
  static constexpr unsigned char kSessionContext[] = "ledger-http";
  SSL_CTX_set_session_id_context(ctx.get(), kSessionContext, sizeof kSessionContext - 1);
  return ctx;
}

std::string PeerIdentity(SSL* ssl) {
  X509* peer = SSL_get1_peer_certificate(ssl);
  if (peer == nullptr) return "";
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_X509(bio.get(), peer);
  X509_free(peer);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  auto id = ::ledger::tls::IdentityOfCertificate(std::string_view(data, static_cast<size_t>(n)));
  return id.ok() ? *id : "";
}

}  // namespace ledger::http::tls
