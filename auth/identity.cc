#include "auth/identity.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace ledger::auth {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct NamesFree {
  void operator()(GENERAL_NAMES* n) const { GENERAL_NAMES_free(n); }
};

std::string AsString(const ASN1_STRING* s) {
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                     static_cast<size_t>(ASN1_STRING_length(s)));
}

// The first SAN of `type` (GEN_URI or GEN_DNS), or "".
std::string FirstSan(const GENERAL_NAMES* names, int type) {
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names, i);
    if (n->type == type) return AsString(n->d.ia5);
  }
  return "";
}

}  // namespace

absl::StatusOr<std::string> IdentityOfCertificate(std::string_view pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::unique_ptr<X509, X509Free> cert(
      bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (cert == nullptr) return absl::UnauthenticatedError("client certificate: not a PEM certificate");
  std::unique_ptr<GENERAL_NAMES, NamesFree> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)));
  if (names != nullptr) {
    for (int type : {GEN_URI, GEN_DNS}) {
      std::string id = FirstSan(names.get(), type);
      if (!id.empty()) return id;
    }
  }
  X509_NAME* subject = X509_get_subject_name(cert.get());
  int i = subject ? X509_NAME_get_index_by_NID(subject, NID_commonName, -1) : -1;
  if (i >= 0) {
    const ASN1_STRING* cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, cn);
    if (n > 0) {
      std::string id(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
      OPENSSL_free(utf8);
      return id;
    }
    OPENSSL_free(utf8);
  }
  return absl::UnauthenticatedError("client certificate: names no identity (no URI or DNS SAN, no CN)");
}

}  // namespace ledger::auth
