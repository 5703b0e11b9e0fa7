// Stage (internal/steps.h): the entries in scope read from the view, each
// written to entries.jsonl with its proof (a path per entry in
// proofs.jsonl, or the shared walk of multiproof.txt), and handed, a batch
// at a time, to a thread of the task pool that projects the outcomes.
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "export/exporter/internal/steps.h"
#include "export/exporter/pruned.h"
#include "export/exporter/run_entries.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/merkle/multiproof.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/redaction.h"
#include "ledger/format/retention/pruned.h"
#include "util/tasks/tasks.h"

namespace ledger::exporter::internal {
namespace {

// The reading of one scope: what Stage gives back, and the state its
// callbacks share while the entries stream through.
class Stager {
 public:
  Stager(const Scope& scope, const ExportOptions& options, const Prepared& prepared, const pack::ScratchDir& dir)
      : scope_(scope), options_(options), p_(prepared), dir_(dir) {}
  // A projection on the pool uses this object: wait for it.
  ~Stager() {
    if (projecting_.valid()) projecting_.wait();
  }
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  absl::StatusOr<Staged> Run();

 private:
  // A batch of leaves handed to the projecting thread.
  struct Batch {
    std::vector<uint64_t> seqs;
    std::string leaves;  // concatenated
    std::vector<size_t> ends;
  };

  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }
  // The entries in scope, ascending.
  absl::Status ReadScope();
  // One entry in scope: its leaf, its inclusion proof, its projection.
  absl::Status Add(uint64_t seq, std::string_view leaf);
  // Format 8: the redaction entries the pack's erased entries name, and
  // format 9's retention entry, each added to the multiproof's walk in seq
  // order with the entries: those below `below` (all with UINT64_MAX).
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
  // A team window's bounds (team-window.json).
  absl::Status Bounds();

