// What a server at an address speaks, learned by starting a TLS handshake
// with it: for a client that could not connect to say why (a plain-text
// client at a TLS port, a TLS client without the certificate the server
// asks for, or at a plain-text port). Not a security check: the server's
// certificate is not verified, and nothing is sent after the handshake.
//
// Thread-safe: each call has its own socket and TLS context.
#ifndef UTIL_TLS_PROBE_H_
#define UTIL_TLS_PROBE_H_

#include <string>
#include <string_view>

#include "absl/time/time.h"

namespace ledger::tls {

enum class Speaks {
  kUnknown,             // no connection, or no answer in time
  kPlainText,           // answered the TLS hello with bytes that are not TLS
  kTls,                 // completed the handshake and refused nothing
  kTlsWantsClientCert,  // asked for a client certificate; closed without one
  kTlsRefusedCert,      // closed, or sent an alert, once it had the client certificate given
};

struct Probe {
  Speaks speaks = Speaks::kUnknown;
  // The TLS alert the server sent, in OpenSSL's words without their
  // "tlsv1 alert " prefix ("unknown ca", "certificate required"); "" when
  // it sent none (it closed the connection).
  std::string alert;
};

// The client certificate chain and key (PEM) the probe presents; empty:
// none.
struct ClientCertificate {
  std::string cert_pem;
  std::string key_pem;
};

// Connects to `address` (HOST:PORT or [IPV6]:PORT), offers TLS with ALPN
// "h2" as a gRPC client does, and reads the server's answer for at most
// `timeout` in all (a server that took the handshake and sends nothing
// for a second is kTls). kUnknown for an address it cannot parse or reach.
Probe ProbeTls(std::string_view address, const ClientCertificate& client, absl::Duration timeout);

}  // namespace ledger::tls

#endif  // UTIL_TLS_PROBE_H_
