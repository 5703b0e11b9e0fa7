#include "ledger/format/note/note.h"

#include <sodium.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ledger/format/note/internal/text.h"

namespace ledger::note {

using internal::kSigPrefix;
using internal::ParseDecimal;
using internal::S;
using internal::Split;

namespace {

constexpr uint8_t kAlgEd25519 = 0x01;

void InitSodium() {
  static const bool ok = sodium_init() >= 0;
  if (!ok) std::abort();
}

std::string Hex8(uint32_t id) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", id);
  return buf;
}

absl::StatusOr<uint32_t> ParseHex8(std::string_view s) {
  if (s.size() != 8) return absl::InvalidArgumentError("key id: want 8 hex digits");
  uint32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || p != s.data() + s.size()) {
    return absl::InvalidArgumentError("key id: want 8 hex digits");
  }
  return v;
}

uint32_t BigEndian32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

// Go's note package: UTF-8, no control characters but '\n', no U+FFFD.
bool IsWellFormedText(std::string_view s) {
  // RuneError is U+FFFD, encoded EF BF BD.
  if (s.find("\xef\xbf\xbd") != std::string_view::npos) return false;
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      if (c < 0x20 && c != '\n') return false;
      ++i;
      continue;
    }
    int len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = c & (0x7f >> len);
    for (int k = 1; k < len; ++k) {
      auto cc = static_cast<uint8_t>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = cp << 6 | (cc & 0x3f);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += len;
  }
  return true;
}

}  // namespace

bool IsValidKeyName(std::string_view name) {
  if (name.empty() || !IsWellFormedText(name)) return false;
  for (char c : name) {
    if (c == '+' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
      return false;
    }
  }
  // Unicode spaces outside ASCII that Go's unicode.IsSpace also rejects.
  for (std::string_view sp : {"\xc2\x85", "\xc2\xa0", "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe3\x80\x80", "\xe1\x9a\x80"}) {
    if (name.find(sp) != std::string_view::npos) return false;
  }
  for (uint8_t third = 0x80; third <= 0x8a; ++third) {  // U+2000..U+200A
    std::string sp = {'\xe2', '\x80', static_cast<char>(third)};
    if (name.find(sp) != std::string_view::npos) return false;
  }
  if (name.find("\xe2\x80\xaf") != std::string_view::npos ||  // U+202F
      name.find("\xe2\x81\x9f") != std::string_view::npos) {  // U+205F
    return false;
  }
  return true;
}

uint32_t KeyId(std::string_view name, const PublicKey& key) {
  std::string buf(name);
  buf += '\n';
  buf += static_cast<char>(kAlgEd25519);
  buf.append(reinterpret_cast<const char*>(key.data()), key.size());
  hash::Hash h = hash::Sha256(buf);
  return BigEndian32(h.data());
}

namespace {

// A seed and its expanded secret key in this process's memory, wiped when
// the last Signer or Cosigner holding it goes.
class InMemoryKey final : public Ed25519Key {
 public:
  explicit InMemoryKey(std::string_view seed) {
    std::memcpy(seed_.data(), seed.data(), seed_.size());
    crypto_sign_ed25519_seed_keypair(public_key_.data(), secret_key_.data(), seed_.data());
  }
  ~InMemoryKey() override {
    sodium_memzero(seed_.data(), seed_.size());
    sodium_memzero(secret_key_.data(), secret_key_.size());
  }
  InMemoryKey(const InMemoryKey&) = delete;
  InMemoryKey& operator=(const InMemoryKey&) = delete;

  const PublicKey& public_key() const override { return public_key_; }
  absl::StatusOr<Signature> Sign(std::string_view message) const override {
    Signature sig;
    crypto_sign_detached(sig.data(), nullptr, reinterpret_cast<const uint8_t*>(message.data()), message.size(),
                         secret_key_.data());
    return sig;
  }
  const std::array<uint8_t, 32>* seed() const override { return &seed_; }
  std::string where() const override { return "a seed in memory"; }

 private:
  std::array<uint8_t, 32> seed_{};
  std::array<uint8_t, 64> secret_key_{};
  PublicKey public_key_{};
};

}  // namespace

absl::StatusOr<std::shared_ptr<const Ed25519Key>> SeedKey(std::string_view seed) {
  InitSodium();
  if (seed.size() != 32) return absl::InvalidArgumentError("signing key: Ed25519 seed must be 32 bytes");
  return std::make_shared<const InMemoryKey>(seed);
}

