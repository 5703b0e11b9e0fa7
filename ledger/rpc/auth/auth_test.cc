#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/ascii.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ledger/rpc/auth/gate.h"
#include "ledger/rpc/auth/limiter.h"
#include "ledger/rpc/auth/policy.h"
#include "ledger/rpc/auth/proxy.h"
#include "tests/util/status_matchers.h"
#include "util/tls/identity.h"

namespace ledger::auth {
namespace {

using ::ledger::testing::StatusIs;

constexpr char kPolicy[] = R"({"identities": [
  {"identity": "uri:spiffe://c/ns/team-a/sa/gateway", "roles": ["emitter"], "teams": ["team-a"]},
  {"identity": "uri:spiffe://c/ns/team-a/*", "roles": ["reader"], "teams": ["team-a", "team-b"]},
  {"identity": "uri:spiffe://c/*", "roles": ["auditor"], "teams": ["*"]},
  {"identity": "dns:ops", "roles": ["admin"]}]})";

TEST(Policy, ExactRuleWinsThenLongestPrefix) {
  auto p = Policy::Parse(kPolicy);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Find("uri:spiffe://c/ns/team-a/sa/gateway")->identity, "uri:spiffe://c/ns/team-a/sa/gateway");
  EXPECT_EQ(p->Find("uri:spiffe://c/ns/team-a/sa/worker")->identity, "uri:spiffe://c/ns/team-a/*");
  EXPECT_EQ(p->Find("uri:spiffe://c/ns/audit/sa/x")->identity, "uri:spiffe://c/*");
  EXPECT_EQ(p->Find("uri:spiffe://other"), nullptr);
  EXPECT_EQ(p->Find("dns:op"), nullptr);
  EXPECT_EQ(p->Find("dns:ops")->identity, "dns:ops");
  EXPECT_TRUE(p->untyped().empty());
}

TEST(Policy, OneKindNeverMatchesARuleOfAnother) {
  auto p = Policy::Parse(kPolicy);
  ASSERT_TRUE(p.ok()) << p.status();
  for (const char* id : {"cn:spiffe://c/ns/team-a/sa/gateway", "dns:spiffe://c/ns/team-a/sa/gateway", "cn:ops",
                         "uri:ops", "spiffe://c/ns/team-a/sa/gateway", "ops", "ledger", "local", "in-process"}) {
    EXPECT_EQ(p->Find(id), nullptr) << id;
  }
}

TEST(Policy, PrefixPatternsMatchAtAPathBoundary) {
  auto p = Policy::Parse(R"({"identities": [
    {"identity": "uri:spiffe://c/ns/team-a/*", "roles": ["reader"], "teams": ["team-a"]},
    {"identity": "uri:spiffe://c/ns/team-b*", "roles": ["reader"], "teams": ["team-b"]},
    {"identity": "uri:urn:*", "roles": ["reader"], "teams": ["team-d"]},
    {"identity": "cn:*", "roles": ["reader"], "teams": ["team-c"]}]})");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Find("uri:spiffe://c/ns/team-a/sa/x")->identity, "uri:spiffe://c/ns/team-a/*");
  EXPECT_EQ(p->Find("uri:spiffe://c/ns/team-a"), nullptr);
  EXPECT_EQ(p->Find("uri:spiffe://c/ns/team-ab/sa/x"), nullptr);
  EXPECT_EQ(p->Find("uri:spiffe://c/ns/team-b")->identity, "uri:spiffe://c/ns/team-b*");
  EXPECT_EQ(p->Find("uri:spiffe://c/ns/team-b/sa/x")->identity, "uri:spiffe://c/ns/team-b*");
  EXPECT_EQ(p->Find("uri:spiffe://c/ns/team-bc/sa/x"), nullptr);
  EXPECT_EQ(p->Find("uri:urn:x"), nullptr);  // a ':' in the name is no boundary
  EXPECT_EQ(p->Find("uri:urn:")->identity, "uri:urn:*");
  EXPECT_EQ(p->Find("cn:anyone")->identity, "cn:*");
  EXPECT_EQ(p->Find("dns:anyone"), nullptr);
}

