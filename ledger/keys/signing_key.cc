#include "ledger/keys/signing_key.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ledger/keys/key_file.h"
#include "ledger/keys/pkcs11.h"

namespace ledger::keys {

absl::StatusOr<note::Signer> OpenLogSigner(const std::string& data_dir, const std::string& spec,
                                           const std::string& origin) {
  if (!IsPkcs11Uri(spec)) return LoadOrCreateKey(data_dir, spec, origin);
  if (origin.empty()) {
    return absl::InvalidArgumentError(
        "--origin: required with a PKCS#11 signing key; the origin is the name checkpoints are signed with");
  }
  auto key = OpenPkcs11Key(spec);
  if (!key.ok()) return key.status();
  return note::Signer::FromKey(origin, *std::move(key));
}

}  // namespace ledger::keys
