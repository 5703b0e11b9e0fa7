#include <zlib.h>

#include <string>

#include "gtest/gtest.h"
#include "ledger/format/hash/hash.h"
#include "ops/otlp/spans.h"

namespace ledger::otlp {
namespace {

constexpr char kTrace[] = "4bf92f3577b34da6a3ce929d0e0e4736";

// An OTLP/JSON body of one resource with `spans` (JSON objects, comma-separated).
std::string Body(const std::string& resource_attributes, const std::string& spans) {
  return R"({"resourceSpans":[{"resource":{"attributes":[)" + resource_attributes +
         R"(]},"scopeSpans":[{"scope":{"name":"s"},"spans":[)" + spans + "]}]}]}";
}

std::string Str(const std::string& k, const std::string& v) {
  return R"({"key":")" + k + R"(","value":{"stringValue":")" + v + R"("}})";
}
std::string Int(const std::string& k, const std::string& v) {
  return R"({"key":")" + k + R"(","value":{"intValue":)" + v + "}}";
}

std::string SpanJson(const std::string& span_id, const std::string& attributes) {
  return R"({"traceId":")" + std::string(kTrace) + R"(","spanId":")" + span_id +
         R"(","name":"x","kind":3,"startTimeUnixNano":"1700000000123456789","endTimeUnixNano":1700000001623456789,)"
         R"("attributes":[)" +
         attributes + "]}";
}

std::vector<Mapped> MapJson(const std::string& body) {
  auto request = Decode(body, Encoding::kJson);
  EXPECT_TRUE(request.ok()) << request.status();
  return request.ok() ? MapSpans(*request) : std::vector<Mapped>{};
}

const std::string kLedger =
    Str("ledger.team", "team-a") + "," + Str("ledger.run_id", "run-1") + "," + Str("ledger.step_id", "step-1");

TEST(OtlpSpans, AChatSpanBecomesAModelCallFieldByField) {
  std::string attrs = kLedger + "," + Str("gen_ai.operation.name", "chat") + "," +
                      Str("gen_ai.provider.name", "openai") + "," + Str("gen_ai.request.model", "gpt-4o") + "," +
                      Str("gen_ai.response.model", "gpt-4o-2024-08-06") + "," +
                      Int("gen_ai.usage.input_tokens", "\"120\"") + "," + Int("gen_ai.usage.output_tokens", "45") +
                      "," + Str("gen_ai.input.messages", "the secret prompt") + "," +
                      Str("gen_ai.output.messages", "the answer") + "," + Str("gen_ai.agent.name", "planner");
  auto mapped = MapJson(Body("", SpanJson("00f067aa0ba902b7", attrs)));
  ASSERT_EQ(mapped.size(), 1u);
  EXPECT_EQ(mapped[0].span, "span 00f067aa0ba902b7 of trace 4bf92f3577b34da6a3ce929d0e0e4736");
  ASSERT_TRUE(mapped[0].receipt.ok()) << mapped[0].receipt.status();
  const Receipt& r = *mapped[0].receipt;
  EXPECT_EQ(r.receipt_id(), "otel.4bf92f3577b34da6a3ce929d0e0e4736.00f067aa0ba902b7");
  EXPECT_EQ(r.team(), "team-a");
  EXPECT_EQ(r.run_id(), "run-1");
  EXPECT_EQ(r.step_id(), "step-1");
  EXPECT_EQ(r.agent(), "planner");
  EXPECT_EQ(r.trace_id(), kTrace);
  EXPECT_EQ(r.span_id(), "00f067aa0ba902b7");
  EXPECT_EQ(r.occurred_at_us(), 1700000000123456);
  ASSERT_TRUE(r.has_model_call());
  const auto& m = r.model_call();
  EXPECT_EQ(m.provider(), "openai");
  EXPECT_EQ(m.model(), "gpt-4o-2024-08-06");
  EXPECT_EQ(m.route(), "chat");
  EXPECT_EQ(m.decision(), evidence::ledger::v1::DECISION_ALLOW);
  EXPECT_EQ(m.input_tokens(), 120);
  EXPECT_EQ(m.output_tokens(), 45);
  EXPECT_EQ(m.latency_ms(), 1500);
  EXPECT_FALSE(m.has_status_code());
  EXPECT_EQ(m.reason(), "");
  EXPECT_EQ(m.request_sha256(), hash::Hex(hash::Sha256("the secret prompt")));
  EXPECT_EQ(m.response_sha256(), hash::Hex(hash::Sha256("the answer")));
  // The content itself is nowhere in the receipt.
  EXPECT_EQ(r.DebugString().find("secret"), std::string::npos);
}

