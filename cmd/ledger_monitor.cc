// ledger-monitor: follows a ledger's log over C2SP tlog-tiles, replays
// every entry, and cosigns each checkpoint-time note whose run-head and
// team-head map roots are the entries' own (CONTRACT section 5c). An
// auditor runs it where the ledger's operator cannot reach its key.
//
//   ledger-monitor --data DIR --log URL --log-key VKEY_FILE [--name NAME] [--key FILE|pkcs11:URI]
//                  [--listen HOST:PORT] [--tls-cert F --tls-key F --client-ca F] [--insecure]
//                  [--interval-ms N] [--once]
//                  [--log-tls-ca F [--log-tls-cert F --log-tls-key F]]
//   ledger-monitor vkey --data DIR [--name NAME] [--key FILE|pkcs11:URI]
//
// It reads GET <URL>/checkpoint/time-note and the entry bundles under
// <URL>/tlog/ (with --log-tls-* over HTTPS, presenting an auditor's
// certificate when the ledger's tiles are not public). It serves, on
// --listen: POST /cosign (a time note the ledger gives, checked and
// cosigned once the monitor replayed the log to its size: 200 with the map
// cosignature line; 409 for a note below the entries replayed; 422 when
// refused, the alarm raised; 403 for a note not the log's), GET /cosigned
// (the note it cosigned last, with its map cosignature; 404 before the
// first), /metrics and /healthz. Prints
// "listening on HOST:PORT" once it serves.
//
// When a note's roots are not the entries' (or the entries do not chain),
// it writes the evidence to <data>/alarm.json, logs `monitor_alarm`, sets
// ledger_monitor_alarm to 1, and cosigns nothing again until an operator
// removes that file and restarts it. The key is --key, or <data>/monitor.key
// (created on first use); the replay is <data>/replay.state (monitor.h).
// One process per data directory (<data>/LOCK). SIGINT or SIGTERM stops it.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cmd/auditor_program.h"
#include "cmd/flags.h"
#include "cmd/loopback.h"
#include "ledger/format/cosign/mapcosign.h"
#include "monitor/server/monitor.h"
#include "util/http/client.h"
#include "util/http/http.h"
#include "util/jsonlog/jsonlog.h"
#include "util/sync/mutex.h"

namespace {

using ledger::cosign::MapCosigner;

constexpr char kDefaultName[] = "ledger-monitor.local";

int Fail(const absl::Status& s) {
  ledger::jsonlog::Error("start_failed").Msg(std::string(s.message())).Emit();
  return 1;
}

uint64_t Now() { return static_cast<uint64_t>(std::max<std::time_t>(1, std::time(nullptr))); }

// The log's verifier key: the first line of --log-key's file, as `ledgerctl vkey` prints it.
absl::StatusOr<ledger::note::Verifier> LogKey(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("--log-key: required (the ledger's verifier key file)");
  auto text = ledger::cmd::ReadFlagFile("log-key", path);
  if (!text.ok()) return text.status();
  auto key = ledger::note::Verifier::Parse(text->substr(0, text->find_first_of("\r\n")));
  if (!key.ok()) return absl::InvalidArgumentError(absl::StrCat("--log-key: ", path, ": ", key.status().message()));
  return key;
}

// How the log is read: HTTPS with --log-tls-ca (and a client certificate
// with --log-tls-cert and --log-tls-key).
absl::StatusOr<std::shared_ptr<const ledger::http::TlsClient>> LogTls(const ledger::cmd::Flags& flags) {
  const std::string& url = flags.Get("log");
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log: '", url, "': want the ledger's HTTP port, http://HOST:PORT or https://HOST:PORT"));
  }
  if (url.rfind("https://", 0) != 0) return nullptr;
  auto tls = std::make_shared<ledger::http::TlsClient>();
  for (auto [flag, part] : {std::pair{"log-tls-ca", &tls->ca_pem}, std::pair{"log-tls-cert", &tls->cert_pem},
                            std::pair{"log-tls-key", &tls->key_pem}}) {
    if (flags.Get(flag).empty()) continue;
    auto pem = ledger::cmd::ReadFlagFile(flag, flags.Get(flag));
    if (!pem.ok()) return pem.status();
    *part = *std::move(pem);
  }
  if (tls->ca_pem.empty()) return absl::InvalidArgumentError("--log-tls-ca: required with an https:// --log");
  if (tls->cert_pem.empty() != tls->key_pem.empty()) {
    return absl::InvalidArgumentError("--log-tls-cert and --log-tls-key: give both or neither");
  }
  return tls;
}

