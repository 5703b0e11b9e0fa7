#include "ledger/format/runmap/proof_json.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace ledger::runmap {
namespace {

using Json = nlohmann::json;

absl::Status Bad(std::string_view field, std::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(field), ": ", std::string(rule)));
}

absl::Status ExactKeys(const Json& j, std::string_view where, const std::set<std::string>& required,
                       const std::set<std::string>& optional = {}) {
  if (!j.is_object()) return Bad(where.empty() ? "proof" : where, "want a JSON object");
  std::string prefix = where.empty() ? "" : absl::StrCat(std::string(where), ".");
  for (const auto& [k, v] : j.items()) {
    if (!required.contains(k) && !optional.contains(k)) return Bad(prefix + k, "not a field of the proof");
  }
  for (const std::string& k : required) {
    if (!j.contains(k)) return Bad(prefix + k, "missing");
  }
  return absl::OkStatus();
}

absl::StatusOr<Hash> HashOf(const Json& j, const std::string& field) {
  if (!j.is_string()) return Bad(field, "want 64 lowercase hex digits");
  auto h = hash::ParseHex(j.get<std::string>());
  if (!h.ok()) return Bad(field, "want 64 lowercase hex digits");
  return *h;
}

absl::StatusOr<uint64_t> UintOf(const Json& j, const std::string& field) {
  if (!j.is_number_unsigned()) return Bad(field, "want a JSON integer");
  return j.get<uint64_t>();
}

}  // namespace

std::string EncodeProof(const KeyedPath& proof) {
  std::string out = absl::StrCat("{\"key\":\"", hash::Hex(proof.key), "\"");
  if (proof.path.found.has_value()) {
    const Head& h = proof.path.found->head;
    absl::StrAppend(&out, ",\"head\":{\"count\":", h.count, ",\"last_seq\":", h.last_seq, ",\"last_leaf_hash\":\"",
                    hash::Hex(h.last_leaf_hash), "\"}");
  }
  out += ",\"siblings\":[";
  for (size_t i = 0; i < proof.path.siblings.size(); ++i) {
    absl::StrAppend(&out, i ? ",\"" : "\"", hash::Hex(proof.path.siblings[i]), "\"");
  }
  out += "]";
  if (!proof.path.found.has_value() && proof.path.other.has_value()) {
    absl::StrAppend(&out, ",\"leaf\":{\"key\":\"", hash::Hex(proof.path.other->key), "\",\"value_hash\":\"",
                    hash::Hex(proof.path.other->value_hash), "\"}");
  }
  out += "}";
  return out;
}

absl::StatusOr<KeyedPath> ParseProof(std::string_view text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Bad("proof", "not JSON");
  if (auto s = ExactKeys(j, "", {"key", "siblings"}, {"head", "leaf"}); !s.ok()) return s;
  if (j.contains("head") && j.contains("leaf"))
    return Bad("leaf", "not with head (a proof is of inclusion or of absence)");
  KeyedPath out;
  auto key = HashOf(j["key"], "key");
  if (!key.ok()) return key.status();
  out.key = *key;
  const Json& siblings = j["siblings"];
  if (!siblings.is_array()) return Bad("siblings", "want an array of hashes");
  if (siblings.size() > static_cast<size_t>(kKeyBits)) return Bad("siblings", "more than 256");
  for (size_t i = 0; i < siblings.size(); ++i) {
    auto h = HashOf(siblings[i], absl::StrCat("siblings[", i, "]"));
    if (!h.ok()) return h.status();
    out.path.siblings.push_back(*h);
  }
  if (j.contains("head")) {
    const Json& h = j["head"];
    if (auto s = ExactKeys(h, "head", {"count", "last_seq", "last_leaf_hash"}); !s.ok()) return s;
    Leaf leaf{out.key, {}};
    auto count = UintOf(h["count"], "head.count");
    if (!count.ok()) return count.status();
    auto last = UintOf(h["last_seq"], "head.last_seq");
    if (!last.ok()) return last.status();
    auto leaf_hash = HashOf(h["last_leaf_hash"], "head.last_leaf_hash");
    if (!leaf_hash.ok()) return leaf_hash.status();
    leaf.head = {*count, *last, *leaf_hash};
    out.path.found = leaf;
  }
  if (j.contains("leaf")) {
    const Json& l = j["leaf"];
    if (auto s = ExactKeys(l, "leaf", {"key", "value_hash"}); !s.ok()) return s;
    AbsenceProof::Other other;
    auto k = HashOf(l["key"], "leaf.key");
    if (!k.ok()) return k.status();
    auto v = HashOf(l["value_hash"], "leaf.value_hash");
    if (!v.ok()) return v.status();
    out.path.other = AbsenceProof::Other{*k, *v};
  }
  return out;
}

absl::Status VerifyProof(const Hash& root, const Key& key, const KeyedPath& proof) {
  if (proof.key != key) {
    return absl::InvalidArgumentError(
        absl::StrCat("key: ", hash::Hex(proof.key), " is not the run's key ", hash::Hex(key)));
  }
  if (proof.path.found.has_value()) return VerifyInclusion(root, key, proof.path.found->head, proof.path.siblings);
  return VerifyAbsence(root, key, AbsenceProof{proof.path.siblings, proof.path.other});
}

absl::StatusOr<Hash> ProofRoot(const KeyedPath& proof) {
  if (proof.path.found.has_value()) return InclusionRoot(proof.key, proof.path.found->head, proof.path.siblings);
  return AbsenceRoot(proof.key, AbsenceProof{proof.path.siblings, proof.path.other});
}

}  // namespace ledger::runmap
