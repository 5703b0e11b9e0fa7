// ledgerd: the evidence ledger server.
//
//   ledgerd --data DIR --listen HOST:PORT [--origin O] [--signing-key FILE|pkcs11:URI]
//           [--checkpoint-interval-ms N] [--unknown-grace-ms N] ...
//
// Prints "listening on HOST:PORT" (the real port) once it serves. SIGINT or
// SIGTERM stops it: no new calls, in-flight appends finish, a final
// checkpoint is signed, exit 0. Run with no arguments at all, it prints a
// short usage on stderr and exits 2.
#include <arpa/inet.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"
#include "cmd/flags.h"
#include "cmd/ledgerd_config.h"
#include "cmd/ledgerd_http.h"
#include "cmd/ledgerd_retention.h"
#include "cmd/ledgerd_security.h"
#include "cmd/ledgerd_tsa.h"
#include "cmd/ledgerd_witnesses.h"
#include "export/service/export_service.h"
#include "ledger/format/tlogpolicy/tlogpolicy.h"
#include "ledger/keys/key_file.h"
#include "ledger/keys/pkcs11_uri.h"
#include "ledger/keys/signing_key.h"
#include "ledger/rpc/auth/gate.h"
#include "ledger/rpc/server/server.h"
#include "ledger/rpc/service/service.h"
#include "ledger/storage/backup/backup_root.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/replication/node.h"
#include "monitor/client/monitors.h"
#include "ops/caller.h"
#include "ops/dashboard.h"
#include "ops/metrics.h"
#include "ops/otlp/listener.h"
#include "query/projector/projector.h"
#include "query/service/query_service.h"
#include "query/sweeper/sweeper.h"
#include "util/files/files.h"
#include "util/http/client.h"
#include "util/http/http.h"
#include "util/jsonlog/jsonlog.h"
#include "witness/client/witnesses.h"

namespace {

int Fail(const absl::Status& s) {
  ledger::jsonlog::Error("start_failed").Msg(std::string(s.message())).Emit();
  return 1;
}

// What `ledgerd` alone prints (exit 2): the flags everyone needs; every
// flag is under --help.
constexpr char kShortUsage[] =
    "usage: ledgerd --data DIR [--listen HOST:PORT] [--http-listen HOST:PORT] [options]\n"
    "\n"
    "  --data DIR             the ledger's data directory: its store and signing key (created if missing)\n"
    "  --listen HOST:PORT     the gRPC address (default 127.0.0.1:7420; port 0 picks a free port)\n"
    "  --http-listen H:P      the dashboard, /metrics and health (default 127.0.0.1:7421)\n"
    "  --tls-cert F --tls-key F --client-ca F --policy F\n"
    "                         mutual TLS, to serve beyond this machine (without them: plain text on loopback)\n"
    "\n"
    "For example: ledgerd --data /var/lib/ledger\n"
    "Every flag: ledgerd --help. The manual: docs/operating.md.\n";

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
    return absl::FailedPreconditionError(
        absl::StrCat("--restore-from: ", data, "/db exists; restore into a data directory without a store"));
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

absl::StatusOr<ledger::auth::Limiter::Options> Limits(const ledger::cmd::Flags& flags,
                                                      ledger::server::ServerOptions* options) {
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

}  // namespace

using ledger::cmd::ClientTls;

namespace {

using ledger::cmd::Flags;
using ledger::cmd::LedgerdConfig;
using ledger::cmd::Operate;
using ledger::cmd::StartWitnesses;

// The parts of a running ledgerd, opened and started in order, stopped in
// the reverse order (each part only uses parts declared before it).
class Daemon {
 public:
  Daemon(const Flags& flags, const LedgerdConfig& config) : flags_(flags), config_(config) {}

  // The gate: TLS files, the access policy, the limits.
  absl::Status Secure();
  // The data directory (restored from a backup with --restore-from), the
  // key, the log, the export staging area and the backup root.
  absl::Status Open();
  // The services, the witnesses, the gRPC server, then the HTTP ports;
  // prints "listening on" and the ports' addresses once every one of them
  // serves (nothing when one cannot start).
  absl::Status Serve();
  // Until SIGINT or SIGTERM (SIGHUP reloads the policy and TLS files), or
  // a store failure RocksDB cannot resume from; then stops. The exit code.
  int Wait();

