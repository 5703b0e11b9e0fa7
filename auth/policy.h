// Who may do what: the access policy of the ledger, a JSON file mapping
// caller identities to roles and teams.
//
//   {"identities": [
//     {"identity": "spiffe://cluster/ns/team-a/sa/gateway",
//      "roles": ["emitter"], "teams": ["team-a"]},
//     {"identity": "spiffe://cluster/ns/audit/*",
//      "roles": ["auditor"], "teams": ["*"]},
//     {"identity": "ops.example.com", "roles": ["admin"]}]}
//
// An identity is matched exactly, or by a pattern ending in "*" that matches
// every identity starting with what comes before it. One rule applies to a
// caller: its exact rule, else the matching pattern with the longest prefix.
// Teams "*" means every team; admin holds every right on every team.
//
// Roles and what they allow (Action):
//   emitter  kAppend                      for its teams
//   reader   kQuery                       for its teams
//   auditor  kQuery, kReadEntries, kExport for its teams
//   metrics  kScrapeMetrics (only /metrics; needs no teams)
//   admin    everything, including kAdminister (backups)
// A reader or auditor of every team (teams "*") may scrape /metrics too:
// its figures name every team.
// Checkpoints, the verifier key and consistency proofs are public to every
// authenticated caller, whether the policy names it or not.
//
// Thread-safe: a Policy is immutable once parsed.
#ifndef AUTH_POLICY_H_
#define AUTH_POLICY_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ledger::auth {

enum class Action {
  kAppend,       // append receipts of a team
  kQuery,        // step outcomes, runs, watches of a team
  kReadEntries,  // entries and inclusion proofs of a team's entries
  kExport,       // evidence packs of a team's entries
  kAdminister,   // backups
  kScrapeMetrics,  // the HTTP port's /metrics, whose figures name every team
};

std::string_view ActionName(Action a);

struct Rule {
  std::string identity;  // as written, "*" included
  bool emitter = false;
  bool reader = false;
  bool auditor = false;
  bool admin = false;
  bool metrics = false;
  bool all_teams = false;
  std::vector<std::string> teams;  // sorted

  bool Permits(Action a) const;
  bool Covers(std::string_view team) const;
};

class Policy {
 public:
  // INVALID_ARGUMENT naming the field (e.g. "identities[2].roles[0]") and
  // the rule when `json` is not a policy as above: unknown keys, unknown
  // roles, an empty or duplicate identity, "*" anywhere but at the end, a
  // rule without teams that is not admin.
  static absl::StatusOr<Policy> Parse(std::string_view json);
  // Parse of a file's contents; NOT_FOUND / UNAVAILABLE when unreadable.
  static absl::StatusOr<Policy> Load(const std::string& path);

  // The rule that applies to `identity`, or nullptr.
  const Rule* Find(std::string_view identity) const;

  // OK when the rule of `identity` allows `action` on `team`; otherwise
  // PERMISSION_DENIED naming the identity, the action and the team.
  absl::Status Check(std::string_view identity, Action action, std::string_view team) const;
  // OK when `identity` may do `action` on every team (admin, or teams "*").
  bool CoversAllTeams(std::string_view identity, Action action) const;

  size_t size() const { return rules_.size(); }

 private:
  std::vector<Rule> rules_;  // exact rules first, then patterns by prefix length, longest first
};

}  // namespace ledger::auth

#endif  // AUTH_POLICY_H_
