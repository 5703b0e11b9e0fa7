// ledgerd: the evidence ledger server.
//
//   ledgerd --data DIR --listen HOST:PORT [--origin O] [--signing-key FILE]
//           [--checkpoint-interval-ms N] [--unknown-grace-ms N] ...
//
// Prints "listening on HOST:PORT" (the real port) once it serves. SIGINT or
// SIGTERM stops it: no new calls, in-flight appends finish, a final
// checkpoint is signed, exit 0.
#include <arpa/inet.h>

#include <atomic>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "auth/gate.h"
#include "cmd/flags.h"
#include "ledger/backup/backup_root.h"
#include "ledger/jsonlog/jsonlog.h"
#include "ops/dashboard.h"
#include "ops/http.h"
#include "ops/metrics.h"
#include "ledger/log/key_file.h"
#include "ledger/log/log.h"
#include "ledger/tlogpolicy/tlogpolicy.h"
#include "ledger/witnesses/witnesses.h"
#include "export/exporter/export_service.h"
#include "ledger/service/service.h"
#include "query/projector/projector.h"
#include "query/service/query_service.h"
#include "query/service/sweeper.h"

namespace {

int Fail(const absl::Status& s) {
  ledger::jsonlog::Error("start_failed").Msg(std::string(s.message())).Emit();
  return 1;
}

}  // namespace

