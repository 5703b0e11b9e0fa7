#include "ledger/format/cosign/mapcosign.h"

#include <sodium.h>

#include <array>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/cosign/internal/codec.h"
#include "ledger/format/hash/hash.h"

namespace ledger::cosign {
namespace {

using internal::Hex8;

constexpr char kVersion4[] = "evidence-ledger/checkpoint-time/v4\n";

// "<name>+<hex8 id>+<base64 type || 32 bytes>": the name, the id and the 32
// bytes (a public key, or a seed); the caller checks the id.
absl::Status ParseMapKey(std::string_view what, std::string_view text, std::string* name, uint32_t* id,
                         std::string* key) {
  std::string_view parts[3];
  if (!internal::Split3(text, parts)) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": want <name>+<key id>+<base64 key>"));
  }
  if (!note::IsValidKeyName(parts[0])) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": key name must be non-empty UTF-8 without spaces or '+'"));
  }
  if (!internal::ParseHex8(parts[1], id)) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": key id must be 8 hex digits"));
  }
  auto bytes = hash::Base64Decode(parts[2]);
  if (!bytes.ok()) return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": key data is not base64"));
  const std::string type = MapKeyType();
  if (bytes->size() == 33 && ((*bytes)[0] == 0x01 || (*bytes)[0] == 0x04)) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": a ", (*bytes)[0] == 0x01 ? "log" : "witness",
                                                   " key (type 0x0", int((*bytes)[0]),
                                                   "), not a monitor's; a monitor key's type is 0xff ", kMapHeader));
  }
  if (bytes->size() != type.size() + 32 || !bytes->starts_with(type)) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": key data must be base64 of 0xff, \"", kMapHeader, "\" and 32 bytes"));
  }
  *name = std::string(parts[0]);
  *key = bytes->substr(type.size());
  return absl::OkStatus();
}

}  // namespace

std::string MapKeyType() { return absl::StrCat("\xff", kMapHeader); }

uint32_t MapKeyId(std::string_view name, const note::PublicKey& key) {
  std::string buf = absl::StrCat(std::string(name), "\n", MapKeyType());
  buf.append(reinterpret_cast<const char*>(key.data()), key.size());
  return internal::BigEndian32(hash::Sha256(buf).data());
}

std::string MapSignedMessage(std::string_view note_text, uint64_t time) {
  return absl::StrCat(kMapHeader, "\ntime ", time, "\n", std::string(note_text));
}

absl::StatusOr<MapCosigner> MapCosigner::FromKey(std::string_view name, std::shared_ptr<const note::Ed25519Key> key) {
  internal::InitSodium();
  if (!note::IsValidKeyName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("monitor name: '", std::string(name), "' must be non-empty UTF-8 without spaces or '+'"));
  }
  if (key == nullptr) return absl::InvalidArgumentError("monitor key: none given");
  MapCosigner c;
  c.name_ = std::string(name);
  c.key_ = std::move(key);
  c.key_id_ = MapKeyId(c.name_, c.key_->public_key());
  return c;
}

absl::StatusOr<MapCosigner> MapCosigner::Generate(std::string_view name) {
  internal::InitSodium();
  std::array<uint8_t, 32> seed;
  randombytes_buf(seed.data(), seed.size());
  auto key = note::SeedKey(std::string_view(reinterpret_cast<const char*>(seed.data()), seed.size()));
  sodium_memzero(seed.data(), seed.size());
  if (!key.ok()) return key.status();
  return FromKey(name, *std::move(key));
}

absl::StatusOr<MapCosigner> MapCosigner::ParseKeyFile(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  constexpr std::string_view kPrefix = "PRIVATE+KEY+";
  if (!text.starts_with(kPrefix)) {
    return absl::InvalidArgumentError("monitor key: want PRIVATE+KEY+<name>+<key id>+<base64 key>");
  }
  std::string name, seed;
  uint32_t id = 0;
  if (auto s = ParseMapKey("monitor key", text.substr(kPrefix.size()), &name, &id, &seed); !s.ok()) return s;
  auto key = note::SeedKey(seed);
  sodium_memzero(seed.data(), seed.size());
  if (!key.ok()) return key.status();
  auto c = FromKey(name, *std::move(key));
  if (!c.ok()) return c.status();
  if (c->key_id() != id) {
    return absl::InvalidArgumentError(
        absl::StrCat("monitor key: key id ", Hex8(id), " does not match the key (", Hex8(c->key_id()), ")"));
  }
  return c;
}

absl::StatusOr<std::string> MapCosigner::KeyFileText() const {
  const std::array<uint8_t, 32>* seed = key_->seed();
  if (seed == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("monitor key: the key is kept in ", key_->where(), "; it has no key file"));
  }
  std::string key = MapKeyType();
  key.append(reinterpret_cast<const char*>(seed->data()), seed->size());
  return absl::StrCat("PRIVATE+KEY+", name_, "+", Hex8(key_id_), "+", hash::Base64(key), "\n");
}

