#include "ops/otlp/spans.h"

#include <zlib.h>

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "ledger/format/hash/hash.h"
#include "nlohmann/json.hpp"

namespace ledger::otlp {
namespace {

using opentelemetry::proto::common::v1::AnyValue;
using opentelemetry::proto::common::v1::KeyValue;
using KeyValues = google::protobuf::RepeatedPtrField<KeyValue>;

// ---- Decoding ----

// A JSON hex id as the base64 that protobuf's JSON reader takes for bytes.
absl::Status HexIdToBase64(nlohmann::json& id, const std::string& where) {
  if (!id.is_string()) return absl::InvalidArgumentError(absl::StrCat(where, ": must be a hex string"));
  const std::string& hex = id.get_ref<const std::string&>();
  if (hex.size() % 2 != 0) return absl::InvalidArgumentError(absl::StrCat(where, ": must be hex digits, in pairs"));
  std::string bytes;
  bytes.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    int v = 0;
    for (char c : {hex[i], hex[i + 1]}) {
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return absl::InvalidArgumentError(absl::StrCat(where, ": must be hex digits"));
      v = v * 16 + d;
    }
    bytes.push_back(static_cast<char>(v));
  }
  id = hash::Base64(bytes);
  return absl::OkStatus();
}

// The member `camel` (or `snake`) of `obj`, when it is an array; nullptr if absent.
absl::StatusOr<nlohmann::json*> ArrayMember(nlohmann::json& obj, const char* camel, const char* snake,
                                            const std::string& where) {
  if (!obj.is_object()) return absl::InvalidArgumentError(absl::StrCat(where, ": must be an object"));
  auto it = obj.find(camel);
  if (it == obj.end()) it = obj.find(snake);
  if (it == obj.end() || it->is_null()) return nullptr;
  if (!it->is_array()) return absl::InvalidArgumentError(absl::StrCat(where, ".", camel, ": must be an array"));
  return &*it;
}

absl::Status RewriteIds(nlohmann::json& obj, const std::string& where, std::initializer_list<const char*> camel,
                        std::initializer_list<const char*> snake) {
  auto c = camel.begin();
  for (auto s = snake.begin(); s != snake.end(); ++s, ++c) {
    for (const char* name : {*c, *s}) {
      auto it = obj.find(name);
      if (it == obj.end() || it->is_null()) continue;
      if (auto st = HexIdToBase64(*it, absl::StrCat(where, ".", *c)); !st.ok()) return st;
    }
  }
  return absl::OkStatus();
}

// OTLP/JSON's ids are hex, where protobuf's JSON mapping has base64: the
// ids of spans and links are rewritten in place.
absl::Status HexIdsToBase64(nlohmann::json& doc) {
  auto rss = ArrayMember(doc, "resourceSpans", "resource_spans", "body");
  if (!rss.ok()) return rss.status();
  if (*rss == nullptr) return absl::OkStatus();
  for (size_t i = 0; i < (*rss)->size(); ++i) {
    std::string rs_at = absl::StrCat("resourceSpans[", i, "]");
    auto sss = ArrayMember((**rss)[i], "scopeSpans", "scope_spans", rs_at);
    if (!sss.ok()) return sss.status();
    if (*sss == nullptr) continue;
    for (size_t j = 0; j < (*sss)->size(); ++j) {
      std::string ss_at = absl::StrCat(rs_at, ".scopeSpans[", j, "]");
      auto spans = ArrayMember((**sss)[j], "spans", "spans", ss_at);
      if (!spans.ok()) return spans.status();
      if (*spans == nullptr) continue;
      for (size_t k = 0; k < (*spans)->size(); ++k) {
        std::string at = absl::StrCat(ss_at, ".spans[", k, "]");
        nlohmann::json& span = (**spans)[k];
        auto links = ArrayMember(span, "links", "links", at);
        if (!links.ok()) return links.status();
        if (auto s =
                RewriteIds(span, at, {"traceId", "spanId", "parentSpanId"}, {"trace_id", "span_id", "parent_span_id"});
            !s.ok()) {
          return s;
        }
        for (size_t l = 0; *links != nullptr && l < (*links)->size(); ++l) {
          std::string link_at = absl::StrCat(at, ".links[", l, "]");
          if (!(**links)[l].is_object())
            return absl::InvalidArgumentError(absl::StrCat(link_at, ": must be an object"));
          if (auto s = RewriteIds((**links)[l], link_at, {"traceId", "spanId"}, {"trace_id", "span_id"}); !s.ok()) {
            return s;
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

// Deeper JSON is refused before it is parsed: the document tree is walked
// recursively (dump, destruction), and protobuf's reader stops at 100 too.
constexpr int kMaxJsonDepth = 100;

// Whether the arrays and objects of `text` nest at most kMaxJsonDepth deep
// (brackets in strings are text).
bool ShallowJson(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

absl::StatusOr<Request> DecodeJson(std::string_view body) {
  if (!ShallowJson(body)) {
    return absl::InvalidArgumentError(absl::StrCat("body: JSON nested deeper than ", kMaxJsonDepth, " levels"));
  }
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError("body: not JSON");
  if (auto s = HexIdsToBase64(doc); !s.ok()) return s;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  Request request;
  auto parsed = google::protobuf::util::JsonStringToMessage(doc.dump(), &request, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("body: not an OTLP/JSON ExportTraceServiceRequest: ", std::string(parsed.message())));
  }
  return request;
}

// ---- Mapping ----

enum class Call { kNone, kModel, kTool };

Call CallOf(std::string_view operation) {
  if (operation == "chat" || operation == "generate_content" || operation == "text_completion") return Call::kModel;
  if (operation == "execute_tool") return Call::kTool;
  return Call::kNone;
}

const AnyValue* Find(const KeyValues& attributes, std::string_view key) {
  for (const KeyValue& kv : attributes) {
    if (kv.key() == key) return &kv.value();
  }
  return nullptr;
}

// A string attribute of the span: "" when absent; an error when of another type.
absl::StatusOr<std::string> StringOf(const KeyValues& attributes, std::string_view key) {
  const AnyValue* v = Find(attributes, key);
  if (v == nullptr) return std::string();
  if (v->value_case() != AnyValue::kStringValue)
    return absl::InvalidArgumentError(absl::StrCat(std::string(key), ": must be a string"));
  return v->string_value();
}

// The first of `keys` present on the span, as a string ("" when none is).
absl::StatusOr<std::string> FirstStringOf(const KeyValues& attributes, std::initializer_list<std::string_view> keys) {
  for (std::string_view key : keys) {
    auto v = StringOf(attributes, key);
    if (!v.ok() || !v->empty()) return v;
  }
  return std::string();
}

// An integer attribute: nullopt when absent.
absl::StatusOr<std::optional<int64_t>> IntOf(const KeyValues& attributes,
                                             std::initializer_list<std::string_view> keys) {
  for (std::string_view key : keys) {
    const AnyValue* v = Find(attributes, key);
    if (v == nullptr) continue;
    if (v->value_case() != AnyValue::kIntValue)
      return absl::InvalidArgumentError(absl::StrCat(std::string(key), ": must be an integer"));
    return v->int_value();
  }
  return std::nullopt;
}

// ledger.team, ledger.run_id, ledger.step_id: on the span, else on its resource.
absl::StatusOr<std::string> LedgerAttribute(const Span& span, const Resource& resource, std::string_view key) {
  auto v = StringOf(span.attributes(), key);
  if (v.ok() && v->empty() && Find(span.attributes(), key) == nullptr) v = StringOf(resource.attributes(), key);
  if (!v.ok()) return v.status();
  if (v->empty())
    return absl::InvalidArgumentError(absl::StrCat(std::string(key), ": required on the span or its resource"));
  return v;
}

// The SHA-256 (lowercase hex) of the first of `keys` that the span carries
// as a string; "" when none is.
template <size_t N>
std::string DigestOf(const KeyValues& attributes, const std::string_view (&keys)[N]) {
  for (std::string_view key : keys) {
    const AnyValue* v = Find(attributes, key);
    if (v != nullptr && v->value_case() == AnyValue::kStringValue) return hash::Hex(hash::Sha256(v->string_value()));
  }
  return "";
}

bool AllZero(const std::string& bytes) { return bytes.find_first_not_of('\0') == std::string::npos; }

#define OTLP_ASSIGN(lhs, expr)                  \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = *std::move(lhs##_or)  // NOLINT(bugprone-macro-parentheses): lhs is the name declared

// Outcome: status_code from http.response.status_code, else from a numeric
// error.type; reason = error.type.
template <typename Body>
absl::Status FillOutcome(const Span& span, Body* body) {
  OTLP_ASSIGN(error_type, StringOf(span.attributes(), "error.type"));
  OTLP_ASSIGN(http_status, IntOf(span.attributes(), {"http.response.status_code"}));
  if (http_status.has_value()) {
    body->set_status_code(*http_status);
  } else if (error_type.size() == 3 && std::all_of(error_type.begin(), error_type.end(), ::isdigit)) {
    body->set_status_code(std::stoi(error_type));
  }
  body->set_reason(error_type);
  return absl::OkStatus();
}

absl::Status FillModelCall(const Span& span, const std::string& operation, Receipt* r) {
  auto* m = r->mutable_model_call();
  const KeyValues& a = span.attributes();
  OTLP_ASSIGN(provider, FirstStringOf(a, {"gen_ai.provider.name", "gen_ai.system"}));
  OTLP_ASSIGN(model, FirstStringOf(a, {"gen_ai.response.model", "gen_ai.request.model"}));
  OTLP_ASSIGN(input, IntOf(a, {"gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"}));
  OTLP_ASSIGN(output, IntOf(a, {"gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"}));
  m->set_provider(provider);
  m->set_model(model);
  m->set_route(operation);
  m->set_decision(evidence::ledger::v1::DECISION_ALLOW);
  if (input.has_value()) m->set_input_tokens(*input);
  if (output.has_value()) m->set_output_tokens(*output);
  m->set_request_sha256(DigestOf(a, kRequestContent));
  m->set_response_sha256(DigestOf(a, kResponseContent));
  if (span.end_time_unix_nano() >= span.start_time_unix_nano()) {
    m->set_latency_ms(static_cast<int64_t>((span.end_time_unix_nano() - span.start_time_unix_nano()) / 1'000'000));
  }
  return FillOutcome(span, m);
}

absl::Status FillToolCall(const Span& span, Receipt* r) {
  auto* t = r->mutable_tool_call();
  const KeyValues& a = span.attributes();
  OTLP_ASSIGN(tool, StringOf(a, "gen_ai.tool.name"));
  if (tool.empty()) return absl::InvalidArgumentError("gen_ai.tool.name: required for execute_tool");
  t->set_tool(tool);
  t->set_decision(evidence::ledger::v1::DECISION_ALLOW);
  t->set_request_sha256(DigestOf(a, kToolArguments));
  t->set_response_sha256(DigestOf(a, kToolResult));
  if (span.end_time_unix_nano() >= span.start_time_unix_nano()) {
    t->set_latency_ms(static_cast<int64_t>((span.end_time_unix_nano() - span.start_time_unix_nano()) / 1'000'000));
  }
  return FillOutcome(span, t);
}

absl::StatusOr<Receipt> MapSpan(const Span& span, const Resource& resource, const std::string& operation, Call call) {
  if (span.trace_id().size() != 16 || AllZero(span.trace_id())) {
    return absl::InvalidArgumentError("traceId: must be 16 bytes, not all zero");
  }
  if (span.span_id().size() != 8 || AllZero(span.span_id())) {
    return absl::InvalidArgumentError("spanId: must be 8 bytes, not all zero");
  }
  if (span.start_time_unix_nano() < 1000) return absl::InvalidArgumentError("startTimeUnixNano: required");
  Receipt r;
  r.set_receipt_id(
      absl::StrCat(std::string(kReceiptIdPrefix), hash::Hex(span.trace_id()), ".", hash::Hex(span.span_id())));
  OTLP_ASSIGN(team, LedgerAttribute(span, resource, "ledger.team"));
  OTLP_ASSIGN(run_id, LedgerAttribute(span, resource, "ledger.run_id"));
  OTLP_ASSIGN(step_id, LedgerAttribute(span, resource, "ledger.step_id"));
  r.set_team(team);
  r.set_run_id(run_id);
  r.set_step_id(step_id);
  OTLP_ASSIGN(agent, StringOf(span.attributes(), "gen_ai.agent.name"));
  r.set_agent(agent);
  r.set_occurred_at_us(static_cast<int64_t>(span.start_time_unix_nano() / 1000));
  r.set_trace_id(hash::Hex(span.trace_id()));
  r.set_span_id(hash::Hex(span.span_id()));
  absl::Status body = call == Call::kModel ? FillModelCall(span, operation, &r) : FillToolCall(span, &r);
  if (!body.ok()) return body;
  return r;
}

#undef OTLP_ASSIGN

}  // namespace

absl::StatusOr<Request> Decode(std::string_view body, Encoding encoding) {
  if (encoding == Encoding::kJson) return DecodeJson(body);
  Request request;
  if (!request.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return absl::InvalidArgumentError("body: not an OTLP protobuf ExportTraceServiceRequest");
  }
  return request;
}

absl::StatusOr<std::string> Gunzip(std::string_view body, size_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return absl::InternalError("gzip: inflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  std::string out;
  char buf[64 * 1024];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      return absl::ResourceExhaustedError(absl::StrCat("body: inflates to more than ", max_bytes, " bytes"));
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) break;  // cut short
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return absl::InvalidArgumentError("body: Content-Encoding is gzip but the body is not");
  return out;
}

std::vector<Mapped> MapSpans(const Request& request) {
  std::vector<Mapped> out;
  for (const auto& rs : request.resource_spans()) {
    for (const auto& ss : rs.scope_spans()) {
      for (const Span& span : ss.spans()) {
        const AnyValue* op = Find(span.attributes(), "gen_ai.operation.name");
        if (op == nullptr || op->value_case() != AnyValue::kStringValue) continue;
        Call call = CallOf(op->string_value());
        if (call == Call::kNone) continue;
        out.push_back({absl::StrCat("span ", hash::Hex(span.span_id()), " of trace ", hash::Hex(span.trace_id())),
                       MapSpan(span, rs.resource(), op->string_value(), call)});
      }
    }
  }
  return out;
}

std::string EncodeResponse(int64_t rejected_spans, std::string_view error_message, Encoding encoding) {
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse response;
  if (rejected_spans > 0 || !error_message.empty()) {
    response.mutable_partial_success()->set_rejected_spans(rejected_spans);
    response.mutable_partial_success()->set_error_message(std::string(error_message));
  }
  if (encoding == Encoding::kProtobuf) return response.SerializeAsString();
  nlohmann::json j = nlohmann::json::object();
  if (response.has_partial_success()) {
    // int64 as a decimal string, as protobuf's JSON mapping writes it.
    j["partialSuccess"] = {{"rejectedSpans", std::to_string(rejected_spans)},
                           {"errorMessage", std::string(error_message)}};
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string EncodeStatus(const absl::Status& status, Encoding encoding) {
  int code = static_cast<int>(status.code());
  std::string message(status.message());
  if (encoding == Encoding::kJson) {
    return nlohmann::json{{"code", code}, {"message", message}}.dump(-1, ' ', false,
                                                                     nlohmann::json::error_handler_t::replace);
  }
  auto varint = [](uint64_t v, std::string* out) {
    while (v >= 0x80) {
      out->push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out->push_back(static_cast<char>(v));
  };
  std::string out;
  if (code != 0) {
    out.push_back('\x08');
    varint(static_cast<uint64_t>(code), &out);
  }
  if (!message.empty()) {
    out.push_back('\x12');
    varint(message.size(), &out);
    out += message;
  }
  return out;
}

}  // namespace ledger::otlp
