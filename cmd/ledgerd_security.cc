#include "cmd/ledgerd_security.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cmd/loopback.h"
#include "ledger/rpc/server/tls.h"
#include "util/files/files.h"
#include "util/jsonlog/jsonlog.h"

namespace ledger::cmd {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("--", flag, ": cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", path, " holds no PEM block"));
  }
  return text.str();
}

// A warning for each identity the policy names without a kind.
void WarnUntyped(const ledger::auth::Policy& policy) {
  for (const auto& u : policy.untyped()) {
    ledger::jsonlog::Warn("policy_identity_untyped")
        .Msg(absl::StrCat("--policy: '", u.written, "' names no kind (uri:, dns:, cn:); read as '", u.read_as, "'"))
        .Str("identity", u.written)
        .Str("read_as", u.read_as)
        .Emit();
  }
}

}  // namespace

absl::StatusOr<std::shared_ptr<const http::TlsClient>> ClientTls(const Flags& flags, const std::string& peer) {
  auto tls = std::make_shared<http::TlsClient>();
  for (auto [suffix, part] : {std::pair{"-tls-ca", &tls->ca_pem}, std::pair{"-tls-cert", &tls->cert_pem},
                              std::pair{"-tls-key", &tls->key_pem}}) {
    const std::string flag = peer + suffix;
    if (flags.Get(flag).empty()) continue;
    auto pem = files::ReadFile(flags.Get(flag));
    if (!pem.ok()) return absl::NotFoundError(absl::StrCat("--", flag, ": cannot read ", flags.Get(flag)));
    *part = *std::move(pem);
  }
  if (tls->cert_pem.empty() != tls->key_pem.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", peer, "-tls-cert and --", peer, "-tls-key: give both or neither"));
  }
  return tls;
}

absl::StatusOr<std::shared_ptr<const ledger::auth::Policy>> Security(const ledger::cmd::Flags& flags,
                                                                     ledger::server::ServerOptions* options) {
  bool tls = flags.Has("tls-cert") || flags.Has("tls-key") || flags.Has("client-ca");
  if (!tls) {
    if (flags.Has("policy")) {
      return absl::InvalidArgumentError(
          "--policy: needs --tls-cert, --tls-key and --client-ca (callers are identified by their certificates)");
    }
    if (!flags.Get("http-listen").empty() && !IsLoopback(flags.Get("http-listen")) && !flags.Bool("insecure")) {
      return absl::InvalidArgumentError(
          absl::StrCat("--http-listen: ", flags.Get("http-listen"),
                       " is not a loopback address; in plain-text mode the dashboard shows every team's evidence: give "
                       "--tls-cert, --tls-key, --client-ca and --policy, or --insecure"));
    }
    if (!flags.Get("otlp-listen").empty() && !IsLoopback(flags.Get("otlp-listen")) && !flags.Bool("insecure")) {
      return absl::InvalidArgumentError(absl::StrCat("--otlp-listen: ", flags.Get("otlp-listen"),
                                                     " is not a loopback address; in plain-text mode every sender "
                                                     "appends as 'local' to any team: give --tls-cert, --tls-key, "
                                                     "--client-ca and --policy, or --insecure"));
    }
    if (!IsLoopback(flags.Get("listen")) && !flags.Bool("insecure")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--listen: ", flags.Get("listen"),
          " is not a loopback address; give --tls-cert, --tls-key, --client-ca and --policy, or --insecure"));
    }
    return nullptr;
  }
  for (const char* f : {"tls-cert", "tls-key", "client-ca", "policy"}) {
    if (flags.Get(f).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", f, ": required with TLS (--tls-cert, --tls-key, --client-ca, --policy)"));
    }
  }
  auto cert = ReadPem("tls-cert", flags.Get("tls-cert"));
  if (!cert.ok()) return cert.status();
  auto key = ReadPem("tls-key", flags.Get("tls-key"));
  if (!key.ok()) return key.status();
  auto ca = ReadPem("client-ca", flags.Get("client-ca"));
  if (!ca.ok()) return ca.status();
  options->cert_pem = *std::move(cert);
  options->key_pem = *std::move(key);
  options->client_ca_pem = *std::move(ca);
  auto policy = ledger::auth::Policy::Load(flags.Get("policy"));
  if (!policy.ok()) return absl::Status(policy.status().code(), absl::StrCat("--policy: ", policy.status().message()));
  WarnUntyped(*policy);
  return std::make_shared<const ledger::auth::Policy>(*std::move(policy));
}