absl::StatusOr<Signer> Signer::FromKey(std::string_view name, std::shared_ptr<const Ed25519Key> key) {
  InitSodium();
  if (!IsValidKeyName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("key name: '", S(name), "' must be non-empty UTF-8 without spaces or '+'"));
  }
  if (key == nullptr) return absl::InvalidArgumentError("signing key: none given");
  Signer s;
  s.name_ = std::string(name);
  s.key_ = std::move(key);
  s.key_id_ = KeyId(s.name_, s.key_->public_key());
  return s;
}

absl::StatusOr<Signer> Signer::FromSeed(std::string_view name, std::string_view seed) {
  if (!IsValidKeyName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("key name: '", S(name), "' must be non-empty UTF-8 without spaces or '+'"));
  }
  auto key = SeedKey(seed);
  if (!key.ok()) return key.status();
  return FromKey(name, *std::move(key));
}

absl::StatusOr<Signer> Signer::Generate(std::string_view name) {
  InitSodium();
  std::array<uint8_t, 32> seed;
  randombytes_buf(seed.data(), seed.size());
  auto s = FromSeed(name, std::string_view(reinterpret_cast<const char*>(seed.data()), 32));
  sodium_memzero(seed.data(), seed.size());
  return s;
}

absl::StatusOr<Signer> Signer::ParseKeyFile(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  std::vector<std::string_view> parts = Split(text, '+', 5);
  if (parts.size() != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY") {
    return absl::InvalidArgumentError("signing key: want PRIVATE+KEY+<name>+<key id>+<base64 key>");
  }
  auto id = ParseHex8(parts[3]);
  if (!id.ok()) return id.status();
  auto key = hash::Base64Decode(parts[4]);
  if (!key.ok() || key->size() != 33 || static_cast<uint8_t>((*key)[0]) != kAlgEd25519) {
    return absl::InvalidArgumentError("signing key: key data must be base64 of 0x01 and a 32-byte Ed25519 seed");
  }
  auto s = FromSeed(parts[2], std::string_view(*key).substr(1));
  if (!s.ok()) return s.status();
  if (s->key_id() != *id) {
    return absl::InvalidArgumentError(
        absl::StrCat("signing key: key id ", S(parts[3]), " does not match the key (", Hex8(s->key_id()), ")"));
  }
  return s;
}

absl::StatusOr<std::string> Signer::KeyFileText() const {
  const std::array<uint8_t, 32>* seed = key_->seed();
  if (seed == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("signing key: the key is kept in ", key_->where(), "; it has no key file"));
  }
  std::string key(1, static_cast<char>(kAlgEd25519));
  key.append(reinterpret_cast<const char*>(seed->data()), seed->size());
  return absl::StrCat("PRIVATE+KEY+", name_, "+", Hex8(key_id_), "+", hash::Base64(key), "\n");
}

std::string Signer::VerifierKey() const {
  std::string key(1, static_cast<char>(kAlgEd25519));
  key.append(reinterpret_cast<const char*>(public_key().data()), public_key().size());
  return absl::StrCat(name_, "+", Hex8(key_id_), "+", hash::Base64(key));
}

absl::StatusOr<std::string> Signer::Sign(std::string_view text) const {
  if (text.empty() || text.back() != '\n' || text.find("\n\n") != std::string_view::npos || !IsWellFormedText(text)) {
    return absl::InvalidArgumentError("note text: must be UTF-8 lines each ending in a newline, no blank line");
  }
  auto signature = key_->Sign(text);
  if (!signature.ok()) return signature.status();
  uint8_t sig[4 + crypto_sign_BYTES];
  sig[0] = key_id_ >> 24;
  sig[1] = key_id_ >> 16;
  sig[2] = key_id_ >> 8;
  sig[3] = key_id_;
  std::memcpy(sig + 4, signature->data(), signature->size());
  return absl::StrCat(S(text), "\n", S(kSigPrefix), name_, " ",
                      hash::Base64(std::string_view(reinterpret_cast<const char*>(sig), sizeof sig)), "\n");
}

