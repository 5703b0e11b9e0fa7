#include "ledger/format/receipt/receipt.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"
#include "ledger/format/canonical/canonical.h"
#include "ledger/format/receipt/internal/rules.h"
#include "ledger/format/receipt/internal/schema.h"
#include "nlohmann/json.hpp"
#include "util/text/terminal.h"

namespace ledger::receipt {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using rules::Broken;
using rules::CheckLength;
using rules::CheckPrintable;
using rules::Invalid;
using rules::IsIdChar;
using rules::IsLowerHex;
using rules::IsReceiptId;
using rules::kReceiptIdRule;
using rules::Quoted;
using schema::EnumNames;
using schema::GetSchema;
using schema::Layout;
using schema::Member;
using schema::Rule;
using schema::Schema;

std::string S(std::string_view v) { return std::string(v); }

constexpr std::string_view kTeamRule = "1-63 bytes of [a-z0-9-]";

bool IsTeam(std::string_view s) {
  return !s.empty() && s.size() <= 63 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
}

bool IsAttributeKey(std::string_view s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

// Whether `s` starts with `prefix`, ignoring the case of ASCII letters
// (`prefix` in lower case).
bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if ((s[i] | 0x20) != prefix[i]) return false;
  }
  return true;
}

// Whether `b64` (standard alphabet, padded) decodes to "user:password":
// printable ASCII with a colon after a non-empty user. Prose after the word
// "Basic" is not base64 of that shape.
bool IsBasicCredential(std::string_view b64) {
  if (b64.size() < 8 || b64.size() % 4 != 0) return false;
  auto sextet = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string plain;
  uint32_t bits = 0;
  int held = 0;
  for (size_t i = 0; i < b64.size(); ++i) {
    if (b64[i] == '=') {
      if (i + 2 < b64.size() || (i + 1 < b64.size() && b64[i + 1] != '=')) return false;
      break;
    }
    int x = sextet(b64[i]);
    if (x < 0) return false;
    bits = bits << 6 | static_cast<uint32_t>(x);
    held += 6;
    if (held >= 8) {
      held -= 8;
      char c = static_cast<char>((bits >> held) & 0xff);
      if (c < 0x20 || c > 0x7e) return false;
      plain.push_back(c);
    }
  }
  size_t colon = plain.find(':');
  return colon != std::string::npos && colon > 0;
}

// Whether the URL whose "://" is at `at` in `v` carries a password: an
// authority (up to '/', '?', '#' or a space) with "user:password@".
bool UrlHasPassword(std::string_view v, size_t at) {
  if (at == 0 || !((v[at - 1] | 0x20) >= 'a' && (v[at - 1] | 0x20) <= 'z')) return false;
  std::string_view authority = v.substr(at + 3);
  authority = authority.substr(0, std::min(authority.find_first_of("/?# \t\n"), authority.size()));
  size_t amp = authority.rfind('@');
  if (amp == std::string_view::npos) return false;
  std::string_view userinfo = authority.substr(0, amp);
  size_t colon = userinfo.find(':');
  return colon != std::string_view::npos && colon > 0 && colon + 1 < userinfo.size();
}

// Characters of the runs that credential shapes are made of.
constexpr auto kWordChar = [](char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
};
constexpr auto kB64UrlChar = [](char c) { return kWordChar(c) || c == '_' || c == '-'; };
constexpr auto kTokenChar = [](char c) {
  return kB64UrlChar(c) || c == '.' || c == '~' || c == '+' || c == '/' || c == '=';
};
constexpr auto kB64Char = [](char c) { return kWordChar(c) || c == '+' || c == '/' || c == '='; };
constexpr auto kUpperDigitChar = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };

// The length of the run of `ok` chars at `at` in `v`.
template <typename Ok>
size_t RunAt(std::string_view v, size_t at, Ok ok) {
  size_t n = 0;
  while (at + n < v.size() && ok(v[at + n])) ++n;
  return n;
}