TEST(OtlpSpans, AToolSpanBecomesAToolCallWithItsErrorAsStatus) {
  std::string attrs = kLedger + "," + Str("gen_ai.operation.name", "execute_tool") + "," +
                      Str("gen_ai.tool.name", "search") + "," + Str("gen_ai.tool.call.arguments", R"({\"q\":1})") +
                      "," + Str("error.type", "503");
  auto mapped = MapJson(Body("", SpanJson("00000000000000a1", attrs)));
  ASSERT_EQ(mapped.size(), 1u);
  ASSERT_TRUE(mapped[0].receipt.ok()) << mapped[0].receipt.status();
  const auto& t = mapped[0].receipt->tool_call();
  EXPECT_EQ(t.tool(), "search");
  EXPECT_EQ(t.request_sha256(), hash::Hex(hash::Sha256("{\"q\":1}")));
  EXPECT_EQ(t.response_sha256(), "");
  EXPECT_EQ(t.status_code(), 503);
  EXPECT_EQ(t.reason(), "503");
  EXPECT_EQ(t.decision(), evidence::ledger::v1::DECISION_ALLOW);
}

TEST(OtlpSpans, ANonNumericErrorTypeIsTheReasonOnly) {
  std::string attrs = kLedger + "," + Str("gen_ai.operation.name", "text_completion") + "," +
                      Str("error.type", "timeout") + "," + Int("http.response.status_code", "504");
  auto mapped = MapJson(Body("", SpanJson("00000000000000a2", attrs)));
  ASSERT_EQ(mapped.size(), 1u);
  ASSERT_TRUE(mapped[0].receipt.ok());
  EXPECT_EQ(mapped[0].receipt->model_call().reason(), "timeout");
  EXPECT_EQ(mapped[0].receipt->model_call().status_code(), 504);
  EXPECT_EQ(mapped[0].receipt->model_call().route(), "text_completion");
}

TEST(OtlpSpans, SpansWithoutAGenAiCallAreIgnoredNotRefused) {
  std::string spans = SpanJson("00000000000000b1", kLedger) + "," +
                      SpanJson("00000000000000b2", Str("gen_ai.operation.name", "embeddings")) + "," +
                      SpanJson("00000000000000b3", Int("gen_ai.operation.name", "7"));
  EXPECT_TRUE(MapJson(Body("", spans)).empty());
}

TEST(OtlpSpans, TheLedgerAttributesComeFromTheSpanElseItsResource) {
  std::string resource =
      Str("ledger.team", "team-r") + "," + Str("ledger.run_id", "run-r") + "," + Str("ledger.step_id", "step-r");
  std::string spans =
      SpanJson("00000000000000c1", Str("gen_ai.operation.name", "chat")) + "," +
      SpanJson("00000000000000c2", Str("gen_ai.operation.name", "chat") + "," + Str("ledger.team", "team-s"));
  auto mapped = MapJson(Body(resource, spans));
  ASSERT_EQ(mapped.size(), 2u);
  EXPECT_EQ(mapped[0].receipt->team(), "team-r");
  EXPECT_EQ(mapped[0].receipt->run_id(), "run-r");
  EXPECT_EQ(mapped[1].receipt->team(), "team-s");
  EXPECT_EQ(mapped[1].receipt->step_id(), "step-r");
}

TEST(OtlpSpans, ASpanWithoutItsLedgerAttributesIsRefusedAlone) {
  std::string spans =
      SpanJson("00000000000000d1", Str("gen_ai.operation.name", "chat") + "," + Str("ledger.team", "team-a") + "," +
                                       Str("ledger.step_id", "s")) +
      "," + SpanJson("00000000000000d2", kLedger + "," + Str("gen_ai.operation.name", "execute_tool")) + "," +
      SpanJson("00000000000000d3", kLedger + "," + Str("gen_ai.operation.name", "chat")) + "," +
      SpanJson("00000000000000d4", Str("gen_ai.operation.name", "chat") + "," + Int("ledger.team", "5"));
  auto mapped = MapJson(Body("", spans));
  ASSERT_EQ(mapped.size(), 4u);
  EXPECT_EQ(mapped[0].receipt.status().message(), "ledger.run_id: required on the span or its resource");
  EXPECT_EQ(mapped[1].receipt.status().message(), "gen_ai.tool.name: required for execute_tool");
  EXPECT_TRUE(mapped[2].receipt.ok());
  EXPECT_EQ(mapped[3].receipt.status().message(), "ledger.team: must be a string");
}

