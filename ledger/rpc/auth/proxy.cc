#include "ledger/rpc/auth/proxy.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace ledger::auth {
namespace {

const std::string* Header(const std::map<std::string, std::string>& headers, std::string_view name) {
  auto it = headers.find(absl::AsciiStrToLower(std::string(name)));
  return it == headers.end() ? nullptr : &it->second;
}

// The user header `headers` carry, as the policy or kCommonUserHeaders
// spell it, or "".
std::string UserHeaderOf(const Policy* policy, const std::map<std::string, std::string>& headers) {
  if (policy != nullptr) {
    for (const TrustedProxy& p : policy->proxies()) {
      if (Header(headers, p.user_header) != nullptr) return p.user_header;
    }
  }
  for (std::string_view name : kCommonUserHeaders) {
    if (Header(headers, name) != nullptr) return std::string(name);
  }
  return "";
}

}  // namespace

absl::StatusOr<Acting> ActingIdentity(const Policy* policy, std::string_view certificate,
                                      const std::map<std::string, std::string>& headers) {
  const TrustedProxy* proxy = policy == nullptr ? nullptr : policy->FindProxy(certificate);
  const std::string caller(certificate);
  if (proxy == nullptr) {
    std::string header = UserHeaderOf(policy, headers);
    if (header.empty()) return Acting{caller, ""};
    if (policy == nullptr) {
      return absl::PermissionDeniedError(absl::StrCat(header,
                                                      ": only a trusted proxy may name the user, and in plain text "
                                                      "there is none (every caller is 'local')"));
    }
    return absl::PermissionDeniedError(
        absl::StrCat(header, ": only a trusted proxy may name the user, and identity '", caller, "' is not one"));
  }
  const std::string* user = Header(headers, proxy->user_header);
  if (user == nullptr) {
    if (proxy->act_as_proxy_without_user) return Acting{caller, ""};
    return absl::UnauthenticatedError(
        absl::StrCat("the proxy sent no user: no ", proxy->user_header, " header from trusted proxy '", caller, "'"));
  }
  if (std::string fault = UserFault(*user); !fault.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(proxy->user_header, ": the user's name ", fault, " (a user is 1 to ",
                                                   kMaxUserBytes,
                                                   " bytes of UTF-8 without spaces, commas or control characters)"));
  }
  std::string identity = absl::StrCat(std::string(kUserKind), *user);
  // The identity provider may let in more people than the policy names:
  // those it does not name get nothing, not even what any authenticated
  // caller may read.
  if (policy->Find(identity) == nullptr) return policy->CheckReadsSomeTeam(identity);
  return Acting{std::move(identity), caller};
}

}  // namespace ledger::auth
