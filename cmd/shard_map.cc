#include "cmd/shard_map.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "util/files/files.h"

namespace ledger::cmd {
namespace {

absl::Status Bad(const std::string& field, const std::string& rule) {
  return absl::InvalidArgumentError(absl::StrCat("shard map: ", field, ": ", rule));
}

}  // namespace

uint64_t Fnv1a64(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

absl::StatusOr<ShardMap> ShardMap::Parse(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Bad("(top level)", "not a JSON object");
  if (j.value("version", 0) != 1) return Bad("version", "must be 1");
  if (!j.contains("shards") || !j["shards"].is_array() || j["shards"].empty()) {
    return Bad("shards", "a non-empty array is required");
  }
  ShardMap m;
  m.shards_.resize(j["shards"].size());
  std::vector<bool> seen(j["shards"].size(), false);
  for (size_t i = 0; i < j["shards"].size(); ++i) {
    const auto& s = j["shards"][i];
    std::string field = absl::StrCat("shards[", i, "]");
    if (!s.is_object() || !s.contains("shard") || !s["shard"].is_number_integer()) {
      return Bad(field + ".shard", "an integer is required");
    }
    int64_t n = s["shard"].get<int64_t>();
    if (n < 0 || n >= static_cast<int64_t>(seen.size()) || seen[n]) {
      return Bad(field + ".shard", absl::StrCat("shards are numbered 0 to ", seen.size() - 1, ", each once"));
    }
    if (!s.contains("address") || !s["address"].is_string() || s["address"].get<std::string>().empty()) {
      return Bad(field + ".address", "HOST:PORT is required");
    }
    seen[n] = true;
    m.shards_[n] = {static_cast<int>(n), s["address"].get<std::string>()};
  }
  if (j.contains("teams")) {
    if (!j["teams"].is_object()) return Bad("teams", "must be an object of team -> shard");
    for (const auto& [team, n] : j["teams"].items()) {
      if (!n.is_number_integer() || n.get<int64_t>() < 0 || n.get<int64_t>() >= static_cast<int64_t>(seen.size())) {
        return Bad("teams." + team, "not a shard of this map");
      }
      m.teams_[team] = n.get<int>();
    }
  }
  return m;
}

absl::StatusOr<ShardMap> ShardMap::Load(const std::string& path) {
  auto text = files::ReadFile(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat("--shard-map: cannot read ", path));
  auto m = Parse(*text);
  if (!m.ok()) return absl::Status(m.status().code(), absl::StrCat("--shard-map ", path, ": ", m.status().message()));
  return m;
}

const Shard& ShardMap::For(std::string_view team) const {
  auto it = teams_.find(team);
  if (it != teams_.end()) return shards_[it->second];
  return shards_[Fnv1a64(team) % shards_.size()];
}

absl::StatusOr<Shard> ShardMap::Get(int n) const {
  if (n < 0 || n >= static_cast<int>(shards_.size())) {
    return absl::NotFoundError(absl::StrCat("--shard: the map has shards 0 to ", shards_.size() - 1));
  }
  return shards_[n];
}

}  // namespace ledger::cmd
