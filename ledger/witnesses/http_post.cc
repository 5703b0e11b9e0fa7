#include "ledger/witnesses/http_post.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace ledger::witnesses {
namespace {

using Clock = std::chrono::steady_clock;

int Remaining(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(ms);
}

// Waits for `events` on fd until the deadline; false on timeout or error.
bool Wait(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  while (true) {
    int r = ::poll(&p, 1, Remaining(deadline));
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

absl::StatusOr<HttpReply> HttpPost(const std::string& url, const std::string& body, int timeout_ms) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("witness url '", url, "': only http://host:port/path is supported"));
  }
  std::string rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "/" : rest.substr(slash);
  size_t colon = authority.rfind(':');
  std::string host = authority.substr(0, colon);
  std::string port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (host.empty() || port.empty()) return absl::InvalidArgumentError(absl::StrCat("witness url '", url, "': no host"));

  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat("witness ", authority, ": ", gai_strerror(rc)));
  }
  Fd s;
  s.fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int rc = s.fd < 0 ? -1 : ::connect(s.fd, found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  if (rc != 0 && errno != EINPROGRESS) {
    return absl::UnavailableError(absl::StrCat("witness ", authority, ": connect: ", std::strerror(errno)));
  }
  if (rc != 0) {
    int err = 0;
    socklen_t len = sizeof err;
    if (!Wait(s.fd, POLLOUT, deadline)) return absl::UnavailableError(absl::StrCat("witness ", authority, ": connect timed out"));
    ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return absl::UnavailableError(absl::StrCat("witness ", authority, ": connect: ", std::strerror(err)));
  }
  std::string request = absl::StrCat("POST ", path, " HTTP/1.1\r\nHost: ", authority,
                                     "\r\nContent-Type: text/plain\r\nContent-Length: ", body.size(),
                                     "\r\nConnection: close\r\n\r\n", body);
  for (size_t sent = 0; sent < request.size();) {
    ssize_t n = ::send(s.fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!Wait(s.fd, POLLOUT, deadline)) return absl::UnavailableError(absl::StrCat("witness ", authority, ": send timed out"));
    } else {
      return absl::UnavailableError(absl::StrCat("witness ", authority, ": send: ", std::strerror(errno)));
    }
  }
  std::string in;
  char buf[4096];
  while (true) {
    ssize_t n = ::recv(s.fd, buf, sizeof buf, 0);
    if (n > 0) {
      in.append(buf, static_cast<size_t>(n));
      if (in.size() > (1 << 20)) return absl::DataLossError(absl::StrCat("witness ", authority, ": answer above 1 MiB"));
    } else if (n == 0) {
      break;
    } else if (errno == EAGAIN || errno == EINTR) {
      if (!Wait(s.fd, POLLIN, deadline)) return absl::UnavailableError(absl::StrCat("witness ", authority, ": no answer in time"));
    } else {
      return absl::UnavailableError(absl::StrCat("witness ", authority, ": recv: ", std::strerror(errno)));
    }
  }
  size_t head_end = in.find("\r\n\r\n");
  if (head_end == std::string::npos || in.rfind("HTTP/1.", 0) != 0 || in.size() < 12) {
    return absl::DataLossError(absl::StrCat("witness ", authority, ": the answer is not HTTP"));
  }
  HttpReply reply;
  reply.status = std::atoi(in.substr(9, 3).c_str());
  std::string head = in.substr(0, head_end);
  for (size_t at = head.find("\r\n"); at != std::string::npos; at = head.find("\r\n", at + 2)) {
    size_t eol = head.find("\r\n", at + 2);
    std::string line = head.substr(at + 2, eol == std::string::npos ? std::string::npos : eol - at - 2);
    size_t c = line.find(':');
    if (c != std::string::npos && absl::AsciiStrToLower(line.substr(0, c)) == "content-type") {
      reply.content_type = std::string(absl::StripAsciiWhitespace(line.substr(c + 1)));
    }
  }
  reply.body = in.substr(head_end + 4);
  return reply;
}

}  // namespace ledger::witnesses
