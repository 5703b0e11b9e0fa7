#include "ledger/format/replay/replay.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/format/receipt/redaction.h"
#include "ledger/format/retention/pruned.h"

namespace ledger::replay {
namespace {

constexpr std::string_view kStateHeader = "evidence-ledger/replay-state/v1\n";
constexpr size_t kLeafBytes = 32 + 48;

std::string RunName(std::string_view team, std::string_view run_id) {
  return absl::StrCat(std::string(team), "/", std::string(run_id));
}

std::string SeqOrNone(std::optional<uint64_t> v) { return v ? absl::StrCat(*v) : std::string("none"); }

void PutU64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// Reads the state's parts in order; false once past its end.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  bool U64(uint64_t* v) {
    if (bytes_.size() < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i) *v = (*v << 8) | static_cast<uint8_t>(bytes_[i]);
    bytes_.remove_prefix(8);
    return true;
  }
  bool Take(size_t n, std::string_view* out) {
    if (bytes_.size() < n) return false;
    *out = bytes_.substr(0, n);
    bytes_.remove_prefix(n);
    return true;
  }
  bool Hash(hash::Hash* h) {
    std::string_view b;
    if (!Take(h->size(), &b)) return false;
    std::memcpy(h->data(), b.data(), h->size());
    return true;
  }
  size_t left() const { return bytes_.size(); }

 private:
  std::string_view bytes_;
};

void EncodeMap(const runmap::RunMap& map, std::string* out) {
  PutU64(out, map.size());
  for (const auto& [key, head] : map.leaves()) {
    out->append(reinterpret_cast<const char*>(key.data()), key.size());
    out->append(runmap::HeadBytes(head));
  }
}

absl::Status DecodeMap(Reader& in, const char* name, runmap::RunMap* map) {
  uint64_t n = 0;
  if (!in.U64(&n) || n > in.left() / kLeafBytes) {
    return absl::DataLossError(absl::StrCat("replay state: ", name, ": count beyond the file's end"));
  }
  std::optional<runmap::Key> last;
  for (uint64_t i = 0; i < n; ++i) {
    std::string_view key_bytes, head_bytes;
    in.Take(32, &key_bytes);
    in.Take(48, &head_bytes);
    runmap::Key key;
    std::memcpy(key.data(), key_bytes.data(), key.size());
    if (last.has_value() && !(*last < key)) {
      return absl::DataLossError(absl::StrCat("replay state: ", name, ": keys not in increasing order at ", i));
    }
    last = key;
    std::optional<runmap::Head> head = runmap::HeadOfBytes(head_bytes);
    absl::Status set = head.has_value() ? map->Set(key, *head) : absl::InvalidArgumentError("48 bytes");
    if (!set.ok()) return absl::DataLossError(absl::StrCat("replay state: ", name, ": head ", i, ": ", set.message()));
  }
  return absl::OkStatus();
}

}  // namespace

std::string Finding::Text() const {
  return absl::StrCat(check, seq >= 0 ? absl::StrCat(" at seq ", seq) : "", ": ", what, ": expected ", expected,
                      ", found ", found);
}

std::optional<Finding> Replay::Append(
    std::string_view leaf, receipt::Entry* entry_out,
    std::optional<absl::FunctionRef<void(int level, uint64_t index, const hash::Hash&)>> node) {
  return Take(leaf, entry_out, node, /*maps=*/true);
}

void Replay::Grow(const hash::Hash& leaf_hash,
                  std::optional<absl::FunctionRef<void(int level, uint64_t index, const hash::Hash&)>> node) {
  if (node.has_value()) {
    frontier_.Append(leaf_hash, *node);
  } else {
    frontier_.Append(leaf_hash, [](int, uint64_t, const hash::Hash&) {});
  }
  prev_ = leaf_hash;
}

std::optional<Finding> Replay::AppendBelowPruning(
    std::string_view leaf, receipt::Entry* entry_out,
    std::optional<absl::FunctionRef<void(int level, uint64_t index, const hash::Hash&)>> node) {
  const uint64_t seq = size();
  if (!retention::LooksPruned(leaf)) return Take(leaf, entry_out, node, /*maps=*/false);
  auto pruned = retention::ParsePruned(leaf);
  if (!pruned.ok()) {
    return Finding{"entry", static_cast<int64_t>(seq), "leaf", "a pruned line (CONTRACT section 9)",
                   std::string(pruned.status().message())};
  }
  if (pruned->seq != seq) {
    return Finding{"entry", static_cast<int64_t>(seq), "seq in the pruned line", absl::StrCat(seq),
                   absl::StrCat(pruned->seq)};
  }
  Grow(pruned->leaf_hash, node);
  return std::nullopt;
}

