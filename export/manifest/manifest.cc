#include "export/manifest/manifest.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace ledger::manifest {
namespace {

using Json = nlohmann::json;

absl::Status Bad(const std::string& field, const std::string& rule) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", rule));
}

bool IsHex64(const Json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// `object`'s keys MUST be exactly `keys`: the first one missing or unknown
// is named, under `prefix`.
absl::Status ExactKeys(const Json& object, const std::string& prefix, const std::set<std::string>& keys) {
  for (const auto& key : keys) {
    if (!object.contains(key)) return Bad(absl::StrCat(prefix, key), "missing");
  }
  for (const auto& [key, value] : object.items()) {
    if (!keys.count(key)) return Bad(absl::StrCat(prefix, key), "not a field of the manifest");
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> Uint(const Json& v, const std::string& field) {
  if (!v.is_number_unsigned()) return Bad(field, "want an unsigned integer");
  return v.get<uint64_t>();
}

absl::StatusOr<int64_t> Int(const Json& v, const std::string& field) {
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) return Bad(field, "want a 64-bit integer");
  if (!v.is_number_integer()) return Bad(field, "want an integer");
  return v.get<int64_t>();
}

absl::StatusOr<std::string> Name(const Json& v, const std::string& field) {
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) return Bad(field, "want a non-empty string");
  return v.get<std::string>();
}

Json ScopeObject(const Scope& s) {
  Json j = {{"kind", std::string(s.kind())}};
  if (s.is_run()) {
    j["team"] = s.team;
    j["run_id"] = s.run_id;
    if (s.from_seq > 0) j["from_seq"] = s.from_seq;
  } else if (s.is_team_window()) {
    j["team"] = s.team;
    j["from_us"] = s.from_us;
    j["to_us"] = s.to_us;
    j["from_seq"] = s.from_seq;
    j["to_seq"] = s.to_seq;
  } else {
    j["from_seq"] = s.from_seq;
    j["to_seq"] = s.to_seq;
  }
  return j;
}

absl::StatusOr<Scope> ParseScope(const Json& j) {
  if (!j.is_object()) return Bad("scope", "want an object");
  if (!j.contains("kind") || !j["kind"].is_string()) return Bad("scope.kind", "want \"run\", \"team\" or \"seq\"");
  const std::string kind = j["kind"].get<std::string>();
  Scope s;
  if (kind == "run") {
    std::set<std::string> keys = {"kind", "team", "run_id"};
    if (j.contains("from_seq")) keys.insert("from_seq");
    if (auto k = ExactKeys(j, "scope.", keys); !k.ok()) return k;
    auto team = Name(j["team"], "scope.team");
    if (!team.ok()) return team.status();
    auto run = Name(j["run_id"], "scope.run_id");
    if (!run.ok()) return run.status();
    s.team = *team;
    s.run_id = *run;
    if (j.contains("from_seq")) {
      auto from = Uint(j["from_seq"], "scope.from_seq");
      if (!from.ok()) return from.status();
      if (*from == 0) return Bad("scope.from_seq", "want at least 1");
      s.from_seq = *from;
    }
  } else if (kind == "team") {
    if (!j.contains("from_seq") || !j.contains("to_seq")) {
      return Bad("scope", "a team window names its seqs (from_seq, to_seq)");
    }
    if (auto k = ExactKeys(j, "scope.", {"kind", "team", "from_us", "to_us", "from_seq", "to_seq"}); !k.ok()) return k;
    auto team = Name(j["team"], "scope.team");
    if (!team.ok()) return team.status();
    auto from_us = Int(j["from_us"], "scope.from_us");
    if (!from_us.ok()) return from_us.status();
    auto to_us = Int(j["to_us"], "scope.to_us");
    if (!to_us.ok()) return to_us.status();
    if (*from_us >= *to_us) return Bad("scope.from_us", "want less than to_us");
    s.team = *team;
    s.from_us = *from_us;
    s.to_us = *to_us;
  } else if (kind == "seq") {
    if (auto k = ExactKeys(j, "scope.", {"kind", "from_seq", "to_seq"}); !k.ok()) return k;
  } else {
    return Bad("scope.kind", "want \"run\", \"team\" or \"seq\"");
  }
  if (kind != "run") {
    auto from = Uint(j["from_seq"], "scope.from_seq");
    if (!from.ok()) return from.status();
    auto to = Uint(j["to_seq"], "scope.to_seq");
    if (!to.ok()) return to.status();
    if (kind == "seq" ? *from >= *to : *from > *to) {
      return Bad("scope.to_seq", kind == "seq" ? "want from_seq < to_seq" : "want from_seq <= to_seq");
    }
    s.from_seq = *from;
    s.to_seq = *to;
  }
  return s;
}

}  // namespace