// The credential that starts the word at `i` in `v`, "" if none: each
// shape is anchored on its prefix.
std::string_view WordShape(std::string_view v, size_t i) {
  auto run = [v](size_t at, auto ok) { return RunAt(v, at, ok); };
  std::string_view rest = v.substr(i);
  switch (v[i]) {
    case 'e':
      if (rest.starts_with("eyJ")) {
        size_t h = run(i, kB64UrlChar);
        if (h >= 10 && i + h < v.size() && v[i + h] == '.') {
          size_t p = run(i + h + 1, kB64UrlChar);
          if (p >= 2 && i + h + 1 + p < v.size() && v[i + h + 1 + p] == '.') return "a JWT";
        }
      }
      break;
    case 'B':
    case 'b':
      if (StartsWithNoCase(rest, "bearer ") && run(i + 7, kTokenChar) >= 16) return "a Bearer token";
      if (StartsWithNoCase(rest, "basic ") && IsBasicCredential(v.substr(i + 6, run(i + 6, kB64Char)))) {
        return "a Basic authorization value";
      }
      break;
    case 'A':
      if ((rest.starts_with("AKIA") || rest.starts_with("ASIA")) && run(i + 4, kUpperDigitChar) >= 16) {
        return "an AWS access key id";
      }
      if (rest.starts_with("AIza") && run(i + 4, kB64UrlChar) >= 35) return "a Google API key";
      break;
    case 'g':
      for (std::string_view p : {"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}) {
        if (rest.starts_with(p) && run(i + 4, kWordChar) >= 30) return "a GitHub token";
      }
      if (rest.starts_with("github_pat_") && run(i + 11, kB64UrlChar) >= 22) return "a GitHub token";
      if (rest.starts_with("glpat-") && run(i + 6, kB64UrlChar) >= 20) return "a GitLab token";
      break;
    case 'h':
      if (rest.starts_with("hf_") && run(i + 3, kWordChar) >= 30) return "a Hugging Face token";
      break;
    case 's':
    case 'r':
      // A SAS token's signature: base64 of an HMAC-SHA256, URL-encoded or
      // not, as a query parameter; a hex digest there is not one.
      if (rest.starts_with("sig=") && (i == 0 || v[i - 1] == '?' || v[i - 1] == '&' || v[i - 1] == ' ')) {
        size_t n = run(i + 4, [](char x) { return kTokenChar(x) || x == '%'; });
        if (n >= 40 && !IsLowerHex(v.substr(i + 4, n), n)) return "an Azure SAS signature";
      }
      if (rest.starts_with("sk-") && run(i + 3, kB64UrlChar) >= 20) return "a secret API key (sk-...)";
      for (std::string_view p : {"sk_live_", "sk_test_", "rk_live_", "rk_test_"}) {
        if (rest.starts_with(p) && run(i + p.size(), kWordChar) >= 16) return "a Stripe secret key";
      }
      break;
    case 'x':
      if (rest.size() > 4 && rest.starts_with("xox") &&
          std::string_view("baprs").find(rest[3]) != std::string_view::npos && rest[4] == '-' &&
          run(i + 5, kB64UrlChar) >= 10) {
        return "a Slack token";
      }
      break;
    default:
      break;
  }
  return "";
}

// What a string value carries if it looks like a credential, "" if not:
// audit logs must not become stores of secrets. One pass over the value;
// each shape is anchored on a prefix that starts a word (except PEM and
// PGP blocks, URLs' user:password@ and SAS parameters).
std::string_view CredentialShape(std::string_view v) {
  for (size_t i = 0; i < v.size(); ++i) {
    std::string_view rest = v.substr(i);
    char c = v[i];
    if (c == '-') {
      if (rest.starts_with("-----BEGIN ")) {
        if (rest.find("PRIVATE KEY-----") != std::string_view::npos) return "a PEM private key";
        if (rest.find("PRIVATE KEY BLOCK-----") != std::string_view::npos) return "a PGP private key block";
      }
      continue;
    }
    if (c == ':') {
      if (rest.starts_with("://") && UrlHasPassword(v, i)) return "a URL with a password";
      continue;
    }
    if (i > 0 && kWordChar(v[i - 1])) continue;
    if (std::string_view shape = WordShape(v, i); !shape.empty()) return shape;
  }
  return "";
}

absl::Status NoCredential(std::string_view field, std::string_view v) {
  std::string_view shape = CredentialShape(v);
  if (shape.empty()) return absl::OkStatus();
  return Invalid(field, absl::StrCat("looks like ", std::string(shape),
                                     ": an audit log must not hold credentials; record a digest or a "
                                     "credential id instead"));
}

absl::Status CheckDecision(const std::string& field, evidence::ledger::v1::Decision d) {
  if (d == evidence::ledger::v1::DECISION_UNSPECIFIED) {
    return Invalid(field, "required, one of allow, deny");
  }
  return absl::OkStatus();
}

// CheckContract's steps, in the contract's order. Who and where: the
// receipt id, kind, team, run, step and the names around them.
absl::Status CheckIdentity(const Receipt& r, Author author) {
  if (!IsReceiptId(r.receipt_id())) return Broken("receipt_id", r.receipt_id(), kReceiptIdRule);
  if (author != Author::kLedger && r.receipt_id().starts_with(kLedgerIdPrefix)) {
    return Invalid("receipt_id",
                   absl::StrCat("'", r.receipt_id(), "' is in the ledger's namespace: ids starting with '",
                                S(kLedgerIdPrefix), "' are written by the ledger only"));
  }
  if (r.body_case() == Receipt::BODY_NOT_SET) {
    return Invalid("kind", absl::StrCat("required, one of ", GetSchema().kind_choices()));
  }
  if (r.has_step_unknown() && author != Author::kLedger) {
    return Invalid("kind", "step_unknown is written by the ledger only");
  }
  if (r.has_leader_epoch() && author != Author::kLedger) {
    return Invalid("kind", "leader_epoch is written by the ledger only");
  }
  if (r.has_key_rotation() && author != Author::kLedger) {
    return Invalid("kind", "key_rotation is written by the ledger only");
  }
  if (r.has_redaction() && author != Author::kLedger) {
    return Invalid("kind", "redaction is written by the ledger only");
  }
  if (r.has_retention() && author != Author::kLedger) {
    return Invalid("kind", "retention is written by the ledger only");
  }
  if (author != Author::kLedger && r.run_id().starts_with(kLedgerIdPrefix)) {
    return Invalid("run_id", absl::StrCat("'", r.run_id(), "' is in the ledger's namespace: ids starting with '",
                                          S(kLedgerIdPrefix), "' are written by the ledger only"));
  }
  if (auto s = CheckTeam("team", r.team()); !s.ok()) return s;
  if (r.run_id().empty()) return Invalid("run_id", "required, at most 128 bytes");
  if (auto s = CheckLength("run_id", r.run_id(), 128); !s.ok()) return s;
  if (auto s = CheckPrintable("run_id", r.run_id()); !s.ok()) return s;
  bool step_required = r.has_agent_start() || r.has_agent_exec();
  if (step_required && r.step_id().empty()) {
    return Invalid("step_id", absl::StrCat("required for ", S(KindName(r)), ", at most 128 bytes"));
  }
  if (auto s = CheckLength("step_id", r.step_id(), 128); !s.ok()) return s;
  if (auto s = CheckPrintable("step_id", r.step_id()); !s.ok()) return s;
  if (r.has_attempt() && r.attempt() < 1) return Invalid("attempt", "must be >= 1 (default 1)");
  if (auto s = CheckLength("workflow", r.workflow(), 128); !s.ok()) return s;
  if (auto s = CheckPrintable("workflow", r.workflow()); !s.ok()) return s;
  if (auto s = CheckLength("agent", r.agent(), 128); !s.ok()) return s;
  if (auto s = CheckPrintable("agent", r.agent()); !s.ok()) return s;
  return absl::OkStatus();
}

// When, and the trace it belongs to.
absl::Status CheckTimeAndTrace(const Receipt& r) {
  if (!r.has_occurred_at_us()) {
    return Invalid("occurred_at_us", "required, microseconds since the Unix epoch, > 0");
  }
  if (r.occurred_at_us() <= 0) {
    return Invalid("occurred_at_us",
                   absl::StrCat("must be > 0 (microseconds since the Unix epoch), not ", r.occurred_at_us()));
  }
  if (!r.trace_id().empty()) {
    if (auto s = CheckTraceId("trace_id", r.trace_id()); !s.ok()) return s;
  }
  if (!r.span_id().empty() && (!IsLowerHex(r.span_id(), 16) || r.span_id() == std::string(16, '0'))) {
    return Invalid("span_id", "must be 16 lowercase hex digits, not all zero (W3C trace context)");
  }
  return absl::OkStatus();
}

absl::Status CheckAttributes(const Receipt& r) {
  if (r.attributes_size() > 32) return Invalid("attributes", "at most 32 pairs");
  for (const auto& [k, v] : r.attributes()) {
    if (!IsAttributeKey(k)) {
      return Invalid("attributes", "keys must be 1-64 bytes of [a-z0-9_.-]");
    }
    if (v.size() > 1024) return Invalid(absl::StrCat("attributes.", k), "at most 1024 bytes");
    if (!canonical::IsUtf8(v)) return Invalid(absl::StrCat("attributes.", k), "must be valid UTF-8");
    if (auto s = NoCredential(absl::StrCat("attributes.", k), v); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The fields of the receipt's kind.
absl::Status CheckBody(const Receipt& r) {
  using evidence::ledger::v1::DECISION_ALLOW;
  using evidence::ledger::v1::DECISION_DENY;
  switch (r.body_case()) {
    case Receipt::kAgentStart: {
      const auto& b = r.agent_start();
      if (auto s = CheckDecision("decision", b.decision()); !s.ok()) return s;
      if (b.decision() == DECISION_DENY && b.reason().empty()) {
        return Invalid("reason", "required when decision is deny");
      }
      if (b.decision() == DECISION_ALLOW && !b.has_timeout_ms()) {
        return Invalid("timeout_ms", "required when decision is allow, 1..86400000");
      }
      if (b.has_timeout_ms() && (b.timeout_ms() < 1 || b.timeout_ms() > 86'400'000)) {
        return Invalid("timeout_ms", "must be 1..86400000");
      }
      if (auto s = CheckLength("credential_id", b.credential_id(), 128); !s.ok()) return s;
      if (auto s = CheckPrintable("credential_id", b.credential_id()); !s.ok()) return s;
      break;
    }
    case Receipt::kAgentExec: {
      const auto& b = r.agent_exec();
      if (!IsReceiptId(b.start_receipt_id())) return Broken("start_receipt_id", b.start_receipt_id(), kReceiptIdRule);
      if (b.status() == evidence::ledger::v1::EXEC_STATUS_UNSPECIFIED) {
        return Invalid("status", "required, one of succeeded, failed, timed_out, killed, error");
      }
      break;
    }
    case Receipt::kModelCall: {
      const auto& b = r.model_call();
      if (b.route().empty()) return Invalid("route", "required");
      if (auto s = CheckDecision("decision", b.decision()); !s.ok()) return s;
      if (b.has_status_code() && (b.status_code() < 0 || b.status_code() > 999)) {
        return Invalid("status_code", "must be 0..999");
      }
      if (auto s = CheckLength("credential_id", b.credential_id(), 128); !s.ok()) return s;
      if (auto s = CheckPrintable("credential_id", b.credential_id()); !s.ok()) return s;
      break;
    }
    case Receipt::kToolCall: {
      const auto& b = r.tool_call();
      if (b.tool().empty()) return Invalid("tool", "required");
      if (auto s = CheckDecision("decision", b.decision()); !s.ok()) return s;
      if (b.has_status_code() && (b.status_code() < 0 || b.status_code() > 999)) {
        return Invalid("status_code", "must be 0..999");
      }
      if (auto s = CheckLength("credential_id", b.credential_id(), 128); !s.ok()) return s;
      if (auto s = CheckPrintable("credential_id", b.credential_id()); !s.ok()) return s;
      break;
    }
    case Receipt::kStepUnknown: {
      const auto& b = r.step_unknown();
      if (!b.has_start_seq()) return Invalid("start_seq", "required");
      if (!IsReceiptId(b.start_receipt_id())) return Broken("start_receipt_id", b.start_receipt_id(), kReceiptIdRule);
      if (!b.has_deadline_us()) return Invalid("deadline_us", "required");
      break;
    }
    case Receipt::kLeaderEpoch: {
      const auto& b = r.leader_epoch();
      if (!b.has_epoch()) return Invalid("epoch", "required, >= 1");
      if (b.epoch() < 1) return Invalid("epoch", absl::StrCat("must be >= 1, not ", b.epoch()));
      if (b.node().empty() || b.node().size() > 64 || !std::all_of(b.node().begin(), b.node().end(), [](char c) {
            return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
          })) {
        return Broken("node", b.node(), "1-64 bytes of [A-Za-z0-9._-]");
      }
      if (!b.has_previous_size()) return Invalid("previous_size", "required, >= 0");
      if (b.previous_size() < 0) return Invalid("previous_size", absl::StrCat("must be >= 0, not ", b.previous_size()));
      if (b.previous_root().size() != 64 ||
          !std::all_of(b.previous_root().begin(), b.previous_root().end(),
                       [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); })) {
        return Broken("previous_root", b.previous_root(), "64 lower-case hex");
      }
      const std::string id = absl::StrCat(S(kLedgerIdPrefix), "epoch.", b.epoch());
      if (r.receipt_id() != id) return Invalid("receipt_id", absl::StrCat("a leader_epoch's is '", id, "'"));
      if (r.team() != kLedgerTeam) return Invalid("team", absl::StrCat("a leader_epoch's is '", S(kLedgerTeam), "'"));
      if (r.run_id() != kEpochsRun) return Invalid("run_id", absl::StrCat("a leader_epoch's is '", S(kEpochsRun), "'"));
      if (!r.step_id().empty()) return Invalid("step_id", "a leader_epoch has none");
      break;
    }
    case Receipt::kKeyRotation: {
      // The statement and its signatures are checked by whoever holds the
      // log's keys (CONTRACT section 5d): the log when it writes one, the
      // verifiers when they follow one. Here: the fields' shape.
      const auto& b = r.key_rotation();
      if (b.old_key().empty()) return Invalid("old_key", "required, a verifier key");
      if (auto s = CheckLength("old_key", b.old_key(), 512); !s.ok()) return s;
      if (b.new_key().empty()) return Invalid("new_key", "required, a verifier key");
      if (auto s = CheckLength("new_key", b.new_key(), 512); !s.ok()) return s;
      if (b.note().empty()) return Invalid("note", "required, the signed rotation statement");
      if (auto s = CheckLength("note", b.note(), 4096); !s.ok()) return s;
      const std::string number = r.receipt_id().substr(std::min(r.receipt_id().size(), kKeyRotationIdPrefix.size()));
      uint64_t n = 0;
      if (!r.receipt_id().starts_with(kKeyRotationIdPrefix) || !absl::SimpleAtoi(number, &n) || n < 1 ||
          absl::StrCat(n) != number) {
        return Invalid("receipt_id", absl::StrCat("a key_rotation's is '", S(kKeyRotationIdPrefix), "<n>', n >= 1"));
      }
      if (r.team() != kLedgerTeam) return Invalid("team", absl::StrCat("a key_rotation's is '", S(kLedgerTeam), "'"));
      if (r.run_id() != kKeysRun) return Invalid("run_id", absl::StrCat("a key_rotation's is '", S(kKeysRun), "'"));
      if (!r.step_id().empty()) return Invalid("step_id", "a key_rotation has none");
      break;
    }
    case Receipt::kRedaction:
      return rules::CheckRedaction(r);
    case Receipt::kRetention:
      return rules::CheckRetention(r);
    case Receipt::BODY_NOT_SET:
      break;
  }
  return absl::OkStatus();
}

// The rules of CONTRACT §3 that name fields, in the contract's order.
absl::Status CheckContract(const Receipt& r, Author author) {
  if (auto s = CheckIdentity(r, author); !s.ok()) return s;
  if (auto s = CheckTimeAndTrace(r); !s.ok()) return s;
  if (auto s = CheckAttributes(r); !s.ok()) return s;
  return CheckBody(r);
}

void AppendMember(const Member& m, bool* first, std::string* out) {
  if (!*first) out->push_back(',');
  *first = false;
  out->append(m.prefix);
}

// EncodeTo's members, one per field type: each appends nothing for a field
// that is unset (or empty, or zero) and, with `check`, returns the first
// rule the value breaks. "attributes" (checked by CheckContract) are sorted
// by key.
void AppendAttributes(const Receipt& r, const Member& m, bool* first, std::string* out) {
  if (r.attributes().empty()) return;
  std::vector<std::pair<std::string_view, std::string_view>> attrs(r.attributes().begin(), r.attributes().end());
  std::sort(attrs.begin(), attrs.end());
  AppendMember(m, first, out);
  out->push_back('{');
  for (size_t i = 0; i < attrs.size(); ++i) {
    if (i > 0) out->push_back(',');
    canonical::AppendString(attrs[i].first, out);
    out->push_back(':');
    canonical::AppendString(attrs[i].second, out);
  }
  out->push_back('}');
}

absl::Status AppendStringField(const Member& m, const Message& msg, bool check, std::string* scratch, bool* first,
                               std::string* out) {
  const std::string& v = msg.GetReflection()->GetStringReference(msg, m.field, scratch);
  if (v.empty()) return absl::OkStatus();
  if (check) {
    if (!canonical::IsUtf8(v)) return Invalid(m.key, "must be valid UTF-8");
    if (m.rule == Rule::kSha256 && !IsLowerHex(v, 64)) {
      return Invalid(m.key, "must be a SHA-256 digest: 64 lowercase hex digits");
    }
    if (v.size() > 1024) return Invalid(m.key, "at most 1024 bytes");
    if (m.rule != Rule::kSha256) {
      if (auto s = NoCredential(m.key, v); !s.ok()) return s;
    }
  }
  AppendMember(m, first, out);
  canonical::AppendString(v, out);
  return absl::OkStatus();
}

absl::Status AppendIntField(const Member& m, const Message& msg, bool check, bool* first, std::string* out) {
  const Reflection* rf = msg.GetReflection();
  const FieldDescriptor* f = m.field;
  int64_t v;
  if (rf->HasField(msg, f)) {
    v = rf->GetInt64(msg, f);
  } else if (f->number() == Receipt::kAttemptFieldNumber && !m.in_body) {
    v = 1;  // the default attempt is written
  } else {
    return absl::OkStatus();
  }
  if (check) {
    if (v > canonical::kMaxSafeInteger || v < -canonical::kMaxSafeInteger) {
      return Invalid(m.key, "outside the JSON integer range +-(2^53-1)");
    }
    if (m.rule == Rule::kNonNegative && v < 0) return Invalid(m.key, "must be >= 0");
  }
  AppendMember(m, first, out);
  canonical::AppendInt(v, out);
  return absl::OkStatus();
}

absl::Status AppendEnumField(const Member& m, const Message& msg, bool check, bool* first, std::string* out) {
  int v = msg.GetReflection()->GetEnumValue(msg, m.field);
  if (v == 0) return absl::OkStatus();
  const EnumNames& names = GetSchema().Names(m.field->enum_type());
  if (v < 0 || v >= static_cast<int>(names.by_number.size()) || names.by_number[v].empty()) {
    if (check) return Invalid(m.key, absl::StrCat("unknown value ", v, "; one of ", names.choices));
    return absl::OkStatus();
  }
  AppendMember(m, first, out);
  canonical::AppendString(names.by_number[v], out);
  return absl::OkStatus();
}

// Writes the canonical JSON of `r`. With `check`, also applies the rules
// that follow from each set field's type and name, in key order, and stops
// at the first broken one.
absl::Status EncodeTo(const Receipt& r, bool check, std::string* out) {
  const Layout& layout = GetSchema().LayoutFor(r.body_case());
  const Message* body = layout.body ? &r.GetReflection()->GetMessage(r, layout.body) : nullptr;
  out->reserve(512);
  out->push_back('{');
  bool first = true;
  std::string scratch;
  for (const Member& m : layout.members) {
    if (m.field == nullptr) {  // "kind"
      AppendMember(m, &first, out);
      canonical::AppendString(layout.body->name(), out);
      continue;
    }
    if (m.field->is_map()) {
      AppendAttributes(r, m, &first, out);
      continue;
    }
    const Message& msg = m.in_body ? *body : r;
    absl::Status s;
    switch (m.field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        s = AppendStringField(m, msg, check, &scratch, &first, out);
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        s = AppendIntField(m, msg, check, &first, out);
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        s = AppendEnumField(m, msg, check, &first, out);
        break;
      default:
        break;
    }
    if (!s.ok()) return s;
  }
  out->push_back('}');
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckTeam(std::string_view field, std::string_view team) {
  return IsTeam(team) ? absl::OkStatus() : Broken(field, team, kTeamRule);
}

absl::Status CheckTraceId(std::string_view field, std::string_view trace_id) {
  if (IsLowerHex(trace_id, 32) && trace_id != std::string(32, '0')) return absl::OkStatus();
  return Invalid(field, "must be 32 lowercase hex digits, not all zero (W3C trace context)");
}

std::string_view KindName(const Receipt& r) {
  const Layout& layout = GetSchema().LayoutFor(r.body_case());
  return layout.body ? std::string_view(layout.body->name()) : std::string_view();
}

std::string Encode(const Receipt& r) {
  std::string out;
  EncodeTo(r, /*check=*/false, &out).IgnoreError();
  return out;
}

absl::StatusOr<std::string> Canonicalize(const Receipt& r, Author author) {
  if (auto s = CheckContract(r, author); !s.ok()) return s;
  std::string out;
  if (auto s = EncodeTo(r, /*check=*/true, &out); !s.ok()) return s;
  if (out.size() > kMaxReceiptBytes) {
    return Invalid("receipt", absl::StrCat("canonical form is ", out.size(), " bytes, more than 16384"));
  }
  return out;
}

namespace {

// The two document types FromJsonT reads: nlohmann's (any JSON a client
// sends) and canonical::Value (leaves, which are canonical by construction).
bool IsObject(const nlohmann::json& j) { return j.is_object(); }
bool IsString(const nlohmann::json& j) { return j.is_string(); }
bool IsNull(const nlohmann::json& j) { return j.is_null(); }
bool IsInteger(const nlohmann::json& j) { return j.is_number_integer(); }
bool IsAboveInt64(const nlohmann::json& j) {
  return j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
}
const std::string& StringOf(const nlohmann::json& j) { return j.get_ref<const std::string&>(); }
int64_t IntOf(const nlohmann::json& j) { return j.get<int64_t>(); }
const nlohmann::json* FindMember(const nlohmann::json& j, std::string_view key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}
template <typename Fn>
absl::Status ForEachMember(const nlohmann::json& j, Fn fn) {
  for (const auto& [key, value] : j.items()) {
    if (auto s = fn(key, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

using canonical::Value;
bool IsObject(const Value& v) { return v.type == Value::Type::kObject; }
bool IsString(const Value& v) { return v.type == Value::Type::kString; }
bool IsNull(const Value&) { return false; }
bool IsInteger(const Value& v) { return v.type == Value::Type::kInt; }
bool IsAboveInt64(const Value&) { return false; }
const std::string& StringOf(const Value& v) { return v.str; }
int64_t IntOf(const Value& v) { return v.num; }
const Value* FindMember(const Value& v, std::string_view key) { return v.Find(key); }
template <typename Fn>
absl::Status ForEachMember(const Value& v, Fn fn) {
  for (const canonical::Member& m : v.members) {
    if (auto s = fn(m.key, m.value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

template <typename J>
absl::StatusOr<Receipt> FromJsonT(const J& j) {
  const Schema& schema = GetSchema();
  if (!IsObject(j)) return Invalid("receipt", "must be a JSON object");
  const J* kind = FindMember(j, "kind");
  if (kind == nullptr) return Invalid("kind", absl::StrCat("required, one of ", schema.kind_choices()));
  if (!IsString(*kind)) return Invalid("kind", absl::StrCat("must be a string, one of ", schema.kind_choices()));
  const FieldDescriptor* body_field = schema.KindField(StringOf(*kind));
  if (body_field == nullptr) {
    return Invalid("kind", absl::StrCat(Quoted(StringOf(*kind)), " is not one of ", schema.kind_choices()));
  }
  Receipt r;
  Message* body = r.GetReflection()->MutableMessage(&r, body_field);
  const Layout& layout = schema.LayoutFor(body_field->number());
  absl::Status members = ForEachMember(j, [&](const std::string& key, const J& value) -> absl::Status {
    if (key == "kind") return absl::OkStatus();
    // The receipt's own field wins over a body field of the same name.
    const Member* found = nullptr;
    if (auto range = layout.by_key.find(key); range != layout.by_key.end()) {
      for (uint32_t i = range->second.first; i < range->second.second; ++i) {
        const Member& m = layout.members[i];
        if (m.field == nullptr) break;
        if (found == nullptr || !m.in_body) found = &m;
      }
    }
    const FieldDescriptor* f = found ? found->field : nullptr;
    Message* target = found && found->in_body ? body : &r;
    if (f == nullptr) {
      bool printable =
          key.size() <= 64 && std::all_of(key.begin(), key.end(), [](char c) { return c > 0x20 && c < 0x7f; });
      return Invalid(printable ? key : "receipt", absl::StrCat("not a field of ", body_field->name(), " receipts"));
    }
    if (IsNull(value)) return Invalid(key, "null is not allowed; omit the field");
    const Reflection* rf = target->GetReflection();
    if (f->is_map()) {
      if (!IsObject(value)) return Invalid(key, "must be an object of strings");
      return ForEachMember(value, [&](const std::string& k, const J& v) -> absl::Status {
        if (!IsString(v)) return Invalid(absl::StrCat(key, ".", k), "must be a string");
        (*r.mutable_attributes())[k] = StringOf(v);
        return absl::OkStatus();
      });
    }
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        if (!IsString(value)) return Invalid(key, "must be a string");
        rf->SetString(target, f, StringOf(value));
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        if (!IsInteger(value)) return Invalid(key, "must be an integer");
        if (IsAboveInt64(value)) return Invalid(key, "outside the JSON integer range +-(2^53-1)");
        rf->SetInt64(target, f, IntOf(value));
        break;
      case FieldDescriptor::CPPTYPE_ENUM: {
        const EnumNames& names = schema.Names(f->enum_type());
        auto it = IsString(value) ? names.by_name.find(StringOf(value)) : names.by_name.end();
        if (it == names.by_name.end()) {
          return Invalid(key, absl::StrCat("must be one of ", names.choices));
        }
        rf->SetEnumValue(target, f, it->second);
        break;
      }
      default:
        return Invalid(key, "unsupported field type");
    }
    return absl::OkStatus();
  });
  if (!members.ok()) return members;
  return r;
}

}  // namespace

absl::StatusOr<Receipt> FromJson(const nlohmann::json& j) { return FromJsonT(j); }

absl::StatusOr<Receipt> FromCanonical(const canonical::Value& v) { return FromJsonT(v); }

absl::StatusOr<Receipt> FromJsonText(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Invalid("receipt", "not valid JSON (or not UTF-8)");
  return FromJson(j);
}

Receipt LeaderEpoch(int64_t epoch, std::string_view node, uint64_t previous_size, std::string_view previous_root_hex,
                    int64_t now_us) {
  Receipt r;
  r.set_receipt_id(absl::StrCat(S(kLedgerIdPrefix), "epoch.", epoch));
  r.set_team(S(kLedgerTeam));
  r.set_run_id(S(kEpochsRun));
  r.set_attempt(1);
  r.set_occurred_at_us(now_us);
  auto* b = r.mutable_leader_epoch();
  b->set_epoch(epoch);
  b->set_node(S(node));
  b->set_previous_size(static_cast<int64_t>(previous_size));
  b->set_previous_root(S(previous_root_hex));
  return r;
}

Receipt KeyRotation(uint64_t number, std::string_view old_key, std::string_view new_key, std::string_view note,
                    int64_t now_us) {
  Receipt r;
  r.set_receipt_id(absl::StrCat(S(kKeyRotationIdPrefix), number));
  r.set_team(S(kLedgerTeam));
  r.set_run_id(S(kKeysRun));
  r.set_attempt(1);
  r.set_occurred_at_us(now_us);
  auto* b = r.mutable_key_rotation();
  b->set_old_key(S(old_key));
  b->set_new_key(S(new_key));
  b->set_note(S(note));
  return r;
}

}  // namespace ledger::receipt
