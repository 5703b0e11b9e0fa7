#include "cmd/ledgerd_tsa.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cmd/ledgerd_security.h"
#include "ledger/format/timestamp/timestamp.h"
#include "util/files/files.h"
#include "util/http/client.h"

namespace ledger::cmd {

absl::StatusOr<std::unique_ptr<tsa::Stamper>> StartStamper(const Flags& flags, const LedgerdConfig& config,
                                                           log::Log* log) {
  const std::string& url = flags.Get("tsa");
  if (url.empty()) return std::unique_ptr<tsa::Stamper>();
  auto pem = files::ReadFile(flags.Get("tsa-ca"));
  if (!pem.ok()) return absl::NotFoundError(absl::StrCat("--tsa-ca: cannot read ", flags.Get("tsa-ca")));
  auto roots = timestamp::TsaRoots::Parse(*pem);
  if (!roots.ok()) return absl::InvalidArgumentError(absl::StrCat("--tsa-ca: ", roots.status().message()));
  if (const std::string& policy = flags.Get("tsa-policy"); !policy.empty()) {
    if (auto probe = timestamp::MakeRequest("", policy); !probe.ok()) return probe.status();
  }
  auto tls = ClientTls(flags, "tsa");
  if (!tls.ok()) return tls.status();
  auto post = [url, tls = *std::move(tls)](const std::string& body) {
    return http::Fetch("POST", url, body,
                       {.timeout_ms = 10'000,
                        .tls = tls->ca_pem.empty() ? nullptr : tls.get(),
                        .peer = "TSA",
                        .content_type = "application/timestamp-query"});
  };
  auto latest = [log]() -> absl::StatusOr<std::string> {
    auto cp = log->Checkpoint(0);
    if (!cp.ok()) return cp.status();
    if (cp->time_note.empty()) return absl::NotFoundError("the latest checkpoint has no time note");
    return cp->time_note;
  };
  return tsa::Stamper::Start(
      *std::move(roots), std::move(latest), std::move(post),
      {.url = url,
       .name = flags.Get("tsa-name"),
       .policy = flags.Get("tsa-policy"),
       .every = static_cast<int>(config.tsa_every),
       .max_delay_s = config.tsa_max_delay_s,
       .keep = [log](uint64_t size, const std::string& line) { return log->KeepTimeStamp(size, line); },
       .kept = [log](uint64_t size) { return log->TimeStamp(size); }});
}

}  // namespace ledger::cmd
