#include "ledger/format/runmap/runmap.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"

namespace ledger::runmap {
namespace {

constexpr uint64_t kMaxSafe = (uint64_t{1} << 53) - 1;

void PutU64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

Hash Tagged(uint8_t prefix, std::string_view rest) {
  std::string in;
  in.reserve(1 + kTag.size() + rest.size());
  in.push_back(static_cast<char>(prefix));
  in.append(kTag);
  in.append(rest);
  return hash::Sha256(in);
}

Key Flip(Key key, int i) {
  key[i / 8] ^= static_cast<uint8_t>(0x80u >> (i % 8));
  return key;
}

// Folds a path from depth siblings.size() up to the root.
Hash Fold(const Key& key, Hash h, absl::Span<const Hash> siblings) {
  int d = static_cast<int>(siblings.size());
  for (int i = d - 1; i >= 0; --i) {
    const Hash& s = siblings[d - 1 - i];
    h = Bit(key, i) == 0 ? NodeHash(i, h, s) : NodeHash(i, s, h);
  }
  return h;
}

absl::Status CheckRoot(const Hash& root, const Hash& computed) {
  if (computed == root) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("proof: leads to root ", hash::Hex(computed), ", expected ", hash::Hex(root)));
}

}  // namespace

namespace {

absl::Status CheckTeam(std::string_view team) {
  bool team_ok = !team.empty() && team.size() <= 63 && std::all_of(team.begin(), team.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  });
  if (!team_ok) return absl::InvalidArgumentError("team: must be 1-63 bytes of [a-z0-9-]");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Key> TeamKey(std::string_view team) {
  if (auto s = CheckTeam(team); !s.ok()) return s;
  return TeamKeyOf(team);
}

Key TeamKeyOf(std::string_view team) {
  std::string in("evidence-ledger/team-key/v1");
  in.push_back('\0');
  in.push_back(static_cast<char>(team.size()));
  in.append(team);
  return hash::Sha256(in);
}

absl::StatusOr<Key> RunKey(std::string_view team, std::string_view run_id, KeyVersion version) {
  if (auto s = CheckTeam(team); !s.ok()) return s;
  if (run_id.empty() || run_id.size() > 128) {
    return absl::InvalidArgumentError("run_id: must be 1-128 bytes");
  }
  return RunKeyOf(team, run_id, version);
}

Key RunKeyOf(std::string_view team, std::string_view run_id, KeyVersion version) {
  std::string in(version == KeyVersion::kV1 ? kKeyTag : kKeyTagV2);
  in.push_back('\0');
  in.push_back(static_cast<char>(team.size()));
  in.append(team);
  in.append(run_id);
  Key key = hash::Sha256(in);
  if (version == KeyVersion::kV1) return key;
  // The team's 64 bits first: every key of a team shares them, so a path
  // along one ends among that team's runs (CONTRACT section 6a, "What a
  // proof reveals"); the hash's first 24 bytes follow.
  const Key team_key = TeamKeyOf(team);
  std::copy(key.begin(), key.begin() + 24, key.begin() + kTeamPrefixBytes);
  std::copy(team_key.begin(), team_key.begin() + kTeamPrefixBytes, key.begin());
  return key;
}

std::optional<KeyVersion> KeysOfNote(int note_version) {
  if (note_version == 2 || note_version == 3) return KeyVersion::kV1;
  if (note_version == 4) return KeyVersion::kV2;
  return std::nullopt;
}

absl::Status CheckHead(const Head& head) {
  if (head.count < 1) return absl::InvalidArgumentError("count: must be at least 1");
  if (head.last_seq > kMaxSafe - 1) {
    return absl::InvalidArgumentError("last_seq: must be at most 2^53 - 2");
  }
  if (head.count > head.last_seq + 1) {
    return absl::InvalidArgumentError("count: must be at most last_seq + 1");
  }
  return absl::OkStatus();
}

int CommonBits(const Key& a, const Key& b) {
  for (int i = 0; i < 32; ++i) {
    if (a[i] != b[i]) return i * 8 + __builtin_clz(static_cast<unsigned>(a[i] ^ b[i])) - 24;
  }
  return kKeyBits;
}

std::optional<Head> HeadOfBytes(std::string_view bytes) {
  if (bytes.size() != 48) return std::nullopt;
  auto u64 = [&](size_t at) {
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) v = v << 8 | static_cast<uint8_t>(bytes[at + i]);
    return v;
  };
  Head head{u64(0), u64(8), {}};
  std::copy(bytes.begin() + 16, bytes.end(), head.last_leaf_hash.begin());
  return head;
}