absl::StatusOr<Verifier> Verifier::Parse(std::string_view vkey) {
  InitSodium();
  std::vector<std::string_view> parts = Split(vkey, '+', 3);
  if (parts.size() != 3 || !IsValidKeyName(parts[0])) {
    return absl::InvalidArgumentError("verifier key: want <name>+<key id>+<base64 key>");
  }
  auto id = ParseHex8(parts[1]);
  if (!id.ok()) return absl::InvalidArgumentError("verifier key: key id must be 8 hex digits");
  auto key = hash::Base64Decode(parts[2]);
  if (!key.ok() || key->size() != 33 || static_cast<uint8_t>((*key)[0]) != kAlgEd25519) {
    return absl::InvalidArgumentError("verifier key: key data must be base64 of 0x01 and a 32-byte Ed25519 key");
  }
  Verifier v;
  v.name_ = std::string(parts[0]);
  std::memcpy(v.public_key_.data(), key->data() + 1, 32);
  v.key_id_ = *id;
  if (KeyId(v.name_, v.public_key_) != v.key_id_) {
    return absl::InvalidArgumentError(absl::StrCat("verifier key: key id ", S(parts[1]), " does not match the key"));
  }
  return v;
}

std::string Verifier::VerifierKey() const {
  std::string key(1, static_cast<char>(kAlgEd25519));
  key.append(reinterpret_cast<const char*>(public_key_.data()), public_key_.size());
  return absl::StrCat(name_, "+", Hex8(key_id_), "+", hash::Base64(key));
}

absl::StatusOr<std::string> Verifier::Open(std::string_view note) const {
  auto malformed = [](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("signed note: ", S(why)));
  };
  if (!IsWellFormedText(note)) return malformed("not UTF-8 text without control characters");
  if (note.empty() || note.back() != '\n') return malformed("does not end in a newline");
  size_t split = note.rfind("\n\n");
  if (split == std::string_view::npos) return malformed("no blank line before signatures");
  std::string_view text = note.substr(0, split + 1);
  std::string_view sigs = note.substr(split + 2);
  bool found = false;
  int count = 0;
  while (!sigs.empty()) {
    size_t eol = sigs.find('\n');
    std::string_view line = sigs.substr(0, eol);
    sigs.remove_prefix(eol + 1);
    if (++count > 100) return malformed("more than 100 signatures");
    if (line.substr(0, kSigPrefix.size()) != kSigPrefix) {
      return malformed("signature line does not start with an em dash and space");
    }
    line.remove_prefix(kSigPrefix.size());
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos) return malformed("signature line has no key name");
    std::string_view name = line.substr(0, sp);
    auto sig = hash::Base64Decode(line.substr(sp + 1));
    if (!IsValidKeyName(name) || !sig.ok() || sig->size() < 5) {
      return malformed("signature line is malformed");
    }
    uint32_t id = BigEndian32(reinterpret_cast<const uint8_t*>(sig->data()));
    if (name != name_ || id != key_id_) continue;
    if (found) return malformed("two signatures by the same key");
    found = true;
    if (sig->size() != 4 + crypto_sign_BYTES ||
        crypto_sign_verify_detached(reinterpret_cast<const uint8_t*>(sig->data()) + 4,
                                    reinterpret_cast<const uint8_t*>(text.data()), text.size(),
                                    public_key_.data()) != 0) {
      return absl::PermissionDeniedError(
          absl::StrCat("signed note: signature by ", name_, "+", Hex8(key_id_), " does not verify"));
    }
  }
  if (!found) {
    return absl::PermissionDeniedError(absl::StrCat("signed note: no signature by ", name_, "+", Hex8(key_id_)));
  }
  return std::string(text);
}

namespace {

template <typename Bad>
absl::StatusOr<Checkpoint> ParseCheckpointLines(std::string_view origin, std::string_view size, std::string_view root,
                                                Bad bad) {
  Checkpoint c;
  c.origin = std::string(origin);
  if (c.origin.empty()) return bad("origin line is empty");
  if (!ParseDecimal(size, &c.size)) return bad("size must be a decimal number without leading zeros");
  auto bytes = hash::Base64Decode(root);
  if (!bytes.ok() || bytes->size() != 32) return bad("root must be base64 of 32 bytes");
  std::memcpy(c.root.data(), bytes->data(), 32);
  return c;
}

}  // namespace

std::string FormatCheckpoint(const Checkpoint& c) {
  return absl::StrCat(c.origin, "\n", c.size, "\n", hash::Base64(hash::AsBytes(c.root)), "\n");
}