 private:
  absl::Status PrepareDataDir(bool* had_data, bool* had_tmp, bool* had_guard);
  // With --replication: the node, whose hooks go into the log's options.
  absl::Status PrepareReplication();
  void LogOpened() const;
  absl::Status StartWitnessing();
  // Each time note to the monitors of --monitor-policy (or of
  // --witness-policy's monitor lines).
  absl::Status StartMonitoring();
  // Each time note (one in --tsa-every) to the TSA of --tsa.
  absl::Status StartStamping();
  absl::Status StartHttp(std::string* ready);
  void Stop();

  const Flags& flags_;
  const LedgerdConfig config_;
  sigset_t signals_{};
  ledger::server::ServerOptions server_options_;
  std::unique_ptr<ledger::auth::Gate> gate_;
  ledger::log::Log::Options options_;
  std::string signing_key_;
  ledger::query::StepProjector projector_;
  std::unique_ptr<ledger::exporter::Staging> staging_;
  std::unique_ptr<ledger::backup::BackupRoot> backup_root_;
  std::unique_ptr<ledger::replication::Node> node_;  // stopped before log_ goes, destroyed after it
  std::unique_ptr<ledger::log::Log> log_;
  std::unique_ptr<ledger::service::LedgerService> ledger_;
  std::unique_ptr<ledger::exporter::ExportService> exports_;
  std::unique_ptr<ledger::query::QueryService> query_;
  std::unique_ptr<ledger::query::Sweeper> sweeper_;
  std::unique_ptr<ledger::witnesses::Witnesses> witnesses_;
  std::unique_ptr<ledger::monitors::Monitors> monitors_;
  std::unique_ptr<ledger::tsa::Stamper> stamper_;
  std::shared_ptr<ledger::cmd::Retention> retention_;  // stopped before log_ goes
  std::unique_ptr<ledger::server::Server> server_;
  std::atomic<bool> stopping_{false};
  std::unique_ptr<ledger::ops::Metrics> metrics_;
  std::unique_ptr<ledger::ops::Dashboard> dashboard_;
  std::unique_ptr<ledger::otlp::Listener> otlp_;
  std::unique_ptr<ledger::http::HttpServer> http_, health_, otlp_http_;
  std::unique_ptr<ledger::server::HealthServer> grpc_health_;
};

absl::Status Daemon::Secure() {
  auto security = ledger::cmd::Security(flags_, &server_options_);
  if (!security.ok()) return security.status();
  auto limits = Limits(flags_, &server_options_);
  if (!limits.ok()) return limits.status();
  gate_ = std::make_unique<ledger::auth::Gate>(
      ledger::auth::Gate::Options{.tls = !server_options_.cert_pem.empty(), .limits = *limits}, *security);
  ledger::cmd::WarnPlainText(flags_);
  ledger::server::LogGrpcThroughJson();
  // A reader of stdout that went away is no reason to stop serving.
  signal(SIGPIPE, SIG_IGN);
  // Signals are taken by sigwait in Wait, never by another thread.
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGINT);
  sigaddset(&signals_, SIGTERM);
  sigaddset(&signals_, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
  return absl::OkStatus();
}

// Creates the data directory and restores a backup into it (a restore
// brings a store, never a key: a new key could not sign the restored log).
// Says what was there before, so a refused restore can be undone.
absl::Status Daemon::PrepareDataDir(bool* had_data, bool* had_tmp, bool* had_guard) {
  std::error_code ec;
  const std::string& restore_from = flags_.Get("restore-from");
  std::string key_path = signing_key_.empty() ? options_.data_dir + "/signing.key" : signing_key_;
  if (!restore_from.empty() && !ledger::keys::IsPkcs11Uri(key_path) && !std::filesystem::exists(key_path, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--restore-from: no signing key at ", key_path,
                     "; put the key that signed the backup there first (a restore never makes a new key)"));
  }
  *had_data = std::filesystem::exists(options_.data_dir, ec);
  *had_tmp = std::filesystem::exists(options_.data_dir + "/tmp", ec);
  std::filesystem::create_directories(options_.data_dir, ec);
  if (ec) return absl::UnavailableError("--data: " + ec.message());
  const std::string guard = options_.data_dir + "/" + ledger::log::Log::kGuardFile;
  *had_guard = std::filesystem::exists(guard, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("--data: cannot read ", guard, ": ", ec.message()));
  if (restore_from.empty()) return absl::OkStatus();
  if (auto s = Restore(restore_from, options_.data_dir); !s.ok()) {
    if (!*had_data) std::filesystem::remove(options_.data_dir, ec);  // only when still empty
    return s;
  }
  ledger::jsonlog::Info("restored").Msg(absl::StrCat("restored the store from ", restore_from)).Emit();
  return absl::OkStatus();
}

absl::Status Daemon::Open() {
  options_.data_dir = flags_.Get("data");
  options_.origin = flags_.Get("origin");
  signing_key_ = flags_.Get("signing-key");
  // A data directory started again without --origin is the log its key
  // names: the key's name is the origin checkpoints are signed with.
  if (!flags_.Has("origin") && !flags_.Bool("shard-from-hostname") && !ledger::keys::IsPkcs11Uri(signing_key_)) {
    const std::string key = signing_key_.empty() ? options_.data_dir + "/signing.key" : signing_key_;
    auto name = ledger::keys::KeyFileName(key);
    if (name.ok()) {
      options_.origin = *name;
    } else if (!absl::IsNotFound(name.status())) {
      return name.status();
    }
  }
  if (flags_.Bool("shard-from-hostname")) {
    auto shard = ShardFromHostname();
    if (!shard.ok()) return shard.status();
    options_.origin = absl::StrCat(options_.origin, "/shard-", *shard);
    for (size_t at; (at = signing_key_.find("{shard}")) != std::string::npos;) {
      signing_key_.replace(at, 7, std::to_string(*shard));
    }
  }
  options_.checkpoint_interval_ms = config_.checkpoint_interval_ms;
  options_.sequencer.max_queued = static_cast<size_t>(config_.max_queued);
  options_.accept_rollback = flags_.Bool("accept-rollback");
  options_.run_map = flags_.Bool("run-map");
  auto store_memory_mb = flags_.Int("store-memory-mb");
  if (!store_memory_mb.ok()) return store_memory_mb.status();
  if (*store_memory_mb < 16 || *store_memory_mb > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--store-memory-mb: from 16 to 1073741824 (MiB), not ", *store_memory_mb));
  }
  options_.store_memory_bytes = static_cast<uint64_t>(*store_memory_mb) << 20;
  if (config_.projections) options_.sequencer.projector = &projector_;
  if (auto s = PrepareReplication(); !s.ok()) return s;
  bool had_data = false, had_tmp = false, had_guard = false;
  if (auto s = PrepareDataDir(&had_data, &had_tmp, &had_guard); !s.ok()) return s;
  // Evidence packs are staged beside the data, not in a shared /tmp (which
  // a hardened container does not even have writable).
  std::error_code ec;
  std::string tmp = options_.data_dir + "/tmp";
  std::filesystem::create_directories(tmp, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("--data: cannot create ", tmp, ": ", ec.message()));
  if (getenv("TMPDIR") == nullptr) setenv("TMPDIR", tmp.c_str(), 1);
  staging_ = std::make_unique<ledger::exporter::Staging>(tmp, static_cast<uint64_t>(config_.export_staging_bytes));
  if (!flags_.Get("backup-root").empty()) {
    auto opened = ledger::backup::BackupRoot::Open(flags_.Get("backup-root"), options_.data_dir);
    if (!opened.ok()) return opened.status();
    backup_root_ = *std::move(opened);
  }
  auto signer = ledger::keys::OpenLogSigner(options_.data_dir, signing_key_, options_.origin);
  if (!signer.ok()) {
    if (ledger::keys::IsPkcs11Uri(signing_key_)) {
      return absl::Status(signer.status().code(), absl::StrCat("--signing-key: ", signer.status().message()));
    }
    return signer.status();
  }
  ledger::jsonlog::Info("signing_key")
      .Msg(absl::StrCat(
          "signing as ", signer->name(), " with ",
          ledger::keys::IsPkcs11Uri(signing_key_)
              ? signer->key().where()
              : "the key file " + (signing_key_.empty() ? options_.data_dir + "/signing.key" : signing_key_)))
      .Str("vkey", signer->VerifierKey())
      .Emit();
  // A key made for a rotation that committed while the old key file was
  // still in place (ledger/keys/signing_key.h): the log takes it.
  if (signing_key_.empty()) {
    auto next = ledger::keys::ReadNextKey(options_.data_dir, options_.origin);
    if (!next.ok()) return next.status();
    options_.next_key = *next;
    options_.took_next_key = [dir = options_.data_dir] { return ledger::keys::PromoteNextKey(dir); };
  }
  auto log = ledger::log::Log::Open(options_, *std::move(signer));
  if (log.ok() && options_.next_key.has_value() && (*log)->verifier_key() != options_.next_key->VerifierKey()) {
    // A rotation that never committed left it: no checkpoint names it.
    if (auto s = ledger::keys::DropNextKey(options_.data_dir); !s.ok()) return s;
  }
  if (!log.ok() && !flags_.Get("restore-from").empty()) {
    // A refused restore leaves the data directory as it found it.
    std::filesystem::remove_all(options_.data_dir + "/db", ec);
    if (!had_guard) std::filesystem::remove(options_.data_dir + "/" + ledger::log::Log::kGuardFile, ec);
    if (!had_tmp) std::filesystem::remove(tmp, ec);
    if (!had_data) std::filesystem::remove(options_.data_dir, ec);  // only when still empty
    ledger::jsonlog::Warn("restore_undone").Msg("the restored store was removed again").Emit();
  }
  if (!log.ok()) return log.status();
  log_ = *std::move(log);
  LogOpened();
  if (node_ != nullptr) {
    if (auto s = node_->Start(log_.get()); !s.ok()) return s;
  }
  // The store is open, so no other ledgerd uses this directory: what is
  // staged was left by exports that a crash cut short.
  auto stale = staging_->RemoveStale();
  if (!stale.ok()) return stale.status();
  if (*stale > 0) {
    ledger::jsonlog::Info("staging_cleaned")
        .Msg(absl::StrCat("removed ", *stale, " staging entries left in ", tmp, " by exports that did not finish"))
        .Int("removed", *stale)
        .Emit();
  }
  return absl::OkStatus();
}

absl::Status Daemon::PrepareReplication() {
  const std::string& uri = flags_.Get("replication");
  if (uri.empty()) {
    for (const char* flag : {"node-id", "advertise", "replication-password-file"}) {
      if (!flags_.Get(flag).empty()) {
        return absl::InvalidArgumentError(absl::StrCat("--", flag, ": only with --replication"));
      }
    }
    return absl::OkStatus();
  }
  if (options_.accept_rollback) {
    return absl::InvalidArgumentError(
        "--accept-rollback: refused with --replication: a node's store is rebuilt from the shard's committed "
        "batches, and a rollback would fork the shard's log");
  }
  ledger::replication::Node::Options o;
  o.db.uri = uri;
  o.db.origin = options_.origin;
  if (const std::string& file = flags_.Get("replication-password-file"); !file.empty()) {
    std::ifstream in(file);
    if (!in) return absl::NotFoundError(absl::StrCat("--replication-password-file: cannot read ", file));
    std::getline(in, o.db.password);
  }
  o.node_id = flags_.Get("node-id");
  o.address = flags_.Get("advertise").empty() ? flags_.Get("listen") : flags_.Get("advertise");
  for (auto [flag, out] :
       {std::pair{"replication-lease-ms", &o.lease}, std::pair{"replication-timeout-ms", &o.db.timeout}}) {
    auto ms = flags_.Int(flag);
    if (!ms.ok()) return ms.status();
    if (*ms < 100 || *ms > 3'600'000) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, ": from 100 to 3600000 (ms), not ", *ms));
    }
    *out = std::chrono::milliseconds(*ms);
  }
  auto node = ledger::replication::Node::Create(std::move(o));
  if (!node.ok()) return node.status();
  node_ = *std::move(node);
  options_.sequencer.replicate = node_->ReplicateHook();
  options_.replicated = node_->LogHooks();
  return absl::OkStatus();
}

