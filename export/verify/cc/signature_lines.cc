#include "export/verify/cc/internal/signature_lines.h"

#include "absl/strings/str_cat.h"
#include "ledger/format/hash/hash.h"

namespace ledger::verify {

std::string CheckSignatureLines(std::string_view note, std::string_view key_name, uint32_t key_id) {
  constexpr std::string_view kPrefix = "\xe2\x80\x94 ";  // an em dash and a space
  size_t blank = note.rfind("\n\n");
  if (blank == std::string_view::npos) return "";
  std::string_view lines = note.substr(blank + 2);
  int by_key = 0;
  for (int n = 1; !lines.empty(); ++n) {
    size_t eol = lines.find('\n');
    std::string_view line = lines.substr(0, eol);
    lines.remove_prefix(eol == std::string_view::npos ? lines.size() : eol + 1);
    const std::string malformed = absl::StrCat("signature line ", n, ": malformed");
    if (!line.starts_with(kPrefix)) return malformed;
    line.remove_prefix(kPrefix.size());
    size_t space = line.find(' ');
    if (space == std::string_view::npos) return malformed;
    std::string_view name = line.substr(0, space), b64 = line.substr(space + 1);
    if (name.empty() || name.find('+') != std::string_view::npos || b64.find(' ') != std::string_view::npos) {
      return malformed;
    }
    auto bytes = hash::Base64Decode(b64);
    if (!bytes.ok() || bytes->size() < 5 || hash::Base64(*bytes) != b64) return malformed;
    const auto* id = reinterpret_cast<const unsigned char*>(bytes->data());
    const uint32_t line_id = uint32_t{id[0]} << 24 | uint32_t{id[1]} << 16 | uint32_t{id[2]} << 8 | id[3];
    if (name == key_name && line_id == key_id && ++by_key > 1) return "signed twice by the ledger's key";
  }
  return "";
}

}  // namespace ledger::verify