TEST(Policy, UntypedIdentitiesAreReadAsUriOrDnsNeverCn) {
  auto p = Policy::Parse(R"({"identities": [
    {"identity": "spiffe://c/ns/team-a/*", "roles": ["reader"], "teams": ["team-a"]},
    {"identity": "ops.example.com", "roles": ["admin"]},
    {"identity": "cn:auditor", "roles": ["auditor"], "teams": ["team-a"]}]})");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->untyped().size(), 2u);
  EXPECT_EQ(p->untyped()[0].written, "spiffe://c/ns/team-a/*");
  EXPECT_EQ(p->untyped()[0].read_as, "uri:spiffe://c/ns/team-a/*");
  EXPECT_EQ(p->untyped()[1].written, "ops.example.com");
  EXPECT_EQ(p->untyped()[1].read_as, "dns:ops.example.com");
  EXPECT_EQ(p->Find("dns:ops.example.com")->identity, "dns:ops.example.com");
  EXPECT_EQ(p->Find("cn:ops.example.com"), nullptr);
  EXPECT_EQ(p->Find("uri:spiffe://c/ns/team-a/sa/x")->identity, "uri:spiffe://c/ns/team-a/*");
  EXPECT_EQ(p->Find("cn:auditor")->identity, "cn:auditor");
}

TEST(Policy, RolesAndTeams) {
  auto p = Policy::Parse(kPolicy);
  ASSERT_TRUE(p.ok());
  const std::string gw = "uri:spiffe://c/ns/team-a/sa/gateway";
  EXPECT_TRUE(p->Check(gw, Action::kAppend, "team-a").ok());
  absl::Status s = p->Check(gw, Action::kAppend, "team-b");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "identity '" + gw + "' may not append for team 'team-b'");
  s = p->Check(gw, Action::kQuery, "team-a");
  EXPECT_EQ(s.message(), "identity '" + gw + "' may not query (its roles do not allow it)");
  // The exact rule applies alone: the gateway is not also a reader.
  const std::string worker = "uri:spiffe://c/ns/team-a/sa/worker";
  EXPECT_TRUE(p->Check(worker, Action::kQuery, "team-b").ok());
  EXPECT_THAT(
      p->Check(worker, Action::kQuery, "team-c"),
      StatusIs(absl::StatusCode::kPermissionDenied, "identity '" + worker + "' may not query for team 'team-c'"));
  EXPECT_THAT(p->Check(worker, Action::kReadEntries, "team-a"),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "identity '" + worker + "' may not read entries and proofs (its roles do not allow it)"));
  EXPECT_THAT(p->Check(worker, Action::kAppend, "team-a"),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "identity '" + worker + "' may not append (its roles do not allow it)"));
  const std::string auditor = "uri:spiffe://c/ns/audit/sa/x";
  for (Action a : {Action::kQuery, Action::kReadEntries, Action::kExport}) {
    EXPECT_TRUE(p->Check(auditor, a, "any-team").ok());
    EXPECT_TRUE(p->CoversAllTeams(auditor, a));
  }
  EXPECT_THAT(p->Check(auditor, Action::kAppend, "team-a"),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "identity '" + auditor + "' may not append (its roles do not allow it)"));
  EXPECT_THAT(p->Check(auditor, Action::kAdminister, ""),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "identity '" + auditor + "' may not administer (its roles do not allow it)"));
  EXPECT_FALSE(p->CoversAllTeams(worker, Action::kQuery));
  for (Action a : {Action::kAppend, Action::kQuery, Action::kReadEntries, Action::kExport, Action::kAdminister}) {
    EXPECT_TRUE(p->Check("dns:ops", a, "t").ok());
  }
  s = p->Check("dns:nobody", Action::kQuery, "team-a");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "identity 'dns:nobody' has no rule in the policy");
}

