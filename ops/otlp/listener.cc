#include "ops/otlp/listener.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpcpp/client_context.h"
#include "ledger/rpc/auth/gate.h"
#include "ledger/storage/log/log.h"
#include "ledger_service.grpc.pb.h"
#include "ops/otlp/spans.h"
#include "util/jsonlog/jsonlog.h"

namespace ledger::otlp {

namespace pb = evidence::ledger::v1;

struct Listener::Stub {
  std::unique_ptr<pb::LedgerService::Stub> ledger;
};

namespace {

// At most this many refusals are named in error_message; the rest are counted.
constexpr size_t kMaxNamedRefusals = 10;

http::HttpResponse Answer(int status, std::string body, Encoding encoding) {
  http::HttpResponse r;
  r.status = status;
  r.content_type = encoding == Encoding::kJson ? "application/json" : "application/x-protobuf";
  r.body = std::move(body);
  return r;
}

// A refused request: the HTTP status and a google.rpc.Status body.
http::HttpResponse Refuse(int status, const absl::Status& why, Encoding encoding) {
  http::HttpResponse r = Answer(status, EncodeStatus(why, encoding), encoding);
  r.refusal = std::string(why.message());
  if (status == 429 || status == 503) r.headers["Retry-After"] = "1";
  return r;
}

// The HTTP status of an Append refused as a whole (OTLP/HTTP: 429 and 503
// are retried by exporters, other 4xx are not).
int HttpStatusOf(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
      return 400;
    case grpc::StatusCode::UNAUTHENTICATED:
      return 401;
    case grpc::StatusCode::PERMISSION_DENIED:
      return 403;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return 429;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
      return 503;
    default:
      return 500;
  }
}

// The body's encoding from its Content-Type (parameters ignored).
absl::StatusOr<Encoding> EncodingOf(const http::HttpRequest& request) {
  auto it = request.headers.find("content-type");
  std::string type = it == request.headers.end() ? "" : it->second;
  type = absl::AsciiStrToLower(std::string(absl::StripAsciiWhitespace(type.substr(0, type.find(';')))));
  if (type == "application/json") return Encoding::kJson;
  if (type == "application/x-protobuf") return Encoding::kProtobuf;
  return absl::InvalidArgumentError(
      absl::StrCat("Content-Type: '", type, "' is not application/json or application/x-protobuf (OTLP/HTTP)"));
}

bool IsGzip(const http::HttpRequest& request, absl::Status* unsupported) {
  auto it = request.headers.find("content-encoding");
  std::string coding = it == request.headers.end() ? "" : absl::AsciiStrToLower(it->second);
  if (coding == "gzip") return true;
  if (!coding.empty() && coding != "identity") {
    *unsupported = absl::UnimplementedError(absl::StrCat("Content-Encoding: '", coding, "' is not gzip or identity"));
  }
  return false;
}

}  // namespace

// A reservation of inflated bytes for one caller, returned when it goes.
class Listener::Budget {
 public:
  Budget(const Listener* listener, std::string who) : listener_(listener), who_(std::move(who)) {}
  ~Budget() {
    sync::MutexLock lock(&listener_->mu_);
    auto it = listener_->inflating_.find(who_);
    if (it != listener_->inflating_.end() && (it->second -= bytes_) == 0) listener_->inflating_.erase(it);
  }
  Budget(const Budget&) = delete;
  Budget& operator=(const Budget&) = delete;

  // Reserves `bytes`; false when the caller's requests would then hold more than the limit.
  bool Take(size_t bytes) {
    sync::MutexLock lock(&listener_->mu_);
    size_t& held = listener_->inflating_[who_];
    if (held + bytes > listener_->options_.max_inflated_per_peer) {
      if (held == 0) listener_->inflating_.erase(who_);
      return false;
    }
    held += bytes;
    bytes_ = bytes;
    return true;
  }

 private:
  const Listener* const listener_;
  const std::string who_;
  size_t bytes_ = 0;
};

Listener::Listener(std::shared_ptr<grpc::Channel> channel, const auth::Gate* gate, Options options)
    : stub_(std::make_unique<Stub>(Stub{pb::LedgerService::NewStub(std::move(channel))})),
      gate_(gate),
      options_(options) {}

Listener::~Listener() = default;

