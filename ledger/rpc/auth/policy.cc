#include "ledger/rpc/auth/policy.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "util/files/files.h"
#include "util/tls/identity.h"

namespace ledger::auth {
namespace {

using nlohmann::json;

bool IsPattern(std::string_view identity) { return !identity.empty() && identity.back() == '*'; }

absl::Status Bad(const std::string& field, std::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat("policy: ", field, ": ", std::string(rule)));
}

absl::StatusOr<std::vector<std::string>> Strings(const json& j, const std::string& field) {
  if (!j.is_array()) return Bad(field, "must be an array of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    std::string f = absl::StrCat(field, "[", i, "]");
    if (!j[i].is_string()) return Bad(f, "must be a string");
    std::string s = j[i].get<std::string>();
    if (s.empty()) return Bad(f, "must not be empty");
    out.push_back(std::move(s));
  }
  return out;
}

constexpr std::string_view kKinds[] = {"uri:", "dns:", "cn:", kUserKind};

// The typed identity of `written`, and whether it had to be typed.
std::string TypedIdentity(const std::string& written, bool* untyped) {
  for (std::string_view kind : kKinds) {
    if (written.compare(0, kind.size(), kind) == 0) {
      *untyped = false;
      return written;
    }
  }
  *untyped = true;
  return absl::StrCat(written.find("://") != std::string::npos ? "uri:" : "dns:", written);
}

// OK when `identity` (typed, as written in a rule) names one.
absl::Status CheckIdentity(const std::string& identity, const std::string& field) {
  size_t colon = identity.find(':');
  std::string_view name = std::string_view(identity).substr(colon + 1);
  if (name.empty()) return Bad(field, absl::StrCat("names no identity after '", identity, "'"));
  size_t star = name.find('*');
  if (star != std::string::npos && star + 1 != name.size()) {
    return Bad(field, "'*' may only end an identity (a prefix pattern)");
  }
  std::string fault = tls::IdentityFault(name);
  // A user pattern's prefix is the start of a user's name; "user:*" is every user.
  if (fault.empty() && identity.starts_with(kUserKind) && star != 0) fault = UserFault(name.substr(0, star));
  if (!fault.empty()) return Bad(field, fault);
  return absl::OkStatus();
}

// A header's name as RFC 9110 spells one (a token), at most 64 bytes.
bool IsHeaderName(std::string_view name) {
  static constexpr std::string_view kSymbols = "!#$%&'*+-.^_`|~";
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || kSymbols.find(c) != std::string_view::npos;
  });
}

absl::StatusOr<TrustedProxy> ParseProxy(const json& j, const std::string& field) {
  if (!j.is_object()) return Bad(field, "must be an object");
  TrustedProxy proxy;
  for (const auto& [key, value] : j.items()) {
    std::string f = absl::StrCat(field, ".", key);
    if (!value.is_string() || value.get<std::string>().empty()) return Bad(f, "must be a non-empty string");
    std::string v = value.get<std::string>();
    if (key == "identity") {
      bool typed = v.starts_with("uri:") || v.starts_with("dns:") || v.starts_with("cn:");
      if (!typed) return Bad(f, "must be the proxy certificate's identity, with its kind (uri:, dns:, cn:)");
      if (v.find('*') != std::string::npos) return Bad(f, "must be one identity, exactly (no '*')");
      if (auto s = CheckIdentity(v, f); !s.ok()) return s;
      proxy.identity = std::move(v);
    } else if (key == "user_header") {
      if (!IsHeaderName(v)) return Bad(f, "must be a header's name (an RFC 9110 token, at most 64 bytes)");
      proxy.user_header = std::move(v);
    } else if (key == "without_user") {
      if (v != "refuse" && v != "proxy") return Bad(f, "must be \"refuse\" or \"proxy\"");
      proxy.act_as_proxy_without_user = v == "proxy";
    } else {
      return Bad(f, "unknown key (identity, user_header, without_user)");
    }
  }
  if (proxy.identity.empty()) return Bad(field + ".identity", "required");
  if (proxy.user_header.empty()) return Bad(field + ".user_header", "required");
  return proxy;
}

