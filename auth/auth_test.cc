#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>

#include "auth/identity.h"
#include "auth/limiter.h"
#include "auth/policy.h"
#include "gtest/gtest.h"

namespace ledger::auth {
namespace {

constexpr char kPolicy[] = R"({"identities": [
  {"identity": "spiffe://c/ns/team-a/sa/gateway", "roles": ["emitter"], "teams": ["team-a"]},
  {"identity": "spiffe://c/ns/team-a/*", "roles": ["reader"], "teams": ["team-a", "team-b"]},
  {"identity": "spiffe://c/*", "roles": ["auditor"], "teams": ["*"]},
  {"identity": "ops", "roles": ["admin"]}]})";

TEST(Policy, ExactRuleWinsThenLongestPrefix) {
  auto p = Policy::Parse(kPolicy);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Find("spiffe://c/ns/team-a/sa/gateway")->identity, "spiffe://c/ns/team-a/sa/gateway");
  EXPECT_EQ(p->Find("spiffe://c/ns/team-a/sa/worker")->identity, "spiffe://c/ns/team-a/*");
  EXPECT_EQ(p->Find("spiffe://c/ns/audit/sa/x")->identity, "spiffe://c/*");
  EXPECT_EQ(p->Find("spiffe://other"), nullptr);
  EXPECT_EQ(p->Find("op"), nullptr);
  EXPECT_EQ(p->Find("ops")->identity, "ops");
}

TEST(Policy, RolesAndTeams) {
  auto p = Policy::Parse(kPolicy);
  ASSERT_TRUE(p.ok());
  const std::string gw = "spiffe://c/ns/team-a/sa/gateway";
  EXPECT_TRUE(p->Check(gw, Action::kAppend, "team-a").ok());
  absl::Status s = p->Check(gw, Action::kAppend, "team-b");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "identity '" + gw + "' may not append for team 'team-b'");
  s = p->Check(gw, Action::kQuery, "team-a");
  EXPECT_EQ(s.message(), "identity '" + gw + "' may not query (its roles do not allow it)");
  // The exact rule applies alone: the gateway is not also a reader.
  const std::string worker = "spiffe://c/ns/team-a/sa/worker";
  EXPECT_TRUE(p->Check(worker, Action::kQuery, "team-b").ok());
  EXPECT_FALSE(p->Check(worker, Action::kQuery, "team-c").ok());
  EXPECT_FALSE(p->Check(worker, Action::kReadEntries, "team-a").ok());
  EXPECT_FALSE(p->Check(worker, Action::kAppend, "team-a").ok());
  const std::string auditor = "spiffe://c/ns/audit/sa/x";
  for (Action a : {Action::kQuery, Action::kReadEntries, Action::kExport}) {
    EXPECT_TRUE(p->Check(auditor, a, "any-team").ok());
    EXPECT_TRUE(p->CoversAllTeams(auditor, a));
  }
  EXPECT_FALSE(p->Check(auditor, Action::kAppend, "team-a").ok());
  EXPECT_FALSE(p->Check(auditor, Action::kAdminister, "").ok());
  EXPECT_FALSE(p->CoversAllTeams(worker, Action::kQuery));
  for (Action a : {Action::kAppend, Action::kQuery, Action::kReadEntries, Action::kExport, Action::kAdminister}) {
    EXPECT_TRUE(p->Check("ops", a, "t").ok());
  }
  s = p->Check("nobody", Action::kQuery, "team-a");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "identity 'nobody' has no rule in the policy");
}

TEST(Policy, MetricsMayBeScrapedByTheMetricsRoleAdminAndReadersOfEveryTeam) {
  auto p = Policy::Parse(R"({"identities": [
      {"identity": "prom", "roles": ["metrics"]},
      {"identity": "ops", "roles": ["admin"]},
      {"identity": "all-readers", "roles": ["reader"], "teams": ["*"]},
      {"identity": "all-auditors", "roles": ["auditor"], "teams": ["*"]},
      {"identity": "all-emitters", "roles": ["emitter"], "teams": ["*"]},
      {"identity": "auditor-a", "roles": ["auditor"], "teams": ["team-a"]}]})");
  ASSERT_TRUE(p.ok()) << p.status();
  for (const char* may : {"prom", "ops", "all-readers", "all-auditors"}) {
    EXPECT_TRUE(p->Find(may)->Permits(Action::kScrapeMetrics)) << may;
  }
  for (const char* may_not : {"all-emitters", "auditor-a"}) {
    EXPECT_FALSE(p->Find(may_not)->Permits(Action::kScrapeMetrics)) << may_not;
  }
  // The metrics role opens nothing else.
  for (Action a : {Action::kAppend, Action::kQuery, Action::kReadEntries, Action::kExport, Action::kAdminister}) {
    EXPECT_FALSE(p->Check("prom", a, "team-a").ok());
  }
}

