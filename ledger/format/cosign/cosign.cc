#include "ledger/format/cosign/cosign.h"

#include <sodium.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ledger/format/cosign/internal/codec.h"
#include "ledger/format/hash/hash.h"

namespace ledger::cosign {
namespace internal {

void InitSodium() {
  static const bool ok = sodium_init() >= 0;
  if (!ok) std::abort();
}

std::string Hex8(uint32_t id) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", id);
  return buf;
}

bool ParseHex8(std::string_view s, uint32_t* out) {
  if (s.size() != 8) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

uint32_t BigEndian32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

uint64_t BigEndian64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = v << 8 | p[i];
  return v;
}

bool Split3(std::string_view s, std::string_view out[3]) {
  size_t a = s.find('+');
  if (a == std::string_view::npos) return false;
  size_t b = s.find('+', a + 1);
  if (b == std::string_view::npos) return false;
  out[0] = s.substr(0, a);
  out[1] = s.substr(a + 1, b - a - 1);
  out[2] = s.substr(b + 1);
  return true;
}

std::string TimestampedData(uint32_t key_id, uint64_t time, const uint8_t* signature) {
  std::string out(kTimestampedBytes, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(key_id >> (24 - 8 * i));
  for (int i = 0; i < 8; ++i) out[4 + i] = static_cast<char>(time >> (56 - 8 * i));
  std::memcpy(out.data() + 12, signature, 64);
  return out;
}

}  // namespace internal

namespace {

std::string S(std::string_view v) { return std::string(v); }

using internal::BigEndian32;
using internal::BigEndian64;
using internal::Hex8;
using internal::InitSodium;
using internal::kMaxTime;
using internal::kSigPrefix;
using internal::ParseHex8;
using internal::Split3;
constexpr size_t kCosignatureBytes = internal::kTimestampedBytes;

bool IsNoteText(std::string_view text) {
  return !text.empty() && text.back() == '\n' && text.find("\n\n") == std::string_view::npos;
}

// "<name>+<hex8 id>+<base64 0x04 || 32 bytes>": name, id and the 32 bytes.
absl::Status ParseKeyParts(std::string_view what, std::string_view name, std::string_view id_hex, std::string_view b64,
                           uint32_t* id, std::string* key) {
  if (!note::IsValidKeyName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat(S(what), ": key name must be non-empty UTF-8 without spaces or '+'"));
  }
  if (!ParseHex8(id_hex, id)) return absl::InvalidArgumentError(absl::StrCat(S(what), ": key id must be 8 hex digits"));
  auto bytes = hash::Base64Decode(b64);
  if (!bytes.ok() || bytes->size() != 33 || static_cast<uint8_t>((*bytes)[0]) != kCosignatureV1) {
    return absl::InvalidArgumentError(
        absl::StrCat(S(what), ": key data must be base64 of 0x04 (cosignature/v1) and 32 bytes"));
  }
  *key = bytes->substr(1);
  return absl::OkStatus();
}

}  // namespace

uint32_t KeyId(std::string_view name, const note::PublicKey& key) {
  std::string buf(name);
  buf += '\n';
  buf += static_cast<char>(kCosignatureV1);
  buf.append(reinterpret_cast<const char*>(key.data()), key.size());
  return BigEndian32(hash::Sha256(buf).data());
}

std::string SignedMessage(std::string_view body, uint64_t time) {
  return absl::StrCat(kHeader, "\ntime ", time, "\n", S(body));
}

uint32_t SignatureLine::key_id() const {
  return data.size() < 4 ? 0 : BigEndian32(reinterpret_cast<const uint8_t*>(data.data()));
}

absl::StatusOr<SignatureLine> ParseSignatureLine(std::string_view line) {
  if (!line.starts_with(kSigPrefix)) {
    return absl::InvalidArgumentError("signed note: signature line does not start with an em dash and space");
  }
  line.remove_prefix(kSigPrefix.size());
  size_t sp = line.find(' ');
  if (sp == std::string_view::npos) return absl::InvalidArgumentError("signed note: signature line has no key name");
  SignatureLine out;
  out.name = S(line.substr(0, sp));
  auto data = hash::Base64Decode(line.substr(sp + 1));
  if (!note::IsValidKeyName(out.name) || !data.ok() || data->size() < 5) {
    return absl::InvalidArgumentError("signed note: signature line is malformed");
  }
  out.data = *std::move(data);
  return out;
}