void WarnPlainText(const ledger::cmd::Flags& flags) {
  if (!flags.Get("tls-cert").empty()) return;
  if (flags.Bool("insecure")) {
    ledger::jsonlog::Warn("insecure")
        .Msg(absl::StrCat("--insecure: plain text on ", flags.Get("listen"),
                          "; every caller is 'local' with role admin"))
        .Emit();
    return;
  }
  std::string addresses = flags.Get("listen");
  for (const char* f : {"http-listen", "otlp-listen"}) {
    if (!flags.Get(f).empty()) absl::StrAppend(&addresses, ", ", flags.Get(f));
  }
  ledger::jsonlog::Warn("plaintext_loopback")
      .Msg(absl::StrCat("plain text on loopback only (", addresses,
                        "): every caller is 'local' with role admin, and only this host can connect (in a "
                        "container, only the container itself: a published port does not reach it); to serve the "
                        "network give --tls-cert, --tls-key, --client-ca and --policy"))
      .Str("address", flags.Get("listen"))
      .Emit();
}

void ReloadPolicy(const std::string& path, ledger::auth::Gate* gate) {
  if (!gate->tls()) {
    ledger::jsonlog::Warn("policy_reload_skipped").Msg("SIGHUP: no --policy to reload (plain text)").Emit();
    return;
  }
  auto policy = ledger::auth::Policy::Load(path);
  if (!policy.ok()) {
    ledger::jsonlog::Error("policy_reload_failed")
        .Msg(absl::StrCat("SIGHUP: kept the old policy: ", policy.status().message()))
        .Str("path", path)
        .Emit();
    return;
  }
  size_t rules = policy->size();
  WarnUntyped(*policy);
  gate->SetPolicy(std::make_shared<const ledger::auth::Policy>(*std::move(policy)));
  ledger::jsonlog::Info("policy_reloaded")
      .Msg(absl::StrCat("SIGHUP: policy reloaded from ", path))
      .Str("path", path)
      .Int("rules", static_cast<int64_t>(rules))
      .Emit();
}

void ReloadTls(const ledger::cmd::Flags& flags, ledger::server::Server* server,
               const std::vector<ledger::http::HttpServer*>& https) {
  if (flags.Get("tls-cert").empty()) return;
  absl::Status s;
  ledger::server::TlsPem pem;
  for (auto [flag, part] :
       {std::pair{"tls-cert", &pem.cert}, std::pair{"tls-key", &pem.key}, std::pair{"client-ca", &pem.client_ca}}) {
    auto read = ReadPem(flag, flags.Get(flag));
    if (!read.ok()) {
      s = read.status();
      break;
    }
    *part = *std::move(read);
  }
  std::string why(s.message());
  ledger::http::HttpTls http_tls;
  if (s.ok()) {
    http_tls = {pem.cert, pem.key, pem.client_ca};
    s = server->ReloadTls(std::move(pem));
    why = std::string(s.message());
    // The part at fault, by its flag and file.
    for (auto [part, flag] :
         {std::pair{"cert: ", "tls-cert"}, std::pair{"key: ", "tls-key"}, std::pair{"client_ca: ", "client-ca"}}) {
      if (why.rfind(part, 0) == 0) {
        why = absl::StrCat("--", flag, ": ", flags.Get(flag), ": ", why.substr(std::string(part).size()));
      }
    }
  }
  if (!s.ok()) {
    ledger::jsonlog::Error("tls_reload_failed").Msg(absl::StrCat("SIGHUP: kept the old TLS credentials: ", why)).Emit();
    return;
  }
  // The HTTPS ports (--http-listen, --otlp-listen) take what the gRPC port
  // took: the material passed its checks, so theirs are not expected to fail.
  for (ledger::http::HttpServer* h : https) {
    if (h == nullptr) continue;
    if (auto r = h->ReloadTls(http_tls); !r.ok()) {
      ledger::jsonlog::Error("tls_reload_failed")
          .Msg(absl::StrCat("SIGHUP: the gRPC port took the new TLS credentials, the HTTPS port ", h->address(),
                            " kept its old ones: ", r.message()))
          .Emit();
      return;
    }
  }
  ledger::jsonlog::Info("tls_reloaded")
      .Msg(
          "SIGHUP: TLS credentials reloaded (--tls-cert, --tls-key, --client-ca) for new connections, on the gRPC, "
          "HTTP and OTLP ports")
      .Emit();
}

}  // namespace ledger::cmd
