// ledger-witness: a transparency-log witness (C2SP tlog-witness) that an
// auditor or a regulator runs beside the ledgers it watches.
//
//   ledger-witness --data DIR --listen HOST:PORT --log VKEY_FILE [--log VKEY_FILE ...]
//                  [--name NAME] [--key FILE|pkcs11:URI] [--tls-cert F --tls-key F --client-ca F] [--insecure]
//                  [--health-listen HOST:PORT]
//   ledger-witness vkey --data DIR [--name NAME] [--key FILE|pkcs11:URI]
//
// Serves POST /add-checkpoint and GET /<hex sha256(origin)>/checkpoint, and
// GET /healthz; --health-listen serves /healthz alone in plain HTTP, for
// probes that cannot present a client certificate. Prints "listening on
// HOST:PORT" (the real port) once it serves, then "health on HOST:PORT"
// with --health-listen. The key is --key FILE when given (a mounted Secret;
// never created), or --key pkcs11:URI, a key kept in a token that cosigns
// without letting it out (ledger/keys/pkcs11.h; --name required), else
// <data>/witness.key (mode 0600, created on first use); the records of what it cosigned are <data>/logs/
// (witness/state.h). One process per data directory (<data>/LOCK). SIGINT or SIGTERM stops it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "cmd/auditor_program.h"
#include "cmd/flags.h"
#include "cmd/loopback.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/keys/pkcs11.h"
#include "util/files/files.h"
#include "util/http/http.h"
#include "util/jsonlog/jsonlog.h"
#include "witness/server/state.h"
#include "witness/server/witness.h"

namespace {

using ledger::cosign::Cosigner;

constexpr char kDefaultName[] = "ledger-witness.local";
constexpr size_t kMaxBody = 64 * 1024;  // 63 proof lines and a checkpoint with many signatures

int Fail(const absl::Status& s) {
  ledger::jsonlog::Error("start_failed").Msg(std::string(s.message())).Emit();
  return 1;
}

// The logs' verifier keys: each file holds one key, as `ledgerctl vkey`
// prints it.
absl::StatusOr<std::vector<ledger::note::Verifier>> LoadLogKeys(const std::vector<std::string>& files) {
  if (files.empty()) return absl::InvalidArgumentError("--log: give at least one log's verifier key file");
  std::vector<ledger::note::Verifier> keys;
  for (const std::string& file : files) {
    auto text = ledger::cmd::ReadFlagFile("log", file);
    if (!text.ok()) return text.status();
    std::string line = text->substr(0, text->find_first_of("\r\n"));
    auto key = ledger::note::Verifier::Parse(line);
    if (!key.ok()) return absl::InvalidArgumentError(absl::StrCat("--log: ", file, ": ", key.status().message()));
    keys.push_back(*std::move(key));
  }
  return keys;
}

bool IsOriginHash(std::string_view s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// The HTTP surface: a thin adapter over witness::Witness.
ledger::http::HttpResponse Serve(const ledger::http::HttpRequest& r, ledger::witness::Witness& witness) {
  ledger::witness::Reply reply;
  if (r.path == "/add-checkpoint") {
    if (r.method != "POST") {
      ledger::http::HttpResponse m = ledger::http::Text(405, "add-checkpoint: POST only\n");
      m.headers["Allow"] = "POST";
      return m;
    }
    reply = witness.AddCheckpoint(r.body, r.peer.substr(0, r.peer.rfind(':')));
  } else if (r.path == "/add-key-rotation") {
    if (r.method != "POST") {
      ledger::http::HttpResponse m = ledger::http::Text(405, "add-key-rotation: POST only\n");
      m.headers["Allow"] = "POST";
      return m;
    }
    reply = witness.AddKeyRotation(r.body, r.peer.substr(0, r.peer.rfind(':')));
  } else if (r.path.size() == 1 + 64 + 11 && r.path.ends_with("/checkpoint") &&
             IsOriginHash(std::string_view(r.path).substr(1, 64)) && r.method != "POST") {
    reply = witness.GetCheckpoint(std::string_view(r.path).substr(1, 64));
  } else if (r.path == "/healthz") {
    reply.body = "ok\n";
  } else {
    reply.status = 404;
    reply.body = "not found: POST /add-checkpoint, POST /add-key-rotation, GET /<hex sha256(origin)>/checkpoint\n";
  }
  ledger::http::HttpResponse out = ledger::http::Text(reply.status, std::move(reply.body));
  out.content_type = reply.content_type;
  return out;
}

// The --health-listen port: /healthz and nothing else, in plain HTTP.
ledger::http::HttpResponse ServeHealth(const ledger::http::HttpRequest& r) {
  if (r.path == "/healthz") return ledger::http::Text(200, "ok\n");
  return ledger::http::Text(404, "not found: this port serves GET /healthz only\n");
}

// Takes the repeated --log flags out of argv (Flags keeps one value each).
std::vector<std::string> TakeLogFlags(int* argc, char** argv) {
  std::vector<std::string> logs;
  int out = 1;
  for (int i = 1; i < *argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--log" && i + 1 < *argc) {
      logs.emplace_back(argv[++i]);
    } else if (a.starts_with("--log=")) {
      logs.emplace_back(a.substr(6));
    } else {
      argv[out++] = argv[i];
    }
  }
  *argc = out;
  return logs;
}

}  // namespace