TEST(Policy, MetricsMayBeScrapedByTheMetricsRoleAdminAndReadersOfEveryTeam) {
  auto p = Policy::Parse(R"({"identities": [
      {"identity": "dns:prom", "roles": ["metrics"]},
      {"identity": "dns:ops", "roles": ["admin"]},
      {"identity": "dns:all-readers", "roles": ["reader"], "teams": ["*"]},
      {"identity": "dns:all-auditors", "roles": ["auditor"], "teams": ["*"]},
      {"identity": "dns:all-emitters", "roles": ["emitter"], "teams": ["*"]},
      {"identity": "dns:auditor-a", "roles": ["auditor"], "teams": ["team-a"]}]})");
  ASSERT_TRUE(p.ok()) << p.status();
  for (const char* may : {"dns:prom", "dns:ops", "dns:all-readers", "dns:all-auditors"}) {
    EXPECT_TRUE(p->Find(may)->Permits(Action::kScrapeMetrics)) << may;
  }
  for (const char* may_not : {"dns:all-emitters", "dns:auditor-a"}) {
    EXPECT_FALSE(p->Find(may_not)->Permits(Action::kScrapeMetrics)) << may_not;
  }
  // The metrics role opens nothing else.
  const std::pair<Action, std::string> others[] = {{Action::kAppend, "append"},
                                                   {Action::kQuery, "query"},
                                                   {Action::kReadEntries, "read entries and proofs"},
                                                   {Action::kExport, "export"},
                                                   {Action::kAdminister, "administer"}};
  for (const auto& [a, name] : others) {
    EXPECT_THAT(p->Check("dns:prom", a, "team-a"),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         "identity 'dns:prom' may not " + name + " (its roles do not allow it)"));
  }
}

TEST(Policy, ErrorsNameTheFieldAndRule) {
  struct Case {
    const char* json;
    const char* message;
  } cases[] = {
      {"[]", "policy: (top level): must be an object with \"identities\""},
      {"{}", "policy: identities: required"},
      {R"({"identities": [], "extra": 1})", "policy: extra: unknown key (identities, trusted_proxies)"},
      {R"({"identities": [{"identity": "user:eve smith", "roles": ["admin"]}]})",
       "policy: identities[0].identity: holds a space"},
      {R"({"identities": [{"identity": "user:a,b*", "roles": ["admin"]}]})",
       "policy: identities[0].identity: holds a comma"},
      {R"({"identities": [], "trusted_proxies": {}})", "policy: trusted_proxies: must be an array of proxies"},
      {R"({"identities": [], "trusted_proxies": [{"identity": "spiffe://p", "user_header": "X-U"}]})",
       "policy: trusted_proxies[0].identity: must be the proxy certificate's identity, with its kind (uri:, dns:, "
       "cn:)"},
      {R"({"identities": [], "trusted_proxies": [{"identity": "user:p", "user_header": "X-U"}]})",
       "policy: trusted_proxies[0].identity: must be the proxy certificate's identity, with its kind (uri:, dns:, "
       "cn:)"},
      {R"({"identities": [], "trusted_proxies": [{"identity": "uri:spiffe://p/*", "user_header": "X-U"}]})",
       "policy: trusted_proxies[0].identity: must be one identity, exactly (no '*')"},
      {R"({"identities": [], "trusted_proxies": [{"identity": "cn:p", "user_header": "X U"}]})",
       "policy: trusted_proxies[0].user_header: must be a header's name (an RFC 9110 token, at most 64 bytes)"},
      {R"({"identities": [], "trusted_proxies": [{"identity": "cn:p"}]})",
       "policy: trusted_proxies[0].user_header: required"},
      {R"({"identities": [], "trusted_proxies": [{"identity": "cn:p", "user_header": "X-U", "without_user": "me"}]})",
       "policy: trusted_proxies[0].without_user: must be \"refuse\" or \"proxy\""},
      {R"({"identities": [], "trusted_proxies": [{"identity": "cn:p", "user_header": "X-U", "header": "X"}]})",
       "policy: trusted_proxies[0].header: unknown key (identity, user_header, without_user)"},
      {R"({"identities": [], "trusted_proxies": [{"identity": "cn:p", "user_header": "X-U"},
                                                  {"identity": "cn:p", "user_header": "X-V"}]})",
       "policy: trusted_proxies[1].identity: 'cn:p' is listed already"},
      {R"({"identities": [{"identity": "a", "roles": ["emiter"], "teams": ["t"]}]})",
       "policy: identities[0].roles[0]: unknown role 'emiter' (emitter, reader, auditor, admin, metrics)"},
      {R"({"identities": [{"identity": "a", "roles": ["metrics", "reader"]}]})",
       "policy: identities[0].teams: required: the teams the roles apply to, or [\"*\"]"},
      {R"({"identities": [{"identity": "a", "roles": ["reader"]}]})",
       "policy: identities[0].teams: required: the teams the roles apply to, or [\"*\"]"},
      {R"({"identities": [{"identity": "a*b", "roles": ["admin"]}]})",
       "policy: identities[0].identity: '*' may only end an identity (a prefix pattern)"},
      {R"({"identities": [{"identity": "a", "roles": ["admin"]}, {"identity": "dns:a", "roles": ["admin"]}]})",
       "policy: identities[1].identity: 'dns:a' has a rule already"},
      {R"({"identities": [{"identity": "cn:", "roles": ["admin"]}]})",
       "policy: identities[0].identity: names no identity after 'cn:'"},
      {R"({"identities": [{"identity": "cn:a\u0007", "roles": ["admin"]}]})",
       "policy: identities[0].identity: holds a control character (U+0007)"},
      {R"({"identities": [{"identity": "a", "roles": ["admin"], "team": ["x"]}]})",
       "policy: identities[0].team: unknown key (identity, roles, teams)"},
      {R"({"identities": [{"roles": ["admin"]}]})", "policy: identities[0].identity: required"},
      {R"({"identities": [{"identity": "a", "roles": []}]})",
       "policy: identities[0].roles: must name at least one role"},
      {R"({"identities": [{"identity": "a", "roles": ["reader"], "teams": [""]}]})",
       "policy: identities[0].teams[0]: must not be empty"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(Policy::Parse(c.json), StatusIs(absl::StatusCode::kInvalidArgument, c.message)) << c.json;
  }
  EXPECT_EQ(Policy::Parse("{").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Policy::Load("/nonexistent/policy.json").status().code(), absl::StatusCode::kNotFound);
}