// What opening found and did, for the operator.
void Daemon::LogOpened() const {
  if (log_->migrated_receipts() > 0) {
    ledger::jsonlog::Info("receipt_index_migrated")
        .Int("rows", static_cast<int64_t>(log_->migrated_receipts()))
        .Msg("receipt index rewritten from format 1 (global ids) to format 2 (ids scoped by team)")
        .Emit();
  }
  if (log_->migrated_run_heads() > 0) {
    ledger::jsonlog::Info("run_heads_migrated")
        .Int("rows", static_cast<int64_t>(log_->migrated_run_heads()))
        .Msg(
            "run rows rewritten from format 1 (last seq) to format 2 (count, last seq, leaf hash) for the "
            "run-head map")
        .Emit();
  }
  if (const auto& u = log_->projection_upgrade(); u.from < u.to) {
    ledger::jsonlog::Info("projections_upgraded")
        .Int("from", static_cast<int64_t>(u.from))
        .Int("to", static_cast<int64_t>(u.to))
        .Int("rows", static_cast<int64_t>(u.rows))
        .Msg(absl::StrCat("step projections upgraded from format ", u.from, " to ", u.to, " (", u.rows,
                          " index rows written: pending steps' state rows from format 1, calls' trace id rows "
                          "from format 2)"))
        .Emit();
  }
  if (log_->filled_team_heads() > 0) {
    ledger::jsonlog::Info("team_heads_filled")
        .Int("rows", static_cast<int64_t>(log_->filled_team_heads()))
        .Msg(
            "team rows written from the log for the team chains (leaves of version 2 from now on) and the "
            "team-head map")
        .Emit();
  }
  if (!log_->rollback_accepted().empty()) {
    ledger::jsonlog::Warn("rollback_accepted")
        .Msg(absl::StrCat("--accept-rollback: ", log_->rollback_accepted()))
        .Emit();
  }
  if (options_.sequencer.projector != nullptr && log_->projected_at_open() < log_->head().size) {
    ledger::jsonlog::Info("projections_caught_up")
        .Msg(absl::StrCat("projections caught up from the log, entries ", log_->projected_at_open(), " to ",
                          log_->head().size))
        .Emit();
  }
  if (!log_->integrity().ok()) {
    ledger::jsonlog::Error("appends_refused")
        .Msg(absl::StrCat("appends refused: ", log_->integrity().message()))
        .Emit();
  }
}

