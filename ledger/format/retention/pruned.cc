#include "ledger/format/retention/pruned.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace ledger::retention {
namespace {

constexpr std::string_view kHead = R"({"pruned":{"leaf_hash":")";
constexpr std::string_view kSeq = R"(","seq":)";

bool IsLowerHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

std::string PrunedLine(uint64_t seq, const hash::Hash& leaf_hash) {
  return absl::StrCat(std::string(kHead), hash::Hex(leaf_hash), std::string(kSeq), seq, "}}");
}

bool LooksPruned(std::string_view line) { return line.starts_with(R"({"pruned":)"); }

absl::StatusOr<Pruned> ParsePruned(std::string_view line) {
  auto bad = [] { return absl::InvalidArgumentError("not a pruned line (CONTRACT section 9)"); };
  if (!line.starts_with(kHead)) return bad();
  line.remove_prefix(kHead.size());
  if (line.size() < 64 || !IsLowerHex64(line.substr(0, 64))) return bad();
  auto h = hash::ParseHex(line.substr(0, 64));
  if (!h.ok()) return bad();
  line.remove_prefix(64);
  if (!line.starts_with(kSeq) || !line.ends_with("}}")) return bad();
  line.remove_prefix(kSeq.size());
  line.remove_suffix(2);
  uint64_t seq = 0;
  if (line.empty() || !absl::SimpleAtoi(absl::string_view(line.data(), line.size()), &seq) ||
      absl::StrCat(seq) != std::string(line))
    return bad();
  return Pruned{seq, *h};
}

}  // namespace ledger::retention