TEST(Policy, ErrorsNameTheFieldAndRule) {
  struct Case {
    const char* json;
    const char* message;
  } cases[] = {
      {"[]", "policy: (top level): must be an object with \"identities\""},
      {"{}", "policy: identities: required"},
      {R"({"identities": [], "extra": 1})", "policy: extra: unknown key (identities)"},
      {R"({"identities": [{"identity": "a", "roles": ["emiter"], "teams": ["t"]}]})",
       "policy: identities[0].roles[0]: unknown role 'emiter' (emitter, reader, auditor, admin, metrics)"},
      {R"({"identities": [{"identity": "a", "roles": ["metrics", "reader"]}]})",
       "policy: identities[0].teams: required: the teams the roles apply to, or [\"*\"]"},
      {R"({"identities": [{"identity": "a", "roles": ["reader"]}]})",
       "policy: identities[0].teams: required: the teams the roles apply to, or [\"*\"]"},
      {R"({"identities": [{"identity": "a*b", "roles": ["admin"]}]})",
       "policy: identities[0].identity: '*' may only end an identity (a prefix pattern)"},
      {R"({"identities": [{"identity": "a", "roles": ["admin"]}, {"identity": "a", "roles": ["admin"]}]})",
       "policy: identities[1].identity: 'a' has a rule already"},
      {R"({"identities": [{"identity": "a", "roles": ["admin"], "team": ["x"]}]})",
       "policy: identities[0].team: unknown key (identity, roles, teams)"},
      {R"({"identities": [{"roles": ["admin"]}]})", "policy: identities[0].identity: required"},
      {R"({"identities": [{"identity": "a", "roles": []}]})",
       "policy: identities[0].roles: must name at least one role"},
      {R"({"identities": [{"identity": "a", "roles": ["reader"], "teams": [""]}]})",
       "policy: identities[0].teams[0]: must not be empty"},
  };
  for (const Case& c : cases) {
    auto p = Policy::Parse(c.json);
    ASSERT_FALSE(p.ok()) << c.json;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(p.status().message(), c.message) << c.json;
  }
  EXPECT_EQ(Policy::Parse("{").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Policy::Load("/nonexistent/policy.json").status().code(), absl::StatusCode::kNotFound);
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
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
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

TEST(Identity, FirstUriSanThenDnsSanThenCommonName) {
  EXPECT_EQ(*IdentityOfCertificate(Certificate(
                "DNS:gw.example, URI:spiffe://c/ns/a/sa/gw, URI:spiffe://c/second", "cn")),
            "spiffe://c/ns/a/sa/gw");
  EXPECT_EQ(*IdentityOfCertificate(Certificate("DNS:gw.example, DNS:other, IP:127.0.0.1", "cn")),
            "gw.example");
  EXPECT_EQ(*IdentityOfCertificate(Certificate("IP:127.0.0.1", "auditor-1")), "auditor-1");
  EXPECT_EQ(*IdentityOfCertificate(Certificate("", "aud\xc3\xaftor")), "aud\xc3\xaftor");
  auto none = IdentityOfCertificate(Certificate("", ""));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(IdentityOfCertificate("not a certificate").status().code(), absl::StatusCode::kUnauthenticated);
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
  EXPECT_FALSE(limiter.Spend("a", 1000, &hold_us).ok());
  EXPECT_EQ(hold_us, Limiter::kMaxHoldUs);
  EXPECT_TRUE(limiter.Spend("b", 100).ok());  // its own bucket
  now += 100'000;                             // 0.1 s: 10 units back
  EXPECT_TRUE(limiter.Spend("a", 10).ok());
  EXPECT_FALSE(limiter.Spend("a", 1).ok());
  // A batch above one second's worth passes only from a full bucket, and
  // leaves it in debt.
  now += 10'000'000;
  EXPECT_TRUE(limiter.Spend("a", 250).ok());
  now += 1'000'000;
  EXPECT_FALSE(limiter.Spend("a", 1).ok());  // -150 + 100 = -50
  now += 1'510'000;
  EXPECT_TRUE(limiter.Spend("a", 100).ok());
}

}  // namespace
}  // namespace ledger::auth
