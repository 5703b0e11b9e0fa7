#include "util/http/message.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "util/jsonlog/jsonlog.h"

namespace ledger::http::message {

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 303:
      return "See Other";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 413:
      return "Content Too Large";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

// The Content-Length of a request head: 0 when absent, kChunked for
// "Transfer-Encoding: chunked" (what Node's http client sends for a piped
// body), -1 when malformed or for another transfer coding.
int64_t ContentLength(const std::string& head) {
  int64_t length = 0;
  std::vector<std::string> lines = absl::StrSplit(head.substr(0, head.find("\r\n\r\n")), "\r\n");
  for (const std::string& line : lines) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = absl::AsciiStrToLower(line.substr(0, colon));
    std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    if (name == "transfer-encoding") return absl::AsciiStrToLower(value) == "chunked" ? kChunked : -1;
    if (name != "content-length") continue;
    if (value.empty() || value.size() > 12 || !std::all_of(value.begin(), value.end(), absl::ascii_isdigit)) return -1;
    length = std::stoll(value);
  }
  return length;
}

// Decodes the chunked body (RFC 9112 §7.1) in `in` from *at, appending the
// data to *body and moving *at past what was decoded: kDone once the last
// chunk and the trailer section (skipped) are in, kMore while bytes are
// missing. Chunk extensions are ignored. kTooLarge when the data would
// exceed `max` bytes.
Chunks DecodeChunks(const std::string& in, size_t* at, std::string* body, size_t max) {
  constexpr size_t kMaxLine = 1024;
  while (true) {
    size_t eol = in.find("\r\n", *at);
    if (eol == std::string::npos) return in.size() - *at > kMaxLine ? Chunks::kBad : Chunks::kMore;
    std::string_view line(in.data() + *at, eol - *at);
    line = line.substr(0, line.find(';'));
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (line.empty() || line.size() > 8 || !std::all_of(line.begin(), line.end(), absl::ascii_isxdigit)) {
      return Chunks::kBad;
    }
    size_t size = std::stoul(std::string(line), nullptr, 16);
    if (size == 0) {
      for (size_t p = eol + 2;;) {
        size_t end = in.find("\r\n", p);
        if (end == std::string::npos) return in.size() - p > kMaxHeaderBytes ? Chunks::kBad : Chunks::kMore;
        if (end == p) {
          *at = end + 2;
          return Chunks::kDone;
        }
        p = end + 2;
      }
    }
    if (body->size() + size > max) return Chunks::kTooLarge;
    if (in.size() < eol + 2 + size + 2) return Chunks::kMore;
    if (in.compare(eol + 2 + size, 2, "\r\n") != 0) return Chunks::kBad;
    body->append(in, eol + 2, size);
    *at = eol + 2 + size + 2;
  }
}

std::optional<HttpResponse> ParseHead(std::string_view head, HttpRequest& request) {
  std::vector<std::string> lines = absl::StrSplit(std::string(head.substr(0, head.find("\r\n\r\n"))), "\r\n");
  request.headers.clear();
  request.query.clear();
  std::vector<std::string> first = absl::StrSplit(lines[0], ' ');
  if (first.size() != 3 || first[2].rfind("HTTP/1.", 0) != 0) return Text(400, "bad request line\n");
  request.method = first[0];
  std::string target = first[1];
  size_t q = target.find('?');
  request.raw_path = target.substr(0, q);
  auto path = UrlDecode(request.raw_path);
  bool bad = !path.ok();
  if (path.ok()) request.path = *path;
  if (q != std::string::npos) {
    std::vector<std::string> pairs = absl::StrSplit(target.substr(q + 1), '&', absl::SkipEmpty());
    for (std::string_view pair : pairs) {
      size_t eq = pair.find('=');
      auto k = UrlDecode(pair.substr(0, eq));
      auto v = UrlDecode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
      if (!k.ok() || !v.ok())
        bad = true;
      else
        request.query[*k] = *v;
    }
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    std::string value(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
    auto [it, added] = request.headers.try_emplace(absl::AsciiStrToLower(lines[i].substr(0, colon)), value);
    if (!added) absl::StrAppend(&it->second, ", ", value);
  }
  auto id = request.headers.find("x-request-id");
  request.request_id = jsonlog::RequestId(id == request.headers.end() ? "" : id->second);
  if (bad) return Text(400, "bad escape in the URL\n");
  return std::nullopt;
}

// The response to a whole request (head and body): parsed here, then the
// handler's.
HttpResponse Respond(const std::string& head, HttpRequest& request, const HttpHandler& handler, bool allow_post) {
  if (auto refused = ParseHead(head, request); refused.has_value()) return *std::move(refused);
  if (request.method == "POST" && allow_post) {
    request.body = head.substr(head.find("\r\n\r\n") + 4);
  } else if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse r = Text(405, allow_post ? "only GET, HEAD and POST\n" : "only GET and HEAD\n");
    r.headers["Allow"] = allow_post ? "GET, HEAD, POST" : "GET, HEAD";
    return r;
  }
  return handler(request);
}

bool IsRefusal(int status) { return status == 401 || status == 403 || status == 429; }

void LogRefusal(const HttpRequest& request, const HttpResponse& response) {
  std::string_view why = response.refusal;
  if (why.empty() && response.content_type.rfind("text/plain", 0) == 0) {
    why = std::string_view(response.body).substr(0, response.body.find('\n'));
  }
  jsonlog::Line line = jsonlog::Warn("http_refused");
  line.Str("path", request.path).Int("status", response.status).Str("identity", request.identity);
  if (!request.via.empty()) line.Str("via", request.via);
  line.Str("peer", request.peer).Str("request_id", request.request_id).Msg(why).Emit();
}

Prepared Prepare(const HttpResponse& response, bool head_only) {
  Prepared out;
  uint64_t length = response.body.size();
  struct stat st;
  bool file = response.file != nullptr && ::fstat(response.file->fd(), &st) == 0 && S_ISREG(st.st_mode);
  if (response.file != nullptr) length = file ? static_cast<uint64_t>(st.st_size) : 0;
  out.bytes = absl::StrCat("HTTP/1.1 ", response.status, " ", Reason(response.status),
                           "\r\nContent-Type: ", response.content_type, "\r\nContent-Length: ", length,
                           "\r\nConnection: close\r\n",
                           response.headers.contains("Cache-Control") ? "" : "Cache-Control: no-store\r\n",
                           "X-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\n");
  for (const auto& [k, v] : response.headers) absl::StrAppend(&out.bytes, k, ": ", v, "\r\n");
  out.bytes += "\r\n";
  if (response.file == nullptr) {
    if (!head_only) out.bytes += response.body;
  } else if (!head_only && file) {
    out.file = response.file;
    out.file_size = length;
  }
  return out;
}

}  // namespace ledger::http::message
