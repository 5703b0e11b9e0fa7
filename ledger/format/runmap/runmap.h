// The run-head map: a verifiable map from each run (team, run_id) to its
// head, as a sparse Merkle tree over 256-bit run keys in which every leaf
// sits at its key's shortest unique prefix. CONTRACT.md "Run-head map" is the
// normative text; this header repeats its grammar beside the encoder.
//
//   T          = "evidence-ledger/run-map/v1"                 (26 bytes)
//   RunKey v2  = TeamKey(team)[0:8] ||
//                SHA-256("evidence-ledger/run-key/v2" || 0x00 ||
//                        u8 len(team) || team || run_id)[0:24]
//   RunKey v1  = SHA-256("evidence-ledger/run-key/v1" || 0x00 ||
//                        u8 len(team) || team || run_id)
//                team: 1-63 bytes of [a-z0-9-]; run_id: 1-128 bytes
//   TeamKey    = SHA-256("evidence-ledger/team-key/v1" || 0x00 ||
//                        u8 len(team) || team)
//   HeadBytes  = u64be count || u64be last_seq || last_leaf_hash (48 bytes)
//                1 <= count <= last_seq + 1 <= 2^53 - 1
//   ValueHash  = SHA-256(0x02 || T || HeadBytes)
//   LeafHash   = SHA-256(0x03 || T || key || ValueHash)
//   NodeHash   = SHA-256(0x04 || T || u8 depth || left || right)
//   Empty      = SHA-256(0x05 || T)
//
// Bit i of a key (0 <= i < 256) is bit (7 - i % 8) of byte i / 8: bit 0 is
// the most significant bit of the first byte. The subtree at depth d with
// prefix p holds the leaves whose keys start with the d bits p: none hashes
// to Empty, exactly one to its LeafHash, two or more to
// NodeHash(d, subtree(p || 0), subtree(p || 1)). The root is the subtree at
// depth 0. DO NOT CHANGE these constants: a root is signed.
//
// Thread-safe: free functions are pure; a RunMap is a value with no locking.
#ifndef LEDGER_FORMAT_RUNMAP_RUNMAP_H_
#define LEDGER_FORMAT_RUNMAP_RUNMAP_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ledger/format/hash/hash.h"

