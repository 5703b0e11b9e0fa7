// The HTTP server's messages (ops/http.cc): a request head and body read
// from bytes, a response written as bytes. Internal to ops.
#ifndef UTIL_HTTP_MESSAGE_H_
#define UTIL_HTTP_MESSAGE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "util/http/http.h"

namespace ledger::http::message {

// A request head is at most this long.
inline constexpr size_t kMaxHeaderBytes = 16 * 1024;

// The reason phrase of a status code.
const char* Reason(int status);

inline constexpr int64_t kChunked = -2;

// The Content-Length of a request head: 0 when absent, kChunked for
// "Transfer-Encoding: chunked" (what Node's http client sends for a piped
// body), -1 when malformed or for another transfer coding.
int64_t ContentLength(const std::string& head);

enum class Chunks { kDone, kMore, kBad, kTooLarge };

// Decodes the chunked body (RFC 9112 section 7.1) in `in` from *at,
// appending the data to *body and moving *at past what was decoded: kDone
// once the last chunk and the trailer section (skipped) are in, kMore while
// bytes are missing. Chunk extensions are ignored. kTooLarge when the data
// would exceed `max` bytes.
Chunks DecodeChunks(const std::string& in, size_t* at, std::string* body, size_t max);

// Parses the request line and headers of `head` (up to its blank line)
// into `request`; a 400 response for a bad request line or URL escape.
std::optional<HttpResponse> ParseHead(std::string_view head, HttpRequest& request);

// The response to a whole request (head and body): parsed here, then the
// handler's.
HttpResponse Respond(const std::string& head, HttpRequest& request, const HttpHandler& handler, bool allow_post);

// A status whose request is logged as refused: 401, 403, 429.
bool IsRefusal(int status);

// The log line of a refused request.
void LogRefusal(const HttpRequest& request, const HttpResponse& response);

// What the loop sends: the status line and headers, then a body or a file.
struct Prepared {
  std::string bytes;               // head, and the body unless a file follows
  std::shared_ptr<BodyFile> file;  // sent after `bytes`, from offset 0
  uint64_t file_size = 0;          // as announced in Content-Length
};

Prepared Prepare(const HttpResponse& response, bool head_only);

}  // namespace ledger::http::message

#endif  // UTIL_HTTP_MESSAGE_H_