std::string MapCosigner::VerifierKey() const {
  std::string key = MapKeyType();
  key.append(reinterpret_cast<const char*>(key_->public_key().data()), key_->public_key().size());
  return absl::StrCat(name_, "+", Hex8(key_id_), "+", hash::Base64(key));
}

absl::StatusOr<std::string> MapCosigner::Cosign(std::string_view note_text, uint64_t time) const {
  if (!note_text.starts_with(kVersion4)) {
    return absl::InvalidArgumentError("map cosignature: only a checkpoint-time note of version 4 is cosigned");
  }
  auto parsed = note::ParseCheckpointTime(note_text);
  if (!parsed.ok()) return parsed.status();
  if (time == 0 || time > internal::kMaxTime) {
    return absl::InvalidArgumentError("map cosignature: time must be in [1, 2^63-1]");
  }
  if (time < static_cast<uint64_t>(parsed->time_us / 1000000)) {
    return absl::InvalidArgumentError(absl::StrCat("map cosignature: time ", time, " is before the note's own time"));
  }
  std::string message = MapSignedMessage(note_text, time);
  auto signature = key_->Sign(message);
  if (!signature.ok()) return signature.status();
  return absl::StrCat(std::string(internal::kSigPrefix), name_, " ",
                      hash::Base64(internal::TimestampedData(key_id_, time, signature->data())), "\n");
}

absl::StatusOr<MapCosignatureVerifier> MapCosignatureVerifier::Parse(std::string_view vkey) {
  internal::InitSodium();
  MapCosignatureVerifier v;
  std::string key;
  if (auto s = ParseMapKey("monitor verifier key", vkey, &v.name_, &v.key_id_, &key); !s.ok()) return s;
  std::memcpy(v.public_key_.data(), key.data(), v.public_key_.size());
  if (MapKeyId(v.name_, v.public_key_) != v.key_id_) {
    return absl::InvalidArgumentError(
        absl::StrCat("monitor verifier key: key id ", Hex8(v.key_id_), " does not match the key"));
  }
  return v;
}

std::string MapCosignatureVerifier::vkey() const {
  std::string key = MapKeyType();
  key.append(reinterpret_cast<const char*>(public_key_.data()), public_key_.size());
  return absl::StrCat(name_, "+", Hex8(key_id_), "+", hash::Base64(key));
}

absl::StatusOr<uint64_t> MapCosignatureVerifier::Verify(std::string_view note) const {
  auto parts = SplitNote(note);
  if (!parts.ok()) return parts.status();
  std::string who = absl::StrCat(name_, "+", Hex8(key_id_));
  std::string data;
  int found = 0;
  for (const std::string& line : parts->signatures) {
    auto parsed = ParseSignatureLine(line);
    if (!parsed.ok()) return parsed.status();
    if (parsed->name != name_ || parsed->key_id() != key_id_) continue;
    if (++found > 1) return absl::InvalidArgumentError(absl::StrCat("map cosignature: two lines by ", who));
    data = std::move(parsed->data);
  }
  if (found == 0) return absl::NotFoundError(absl::StrCat("map cosignature: none by ", who));
  if (!std::string_view(parts->text).starts_with(kVersion4)) {
    return absl::PermissionDeniedError(
        absl::StrCat("map cosignature: only a checkpoint-time note of version 4 is cosigned by monitors; the line by ",
                     who, " is on another"));
  }
  auto parsed = note::ParseCheckpointTime(parts->text);
  if (!parsed.ok()) return parsed.status();
  if (data.size() != internal::kTimestampedBytes) {
    return absl::PermissionDeniedError(
        absl::StrCat("map cosignature: length: want 76 bytes (key ID, time, signature), found ", data.size()));
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(data.data());
  uint64_t time = internal::BigEndian64(bytes + 4);
  if (time == 0 || time > internal::kMaxTime) {
    return absl::PermissionDeniedError(absl::StrCat("map cosignature: time ", time, ": want 1 <= time <= 2^63-1"));
  }
  uint64_t note_time = static_cast<uint64_t>(parsed->time_us / 1000000);
  if (time < note_time) {
    return absl::PermissionDeniedError(
        absl::StrCat("map cosignature: time ", time, " is before the note's time ", note_time,
                     " (seconds): a monitor cannot have cosigned a note before the ledger signed it"));
  }
  std::string message = MapSignedMessage(parts->text, time);
  if (crypto_sign_verify_detached(bytes + 12, reinterpret_cast<const uint8_t*>(message.data()), message.size(),
                                  public_key_.data()) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("map cosignature: signature by ", who, " does not verify"));
  }
  return time;
}

}  // namespace ledger::cosign
