#include "ledger/format/hash/hash.h"

#include <openssl/evp.h>

#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ledger::hash {
namespace {

// Fetched once: OpenSSL 3 looks the implementation up again on every init
// given EVP_sha256(), which costs more than hashing a short leaf.
const EVP_MD* Sha256Md() {
  static EVP_MD* md = [] {
    EVP_MD* m = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (m == nullptr) std::abort();
    return m;
  }();
  return md;
}

// One digest context per thread, reused: allocating a context per hash would
// cost more than hashing a typical leaf.
class Digest {
 public:
  Digest() : ctx_(EVP_MD_CTX_new()) {
    if (ctx_ == nullptr) std::abort();
  }
  ~Digest() { EVP_MD_CTX_free(ctx_); }
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  void Begin() {
    if (EVP_DigestInit_ex2(ctx_, Sha256Md(), nullptr) != 1) std::abort();
  }
  void Add(const void* data, size_t n) {
    if (EVP_DigestUpdate(ctx_, data, n) != 1) std::abort();
  }
  Hash End() {
    Hash out;
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(ctx_, out.data(), &len) != 1 || len != out.size()) {
      std::abort();
    }
    return out;
  }

 private:
  EVP_MD_CTX* ctx_;
};

Digest& ThreadDigest() {
  thread_local Digest digest;
  return digest;
}

constexpr char kHexDigits[] = "0123456789abcdef";
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// HexValue of every byte, -1 for the others.
struct HexTable {
  int8_t v[256];
  constexpr HexTable() : v() {
    for (int i = 0; i < 256; ++i) v[i] = static_cast<int8_t>(HexValue(static_cast<char>(i)));
  }
};
constexpr HexTable kHexValue;

int B64Value(char c) {
  const char* p = std::strchr(kB64, c);
  return (c == '\0' || p == nullptr) ? -1 : static_cast<int>(p - kB64);
}

}  // namespace

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
  if (ctx_ == nullptr || EVP_DigestInit_ex2(static_cast<EVP_MD_CTX*>(ctx_), Sha256Md(), nullptr) != 1) {
    std::abort();
  }
}

Sha256Stream::~Sha256Stream() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256Stream::Update(std::string_view data) {
  if (EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data.data(), data.size()) != 1) std::abort();
}

Hash Sha256Stream::Final() {
  Hash out;
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), out.data(), &len) != 1 || len != out.size()) {
    std::abort();
  }
  return out;
}

Hash Sha256(std::string_view data) {
  Digest& d = ThreadDigest();
  d.Begin();
  d.Add(data.data(), data.size());
  return d.End();
}

Hash LeafHash(std::string_view leaf) {
  static constexpr uint8_t kPrefix = 0x00;
  Digest& d = ThreadDigest();
  d.Begin();
  d.Add(&kPrefix, 1);
  d.Add(leaf.data(), leaf.size());
  return d.End();
}

Hash NodeHash(const Hash& left, const Hash& right) {
  static constexpr uint8_t kPrefix = 0x01;
  Digest& d = ThreadDigest();
  d.Begin();
  d.Add(&kPrefix, 1);
  d.Add(left.data(), left.size());
  d.Add(right.data(), right.size());
  return d.End();
}

Hash EmptyRoot() { return Sha256(""); }

std::string_view AsBytes(const Hash& h) { return {reinterpret_cast<const char*>(h.data()), h.size()}; }

namespace {

// The two hex digits of every byte value.
struct HexPairs {
  char v[256][2];
  constexpr HexPairs() : v() {
    for (int i = 0; i < 256; ++i) {
      v[i][0] = kHexDigits[i >> 4];
      v[i][1] = kHexDigits[i & 0xf];
    }
  }
};
constexpr HexPairs kHexPairs;

void HexTo(std::string_view bytes, char* out) {
  for (size_t i = 0; i < bytes.size(); ++i) std::memcpy(out + 2 * i, kHexPairs.v[static_cast<uint8_t>(bytes[i])], 2);
}

}  // namespace

std::string Hex(std::string_view bytes) {
  std::string out(bytes.size() * 2, '\0');
  HexTo(bytes, out.data());
  return out;
}

std::string Hex(const Hash& h) { return Hex(AsBytes(h)); }

void AppendHex(const Hash& h, std::string* out) {
  char hex[2 * std::tuple_size_v<Hash>];
  HexTo(AsBytes(h), hex);
  out->append(hex, sizeof hex);
}

absl::StatusOr<Hash> ParseHex(std::string_view hex) {
  if (hex.size() != 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("hash: want 64 lowercase hex digits, got ", hex.size(), " characters"));
  }
  Hash out;
  if (!ParseHexTo(hex, &out)) {
    return absl::InvalidArgumentError("hash: want 64 lowercase hex digits, found another character");
  }
  return out;
}

bool ParseHexTo(std::string_view hex, Hash* out) {
  if (hex.size() != 64) return false;
  const auto* in = reinterpret_cast<const unsigned char*>(hex.data());
  int bad = 0;
  for (size_t i = 0; i < out->size(); ++i) {
    int hi = kHexValue.v[in[2 * i]];
    int lo = kHexValue.v[in[2 * i + 1]];
    bad |= hi | lo;  // negative when either is
    (*out)[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return bad >= 0;
}

absl::StatusOr<Hash> FromBytes(std::string_view bytes) {
  if (bytes.size() != 32) {
    return absl::InvalidArgumentError(absl::StrCat("hash: want 32 bytes, got ", bytes.size()));
  }
  Hash out;
  std::memcpy(out.data(), bytes.data(), out.size());
  return out;
}

std::string Base64(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  auto at = [&](size_t k) { return static_cast<uint8_t>(bytes[k]); };
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = at(i) << 16 | at(i + 1) << 8 | at(i + 2);
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += kB64[v & 63];
  }
  if (bytes.size() - i == 1) {
    uint32_t v = at(i) << 16;
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += "==";
  } else if (bytes.size() - i == 2) {
    uint32_t v = at(i) << 16 | at(i + 1) << 8;
    out += kB64[v >> 18];
    out += kB64[(v >> 12) & 63];
    out += kB64[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

absl::StatusOr<std::string> Base64Decode(std::string_view text) {
  auto bad = [] { return absl::InvalidArgumentError("base64: not canonical standard base64"); };
  if (text.size() % 4 != 0) return bad();
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    bool last = i + 4 == text.size();
    int pad = 0;
    if (last && text[i + 3] == '=') pad = (text[i + 2] == '=') ? 2 : 1;
    int v[4];
    for (int k = 0; k < 4 - pad; ++k) {
      v[k] = B64Value(text[i + k]);
      if (v[k] < 0) return bad();
    }
    for (int k = 4 - pad; k < 4; ++k) v[k] = 0;
    uint32_t word = v[0] << 18 | v[1] << 12 | v[2] << 6 | v[3];
    out += static_cast<char>(word >> 16);
    if (pad < 2) out += static_cast<char>((word >> 8) & 0xff);
    if (pad < 1) out += static_cast<char>(word & 0xff);
    // Canonical: the bits a padded group drops must be zero.
    if ((pad == 1 && (word & 0xff) != 0) || (pad == 2 && (word & 0xffff) != 0)) {
      return bad();
    }
  }
  return out;
}

}  // namespace ledger::hash
