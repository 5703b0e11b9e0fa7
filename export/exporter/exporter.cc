#include "export/exporter/exporter.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <set>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "export/exporter/pruned.h"
#include "export/exporter/run_entries.h"
#include "export/exporter/team_window_bounds.h"
#include "export/gzip/blocked_gzip.h"
#include "export/pack/pack.h"
#include "export/pack/team_window.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/merkle/multiproof.h"
#include "ledger/format/note/note.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/redaction.h"
#include "ledger/format/retention/pruned.h"
#include "ledger/format/runmap/proof_json.h"
#include "util/tasks/tasks.h"

namespace ledger::exporter {
namespace {

absl::Status WriteFile(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) return absl::UnavailableError(absl::StrCat("export: cannot write ", path));
  return absl::OkStatus();
}

// A staged file of the pack: compressed and hashed as it is written, on
// worker threads (export/gzip), so that it is neither written to disk
// uncompressed nor read back; the archive splices its members in.
class StagedFile {
 public:
  explicit StagedFile(const std::string& path) : path_(path), gzip_(path, &sha_) {}

  std::string* buffer() { return gzip_.buffer(); }
  // Hands whole blocks of the buffer to the workers.
  void Spill() { gzip_.Spill(); }
  // Finishes the file; the hex SHA-256 of its content.
  absl::StatusOr<std::string> Close() {
    if (auto s = gzip_.Finish(); !s.ok()) return s;
    return hash::Hex(sha_.Final());
  }
  pack::ArchiveFile file() const { return {path_, true, gzip_.input_bytes()}; }

