#include "ledger/rpc/server/tls.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace ledger::server {
namespace {

std::string Pem(void (*write)(BIO*, const void*), const void* what) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  write(bio.get(), what);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

// A self-signed P-256 certificate and its key, as PEM.
TlsPem SelfSigned(const std::string& cn) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  std::unique_ptr<X509, decltype(&X509_free)> x(X509_new(), X509_free);
  X509_set_version(x.get(), 2);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), 0);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), 3600);
  X509_set_pubkey(x.get(), key.get());
  X509_NAME_add_entry_by_txt(X509_get_subject_name(x.get()), "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x.get(), X509_get_subject_name(x.get()));
  X509_sign(x.get(), key.get(), EVP_sha256());
  TlsPem out;
  out.cert =
      Pem([](BIO* b, const void* c) { PEM_write_bio_X509(b, static_cast<X509*>(const_cast<void*>(c))); }, x.get());
  out.key = Pem(
      [](BIO* b, const void* k) {
        PEM_write_bio_PrivateKey(b, static_cast<EVP_PKEY*>(const_cast<void*>(k)), nullptr, nullptr, 0, nullptr,
                                 nullptr);
      },
      key.get());
  out.client_ca = out.cert;
  return out;
}

TEST(ServerTls, RefusesPartsThatDoNotParseOrDoNotMatch) {
  TlsPem good = SelfSigned("server");
  TlsPem other = SelfSigned("other");
  const std::string garbage = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n";
  struct Case {
    TlsPem pem;
    const char* message;
  } cases[] = {
      {{"", good.key, good.client_ca}, "cert: holds no PEM certificate"},
      {{garbage, good.key, good.client_ca}, "cert: holds no PEM certificate"},
      {{good.cert, "", good.client_ca}, "key: not a PEM private key"},
      {{good.cert, other.key, good.client_ca}, "key: is not the key of the certificate's first (leaf) certificate"},
      {{good.cert, good.key, garbage}, "client_ca: holds no PEM certificate"},
  };
  auto tls = ServerTls::Create(good);
  ASSERT_TRUE(tls.ok()) << tls.status();
  for (const Case& c : cases) {
    auto created = ServerTls::Create(c.pem);
    EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(created.status().message(), c.message);
    absl::Status replaced = (*tls)->Replace(c.pem);
    EXPECT_EQ(replaced.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(replaced.message(), c.message);
  }
  EXPECT_TRUE((*tls)->Replace(other).ok());
}

TEST(ServerTls, ClientCertificatesStayAsTheyWereAtStart) {
  TlsPem pem = SelfSigned("server");
  auto tls = ServerTls::Create(pem);
  ASSERT_TRUE(tls.ok());
  absl::Status s = (*tls)->Replace({pem.cert, pem.key, ""});
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "client_ca: client certificates are asked for or not as at start; restart to change that");
}

}  // namespace
}  // namespace ledger::server