// Rounds until `stop`: one per --interval-ms, sooner while catching up.
// Returns once halted by an alarm (serving goes on) or stopped.
void Follow(ledger::monitor::Monitor& monitor, std::chrono::milliseconds interval, bool once,
            const std::atomic<bool>& stop, int* exit_code) {
  while (!stop.load()) {
    auto round = monitor.Step();
    if (round.ok()) {
      if (round->cosigned) {
        ledger::jsonlog::Info("monitor_cosigned")
            .Int("tree_size", static_cast<int64_t>(round->note_size))
            .Int("replayed", static_cast<int64_t>(round->replayed))
            .Emit();
      }
      *exit_code = 0;
    } else if (absl::IsFailedPrecondition(round.status())) {
      *exit_code = 3;
      return;  // the alarm was logged; serving goes on
    } else {
      ledger::jsonlog::Warn("monitor_round_failed").Msg(std::string(round.status().message())).Emit();
      *exit_code = 1;
    }
    if (once) return;
    for (auto left = interval; left.count() > 0 && !stop.load(); left -= std::chrono::milliseconds(50)) {
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(50)));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ledger::cmd::Flags flags;
  flags.Define("data", "", "data directory (created if missing; holds monitor.key, replay.state, cosigned.note)");
  flags.Define("log", "", "the ledger's HTTP port to follow: http://HOST:PORT or https://HOST:PORT");
  flags.Define("log-key", "", "the ledger's verifier key file, as `ledgerctl vkey` prints it");
  flags.Define("log-tls-ca", "", "CA certificates (PEM) the ledger's HTTPS certificate must chain to");
  flags.Define("log-tls-cert", "", "client certificate (PEM) presented to the ledger: an identity that may read tiles");
  flags.Define("log-tls-key", "", "its private key (PEM)");
  flags.Define("listen", "127.0.0.1:7490",
               "HTTP address HOST:PORT for /cosigned, /metrics, /healthz; port 0 picks a free port");
  flags.Define("tls-cert", "", "server certificate (PEM) for HTTPS");
  flags.Define("tls-key", "", "its private key (PEM)");
  flags.Define("client-ca", "", "CA certificates (PEM) that clients' certificates (the ledgers') must chain to");
  flags.Define("insecure", "false", "allow plain HTTP on a non-loopback address", true);
  flags.Define("name", "",
               std::string("the monitor's key name, set when the key is created (default ") + kDefaultName + ")");
  flags.Define("key", "",
               "the monitor key file (PRIVATE+KEY+<name>+<id>+<base64 0xff evidence-ledger/map-cosignature/v1||seed>), "
               "or an RFC 7512 URI of a key kept in a PKCS#11 token (needs --name); default <data>/monitor.key, "
               "created");
  flags.Define("interval-ms", "1000", "time between rounds (each reads the latest time note)");
  flags.Define("once", "false", "one round, then exit: 0 done, 1 the log could not be read, 3 the alarm", true);
  flags.Define("help", "false", "print this help", true);
  if (auto code = ledger::cmd::ParseOrHelp(
          flags, argc, argv,
          "usage: ledger-monitor --data DIR --log URL --log-key VKEY_FILE [--listen HOST:PORT] [--once]\n"
          "       ledger-monitor vkey --data DIR [--name NAME] [--key FILE|pkcs11:URI]\n");
      code.has_value()) {
    return *code;
  }
  const std::string data = flags.Get("data");
  if (data.empty()) return Fail(absl::InvalidArgumentError("--data: required"));
  std::error_code ec;
  std::filesystem::create_directories(data, ec);
  if (ec) return Fail(absl::UnavailableError(absl::StrCat("--data: cannot create ", data, ": ", ec.message())));
  auto key = ledger::cmd::CosignerKey<MapCosigner>(flags, data, {"monitor.key", kDefaultName, "monitor"});
  if (!key.ok()) return Fail(key.status());
  if (auto code = ledger::cmd::VkeyCommand(flags, *key); code.has_value()) return *code;
  if (absl::Status s = ledger::cmd::LockDataDir(data, "ledger-monitor"); !s.ok()) return Fail(s);
  auto log_key = LogKey(flags.Get("log-key"));
  if (!log_key.ok()) return Fail(log_key.status());
  auto tls = LogTls(flags);
  if (!tls.ok()) return Fail(tls.status());
  int64_t interval_ms = 0;
  if (!absl::SimpleAtoi(flags.Get("interval-ms"), &interval_ms) || interval_ms < 10) {
    return Fail(absl::InvalidArgumentError("--interval-ms: want a whole number of milliseconds, at least 10"));
  }
  std::string base = flags.Get("log");
  while (base.ends_with("/")) base.pop_back();
  ledger::monitor::Options options{
      .log_url = base,
      .log_key = *log_key,
      .cosigner = std::make_shared<MapCosigner>(*std::move(key)),
      .dir = data,
      .get =
          [tls = *tls](const std::string& url) {
            return ledger::http::Fetch(
                "GET", url, "",
                {.timeout_ms = 30'000, .max_answer = size_t{17} << 20, .tls = tls.get(), .peer = "log"});
          },
      .now = Now,
  };
  const std::string vkey = options.cosigner->VerifierKey();
  auto monitor = ledger::monitor::Monitor::Open(std::move(options));
  if (!monitor.ok()) return Fail(monitor.status());

  signal(SIGPIPE, SIG_IGN);
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::atomic<bool> stop{false};
  int exit_code = 0;
  if (flags.Bool("once")) {
    Follow(**monitor, std::chrono::milliseconds(interval_ms), true, stop, &exit_code);
    return exit_code;
  }
  auto serving_tls = ledger::cmd::ServingTls(flags);
  if (!serving_tls.ok()) return Fail(serving_tls.status());
  ledger::http::HttpOptions http_options;
  http_options.quick_paths = {"/healthz"};
  http_options.max_body_bytes = 64 * 1024;  // a time note with many signature lines
  ledger::monitor::Monitor& served = **monitor;
  auto server = ledger::http::HttpServer::Start(
      flags.Get("listen"), [&served](const ledger::http::HttpRequest& r) { return ledger::monitor::Handle(r, served); },
      http_options, *serving_tls ? &**serving_tls : nullptr);
  if (!server.ok()) {
    return Fail(absl::Status(server.status().code(), absl::StrCat("--listen: ", server.status().message())));
  }
  ledger::jsonlog::Info("monitor_started")
      .Str("vkey", vkey)
      .Str("log", flags.Get("log"))
      .Str("log_key", log_key->name())
      .Int("replayed", static_cast<int64_t>((*monitor)->status().replayed))
      .Str("address", (*server)->address())
      .Emit();
  std::cout << "listening on " << (*server)->address() << "\n" << std::flush;
  std::thread follower([&] { Follow(**monitor, std::chrono::milliseconds(interval_ms), false, stop, &exit_code); });
  int sig = 0;
  sigwait(&stop_signals, &sig);
  ledger::jsonlog::Info("stopping").Int("signal", sig).Emit();
  stop.store(true);
  follower.join();
  return 0;
}