 private:
  std::string path_;
  hash::Sha256Stream sha_;  // before gzip_, whose workers use it
  gzip::Writer gzip_;
};

// The first seq below the view's size whose logged_at_us is >= t
// (logged_at_us never decreases along the log).
// Pruned entries (CONTRACT section 9) have no time left: the search is
// over the entries kept, so every kept entry below the result is logged
// before t and every kept entry at or above it at or after t.
absl::StatusOr<uint64_t> FirstAtOrAfter(const log::LogView& view, int64_t t) {
  uint64_t lo = 0, hi = view.size();
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    auto leaf = view.GetLeaf(mid);
    if (!leaf.ok()) return leaf.status();
    uint64_t at = mid;
    if (retention::LooksPruned(*leaf)) {
      auto kept = view.NextKeptLeaf(mid);
      if (!kept.ok()) return kept.status();
      if (!kept->has_value() || (*kept)->first >= hi) {
        hi = mid;
        continue;
      }
      at = (*kept)->first;
      *leaf = std::move((*kept)->second);
    }
    auto entry = receipt::ParseStored(*leaf);
    if (!entry.ok()) return absl::DataLossError(absl::StrCat("entry ", at, ": ", entry.status().message()));
    if (entry->logged_at_us < t) {
      lo = at + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace

namespace {

// One export (ExportPack), its steps in order.
struct PackExport {
  PackExport(const log::Log& log, const Scope& scope, const std::string& out_path, const ExportOptions& options)
      : log(log),
        scope(scope),
        out_path(out_path),
        since(options.since),
        lease(options.lease),
        unknown_grace_ms(options.unknown_grace_ms),
        cosign(options.cosign),
        map_cosign(options.map_cosign),
        empty(options.empty),
        progress(options.progress),
        pack_format(options.pack_format) {}
  // A projection on the pool uses this object: wait for it.
  ~PackExport() {
    if (projecting.valid()) projecting.wait();
  }
  PackExport(const PackExport&) = delete;
  PackExport& operator=(const PackExport&) = delete;

  // A batch of leaves handed to the projecting thread.
  struct Batch {
    std::vector<uint64_t> seqs;
    std::string leaves;  // concatenated
    std::vector<size_t> ends;
  };

  // The checkpoint (a run pack's is the one of its run-head proof), its
  // cosignatures, and the manifest's header for the scope.
  absl::Status Prepare();
  // The entries in scope and their proofs, staged; outcomes projected on a
  // second thread meanwhile.
  absl::Status Stage();
  absl::Status ReadScope();
  // A run's entries, `head` its head at the checkpoint.
  absl::Status ReadRun(const runmap::Head& head);
  // NOT_FOUND for a scope with no entry, under EmptyScope::kRefuse: a run's
  // is known from its run-head proof, a window's once it was read.
  absl::Status CheckNotEmpty();
  // One entry in scope: its leaf, its inclusion proof, its projection.
  absl::Status Add(uint64_t seq, std::string_view leaf);
  // Format 8: the redaction entries the pack's erased entries name, each
  // added to the multiproof's walk in seq order with the entries: those
  // below `below` (all with UINT64_MAX).
  absl::Status AddRedactions(uint64_t below);
  // The entry handed to the projecting thread, a batch at a time.
  absl::Status Batched(uint64_t seq, std::string_view leaf);
  // Format 6: the hash of a range of the walk without an entry of the
  // pack, written to multiproof.txt.
  absl::StatusOr<hash::Hash> Range(uint64_t begin, uint64_t end);
  // Format 6: the rest of the walk; the root it leads to MUST be the
  // checkpoint's.
  absl::Status FinishWalk();
  absl::StatusOr<hash::Hash> Node(int level, uint64_t index);
  absl::Status Project(const Batch& batch);
  absl::Status HandOver();
  // The checkpoint, its time note, the run-head proof, the consistency
  // proof, the key; then outcomes and report; then the manifest, signed,
  // and the archive.
  absl::Status WriteSmallFiles();
  absl::Status WriteConsistency();
  absl::Status WriteDerived();
  absl::Status Seal();

  std::string Path(const char* name) const { return dir->path() + "/" + name; }
  const char* proofs_name() const { return header.format >= 6 ? pack::kMultiproof : pack::kProofs; }
  // What this export holds on disk, told to the quota as it grows, plus
  // `more` bytes about to be written.
  absl::Status Charge(uint64_t more) const {
    return lease != nullptr ? lease->Set(DiskUsage(dir->path()) + more) : absl::OkStatus();
  }

  const log::Log& log;
  const Scope& scope;
  const std::string& out_path;
  const std::string& since;
  Staging::Lease* const lease;
  const uint64_t unknown_grace_ms;
  const CosignFn& cosign;
  const CosignFn& map_cosign;
  const EmptyScope empty;
  const ProgressFn& progress;
  const int pack_format;
  // The entries the scope holds, when known before they are read (a run's
  // head counts them; a seq range is its length): progress's total.
  std::optional<uint64_t> expected;

  std::optional<runmap::KeyedPath> run_head;
  // A team window's: the team's head proof (none without the map), the
  // entries held, and team-window.json.
  std::optional<runmap::KeyedPath> team_head;
  WindowEntries held;
  std::optional<pack::TeamWindow> team_window;
  std::optional<log::SignedCheckpoint> cp;
  // The log at that checkpoint: every leaf and node of the pack is read
  // through it.
  std::optional<log::LogView> view;
  std::string checkpoint_file;  // the checkpoint with the cosignatures held for it
  std::string time_note_file;   // its time note with the monitors' map cosignatures held for it
  uint64_t size = 0;
  manifest::Manifest header;              // all but the files
  uint64_t window_lo = 0, window_hi = 0;  // a team window's seqs [lo, hi)
  std::optional<pack::ScratchDir> dir;
  // Format 6 stages multiproof.txt, a walk of the entries' seqs (CONTRACT
  // section 6, "Multiproofs"); earlier formats stage proofs.jsonl.
  std::optional<StagedFile> entries, proofs;
  std::optional<merkle::MultiproofWalk> walk;
  std::optional<pack::Outcomes> outcomes;
  // Neighbouring entries' proofs share most of their nodes, and a node
  // record holds sixteen neighbours.
  absl::flat_hash_map<uint64_t, std::vector<hash::Hash>> groups;
  merkle::EdgeCache edges;
  // The entries' proofs, each from the last one (of the tree of `size`).
  std::optional<merkle::InclusionProver> prover;
  std::vector<hash::Hash> path;
  Batch batch;
  // The batch being projected (by `projecting`), and the entries it is
  // decoded into.
  Batch projected;
  std::vector<receipt::Entry> decoded;
  std::future<absl::Status> projecting;
  uint64_t count = 0;
  // Format 8: the redaction entries named by the erased entries read so far
  // and not yet added to the walk, and the leaves of those added.
  std::set<uint64_t> pending_redactions;
  std::vector<std::string> redaction_leaves;
  std::map<std::string, pack::ArchiveFile> files;
  std::map<std::string, std::string> digests;
};

absl::Status PackExport::Prepare() {
  // A run pack is of the checkpoint its run-head proof is of.
  absl::StatusOr<log::SignedCheckpoint> found = absl::UnknownError("");
  if (scope.is_run()) {
    auto proof = log.ProveRun(scope.team, scope.run_id);
    if (!proof.ok()) return proof.status();
    found = proof->checkpoint;
    run_head = runmap::KeyedPath{proof->key, std::move(proof->path)};
  } else if (auto team = scope.is_team_window() ? log.ProveTeam(scope.team)
                                                : absl::StatusOr<log::RunProof>(absl::FailedPreconditionError(""));
             team.ok()) {
    // A team window is of the checkpoint its team-head proof is of.
    found = team->checkpoint;
    team_head = runmap::KeyedPath{team->key, std::move(team->path)};
  } else if (absl::IsFailedPrecondition(team.status())) {
    found = log.Checkpoint(0);  // a seq range, or a ledger without the maps
  } else {
    return team.status();
  }
  if (absl::IsNotFound(found.status())) {
    return absl::FailedPreconditionError(absl::StrCat("export: ", found.status().message()));
  }
  if (!found.ok()) return found.status();
  cp = *std::move(found);
  auto taken = log.ViewAt(cp->size);
  if (!taken.ok()) return taken.status();
  view = *std::move(taken);
  if (cp->time_note.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("export: the checkpoint of size ", cp->size, " has no signed time"));
  }
  checkpoint_file = cp->note;
  if (cosign) {
    auto cosigned = cosign(cp->note);
    if (!cosigned.ok())
      return absl::Status(cosigned.status().code(), absl::StrCat("export: ", cosigned.status().message()));
    checkpoint_file = *std::move(cosigned);
  }
  time_note_file = cp->time_note;
  if (map_cosign) {
    auto cosigned = map_cosign(cp->time_note);
    if (!cosigned.ok())
      return absl::Status(cosigned.status().code(), absl::StrCat("export: ", cosigned.status().message()));
    time_note_file = *std::move(cosigned);
  }
  size = cp->size;
  header.origin = log.origin();
  header.scope = scope;
  header.tree_size = size;
  header.root = hash::Hex(cp->root);
  header.unknown_grace_ms = unknown_grace_ms;
  // The format says what the pack carries, as the checkpoint's note does.
  // Format F carries a note of version F - 1 (CONTRACT section 7).
  header.format = std::max(cp->time_version, 1) + 1;
  if (header.format == 5 && pack_format >= 6) header.format = std::min(pack_format, 7);
  if (scope.is_run()) {
    header.scope = {scope.team, scope.run_id};
  } else if (scope.is_team_window()) {
    if (scope.to_us <= scope.from_us) return absl::InvalidArgumentError("time: want from < to");
    if (auto s = CheckWindowStart(*view, scope.team, scope.from_us); !s.ok()) return s;
    auto lo = FirstAtOrAfter(*view, scope.from_us);
    if (!lo.ok()) return lo.status();
    auto hi = FirstAtOrAfter(*view, scope.to_us);
    if (!hi.ok()) return hi.status();
    window_lo = *lo;
    window_hi = *hi;
    header.scope = {scope.team, "", window_lo, window_hi, scope.from_us, scope.to_us};
  } else {
    if (scope.from_seq >= scope.to_seq) {
      return absl::InvalidArgumentError("seq: want A:B with A < B");
    }
    if (scope.to_seq > size) {
      return absl::OutOfRangeError(
          absl::StrCat("seq: ", scope.to_seq, " is beyond the latest checkpoint's size ", size));
    }
    header.scope = {"", "", scope.from_seq, scope.to_seq};
  }

  return absl::OkStatus();
}

absl::StatusOr<hash::Hash> PackExport::Range(uint64_t begin, uint64_t end) {
  auto h = merkle::SubtreeHash(
      begin, end - begin, size, [this](int level, uint64_t index) { return Node(level, index); }, &edges);
  if (!h.ok()) return h.status();
  hash::AppendHex(*h, proofs->buffer());
  proofs->buffer()->push_back('\n');
  return h;
}

absl::StatusOr<hash::Hash> PackExport::Node(int level, uint64_t index) {
  uint64_t group = index / log::LogView::kNodesPerGroup, at = index % log::LogView::kNodesPerGroup;
  uint64_t key = group << 6 | static_cast<uint64_t>(level);
  auto it = groups.find(key);
  if (it == groups.end()) {
    auto g = view->GetNodeGroup(level, group);
    if (!g.ok()) return g.status();
    if (groups.size() > 4096) groups.clear();  // bounded memory
    it = groups.emplace(key, *std::move(g)).first;
  }
  if (at >= it->second.size()) {
    return absl::DataLossError(absl::StrCat("storage: tree node (level ", level, ", index ", index, ") is missing"));
  }
  return it->second[at];
}

absl::Status PackExport::Project(const Batch& b) {
  // Decoded into the entries of the batch before, cleared: a receipt's
  // fields are allocated once, not for every entry.
  if (decoded.size() < b.seqs.size()) decoded.resize(b.seqs.size());
  size_t begin = 0;
  for (size_t k = 0; k < b.seqs.size(); ++k) {
    std::string_view leaf(b.leaves.data() + begin, b.ends[k] - begin);
    begin = b.ends[k];
    uint64_t seq = b.seqs[k];
    receipt::Entry& entry = decoded[k];
    entry.Clear();
    if (receipt::LooksRedacted(leaf)) {
      auto redacted = receipt::ParseRedacted(leaf);
      if (!redacted.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", redacted.status().message()));
      entry = std::move(redacted->skeleton);
    } else if (!receipt::ReadLeaf(leaf, &entry)) {
      auto parsed = receipt::ParseLeafByTree(leaf);
      if (!parsed.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", parsed.status().message()));
      entry = *std::move(parsed);
    }
    if (scope.is_run() && (entry.receipt.team() != scope.team || entry.receipt.run_id() != scope.run_id)) {
      return absl::DataLossError(absl::StrCat("entry ", seq, " is not of run ", scope.run_id));
    }
  }
  return outcomes->Project(absl::MakeConstSpan(decoded.data(), b.seqs.size()));
}

// Leaves are decoded and projected into outcomes on the task pool, a batch
// at a time (one batch at once, in order), while this thread reads, proves
// and writes the next batch.
absl::Status PackExport::HandOver() {
  if (projecting.valid()) {
    if (auto s = projecting.get(); !s.ok()) return s;
  }
  if (!batch.seqs.empty()) {
    projected = std::move(batch);
    projecting = tasks::Pool::Shared().Run([this] { return Project(projected); });
  }
  batch = Batch();
  return Charge(0);
}

absl::Status PackExport::AddRedactions(uint64_t below) {
  while (!pending_redactions.empty() && *pending_redactions.begin() < below) {
    const uint64_t by = *pending_redactions.begin();
    pending_redactions.erase(pending_redactions.begin());
    auto leaf = view->GetLeaf(by);
    if (!leaf.ok()) return leaf.status();
    redaction_leaves.push_back(*leaf);
    if (auto s = walk->Add(by, hash::LeafHash(*leaf), [this](uint64_t b, uint64_t e) { return Range(b, e); });
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status PackExport::Add(uint64_t seq, std::string_view leaf) {
  if (retention::LooksPruned(leaf)) {
    return scope.is_run() ? RunPruned(*view, scope.team, scope.run_id, seq) : SeqPruned(*view, seq);
  }
  ++count;
  hash::Hash leaf_hash;
  if (receipt::LooksRedacted(leaf)) {
    // An erased entry (CONTRACT section 8): its redacted line, the leaf hash
    // it states, and its redaction entry in redactions.jsonl.
    auto redacted = receipt::ParseRedacted(leaf);
    if (!redacted.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", redacted.status().message()));
    if (!walk.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat("export: pack format ", header.format,
                                                        " cannot hold the erased entry ", seq, ": ask for format 8"));
    }
    if (redacted->by >= size) {
      return absl::UnavailableError(
          absl::StrCat("export: entry ", seq, " was erased while the pack was being made; export again"));
    }
    leaf_hash = redacted->leaf_hash;
    pending_redactions.insert(redacted->by);
  } else {
    leaf_hash = hash::LeafHash(leaf);
  }
  if (walk.has_value()) {
    if (auto s = AddRedactions(seq); !s.ok()) return s;
    if (pending_redactions.erase(seq) > 0) redaction_leaves.emplace_back(leaf);  // a redaction in scope
    if (auto s = walk->Add(seq, leaf_hash, [this](uint64_t b, uint64_t e) { return Range(b, e); }); !s.ok()) {
      return s;
    }
    entries->buffer()->append(leaf);
    entries->buffer()->push_back('\n');
    entries->Spill();
    proofs->Spill();
    return Batched(seq, leaf);
  }
  if (!prover) prover.emplace(size);
  if (auto s = prover->Prove(
          seq, [this](int level, uint64_t index) { return Node(level, index); }, &path);
      !s.ok()) {
    return s;
  }
  std::string& entries_out = *entries->buffer();
  std::string& proofs_out = *proofs->buffer();
  entries_out.append(leaf);
  entries_out.push_back('\n');
  absl::StrAppend(&proofs_out, "{\"seq\":", seq, ",\"leaf_hash\":\"");
  hash::AppendHex(hash::LeafHash(leaf), &proofs_out);
  proofs_out += "\",\"inclusion\":[";
  for (size_t i = 0; i < path.size(); ++i) {
    proofs_out += i ? ",\"" : "\"";
    hash::AppendHex(path[i], &proofs_out);
    proofs_out += '"';
  }
  proofs_out += "]}\n";
  entries->Spill();
  proofs->Spill();
  return Batched(seq, leaf);
}

absl::Status PackExport::Batched(uint64_t seq, std::string_view leaf) {
  batch.seqs.push_back(seq);
  batch.leaves.append(leaf);
  batch.ends.push_back(batch.leaves.size());
  if (batch.seqs.size() >= 4096) {
    if (progress) progress(count, expected);
    return HandOver();
  }
  return absl::OkStatus();
}

// The entries in scope, ascending: a run's by its chain (consecutive seqs
// read with one scan, the rest one by one), a team window's by one scan of
// the window, a seq range's by one scan.
absl::Status PackExport::ReadScope() {
  auto counted = [this](uint64_t seq, std::string_view leaf) { return Add(seq, leaf); };
  absl::Status read;
  if (scope.is_run()) {
    // No entry: the proof is of absence.
    read = run_head->path.found.has_value() ? ReadRun(run_head->path.found->head) : absl::OkStatus();
  } else if (scope.is_team_window()) {
    read = view->ScanLeaves(window_lo, window_hi, [&](uint64_t seq, std::string_view leaf) -> absl::Status {
      // Only the team's entries; the rest of the window is skipped. A
      // pruned entry here is another team's: the window starts at or after
      // the cutoff of the team's rule (CheckWindowStart).
      if (retention::LooksPruned(leaf)) return absl::OkStatus();
      auto team = receipt::TeamOf(leaf);
      if (!team.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", team.status().message()));
      if (*team != scope.team) return absl::OkStatus();
      if (held.count++ == 0) {
        auto link = receipt::TeamLinkOf(leaf);
        if (!link.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", link.status().message()));
        held.first_seq = seq;
        held.first_link = *link;
      }
      return counted(seq, leaf);
    });
  } else {
    read = view->ScanLeaves(scope.from_seq, scope.to_seq, counted);
  }
  return read;
}

absl::Status PackExport::ReadRun(const runmap::Head& head) {
  return ReadRunEntries(
      *view, scope.team, scope.run_id, head, Path("run-seqs"), [this] { return Charge(0); },
      [this](uint64_t seq, std::string_view leaf) { return Add(seq, leaf); });
}

absl::Status PackExport::FinishWalk() {
  if (auto s = AddRedactions(UINT64_MAX); !s.ok()) return s;
  auto root = walk->Finish([this](uint64_t b, uint64_t e) { return Range(b, e); });
  if (!root.ok()) return root.status();
  if (*root != cp->root) {
    return absl::DataLossError(absl::StrCat("export: the entries and the multiproof lead to root ", hash::Hex(*root),
                                            ", the checkpoint's is ", hash::Hex(cp->root),
                                            ": the store's leaves or nodes are damaged"));
  }
  proofs->Spill();
  return absl::OkStatus();
}

absl::Status PackExport::CheckNotEmpty() {
  if (empty == EmptyScope::kWrite) return absl::OkStatus();
  if (scope.is_run() && !run_head->path.found.has_value()) {
    return absl::NotFoundError(
        absl::StrCat("run ", scope.team, "/", scope.run_id, " has no entry up to tree size ", size));
  }
  if (scope.is_team_window() && dir.has_value() && count == 0) {
    return absl::NotFoundError(absl::StrCat(
        "team ", scope.team, " has no entry logged in [",
        absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", absl::FromUnixMicros(scope.from_us), absl::UTCTimeZone()), ", ",
        absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", absl::FromUnixMicros(scope.to_us), absl::UTCTimeZone()),
        ") up to tree size ", size));
  }
  return absl::OkStatus();
}

absl::Status PackExport::Stage() {
  dir.emplace(lease != nullptr ? lease->dir() : std::filesystem::temp_directory_path().string(), kStagingPrefix);
  if (dir->path().empty()) return absl::UnavailableError("export: cannot create a temporary directory");
  entries.emplace(Path(pack::kEntries));
  proofs.emplace(Path(proofs_name()));
  if (header.format >= 6) walk.emplace(size);
  outcomes.emplace(pack::Outcomes::kSpillBytes, dir->path());
  if (scope.is_run()) {
    expected = run_head->path.found.has_value() ? run_head->path.found->head.count : 0;
  } else if (!scope.is_team_window()) {
    expected = scope.to_seq - scope.from_seq;
  }
  if (progress) progress(0, expected);
  absl::Status read = ReadScope();
  if (read.ok() && walk.has_value()) read = FinishWalk();
  if (read.ok() && progress) progress(count, expected);
  // The projecting thread MUST be joined before anything it uses goes.
  absl::Status handed = HandOver();
  absl::Status projected = projecting.valid() ? projecting.get() : absl::OkStatus();
  for (const absl::Status& s : {read, handed, projected}) {
    if (!s.ok()) return s;
  }
  for (auto [name, file] : {std::pair{pack::kEntries, &*entries}, std::pair{proofs_name(), &*proofs}}) {
    auto digest = file->Close();
    if (!digest.ok()) return digest.status();
    digests[name] = *digest;
  }
  header.entries = count;
  if (!redaction_leaves.empty()) {
    if (pack_format < 8) {
      return absl::FailedPreconditionError(
          absl::StrCat("export: pack format ", pack_format, " cannot hold an erased entry: ask for format 8"));
    }
    header.format = 8;
  }
  if (team_head.has_value()) {
    auto w = TeamWindowBounds(*view, scope.team, *team_head, window_hi, held, [this](uint64_t seq) {
      return merkle::InclusionProof(
          seq, size, [this](int level, uint64_t index) { return Node(level, index); }, &edges);
    });
    if (!w.ok()) return w.status();
    // A bound that was erased has no leaf to show, and a window's bounds
    // are shown by their leaves (CONTRACT section 7, "Closed team windows").
    for (const auto& bound : {w->before, w->after}) {
      if (bound.has_value() && receipt::LooksRedacted(bound->leaf)) {
        return absl::FailedPreconditionError(
            absl::StrCat("export: the team's entry ", bound->seq,
                         " beside the window was erased (CONTRACT section 8), and a "
                         "window's bounds are shown by their leaves: widen or narrow the window past it"));
      }
    }
    team_window = *std::move(w);
  }
  return absl::OkStatus();
}

absl::Status PackExport::WriteSmallFiles() {
  files = {{pack::kCheckpoint, {Path(pack::kCheckpoint)}},
           {pack::kVkey, {Path(pack::kVkey)}},
           {pack::kEntries, entries->file()},
           {proofs_name(), proofs->file()}};
  if (auto s = WriteFile(files[pack::kCheckpoint].path, checkpoint_file); !s.ok()) return s;
  files[pack::kCheckpointTime] = {Path(pack::kCheckpointTime)};
  if (auto s = WriteFile(files[pack::kCheckpointTime].path, time_note_file); !s.ok()) return s;
  if (run_head.has_value()) {
    files[pack::kRunHead] = {Path(pack::kRunHead)};
    if (auto s = WriteFile(files[pack::kRunHead].path, runmap::EncodeProof(*run_head) + "\n"); !s.ok()) return s;
  }
  if (!redaction_leaves.empty()) {
    std::string lines;
    for (const std::string& leaf : redaction_leaves) absl::StrAppend(&lines, leaf, "\n");
    files[pack::kRedactions] = {Path(pack::kRedactions)};
    if (auto s = WriteFile(files[pack::kRedactions].path, lines); !s.ok()) return s;
  }
  if (team_window.has_value()) {
    files[pack::kTeamWindow] = {Path(pack::kTeamWindow)};
    if (auto s = WriteFile(files[pack::kTeamWindow].path, pack::EncodeTeamWindow(*team_window)); !s.ok()) return s;
  }
  if (!since.empty()) {
    if (auto s = WriteConsistency(); !s.ok()) return s;
  }
  return WriteFile(files[pack::kVkey].path, log.VerifierKeyAt(size) + "\n");
}

// consistency.json, from the auditor's earlier checkpoint `since`.
absl::Status PackExport::WriteConsistency() {
  // The size the note claims says which of the log's keys must have signed it.
  auto claimed = note::ClaimedCheckpoint(since);
  if (!claimed.ok()) return absl::InvalidArgumentError(absl::StrCat("since: ", claimed.status().message()));
  auto text = log.Keys().Open(since, claimed->size);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("since: ", text.status().message()));
  }
  auto old = note::ParseCheckpoint(*text);
  if (!old.ok() || old->origin != log.origin()) {
    return absl::InvalidArgumentError("since: not a checkpoint of this log");
  }
  if (old->size > size) {
    return absl::InvalidArgumentError(
        absl::StrCat("since: its size ", old->size, " is beyond the checkpoint's ", size));
  }
  auto proof = log.ProveConsistency(old->size, size);
  if (!proof.ok()) return proof.status();
  nlohmann::ordered_json c = {{"old_checkpoint", since}, {"proof", nlohmann::ordered_json::array()}};
  for (const auto& h : proof->hashes) c["proof"].push_back(hash::Hex(h));
  files[pack::kConsistency] = {Path(pack::kConsistency)};
  if (auto s = WriteFile(files[pack::kConsistency].path, c.dump() + "\n"); !s.ok()) return s;
  return absl::OkStatus();
}

absl::Status PackExport::WriteDerived() {
  for (const char* name : {pack::kOutcomes, pack::kReport}) {
    StagedFile out(Path(name));
    auto sink = [&](std::string_view piece) {
      out.buffer()->append(piece);
      out.Spill();
    };
    absl::Status written = name == std::string_view(pack::kOutcomes)
                               ? outcomes->Write(sink)
                               : pack::WriteReport(header, *outcomes, checkpoint_file, time_note_file, sink);
    if (!written.ok()) return written;
    auto digest = out.Close();
    if (!digest.ok()) return digest.status();
    digests[name] = *digest;
    files[name] = out.file();
  }
  return absl::OkStatus();
}

absl::Status PackExport::Seal() {
  manifest::Manifest manifest = header;
  for (const auto& [name, file] : files) {
    if (!digests.count(name)) {
      auto digest = pack::FileSha256(file.path);
      if (!digest.ok()) return digest.status();
      digests[name] = *digest;
    }
    manifest.files[name] = digests[name];
  }
  std::string manifest_text = manifest::Encode(manifest);
  auto sig = log.SignNoteAt(size, hash::Hex(hash::Sha256(manifest_text)) + "\n");
  if (!sig.ok()) return sig.status();
  files[pack::kManifest] = {Path(pack::kManifest)};
  files[pack::kManifestSig] = {Path(pack::kManifestSig)};
  if (auto s = WriteFile(files[pack::kManifest].path, manifest_text); !s.ok()) return s;
  if (auto s = WriteFile(files[pack::kManifestSig].path, *sig); !s.ok()) return s;
  // The archive holds the staged files once more.
  if (auto s = Charge(DiskUsage(dir->path())); !s.ok()) return s;
  return pack::WriteArchive(files, out_path);
}

}  // namespace

absl::Status ExportPack(const log::Log& log, const Scope& scope, const std::string& out_path,
                        const ExportOptions& options) {
  if (options.pack_format < 5 || options.pack_format > 8) {
    return absl::InvalidArgumentError(absl::StrCat("pack_format: want 5, 6, 7 or 8, found ", options.pack_format));
  }
  PackExport e(log, scope, out_path, options);
  for (auto step : {&PackExport::Prepare, &PackExport::CheckNotEmpty, &PackExport::Stage, &PackExport::CheckNotEmpty,
                    &PackExport::WriteSmallFiles, &PackExport::WriteDerived, &PackExport::Seal}) {
    if (absl::Status s = (e.*step)(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace ledger::exporter
