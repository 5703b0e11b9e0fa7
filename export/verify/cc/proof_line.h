// A line of proofs.jsonl: {"seq":N,"leaf_hash":"<hex>","inclusion":["<hex>",...]}
// (JSON: any spacing and key order, no other key, no key twice).
//
// ProofLineParser reads the exporter's exact compact form fast, reusing the
// hashes the line before spelled the same way (neighbours share most of
// their path), and anything else through ParseProofLine, the reference.
// Both MUST give the same result for every line, whatever lines came
// before it: a differential test and the pack fuzzer hold them to it.
//
// Thread-compatible: one parser per thread.
#ifndef EXPORT_VERIFY_CC_PROOF_LINE_H_
#define EXPORT_VERIFY_CC_PROOF_LINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ledger/format/hash/hash.h"

namespace ledger::verify {

struct ProofLine {
  int64_t seq = -1;
  std::string leaf_hash;  // as written; checked against the entry's
  std::vector<hash::Hash> path;
  bool operator==(const ProofLine&) const = default;
};

// The reference reader: nullopt if `line` is not a proof line.
std::optional<ProofLine> ParseProofLine(std::string_view line);

class ProofLineParser {
 public:
  // False if `line` is not a proof line. `line` MUST stay valid until the
  // next call; `*leaf_hash` until then too, and path() until the next call.
  bool Parse(std::string_view line, int64_t* seq, std::string_view* leaf_hash);
  const std::vector<hash::Hash>& path() const { return path_; }

 private:
  bool Fast(std::string_view line, int64_t* seq, std::string_view* leaf_hash);
  bool Forget();

  // The previous fast line's hashes as spelled; path_ begins with them
  // parsed. After a line read by the reference there are none.
  std::vector<std::string_view> hex_;
  std::vector<hash::Hash> path_;
  std::string slow_leaf_hash_;
};

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_CC_PROOF_LINE_H_