// Each checkpoint to the witnesses of --witness-policy; their
// cosignatures served with it and carried by packs.
absl::Status Daemon::StartWitnessing() {
  if (flags_.Get("witness-policy").empty()) return absl::OkStatus();
  auto started = StartWitnesses(flags_, log_.get(), options_.data_dir, node_.get());
  if (!started.ok()) return started.status();
  witnesses_ = *std::move(started);
  ledger_->SetCosignatures([w = witnesses_.get()](std::string_view note) {
    std::vector<ledger::service::LedgerService::Cosignature> out;
    for (const auto& h : w->For(note)) out.push_back({h.witness, h.time, h.line});
    return out;
  });
  if (flags_.Bool("witness-quorum-required")) {
    exports_->SetCosign([w = witnesses_.get(), wait = std::chrono::milliseconds(config_.witness_quorum_wait_ms)](
                            const std::string& note) { return w->CosignedWithQuorum(note, wait); });
  } else {
    exports_->SetCosign(
        [w = witnesses_.get()](const std::string& note) -> absl::StatusOr<std::string> { return w->Cosigned(note); });
  }
  return absl::OkStatus();
}

absl::Status Daemon::StartMonitoring() {
  const bool own = !flags_.Get("monitor-policy").empty();
  const std::string& path = own ? flags_.Get("monitor-policy") : flags_.Get("witness-policy");
  if (path.empty()) return absl::OkStatus();
  const char* flag = own ? "--monitor-policy" : "--witness-policy";
  auto text = ledger::files::ReadFile(path);
  if (!text.ok()) return absl::Status(text.status().code(), absl::StrCat(flag, ": ", text.status().message()));
  auto policy = ledger::tlogpolicy::Policy::Parse(*text);
  if (!policy.ok()) return absl::InvalidArgumentError(absl::StrCat(flag, ": ", policy.status().message()));
  if (policy->monitors().empty()) {
    if (own || flags_.Bool("monitor-quorum-required")) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " names no monitor"));
    }
    return absl::OkStatus();  // a witness policy alone
  }
  auto tls = ClientTls(flags_, "monitor");
  if (!tls.ok()) return tls.status();
  const ledger::log::Log* log = log_.get();
  auto started = ledger::monitors::Monitors::Start(
      *std::move(policy),
      [log]() -> absl::StatusOr<std::string> {
        auto cp = log->Checkpoint(0);
        if (!cp.ok()) return cp.status();
        if (cp->time_note.empty()) return absl::NotFoundError("the latest checkpoint has no time note");
        return cp->time_note;
      },
      [tls = *std::move(tls)](const std::string& url, const std::string& body) {
        return ledger::http::Fetch(
            "POST", url, body,
            {.timeout_ms = 30'000, .tls = tls->ca_pem.empty() ? nullptr : tls.get(), .peer = "monitor"});
      },
      {.keep = [log = log_.get()](uint64_t size, const ledger::hash::Hash& monitor,
                                  const std::string& line) { return log->KeepMapCosignature(size, monitor, line); },
       .kept = [log](uint64_t size) { return log->MapCosignatures(size); }});
  if (!started.ok()) return absl::Status(started.status().code(), absl::StrCat(flag, ": ", started.status().message()));
  monitors_ = *std::move(started);
  ledger_->SetMapCosignatures([m = monitors_.get()](std::string_view note) {
    std::vector<ledger::service::LedgerService::Cosignature> out;
    for (const auto& h : m->For(note)) out.push_back({h.monitor, h.time, h.line});
    return out;
  });
  if (flags_.Bool("monitor-quorum-required")) {
    exports_->SetMapCosign([m = monitors_.get(), wait = std::chrono::milliseconds(config_.monitor_quorum_wait_ms)](
                               const std::string& note) { return m->CosignedWithQuorum(note, wait); });
  } else {
    exports_->SetMapCosign(
        [m = monitors_.get()](const std::string& note) -> absl::StatusOr<std::string> { return m->Cosigned(note); });
  }
  return absl::OkStatus();
}

absl::Status Daemon::StartStamping() {
  auto started = ledger::cmd::StartStamper(flags_, config_, log_.get());
  if (!started.ok()) return started.status();
  stamper_ = *std::move(started);
  if (stamper_ == nullptr) return absl::OkStatus();
  ledger_->SetTimeStamp([s = stamper_.get()](std::string_view note) { return s->Line(note); });
  if (flags_.Bool("tsa-required")) {
    exports_->ThenMapCosign([s = stamper_.get(), wait = std::chrono::milliseconds(config_.tsa_wait_ms)](
                                const std::string& note) { return s->StampedWithin(note, wait); });
  } else {
    exports_->ThenMapCosign(
        [s = stamper_.get()](const std::string& note) -> absl::StatusOr<std::string> { return s->Stamped(note); });
  }
  return absl::OkStatus();
}

absl::Status Daemon::Serve() {
  ledger_ = std::make_unique<ledger::service::LedgerService>(log_.get(), gate_.get(), server_options_.stream_idle_ms,
                                                             backup_root_.get());
  ledger_->SetRotationKeys({[this](const std::string& spec) {
                              return ledger::keys::OpenNextSigner(options_.data_dir, signing_key_, spec,
                                                                  options_.origin);
                            },
                            [this](const std::string& spec) {
                              return spec.empty() ? ledger::keys::PromoteNextKey(options_.data_dir) : absl::OkStatus();
                            }});
  std::vector<grpc::Service*> services{ledger_.get()};
  exports_ = std::make_unique<ledger::exporter::ExportService>(log_.get(), gate_.get(), staging_.get(),
                                                               static_cast<uint64_t>(config_.unknown_grace_ms));
  services.push_back(exports_.get());
  if (options_.sequencer.projector != nullptr) {
    query_ = std::make_unique<ledger::query::QueryService>(log_.get(), gate_.get());
    services.push_back(query_.get());
    if (log_->integrity().ok()) {
      ledger::query::Sweeper::Options so;
      so.grace_ms = config_.unknown_grace_ms;
      so.interval_ms = config_.sweep_interval_ms;
      if (node_ != nullptr) {
        so.active = [node = node_.get()] {
          auto st = node->state();
          return st.role == ledger::replication::Role::kLeader && st.open;
        };
      }
      sweeper_ = std::make_unique<ledger::query::Sweeper>(log_.get(), so);
    }
  }
  if (node_ != nullptr) {
    ledger_->SetReplication([node = node_.get()](evidence::ledger::v1::Replication* r) {
      const auto st = node->state();
      r->set_replicated(true);
      r->set_node_id(node->id());
      r->set_role(ledger::replication::RoleName(st.role));
      r->set_epoch(st.epoch);
      r->set_applied_size(st.applied);
      r->set_shard_size(st.fence_size);
      r->set_leader(st.leader);
      r->set_leader_address(st.leader_address);
      r->set_failure(st.failure);
      r->set_takeovers(static_cast<int64_t>(st.failovers));
      for (const auto& n : st.nodes) {
        auto* out = r->add_nodes();
        out->set_node_id(n.node);
        out->set_address(n.address);
        out->set_applied_size(n.applied);
        out->set_seconds_since_report(n.seconds_ago);
      }
    });
  }
  if (auto s = StartWitnessing(); !s.ok()) return s;
  if (auto s = StartMonitoring(); !s.ok()) return s;
  if (auto s = StartStamping(); !s.ok()) return s;
  if (log_->integrity().ok()) {
    auto retention = ledger::cmd::StartRetention(flags_, config_, log_.get());
    if (!retention.ok()) return retention.status();
    retention_ = *std::move(retention);
  }
  auto server = ledger::server::Server::Start(gate_.get(), flags_.Get("listen"), services, server_options_);
  if (!server.ok()) return server.status();
  server_ = *std::move(server);
  std::string ready = absl::StrCat("listening on ", server_->address(), "\n");
  ledger::jsonlog::Info("listening")
      .Str("address", server_->address())
      .Str("origin", log_->origin())
      .Int("tree_size", static_cast<int64_t>(log_->head().size))
      .Str("transport", server_options_.cert_pem.empty() ? "plaintext" : "mtls")
      .Emit();
  metrics_ = std::make_unique<ledger::ops::Metrics>(
      ledger::ops::Sources{.log = log_.get(),
                           .ledger = ledger_.get(),
                           .exports = exports_.get(),
                           .sweeper = sweeper_.get(),
                           .rpc = &server_->rpc_stats(),
                           .projections = options_.sequencer.projector != nullptr});
  if (query_ != nullptr) {
    dashboard_ = std::make_unique<ledger::ops::Dashboard>(server_->InProcessChannel(), log_.get(), gate_.get(),
                                                          staging_.get(), config_.trace_url);
  }
  if (auto s = StartHttp(&ready); !s.ok()) return s;
  std::cout << ready << std::flush;
  return absl::OkStatus();
}

// With TLS the HTTP port is HTTPS and wants a client certificate too, so
// that the dashboard knows its caller; --health-listen serves the probes
// in plain text, and --grpc-health-listen gRPC's health service.
absl::Status Daemon::StartHttp(std::string* ready) {
  auto named = [](const char* flag, const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat("--", flag, ": ", s.message()));
  };
  ledger::http::HttpTls http_tls{server_options_.cert_pem, server_options_.key_pem, server_options_.client_ca_pem};
  if (!flags_.Get("http-listen").empty()) {
    // Requests are their caller's: the certificate's, or the user a
    // trusted proxy names (a user header from anyone else is refused).
    ledger::http::HttpOptions options = config_.http;
    options.identify = [this](ledger::http::HttpRequest& r) { return ledger::ops::IdentifyCaller(*gate_, r); };
    auto started = ledger::http::HttpServer::Start(
        flags_.Get("http-listen"),
        [this, tlog_public = flags_.Bool("tlog-public")](const ledger::http::HttpRequest& r) {
          return Operate(r, *log_, metrics_.get(), dashboard_.get(), gate_.get(), stopping_.load(), witnesses_.get(),
                         tlog_public, node_.get(), monitors_.get(), stamper_.get());
        },
        options, gate_->tls() ? &http_tls : nullptr);
    if (!started.ok()) return named("http-listen", started.status());
    http_ = *std::move(started);
    absl::StrAppend(ready, "http on ", http_->address(), "\n");
  }
  if (!flags_.Get("otlp-listen").empty()) {
    // The same TLS and client certificates as the HTTP port; spans are
    // appended through the gRPC Append, as their sender (ops/otlp).
    size_t max_body = static_cast<size_t>(server_options_.max_message_bytes);
    otlp_ = std::make_unique<ledger::otlp::Listener>(
        server_->InProcessChannel(), gate_.get(),
        ledger::otlp::Listener::Options{.tls = gate_->tls(), .max_body_bytes = max_body});
    ledger::http::HttpOptions options = config_.http;
    options.max_body_bytes = max_body;
    options.chunked_bodies = true;  // Node's exporters stream their bodies
    options.admit = [this](const ledger::http::HttpRequest& head) { return otlp_->Admit(head); };
    auto started = ledger::http::HttpServer::Start(
        flags_.Get("otlp-listen"),
        [this](const ledger::http::HttpRequest& r) {
          if (stopping_.load()) return ledger::http::Text(503, "stopping\n");
          return otlp_->Handle(r);
        },
        options, gate_->tls() ? &http_tls : nullptr);
    if (!started.ok()) return named("otlp-listen", started.status());
    otlp_http_ = *std::move(started);
    absl::StrAppend(ready, "otlp on ", otlp_http_->address(), "\n");
  }
  if (!flags_.Get("grpc-health-listen").empty()) {
    auto started = ledger::server::HealthServer::Start(flags_.Get("grpc-health-listen"));
    if (!started.ok()) return named("grpc-health-listen", started.status());
    grpc_health_ = *std::move(started);
    absl::StrAppend(ready, "grpc health on ", grpc_health_->address(), "\n");
  }
  if (!flags_.Get("health-listen").empty()) {
    auto started =
        ledger::http::HttpServer::Start(flags_.Get("health-listen"), [this](const ledger::http::HttpRequest& r) {
          return Operate(r, *log_, nullptr, nullptr, nullptr, stopping_.load(), nullptr, false, node_.get());
        });
    if (!started.ok()) return named("health-listen", started.status());
    health_ = *std::move(started);
    absl::StrAppend(ready, "health on ", health_->address(), "\n");
  }
  return absl::OkStatus();
}

