// One entry's RFC 9162 inclusion proof, derived from an evidence pack alone
// (CONTRACT section 7, "One entry's proof, for tools that read RFC 9162
// proofs"): from a format 6 pack's multiproof (the walk of
// ledger/format/merkle/multiproof.h, keeping the entry's siblings), or
// from an earlier format's line of proofs.jsonl. For tools that check one
// proof against one checkpoint (Go's tlog.CheckRecord, a tlog-proof
// reader), which cannot read a multiproof.
//
// It reads the pack without judging it: the caller MUST have verified the
// pack (VerifyPack) first; a proof of a pack that did not verify proves
// nothing.
//
// Thread-safe: reads only the pack.
#ifndef EXPORT_VERIFY_CC_PACK_PROOF_H_
#define EXPORT_VERIFY_CC_PACK_PROOF_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"

namespace ledger::verify {

struct EntryProof {
  uint64_t seq = 0;
  uint64_t tree_size = 0;
  hash::Hash leaf_hash{};
  std::vector<hash::Hash> path;  // leaf to root
  std::string checkpoint;        // the pack's checkpoint file, cosignatures included
};

// NOT_FOUND when the pack holds no entry of `seq` ("pack-proof: seq S is not
// in the pack"); DATA_LOSS when the pack cannot be read as it verified.
absl::StatusOr<EntryProof> ProveFromPack(const std::string& pack_path, uint64_t seq);

// The proof as c2sp.org/tlog-proof@v1: "index N", the path in base64, an
// empty line, the checkpoint (as `ledgerctl prove --format tlog-proof`).
std::string TlogProofText(const EntryProof& proof);

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_CC_PACK_PROOF_H_