TEST(OtlpSpans, BadIdsAreRefusedPerSpanOrAsABadBody) {
  std::string zero = SpanJson("0000000000000000", kLedger + "," + Str("gen_ai.operation.name", "chat"));
  auto mapped = MapJson(Body("", zero));
  ASSERT_EQ(mapped.size(), 1u);
  EXPECT_EQ(mapped[0].receipt.status().message(), "spanId: must be 8 bytes, not all zero");
  auto bad = Decode(Body("", SpanJson("00f067aa0ba902zz", "")), Encoding::kJson);
  EXPECT_EQ(bad.status().message(), "resourceSpans[0].scopeSpans[0].spans[0].spanId: must be hex digits");
  EXPECT_EQ(Decode("{\"resourceSpans\":[", Encoding::kJson).status().message(), "body: not JSON");
  EXPECT_EQ(Decode("\xff\xff\xff", Encoding::kProtobuf).status().message(),
            "body: not an OTLP protobuf ExportTraceServiceRequest");
}

// A body nested a million deep, which the limit on bodies lets through,
// is refused before anything walks it recursively.
TEST(OtlpSpans, DeeplyNestedJsonIsRefusedNotWalked) {
  std::string deep = R"({"resourceSpans":[],"x":)" + std::string(1'000'000, '[') + std::string(1'000'000, ']') + "}";
  EXPECT_EQ(Decode(deep, Encoding::kJson).status().message(), "body: JSON nested deeper than 100 levels");
  std::string fine = R"({"resourceSpans":[],"x":)" + std::string(99, '[') + std::string(99, ']') + "}";
  EXPECT_TRUE(Decode(fine, Encoding::kJson).ok());
  // Brackets inside strings are text.
  std::string text = R"({"resourceSpans":[],"x":")" + std::string(1000, '[') + R"(\"[["})";
  EXPECT_TRUE(Decode(text, Encoding::kJson).ok()) << Decode(text, Encoding::kJson).status();
}

TEST(OtlpSpans, ProtobufAndJsonBodiesMapAlike) {
  auto json = Decode(Body("", SpanJson("00f067aa0ba902b7", kLedger + "," + Str("gen_ai.operation.name", "chat"))),
                     Encoding::kJson);
  ASSERT_TRUE(json.ok()) << json.status();
  auto proto = Decode(json->SerializeAsString(), Encoding::kProtobuf);
  ASSERT_TRUE(proto.ok());
  auto a = MapSpans(*json), b = MapSpans(*proto);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0].receipt->SerializeAsString(), b[0].receipt->SerializeAsString());
}

std::string Gzip(const std::string& data) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, data.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(OtlpSpans, GzipBodiesInflateWithinTheLimit) {
  std::string big(100'000, 'a');
  EXPECT_EQ(*Gunzip(Gzip(big), 100'000), big);
  EXPECT_EQ(Gunzip(Gzip(big), 99'999).status().message(), "body: inflates to more than 99999 bytes");
  EXPECT_EQ(Gunzip(Gzip(big).substr(0, 40), 200'000).status().message(),
            "body: Content-Encoding is gzip but the body is not");
  EXPECT_EQ(Gunzip("plain", 100).status().message(), "body: Content-Encoding is gzip but the body is not");
}

TEST(OtlpSpans, ResponsesAndStatusesAreOtlpsMessages) {
  EXPECT_EQ(EncodeResponse(0, "", Encoding::kJson), "{}");
  EXPECT_EQ(EncodeResponse(0, "", Encoding::kProtobuf), "");
  EXPECT_EQ(EncodeResponse(2, "span a: x", Encoding::kJson),
            R"({"partialSuccess":{"errorMessage":"span a: x","rejectedSpans":"2"}})");
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse r;
  ASSERT_TRUE(r.ParseFromString(EncodeResponse(2, "span a: x", Encoding::kProtobuf)));
  EXPECT_EQ(r.partial_success().rejected_spans(), 2);
  EXPECT_EQ(r.partial_success().error_message(), "span a: x");
  EXPECT_EQ(EncodeStatus(absl::InvalidArgumentError("body: not JSON"), Encoding::kJson),
            R"({"code":3,"message":"body: not JSON"})");
  EXPECT_EQ(EncodeStatus(absl::InvalidArgumentError("ab"), Encoding::kProtobuf), std::string("\x08\x03\x12\x02"
                                                                                             "ab",
                                                                                             6));
}

}  // namespace
}  // namespace ledger::otlp