std::string ScopeJson(const Scope& scope) { return ScopeObject(scope).dump(); }

std::string Encode(const Manifest& m) {
  Json j = {{"format", m.format},       {"origin", m.origin}, {"scope", ScopeObject(m.scope)},
            {"tree_size", m.tree_size}, {"root", m.root},     {"counts", {{"entries", m.entries}}},
            {"files", Json::object()}};
  if (m.unknown_grace_ms) j["unknown_grace_ms"] = *m.unknown_grace_ms;
  for (const auto& [name, sha] : m.files) j["files"][name] = sha;
  return j.dump() + "\n";
}

absl::StatusOr<Manifest> Parse(std::string_view text) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Bad("manifest", "not a JSON object");
  Manifest m;
  if (!j.contains("format") || !j["format"].is_number_unsigned() || j["format"].get<uint64_t>() < 1 ||
      j["format"].get<uint64_t>() > 9) {
    return Bad("format", absl::StrCat("want 1, 2, 3, 4, 5, 6, 7, 8 or 9, found ",
                                      j.contains("format") ? j["format"].dump() : "none"));
  }
  m.format = j["format"].get<int>();
  std::set<std::string> keys = {"counts", "files", "format", "origin", "root", "scope", "tree_size"};
  if (m.format >= 2) keys.insert("unknown_grace_ms");
  if (auto k = ExactKeys(j, "", keys); !k.ok()) return k;
  auto origin = Name(j["origin"], "origin");
  if (!origin.ok()) return origin.status();
  m.origin = *origin;
  auto scope = ParseScope(j["scope"]);
  if (!scope.ok()) return scope.status();
  m.scope = *scope;
  if (m.scope.is_run_from() && m.format != 9) {
    return Bad("scope.from_seq", "only a run pack of format 9 starts at a seq");
  }
  if (m.format == 9 && !m.scope.is_run_from())
    return Bad("scope", "a pack of format 9 is a run pack from a seq (from_seq)");
  auto size = Uint(j["tree_size"], "tree_size");
  if (!size.ok()) return size.status();
  m.tree_size = *size;
  if (!IsHex64(j["root"])) return Bad("root", "want 64 lower-case hex digits");
  m.root = j["root"].get<std::string>();
  if (!j["counts"].is_object()) return Bad("counts", "want an object");
  if (auto k = ExactKeys(j["counts"], "counts.", {"entries"}); !k.ok()) return k;
  auto entries = Uint(j["counts"]["entries"], "counts.entries");
  if (!entries.ok()) return entries.status();
  m.entries = *entries;
  if (m.format >= 2) {
    auto grace = Uint(j["unknown_grace_ms"], "unknown_grace_ms");
    if (!grace.ok()) return grace.status();
    m.unknown_grace_ms = *grace;
  }
  if (!j["files"].is_object()) return Bad("files", "want an object");
  for (const auto& [name, sha] : j["files"].items()) {
    if (name.empty()) return Bad("files", "a file name is empty");
    if (!IsHex64(sha)) return Bad(absl::StrCat("files.", name), "want 64 lower-case hex digits");
    m.files[name] = sha.get<std::string>();
  }
  if (Encode(m) != text) {
    return Bad("manifest",
               "not in the one form the exporter writes (keys sorted, each once, no spaces, one "
               "newline at the end)");
  }
  return m;
}

}  // namespace ledger::manifest
