#include "cmd/ledgerd_config.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "ledger/rpc/server/server.h"
#include "ledger/storage/log/log.h"

namespace ledger::cmd {
namespace {

// Each Define*Flags is one group of --help (DefineLedgerdFlags names its heading).

void DefineStoreFlags(Flags& flags) {
  flags.Define("data", "", "data directory (created if missing; holds the store and signing.key)");
  flags.Define("origin", log::kDefaultOrigin,
               "the log's origin, also the key name (default: the name of the key in --data or --signing-key, if any)");
  flags.Define("signing-key", "",
               "signing key file (default: <data>/signing.key, created at first start), or an RFC 7512 URI of a key "
               "kept in a PKCS#11 token: pkcs11:token=...;object=...?module-path=LIB&pin-source=file:PIN_FILE "
               "(needs --origin; nothing is written to --data)");
  flags.Define("shard-from-hostname", "",
               "a shard of a StatefulSet: the hostname's trailing number N (ledger-2: 2) makes the origin "
               "<origin>/shard-N, and replaces {shard} in --signing-key",
               true);
  flags.Define("checkpoint-interval-ms", "1000", "sign a checkpoint at most this often when the log grew");
  flags.Define("max-queued", "100000", "receipts waiting to be appended before RESOURCE_EXHAUSTED");
  flags.Define("unknown-grace-ms", "30000",
               "a step with no completion is declared unknown this long after its timeout");
  flags.Define("sweep-interval-ms", "1000", "how often to look for steps past their deadline");
  flags.Define("projections", "true", "keep step outcomes and run summaries (the query service); false: the log only");
  flags.Define("run-map", "true",
               "keep the run-head map and sign its root with every checkpoint, so run packs prove they hold "
               "the whole run; false: checkpoint-time notes of format 1 and no run proofs (for comparison)");
  flags.Define("store-memory-mb", "256",
               "what the store's RocksDB may hold in memory, in MiB, however large the log grows: its cache of "
               "blocks, indexes and filters, and its memtables (at most half of it); at least 16");
  flags.Define("accept-rollback", "",
               "start even if the store is behind or not consistent with <data>/latest-checkpoint "
               "(after restoring an old copy on purpose); logged",
               true);
}

void DefinePortFlags(Flags& flags) {
  flags.Define("listen", "127.0.0.1:7420", "gRPC address HOST:PORT; port 0 picks a free port");
  flags.Define("http-listen", "127.0.0.1:7421",
               "HTTP address for /metrics, /healthz, /readyz and the dashboard (HTTPS with client certificates "
               "when TLS is on); port 0 picks one; '' turns it off");
  flags.Define("http-connections-per-peer", "16",
               "HTTP port: connections open at once from one peer address (more are closed at once); raise it "
               "when the port sits behind a proxy that does not keep clients' addresses");
  flags.Define("trace-url", "",
               "the dashboard links a step's trace id to your tracing UI: a URL with {trace_id} in it "
               "(https://jaeger.example/trace/{trace_id}, Tempo's or Langfuse's); '' (default): no link");
  flags.Define("tlog-public", "",
               "serve the log's tiles (/tlog/tile/...) to every caller of the HTTP port, not only to auditors of "
               "every team: for a log whose entries are public",
               true);
  flags.Define("otlp-listen", "",
               "OTLP/HTTP address for OpenTelemetry GenAI spans (POST /v1/traces, JSON or protobuf): model and tool "
               "call spans become receipts, appended as the caller; HTTPS with client certificates when TLS is on, "
               "as the HTTP port; bodies up to --max-message-bytes; '' (default): off");
  flags.Define("health-listen", "",
               "plain-HTTP address serving only /healthz and /readyz (for probes that cannot present a "
               "certificate); '' (default): none");
  flags.Define("grpc-health-listen", "",
               "plain-text gRPC address serving only grpc.health.v1 (Kubernetes' gRPC probes cannot use TLS); "
               "'' (default): none");
}

void DefineAccessFlags(Flags& flags) {
  flags.Define("tls-cert", "", "TLS: the server's certificate chain (PEM); needs --tls-key, --client-ca, --policy");
  flags.Define("tls-key", "", "TLS: the server's private key (PEM)");
  flags.Define("client-ca", "",
               "TLS: CA certificates (PEM) that client certificates must chain to; callers are "
               "identified by their certificate's first URI SAN (uri:...), else first DNS SAN (dns:...), "
               "else CN (cn:...); SIGHUP reloads it");
  flags.Define("policy", "",
               "TLS: the access policy (JSON: identities, uri:/dns:/cn:, to roles and teams); SIGHUP reloads it "
               "and the TLS files, for new calls and open streams; a broken file keeps the old one");
  flags.Define("insecure", "", "allow plain text on a non-loopback address (every caller is 'local', admin); logged",
               true);
}

void DefineLimitFlags(Flags& flags) {
  flags.Define("rate-per-identity", "0",
               "receipts and calls a second per caller identity before RESOURCE_EXHAUSTED (0: no limit)");
  flags.Define("concurrency-per-identity", "256",
               "calls and streams open at once per caller identity before RESOURCE_EXHAUSTED (0: no limit)");
  flags.Define("max-message-bytes", std::to_string(server::kMaxRequestBytes), "largest request accepted, in bytes");
  flags.Define("max-streams-per-connection", "100", "concurrent calls on one HTTP/2 connection");
  flags.Define(
      "stream-idle-ms", "300000",
      "an append stream idle this long is closed (0: never); a connection without calls, after 10 minutes or this");
}

void DefineReplicationFlags(Flags& flags) {
  flags.Define("replication", "",
               "a libpq connection URI (PostgreSQL with a synchronous standby) holding this shard's batch log and "
               "fence: every node of the shard names the same database; one leads, the others follow. Without a "
               "password: see --replication-password-file");
  flags.Define("replication-password-file", "",
               "a file holding the replication database's password (else PGPASSWORD or ~/.pgpass, as libpq reads "
               "them)");
  flags.Define("node-id", "", "this node's name among the shard's nodes (with --replication)");
  flags.Define("advertise", "",
               "the address clients reach this node's gRPC port at, told to them when it leads (default: --listen)");
  flags.Define("replication-lease-ms", "3000",
               "the leader's lease: a follower takes over once the leader has not renewed it for this long");
  flags.Define("replication-timeout-ms", "5000",
               "a statement on the replication database, commits included, that takes longer is cancelled and "
               "counted as failed (the leader steps down)");
}

void DefineWitnessFlags(Flags& flags) {
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
  flags.Define("monitor-policy", "",
               "a C2SP tlog-policy file whose monitor lines (monitor NAME VKEY http://HOST:PORT; CONTRACT section 5c) "
               "name the monitors each checkpoint-time note is given to; their map cosignatures are served with it "
               "and carried by packs. Default: the monitor lines of --witness-policy, if any");
  flags.Define("monitor-tls-ca", "", "CA certificates (PEM) that https:// monitors' certificates must chain to");
  flags.Define("monitor-tls-cert", "", "client certificate (PEM) for monitors that ask for one");
  flags.Define("monitor-tls-key", "", "its private key (PEM)");
  flags.Define("monitor-quorum-required", "",
               "exports wait for the time note of the pack to be cosigned by the policy's monitor-quorum (at most "
               "--monitor-quorum-wait-ms), and fail with UNAVAILABLE otherwise",
               true);
  flags.Define("monitor-quorum-wait-ms", "30000",
               "how long an export waits for the monitor quorum (a monitor replays the log up to the note first)");
  flags.Define("tsa", "",
               "an RFC 3161 time-stamping authority's URL (http[s]://HOST:PORT/PATH): checkpoint-time notes are "
               "stamped by it, and the tokens served with them and carried by packs (CONTRACT section 5e); needs "
               "--tsa-ca");
  flags.Define("tsa-ca", "",
               "the CA certificates (PEM) the TSA's signing certificate must chain to; a token that does not, or "
               "whose time is not within --tsa-max-delay after the note's, is not kept");
  flags.Define("tsa-name", "tsa", "the name of the time-stamp line in notes (a key name: no space, no '+')");
  flags.Define("tsa-policy", "", "the TSA policy to ask for, a dotted OID; '' (default): the TSA's own");
  flags.Define("tsa-every", "1", "stamp one checkpoint-time note in N (the latest, when it is due)");
  flags.Define("tsa-max-delay", "60", "seconds a stamp may come after the note's time (verifiers' default bound)");
  flags.Define("tsa-tls-ca", "", "CA certificates (PEM) that an https:// TSA's certificate must chain to");
  flags.Define("tsa-tls-cert", "", "client certificate (PEM) for a TSA that asks for one");
  flags.Define("tsa-tls-key", "", "its private key (PEM)");
  flags.Define("tsa-required", "",
               "exports wait for the time note of the pack to be stamped (at most --tsa-wait-ms), and fail with "
               "UNAVAILABLE otherwise",
               true);
  flags.Define("tsa-wait-ms", "10000", "how long an export waits for its time note's stamp");
}

void DefineBackupFlags(Flags& flags) {
  flags.Define("backup-root", "",
               "backups (ledgerctl backup --out) go only under this existing directory, outside --data; "
               "without it, backups are refused");
  flags.Define("restore-from", "",
               "start from a backup (ledgerctl backup): copies DIR/db into the data directory, which "
               "must not hold a store yet; the signing key must be the one that signed it");
  flags.Define("export-staging-bytes", "4294967296",
               "bytes that exports in progress may hold together in <data>/tmp (staged files and packs being "
               "sent); an export that would exceed it is refused with RESOURCE_EXHAUSTED");
}

void DefineRetentionFlags(Flags& flags) {
  flags.Define("retention-policy", "",
               "a retention policy file (CONTRACT section 9: lines 'default KEEP' and 'team T KEEP', KEEP 1h to "
               "36500d or forever): entries past their team's KEEP have their bodies pruned, every proof kept; "
               "check one with ledgerctl retention-check FILE; without it, nothing is pruned");
  flags.Define("retention-interval-s", "3600", "seconds between retention passes (one also runs at start)");
}

void DefineGeneralFlags(Flags& flags) {
  flags.Define("config", "", "a JSON file of options: {\"option-name\": value, ...}; the command line wins");
  flags.Define("help", "", "print this help", true);
}

// The value of the integer flag `name`, at least `min`.
absl::StatusOr<int64_t> AtLeast(const Flags& flags, const std::string& name, int64_t min) {
  auto v = flags.Int(name);
  if (!v.ok()) return v.status();
  if (*v < min) return absl::InvalidArgumentError(absl::StrCat("--", name, ": must be >= ", min));
  return *v;
}

}  // namespace

void DefineLedgerdFlags(Flags& flags) {
  struct HelpGroup {
    const char* heading;
    void (*define)(Flags&);
  };
  for (const HelpGroup& g :
       {HelpGroup{"The store and the log", DefineStoreFlags}, HelpGroup{"Ports", DefinePortFlags},
        HelpGroup{"TLS and access", DefineAccessFlags}, HelpGroup{"Limits", DefineLimitFlags},
        HelpGroup{"Replication", DefineReplicationFlags}, HelpGroup{"Witnesses", DefineWitnessFlags},
        HelpGroup{"Backups and exports", DefineBackupFlags}, HelpGroup{"Retention", DefineRetentionFlags},
        HelpGroup{"The config file and this help", DefineGeneralFlags}}) {
    flags.Group(g.heading);
    g.define(flags);
    flags.Group("");
  }
}

const std::vector<LedgerdExample>& LedgerdExamples() {
  static const auto* const kExamples = new std::vector<LedgerdExample>{
      {"A ledger for development, on this machine only (plain text on loopback):",
       "ledgerd --data ./ledger-dev --listen 127.0.0.1:7420"},
      {"Serving the network: mutual TLS, callers' roles and teams from the policy:",
       "ledgerd --data /var/lib/ledger --listen 0.0.0.0:7420 --http-listen 0.0.0.0:7421\n"
       "--tls-cert /etc/ledger/tls/server.pem --tls-key /etc/ledger/tls/server.key\n"
       "--client-ca /etc/ledger/tls/clients-ca.pem --policy /etc/ledger/policy.json"},
      {"A node of a replicated shard, TLS and the policy in the config file (each node its own --node-id):",
       "ledgerd --config /etc/ledger/ledgerd.json --data /var/lib/ledger\n"
       "--replication postgresql://ledger@db-rw:5432/ledger --replication-password-file /etc/ledger/pg-password\n"
       "--node-id ledger-0 --advertise ledger-0.ledger:7420"},
      {"Checkpoints cosigned by witnesses, and exports that wait for their quorum:",
       "ledgerd --data /var/lib/ledger --witness-policy /etc/ledger/witnesses.policy --witness-quorum-required"},
  };
  return *kExamples;
}

std::string LedgerdHelp(const Flags& flags) {
  std::string out = "usage: ledgerd --data DIR [--listen HOST:PORT] [--http-listen HOST:PORT] [options]\n";
  for (const std::string& group : flags.groups()) absl::StrAppend(&out, "\n", flags.GroupUsage(group));
  absl::StrAppend(&out, "\nExamples:\n");
  for (const LedgerdExample& e : LedgerdExamples()) {
    absl::StrAppend(&out, &e == &LedgerdExamples().front() ? "" : "\n", "  ", e.what, "\n    ",
                    absl::StrReplaceAll(e.command, {{"\n", " \\\n        "}}), "\n");
  }
  absl::StrAppend(&out, "\nThe manual: docs/operating.md.\n");
  return out;
}

absl::StatusOr<LedgerdConfig> ParseLedgerdConfig(const Flags& flags) {
  if (flags.Get("data").empty()) {
    return absl::InvalidArgumentError(
        "--data: required, the directory of the ledger's store and signing key (ledgerd --help: every flag)");
  }
  LedgerdConfig c;
  struct Bound {
    const char* flag;
    int64_t min;
    int64_t* out;
  };
  for (const Bound& b :
       {Bound{"checkpoint-interval-ms", 1, &c.checkpoint_interval_ms},
        Bound{"unknown-grace-ms", 0, &c.unknown_grace_ms}, Bound{"sweep-interval-ms", 1, &c.sweep_interval_ms},
        Bound{"export-staging-bytes", 1, &c.export_staging_bytes},
        Bound{"max-queued", static_cast<int64_t>(log::kMaxReceiptsPerAppend), &c.max_queued},
        Bound{"witness-quorum-wait-ms", 0, &c.witness_quorum_wait_ms},
        Bound{"monitor-quorum-wait-ms", 0, &c.monitor_quorum_wait_ms}, Bound{"tsa-every", 1, &c.tsa_every},
        Bound{"tsa-max-delay", 1, &c.tsa_max_delay_s}, Bound{"tsa-wait-ms", 0, &c.tsa_wait_ms},
        Bound{"retention-interval-s", 1, &c.retention_interval_s}}) {
    auto v = AtLeast(flags, b.flag, b.min);
    if (!v.ok()) return v.status();
    *b.out = *v;
  }
  const std::string& projections = flags.Get("projections");
  if (projections != "true" && projections != "false") {
    return absl::InvalidArgumentError("--projections: true or false");
  }
  c.projections = projections == "true";
  auto per_peer = flags.Int("http-connections-per-peer");
  if (!per_peer.ok()) return per_peer.status();
  if (*per_peer < 1 || *per_peer > c.http.max_connections) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-connections-per-peer: must be in [1, ", c.http.max_connections, "]"));
  }
  c.http.max_per_peer = static_cast<int>(*per_peer);
  c.http.quick_paths = {"/healthz", "/readyz", "/metrics"};
  c.http.slow_suffixes = {"/pack.tar.gz"};  // the dashboard's pack downloads
  c.trace_url = flags.Get("trace-url");
  if (!c.trace_url.empty() && (!(c.trace_url.rfind("https://", 0) == 0 || c.trace_url.rfind("http://", 0) == 0) ||
                               c.trace_url.find("{trace_id}") == std::string::npos)) {
    return absl::InvalidArgumentError("--trace-url: want an http:// or https:// URL with {trace_id} in it");
  }
  if (flags.Bool("witness-quorum-required") && flags.Get("witness-policy").empty()) {
    return absl::InvalidArgumentError("--witness-quorum-required: needs --witness-policy");
  }
  if (!flags.Get("tsa").empty() && flags.Get("tsa-ca").empty()) {
    return absl::InvalidArgumentError("--tsa: needs --tsa-ca, the CA the TSA's tokens must chain to");
  }
  if (flags.Bool("tsa-required") && flags.Get("tsa").empty()) {
    return absl::InvalidArgumentError("--tsa-required: needs --tsa");
  }
  if (flags.Bool("monitor-quorum-required") && flags.Get("monitor-policy").empty() &&
      flags.Get("witness-policy").empty()) {
    return absl::InvalidArgumentError(
        "--monitor-quorum-required: needs --monitor-policy (or monitor lines in "
        "--witness-policy)");
  }
  return c;
}

}  // namespace ledger::cmd