std::optional<Finding> Replay::Take(
    std::string_view leaf, receipt::Entry* entry_out,
    std::optional<absl::FunctionRef<void(int level, uint64_t index, const hash::Hash&)>> node, bool maps) {
  const uint64_t seq = size();
  const int64_t at = static_cast<int64_t>(seq);
  // An erased entry's redacted line (CONTRACT section 8) is replayed as the
  // leaf it states: its skeleton and its leaf hash. Whether its redaction
  // states it is the reader's to check when it reaches the redaction.
  std::optional<hash::Hash> erased_hash;
  auto entry = [&]() -> absl::StatusOr<receipt::Entry> {
    if (!receipt::LooksRedacted(leaf)) return receipt::ParseLeaf(leaf);
    auto redacted = receipt::ParseRedacted(leaf);
    if (!redacted.ok()) return redacted.status();
    erased_hash = redacted->leaf_hash;
    return std::move(redacted->skeleton);
  }();
  if (!entry.ok())
    return Finding{"entry", at, "leaf",
                   receipt::LooksRedacted(leaf) ? "a redacted line (CONTRACT section 8)" : "a leaf in canonical form",
                   std::string(entry.status().message())};
  if (entry->seq != seq) return Finding{"entry", at, "seq in the leaf", absl::StrCat(seq), absl::StrCat(entry->seq)};
  if (entry->prev != prev_) return Finding{"chain", at, "prev", hash::Hex(prev_), hash::Hex(entry->prev)};
  const hash::Hash leaf_hash = erased_hash.value_or(hash::LeafHash(leaf));
  if (!maps) {
    Grow(leaf_hash, node);
    if (entry_out != nullptr) *entry_out = *std::move(entry);
    return std::nullopt;
  }
  const receipt::Receipt& r = entry->receipt;
  const runmap::Key run_key = runmap::RunKeyOf(r.team(), r.run_id(), runmap::KeyVersion::kV2);
  const std::optional<runmap::Head> run = runs_.Get(run_key);
  const std::optional<uint64_t> run_prev = run ? std::optional(run->last_seq) : std::nullopt;
  if (entry->run_prev != run_prev) {
    return Finding{"run_chain", at, absl::StrCat("run_prev of run ", RunName(r.team(), r.run_id())),
                   SeqOrNone(run_prev), SeqOrNone(entry->run_prev)};
  }
  const runmap::Key team_key = runmap::TeamKeyOf(r.team());
  const std::optional<runmap::Head> team = teams_.Get(team_key);
  const std::optional<uint64_t> team_prev = team ? std::optional(team->last_seq) : std::nullopt;
  // Entries of version 1 carry no team_prev; each is its team's head all the same.
  if (entry->version >= 2 && entry->team_prev != team_prev) {
    return Finding{"team_chain", at, absl::StrCat("team_prev of team ", r.team()), SeqOrNone(team_prev),
                   SeqOrNone(entry->team_prev)};
  }
  const runmap::Head run_head{run ? run->count + 1 : 1, seq, leaf_hash};
  const runmap::Head team_head{team ? team->count + 1 : 1, seq, leaf_hash};
  // CheckHead's bounds (a count within its seq, a seq below 2^53): checked
  // before either map changes.
  if (absl::Status s = runmap::CheckHead(run_head); !s.ok()) {
    return Finding{"run_map", at, absl::StrCat("run-head map entry of ", RunName(r.team(), r.run_id())), "a valid head",
                   std::string(s.message())};
  }
  if (absl::Status s = runmap::CheckHead(team_head); !s.ok()) {
    return Finding{"team_map", at, absl::StrCat("team-head map entry of ", r.team()), "a valid head",
                   std::string(s.message())};
  }
  runs_.Set(run_key, run_head).IgnoreError();     // checked above
  teams_.Set(team_key, team_head).IgnoreError();  // checked above
  last_run_head_ = run_head;
  Grow(leaf_hash, node);
  if (entry_out != nullptr) *entry_out = *std::move(entry);
  return std::nullopt;
}