absl::Status ParseProxies(const json& j, std::vector<TrustedProxy>* proxies) {
  if (!j.is_array()) return Bad("trusted_proxies", "must be an array of proxies");
  for (size_t i = 0; i < j.size(); ++i) {
    std::string field = absl::StrCat("trusted_proxies[", i, "]");
    auto proxy = ParseProxy(j[i], field);
    if (!proxy.ok()) return proxy.status();
    for (const TrustedProxy& p : *proxies) {
      if (p.identity == proxy->identity) {
        return Bad(field + ".identity", absl::StrCat("'", proxy->identity, "' is listed already"));
      }
    }
    proxies->push_back(*std::move(proxy));
  }
  return absl::OkStatus();
}

absl::StatusOr<Rule> ParseRule(const json& j, const std::string& field, std::vector<Policy::Untyped>* untyped) {
  if (!j.is_object()) return Bad(field, "must be an object");
  Rule rule;
  bool has_teams = false;
  for (const auto& [key, value] : j.items()) {
    std::string f = absl::StrCat(field, ".", key);
    if (key == "identity") {
      if (!value.is_string() || value.get<std::string>().empty()) return Bad(f, "must be a non-empty string");
      bool was_untyped = false;
      rule.identity = TypedIdentity(value.get<std::string>(), &was_untyped);
      if (auto s = CheckIdentity(rule.identity, f); !s.ok()) return s;
      if (was_untyped) untyped->push_back({value.get<std::string>(), rule.identity});
    } else if (key == "roles") {
      auto roles = Strings(value, f);
      if (!roles.ok()) return roles.status();
      if (roles->empty()) return Bad(f, "must name at least one role");
      for (size_t i = 0; i < roles->size(); ++i) {
        const std::string& r = (*roles)[i];
        if (r == "emitter")
          rule.emitter = true;
        else if (r == "reader")
          rule.reader = true;
        else if (r == "auditor")
          rule.auditor = true;
        else if (r == "admin")
          rule.admin = true;
        else if (r == "metrics")
          rule.metrics = true;
        else
          return Bad(absl::StrCat(f, "[", i, "]"),
                     absl::StrCat("unknown role '", r, "' (emitter, reader, auditor, admin, metrics)"));
      }
    } else if (key == "teams") {
      auto teams = Strings(value, f);
      if (!teams.ok()) return teams.status();
      has_teams = true;
      for (std::string& t : *teams) {
        if (t == "*")
          rule.all_teams = true;
        else
          rule.teams.push_back(std::move(t));
      }
    } else {
      return Bad(f, "unknown key (identity, roles, teams)");
    }
  }
  if (rule.identity.empty()) return Bad(field + ".identity", "required");
  bool team_roles = rule.emitter || rule.reader || rule.auditor;
  if (!team_roles && !rule.admin && !rule.metrics) return Bad(field + ".roles", "required");
  if (team_roles && !rule.admin && (!has_teams || (rule.teams.empty() && !rule.all_teams))) {
    return Bad(field + ".teams", "required: the teams the roles apply to, or [\"*\"]");
  }
  if (rule.admin) rule.all_teams = true;
  std::sort(rule.teams.begin(), rule.teams.end());
  rule.teams.erase(std::unique(rule.teams.begin(), rule.teams.end()), rule.teams.end());
  return rule;
}

}  // namespace

std::string UserFault(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.size() > kMaxUserBytes) return absl::StrCat("is longer than ", kMaxUserBytes, " bytes");
  if (name.find(',') != std::string_view::npos) return "holds a comma";
  if (name.find(' ') != std::string_view::npos) return "holds a space";
  return tls::IdentityFault(name);
}

std::string_view ActionName(Action a) {
  switch (a) {
    case Action::kAppend:
      return "append";
    case Action::kQuery:
      return "query";
    case Action::kReadEntries:
      return "read entries and proofs";
    case Action::kExport:
      return "export";
    case Action::kAdminister:
      return "administer";
    case Action::kScrapeMetrics:
      return "scrape /metrics";
  }
  return "?";
}

bool Rule::Permits(Action a) const {
  if (admin) return true;
  switch (a) {
    case Action::kAppend:
      return emitter;
    case Action::kQuery:
      return reader || auditor;
    case Action::kReadEntries:
    case Action::kExport:
      return auditor;
    case Action::kAdminister:
      return false;
    case Action::kScrapeMetrics:
      return metrics || ((reader || auditor) && all_teams);
  }
  return false;
}

