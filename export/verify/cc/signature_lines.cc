#include "export/verify/cc/internal/signature_lines.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "ledger/format/hash/hash.h"

namespace ledger::verify {

namespace {

constexpr std::string_view kPrefix = "\xe2\x80\x94 ";  // an em dash and a space

struct Line {
  std::string_view name;
  uint32_t key_id = 0;
};

// A signature line "— <key name> <base64>" read strictly, or nullopt.
std::optional<Line> ReadLine(std::string_view line) {
  if (!line.starts_with(kPrefix)) return std::nullopt;
  line.remove_prefix(kPrefix.size());
  size_t space = line.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view name = line.substr(0, space), b64 = line.substr(space + 1);
  if (name.empty() || name.find('+') != std::string_view::npos || b64.find(' ') != std::string_view::npos) {
    return std::nullopt;
  }
  auto bytes = hash::Base64Decode(b64);
  if (!bytes.ok() || bytes->size() < 5 || hash::Base64(*bytes) != b64) return std::nullopt;
  const auto* id = reinterpret_cast<const unsigned char*>(bytes->data());
  return Line{name, uint32_t{id[0]} << 24 | uint32_t{id[1]} << 16 | uint32_t{id[2]} << 8 | id[3]};
}

// The signature lines of a note, each as ReadLine reads it.
std::vector<std::optional<Line>> Lines(std::string_view note) {
  std::vector<std::optional<Line>> out;
  size_t blank = note.rfind("\n\n");
  if (blank == std::string_view::npos) return out;
  std::string_view lines = note.substr(blank + 2);
  while (!lines.empty()) {
    size_t eol = lines.find('\n');
    out.push_back(ReadLine(lines.substr(0, eol)));
    lines.remove_prefix(eol == std::string_view::npos ? lines.size() : eol + 1);
  }
  return out;
}

}  // namespace

std::string CheckSignatureLines(std::string_view note, std::string_view key_name, uint32_t key_id) {
  int by_key = 0, n = 0;
  for (const std::optional<Line>& line : Lines(note)) {
    ++n;
    if (!line) return absl::StrCat("signature line ", n, ": malformed");
    if (line->name == key_name && line->key_id == key_id && ++by_key > 1) return "signed twice by the ledger's key";
  }
  return "";
}

std::string KeyNameAndId(std::string_view key_name, uint32_t key_id) {
  return absl::StrCat(std::string(key_name), "+", absl::Hex(key_id, absl::kZeroPad8));
}

std::vector<std::string> SignatureKeys(std::string_view note) {
  std::vector<std::string> out;
  for (const std::optional<Line>& line : Lines(note)) {
    if (line) out.push_back(KeyNameAndId(line->name, line->key_id));
  }
  return out;
}

}  // namespace ledger::verify