constexpr char kProxied[] = R"({"identities": [
  {"identity": "cn:auditor", "roles": ["auditor"], "teams": ["team-a"]},
  {"identity": "cn:gateway", "roles": ["emitter"], "teams": ["team-a"]},
  {"identity": "uri:spiffe://c/proxy-b", "roles": ["reader"], "teams": ["team-b"]},
  {"identity": "user:alice@example.com", "roles": ["reader"], "teams": ["team-a"]},
  {"identity": "user:ops/*", "roles": ["metrics"]}],
 "trusted_proxies": [
  {"identity": "uri:spiffe://c/proxy", "user_header": "X-Forwarded-Email"},
  {"identity": "uri:spiffe://c/proxy-b", "user_header": "Remote-User", "without_user": "proxy"}]})";

using Headers = std::map<std::string, std::string>;

TEST(Proxy, ATrustedProxyNamesAUserOfThePolicy) {
  auto p = Policy::Parse(kProxied);
  ASSERT_TRUE(p.ok()) << p.status();
  auto alice = ActingIdentity(&*p, "uri:spiffe://c/proxy", Headers{{"x-forwarded-email", "alice@example.com"}});
  ASSERT_TRUE(alice.ok()) << alice.status();
  EXPECT_EQ(alice->identity, "user:alice@example.com");
  EXPECT_EQ(alice->via, "uri:spiffe://c/proxy");
  EXPECT_TRUE(p->Check(alice->identity, Action::kQuery, "team-a").ok());
  auto ops = ActingIdentity(&*p, "uri:spiffe://c/proxy-b", Headers{{"remote-user", "ops/carol"}});
  ASSERT_TRUE(ops.ok()) << ops.status();
  EXPECT_EQ(ops->identity, "user:ops/carol");
  // A proxy's other user headers are its own business: only its own names the user.
  auto other = ActingIdentity(&*p, "uri:spiffe://c/proxy",
                              Headers{{"x-forwarded-email", "alice@example.com"}, {"x-forwarded-user", "root"}});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->identity, "user:alice@example.com");
}

TEST(Proxy, AProxyThatNamesNoUserIsRefusedUnlessItMayActAsItself) {
  auto p = Policy::Parse(kProxied);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(
      ActingIdentity(&*p, "uri:spiffe://c/proxy", Headers{}),
      StatusIs(absl::StatusCode::kUnauthenticated,
               "the proxy sent no user: no X-Forwarded-Email header from trusted proxy 'uri:spiffe://c/proxy'"));
  auto itself = ActingIdentity(&*p, "uri:spiffe://c/proxy-b", Headers{});
  ASSERT_TRUE(itself.ok()) << itself.status();
  EXPECT_EQ(itself->identity, "uri:spiffe://c/proxy-b");
  EXPECT_EQ(itself->via, "");
}

