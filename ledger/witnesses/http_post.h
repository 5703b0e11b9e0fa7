// A minimal blocking HTTP/1.1 client for the witness protocol: one POST per
// connection (Connection: close), plain HTTP only.
//
// Thread-safe: a free function.
#ifndef LEDGER_WITNESSES_HTTP_POST_H_
#define LEDGER_WITNESSES_HTTP_POST_H_

#include <string>

#include "absl/status/statusor.h"

namespace ledger::witnesses {

struct HttpReply {
  int status = 0;
  std::string content_type;
  std::string body;
};

// POSTs `body` to `url` ("http://host:port/path"), within `timeout_ms` from
// connect to the last byte. INVALID_ARGUMENT for a URL of another form
// (https is not supported), UNAVAILABLE when the server cannot be reached
// or does not answer in time, DATA_LOSS for an answer that is not HTTP.
absl::StatusOr<HttpReply> HttpPost(const std::string& url, const std::string& body, int timeout_ms);

}  // namespace ledger::witnesses

#endif  // LEDGER_WITNESSES_HTTP_POST_H_