std::string HeadBytes(const Head& head) {
  std::string out;
  out.reserve(48);
  PutU64(&out, head.count);
  PutU64(&out, head.last_seq);
  out.append(hash::AsBytes(head.last_leaf_hash));
  return out;
}

Hash ValueHash(const Head& head) { return Tagged(0x02, HeadBytes(head)); }

Hash LeafHashOfValue(const Key& key, const Hash& value_hash) {
  std::string rest(hash::AsBytes(key));
  rest.append(hash::AsBytes(value_hash));
  return Tagged(0x03, rest);
}

Hash LeafHash(const Key& key, const Head& head) { return LeafHashOfValue(key, ValueHash(head)); }

Hash NodeHash(int depth, const Hash& left, const Hash& right) {
  std::string rest;
  rest.reserve(65);
  rest.push_back(static_cast<char>(depth));
  rest.append(hash::AsBytes(left));
  rest.append(hash::AsBytes(right));
  return Tagged(0x04, rest);
}

Hash EmptyHash() {
  static const Hash kEmpty = Tagged(0x05, "");
  return kEmpty;
}

int Bit(const Key& key, int i) { return (key[i / 8] >> (7 - i % 8)) & 1; }

NodeId NodeOf(const Key& key, int depth) {
  NodeId n{depth, {}};
  for (int i = 0; i < depth / 8; ++i) n.prefix[i] = key[i];
  if (depth % 8 != 0) n.prefix[depth / 8] = key[depth / 8] & static_cast<uint8_t>(0xff00u >> (depth % 8));
  return n;
}

absl::StatusOr<Hash> SubtreeHash(const NodeId& node, const Source& src) {
  // A remembered node has two or more leaves under it: no need to count.
  absl::StatusOr<std::optional<Hash>> cached = src.node(node);
  if (!cached.ok()) return cached.status();
  if (cached->has_value()) return **cached;
  Leaf first;
  absl::StatusOr<int> n = src.leaves(node, &first);
  if (!n.ok()) return n.status();
  if (*n == 0) return EmptyHash();
  if (*n == 1) return LeafHash(first.key, first.head);
  if (node.depth >= kKeyBits) return absl::InternalError("map: two leaves under one key");
  NodeId left{node.depth + 1, node.prefix};
  NodeId right{node.depth + 1, Flip(node.prefix, node.depth)};
  absl::StatusOr<Hash> l = SubtreeHash(left, src);
  if (!l.ok()) return l.status();
  absl::StatusOr<Hash> r = SubtreeHash(right, src);
  if (!r.ok()) return r.status();
  Hash h = NodeHash(node.depth, *l, *r);
  src.put(node, h);
  return h;
}

absl::StatusOr<Path> ProvePath(const Key& key, const Source& src) {
  Path path;
  for (int d = 0;; ++d) {
    Leaf first;
    absl::StatusOr<int> n = src.leaves(NodeOf(key, d), &first);
    if (!n.ok()) return n.status();
    if (*n == 1) {
      if (first.key == key) {
        path.found = first;
      } else {
        path.other = AbsenceProof::Other{first.key, ValueHash(first.head)};
      }
    }
    if (*n < 2) break;
    if (d >= kKeyBits) return absl::InternalError("map: two leaves under one key");
    absl::StatusOr<Hash> sibling = SubtreeHash(NodeOf(Flip(key, d), d + 1), src);
    if (!sibling.ok()) return sibling.status();
    path.siblings.push_back(*sibling);
  }
  std::reverse(path.siblings.begin(), path.siblings.end());
  return path;
}

absl::StatusOr<Hash> InclusionRoot(const Key& key, const Head& head, absl::Span<const Hash> proof) {
  if (absl::Status s = CheckHead(head); !s.ok()) return s;
  if (proof.size() > kKeyBits) {
    return absl::InvalidArgumentError("proof: more than 256 siblings");
  }
  return Fold(key, LeafHash(key, head), proof);
}

absl::StatusOr<Hash> AbsenceRoot(const Key& key, const AbsenceProof& proof) {
  int d = static_cast<int>(proof.siblings.size());
  if (d > kKeyBits) return absl::InvalidArgumentError("proof: more than 256 siblings");
  Hash h = EmptyHash();
  if (proof.leaf.has_value()) {
    if (proof.leaf->key == key) {
      return absl::InvalidArgumentError("leaf.key: is the key whose absence is claimed");
    }
    if (CommonBits(proof.leaf->key, key) < d) {
      return absl::InvalidArgumentError(
          absl::StrCat("leaf.key: must share the first ", d, " bits of the key (the leaf's depth)"));
    }
    h = LeafHashOfValue(proof.leaf->key, proof.leaf->value_hash);
  }
  return Fold(key, h, proof.siblings);
}

