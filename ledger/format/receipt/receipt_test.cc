#include "ledger/format/receipt/receipt.h"

#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace ledger::receipt {
namespace {

Receipt Parse(std::string_view json) {
  auto r = FromJsonText(json);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : Receipt();
}

constexpr char kStart[] = R"({"receipt_id":"r-1","kind":"agent_start","team":"team-a","run_id":"run-1",)"
                          R"("step_id":"s1","occurred_at_us":1767225600000000,"decision":"allow",)"
                          R"("timeout_ms":120000})";

TEST(ReceiptTest, CanonicalFormSortsKeysAndAppliesDefaultAttempt) {
  Receipt r = Parse(kStart);
  auto c = Canonicalize(r, Author::kEmitter);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, R"({"attempt":1,"decision":"allow","kind":"agent_start",)"
                R"("occurred_at_us":1767225600000000,"receipt_id":"r-1",)"
                R"("run_id":"run-1","step_id":"s1","team":"team-a","timeout_ms":120000})");
}

TEST(ReceiptTest, ZeroIntegersAreWrittenEmptyStringsOmitted) {
  Receipt r = Parse(R"({"receipt_id":"m","kind":"model_call","team":"t","run_id":"r",)"
                    R"("occurred_at_us":5,"route":"x","decision":"deny","input_tokens":0,)"
                    R"("cost_micros":0,"provider":""})");
  auto c = Canonicalize(r, Author::kEmitter);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, R"({"attempt":1,"cost_micros":0,"decision":"deny","input_tokens":0,)"
                R"("kind":"model_call","occurred_at_us":5,"receipt_id":"m",)"
                R"("route":"x","run_id":"r","team":"t"})");
}

TEST(ReceiptTest, EnumsUseTheirJsonNames) {
  Receipt r = Parse(R"({"receipt_id":"e","kind":"agent_exec","team":"t","run_id":"r","step_id":"s",)"
                    R"("occurred_at_us":5,"start_receipt_id":"r-1","status":"timed_out"})");
  EXPECT_EQ(r.agent_exec().status(), evidence::ledger::v1::EXEC_STATUS_TIMED_OUT);
  EXPECT_NE(Canonicalize(r, Author::kEmitter)->find(R"("status":"timed_out")"), std::string::npos);
}

TEST(ReceiptTest, CanonicalFormRoundTripsThroughJson) {
  Receipt r = Parse(R"({"receipt_id":"t:1","kind":"tool_call","team":"t","run_id":"r",)"
                    R"("occurred_at_us":5,"tool":"git","decision":"allow","status_code":200,)"
                    R"("attributes":{"z":"1","a":"2"},"trace_id":"0af7651916cd43dd8448eb211c80319c",)"
                    R"("span_id":"b7ad6b7169203331","latency_ms":12})");
  auto c = Canonicalize(r, Author::kEmitter);
  ASSERT_TRUE(c.ok()) << c.status();
  Receipt again = Parse(*c);
  auto c2 = Canonicalize(again, Author::kEmitter);
  EXPECT_EQ(*c, *c2);
  EXPECT_NE(c->find(R"("attributes":{"a":"2","z":"1"})"), std::string::npos);
}

struct Case {
  std::string name;
  std::string patch;  // JSON merge patch applied to kStart (or to `base`)
  std::string message;
  std::string base = kStart;
};

// Test output names the case rather than dumping the struct's bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ValidationTest : public testing::TestWithParam<Case> {};

TEST_P(ValidationTest, NamesTheFieldAndTheRule) {
  const Case& c = GetParam();
  nlohmann::json j = nlohmann::json::parse(c.base);
  j.merge_patch(nlohmann::json::parse(c.patch));
  auto r = FromJson(j);
  absl::Status status = r.status();
  if (r.ok()) status = Canonicalize(*r, Author::kEmitter).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), c.message);
}

const char kExec[] = R"({"receipt_id":"e","kind":"agent_exec","team":"t","run_id":"r","step_id":"s",)"
                     R"("occurred_at_us":5,"start_receipt_id":"r-1","status":"succeeded"})";
const char kModel[] = R"({"receipt_id":"m","kind":"model_call","team":"t","run_id":"r",)"
                      R"("occurred_at_us":5,"route":"x","decision":"allow"})";