  const Scope& scope_;
  const ExportOptions& options_;
  const Prepared& p_;
  const pack::ScratchDir& dir_;
  // The entries the scope holds, when known before they are read (a run's
  // head counts them; a seq range is its length): progress's total.
  std::optional<uint64_t> expected_;
  // A team window's entries held.
  WindowEntries held_;
  // Format 6 stages multiproof.txt, a walk of the entries' seqs (CONTRACT
  // section 6, "Multiproofs"); earlier formats stage proofs.jsonl.
  std::optional<StagedFile> entries_, proofs_;
  std::optional<merkle::MultiproofWalk> walk_;
  // Neighbouring entries' proofs share most of their nodes, and a node
  // record holds sixteen neighbours.
  absl::flat_hash_map<uint64_t, std::vector<hash::Hash>> groups_;
  merkle::EdgeCache edges_;
  // The entries' proofs, each from the last one (of the tree of the size).
  std::optional<merkle::InclusionProver> prover_;
  std::vector<hash::Hash> path_;
  Batch batch_;
  // The batch being projected (by `projecting_`), and the entries it is
  // decoded into.
  Batch projected_;
  std::vector<receipt::Entry> decoded_;
  std::future<absl::Status> projecting_;
  // Format 8: the redaction entries named by the erased entries read so far
  // and not yet added to the walk.
  std::set<uint64_t> pending_redactions_;
  // Format 9: the retention entry the pack carries, not yet added to the
  // walk.
  std::optional<uint64_t> pending_retention_;
  Staged out_;
};

absl::StatusOr<hash::Hash> Stager::Range(uint64_t begin, uint64_t end) {
  auto h = merkle::SubtreeHash(
      begin, end - begin, p_.size(), [this](int level, uint64_t index) { return Node(level, index); }, &edges_);
  if (!h.ok()) return h.status();
  hash::AppendHex(*h, proofs_->buffer());
  proofs_->buffer()->push_back('\n');
  return h;
}

absl::StatusOr<hash::Hash> Stager::Node(int level, uint64_t index) {
  uint64_t group = index / log::LogView::kNodesPerGroup, at = index % log::LogView::kNodesPerGroup;
  uint64_t key = group << 6 | static_cast<uint64_t>(level);
  auto it = groups_.find(key);
  if (it == groups_.end()) {
    auto g = p_.view.GetNodeGroup(level, group);
    if (!g.ok()) return g.status();
    if (groups_.size() > 4096) groups_.clear();  // bounded memory
    it = groups_.emplace(key, *std::move(g)).first;
  }
  if (at >= it->second.size()) {
    return absl::DataLossError(absl::StrCat("storage: tree node (level ", level, ", index ", index, ") is missing"));
  }
  return it->second[at];
}

absl::Status Stager::Project(const Batch& b) {
  // Decoded into the entries of the batch before, cleared: a receipt's
  // fields are allocated once, not for every entry.
  if (decoded_.size() < b.seqs.size()) decoded_.resize(b.seqs.size());
  size_t begin = 0;
  for (size_t k = 0; k < b.seqs.size(); ++k) {
    std::string_view leaf(b.leaves.data() + begin, b.ends[k] - begin);
    begin = b.ends[k];
    uint64_t seq = b.seqs[k];
    receipt::Entry& entry = decoded_[k];
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
    if (scope_.is_run() && (entry.receipt.team() != scope_.team || entry.receipt.run_id() != scope_.run_id)) {
      return absl::DataLossError(absl::StrCat("entry ", seq, " is not of run ", scope_.run_id));
    }
  }
  return out_.outcomes->Project(absl::MakeConstSpan(decoded_.data(), b.seqs.size()));
}

// Leaves are decoded and projected into outcomes on the task pool, a batch
// at a time (one batch at once, in order), while this thread reads, proves
// and writes the next batch.
absl::Status Stager::HandOver() {
  if (projecting_.valid()) {
    if (auto s = projecting_.get(); !s.ok()) return s;
  }
  if (!batch_.seqs.empty()) {
    projected_ = std::move(batch_);
    projecting_ = tasks::Pool::Shared().Run([this] { return Project(projected_); });
  }
  batch_ = Batch();
  return Charge(options_, dir_, 0);
}

absl::Status Stager::AddRedactions(uint64_t below) {
  auto range = [this](uint64_t b, uint64_t e) { return Range(b, e); };
  while (true) {
    const bool redaction = !pending_redactions_.empty() && *pending_redactions_.begin() < below;
    if (pending_retention_.has_value() && *pending_retention_ < below &&
        (!redaction || *pending_retention_ < *pending_redactions_.begin())) {
      // The retention entry of a run pack across the line (format 9).
      const uint64_t seq = *pending_retention_;
      pending_retention_.reset();
      if (auto s = walk_->Add(seq, hash::LeafHash(p_.run_from->retention_leaf), range); !s.ok()) return s;
      continue;
    }
    if (!redaction) break;
    const uint64_t by = *pending_redactions_.begin();
    pending_redactions_.erase(pending_redactions_.begin());
    auto leaf = p_.view.GetLeaf(by);
    if (!leaf.ok()) return leaf.status();
    out_.redaction_leaves.push_back(*leaf);
    if (auto s = walk_->Add(by, hash::LeafHash(*leaf), [this](uint64_t b, uint64_t e) { return Range(b, e); });
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Stager::Add(uint64_t seq, std::string_view leaf) {
  if (retention::LooksPruned(leaf)) {
    return scope_.is_run() ? RunPruned(p_.view, scope_.team, scope_.run_id, seq) : SeqPruned(p_.view, seq);
  }
  ++out_.entries_count;
  hash::Hash leaf_hash;
  if (receipt::LooksRedacted(leaf)) {
    // An erased entry (CONTRACT section 8): its redacted line, the leaf hash
    // it states, and its redaction entry in redactions.jsonl.
    auto redacted = receipt::ParseRedacted(leaf);
    if (!redacted.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", redacted.status().message()));
    if (!walk_.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat("export: pack format ", p_.header.format,
                                                        " cannot hold the erased entry ", seq, ": ask for format 8"));
    }
    if (redacted->by >= p_.size()) {
      return absl::UnavailableError(
          absl::StrCat("export: entry ", seq, " was erased while the pack was being made; export again"));
    }
    leaf_hash = redacted->leaf_hash;
    pending_redactions_.insert(redacted->by);
  } else {
    leaf_hash = hash::LeafHash(leaf);
  }
  if (walk_.has_value()) {
    if (auto s = AddRedactions(seq); !s.ok()) return s;
    if (pending_redactions_.erase(seq) > 0) out_.redaction_leaves.emplace_back(leaf);  // a redaction in scope
    if (auto s = walk_->Add(seq, leaf_hash, [this](uint64_t b, uint64_t e) { return Range(b, e); }); !s.ok()) {
      return s;
    }
    entries_->buffer()->append(leaf);
    entries_->buffer()->push_back('\n');
    entries_->Spill();
    proofs_->Spill();
    return Batched(seq, leaf);
  }
  if (!prover_) prover_.emplace(p_.size());
  if (auto s = prover_->Prove(
          seq, [this](int level, uint64_t index) { return Node(level, index); }, &path_);
      !s.ok()) {
    return s;
  }
  std::string& entries_out = *entries_->buffer();
  std::string& proofs_out = *proofs_->buffer();
  entries_out.append(leaf);
  entries_out.push_back('\n');
  absl::StrAppend(&proofs_out, "{\"seq\":", seq, ",\"leaf_hash\":\"");
  hash::AppendHex(hash::LeafHash(leaf), &proofs_out);
  proofs_out += "\",\"inclusion\":[";
  for (size_t i = 0; i < path_.size(); ++i) {
    proofs_out += i ? ",\"" : "\"";
    hash::AppendHex(path_[i], &proofs_out);
    proofs_out += '"';
  }
  proofs_out += "]}\n";
  entries_->Spill();
  proofs_->Spill();
  return Batched(seq, leaf);
}

absl::Status Stager::Batched(uint64_t seq, std::string_view leaf) {
  batch_.seqs.push_back(seq);
  batch_.leaves.append(leaf);
  batch_.ends.push_back(batch_.leaves.size());
  if (batch_.seqs.size() >= 4096) {
    if (options_.progress) options_.progress(out_.entries_count, expected_);
    return HandOver();
  }
  return absl::OkStatus();
}

// The entries in scope, ascending: a run's by its chain (consecutive seqs
// read with one scan, the rest one by one), a team window's by one scan of
// the window, a seq range's by one scan.
absl::Status Stager::ReadScope() {
  auto counted = [this](uint64_t seq, std::string_view leaf) { return Add(seq, leaf); };
  if (scope_.is_run()) {
    // No entry: the proof is of absence.
    if (!p_.run_head->path.found.has_value()) return absl::OkStatus();
    return ReadRunEntries(
        p_.view, scope_.team, scope_.run_id, p_.run_head->path.found->head,
        p_.run_from.has_value() ? p_.run_from->from_seq : 0, Path("run-seqs"),
        [this] { return Charge(options_, dir_, 0); }, counted);
  }
  if (scope_.is_team_window()) {
    return p_.view.ScanLeaves(p_.window_lo, p_.window_hi, [&](uint64_t seq, std::string_view leaf) -> absl::Status {
      // Only the team's entries; the rest of the window is skipped. A
      // pruned entry here is another team's: the window starts at or after
      // the cutoff of the team's rule (CheckWindowStart).
      if (retention::LooksPruned(leaf)) return absl::OkStatus();
      auto team = receipt::TeamOf(leaf);
      if (!team.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", team.status().message()));
      if (*team != scope_.team) return absl::OkStatus();
      if (held_.count++ == 0) {
        auto link = receipt::TeamLinkOf(leaf);
        if (!link.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", link.status().message()));
        held_.first_seq = seq;
        held_.first_link = *link;
      }
      return counted(seq, leaf);
    });
  }
  return p_.view.ScanLeaves(scope_.from_seq, scope_.to_seq, counted);
}

absl::Status Stager::FinishWalk() {
  if (auto s = AddRedactions(UINT64_MAX); !s.ok()) return s;
  auto root = walk_->Finish([this](uint64_t b, uint64_t e) { return Range(b, e); });
  if (!root.ok()) return root.status();
  if (*root != p_.cp.root) {
    return absl::DataLossError(absl::StrCat("export: the entries and the multiproof lead to root ", hash::Hex(*root),
                                            ", the checkpoint's is ", hash::Hex(p_.cp.root),
                                            ": the store's leaves or nodes are damaged"));
  }
  proofs_->Spill();
  return absl::OkStatus();
}

absl::Status Stager::Bounds() {
  auto w = TeamWindowBounds(p_.view, scope_.team, *p_.team_head, p_.window_hi, held_, [this](uint64_t seq) {
    return merkle::InclusionProof(
        seq, p_.size(), [this](int level, uint64_t index) { return Node(level, index); }, &edges_);
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
  out_.team_window = *std::move(w);
  return absl::OkStatus();
}

absl::StatusOr<Staged> Stager::Run() {
  out_.format = p_.header.format;
  out_.proofs_name = out_.format >= 6 ? pack::kMultiproof : pack::kProofs;
  entries_.emplace(Path(pack::kEntries));
  proofs_.emplace(Path(out_.proofs_name));
  if (out_.format >= 6) walk_.emplace(p_.size());
  if (p_.run_from.has_value()) pending_retention_ = p_.run_from->retention_seq;
  out_.outcomes = std::make_unique<pack::Outcomes>(pack::Outcomes::kSpillBytes, dir_.path());
  if (scope_.is_run() && !p_.run_from.has_value()) {
    expected_ = p_.run_head->path.found.has_value() ? p_.run_head->path.found->head.count : 0;
  } else if (!scope_.is_team_window()) {
    expected_ = scope_.to_seq - scope_.from_seq;
  }
  if (options_.progress) options_.progress(0, expected_);
  absl::Status read = ReadScope();
  if (read.ok() && walk_.has_value()) read = FinishWalk();
  if (read.ok() && options_.progress) options_.progress(out_.entries_count, expected_);
  // The projecting thread MUST be joined before anything it uses goes.
  absl::Status handed = HandOver();
  absl::Status projected = projecting_.valid() ? projecting_.get() : absl::OkStatus();
  for (const absl::Status& s : {read, handed, projected}) {
    if (!s.ok()) return s;
  }
  for (auto [name, file] :
       {std::pair{std::string(pack::kEntries), &*entries_}, std::pair{out_.proofs_name, &*proofs_}}) {
    auto digest = file->Close();
    if (!digest.ok()) return digest.status();
    out_.digests[name] = *digest;
  }
  out_.entries = entries_->file();
  out_.proofs = proofs_->file();
  if (!out_.redaction_leaves.empty()) {
    if (options_.pack_format < 8) {
      return absl::FailedPreconditionError(
          absl::StrCat("export: pack format ", options_.pack_format, " cannot hold an erased entry: ask for format 8"));
    }
    out_.format = 8;
  }
  if (p_.run_from.has_value()) out_.format = 9;
  if (p_.team_head.has_value()) {
    if (absl::Status s = Bounds(); !s.ok()) return s;
  }
  return std::move(out_);
}

}  // namespace

absl::StatusOr<Staged> Stage(const Scope& scope, const ExportOptions& options, const Prepared& prepared,
                             const pack::ScratchDir& dir) {
  return Stager(scope, options, prepared, dir).Run();
}

}  // namespace ledger::exporter::internal