absl::Status VerifyInclusion(const Hash& root, const Key& key, const Head& head, absl::Span<const Hash> proof) {
  auto computed = InclusionRoot(key, head, proof);
  if (!computed.ok()) return computed.status();
  return CheckRoot(root, *computed);
}

absl::Status VerifyAbsence(const Hash& root, const Key& key, const AbsenceProof& proof) {
  auto computed = AbsenceRoot(key, proof);
  if (!computed.ok()) return computed.status();
  return CheckRoot(root, *computed);
}

absl::Status RunMap::Set(const Key& key, const Head& head) {
  if (absl::Status s = CheckHead(head); !s.ok()) return s;
  auto [it, inserted] = leaves_.insert_or_assign(key, head);
  // The leaf sits one bit below its longest common prefix with a neighbour;
  // every interior node above it changes.
  int depth = 0;
  if (it != leaves_.begin()) depth = std::max(depth, CommonBits(std::prev(it)->first, key) + 1);
  if (std::next(it) != leaves_.end()) {
    depth = std::max(depth, CommonBits(std::next(it)->first, key) + 1);
  }
  for (int d = 0; d < depth; ++d) nodes_.erase(NodeOf(key, d));
  return absl::OkStatus();
}

std::optional<Head> RunMap::Get(const Key& key) const {
  auto it = leaves_.find(key);
  if (it == leaves_.end()) return std::nullopt;
  return it->second;
}

int RunMap::Leaves(const NodeId& node, Leaf* first) const {
  Key hi = node.prefix;
  for (int i = node.depth; i < kKeyBits; ++i) hi[i / 8] |= static_cast<uint8_t>(0x80u >> (i % 8));
  auto it = leaves_.lower_bound(node.prefix);
  if (it == leaves_.end() || it->first > hi) return 0;
  *first = Leaf{it->first, it->second};
  ++it;
  return (it == leaves_.end() || it->first > hi) ? 1 : 2;
}

template <typename F>
auto RunMap::WithSource(F f) {
  auto leaves = [this](const NodeId& n, Leaf* first) -> absl::StatusOr<int> { return Leaves(n, first); };
  auto node = [this](const NodeId& n) -> absl::StatusOr<std::optional<Hash>> {
    auto it = nodes_.find(n);
    if (it == nodes_.end()) return std::optional<Hash>();
    return std::optional<Hash>(it->second);
  };
  auto put = [this](const NodeId& n, const Hash& h) {
    nodes_[n] = h;
    ++nodes_hashed_;
  };
  return f(Source{leaves, node, put});
}

absl::StatusOr<Path> RunMap::PathOf(const Key& key) {
  return WithSource([&](const Source& src) { return ProvePath(key, src); });
}

Hash RunMap::Root() {
  absl::StatusOr<Hash> root = WithSource([](const Source& src) { return SubtreeHash(NodeId{}, src); });
  if (!root.ok()) std::abort();  // the in-memory source never fails
  return *root;
}

Hash RunMap::HashAt(const NodeId& node) {
  absl::StatusOr<Hash> hash = WithSource([&](const Source& src) { return SubtreeHash(node, src); });
  if (!hash.ok()) std::abort();  // the in-memory source never fails
  return *hash;
}

std::optional<Key> RunMap::FirstKeyUnder(const NodeId& node) const {
  auto it = leaves_.lower_bound(node.prefix);
  if (it == leaves_.end() || CommonBits(it->first, node.prefix) < node.depth) return std::nullopt;
  return it->first;
}

absl::StatusOr<InclusionProof> RunMap::ProveInclusion(const Key& key) {
  absl::StatusOr<Path> path = PathOf(key);
  if (!path.ok()) return path.status();
  if (!path->found) return absl::NotFoundError("key: no run with this key in the map");
  return InclusionProof{std::move(path->siblings)};
}

absl::StatusOr<AbsenceProof> RunMap::ProveAbsence(const Key& key) {
  absl::StatusOr<Path> path = PathOf(key);
  if (!path.ok()) return path.status();
  if (path->found) return absl::FailedPreconditionError("key: the run is in the map");
  return AbsenceProof{std::move(path->siblings), path->other};
}

}  // namespace ledger::runmap
