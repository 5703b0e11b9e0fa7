// OpenTelemetry GenAI spans as receipts (CONTRACT, "OpenTelemetry spans"):
// the body of an OTLP/HTTP POST /v1/traces decoded, each span of a model or
// tool call mapped to a model_call or tool_call receipt, and OTLP's answers
// encoded. No I/O: the listener (listener.h) appends what comes out.
//
// Mapping (the contract's table is the reference):
//   spans whose gen_ai.operation.name is chat, generate_content or
//   text_completion -> model_call; execute_tool -> tool_call; every other
//   span (no gen_ai.operation.name, or another operation) is ignored;
//   receipt_id = "otel." + hex(trace id) + "." + hex(span id), lowercase
//   hex of the 16 and 8 id bytes, so a resent span is the same receipt;
//   team, run_id, step_id from ledger.team, ledger.run_id, ledger.step_id
//   (string values) on the span, else on its resource: required;
//   content is never copied: request_sha256 / response_sha256 are the
//   SHA-256 of the UTF-8 bytes of a string attribute's value (kRequest*,
//   kResponse* below); no other attribute value reaches the receipt except
//   those named in the contract.
//
// Thread-safe: pure functions.
#ifndef OPS_OTLP_SPANS_H_
#define OPS_OTLP_SPANS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "otlp/trace_service.pb.h"
#include "receipt.pb.h"

namespace ledger::otlp {

using Request = opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
using Span = opentelemetry::proto::trace::v1::Span;
using Resource = opentelemetry::proto::resource::v1::Resource;
using Receipt = evidence::ledger::v1::Receipt;

// How a body is encoded, from its Content-Type.
enum class Encoding { kJson, kProtobuf };

// The receipt id prefix of receipts made from spans.
inline constexpr std::string_view kReceiptIdPrefix = "otel.";

// The attributes whose string values are hashed into a receipt's digests,
// the first present of each list; other content attributes and events are
// never read.
inline constexpr std::string_view kRequestContent[] = {"gen_ai.input.messages", "gen_ai.prompt"};
inline constexpr std::string_view kResponseContent[] = {"gen_ai.output.messages", "gen_ai.completion"};
inline constexpr std::string_view kToolArguments[] = {"gen_ai.tool.call.arguments"};
inline constexpr std::string_view kToolResult[] = {"gen_ai.tool.call.result"};

// Parses a body. OTLP/JSON (OTLP 1.x "JSON Protobuf Encoding"): field names
// lowerCamelCase (snake_case accepted too), traceId / spanId / parentSpanId
// and links' ids as hex strings, enums as integers, 64-bit integers as
// numbers or decimal strings, unknown fields ignored. INVALID_ARGUMENT
// naming what could not be read; nothing is partially returned.
absl::StatusOr<Request> Decode(std::string_view body, Encoding encoding);

// Inflates a gzip body (Content-Encoding: gzip). INVALID_ARGUMENT when it
// is not gzip or is cut short; RESOURCE_EXHAUSTED when it inflates beyond
// `max_bytes`.
absl::StatusOr<std::string> Gunzip(std::string_view body, size_t max_bytes);

// One span that names a model or tool call: its receipt, or why it is
// refused ("<attribute or field>: <rule>").
struct Mapped {
  std::string span;  // "span <span id hex> of trace <trace id hex>", for messages
  absl::StatusOr<Receipt> receipt;
};

// The model and tool call spans of a request, in order; other spans are
// left out. The receipts are not validated here beyond what the mapping
// needs: the log checks each as it checks a gRPC Append.
std::vector<Mapped> MapSpans(const Request& request);

// The ExportTraceServiceResponse: partial_success set when some spans were
// rejected (OTLP: rejected_spans > 0 with a message, or neither).
std::string EncodeResponse(int64_t rejected_spans, std::string_view error_message, Encoding encoding);

// The body of a refused request: a google.rpc.Status {code, message}, as
// OTLP/HTTP asks for every 4xx and 5xx.
//   protobuf: 08 <varint code> 12 <varint length> <message bytes>
//             (each field omitted when 0 or empty, as proto3 does)
//   JSON:     {"code":<code>,"message":"<message>"}
std::string EncodeStatus(const absl::Status& status, Encoding encoding);

}  // namespace ledger::otlp

#endif  // OPS_OTLP_SPANS_H_
