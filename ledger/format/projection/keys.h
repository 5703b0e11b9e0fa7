// The shapes of projection keys that both their writer and their storage
// rely on (format version 1; DO NOT CHANGE: stored projections and page
// tokens depend on them). The projector (query/projector/keys.h) builds
// every key from these parts; the store's memtable insert hints
// (ledger/storage/store/internal/rocksdb_plugins.h) cut a key's prefix by them.
//
//   part          = u8(len) len bytes     (len <= 255; key parts are at
//                                          most 128 bytes)
//   Table::kSteps,
//   Table::kRuns  = part(team) part(run_id) ...
//   Table::kIndex = family u8 part(team) ...   for every family but
//                   kDeadlineFamily u64 u64    ('D': no team)
//                   (kProjectedSizeKey starts with 0xff, no family's byte)
//   u64           = 8 bytes, big-endian
//
// Thread-safe: pure functions.
#ifndef LEDGER_FORMAT_PROJECTION_KEYS_H_
#define LEDGER_FORMAT_PROJECTION_KEYS_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace ledger::projection {

// The family byte of Table::kIndex rows that carry no team.
inline constexpr char kDeadlineFamily = 'D';

// Appends part(s). `s` MUST be at most 255 bytes.
inline void AppendKeyPart(std::string* out, std::string_view s) {
  out->push_back(static_cast<char>(s.size()));
  out->append(s);
}

// Moves the part at the front of `in` into `out`; false when `in` does not
// start with a whole part.
inline bool TakeKeyPart(std::string_view* in, std::string* out) {
  if (in->empty()) return false;
  size_t n = static_cast<unsigned char>((*in)[0]);
  if (in->size() < 1 + n) return false;
  *out = std::string(in->substr(1, n));
  in->remove_prefix(1 + n);
  return true;
}

// The length of `key`'s prefix made of its family byte (with `family_byte`:
// an index row; a deadline row's prefix is that byte alone) and its first
// `parts` parts; 0 when `key` is too short to have one.
inline size_t KeyPrefixLength(std::string_view key, bool family_byte, int parts) {
  size_t at = 0;
  if (family_byte) {
    if (key.size() < 1) return 0;
    if (key[0] == kDeadlineFamily) return 1;
    at = 1;
  }
  for (int k = 0; k < parts; ++k) {
    if (key.size() <= at) return 0;
    at += 1 + static_cast<unsigned char>(key[at]);
    if (key.size() < at) return 0;
  }
  return at;
}

}  // namespace ledger::projection

#endif  // LEDGER_FORMAT_PROJECTION_KEYS_H_
