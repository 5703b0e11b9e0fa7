#include "export/pack/team_window.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace ledger::pack {
namespace {

using Json = nlohmann::json;

absl::Status Bad(std::string_view field, std::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(field), ": ", std::string(rule)));
}

void AppendBound(const char* name, const Bound& b, std::string* out) {
  absl::StrAppend(out, out->size() > 1 ? "," : "", "\"", name, "\":{\"seq\":", b.seq, ",\"leaf\":\"");
  for (char c : b.leaf) {
    if (c == '"' || c == '\\') out->push_back('\\');
    out->push_back(c);
  }
  *out += "\",\"inclusion\":[";
  for (size_t i = 0; i < b.inclusion.size(); ++i) {
    absl::StrAppend(out, i ? ",\"" : "\"", hash::Hex(b.inclusion[i]), "\"");
  }
  *out += "]}";
}

absl::StatusOr<Bound> ParseBound(const Json& j, const std::string& name) {
  if (!j.is_object()) return Bad(name, "want a JSON object");
  for (const auto& [k, v] : j.items()) {
    if (k != "seq" && k != "leaf" && k != "inclusion") return Bad(absl::StrCat(name, ".", k), "not a field");
  }
  Bound b;
  if (!j.contains("seq") || !j["seq"].is_number_unsigned()) return Bad(name + ".seq", "want a JSON integer");
  b.seq = j["seq"].get<uint64_t>();
  if (!j.contains("leaf") || !j["leaf"].is_string()) return Bad(name + ".leaf", "want a JSON string");
  b.leaf = j["leaf"].get<std::string>();
  if (!j.contains("inclusion") || !j["inclusion"].is_array()) {
    return Bad(name + ".inclusion", "want an array of 64 lowercase hex digits");
  }
  for (const Json& h : j["inclusion"]) {
    auto parsed =
        h.is_string() ? hash::ParseHex(h.get<std::string>()) : absl::StatusOr<hash::Hash>(absl::UnknownError(""));
    if (!parsed.ok()) return Bad(name + ".inclusion", "want an array of 64 lowercase hex digits");
    b.inclusion.push_back(*parsed);
  }
  return b;
}

}  // namespace

std::string EncodeTeamWindow(const TeamWindow& w) {
  std::string out = "{";
  if (w.before) AppendBound("before", *w.before, &out);
  if (w.after) AppendBound("after", *w.after, &out);
  if (w.head) absl::StrAppend(&out, out.size() > 1 ? "," : "", "\"head\":", runmap::EncodeProof(*w.head));
  return out + "}\n";
}

absl::StatusOr<TeamWindow> ParseTeamWindow(std::string_view text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Bad("team-window", "want one JSON object");
  for (const auto& [k, v] : j.items()) {
    if (k != "before" && k != "after" && k != "head") return Bad(k, "not a field of team-window.json");
  }
  if (j.contains("after") == j.contains("head")) {
    return absl::InvalidArgumentError("want exactly one of after and head");
  }
  TeamWindow w;
  for (const char* name : {"before", "after"}) {
    if (!j.contains(name)) continue;
    auto b = ParseBound(j[name], name);
    if (!b.ok()) return b.status();
    (std::string_view(name) == "before" ? w.before : w.after) = *std::move(b);
  }
  if (j.contains("head")) {
    auto proof = runmap::ParseProof(j["head"].dump());
    if (!proof.ok()) return Bad("head", std::string(proof.status().message()));
    w.head = *std::move(proof);
  }
  return w;
}

}  // namespace ledger::pack
