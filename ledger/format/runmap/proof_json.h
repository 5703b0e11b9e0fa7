// The JSON form of a run-head map proof (CONTRACT section 6a, "Proofs"), as
// a run pack carries it in run-head.json:
//
//   inclusion: {"key":"<hex>","head":{"count":N,"last_seq":S,"last_leaf_hash":"<hex>"},"siblings":["<hex>",...]}
//   absence:   {"key":"<hex>","siblings":["<hex>",...]}
//              {"key":"<hex>","siblings":["<hex>",...],"leaf":{"key":"<hex>","value_hash":"<hex>"}}
//
// Hashes are 64 lowercase hex digits; count and last_seq JSON integers.
// EncodeProof writes it compact, keys in the order above; ParseProof
// accepts any spacing and key order, and no other key.
//
// Thread-safe: pure functions.
#ifndef LEDGER_FORMAT_RUNMAP_PROOF_JSON_H_
#define LEDGER_FORMAT_RUNMAP_PROOF_JSON_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "ledger/format/runmap/runmap.h"

namespace ledger::runmap {

// A proof as carried: the key it is about and its path (path.found set: an
// inclusion proof; else an absence proof, with path.other when the path
// ends in another run's leaf).
struct KeyedPath {
  Key key{};
  Path path;
};

std::string EncodeProof(const KeyedPath& proof);

// INVALID_ARGUMENT naming the field and the rule (e.g. "head.count: want a
// JSON integer"). It checks the form only: VerifyInclusion/VerifyAbsence
// check the proof.
absl::StatusOr<KeyedPath> ParseProof(std::string_view json);

// Verifies `proof` against `root` for `key` (which the caller computes from
// the run it expects): OK, or why not. The key in the proof MUST be `key`.
absl::Status VerifyProof(const Hash& root, const Key& key, const KeyedPath& proof);

// The root `proof` leads to, or INVALID_ARGUMENT for a malformed one.
absl::StatusOr<Hash> ProofRoot(const KeyedPath& proof);

}  // namespace ledger::runmap

#endif  // LEDGER_FORMAT_RUNMAP_PROOF_JSON_H_
