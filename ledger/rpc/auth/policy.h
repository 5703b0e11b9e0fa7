// Who may do what: the access policy of the ledger, a JSON file mapping
// caller identities to roles and teams.
//
//   {"identities": [
//     {"identity": "uri:spiffe://cluster/ns/team-a/sa/gateway",
//      "roles": ["emitter"], "teams": ["team-a"]},
//     {"identity": "uri:spiffe://cluster/ns/audit/*",
//      "roles": ["auditor"], "teams": ["*"]},
//     {"identity": "dns:ops.example.com", "roles": ["admin"]},
//     {"identity": "user:alice@example.com", "roles": ["reader"], "teams": ["team-a"]}],
//    "trusted_proxies": [
//     {"identity": "uri:spiffe://cluster/ns/auth/sa/oauth2-proxy",
//      "user_header": "X-Forwarded-Email"}]}
//
// An identity names its kind, as certificates' identities do (util/tls/identity.h):
// "uri:" a URI SAN, "dns:" a DNS SAN, "cn:" a subject CN; a rule matches
// identities of its kind only. The kind "user:" is a person a trusted proxy
// vouches for (proxy.h): no certificate names one, and its name follows
// UserFault. An identity written without a kind (policies
// older than kinds) is read as "uri:" when it contains "://" and as "dns:"
// otherwise, never as "cn:" (a CN only ever by an explicit "cn:"), so an
// old policy grants no one more than it did; untyped() lists what was read
// so, for a warning.
//
// A rule is exact, or a prefix pattern ending in "*". A pattern matches an
// identity of its kind that starts with what comes before the "*" (the
// prefix) at a path boundary: the prefix ends in '/', or the identity is
// the prefix itself or continues with '/' right after it. So
// "uri:spiffe://c/ns/team-a/*" matches ".../team-a/sa/x" but not
// ".../team-a"; "uri:spiffe://c/ns/team-a*" matches ".../team-a" and
// ".../team-a/sa/x"; neither matches ".../team-ab/sa/x". A pattern with an
// empty prefix ("dns:*") matches every identity of its kind. One rule
// applies to a caller: its exact rule, else the matching pattern with the
// longest prefix. Teams "*" means every team; admin holds every right on
// every team.
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
// A trusted proxy (TrustedProxy) is known by its certificate's identity,
// exactly: no pattern, no "user:". It needs no rule of its own unless it
// may act as itself ("without_user": "proxy").
//
// Thread-safe: a Policy is immutable once parsed.
#ifndef LEDGER_RPC_AUTH_POLICY_H_
#define LEDGER_RPC_AUTH_POLICY_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace ledger::auth {

enum class Action {
  kAppend,         // append receipts of a team
  kQuery,          // step outcomes, runs, watches of a team
  kReadEntries,    // entries and inclusion proofs of a team's entries
  kExport,         // evidence packs of a team's entries
  kAdminister,     // backups
  kScrapeMetrics,  // the HTTP port's /metrics, whose figures name every team
};

std::string_view ActionName(Action a);

// The kind of the identities trusted proxies vouch for (proxy.h).
inline constexpr std::string_view kUserKind = "user:";
// The longest name a "user:" identity may hold, in bytes (an email address's).
inline constexpr size_t kMaxUserBytes = 254;

// Why `name` cannot be the name of a "user:" identity, "" when it can:
// "is empty", "is longer than 254 bytes", "holds a comma" (a list, or a
// header sent twice, whose values are joined with ", "), "holds a space",
// or IdentityFault's reason (not UTF-8, a control character).
std::string UserFault(std::string_view name);

struct Rule {
  std::string identity;  // typed ("uri:...", "dns:...", "cn:..."), "*" included
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

// A reverse proxy that authenticates people (oauth2-proxy, or nginx's
// auth_request in front of an identity provider) and connects with its own
// client certificate, naming its user in a header of each request:
//
//   {"identity": "uri:spiffe://cluster/ns/auth/sa/oauth2-proxy",
//    "user_header": "X-Forwarded-Email", "without_user": "refuse"}
//
// "without_user": "refuse" (the default) or "proxy": a request of the
// proxy's that names no user is made as the proxy itself, under its own
// rule.
struct TrustedProxy {
  std::string identity;     // typed, exact
  std::string user_header;  // as written in the policy
  bool act_as_proxy_without_user = false;
};

class Policy {
 public:
  // INVALID_ARGUMENT naming the field (e.g. "identities[2].roles[0]") and
  // the rule when `json` is not a policy as above: unknown keys, unknown
  // roles, an empty or duplicate identity, a kind with no name after it, a
  // name that is not valid UTF-8 or holds a control character
  // (IdentityFault), a "user:" name that fails UserFault, "*" anywhere but
  // at the end, a rule without teams that is not admin; a trusted proxy
  // whose identity is not a certificate's exact identity, whose user header
  // is not a header's name, or that is listed twice.
  static absl::StatusOr<Policy> Parse(std::string_view json);
  // Parse of a file's contents; NOT_FOUND / UNAVAILABLE when unreadable.
  static absl::StatusOr<Policy> Load(const std::string& path);

  // An identity written without a kind, and the typed identity it was read as.
  struct Untyped {
    std::string written;
    std::string read_as;
  };
  const std::vector<Untyped>& untyped() const { return untyped_; }

  // The rule that applies to `identity` (typed), or nullptr.
  const Rule* Find(std::string_view identity) const;

  // OK when the rule of `identity` allows `action` on `team`; otherwise
  // PERMISSION_DENIED naming the identity, the action and the team.
  absl::Status Check(std::string_view identity, Action action, std::string_view team) const;
  // OK when `identity` may query some team; else PERMISSION_DENIED
  // "identity 'X' may read no team" (no rule, or roles without reader,
  // auditor or admin).
  absl::Status CheckReadsSomeTeam(std::string_view identity) const;
  // OK when `identity` may do `action` on every team (admin, or teams "*").
  bool CoversAllTeams(std::string_view identity, Action action) const;

  // The trusted proxy whose certificate names `identity`, or nullptr.
  const TrustedProxy* FindProxy(std::string_view identity) const;
  const std::vector<TrustedProxy>& proxies() const { return proxies_; }

  size_t size() const { return rules_.size(); }

 private:
  std::vector<TrustedProxy> proxies_;
  std::vector<Rule> rules_;  // exact rules first, then patterns by prefix length, longest first
  std::vector<Untyped> untyped_;
};

}  // namespace ledger::auth

#endif  // LEDGER_RPC_AUTH_POLICY_H_