const char kTool[] = R"({"receipt_id":"m","kind":"tool_call","team":"t","run_id":"r",)"
                     R"("occurred_at_us":5,"tool":"x","decision":"allow"})";

INSTANTIATE_TEST_SUITE_P(
    Contract, ValidationTest,
    testing::Values(
        Case{"NoReceiptId", R"({"receipt_id":""})", "receipt_id: required, 1-128 bytes of [A-Za-z0-9._:-]"},
        Case{"ReceiptIdBadChar", R"({"receipt_id":"a b"})", "receipt_id: 'a b' is not 1-128 bytes of [A-Za-z0-9._:-]"},
        Case{"ReceiptIdTooLong", "{\"receipt_id\":\"" + std::string(129, 'a') + "\"}",
             "receipt_id: '" + std::string(64, 'a') + "...' (129 bytes) is not 1-128 bytes of [A-Za-z0-9._:-]"},
        Case{"ReceiptIdInTheLedgersNamespace", R"({"receipt_id":"ledger.unknown.7"})",
             "receipt_id: 'ledger.unknown.7' is in the ledger's namespace: ids starting with 'ledger.' are "
             "written by the ledger only"},
        Case{"ReceiptIdThatIsTheNamespaceAlone", R"({"receipt_id":"ledger."})",
             "receipt_id: 'ledger.' is in the ledger's namespace: ids starting with 'ledger.' are "
             "written by the ledger only"},
        Case{"NoKind", R"({"kind":null})",
             "kind: required, one of agent_start, agent_exec, model_call, tool_call, step_unknown, leader_epoch, "
             "key_rotation, redaction, retention"},
        Case{"UnknownKind", R"({"kind":"agent_stop"})",
             "kind: 'agent_stop' is not one of agent_start, agent_exec, model_call, tool_call, step_unknown, "
             "leader_epoch, key_rotation, redaction, retention"},
        Case{"KindNotAString", R"({"kind":7})",
             "kind: must be a string, one of agent_start, agent_exec, model_call, tool_call, step_unknown, "
             "leader_epoch, key_rotation, redaction, retention"},
        Case{"KeyRotationFromEmitter",
             R"({"kind":"key_rotation","decision":null,"timeout_ms":null,"old_key":"a","new_key":"b","note":"c"})",
             "kind: key_rotation is written by the ledger only"},
        Case{
            "StepUnknownFromEmitter",
            R"({"kind":"step_unknown","decision":null,"timeout_ms":null,"start_seq":1,"start_receipt_id":"x","deadline_us":1})",
            "kind: step_unknown is written by the ledger only"},
        Case{"NoTeam", R"({"team":""})", "team: required, 1-63 bytes of [a-z0-9-]"},
        Case{"TeamUppercase", R"({"team":"Team-A"})", "team: 'Team-A' is not 1-63 bytes of [a-z0-9-]"},
        Case{"TeamTooLong", "{\"team\":\"" + std::string(64, 'a') + "\"}",
             "team: '" + std::string(64, 'a') + "' is not 1-63 bytes of [a-z0-9-]"},
        Case{"TeamWithAnEscape", R"({"team":"a\u001b[2J"})", "team: 'a\\x1b[2J' is not 1-63 bytes of [a-z0-9-]"},
        Case{"NoRunId", R"({"run_id":""})", "run_id: required, at most 128 bytes"},
        Case{"RunIdTooLong", "{\"run_id\":\"" + std::string(129, 'r') + "\"}", "run_id: at most 128 bytes"},
        Case{"NoStepIdOnStart", R"({"step_id":""})", "step_id: required for agent_start, at most 128 bytes"},
        Case{"NoStepIdOnExec", R"({"step_id":""})", "step_id: required for agent_exec, at most 128 bytes", kExec},
        Case{"AttemptZero", R"({"attempt":0})", "attempt: must be >= 1 (default 1)"},
        // Terminal injection: an id that would erase a verifier's warning
        // and print a fake OK, or reorder what a page shows.
        Case{"StepIdWithEscapes", R"({"step_id":"step\r\u001b[2KOK: verified"})",
             "step_id: control or bidi character U+000D at byte 4"},
        Case{"RunIdWithBidi", R"({"run_id":"run-\u202egpj.exe"})",
             "run_id: control or bidi character U+202E at byte 4"},
        Case{"WorkflowWithC1", R"({"workflow":"w\u009b31m"})", "workflow: control or bidi character U+009B at byte 1"},
        Case{"AgentWithNewline", R"({"agent":"a\nb"})", "agent: control or bidi character U+000A at byte 1"},
        Case{"CredentialIdWithDel", R"({"credential_id":"c\u007f"})",
             "credential_id: control or bidi character U+007F at byte 1"},
        Case{"AgentTooLong", "{\"agent\":\"" + std::string(129, 'a') + "\"}", "agent: at most 128 bytes"},
        Case{"NoOccurredAt", R"({"occurred_at_us":null})",
             "occurred_at_us: required, microseconds since the Unix epoch, > 0"},
        Case{"OccurredAtZero", R"({"occurred_at_us":0})",
             "occurred_at_us: must be > 0 (microseconds since the Unix epoch), not 0"},
        Case{"TraceIdUpper", R"({"trace_id":"0AF7651916CD43DD8448EB211C80319C"})",
             "trace_id: must be 32 lowercase hex digits, not all zero (W3C trace context)"},
        Case{"TraceIdZero", "{\"trace_id\":\"" + std::string(32, '0') + "\"}",
             "trace_id: must be 32 lowercase hex digits, not all zero (W3C trace context)"},
        Case{"SpanIdShort", R"({"span_id":"abc"})",
             "span_id: must be 16 lowercase hex digits, not all zero (W3C trace context)"},
        Case{"AttributeKey", R"({"attributes":{"Bad":"x"}})", "attributes: keys must be 1-64 bytes of [a-z0-9_.-]"},
        Case{"AttributeValueLong", "{\"attributes\":{\"k\":\"" + std::string(1025, 'v') + "\"}}",
             "attributes.k: at most 1024 bytes"},
        Case{"AttributeNotString", R"({"attributes":{"k":1}})", "attributes.k: must be a string"},
        Case{"NoDecision", R"({"decision":null})", "decision: required, one of allow, deny"},
        Case{"BadDecision", R"({"decision":"maybe"})", "decision: must be one of allow, deny"},
        Case{"DenyWithoutReason", R"({"decision":"deny","timeout_ms":null})", "reason: required when decision is deny"},
        Case{"AllowWithoutTimeout", R"({"timeout_ms":null})",
             "timeout_ms: required when decision is allow, 1..86400000"},
        Case{"TimeoutTooLong", R"({"timeout_ms":86400001})", "timeout_ms: must be 1..86400000"},
        Case{"NegativeReserved", R"({"cost_reserved_micros":-1})", "cost_reserved_micros: must be >= 0"},
        Case{"CommandDigestUpper", "{\"command_sha256\":\"" + std::string(64, 'A') + "\"}",
             "command_sha256: must be a SHA-256 digest: 64 lowercase hex digits"},
        Case{"UnsafeInteger", R"({"cost_reserved_micros":9007199254740992})",
             "cost_reserved_micros: outside the JSON integer range +-(2^53-1)"},
        Case{"FloatInteger", R"({"timeout_ms":1.5})", "timeout_ms: must be an integer"},
        Case{"StringInteger", R"({"timeout_ms":"10"})", "timeout_ms: must be an integer"},
        Case{"UnknownField", R"({"prompt":"secret"})", "prompt: not a field of agent_start receipts"},
        Case{"FieldOfAnotherKind", R"({"status":"succeeded"})", "status: not a field of agent_start receipts"},
        Case{"NoStartReceiptId", R"({"start_receipt_id":null})",
             "start_receipt_id: required, 1-128 bytes of [A-Za-z0-9._:-]", kExec},
        Case{"BadStartReceiptId", R"({"start_receipt_id":"s 1"})",
             "start_receipt_id: 's 1' is not 1-128 bytes of [A-Za-z0-9._:-]", kExec},
        Case{"NoStatus", R"({"status":null})", "status: required, one of succeeded, failed, timed_out, killed, error",
             kExec},
        Case{"BadStatus", R"({"status":"ok"})", "status: must be one of succeeded, failed, timed_out, killed, error",
             kExec},
        Case{"OutputDigest", R"({"output_sha256":"xyz"})",
             "output_sha256: must be a SHA-256 digest: 64 lowercase hex digits", kExec},
        Case{"NegativeDuration", R"({"duration_ms":-5})", "duration_ms: must be >= 0", kExec},
        Case{"NoRoute", R"({"route":null})", "route: required", kModel},
        Case{"ModelNoDecision", R"({"decision":null})", "decision: required, one of allow, deny", kModel},
        Case{"NegativeTokens", R"({"input_tokens":-1})", "input_tokens: must be >= 0", kModel},
        Case{"StatusCode", R"({"status_code":1000})", "status_code: must be 0..999", kModel},
        Case{"NoTool", R"({"tool":null})", "tool: required", kTool},
        Case{"ToolNoDecision", R"({"decision":null})", "decision: required, one of allow, deny", kTool},
        Case{"TooBig",
             [] {
               nlohmann::json a;
               for (int i = 0; i < 17; ++i) a["k" + std::to_string(i)] = std::string(1000, 'x');
               return nlohmann::json{{"attributes", a}}.dump();
             }(),
             "receipt: canonical form is 17332 bytes, more than 16384"}),
    [](const testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(ReceiptTest, LedgerMayWriteStepUnknown) {
  Receipt r = Parse(R"({"receipt_id":"unknown-1","kind":"step_unknown","team":"t","run_id":"r",)"
                    R"("step_id":"s","occurred_at_us":9,"start_seq":0,"start_receipt_id":"r-1",)"
                    R"("deadline_us":10})");
  auto c = Canonicalize(r, Author::kLedger);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(*c, R"({"attempt":1,"deadline_us":10,"kind":"step_unknown","occurred_at_us":9,)"
                R"("receipt_id":"unknown-1","run_id":"r","start_receipt_id":"r-1",)"
                R"("start_seq":0,"step_id":"s","team":"t"})");
}

TEST(ReceiptTest, OnlyTheLedgerUsesItsNamespaceAndIdsThatOnlyLookAlikePass) {
  Receipt r = Parse(kModel);
  r.set_receipt_id("ledger.unknown.3");
  EXPECT_TRUE(Canonicalize(r, Author::kLedger).ok());
  for (const char* id : {"ledger", "ledgers.x", "Ledger.unknown.3", "my.ledger.unknown.3", "ledger-1"}) {
    r.set_receipt_id(id);
    EXPECT_TRUE(Canonicalize(r, Author::kEmitter).ok()) << id;
  }
}

TEST(ReceiptTest, JsonThatIsNotAnObject) {
  EXPECT_EQ(FromJsonText("[1]").status().message(), "receipt: must be a JSON object");
  EXPECT_EQ(FromJsonText("{").status().message(), "receipt: not valid JSON (or not UTF-8)");
  EXPECT_EQ(FromJsonText("{\"receipt_id\":\"\xff\"}").status().message(), "receipt: not valid JSON (or not UTF-8)");
}

TEST(ReceiptTest, InvalidUtf8FromProtobufIsRefused) {
  Receipt r = Parse(kStart);
  r.set_workflow("bad \xff");
  EXPECT_EQ(Canonicalize(r, Author::kEmitter).status().message(), "workflow: must be valid UTF-8");
}

// Credentials in any string field, attributes included, are refused with
// the field named; digests and opaque credential ids pass.
TEST(ReceiptTest, CredentialsAreRefusedNamingTheField) {
  const std::string tail = ": an audit log must not hold credentials; record a digest or a credential id instead";
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"reason", "-----BEGIN RSA PRIVATE KEY-----\\nMIIEow...", "a PEM private key"},
      {"reason", "-----BEGIN OPENSSH PRIVATE KEY-----", "a PEM private key"},
      {"route", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0In0.sig_nature-x", "a JWT"},
      {"reason", "sent Authorization: Bearer abcdefghijklmnop0123", "a Bearer token"},
      {"model", "AKIAIOSFODNN7EXAMPLE", "an AWS access key id"},
      {"provider", "key AIzaSyA-1234567890abcdefghijklmnopqrstu", "a Google API key"},
      {"reason", "ghp_0123456789abcdefghijABCDEFGHIJ0123", "a GitHub token"},
      {"reason", "github_pat_11ABCDEFG0123456789_abcdefghij", "a GitHub token"},
      {"reason", "sk-proj-abcdefghijklmnopqrstuvwx", "a secret API key (sk-...)"},
      {"reason", "sk_live_0123456789abcdefABCD", "a Stripe secret key"},
      {"reason", "xoxb-1234567890-abcdefghij", "a Slack token"},
      {"attributes.auth", "Bearer abcdefghijklmnop0123", "a Bearer token"},
  };
  for (const auto& [field, value, shape] : cases) {
    nlohmann::json j =
        nlohmann::json::parse(R"({"receipt_id":"m","kind":"model_call","team":"t","run_id":"r","occurred_at_us":5,)"
                              R"("route":"x","decision":"deny","reason":"policy"})");
    if (field.starts_with("attributes.")) {
      j["attributes"][field.substr(11)] = value;
    } else {
      j[field] = value;
    }
    Receipt r = Parse(j.dump());
    EXPECT_EQ(Canonicalize(r, Author::kEmitter).status().message(), field + ": looks like " + shape + tail) << value;
  }
  // Not credentials: digests, ids, words that merely contain a prefix.
  Receipt ok = Parse(R"({"receipt_id":"m","kind":"model_call","team":"t","run_id":"r","occurred_at_us":5,)"
                     R"("route":"task-1234567890abcdefghijklmn","decision":"allow","model":"AKIA-short",)"
                     R"("request_sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",)"
                     R"("provider":"Bearer","attributes":{"credential":"cred-team-code-1","note":"eyJ.x.y",)"
                     R"("pem":"-----BEGIN PUBLIC KEY-----"}})");
  auto c = Canonicalize(ok, Author::kEmitter);
  EXPECT_TRUE(c.ok()) << c.status();
  Receipt start = Parse(kStart);
  start.mutable_agent_start()->set_credential_id("cred-7f3a");
  EXPECT_TRUE(Canonicalize(start, Author::kEmitter).ok());
}

// The refusal message for `value` in `field` (a receipt field or
// "attributes.KEY"), "" when the receipt is accepted.
std::string RefusalOf(const std::string& field, const std::string& value) {
  nlohmann::json j =
      nlohmann::json::parse(R"({"receipt_id":"m","kind":"model_call","team":"t","run_id":"r","occurred_at_us":5,)"
                            R"("route":"x","decision":"deny","reason":"policy"})");
  if (field.starts_with("attributes.")) {
    j["attributes"][field.substr(11)] = value;
  } else {
    j[field] = value;
  }
  auto c = Canonicalize(Parse(j.dump()), Author::kEmitter);
  return c.ok() ? "" : std::string(c.status().message());
}

std::string Refused(const std::string& field, const std::string& shape) {
  return field + ": looks like " + shape +
         ": an audit log must not hold credentials; record a digest or a credential id instead";
}

TEST(ReceiptTest, BasicAuthorizationValuesAreRefused) {
  // base64("alice:s3cret-pass") and base64("svc:x").
  EXPECT_EQ(RefusalOf("reason", "sent Authorization: Basic YWxpY2U6czNjcmV0LXBhc3M=."),
            Refused("reason", "a Basic authorization value"));
  EXPECT_EQ(RefusalOf("attributes.auth", "basic c3ZjOng="), Refused("attributes.auth", "a Basic authorization value"));
  EXPECT_EQ(RefusalOf("attributes.auth", "BASIC YWxpY2U6czNjcmV0LXBhc3M="),
            Refused("attributes.auth", "a Basic authorization value"));
  // Prose, and base64 that does not decode to user:password.
  for (const char* ok : {"Basic auth is disabled", "basic authentication failed for the gateway", "a basic example",
                         "Basic", "Basic QUJDREVGR0g=", "Basic dXNlcm5hbWU="}) {
    EXPECT_EQ(RefusalOf("reason", ok), "") << ok;
  }
}

TEST(ReceiptTest, UrlsWithAPasswordAreRefused) {
  EXPECT_EQ(RefusalOf("attributes.db", "postgres://admin:s3cret@db.internal:5432/ledger"),
            Refused("attributes.db", "a URL with a password"));
  EXPECT_EQ(RefusalOf("attributes.target", "fetch https://bot:ghtoken123@git.example.com/repo.git failed"),
            Refused("attributes.target", "a URL with a password"));
  for (const char* ok :
       {"https://git.example.com/repo.git", "ssh://git@github.com:22/org/repo", "https://user@example.com/",
        "https://example.com:8443/a@b", "https://example.com/search?q=a:b@c", "http://:@host/", "time 12:30 @ home",
        "mailto:someone:x@example.com"}) {
    EXPECT_EQ(RefusalOf("attributes.target", ok), "") << ok;
  }
}

TEST(ReceiptTest, GitLabTokensAreRefused) {
  EXPECT_EQ(RefusalOf("reason", "token glpat-xZ7k_9Qw-Lm3Np8RtYv2"), Refused("reason", "a GitLab token"));
  for (const char* ok : {"glpat-short", "use a glpat- token", "myglpat-xZ7k_9Qw-Lm3Np8RtYv2"}) {
    EXPECT_EQ(RefusalOf("reason", ok), "") << ok;
  }
}

TEST(ReceiptTest, HuggingFaceTokensAreRefused) {
  EXPECT_EQ(RefusalOf("attributes.hub", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
            Refused("attributes.hub", "a Hugging Face token"));
  for (const char* ok :
       {"hf_transformers_version_4_46_0_with_extras", "hf_hub", "shelf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567"}) {
    EXPECT_EQ(RefusalOf("attributes.hub", ok), "") << ok;
  }
}

TEST(ReceiptTest, PgpPrivateKeyBlocksAreRefused) {
  EXPECT_EQ(RefusalOf("reason", "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF..."),
            Refused("reason", "a PGP private key block"));
  for (const char* ok :
       {"-----BEGIN PGP PUBLIC KEY BLOCK-----", "-----BEGIN PGP SIGNATURE-----", "-----BEGIN PGP MESSAGE-----"}) {
    EXPECT_EQ(RefusalOf("reason", ok), "") << ok;
  }
}

TEST(ReceiptTest, AzureSasSignaturesAreRefused) {
  const std::string sas =
      "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-01T00:00:00Z"
      "&sig=4Xq9t%2BlK0n6yZ2aF3hQ8wE1rT5uI7oP9sD4fG6hJ8k%3D";
  EXPECT_EQ(RefusalOf("attributes.target", sas), Refused("attributes.target", "an Azure SAS signature"));
  EXPECT_EQ(RefusalOf("attributes.sas", "sig=4Xq9t+lK0n6yZ2aF3hQ8wE1rT5uI7oP9sD4fG6hJ8k="),
            Refused("attributes.sas", "an Azure SAS signature"));
  for (const char* ok :
       {"design=4Xq9t+lK0n6yZ2aF3hQ8wE1rT5uI7oP9sD4fG6hJ8k=", "sig=short",
        "signature=4Xq9t+lK0n6yZ2aF3hQ8wE1rT5uI7oP9sD4fG6hJ8k=",
        "sig=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "the sig is checked"}) {
    EXPECT_EQ(RefusalOf("attributes.target", ok), "") << ok;
  }
}

TEST(ReceiptTest, BearerTokensAreRefusedInAnyCase) {
  for (const char* v :
       {"BEARER abcdefghijklmnop0123", "authorization: bearer abcdefghijklmnop0123", "BeArEr abcdefghijklmnop0123"}) {
    EXPECT_EQ(RefusalOf("attributes.auth", v), Refused("attributes.auth", "a Bearer token")) << v;
  }
  for (const char* ok : {"BEARER", "the bearer of the request", "BEARER short"}) {
    EXPECT_EQ(RefusalOf("attributes.auth", ok), "") << ok;
  }
}

// Digests, receipt ids and UUIDs never look like credentials.
TEST(ReceiptTest, DigestsIdsAndUuidsAreNotCredentials) {
  for (const char* ok :
       {"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "team-code.run-0042.step-1.model.3",
        "123e4567-e89b-12d3-a456-426614174000", "spiffe://cluster/ns/team-code/sa/gateway",
        "urn:uuid:123e4567-e89b-12d3-a456-426614174000", "cred-team-code-1", "2026-11-01T12:30:00Z"}) {
    EXPECT_EQ(RefusalOf("attributes.x", ok), "") << ok;
  }
}

TEST(ReceiptTest, KindName) {
  EXPECT_EQ(KindName(Parse(kStart)), "agent_start");
  EXPECT_EQ(KindName(Parse(kExec)), "agent_exec");
  EXPECT_EQ(KindName(Receipt()), "");
}

}  // namespace
}  // namespace ledger::receipt