bool Rule::Covers(std::string_view team) const {
  return all_teams || std::binary_search(teams.begin(), teams.end(), team);
}

absl::StatusOr<Policy> Policy::Parse(std::string_view text) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("policy: not JSON: ", e.what()));
  }
  if (!j.is_object()) return Bad("(top level)", "must be an object with \"identities\"");
  Policy p;
  bool has_identities = false;
  for (const auto& [key, value] : j.items()) {
    if (key == "trusted_proxies") {
      if (auto s = ParseProxies(value, &p.proxies_); !s.ok()) return s;
      continue;
    }
    if (key != "identities") return Bad(key, "unknown key (identities, trusted_proxies)");
    has_identities = true;
    if (!value.is_array()) return Bad(key, "must be an array of rules");
    std::set<std::string> seen;
    for (size_t i = 0; i < value.size(); ++i) {
      std::string field = absl::StrCat("identities[", i, "]");
      auto rule = ParseRule(value[i], field, &p.untyped_);
      if (!rule.ok()) return rule.status();
      if (!seen.insert(rule->identity).second) {
        return Bad(field + ".identity", absl::StrCat("'", rule->identity, "' has a rule already"));
      }
      p.rules_.push_back(*std::move(rule));
    }
  }
  if (!has_identities) return Bad("identities", "required");
  // Exact rules first; patterns by decreasing prefix length, so the first
  // match is the one that applies.
  std::stable_sort(p.rules_.begin(), p.rules_.end(), [](const Rule& a, const Rule& b) {
    bool pa = IsPattern(a.identity), pb = IsPattern(b.identity);
    if (pa != pb) return !pa;
    return pa && a.identity.size() > b.identity.size();
  });
  return p;
}

absl::StatusOr<Policy> Policy::Load(const std::string& path) {
  auto text = files::ReadFile(path);
  if (!text.ok()) return absl::Status(text.status().code(), absl::StrCat("policy: cannot ", text.status().message()));
  return Parse(*text);
}

const Rule* Policy::Find(std::string_view identity) const {
  for (const Rule& r : rules_) {
    if (IsPattern(r.identity)) {
      std::string_view prefix(r.identity.data(), r.identity.size() - 1);
      if (identity.substr(0, prefix.size()) != prefix) continue;
      // At a path boundary; an empty name ("dns:*": the kind's colon ends
      // the prefix) is the whole kind.
      if (prefix.find(':') + 1 == prefix.size() || prefix.back() == '/' || identity.size() == prefix.size() ||
          identity[prefix.size()] == '/') {
        return &r;
      }
    } else if (identity == r.identity) {
      return &r;
    }
  }
  return nullptr;
}

const TrustedProxy* Policy::FindProxy(std::string_view identity) const {
  for (const TrustedProxy& p : proxies_) {
    if (p.identity == identity) return &p;
  }
  return nullptr;
}

absl::Status Policy::Check(std::string_view identity, Action action, std::string_view team) const {
  const Rule* r = Find(identity);
  if (r == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("identity '", std::string(identity), "' has no rule in the policy"));
  }
  if (!r->Permits(action)) {
    return absl::PermissionDeniedError(absl::StrCat("identity '", std::string(identity), "' may not ",
                                                    std::string(ActionName(action)), " (its roles do not allow it)"));
  }
  if (!r->Covers(team)) {
    return absl::PermissionDeniedError(absl::StrCat("identity '", std::string(identity), "' may not ",
                                                    std::string(ActionName(action)), " for team '", std::string(team),
                                                    "'"));
  }
  return absl::OkStatus();
}

absl::Status Policy::CheckReadsSomeTeam(std::string_view identity) const {
  const Rule* r = Find(identity);
  if (r != nullptr && r->Permits(Action::kQuery)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("identity '", std::string(identity), "' may read no team"));
}

bool Policy::CoversAllTeams(std::string_view identity, Action action) const {
  const Rule* r = Find(identity);
  return r != nullptr && r->Permits(action) && r->all_teams;
}

}  // namespace ledger::auth
