#include "util/http/client.h"

#include <curl/curl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <signal.h>

#include <ctime>
#include <memory>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ledger::http {
namespace {

// The PEM a request is given, checked before libcurl sees it, so that
// unusable material is the caller's error (INVALID_ARGUMENT) rather than a
// failed handshake.
absl::Status CheckPem(const TlsClient& tls, const char* peer) {
  auto bio_of = [](const std::string& pem) {
    return std::unique_ptr<BIO, decltype(&BIO_free)>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
                                                     BIO_free);
  };
  auto ca = bio_of(tls.ca_pem);
  int cas = 0;
  while (X509* cert = PEM_read_bio_X509(ca.get(), nullptr, nullptr, nullptr)) {
    X509_free(cert);
    ++cas;
  }
  ERR_clear_error();
  if (cas == 0)
    return absl::InvalidArgumentError(absl::StrCat(peer, " tls: no CA certificate to verify the ", peer, " with"));
  if (tls.cert_pem.empty()) return absl::OkStatus();
  auto cert_bio = bio_of(tls.cert_pem);
  auto key_bio = bio_of(tls.key_pem);
  X509* cert = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr);
  EVP_PKEY* key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
  const bool ok = cert != nullptr && key != nullptr && X509_check_private_key(cert, key) == 1;
  X509_free(cert);
  EVP_PKEY_free(key);
  ERR_clear_error();
  if (!ok) return absl::InvalidArgumentError(absl::StrCat(peer, " tls: the client certificate and key are not usable"));
  return absl::OkStatus();
}

// What the callbacks gather: the answer's bytes, head and body, up to a bound.
struct Answer {
  size_t max = 0;
  size_t bytes = 0;
  bool over = false;
  std::string body;
};

size_t OnHeader(char* data, size_t size, size_t n, void* p) {
  auto* a = static_cast<Answer*>(p);
  a->bytes += size * n;
  if (a->bytes > a->max) {
    a->over = true;
    return 0;
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* p) {
  auto* a = static_cast<Answer*>(p);
  a->bytes += size * n;
  if (a->bytes > a->max) {
    a->over = true;
    return 0;
  }
  a->body.append(data, size * n);
  return size * n;
}

// One easy handle per thread, reset for each request: libcurl keeps its
// connections (and TLS sessions) across requests to the same peer.
struct Easy {
  CURL* handle = nullptr;
  Easy() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    handle = curl_easy_init();
  }
  ~Easy() { curl_easy_cleanup(handle); }
};

// curl_easy_perform with SIGPIPE blocked in this thread (a peer that closes
// while TLS writes would otherwise end the process; CURLOPT_NOSIGNAL keeps
// libcurl from touching signal handlers, which are the process's), any
// SIGPIPE it raised taken before the mask is restored.
CURLcode PerformWithoutSigpipe(CURL* c) {
  sigset_t pipe, old;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &old);
  const CURLcode rc = curl_easy_perform(c);
  sigset_t pending;
  sigpending(&pending);
  if (sigismember(&pending, SIGPIPE) == 1 && sigismember(&old, SIGPIPE) == 0) {
    const timespec now{0, 0};
    while (sigtimedwait(&pipe, nullptr, &now) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return rc;
}

}  // namespace

absl::StatusOr<Reply> Fetch(std::string_view method, const std::string& url, const std::string& body,
                            const FetchOptions& options) {
  const char* peer = options.peer;
  const TlsClient* tls = options.tls;
  if (method != "GET" && method != "POST") {
    return absl::InvalidArgumentError(absl::StrCat(peer, ": method ", std::string(method), ": want GET or POST"));
  }
  const bool https = url.rfind("https://", 0) == 0;
  if (!https && url.rfind("http://", 0) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(peer, " url '", url, "': want http:// or https://host:port/path"));
  }
  if (https && tls == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(peer, " url '", url, "': https needs a CA to verify the ", peer, " with"));
  }
  const std::string rest = url.substr(https ? 8 : 7);
  const std::string authority = rest.substr(0, rest.find('/'));
  if (authority.empty() || authority.front() == ':') {
    return absl::InvalidArgumentError(absl::StrCat(peer, " url '", url, "': no host"));
  }
  if (https) {
    if (absl::Status s = CheckPem(*tls, peer); !s.ok()) return s;
  }
  thread_local Easy easy;
  CURL* c = easy.handle;
  if (c == nullptr) return absl::InternalError(absl::StrCat(peer, ": curl_easy_init failed"));
  curl_easy_reset(c);
  char error[CURL_ERROR_SIZE] = {};
  Answer answer;
  answer.max = options.max_answer;
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_PROXY, "");  // never a proxy from the environment
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout_ms));
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &answer);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(nullptr, curl_slist_free_all);
  if (method == "POST") {
    const std::string content_type = absl::StrCat("Content-Type: ", options.content_type);
    headers.reset(curl_slist_append(curl_slist_append(nullptr, content_type.c_str()), "Expect:"));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
  if (https) {
    // The CA given, and no other: not the system's store.
    curl_easy_setopt(c, CURLOPT_CAINFO, nullptr);
    curl_easy_setopt(c, CURLOPT_CAPATH, nullptr);
    curl_blob ca{const_cast<char*>(tls->ca_pem.data()), tls->ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
    curl_easy_setopt(c, CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
    if (!tls->cert_pem.empty()) {
      curl_blob cert{const_cast<char*>(tls->cert_pem.data()), tls->cert_pem.size(), CURL_BLOB_COPY};
      curl_blob key{const_cast<char*>(tls->key_pem.data()), tls->key_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
      curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    }
  }
  const CURLcode rc = PerformWithoutSigpipe(c);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, nullptr);
  auto why = [&] { return std::string(error[0] != '\0' ? error : curl_easy_strerror(rc)); };
  const std::string who = absl::StrCat(peer, " ", authority);
  switch (rc) {
    case CURLE_OK:
      break;
    case CURLE_WRITE_ERROR:
      if (answer.over) return absl::DataLossError(absl::StrCat(who, ": answer above ", options.max_answer, " bytes"));
      return absl::UnavailableError(absl::StrCat(who, ": ", why()));
    case CURLE_OPERATION_TIMEDOUT:
      return absl::UnavailableError(absl::StrCat(who, ": no answer in time: ", why()));
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
      return absl::UnavailableError(absl::StrCat(who, ": connect: ", why()));
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ISSUER_ERROR:
      return absl::UnavailableError(absl::StrCat(who, ": tls handshake: ", why()));
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return absl::DataLossError(absl::StrCat(who, ": the answer is not HTTP: ", why()));
    case CURLE_URL_MALFORMAT:
      return absl::InvalidArgumentError(absl::StrCat(peer, " url '", url, "': ", why()));
    default:
      return absl::UnavailableError(absl::StrCat(who, ": ", why()));
  }
  Reply reply;
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  reply.status = static_cast<int>(status);
  char* content_type = nullptr;
  curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &content_type);
  if (content_type != nullptr) reply.content_type = content_type;
  reply.body = std::move(answer.body);
  return reply;
}

absl::StatusOr<Reply> HttpPost(const std::string& url, const std::string& body, int timeout_ms, const TlsClient* tls) {
  return Fetch("POST", url, body, {.timeout_ms = timeout_ms, .tls = tls, .peer = "witness"});
}

}  // namespace ledger::http