hash::Hash Replay::root() const { return frontier_.Root(); }

std::optional<Finding> Replay::Check(const note::CheckpointTime& note) {
  const std::string what = absl::StrCat("time note of the checkpoint of size ", note.checkpoint.size);
  const int64_t at = static_cast<int64_t>(size()) - 1;
  if (note.checkpoint.size != size()) {
    return Finding{"root", at, absl::StrCat(what, ": tree size"), absl::StrCat(size(), " (entries replayed)"),
                   absl::StrCat(note.checkpoint.size)};
  }
  if (note.checkpoint.root != root()) {
    return Finding{"root", at, absl::StrCat(what, ": root"), hash::Hex(root()), hash::Hex(note.checkpoint.root)};
  }
  if (note.team_map_root.has_value() && *note.team_map_root != teams_.Root()) {
    return Finding{"team_map", at, absl::StrCat(what, ": team-head map root (signed)"), hash::Hex(teams_.Root()),
                   hash::Hex(*note.team_map_root)};
  }
  if (note.version() == 4 && *note.run_map_root != runs_.Root()) {
    return Finding{"run_map", at, absl::StrCat(what, ": run-head map root (signed)"), hash::Hex(runs_.Root()),
                   hash::Hex(*note.run_map_root)};
  }
  return std::nullopt;
}

std::optional<runmap::Head> Replay::RunHead(std::string_view team, std::string_view run_id) const {
  return runs_.Get(runmap::RunKeyOf(team, run_id, runmap::KeyVersion::kV2));
}

std::optional<runmap::Head> Replay::TeamHead(std::string_view team) const {
  return teams_.Get(runmap::TeamKeyOf(team));
}

std::string Replay::Encode() const {
  std::string out(kStateHeader);
  PutU64(&out, size());
  PutU64(&out, frontier_.nodes().size());
  for (const hash::Hash& h : frontier_.nodes()) out.append(reinterpret_cast<const char*>(h.data()), h.size());
  out.append(reinterpret_cast<const char*>(prev_.data()), prev_.size());
  EncodeMap(runs_, &out);
  EncodeMap(teams_, &out);
  const hash::Hash sum = hash::Sha256(out);
  out.append(reinterpret_cast<const char*>(sum.data()), sum.size());
  return out;
}

absl::StatusOr<Replay> Replay::Decode(std::string_view bytes) {
  if (!bytes.starts_with(kStateHeader)) {
    return absl::DataLossError(
        absl::StrCat("replay state: header: want \"", std::string(kStateHeader.substr(0, 31)), "\""));
  }
  if (bytes.size() < kStateHeader.size() + 32) return absl::DataLossError("replay state: shorter than its checksum");
  const std::string_view body = bytes.substr(0, bytes.size() - 32);
  const hash::Hash sum = hash::Sha256(body);
  if (std::memcmp(sum.data(), bytes.data() + body.size(), sum.size()) != 0) {
    return absl::DataLossError("replay state: checksum: the file is not what was written");
  }
  Reader in(body.substr(kStateHeader.size()));
  uint64_t size = 0, nodes = 0;
  if (!in.U64(&size) || !in.U64(&nodes) || nodes != static_cast<uint64_t>(__builtin_popcountll(size))) {
    return absl::DataLossError("replay state: size: the frontier's node count is not that of the size");
  }
  std::vector<hash::Hash> frontier(nodes);
  for (hash::Hash& h : frontier) {
    if (!in.Hash(&h)) return absl::DataLossError("replay state: frontier: beyond the file's end");
  }
  Replay replay;
  size_t next = 0;
  auto loaded =
      merkle::Frontier::Load(size, [&](int, uint64_t) -> absl::StatusOr<hash::Hash> { return frontier[next++]; });
  if (!loaded.ok()) return loaded.status();
  replay.frontier_ = *std::move(loaded);
  if (!in.Hash(&replay.prev_)) return absl::DataLossError("replay state: prev: beyond the file's end");
  if (absl::Status s = DecodeMap(in, "runs", &replay.runs_); !s.ok()) return s;
  if (absl::Status s = DecodeMap(in, "teams", &replay.teams_); !s.ok()) return s;
  if (in.left() != 0) return absl::DataLossError("replay state: bytes after the team heads");
  return replay;
}

}  // namespace ledger::replay