int Daemon::Wait() {
  // Meanwhile, if the store fails in a way RocksDB cannot resume from,
  // exit so that a restart (the supervisor's) recovers.
  timespec tick{0, 200'000'000};
  int sig = -1;
  absl::Status failure;
  while ((sig < 0 || sig == SIGHUP) && failure.ok()) {
    if (sig == SIGHUP) {
      ledger::cmd::ReloadPolicy(flags_.Get("policy"), gate_.get());
      ledger::cmd::ReloadTls(flags_, server_.get(),
                             {gate_->tls() ? http_.get() : nullptr, gate_->tls() ? otlp_http_.get() : nullptr});
    }
    sig = sigtimedwait(&signals_, nullptr, &tick);
    failure = log_->View().failure();
  }
  if (!failure.ok()) {
    ledger::jsonlog::Error("exiting")
        .Msg(absl::StrCat("exiting: ", failure.message(),
                          "; every acknowledged receipt is on disk, and a restart recovers the store"))
        .Int("exit_code", 75)
        .Emit();
    Stop();
    return 75;  // EX_TEMPFAIL
  }
  ledger::jsonlog::Info("stopping").Msg(absl::StrCat("stopping on signal ", sig)).Int("signal", sig).Emit();
  Stop();
  return 0;
}

// No new calls, in-flight appends finish, a final checkpoint is signed.
void Daemon::Stop() {
  stopping_ = true;
  if (grpc_health_) grpc_health_->SetServing(false);
  http_.reset();  // before what its handler reads
  otlp_http_.reset();
  health_.reset();
  sweeper_.reset();
  server_->Shutdown();
  retention_.reset();                   // a pass under way finishes first
  witnesses_.reset();                   // its threads read the log
  stamper_.reset();                     // so does the stamper's
  monitors_.reset();                    // so does its
  if (node_ != nullptr) node_->Stop();  // no more replays; the log's hooks still answer
  log_.reset();
  if (node_ != nullptr) node_->Release();  // a follower takes over now
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 1) {
    std::cerr << kShortUsage;
    return 2;
  }
  Flags flags;
  ledger::cmd::DefineLedgerdFlags(flags);
  if (auto s = flags.Parse(argc, argv, 1); !s.ok()) return Fail(s);
  if (!flags.Get("config").empty()) {
    if (auto s = flags.LoadConfig(flags.Get("config")); !s.ok()) return Fail(s);
  }
  if (flags.Bool("help")) {
    std::cout << ledger::cmd::LedgerdHelp(flags);
    return 0;
  }
  auto config = ledger::cmd::ParseLedgerdConfig(flags);
  if (!config.ok()) return Fail(config.status());
  Daemon daemon(flags, *config);
  for (auto step : {&Daemon::Secure, &Daemon::Open, &Daemon::Serve}) {
    if (absl::Status s = (daemon.*step)(); !s.ok()) return Fail(s);
  }
  return daemon.Wait();
}