TEST(Proxy, AUserNameIsCheckedStrictlyAndMustHaveARule) {
  auto p = Policy::Parse(kProxied);
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string rule = " (a user is 1 to 254 bytes of UTF-8 without spaces, commas or control characters)";
  struct Case {
    std::string value, message;
  } cases[] = {
      {"", "X-Forwarded-Email: the user's name is empty" + rule},
      {"eve smith@example.com", "X-Forwarded-Email: the user's name holds a space" + rule},
      {"alice@example.com, admin@example.com", "X-Forwarded-Email: the user's name holds a comma" + rule},
      {"alice\x1b[31m@example.com", "X-Forwarded-Email: the user's name holds a control character (U+001B)" + rule},
      {"adm\xe2\x80\xaein@example.com", "X-Forwarded-Email: the user's name holds a control character (U+202E)" + rule},
      {"\xff@example.com", "X-Forwarded-Email: the user's name is not valid UTF-8" + rule},
      {std::string(243, 'a') + "@example.com", "X-Forwarded-Email: the user's name is longer than 254 bytes" + rule},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(ActingIdentity(&*p, "uri:spiffe://c/proxy", Headers{{"x-forwarded-email", c.value}}),
                StatusIs(absl::StatusCode::kInvalidArgument, c.message))
        << c.value;
  }
  EXPECT_TRUE(
      ActingIdentity(&*p, "uri:spiffe://c/proxy-b", Headers{{"remote-user", "ops/" + std::string(250, 'a')}}).ok());
  EXPECT_THAT(ActingIdentity(&*p, "uri:spiffe://c/proxy", Headers{{"x-forwarded-email", "bob@example.com"}}),
              StatusIs(absl::StatusCode::kPermissionDenied, "identity 'user:bob@example.com' may read no team"));
}

// The attack: a caller with a valid certificate of its own, or any caller
// in plain text, names a user the way a proxy would.
TEST(Proxy, AUserHeaderFromAnyoneButATrustedProxyIsRefused) {
  auto p = Policy::Parse(kProxied);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(ActingIdentity(&*p, "cn:auditor", Headers{{"x-forwarded-email", "alice@example.com"}}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "X-Forwarded-Email: only a trusted proxy may name the user, and identity 'cn:auditor' is not "
                       "one"));
  // Another proxy's header, and headers proxies commonly send that the policy does not name.
  EXPECT_THAT(ActingIdentity(&*p, "cn:auditor", Headers{{"remote-user", "ops/carol"}}),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       "Remote-User: only a trusted proxy may name the user, and identity 'cn:auditor' is not one"));
  for (std::string_view header : kCommonUserHeaders) {
    std::string name = absl::AsciiStrToLower(std::string(header));
    EXPECT_EQ(ActingIdentity(&*p, "cn:auditor", Headers{{name, "x"}}).status().code(),
              absl::StatusCode::kPermissionDenied)
        << header;
    EXPECT_THAT(ActingIdentity(nullptr, "", Headers{{name, "x"}}),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         std::string(header) +
                             ": only a trusted proxy may name the user, and in plain text there is none (every "
                             "caller is 'local')"));
  }
  auto plain = ActingIdentity(&*p, "cn:auditor", Headers{{"x-forwarded-for", "10.0.0.1"}});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->identity, "cn:auditor");
  EXPECT_EQ(plain->via, "");
}

TEST(Policy, ACallerThatMayQueryNoTeamIsToldSo) {
  auto p = Policy::Parse(kProxied);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->CheckReadsSomeTeam("cn:auditor").ok());
  EXPECT_TRUE(p->CheckReadsSomeTeam("user:alice@example.com").ok());
  EXPECT_THAT(p->CheckReadsSomeTeam("cn:gateway"),
              StatusIs(absl::StatusCode::kPermissionDenied, "identity 'cn:gateway' may read no team"));
  EXPECT_THAT(p->CheckReadsSomeTeam("user:ops/carol"),
              StatusIs(absl::StatusCode::kPermissionDenied, "identity 'user:ops/carol' may read no team"));
  EXPECT_THAT(p->CheckReadsSomeTeam("cn:nobody"),
              StatusIs(absl::StatusCode::kPermissionDenied, "identity 'cn:nobody' may read no team"));
}

// No certificate names a "user:" identity, and a certificate whose name is
// spelled like one is not that user.
TEST(Proxy, NoCertificateIsAUser) {
  auto p = Policy::Parse(kProxied);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Find("cn:user:alice@example.com"), nullptr);
  EXPECT_EQ(p->Find("dns:user:alice@example.com"), nullptr);
  EXPECT_EQ(p->FindProxy("cn:uri:spiffe://c/proxy"), nullptr);
  EXPECT_EQ(p->FindProxy("user:uri:spiffe://c/proxy"), nullptr);
}

