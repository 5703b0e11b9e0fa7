// Why ledgerctl could not connect, when its TLS options do not match what
// the server speaks: gRPC says only "Socket closed" or "Ssl handshake
// failed", so a call that failed to connect is followed by a probe of the
// server's handshake (util/tls/probe.h), and its status is replaced by one
// that says which flags to give.
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cmd/ledgerctl.h"
#include "grpcpp/support/client_interceptor.h"
#include "util/tls/probe.h"

namespace ledger::ctl {
namespace {

namespace exp = grpc::experimental;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A failure to connect in which the server may have spoken another
// protocol: the connection was made, then closed or refused in the
// handshake. Not when nothing listens or nothing answers.
bool MayBeMismatch(const grpc::Status& s) {
  if (s.error_code() != grpc::StatusCode::UNAVAILABLE) return false;
  const std::string& m = s.error_message();
  if (!absl::StartsWith(m, "failed to connect to all addresses")) return false;
  return absl::StrContains(m, "Socket closed") || absl::StrContains(m, "andshake") ||
         absl::StrContains(m, "Connection reset") || absl::StrContains(m, "End of TCP stream");
}

// Rewrites the status of a call that failed to connect to `address` when
// the probe shows what is wrong with the TLS options.
class Diagnosis final : public exp::Interceptor {
 public:
  Diagnosis(const TlsOptions& tls, std::string address) : tls_(tls), address_(std::move(address)) {}

  void Intercept(exp::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(exp::InterceptionHookPoints::POST_RECV_STATUS)) {
      grpc::Status* s = methods->GetRecvStatus();
      if (s != nullptr && MayBeMismatch(*s)) {
        std::string why = ExplainTlsMismatch(tls_, address_);
        if (!why.empty()) *s = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, why);
      }
    }
    methods->Proceed();
  }

 private:
  const TlsOptions tls_;
  const std::string address_;
};

class DiagnosisFactory final : public exp::ClientInterceptorFactoryInterface {
 public:
  DiagnosisFactory(const TlsOptions& tls, std::string address) : tls_(tls), address_(std::move(address)) {}
  exp::Interceptor* CreateClientInterceptor(exp::ClientRpcInfo*) override { return new Diagnosis(tls_, address_); }

 private:
  const TlsOptions tls_;
  const std::string address_;
};

}  // namespace

TlsOptions TlsOptionsOf(const Flags& flags) { return {flags.Get("tls-ca"), flags.Get("cert"), flags.Get("key")}; }

std::string ExplainTlsMismatch(const TlsOptions& tls, const std::string& address) {
  tls::ClientCertificate client;
  if (!tls.ca.empty() && !tls.cert.empty()) client = {ReadAll(tls.cert), ReadAll(tls.key)};
  tls::Probe probe = tls::ProbeTls(address, client, absl::Seconds(3));
  const std::string server = absl::StrCat("the server at ", address);
  if (tls.ca.empty()) {
    if (probe.speaks == tls::Speaks::kTls || probe.speaks == tls::Speaks::kTlsWantsClientCert) {
      return absl::StrCat(server, " speaks TLS: give --tls-ca, --cert and --key");
    }
    return "";
  }
  switch (probe.speaks) {
    case tls::Speaks::kPlainText:
      return absl::StrCat(server, " speaks plain text, not TLS: leave out --tls-ca, --cert and --key");
    case tls::Speaks::kTlsWantsClientCert:
      return tls.cert.empty() ? absl::StrCat(server, " wants a client certificate: give --cert and --key") : "";
    case tls::Speaks::kTlsRefusedCert:
      return absl::StrCat(server, " refused the client certificate ", tls.cert, " (",
                          probe.alert.empty() ? "it closed the connection in the TLS handshake"
                                              : absl::StrCat("TLS alert: ", probe.alert),
                          "): give --cert and --key of a certificate issued by a CA it trusts (ledgerd --client-ca)");
    default:
      return "";
  }
}

std::vector<std::unique_ptr<exp::ClientInterceptorFactoryInterface>> TlsDiagnosis(const TlsOptions& tls,
                                                                                  const std::string& address) {
  std::vector<std::unique_ptr<exp::ClientInterceptorFactoryInterface>> out;
  out.push_back(std::make_unique<DiagnosisFactory>(tls, address));
  return out;
}

}  // namespace ledger::ctl