absl::StatusOr<Checkpoint> ParseCheckpoint(std::string_view text) {
  auto bad = [](std::string_view why) { return absl::InvalidArgumentError(absl::StrCat("checkpoint: ", S(why))); };
  if (text.empty() || text.back() != '\n') return bad("must end in a newline");
  std::vector<std::string_view> lines = Split(text.substr(0, text.size() - 1), '\n');
  if (lines.size() != 3) return bad("want exactly three lines: origin, size, root");
  return ParseCheckpointLines(lines[0], lines[1], lines[2], bad);
}

std::string FormatCheckpointTime(const CheckpointTime& t) {
  if (!t.run_map_root.has_value()) {
    return absl::StrCat(kCheckpointTimeHeader, "\n", FormatCheckpoint(t.checkpoint), "time ", t.time_us, "\n");
  }
  std::string runs = absl::StrCat("runs ", hash::Base64(hash::AsBytes(*t.run_map_root)), "\n");
  if (!t.team_map_root.has_value()) {
    return absl::StrCat(kCheckpointTimeHeaderV2, "\n", FormatCheckpoint(t.checkpoint), runs, "time ", t.time_us, "\n");
  }
  return absl::StrCat(t.runs_keyed_by_team ? kCheckpointTimeHeaderV4 : kCheckpointTimeHeaderV3, "\n",
                      FormatCheckpoint(t.checkpoint), runs, "teams ", hash::Base64(hash::AsBytes(*t.team_map_root)),
                      "\n", "time ", t.time_us, "\n");
}

namespace {

// The root on a line '<label> <base64 of 32 bytes>'.
bool ParseRootLine(std::string_view line, std::string_view label, hash::Hash* root) {
  if (!line.starts_with(label) || line.size() <= label.size() || line[label.size()] != ' ') return false;
  std::string_view b64 = line.substr(label.size() + 1);
  auto bytes = hash::Base64Decode(b64);
  if (!bytes.ok() || bytes->size() != 32 || hash::Base64(std::string_view(*bytes)) != b64) return false;
  std::memcpy(root->data(), bytes->data(), 32);
  return true;
}

}  // namespace

absl::StatusOr<CheckpointTime> ParseCheckpointTime(std::string_view text) {
  auto bad = [](std::string_view why) { return absl::InvalidArgumentError(absl::StrCat("checkpoint time: ", S(why))); };
  if (text.empty() || text.back() != '\n') return bad("must end in a newline");
  std::vector<std::string_view> lines = Split(text.substr(0, text.size() - 1), '\n');
  const int version = lines.empty()                         ? 0
                      : lines[0] == kCheckpointTimeHeader   ? 1
                      : lines[0] == kCheckpointTimeHeaderV2 ? 2
                      : lines[0] == kCheckpointTimeHeaderV3 ? 3
                      : lines[0] == kCheckpointTimeHeaderV4 ? 4
                                                            : 0;
  if (version >= 3 && lines.size() != 7) {
    return bad(
        absl::StrCat("want exactly seven lines: '", std::string(lines[0]), "', origin, size, root, runs, teams, time"));
  }
  if (version == 2 && lines.size() != 6) {
    return bad(absl::StrCat("want exactly six lines: '", kCheckpointTimeHeaderV2, "', origin, size, root, runs, time"));
  }
  if (version <= 1 && (lines.size() != 5 || version != 1)) {
    return bad(absl::StrCat("want exactly five lines: '", kCheckpointTimeHeader, "', origin, size, root, time"));
  }
  CheckpointTime t;
  auto cp = ParseCheckpointLines(lines[1], lines[2], lines[3], bad);
  if (!cp.ok()) return cp.status();
  t.checkpoint = *std::move(cp);
  if (version >= 2) {
    hash::Hash root;
    if (!ParseRootLine(lines[4], "runs", &root)) {
      return bad("the fifth line must be 'runs ' and the base64 of the 32-byte run-head map root");
    }
    t.run_map_root = root;
  }
  if (version >= 3) {
    hash::Hash root;
    if (!ParseRootLine(lines[5], "teams", &root)) {
      return bad("the sixth line must be 'teams ' and the base64 of the 32-byte team-head map root");
    }
    t.team_map_root = root;
    t.runs_keyed_by_team = version == 4;
  }
  std::string_view time = lines[lines.size() - 1];
  uint64_t us = 0;
  if (!time.starts_with("time ") || !ParseDecimal(time.substr(5), &us) ||
      us > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return bad("the last line must be 'time ' and microseconds since the Unix epoch, without leading zeros");
  }
  t.time_us = static_cast<int64_t>(us);
  return t;
}

}  // namespace ledger::note