absl::StatusOr<NoteParts> SplitNote(std::string_view note) {
  if (note.empty() || note.back() != '\n') return absl::InvalidArgumentError("signed note: does not end in a newline");
  size_t split = note.rfind("\n\n");
  if (split == std::string_view::npos)
    return absl::InvalidArgumentError("signed note: no blank line before signatures");
  NoteParts parts;
  parts.text = S(note.substr(0, split + 1));
  std::string_view sigs = note.substr(split + 2);
  if (sigs.empty()) return absl::InvalidArgumentError("signed note: no signature line");
  while (!sigs.empty()) {
    size_t eol = sigs.find('\n');
    std::string_view line = sigs.substr(0, eol);
    sigs.remove_prefix(eol + 1);
    if (parts.signatures.size() >= 100) return absl::InvalidArgumentError("signed note: more than 100 signatures");
    if (auto parsed = ParseSignatureLine(line); !parsed.ok()) return parsed.status();
    parts.signatures.push_back(S(line));
  }
  return parts;
}

absl::StatusOr<Cosigner> Cosigner::FromKey(std::string_view name, std::shared_ptr<const note::Ed25519Key> key) {
  InitSodium();
  if (!note::IsValidKeyName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("witness name: '", S(name), "' must be non-empty UTF-8 without spaces or '+'"));
  }
  if (key == nullptr) return absl::InvalidArgumentError("witness key: none given");
  Cosigner c;
  c.name_ = S(name);
  c.key_ = std::move(key);
  c.key_id_ = KeyId(c.name_, c.key_->public_key());
  return c;
}

absl::StatusOr<Cosigner> Cosigner::FromSeed(std::string_view name, std::string_view seed) {
  if (!note::IsValidKeyName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("witness name: '", S(name), "' must be non-empty UTF-8 without spaces or '+'"));
  }
  if (seed.size() != 32) return absl::InvalidArgumentError("witness key: Ed25519 seed must be 32 bytes");
  auto key = note::SeedKey(seed);
  if (!key.ok()) return key.status();
  return FromKey(name, *std::move(key));
}

absl::StatusOr<Cosigner> Cosigner::Generate(std::string_view name) {
  InitSodium();
  std::array<uint8_t, 32> seed;
  randombytes_buf(seed.data(), seed.size());
  auto c = FromSeed(name, std::string_view(reinterpret_cast<const char*>(seed.data()), seed.size()));
  sodium_memzero(seed.data(), seed.size());
  return c;
}

absl::StatusOr<Cosigner> Cosigner::ParseKeyFile(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  constexpr std::string_view kPrefix = "PRIVATE+KEY+";
  std::string_view parts[3];
  if (!text.starts_with(kPrefix) || !Split3(text.substr(kPrefix.size()), parts)) {
    return absl::InvalidArgumentError("witness key: want PRIVATE+KEY+<name>+<key id>+<base64 key>");
  }
  uint32_t id = 0;
  std::string seed;
  if (auto s = ParseKeyParts("witness key", parts[0], parts[1], parts[2], &id, &seed); !s.ok()) return s;
  auto c = FromSeed(parts[0], seed);
  sodium_memzero(seed.data(), seed.size());
  if (!c.ok()) return c.status();
  if (c->key_id() != id) {
    return absl::InvalidArgumentError(
        absl::StrCat("witness key: key id ", S(parts[1]), " does not match the key (", Hex8(c->key_id()), ")"));
  }
  return c;
}

absl::StatusOr<std::string> Cosigner::KeyFileText() const {
  const std::array<uint8_t, 32>* seed = key_->seed();
  if (seed == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("witness key: the key is kept in ", key_->where(), "; it has no key file"));
  }
  std::string key(1, static_cast<char>(kCosignatureV1));
  key.append(reinterpret_cast<const char*>(seed->data()), seed->size());
  return absl::StrCat("PRIVATE+KEY+", name_, "+", Hex8(key_id_), "+", hash::Base64(key), "\n");
}

