#include "util/tls/identity.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdint>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"

namespace ledger::tls {
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

// The code point at s[*i], advancing *i; -1 for an ill-formed sequence
// (overlong, surrogate, beyond U+10FFFF, truncated).
int32_t NextCodePoint(std::string_view s, size_t* i) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t b = byte(*i);
  int n = b < 0x80 ? 0 : (b & 0xE0) == 0xC0 ? 1 : (b & 0xF0) == 0xE0 ? 2 : (b & 0xF8) == 0xF0 ? 3 : -1;
  if (n < 0 || *i + n >= s.size()) return -1;
  int32_t cp = n == 0 ? b : b & (0x3F >> n);
  for (int k = 1; k <= n; ++k) {
    uint8_t c = byte(*i + k);
    if ((c & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (c & 0x3F);
  }
  static constexpr int32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  *i += n + 1;
  return cp;
}

bool IsControl(int32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

// The identity of `kind` named `name`, or UNAUTHENTICATED naming `what`.
absl::StatusOr<std::string> Typed(const std::string& kind, const std::string& what, const std::string& name) {
  std::string fault = IdentityFault(name);
  if (!fault.empty()) return absl::UnauthenticatedError(absl::StrCat("client certificate: its ", what, " ", fault));
  return absl::StrCat(kind, ":", name);
}

}  // namespace

std::string IdentityFault(std::string_view name) {
  for (size_t i = 0; i < name.size();) {
    int32_t cp = NextCodePoint(name, &i);
    if (cp < 0) return "is not valid UTF-8";
    if (IsControl(cp)) {
      char code[16];
      std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(cp));
      return absl::StrCat("holds a control character (", code, ")");
    }
  }
  return "";
}

absl::StatusOr<std::string> IdentityOfCertificate(std::string_view pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::unique_ptr<X509, X509Free> cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (cert == nullptr) return absl::UnauthenticatedError("client certificate: not a PEM certificate");
  std::unique_ptr<GENERAL_NAMES, NamesFree> names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)));
  if (names != nullptr) {
    std::string uri = FirstSan(names.get(), GEN_URI);
    if (!uri.empty()) return Typed("uri", "URI SAN", uri);
    std::string dns = FirstSan(names.get(), GEN_DNS);
    if (!dns.empty()) return Typed("dns", "DNS SAN", dns);
  }
  X509_NAME* subject = X509_get_subject_name(cert.get());
  int i = subject ? X509_NAME_get_index_by_NID(subject, NID_commonName, -1) : -1;
  if (i >= 0) {
    const ASN1_STRING* cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, cn);
    std::string name(n > 0 ? reinterpret_cast<char*>(utf8) : "", n > 0 ? static_cast<size_t>(n) : 0);
    OPENSSL_free(utf8);
    if (n < 0) return absl::UnauthenticatedError("client certificate: its subject CN is not valid UTF-8");
    if (n > 0) return Typed("cn", "subject CN", name);
  }
  return absl::UnauthenticatedError("client certificate: names no identity (no URI or DNS SAN, no CN)");
}

}  // namespace ledger::tls
