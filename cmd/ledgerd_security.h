// ledgerd's security from its flags: TLS material and the policy at start,
// and both read again on SIGHUP.
#ifndef CMD_LEDGERD_SECURITY_H_
#define CMD_LEDGERD_SECURITY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cmd/flags.h"
#include "ledger/rpc/auth/gate.h"
#include "ledger/rpc/auth/policy.h"
#include "ledger/rpc/server/server.h"
#include "util/http/client.h"
#include "util/http/http.h"

namespace ledger::cmd {

// TLS and the policy from the flags: the policy (nullptr in plain text),
// and the PEM files in `options`. Plain text only on a loopback address or
// with --insecure.
absl::StatusOr<std::shared_ptr<const auth::Policy>> Security(const Flags& flags, server::ServerOptions* options);

// In plain text (no --tls-cert), one warning at start: with --insecure
// (`insecure`) that every caller is admin, else (`plaintext_loopback`) that
// only this host, or this container, reaches the loopback ports, and which
// flags give TLS. Nothing with TLS.
void WarnPlainText(const Flags& flags);

// The client side of TLS to witnesses, monitors or a TSA (`peer`): --PEER-tls-ca
// verifies https:// ones, --PEER-tls-cert and --PEER-tls-key answer those
// that ask for a certificate.
absl::StatusOr<std::shared_ptr<const http::TlsClient>> ClientTls(const Flags& flags, const std::string& peer);

// On SIGHUP: a good file replaces the policy, for new calls and for open
// streams and watches (which end if their caller lost the right); a broken
// one keeps the old policy. Connections stay up either way.
void ReloadPolicy(const std::string& path, auth::Gate* gate);

// On SIGHUP, with TLS: the certificate, key and client CA files read again
// for handshakes from now on, on the gRPC port and on `https` (the HTTPS
// ports; null entries are skipped); a file that is missing or broken keeps
// the old ones.
void ReloadTls(const Flags& flags, server::Server* server, const std::vector<http::HttpServer*>& https);

}  // namespace ledger::cmd

#endif  // CMD_LEDGERD_SECURITY_H_
