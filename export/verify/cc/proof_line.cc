#include "export/verify/cc/proof_line.h"

#include <limits>

#include "export/verify/cc/internal/strict_json.h"
#include "nlohmann/json.hpp"

namespace ledger::verify {

namespace {

// nlohmann::json keeps the last of two equal keys: a bogus path, then a
// genuine one, would otherwise read as the genuine one. A proof line's
// values (a number, hex digits, an array of hex digits) hold no quote and
// no backslash, so with no backslash in the line (no escaped key) each key
// is there once exactly when its quoted name is; a value of another type
// is refused after the parse either way. This costs a scan of the line,
// where a second parse for duplicates would double the proofs' parsing.
bool EachKeyOnce(std::string_view line) {
  if (line.find('\\') != std::string_view::npos) return false;
  for (std::string_view key :
       {std::string_view("\"seq\""), std::string_view("\"leaf_hash\""), std::string_view("\"inclusion\"")}) {
    size_t at = line.find(key);
    if (at == std::string_view::npos || line.find(key, at + 1) != std::string_view::npos) return false;
  }
  return true;
}

}  // namespace

std::optional<ProofLine> ParseProofLine(std::string_view line) {
  if (!EachKeyOnce(line)) return std::nullopt;
  nlohmann::json proof = nlohmann::json::parse(line, nullptr, false);
  if (proof.is_discarded() || !proof.is_object() || proof.size() != 3 || !proof.contains("seq") ||
      !proof["seq"].is_number_unsigned() || !proof.contains("leaf_hash") || !proof["leaf_hash"].is_string() ||
      !proof.contains("inclusion") || !proof["inclusion"].is_array()) {
    return std::nullopt;
  }
  if (proof["seq"].get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return std::nullopt;
  }
  ProofLine out;
  out.seq = proof["seq"].get<int64_t>();
  out.leaf_hash = proof["leaf_hash"].get<std::string>();
  for (const auto& h : proof["inclusion"]) {
    hash::Hash parsed;
    if (!h.is_string() || !hash::ParseHexTo(h.get_ref<const std::string&>(), &parsed)) return std::nullopt;
    out.path.push_back(parsed);
  }
  return out;
}

bool ProofLineParser::Parse(std::string_view line, int64_t* seq, std::string_view* leaf_hash) {
  if (Fast(line, seq, leaf_hash)) return true;
  Forget();
  std::optional<ProofLine> slow = ParseProofLine(line);
  if (!slow) return false;
  *seq = slow->seq;
  slow_leaf_hash_ = std::move(slow->leaf_hash);
  *leaf_hash = slow_leaf_hash_;
  path_ = std::move(slow->path);
  return true;
}

bool ProofLineParser::Fast(std::string_view s, int64_t* seq, std::string_view* leaf_hash) {
  // What a line read by the reference left in path_ is not hex_'s.
  path_.resize(hex_.size());
  constexpr std::string_view kSeq = "{\"seq\":", kLeaf = ",\"leaf_hash\":\"", kInc = "\",\"inclusion\":[";
  if (s.substr(0, kSeq.size()) != kSeq) return false;
  s.remove_prefix(kSeq.size());
  size_t digits = 0;
  int64_t v = 0;
  while (digits < s.size() && digits < 16 && s[digits] >= '0' && s[digits] <= '9') {
    v = v * 10 + (s[digits] - '0');
    ++digits;
  }
  hash::Hash leaf;
  if (digits == 0 || (s[0] == '0' && digits > 1) || s.substr(digits, kLeaf.size()) != kLeaf ||
      s.size() < digits + kLeaf.size() + 64 + kInc.size() ||
      s.substr(digits + kLeaf.size() + 64, kInc.size()) != kInc ||
      !hash::ParseHexTo(s.substr(digits + kLeaf.size(), 64), &leaf)) {
    return false;
  }
  *seq = v;
  *leaf_hash = s.substr(digits + kLeaf.size(), 64);
  s.remove_prefix(digits + kLeaf.size() + 64 + kInc.size());
  size_t n = 0;
  while (s.size() >= 66 && s[0] == '"' && s[65] == '"') {
    std::string_view hex = s.substr(1, 64);
    if (n < hex_.size() && hex_[n] == hex) {
      // Spelled as the line before did: the same, already checked, hash.
    } else {
      hash::Hash h;
      if (!hash::ParseHexTo(hex, &h)) return Forget();
      if (n < hex_.size()) {
        hex_[n] = hex;
        path_[n] = h;
      } else {
        hex_.push_back(hex);
        path_.push_back(h);
      }
    }
    ++n;
    s.remove_prefix(66);
    if (s.size() < 2 || s[0] != ',' || s[1] != '"') break;
    s.remove_prefix(1);
  }
  if (s != "]}") return Forget();
  hex_.resize(n);
  path_.resize(n);
  return true;
}

bool ProofLineParser::Forget() {
  hex_.clear();
  path_.clear();
  return false;
}

}  // namespace ledger::verify