namespace {

// The witness's key: --key FILE, --key pkcs11:URI, or <data>/witness.key
// (created on first use).
absl::StatusOr<Cosigner> WitnessKey(const ledger::cmd::Flags& flags, const std::string& data) {
  return ledger::cmd::CosignerKey<Cosigner>(flags, data, {"witness.key", kDefaultName, "witness"});
}

// Serves `witness` on --listen until SIGINT or SIGTERM.
int ServeUntilStopped(const ledger::cmd::Flags& flags, ledger::witness::Witness& witness, const Cosigner& key,
                      const std::optional<ledger::http::HttpTls>& tls) {
  signal(SIGPIPE, SIG_IGN);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  ledger::http::HttpOptions options;
  options.max_body_bytes = kMaxBody;
  options.quick_paths = {"/healthz"};
  auto server = ledger::http::HttpServer::Start(
      flags.Get("listen"), [&witness](const ledger::http::HttpRequest& r) { return Serve(r, witness); }, options,
      tls ? &*tls : nullptr);
  if (!server.ok())
    return Fail(absl::Status(server.status().code(), absl::StrCat("--listen: ", server.status().message())));
  std::unique_ptr<ledger::http::HttpServer> health;
  if (!flags.Get("health-listen").empty()) {
    auto started = ledger::http::HttpServer::Start(flags.Get("health-listen"), ServeHealth);
    if (!started.ok()) {
      return Fail(absl::Status(started.status().code(), absl::StrCat("--health-listen: ", started.status().message())));
    }
    health = *std::move(started);
  }
  ledger::jsonlog::Info("witness_started")
      .Str("name", key.name())
      .Str("vkey", key.VerifierKey())
      .Str("key", key.key().where())
      .Str("address", (*server)->address())
      .Emit();
  std::string ready = absl::StrCat("listening on ", (*server)->address(), "\n");
  if (health != nullptr) absl::StrAppend(&ready, "health on ", health->address(), "\n");
  std::cout << ready << std::flush;
  int sig = 0;
  sigwait(&stop, &sig);
  ledger::jsonlog::Info("stopping").Int("signal", sig).Emit();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> log_files = TakeLogFlags(&argc, argv);
  ledger::cmd::Flags flags;
  flags.Define("data", "", "data directory (created if missing; holds witness.key and the records in logs/)");
  flags.Define("listen", "127.0.0.1:7480", "HTTP address HOST:PORT; port 0 picks a free port");
  flags.Define("name", "",
               std::string("the witness's key name, set when the key is created (default ") + kDefaultName + ")");
  flags.Define(
      "key", "",
      "the witness key file (PRIVATE+KEY+<name>+<id>+<base64 0x04||seed>), or an RFC 7512 URI of a key kept in a "
      "PKCS#11 token (pkcs11:token=...;object=...?module-path=...&pin-source=file:...; needs --name); default "
      "<data>/witness.key, created");
  flags.Define("tls-cert", "", "server certificate (PEM) for HTTPS");
  flags.Define("tls-key", "", "its private key (PEM)");
  flags.Define("client-ca", "", "CA certificates (PEM) that clients' certificates must chain to");
  flags.Define("insecure", "false", "allow plain HTTP on a non-loopback address", true);
  flags.Define("health-listen", "",
               "plain-HTTP address serving only /healthz (for probes that cannot present a certificate); '' "
               "(default): none");
  flags.Define("help", "false", "print this help", true);
  if (auto code = ledger::cmd::ParseOrHelp(
          flags, argc, argv,
          "usage: ledger-witness --data DIR --listen HOST:PORT --log VKEY_FILE [--log VKEY_FILE ...]\n"
          "       ledger-witness vkey --data DIR [--name NAME] [--key FILE|pkcs11:URI]\n");
      code.has_value()) {
    return *code;
  }
  const std::string data = flags.Get("data");
  if (data.empty()) return Fail(absl::InvalidArgumentError("--data: required"));
  std::error_code ec;
  std::filesystem::create_directories(data + "/logs", ec);
  if (ec) return Fail(absl::UnavailableError(absl::StrCat("--data: cannot create ", data, "/logs: ", ec.message())));
  auto key = WitnessKey(flags, data);
  if (!key.ok()) return Fail(key.status());
  if (auto code = ledger::cmd::VkeyCommand(flags, *key); code.has_value()) return *code;
  // (vkey, above, only reads or creates the key.)
  if (absl::Status s = ledger::cmd::LockDataDir(data, "ledger-witness"); !s.ok()) return Fail(s);
  auto logs = LoadLogKeys(log_files);
  if (!logs.ok()) return Fail(logs.status());
  auto witness = ledger::witness::Witness::Open(data + "/logs", *key, *std::move(logs), [] {
    return static_cast<uint64_t>(std::max<std::time_t>(1, std::time(nullptr)));
  });
  if (!witness.ok()) return Fail(witness.status());
  auto tls = ledger::cmd::ServingTls(flags);
  if (!tls.ok()) return Fail(tls.status());
  return ServeUntilStopped(flags, **witness, *key, *tls);
}
