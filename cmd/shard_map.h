// The shard map: which shard (which ledger, with its own log and origin
// <base>/shard-<n>) holds a team's evidence.
//
//   {"version": 1,
//    "shards": [{"shard": 0, "address": "ledger-0.ledger-headless:7420"}, ...],
//    "teams": {"team-a": 2}}
//
// A team listed under "teams" goes to that shard; any other team to
// shard FNV-1a-64(team) mod (number of shards). The Python client
// (clients/python/evidence_ledger/shards.py) computes the same. Adding a
// shard moves the hashed teams: pin every existing team first (see
// deploy/README.md).
//
// Thread-safe: immutable once parsed.
#ifndef CMD_SHARD_MAP_H_
#define CMD_SHARD_MAP_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ledger::cmd {

// FNV-1a, 64 bits, over the team's bytes.
uint64_t Fnv1a64(std::string_view s);

struct Shard {
  int shard = 0;
  std::string address;
};

class ShardMap {
 public:
  // INVALID_ARGUMENT naming the field: shards must be numbered 0..n-1, each
  // once, with an address; a pinned team's shard must exist.
  static absl::StatusOr<ShardMap> Parse(std::string_view json);
  static absl::StatusOr<ShardMap> Load(const std::string& path);

  const Shard& For(std::string_view team) const;
  // NOT_FOUND when there is no shard `n`.
  absl::StatusOr<Shard> Get(int n) const;
  const std::vector<Shard>& shards() const { return shards_; }

 private:
  std::vector<Shard> shards_;  // by shard number
  std::map<std::string, int, std::less<>> teams_;
};

}  // namespace ledger::cmd

#endif  // CMD_SHARD_MAP_H_
