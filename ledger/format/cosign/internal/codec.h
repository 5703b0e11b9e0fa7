// The pieces cosignature/v1 (cosign.h) and the monitors' map cosignature
// (mapcosign.h) share: key ids in hex, big-endian integers, the split of a
// verifier key, the time's range. The library's own.
#ifndef LEDGER_FORMAT_COSIGN_INTERNAL_CODEC_H_
#define LEDGER_FORMAT_COSIGN_INTERNAL_CODEC_H_

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace ledger::cosign::internal {

// A note signature line starts with an em dash and a space.
inline constexpr std::string_view kSigPrefix = "\xe2\x80\x94 ";
inline constexpr uint64_t kMaxTime = std::numeric_limits<int64_t>::max();
// key id (4) || u64 time (8) || Ed25519 signature (64).
inline constexpr size_t kTimestampedBytes = 4 + 8 + 64;

void InitSodium();
std::string Hex8(uint32_t id);
bool ParseHex8(std::string_view s, uint32_t* out);
uint32_t BigEndian32(const uint8_t* p);
uint64_t BigEndian64(const uint8_t* p);
// Splits "a+b+rest" into three parts (base64 may hold '+').
bool Split3(std::string_view s, std::string_view out[3]);
// key id || u64 big-endian time || signature, the 76 bytes of a line.
std::string TimestampedData(uint32_t key_id, uint64_t time, const uint8_t* signature);

}  // namespace ledger::cosign::internal

#endif  // LEDGER_FORMAT_COSIGN_INTERNAL_CODEC_H_
