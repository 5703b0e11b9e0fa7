#include "cmd/ledgerd_witnesses.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cmd/ledgerd_security.h"
#include "ledger/format/tlogpolicy/tlogpolicy.h"
#include "util/http/client.h"
#include "witness/client/log_source.h"

namespace ledger::cmd {

absl::StatusOr<std::unique_ptr<ledger::witnesses::Witnesses>> StartWitnesses(const ledger::cmd::Flags& flags,
                                                                             const ledger::log::Log* log,
                                                                             const std::string& data_dir,
                                                                             ledger::replication::Node* node) {
  auto client_tls = ClientTls(flags, "witness");
  if (!client_tls.ok()) return client_tls.status();
  std::shared_ptr<const ledger::http::TlsClient> tls = *std::move(client_tls);
  const std::string& path = flags.Get("witness-policy");
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("--witness-policy: cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  auto policy = ledger::tlogpolicy::Policy::Parse(text.str());
  if (!policy.ok()) return absl::InvalidArgumentError(absl::StrCat("--witness-policy: ", policy.status().message()));
  ledger::witnesses::Source source = ledger::witnesses::LogSource(log);
  auto post = [tls](const std::string& url, const std::string& body) {
    return ledger::http::HttpPost(url, body, 5000, tls->ca_pem.empty() ? nullptr : tls.get());
  };
  std::optional<ledger::witnesses::Shared> shared;
  if (node != nullptr) {
    shared =
        ledger::witnesses::Shared{.submits = [node] { return node->Submits(); },
                                  .record =
                                      [node](const ledger::witnesses::Recorded& r) {
                                        return node->RecordCosignature({r.witness, r.size, r.line});
                                      },
                                  .recorded = [node]() -> absl::StatusOr<std::vector<ledger::witnesses::Recorded>> {
                                    auto stored = node->Cosignatures();
                                    if (!stored.ok()) return stored.status();
                                    std::vector<ledger::witnesses::Recorded> out;
                                    for (auto& c : *stored)
                                      out.push_back({std::move(c.witness), c.size, std::move(c.line)});
                                    return out;
                                  }};
  }
  auto started = ledger::witnesses::Witnesses::Start(
      *std::move(policy), std::move(source), post,
      {.data_dir = data_dir, .poll_ms = 100, .max_backoff_ms = 10'000, .now_s = nullptr, .shared = std::move(shared)});
  if (!started.ok())
    return absl::Status(started.status().code(), absl::StrCat("--witness-policy: ", started.status().message()));
  return started;
}
}  // namespace ledger::cmd
