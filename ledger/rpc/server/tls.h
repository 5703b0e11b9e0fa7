// The server's TLS credentials, replaceable while it serves: the
// certificate chain, its private key and the CA certificates client
// certificates must chain to. gRPC asks for them at each new handshake (its
// SSL server credentials with a certificate-config fetcher), so a Replace
// reaches every connection made after it; connections already made keep
// what they were made with.
//
// Thread-safe.
#ifndef LEDGER_RPC_SERVER_TLS_H_
#define LEDGER_RPC_SERVER_TLS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/server_credentials.h"
#include "util/sync/mutex.h"

struct grpc_ssl_server_certificate_config;

namespace ledger::server {

struct TlsPem {
  std::string cert;       // the server's certificate chain, leaf first
  std::string key;        // the leaf's private key
  std::string client_ca;  // CA certificates; "": clients are not asked for certificates
};

class ServerTls {
 public:
  // INVALID_ARGUMENT naming the part ("cert", "key", "client_ca") and the
  // rule when a part does not parse, or the key is not the certificate's.
  static absl::StatusOr<std::unique_ptr<ServerTls>> Create(TlsPem pem);
  ~ServerTls();

  // Replaces the credentials for handshakes from now on. On an error (as
  // Create's; FAILED_PRECONDITION when client_ca would turn client
  // certificates on or off) the old ones stay.
  absl::Status Replace(TlsPem pem);

  // Credentials for a listening port; this object MUST outlive the server.
  std::shared_ptr<grpc::ServerCredentials> Credentials();

 private:
  explicit ServerTls(TlsPem pem) : pem_(std::move(pem)) {}
  class Fetched;
  // gRPC's fetcher: the config when it changed since the last call.
  static grpc_ssl_certificate_config_reload_status Fetch(void* self, grpc_ssl_server_certificate_config** config);

  sync::Mutex mu_;
  TlsPem pem_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 1;  // bumped by Replace
  uint64_t fetched_ ABSL_GUARDED_BY(mu_) = 0;     // the generation gRPC has
};

}  // namespace ledger::server

#endif  // LEDGER_RPC_SERVER_TLS_H_