std::optional<http::HttpResponse> Listener::Admit(const http::HttpRequest& request) const {
  // Before the body is known, answers are in protobuf unless JSON was sent.
  auto encoding = EncodingOf(request);
  Encoding answer = encoding.ok() ? *encoding : Encoding::kProtobuf;
  if (request.path != "/v1/traces") {
    return Refuse(404, absl::NotFoundError(absl::StrCat("path: '", request.path, "': only /v1/traces")), answer);
  }
  if (request.method != "POST") {
    http::HttpResponse r = Refuse(405, absl::UnimplementedError("method: only POST /v1/traces"), answer);
    r.headers["Allow"] = "POST";
    return r;
  }
  if (!encoding.ok()) return Refuse(415, encoding.status(), answer);
  absl::Status unsupported;
  IsGzip(request, &unsupported);
  if (!unsupported.ok()) return Refuse(415, unsupported, answer);
  // Who is asking, before anything of the body is inflated or decoded.
  if (options_.tls && request.identity.empty()) {
    return Refuse(401, absl::UnauthenticatedError("client certificate: names no identity"), answer);
  }
  if (options_.tls && gate_ != nullptr) {
    auth::Caller caller{request.identity, gate_->policy(), {}};
    if (absl::Status s = caller.CheckRole(auth::Action::kAppend); !s.ok()) return Refuse(403, s, answer);
  }
  return std::nullopt;
}

http::HttpResponse Listener::Handle(const http::HttpRequest& request) const {
  if (auto refused = Admit(request); refused.has_value()) return *std::move(refused);
  auto encoding = EncodingOf(request);
  Encoding answer = encoding.ok() ? *encoding : Encoding::kProtobuf;
  absl::Status unsupported;
  bool gzip = IsGzip(request, &unsupported);
  size_t inflated_limit = request.body.size();
  if (gzip) {
    inflated_limit = std::min(options_.max_body_bytes, request.body.size() * options_.max_inflate_ratio);
  }
  Budget budget(this, request.identity.empty() ? request.peer.substr(0, request.peer.rfind(':')) : request.identity);
  if (!budget.Take(inflated_limit)) {
    return Refuse(429,
                  absl::ResourceExhaustedError(absl::StrCat("body: this caller's requests already hold close to ",
                                                            options_.max_inflated_per_peer,
                                                            " inflated bytes; retry when they are done")),
                  answer);
  }
  absl::StatusOr<std::string> inflated;
  if (gzip) {
    inflated = Gunzip(request.body, inflated_limit);
    if (!inflated.ok() && inflated.status().code() == absl::StatusCode::kResourceExhausted) {
      return Refuse(413,
                    absl::ResourceExhaustedError(absl::StrCat(
                        "body: gzip inflates past ", inflated_limit, " bytes (at most ", options_.max_inflate_ratio,
                        " times the ", request.body.size(), " bytes sent, and ", options_.max_body_bytes, " in all)")),
                    answer);
    }
    if (!inflated.ok()) return Refuse(400, inflated.status(), answer);
  }
  auto decoded = Decode(gzip ? *inflated : request.body, answer);
  if (!decoded.ok()) return Refuse(400, decoded.status(), answer);

  std::vector<Mapped> mapped = MapSpans(*decoded);
  std::vector<std::string> refusals;
  int64_t rejected = 0;
  auto refuse = [&](const Mapped& m, std::string_view why) {
    ++rejected;
    if (refusals.size() < kMaxNamedRefusals) refusals.push_back(absl::StrCat(m.span, ": ", std::string(why)));
  };
  std::vector<const Mapped*> appendable;
  for (const Mapped& m : mapped) {
    if (m.receipt.ok()) {
      appendable.push_back(&m);
    } else {
      refuse(m, std::string(m.receipt.status().message()));
    }
  }
  // The log takes at most kMaxReceiptsPerAppend receipts a call.
  for (size_t from = 0; from < appendable.size(); from += log::kMaxReceiptsPerAppend) {
    size_t to = std::min(appendable.size(), from + log::kMaxReceiptsPerAppend);
    pb::AppendRequest append;
    for (size_t i = from; i < to; ++i) *append.add_receipts() = *appendable[i]->receipt;
    pb::AppendResponse response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(options_.deadline_ms));
    if (options_.tls) ctx.AddMetadata(std::string(auth::kActingForMetadata), request.identity);
    grpc::Status s = stub_->ledger->Append(&ctx, append, &response);
    if (!s.ok()) {
      // Receipts of earlier calls are in the log; a resend finds them as duplicates.
      return Refuse(HttpStatusOf(s.error_code()),
                    absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message()), answer);
    }
    for (int i = 0; i < response.results_size() && from + i < to; ++i) {
      if (response.results(i).code() != 0) refuse(*appendable[from + i], response.results(i).message());
    }
  }
  std::string message = absl::StrJoin(refusals, "; ");
  if (rejected > static_cast<int64_t>(refusals.size())) {
    absl::StrAppend(&message, "; and ", rejected - static_cast<int64_t>(refusals.size()), " more");
  }
  if (rejected > 0) {
    // The exporter only warns in its own log: the operator sees them here.
    jsonlog::Warn("otlp_spans_refused")
        .Str("identity", request.identity)
        .Str("peer", request.peer)
        .Str("request_id", request.request_id)
        .Int("spans", static_cast<int64_t>(mapped.size()))
        .Int("rejected", rejected)
        .Msg(message)
        .Emit();
  }
  return Answer(200, EncodeResponse(rejected, message, answer), answer);
}

}  // namespace ledger::otlp