std::string Cosigner::VerifierKey() const {
  std::string key(1, static_cast<char>(kCosignatureV1));
  key.append(reinterpret_cast<const char*>(public_key().data()), public_key().size());
  return absl::StrCat(name_, "+", Hex8(key_id_), "+", hash::Base64(key));
}

absl::StatusOr<std::string> Cosigner::Cosign(std::string_view body, uint64_t time) const {
  if (!IsNoteText(body)) {
    return absl::InvalidArgumentError("checkpoint: must be lines each ending in a newline, no blank line");
  }
  if (time == 0 || time > kMaxTime) return absl::InvalidArgumentError("cosignature time: must be in [1, 2^63-1]");
  std::string message = SignedMessage(body, time);
  auto signature = key_->Sign(message);
  if (!signature.ok()) return signature.status();
  return absl::StrCat(S(kSigPrefix), name_, " ",
                      hash::Base64(internal::TimestampedData(key_id_, time, signature->data())), "\n");
}

absl::StatusOr<CosignatureVerifier> CosignatureVerifier::Parse(std::string_view vkey) {
  InitSodium();
  std::string_view parts[3];
  if (!Split3(vkey, parts)) {
    return absl::InvalidArgumentError("witness verifier key: want <name>+<key id>+<base64 key>");
  }
  uint32_t id = 0;
  std::string key;
  if (auto s = ParseKeyParts("witness verifier key", parts[0], parts[1], parts[2], &id, &key); !s.ok()) return s;
  CosignatureVerifier v;
  v.name_ = S(parts[0]);
  std::memcpy(v.public_key_.data(), key.data(), 32);
  v.key_id_ = id;
  if (KeyId(v.name_, v.public_key_) != id) {
    return absl::InvalidArgumentError(
        absl::StrCat("witness verifier key: key id ", S(parts[1]), " does not match the key"));
  }
  return v;
}

std::string CosignatureVerifier::vkey() const {
  std::string key(1, static_cast<char>(kCosignatureV1));
  key.append(reinterpret_cast<const char*>(public_key_.data()), public_key_.size());
  return absl::StrCat(name_, "+", Hex8(key_id_), "+", hash::Base64(key));
}

absl::StatusOr<uint64_t> CosignatureVerifier::Verify(std::string_view note) const {
  auto parts = SplitNote(note);
  if (!parts.ok()) return parts.status();
  return Verify(*parts);
}

absl::StatusOr<uint64_t> CosignatureVerifier::Verify(const NoteParts& note) const {
  const SignatureLine* mine = nullptr;
  SignatureLine found;
  for (const std::string& line : note.signatures) {
    auto parsed = ParseSignatureLine(line);
    if (!parsed.ok()) return parsed.status();
    if (parsed->name != name_ || parsed->key_id() != key_id_) continue;
    if (mine != nullptr) return absl::InvalidArgumentError(absl::StrCat("signed note: two signatures by ", vkey()));
    found = *std::move(parsed);
    mine = &found;
  }
  std::string who = absl::StrCat(name_, "+", Hex8(key_id_));
  if (mine == nullptr) return absl::NotFoundError(absl::StrCat("cosignature: none by ", who));
  const auto* data = reinterpret_cast<const uint8_t*>(mine->data.data());
  if (mine->data.size() != kCosignatureBytes) {
    return absl::PermissionDeniedError(absl::StrCat("cosignature by ", who, ": not 4+8+64 bytes"));
  }
  uint64_t time = BigEndian64(data + 4);
  if (time == 0 || time > kMaxTime) {
    return absl::PermissionDeniedError(absl::StrCat("cosignature by ", who, ": time must be in [1, 2^63-1]"));
  }
  std::string message = SignedMessage(note.text, time);
  if (crypto_sign_verify_detached(data + 12, reinterpret_cast<const uint8_t*>(message.data()), message.size(),
                                  public_key_.data()) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("cosignature by ", who, ": does not verify"));
  }
  return time;
}

}  // namespace ledger::cosign