// A self-signed certificate with the given SANs ("URI:..", "DNS:..") and CN.
std::string Certificate(const std::string& sans, const std::string& cn) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"),
                                                          EVP_PKEY_free);
  std::unique_ptr<X509, decltype(&X509_free)> x(X509_new(), X509_free);
  X509_set_version(x.get(), 2);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), 0);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), 3600);
  X509_set_pubkey(x.get(), key.get());
  X509_NAME* name = X509_get_subject_name(x.get());
  if (!cn.empty()) {
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                               0);
  }
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("test"), -1, -1, 0);
  X509_set_issuer_name(x.get(), name);
  if (!sans.empty()) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, nullptr, NID_subject_alt_name, sans.c_str());
    X509_add_ext(x.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(x.get(), key.get(), nullptr);
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, x.get());
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(n));
  BIO_free(bio);
  return pem;
}

TEST(Identity, FirstUriSanThenDnsSanThenCommonNameEachTypedByItsKind) {
  EXPECT_EQ(*tls::IdentityOfCertificate(
                Certificate("DNS:gw.example, URI:spiffe://c/ns/a/sa/gw, URI:spiffe://c/second", "cn")),
            "uri:spiffe://c/ns/a/sa/gw");
  EXPECT_EQ(*tls::IdentityOfCertificate(Certificate("DNS:gw.example, DNS:other, IP:127.0.0.1", "cn")),
            "dns:gw.example");
  EXPECT_EQ(*tls::IdentityOfCertificate(Certificate("IP:127.0.0.1", "auditor-1")), "cn:auditor-1");
  EXPECT_EQ(*tls::IdentityOfCertificate(Certificate("", "aud\xc3\xaftor")), "cn:aud\xc3\xaftor");
  // The ledger's own names are out of reach.
  EXPECT_EQ(*tls::IdentityOfCertificate(Certificate("", "ledger")), "cn:ledger");
  EXPECT_EQ(*tls::IdentityOfCertificate(Certificate("DNS:in-process", "local")), "dns:in-process");
  auto none = tls::IdentityOfCertificate(Certificate("", ""));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(tls::IdentityOfCertificate("not a certificate").status().code(), absl::StatusCode::kUnauthenticated);
}

TEST(Identity, ControlCharactersAndBrokenUtf8AreRefused) {
  struct Case {
    std::string sans, cn, message;
  } cases[] = {
      {"URI:spiffe://c/a\x1b[31m", "x", "client certificate: its URI SAN holds a control character (U+001B)"},
      {"DNS:a\x7f", "x", "client certificate: its DNS SAN holds a control character (U+007F)"},
      {"", "adm\xe2\x80\xaeni", "client certificate: its subject CN holds a control character (U+202E)"},
      {"", "a\xc2\x85", "client certificate: its subject CN holds a control character (U+0085)"},
  };
  for (const Case& c : cases) {
    auto id = tls::IdentityOfCertificate(Certificate(c.sans, c.cn));
    EXPECT_EQ(id.status().code(), absl::StatusCode::kUnauthenticated) << c.message;
    EXPECT_EQ(id.status().message(), c.message);
  }
  EXPECT_EQ(tls::IdentityFault("ok/\xc3\xa9"), "");
  EXPECT_EQ(tls::IdentityFault("\xff"), "is not valid UTF-8");
  EXPECT_EQ(tls::IdentityFault("\xc0\xaf"), "is not valid UTF-8");          // overlong '/'
  EXPECT_EQ(tls::IdentityFault("\xed\xa0\x80"), "is not valid UTF-8");      // a surrogate
  EXPECT_EQ(tls::IdentityFault("\xf4\x90\x80\x80"), "is not valid UTF-8");  // beyond U+10FFFF
  EXPECT_EQ(tls::IdentityFault("a\xe2\x80"), "is not valid UTF-8");         // truncated
  EXPECT_EQ(tls::IdentityFault(std::string("a\0b", 3)), "holds a control character (U+0000)");
}