namespace {

// Copies a backup's store (and, when the data directory has none, its
// checkpoint guard) into the data directory. A guard already there stays:
// if it is ahead of the backup, the rollback guard refuses to start.
absl::Status Restore(const std::string& from, const std::string& data) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(from + "/db/CURRENT", ec)) {
    return absl::NotFoundError(absl::StrCat("--restore-from: ", from, " holds no backup (no db/CURRENT)"));
  }
  if (fs::exists(data + "/db", ec)) {
    return absl::FailedPreconditionError(absl::StrCat("--restore-from: ", data,
                                                      "/db exists; restore into a data directory without a store"));
  }
  fs::copy(from + "/db", data + "/db.restoring", fs::copy_options::recursive, ec);
  if (!ec) fs::rename(data + "/db.restoring", data + "/db", ec);
  if (ec) return absl::UnavailableError(absl::StrCat("--restore-from: copy to ", data, "/db: ", ec.message()));
  std::string guard = std::string("/") + ledger::log::Log::kGuardFile;
  if (!fs::exists(data + guard, ec) && fs::exists(from + guard, ec)) {
    fs::copy_file(from + guard, data + guard, ec);
    if (ec) return absl::UnavailableError(absl::StrCat("--restore-from: copy ", guard, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

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

// The trailing number of the hostname: a StatefulSet pod's ordinal.
absl::StatusOr<int> ShardFromHostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0) return absl::UnavailableError("--shard-from-hostname: no hostname");
  std::string host = name;
  size_t digits = host.find_last_not_of("0123456789");
  std::string n = host.substr(digits == std::string::npos ? 0 : digits + 1);
  if (n.empty() || n.size() > 6) {
    return absl::InvalidArgumentError(absl::StrCat("--shard-from-hostname: hostname '", host,
                                                   "' does not end in a number (a StatefulSet pod's ordinal)"));
  }
  return std::stoi(n);
}

bool IsLoopback(const std::string& listen) {
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost" || host == "::1") return true;
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
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

// TLS and the policy from the flags: the policy (nullptr in plain text),
// and the PEM files in `options`. Plain text only on a loopback address or
// with --insecure.
absl::StatusOr<std::shared_ptr<const ledger::auth::Policy>> Security(
    const ledger::cmd::Flags& flags, ledger::service::ServerOptions* options) {
  bool tls = flags.Has("tls-cert") || flags.Has("tls-key") || flags.Has("client-ca");
  if (!tls) {
    if (flags.Has("policy")) {
      return absl::InvalidArgumentError("--policy: needs --tls-cert, --tls-key and --client-ca (callers are identified by their certificates)");
    }
    if (!flags.Get("http-listen").empty() && !IsLoopback(flags.Get("http-listen")) && !flags.Bool("insecure")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--http-listen: ", flags.Get("http-listen"),
          " is not a loopback address; in plain-text mode the dashboard shows every team's evidence: give --insecure"));
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
      return absl::InvalidArgumentError(absl::StrCat("--", f, ": required with TLS (--tls-cert, --tls-key, --client-ca, --policy)"));
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

absl::StatusOr<ledger::auth::Limiter::Options> Limits(const ledger::cmd::Flags& flags,
                                                      ledger::service::ServerOptions* options) {
  ledger::auth::Limiter::Options limits;
  struct Bound {
    const char* flag;
    int64_t min, max;
  };
  std::map<std::string, int64_t> v;
  for (Bound b : {Bound{"rate-per-identity", 0, 100'000'000}, Bound{"concurrency-per-identity", 0, 1'000'000},
                  Bound{"max-message-bytes", 1024, 64 << 20}, Bound{"max-streams-per-connection", 1, 100'000},
                  Bound{"stream-idle-ms", 0, 86'400'000}}) {
    auto n = flags.Int(b.flag);
    if (!n.ok()) return n.status();
    if (*n < b.min || *n > b.max) {
      return absl::InvalidArgumentError(absl::StrCat("--", b.flag, ": must be in [", b.min, ", ", b.max, "]"));
    }
    v[b.flag] = *n;
  }
  limits.rate = static_cast<double>(v["rate-per-identity"]);
  limits.concurrency = static_cast<int>(v["concurrency-per-identity"]);
  options->max_message_bytes = static_cast<int>(v["max-message-bytes"]);
  options->max_streams_per_connection = static_cast<int>(v["max-streams-per-connection"]);
  options->stream_idle_ms = v["stream-idle-ms"];
  return limits;
}

// On SIGHUP: a good file replaces the policy, for new calls and for open
// streams and watches (which end if their caller lost the right); a broken
// one keeps the old policy. Connections stay up either way.
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

// On SIGHUP, with TLS: the certificate, key and client CA files read
// again, for handshakes from now on; a file that is missing or broken
// keeps the old ones.
void ReloadTls(const ledger::cmd::Flags& flags, ledger::service::Server* server) {
  if (flags.Get("tls-cert").empty()) return;
  absl::Status s;
  ledger::service::TlsPem pem;
  for (auto [flag, part] : {std::pair{"tls-cert", &pem.cert}, std::pair{"tls-key", &pem.key},
                            std::pair{"client-ca", &pem.client_ca}}) {
    auto read = ReadPem(flag, flags.Get(flag));
    if (!read.ok()) {
      s = read.status();
      break;
    }
    *part = *std::move(read);
  }
  std::string why(s.message());
  if (s.ok()) {
    s = server->ReloadTls(std::move(pem));
    why = std::string(s.message());
    // The part at fault, by its flag and file.
    for (auto [part, flag] : {std::pair{"cert: ", "tls-cert"}, std::pair{"key: ", "tls-key"},
                              std::pair{"client_ca: ", "client-ca"}}) {
      if (why.rfind(part, 0) == 0) {
        why = absl::StrCat("--", flag, ": ", flags.Get(flag), ": ", why.substr(std::string(part).size()));
      }
    }
  }
  if (!s.ok()) {
    ledger::jsonlog::Error("tls_reload_failed").Msg(absl::StrCat("SIGHUP: kept the old TLS credentials: ", why)).Emit();
    return;
  }
  ledger::jsonlog::Info("tls_reloaded")
      .Msg("SIGHUP: TLS credentials reloaded (--tls-cert, --tls-key, --client-ca) for new connections")
      .Emit();
}

}  // namespace

// Submits each checkpoint to the witnesses of the tlog-policy in `path`;
// https:// witnesses are verified with --witness-tls-ca, and given
// --witness-tls-cert and --witness-tls-key when they ask for a certificate.
absl::StatusOr<std::unique_ptr<ledger::witnesses::Witnesses>> StartWitnesses(const ledger::cmd::Flags& flags,
                                                                            const ledger::log::Log* log,
                                                                            const std::string& data_dir) {
  auto tls = std::make_shared<ledger::witnesses::TlsClient>();
  for (auto [flag, part] : {std::pair{"witness-tls-ca", &tls->ca_pem}, std::pair{"witness-tls-cert", &tls->cert_pem},
                            std::pair{"witness-tls-key", &tls->key_pem}}) {
    if (flags.Get(flag).empty()) continue;
    std::ifstream pem(flags.Get(flag));
    if (!pem) return absl::NotFoundError(absl::StrCat("--", flag, ": cannot read ", flags.Get(flag)));
    std::stringstream text;
    text << pem.rdbuf();
    *part = text.str();
  }
  if (tls->cert_pem.empty() != tls->key_pem.empty()) {
    return absl::InvalidArgumentError("--witness-tls-cert and --witness-tls-key: give both or neither");
  }
  const std::string& path = flags.Get("witness-policy");
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("--witness-policy: cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  auto policy = ledger::tlogpolicy::Policy::Parse(text.str());
  if (!policy.ok()) return absl::InvalidArgumentError(absl::StrCat("--witness-policy: ", policy.status().message()));
  ledger::witnesses::Source source{
      [log](uint64_t size) -> absl::StatusOr<std::string> {
        auto cp = log->Checkpoint(size);
        if (!cp.ok()) return cp.status();
        return cp->note;
      },
      [log](uint64_t from, uint64_t to) -> absl::StatusOr<std::vector<ledger::hash::Hash>> {
        auto proof = log->ProveConsistency(from, to);
        if (!proof.ok()) return proof.status();
        return std::move(proof->hashes);
      }};
  auto post = [tls](const std::string& url, const std::string& body) {
    return ledger::witnesses::HttpPost(url, body, 5000, tls->ca_pem.empty() ? nullptr : tls.get());
  };
  auto started = ledger::witnesses::Witnesses::Start(*std::move(policy), std::move(source), post,
                                                     {.data_dir = data_dir, .poll_ms = 100, .max_backoff_ms = 10'000,
                                                      .now_s = nullptr});
  if (!started.ok()) return absl::Status(started.status().code(), absl::StrCat("--witness-policy: ", started.status().message()));
  return started;
}

// The operators' HTTP endpoints. `dashboard` is null without projections;
// `gate` too on the plain-text health port, which serves no /metrics.
ledger::ops::HttpResponse Operate(const ledger::ops::HttpRequest& r, const ledger::log::Log& log,
                                  ledger::ops::Metrics* metrics, ledger::ops::Dashboard* dashboard,
                                  const ledger::auth::Gate* gate, bool stopping,
                                  const ledger::witnesses::Witnesses* witnesses = nullptr) {
  using ledger::ops::Text;
  if (r.path == "/healthz") return Text(200, "ok\n");
  if (r.path == "/readyz") {
    if (stopping) return Text(503, "stopping\n");
    if (!log.store().failure().ok()) return Text(503, absl::StrCat("store failed: ", log.store().failure().message(), "\n"));
    if (!log.integrity().ok()) return Text(503, absl::StrCat("appends refused: ", log.integrity().message(), "\n"));
    return Text(200, "ready\n");
  }
  if (metrics == nullptr) return Text(404, "not found: /healthz, /readyz\n");
  if (r.path == "/metrics") {
    if (gate != nullptr && gate->tls()) {
      if (absl::Status s = ledger::ops::MayScrape(*gate->policy(), r.identity); !s.ok()) {
        return Text(403, absl::StrCat(s.message(), "\n"));
      }
    }
    ledger::ops::HttpResponse m = Text(200, metrics->Render() + (witnesses ? witnesses->RenderMetrics() : ""));
    m.content_type = "text/plain; version=0.0.4; charset=utf-8";
    return m;
  }
  if (r.path == "/checkpoint") {
    // The latest checkpoint with the witnesses' cosignatures held for it:
    // what every verifier and witness is given, to any verified client.
    if (gate != nullptr && gate->tls() && r.identity.empty()) {
      return Text(403, "client certificate: names no identity\n");
    }
    auto cp = log.Checkpoint(0);
    if (!cp.ok()) return Text(404, "no checkpoint signed yet\n");
    return Text(200, witnesses ? witnesses->Cosigned(cp->note) : cp->note);
  }
  if (dashboard == nullptr) return Text(404, "no dashboard: ledgerd runs with --projections=false\n");
  return dashboard->Handle(r);
}

int main(int argc, char** argv) {
  using ledger::cmd::Flags;
  Flags flags;
  flags.Define("data", "", "data directory (created if missing; holds the store and signing.key)");
  flags.Define("listen", "127.0.0.1:7420", "gRPC address HOST:PORT; port 0 picks a free port");
  flags.Define("origin", ledger::log::kDefaultOrigin, "the log's origin, also the key name");
  flags.Define("signing-key", "", "signing key file (default: <data>/signing.key, created at first start)");
  flags.Define("checkpoint-interval-ms", "1000", "sign a checkpoint at most this often when the log grew");
  flags.Define("max-queued", "100000", "receipts waiting to be appended before RESOURCE_EXHAUSTED");
  flags.Define("unknown-grace-ms", "30000",
               "a step with no completion is declared unknown this long after its timeout");
  flags.Define("sweep-interval-ms", "1000", "how often to look for steps past their deadline");
  flags.Define("projections", "true",
               "keep step outcomes and run summaries (the query service); false: the log only");
  flags.Define("run-map", "true",
               "keep the run-head map and sign its root with every checkpoint, so run packs prove they hold "
               "the whole run; false: checkpoint-time notes of format 1 and no run proofs (for comparison)");
  flags.Define("restore-from", "",
               "start from a backup (ledgerctl backup): copies DIR/db into the data directory, which "
               "must not hold a store yet; the signing key must be the one that signed it");
  flags.Define("export-staging-bytes", "4294967296",
               "bytes that exports in progress may hold together in <data>/tmp (staged files and packs being "
               "sent); an export that would exceed it is refused with RESOURCE_EXHAUSTED");
  flags.Define("backup-root", "",
               "backups (ledgerctl backup --out) go only under this existing directory, outside --data; "
               "without it, backups are refused");
  flags.Define("accept-rollback", "",
               "start even if the store is behind or not consistent with <data>/latest-checkpoint "
               "(after restoring an old copy on purpose); logged",
               true);
  flags.Define("tls-cert", "", "TLS: the server's certificate chain (PEM); needs --tls-key, --client-ca, --policy");
  flags.Define("tls-key", "", "TLS: the server's private key (PEM)");
  flags.Define("client-ca", "",
               "TLS: CA certificates (PEM) that client certificates must chain to; callers are "
               "identified by their certificate's first URI SAN (uri:...), else first DNS SAN (dns:...), "
               "else CN (cn:...); SIGHUP reloads it");
  flags.Define("policy", "",
               "TLS: the access policy (JSON: identities, uri:/dns:/cn:, to roles and teams); SIGHUP reloads it "
               "and the TLS files, for new calls and open streams; a broken file keeps the old one");
  flags.Define("insecure", "",
               "allow plain text on a non-loopback address (every caller is 'local', admin); logged", true);
  flags.Define("rate-per-identity", "0",
               "receipts and calls a second per caller identity before RESOURCE_EXHAUSTED (0: no limit)");
  flags.Define("concurrency-per-identity", "256",
               "calls and streams open at once per caller identity before RESOURCE_EXHAUSTED (0: no limit)");
  flags.Define("max-message-bytes", std::to_string(ledger::service::kMaxRequestBytes),
               "largest request accepted, in bytes");
  flags.Define("max-streams-per-connection", "100", "concurrent calls on one HTTP/2 connection");
  flags.Define("stream-idle-ms", "300000",
               "an append stream idle this long is closed (0: never); a connection without calls, after 10 minutes or this");
  flags.Define("config", "",
               "a JSON file of options: {\"option-name\": value, ...}; the command line wins");
  flags.Define("http-listen", "127.0.0.1:7421",
               "HTTP address for /metrics, /healthz, /readyz and the dashboard (HTTPS with client certificates "
               "when TLS is on); port 0 picks one; '' turns it off");
  flags.Define("http-connections-per-peer", "16",
               "HTTP port: connections open at once from one peer address (more are closed at once); raise it "
               "when the port sits behind a proxy that does not keep clients' addresses");
  flags.Define("grpc-health-listen", "",
               "plain-text gRPC address serving only grpc.health.v1 (Kubernetes' gRPC probes cannot use TLS); "
               "'' (default): none");
  flags.Define("shard-from-hostname", "",
               "a shard of a StatefulSet: the hostname's trailing number N (ledger-2: 2) makes the origin "
               "<origin>/shard-N, and replaces {shard} in --signing-key",
               true);
  flags.Define("health-listen", "",
               "plain-HTTP address serving only /healthz and /readyz (for probes that cannot present a "
               "certificate); '' (default): none");
  flags.Define("witness-policy", "",
               "a C2SP tlog-policy file: each checkpoint is submitted to its witnesses that have a URL "
               "(witness NAME VKEY http[s]://HOST:PORT), and their cosignatures are served with it");
  flags.Define("witness-tls-ca", "", "CA certificates (PEM) that https:// witnesses' certificates must chain to");
  flags.Define("witness-tls-cert", "", "client certificate (PEM) for witnesses that ask for one");
  flags.Define("witness-tls-key", "", "its private key (PEM)");
  flags.Define("witness-quorum-required", "",
               "exports wait for the checkpoint of the pack to be cosigned by the policy's quorum "
               "(at most --witness-quorum-wait-ms), and fail with UNAVAILABLE otherwise",
               true);
  flags.Define("witness-quorum-wait-ms", "10000", "how long an export waits for the witness quorum");
  flags.Define("help", "", "print this help", true);
  if (auto s = flags.Parse(argc, argv, 1); !s.ok()) return Fail(s);
  if (!flags.Get("config").empty()) {
    if (auto s = flags.LoadConfig(flags.Get("config")); !s.ok()) return Fail(s);
  }
  if (flags.Bool("help")) {
    std::cout << "usage: ledgerd --data DIR --listen HOST:PORT [options]\n\n" << flags.Usage();
    return 0;
  }
  if (flags.Get("data").empty()) return Fail(absl::InvalidArgumentError("--data: required"));
  auto interval = flags.Int("checkpoint-interval-ms");
  if (!interval.ok()) return Fail(interval.status());
  if (*interval < 1) {
    return Fail(absl::InvalidArgumentError("--checkpoint-interval-ms: must be >= 1"));
  }
  auto grace = flags.Int("unknown-grace-ms");
  if (!grace.ok()) return Fail(grace.status());
  if (*grace < 0) return Fail(absl::InvalidArgumentError("--unknown-grace-ms: must be >= 0"));
  auto sweep = flags.Int("sweep-interval-ms");
  if (!sweep.ok()) return Fail(sweep.status());
  if (*sweep < 1) return Fail(absl::InvalidArgumentError("--sweep-interval-ms: must be >= 1"));
  const std::string& projections = flags.Get("projections");
  if (projections != "true" && projections != "false") {
    return Fail(absl::InvalidArgumentError("--projections: true or false"));
  }
  auto staging_bytes = flags.Int("export-staging-bytes");
  if (!staging_bytes.ok()) return Fail(staging_bytes.status());
  if (*staging_bytes < 1) return Fail(absl::InvalidArgumentError("--export-staging-bytes: must be >= 1"));
  auto max_queued = flags.Int("max-queued");
  if (!max_queued.ok()) return Fail(max_queued.status());
  if (*max_queued < static_cast<int64_t>(ledger::log::kMaxReceiptsPerAppend)) {
    return Fail(absl::InvalidArgumentError("--max-queued: must be >= 1000"));
  }
  ledger::ops::HttpOptions http_options;
  auto per_peer = flags.Int("http-connections-per-peer");
  if (!per_peer.ok()) return Fail(per_peer.status());
  if (*per_peer < 1 || *per_peer > http_options.max_connections) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--http-connections-per-peer: must be in [1, ", http_options.max_connections, "]")));
  }
  http_options.max_per_peer = static_cast<int>(*per_peer);
  http_options.quick_paths = {"/healthz", "/readyz", "/metrics"};

  ledger::service::ServerOptions server_options;
  auto security = Security(flags, &server_options);
  if (!security.ok()) return Fail(security.status());
  auto limits = Limits(flags, &server_options);
  if (!limits.ok()) return Fail(limits.status());
  ledger::auth::Gate gate({.tls = !server_options.cert_pem.empty(), .limits = *limits}, *security);
  if (flags.Bool("insecure") && server_options.cert_pem.empty()) {
    ledger::jsonlog::Warn("insecure")
        .Msg(absl::StrCat("--insecure: plain text on ", flags.Get("listen"),
                          "; every caller is 'local' with role admin"))
        .Emit();
  }

  ledger::service::LogGrpcThroughJson();
  // A reader of stdout that went away is no reason to stop serving.
  signal(SIGPIPE, SIG_IGN);
  // Signals are taken by sigwait below, never by another thread.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  ledger::log::Log::Options options;
  options.data_dir = flags.Get("data");
  options.origin = flags.Get("origin");
  std::string signing_key = flags.Get("signing-key");
  if (flags.Bool("shard-from-hostname")) {
    auto shard = ShardFromHostname();
    if (!shard.ok()) return Fail(shard.status());
    options.origin = absl::StrCat(options.origin, "/shard-", *shard);
    for (size_t at; (at = signing_key.find("{shard}")) != std::string::npos;) {
      signing_key.replace(at, 7, std::to_string(*shard));
    }
  }
  options.checkpoint_interval_ms = *interval;
  options.sequencer.max_queued = static_cast<size_t>(*max_queued);
  options.accept_rollback = flags.Bool("accept-rollback");
  options.run_map = flags.Bool("run-map");
  ledger::query::StepProjector projector;
  if (projections == "true") options.sequencer.projector = &projector;
  std::error_code ec;
  const std::string& restore_from = flags.Get("restore-from");
  // A restore brings a store, never a key: a new key could not sign the
  // restored log, and a refused restore leaves the data directory as it was.
  std::string key_path = signing_key.empty() ? options.data_dir + "/signing.key" : signing_key;
  if (!restore_from.empty() && !std::filesystem::exists(key_path, ec)) {
    return Fail(absl::FailedPreconditionError(
        absl::StrCat("--restore-from: no signing key at ", key_path,
                     "; put the key that signed the backup there first (a restore never makes a new key)")));
  }
  bool had_data = std::filesystem::exists(options.data_dir, ec);
  bool had_tmp = std::filesystem::exists(options.data_dir + "/tmp", ec);
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) return Fail(absl::UnavailableError("--data: " + ec.message()));
  bool had_guard = std::filesystem::exists(options.data_dir + "/" + ledger::log::Log::kGuardFile);
  if (!restore_from.empty()) {
    if (auto s = Restore(restore_from, options.data_dir); !s.ok()) {
      if (!had_data) std::filesystem::remove(options.data_dir, ec);  // only when still empty
      return Fail(s);
    }
    ledger::jsonlog::Info("restored").Msg(absl::StrCat("restored the store from ", restore_from)).Emit();
  }
  // Evidence packs are staged beside the data, not in a shared /tmp (which
  // a hardened container does not even have writable).
  std::string tmp = options.data_dir + "/tmp";
  std::filesystem::create_directories(tmp, ec);
  if (ec) return Fail(absl::UnavailableError(absl::StrCat("--data: cannot create ", tmp, ": ", ec.message())));
  if (getenv("TMPDIR") == nullptr) setenv("TMPDIR", tmp.c_str(), 1);
  ledger::exporter::Staging staging(tmp, static_cast<uint64_t>(*staging_bytes));
  std::unique_ptr<ledger::backup::BackupRoot> backup_root;
  if (!flags.Get("backup-root").empty()) {
    auto opened = ledger::backup::BackupRoot::Open(flags.Get("backup-root"), options.data_dir);
    if (!opened.ok()) return Fail(opened.status());
    backup_root = *std::move(opened);
    server_options.backup_root = backup_root.get();
  }
  auto signer = ledger::log::LoadOrCreateKey(options.data_dir, signing_key, options.origin);
  if (!signer.ok()) return Fail(signer.status());
  auto log = ledger::log::Log::Open(options, *std::move(signer));
  if (!log.ok() && !restore_from.empty()) {
    // A refused restore leaves the data directory as it found it.
    std::filesystem::remove_all(options.data_dir + "/db", ec);
    if (!had_guard) std::filesystem::remove(options.data_dir + "/" + ledger::log::Log::kGuardFile, ec);
    if (!had_tmp) std::filesystem::remove(options.data_dir + "/tmp", ec);
    if (!had_data) std::filesystem::remove(options.data_dir, ec);  // only when still empty
    ledger::jsonlog::Warn("restore_undone").Msg("the restored store was removed again").Emit();
  }
  if (!log.ok()) return Fail(log.status());
  if ((*log)->migrated_receipts() > 0) {
    ledger::jsonlog::Info("receipt_index_migrated")
        .Int("rows", static_cast<int64_t>((*log)->migrated_receipts()))
        .Msg("receipt index rewritten from format 1 (global ids) to format 2 (ids scoped by team)")
        .Emit();
  }
  if ((*log)->migrated_run_heads() > 0) {
    ledger::jsonlog::Info("run_heads_migrated")
        .Int("rows", static_cast<int64_t>((*log)->migrated_run_heads()))
        .Msg("run rows rewritten from format 1 (last seq) to format 2 (count, last seq, leaf hash) for the "
             "run-head map")
        .Emit();
  }
  if (!(*log)->rollback_accepted().empty()) {
    ledger::jsonlog::Warn("rollback_accepted")
        .Msg(absl::StrCat("--accept-rollback: ", (*log)->rollback_accepted()))
        .Emit();
  }
  if (options.sequencer.projector != nullptr &&
      (*log)->projected_at_open() < (*log)->head().size) {
    ledger::jsonlog::Info("projections_caught_up")
        .Msg(absl::StrCat("projections caught up from the log, entries ", (*log)->projected_at_open(), " to ",
                          (*log)->head().size))
        .Emit();
  }
  if (!(*log)->integrity().ok()) {
    ledger::jsonlog::Error("appends_refused")
        .Msg(absl::StrCat("appends refused: ", (*log)->integrity().message()))
        .Emit();
  }
  std::unique_ptr<ledger::query::QueryService> query;
  std::unique_ptr<ledger::query::Sweeper> sweeper;
  std::vector<grpc::Service*> extra;
  // The store is open, so no other ledgerd uses this directory: what is
  // staged was left by exports that a crash cut short.
  auto stale = staging.RemoveStale();
  if (!stale.ok()) return Fail(stale.status());
  if (*stale > 0) {
    ledger::jsonlog::Info("staging_cleaned")
        .Msg(absl::StrCat("removed ", *stale, " staging entries left in ", tmp, " by exports that did not finish"))
        .Int("removed", *stale)
        .Emit();
  }
  ledger::exporter::ExportService exports(log->get(), &gate, &staging, static_cast<uint64_t>(*grace));
  extra.push_back(&exports);
  if (options.sequencer.projector != nullptr) {
    query = std::make_unique<ledger::query::QueryService>(log->get(), &gate);
    extra.push_back(query.get());
    if ((*log)->integrity().ok()) {
      ledger::query::Sweeper::Options so;
      so.grace_ms = *grace;
      so.interval_ms = *sweep;
      sweeper = std::make_unique<ledger::query::Sweeper>(log->get(), so);
    }
  }
  std::unique_ptr<ledger::witnesses::Witnesses> witnesses;
  if (!flags.Get("witness-policy").empty()) {
    auto started = StartWitnesses(flags, log->get(), options.data_dir);
    if (!started.ok()) return Fail(started.status());
    witnesses = *std::move(started);
    server_options.cosignatures = [w = witnesses.get()](std::string_view note) {
      std::vector<ledger::service::LedgerService::Cosignature> out;
      for (const auto& h : w->For(note)) out.push_back({h.witness, h.time, h.line});
      return out;
    };
    auto wait = flags.Int("witness-quorum-wait-ms");
    if (!wait.ok() || *wait < 0) {
      return Fail(absl::InvalidArgumentError("--witness-quorum-wait-ms: want a number of milliseconds >= 0"));
    }
    if (flags.Bool("witness-quorum-required")) {
      exports.SetCosign([w = witnesses.get(), wait = std::chrono::milliseconds(*wait)](const std::string& note) {
        return w->CosignedWithQuorum(note, wait);
      });
    } else {
      exports.SetCosign([w = witnesses.get()](const std::string& note) -> absl::StatusOr<std::string> {
        return w->Cosigned(note);
      });
    }
  } else if (flags.Bool("witness-quorum-required")) {
    return Fail(absl::InvalidArgumentError("--witness-quorum-required: needs --witness-policy"));
  }
  auto server = ledger::service::Server::Start(log->get(), &gate, flags.Get("listen"), extra, server_options);
  if (!server.ok()) return Fail(server.status());
  std::cout << "listening on " << (*server)->address() << std::endl;
  ledger::jsonlog::Info("listening")
      .Str("address", (*server)->address())
      .Str("origin", (*log)->origin())
      .Int("tree_size", static_cast<int64_t>((*log)->head().size))
      .Str("transport", server_options.cert_pem.empty() ? "plaintext" : "mtls")
      .Emit();

  std::atomic<bool> stopping{false};
  ledger::ops::Metrics metrics({.log = log->get(),
                                .ledger = &(*server)->service(),
                                .exports = &exports,
                                .sweeper = sweeper.get(),
                                .rpc = &(*server)->rpc_stats(),
                                .projections = options.sequencer.projector != nullptr});
  std::unique_ptr<ledger::ops::Dashboard> dashboard;
  if (query != nullptr) {
    dashboard = std::make_unique<ledger::ops::Dashboard>((*server)->InProcessChannel(), log->get(), &gate);
  }
  // With TLS the HTTP port is HTTPS and wants a client certificate too, so
  // that the dashboard knows its caller; --health-listen serves the
  // probes in plain text.
  ledger::ops::HttpTls http_tls{server_options.cert_pem, server_options.key_pem, server_options.client_ca_pem};
  std::unique_ptr<ledger::ops::HttpServer> http, health;
  if (!flags.Get("http-listen").empty()) {
    auto started = ledger::ops::HttpServer::Start(
        flags.Get("http-listen"),
        [&](const ledger::ops::HttpRequest& r) {
          return Operate(r, **log, &metrics, dashboard.get(), &gate, stopping.load(), witnesses.get());
        },
        http_options, gate.tls() ? &http_tls : nullptr);
    if (!started.ok()) return Fail(absl::Status(started.status().code(),
                                                absl::StrCat("--http-listen: ", started.status().message())));
    http = *std::move(started);
    std::cout << "http on " << http->address() << std::endl;
  }
  std::unique_ptr<ledger::service::HealthServer> grpc_health;
  if (!flags.Get("grpc-health-listen").empty()) {
    auto started = ledger::service::HealthServer::Start(flags.Get("grpc-health-listen"));
    if (!started.ok()) return Fail(absl::Status(started.status().code(),
                                                absl::StrCat("--grpc-health-listen: ", started.status().message())));
    grpc_health = *std::move(started);
    std::cout << "grpc health on " << grpc_health->address() << std::endl;
  }
  if (!flags.Get("health-listen").empty()) {
    auto started = ledger::ops::HttpServer::Start(flags.Get("health-listen"), [&](const ledger::ops::HttpRequest& r) {
      return Operate(r, **log, nullptr, nullptr, nullptr, stopping.load());
    });
    if (!started.ok()) return Fail(absl::Status(started.status().code(),
                                                absl::StrCat("--health-listen: ", started.status().message())));
    health = *std::move(started);
    std::cout << "health on " << health->address() << std::endl;
  }

  // Wait for a signal; meanwhile, if the store fails in a way RocksDB
  // cannot resume from, exit so that a restart (the supervisor's) recovers.
  timespec tick{0, 200'000'000};
  int sig = -1;
  absl::Status failure;
  while ((sig < 0 || sig == SIGHUP) && failure.ok()) {
    if (sig == SIGHUP) {
      ReloadPolicy(flags.Get("policy"), &gate);
      ReloadTls(flags, server->get());
    }
    sig = sigtimedwait(&stop, nullptr, &tick);
    failure = (*log)->store().failure();
  }
  if (!failure.ok()) {
    stopping = true;
    if (grpc_health) grpc_health->SetServing(false);
    http.reset();
    health.reset();
    ledger::jsonlog::Error("exiting")
        .Msg(absl::StrCat("exiting: ", failure.message(),
                          "; every acknowledged receipt is on disk, and a restart recovers the store"))
        .Int("exit_code", 75)
        .Emit();
    sweeper.reset();
    (*server)->Shutdown();
    witnesses.reset();  // its threads read the log
    log->reset();
    return 75;  // EX_TEMPFAIL
  }
  ledger::jsonlog::Info("stopping").Msg(absl::StrCat("stopping on signal ", sig)).Int("signal", sig).Emit();
  stopping = true;
  if (grpc_health) grpc_health->SetServing(false);
  http.reset();  // before what its handler reads
  health.reset();
  sweeper.reset();
  (*server)->Shutdown();
  witnesses.reset();  // its threads read the log
  log->reset();
  return 0;
}