namespace ledger::runmap {

using hash::Hash;
using Key = Hash;

inline constexpr std::string_view kTag = "evidence-ledger/run-map/v1";
inline constexpr std::string_view kKeyTag = "evidence-ledger/run-key/v1";
inline constexpr std::string_view kKeyTagV2 = "evidence-ledger/run-key/v2";
// The bytes of a team's key a v2 run key starts with.
inline constexpr int kTeamPrefixBytes = 8;
inline constexpr int kKeyBits = 256;

// A run's head: how many entries it has, and the seq and leaf hash of its
// last entry.
struct Head {
  uint64_t count = 0;
  uint64_t last_seq = 0;
  Hash last_leaf_hash{};
  bool operator==(const Head&) const = default;
};

// The run keys of a map (CONTRACT section 6a, "Which run key"): version 1
// under checkpoint-time notes of versions 2 and 3, version 2 (a team's runs
// under one 64-bit prefix) under version 4. The ledger keys by version 2.
enum class KeyVersion { kV1 = 1, kV2 = 2 };

// The run keys a checkpoint-time note of `note_version` signs a root of;
// nullopt for a version without a run-head map root (1) or unknown.
std::optional<KeyVersion> KeysOfNote(int note_version);

// INVALID_ARGUMENT naming the field and rule unless team is 1-63 bytes of
// [a-z0-9-] and run_id is 1-128 bytes.
absl::StatusOr<Key> RunKey(std::string_view team, std::string_view run_id, KeyVersion version);

// The run key of a receipt the log accepted (its team and run_id are
// valid): RunKey without the checks.
Key RunKeyOf(std::string_view team, std::string_view run_id, KeyVersion version);

// The team key (CONTRACT section 6a, "The team-head map"): the key of a
// team in the team-head map, a map of this same shape. INVALID_ARGUMENT
// unless team is 1-63 bytes of [a-z0-9-]; TeamKeyOf skips the check.
absl::StatusOr<Key> TeamKey(std::string_view team);
Key TeamKeyOf(std::string_view team);

// INVALID_ARGUMENT unless 1 <= count <= last_seq + 1 <= 2^53 - 1.
absl::Status CheckHead(const Head& head);

std::string HeadBytes(const Head& head);
// HeadBytes read back: nullopt unless `bytes` is 48 bytes long. The head is
// not checked (CheckHead).
std::optional<Head> HeadOfBytes(std::string_view bytes);
Hash ValueHash(const Head& head);
Hash LeafHashOfValue(const Key& key, const Hash& value_hash);
Hash LeafHash(const Key& key, const Head& head);
Hash NodeHash(int depth, const Hash& left, const Hash& right);
// The hash of every empty subtree, and so the root of the empty map.
Hash EmptyHash();

// Bit i of the key, 0 <= i < 256.
int Bit(const Key& key, int i);
// The number of leading bits two keys share (256 when equal).
int CommonBits(const Key& a, const Key& b);

// An interior position of the tree: the first `depth` bits of `prefix`; the
// other bits are zero.
struct NodeId {
  int depth = 0;
  Key prefix{};
  bool operator==(const NodeId&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const NodeId& n) {
    return H::combine(std::move(h), n.depth, n.prefix);
  }
};
NodeId NodeOf(const Key& key, int depth);

struct Leaf {
  Key key{};
  Head head;
};

// What the tree algorithms read and write, so that a map kept in a store is
// a drop-in for the in-memory one:
//  - leaves(node, out): the number of leaves under `node` capped at 2 (0, 1
//    or 2), with out[0] set when it is 1;
//  - node(node): the remembered hash of an interior node with two or more
//    leaves under it, or nullopt when it is not remembered (it is then
//    computed from its children and passed to put);
//  - put(node, hash): remember it. A writer MUST forget (or overwrite) every
//    remembered node on the path of a key whose head it changes.
// An error from a callback is passed through unchanged.
struct Source {
  absl::FunctionRef<absl::StatusOr<int>(const NodeId&, Leaf* first)> leaves;
  absl::FunctionRef<absl::StatusOr<std::optional<Hash>>(const NodeId&)> node;
  absl::FunctionRef<void(const NodeId&, const Hash&)> put;
};

// The hash of the subtree at `node`.
absl::StatusOr<Hash> SubtreeHash(const NodeId& node, const Source& src);

// Proof that a key is in the map with its head: the sibling hashes on the
// path from the leaf (at depth siblings.size()) to the root, leaf to root.
struct InclusionProof {
  std::vector<Hash> siblings;
};

// Proof that a key is not in the map: the path from the root along the key's
// bits ends, at depth siblings.size(), in an empty subtree (no leaf) or in
// the leaf of another key that shares those bits (leaf set).
struct AbsenceProof {
  struct Other {
    Key key{};
    Hash value_hash{};
  };
  std::vector<Hash> siblings;  // leaf to root
  std::optional<Other> leaf;
};

// The path of `key`: an inclusion proof when the key is present (with its
// head in *found), else an absence proof.
struct Path {
  std::optional<Leaf> found;
  std::vector<Hash> siblings;
  std::optional<AbsenceProof::Other> other;
};
absl::StatusOr<Path> ProvePath(const Key& key, const Source& src);

// OK only when `proof` leads from (key, head) to `root`; otherwise an error
// that says why (INVALID_ARGUMENT for a malformed proof or head, and
// FAILED_PRECONDITION with the computed root when it leads elsewhere).
absl::Status VerifyInclusion(const Hash& root, const Key& key, const Head& head, absl::Span<const Hash> proof);

// OK only when `proof` shows that `key` has no leaf in the map of `root`.
absl::Status VerifyAbsence(const Hash& root, const Key& key, const AbsenceProof& proof);

// The root each proof leads to (what the Verify functions compare with the
// trusted root), or INVALID_ARGUMENT for a malformed proof or head.
absl::StatusOr<Hash> InclusionRoot(const Key& key, const Head& head, absl::Span<const Hash> proof);
absl::StatusOr<Hash> AbsenceRoot(const Key& key, const AbsenceProof& proof);

// An in-memory map: the leaves sorted by key and a cache of interior node
// hashes. Set forgets the cached nodes on the key's path, so Root after k
// Sets recomputes about k * log2(size) node hashes. Not thread-safe.
class RunMap {
 public:
  // Inserts or replaces the head of `key`. INVALID_ARGUMENT (from CheckHead)
  // changes nothing.
  absl::Status Set(const Key& key, const Head& head);
  std::optional<Head> Get(const Key& key) const;
  size_t size() const { return leaves_.size(); }
  // Every leaf, in key order.
  const std::map<Key, Head>& leaves() const { return leaves_; }

  Hash Root();
  // The hash of the subtree at `node` (the root's at depth 0).
  Hash HashAt(const NodeId& node);
  // The least key under `node`, if any.
  std::optional<Key> FirstKeyUnder(const NodeId& node) const;
  // NOT_FOUND when the key is absent.
  absl::StatusOr<InclusionProof> ProveInclusion(const Key& key);
  // FAILED_PRECONDITION when the key is present.
  absl::StatusOr<AbsenceProof> ProveAbsence(const Key& key);
  // The key's path: an inclusion proof when present, else an absence proof.
  absl::StatusOr<Path> Prove(const Key& key) { return PathOf(key); }

  // Interior node hashes computed since construction.
  uint64_t nodes_hashed() const { return nodes_hashed_; }

 private:
  int Leaves(const NodeId& node, Leaf* first) const;
  absl::StatusOr<Path> PathOf(const Key& key);
  // Calls f with a Source over leaves_ and nodes_.
  template <typename F>
  auto WithSource(F f);

  std::map<Key, Head> leaves_;
  absl::flat_hash_map<NodeId, Hash> nodes_;
  uint64_t nodes_hashed_ = 0;
};

}  // namespace ledger::runmap

#endif  // LEDGER_FORMAT_RUNMAP_RUNMAP_H_