TEST(Gate, RefreshMovesACallerToTheNewPolicyAndSubscribersHearOfIt) {
  auto before = std::make_shared<const Policy>(*Policy::Parse(kPolicy));
  auto after = std::make_shared<const Policy>(*Policy::Parse(R"({"identities": [
    {"identity": "dns:ops", "roles": ["admin"]}]})"));
  Gate gate({.tls = true, .limits = {}}, before);
  Caller gateway{"uri:spiffe://c/ns/team-a/sa/gateway", before, {}};
  Caller plain{"local", nullptr, {}};
  int runs = 0;
  uint64_t once = 0;
  once = gate.Subscribe([&] {
    ++runs;
    gate.Unsubscribe(once);  // a subscriber may leave from inside its run
  });
  uint64_t every = gate.Subscribe([&] { ++runs; });
  gate.SetPolicy(after);
  EXPECT_EQ(runs, 2);
  EXPECT_TRUE(gateway.CheckRole(Action::kAppend).ok());  // still under the policy it was admitted with
  gate.Refresh(&gateway);
  absl::Status s = gateway.CheckRole(Action::kAppend);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "identity 'uri:spiffe://c/ns/team-a/sa/gateway' has no rule in the policy");
  gate.Refresh(&plain);
  EXPECT_EQ(plain.policy, nullptr);
  gate.SetPolicy(before);
  EXPECT_EQ(runs, 3);
  gate.Unsubscribe(every);
  gate.SetPolicy(after);
  EXPECT_EQ(runs, 3);
}

// Once Unsubscribe returns, the subscriber is not running, even when
// SetPolicy runs it on another thread at that moment: what it captured may
// go.
TEST(Gate, UnsubscribeWaitsForARunUnderWayOnAnotherThread) {
  Gate gate({}, nullptr);
  std::atomic<bool> started = false, finished = false;
  uint64_t id = gate.Subscribe([&] {
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    finished = true;
  });
  std::thread set([&] { gate.SetPolicy(nullptr); });
  while (!started) std::this_thread::yield();
  gate.Unsubscribe(id);
  EXPECT_TRUE(finished);
  set.join();
}

TEST(Limiter, ConcurrencyPerIdentity) {
  Limiter limiter({.rate = 0, .concurrency = 2});
  auto a1 = limiter.Enter("a");
  auto a2 = limiter.Enter("a");
  ASSERT_TRUE(a1.ok() && a2.ok());
  int64_t hold_us = 0;
  auto a3 = limiter.Enter("a", &hold_us);
  EXPECT_EQ(a3.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(hold_us, Limiter::kBusyHoldUs);
  EXPECT_EQ(a3.status().message(), "identity 'a' has 2 calls open, its limit; retry when one ends");
  EXPECT_TRUE(limiter.Enter("b").ok());  // another identity is not affected
  *a1 = Limiter::Permit();               // one call ends
  EXPECT_TRUE(limiter.Enter("a").ok());
}

TEST(Limiter, RatePerIdentity) {
  int64_t now = 1'000'000;
  Limiter limiter({.rate = 100, .concurrency = 0}, [&] { return now; });
  EXPECT_TRUE(limiter.Spend("a", 60).ok());
  EXPECT_TRUE(limiter.Spend("a", 40).ok());
  int64_t hold_us = 0;
  absl::Status s = limiter.Spend("a", 5, &hold_us);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(hold_us, 50'001);  // 5 units at 100 a second
  const auto over = StatusIs(absl::StatusCode::kResourceExhausted,
                             "identity 'a' is over its rate of 100 receipts and calls a second; back off and retry");
  EXPECT_THAT(limiter.Spend("a", 1000, &hold_us), over);
  EXPECT_EQ(hold_us, Limiter::kMaxHoldUs);
  EXPECT_TRUE(limiter.Spend("b", 100).ok());  // its own bucket
  now += 100'000;                             // 0.1 s: 10 units back
  EXPECT_TRUE(limiter.Spend("a", 10).ok());
  EXPECT_THAT(limiter.Spend("a", 1), over);
  // A batch above one second's worth passes only from a full bucket, and
  // leaves it in debt.
  now += 10'000'000;
  EXPECT_TRUE(limiter.Spend("a", 250).ok());
  now += 1'000'000;
  EXPECT_THAT(limiter.Spend("a", 1), over);  // -150 + 100 = -50
  now += 1'510'000;
  EXPECT_TRUE(limiter.Spend("a", 100).ok());
}

}  // namespace
}  // namespace ledger::auth
