#include "export/verify/cc/internal/stream_check.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <fstream>
#include <future>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "export/verify/cc/internal/stream_lines.h"
#include "export/verify/cc/internal/strict_json.h"
#include "export/verify/cc/proof_line.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/merkle/merkle.h"
#include "ledger/format/merkle/multiproof.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/receipt/redaction.h"
#include "util/tasks/channel.h"
#include "util/tasks/tasks.h"

namespace ledger::verify {

void KeepFirst(std::optional<Failure>* first, std::optional<Failure> f) {
  if (f && (!*first || *f < **first)) *first = std::move(f);
}

// A chunk of entries.jsonl decoded on a worker thread: each line's leaf
// hash, the seq at its end and its entry, or why it is not one. The
// objects go round: decoded, checked, projected, then decoded into again,
// their entries cleared, not freed (a receipt's fields would otherwise be
// allocated and freed for every line, on three threads).
struct Decoded {
  uint64_t first_line = 0;
  size_t lines = 0;
  // [0, lines) hold this chunk's lines; those whose `errors` is not OK are
  // unspecified.
  std::vector<receipt::Entry> entries;
  std::vector<absl::Status> errors;
  std::vector<hash::Hash> hashes;
  std::vector<int64_t> tail_seqs;
  // The lines that passed the checks, for the projection: [0, checked).
  size_t checked = 0;
  // The redacted lines: index in the chunk, and the redaction's seq.
  std::vector<std::pair<size_t, uint64_t>> redacted_by;

  void Decode(std::string_view chunk, uint64_t first, size_t count) {
    first_line = first;
    lines = 0;
    checked = 0;
    redacted_by.clear();
    if (entries.size() < count) entries.resize(count);
    errors.resize(count);
    hashes.resize(count);
    tail_seqs.resize(count);
    ForEachLine(chunk, [&](std::string_view leaf) {
      size_t k = lines++;
      hashes[k] = hash::LeafHash(leaf);
      receipt::Entry& entry = entries[k];
      entry.Clear();
      errors[k] = absl::OkStatus();
      // A leaf ReadLeaf accepts ends in its seq as SeqOf reads it: the
      // tail is read again only for the others.
      if (!receipt::LooksRedacted(leaf) && receipt::ReadLeaf(leaf, &entry)) {
        tail_seqs[k] = static_cast<int64_t>(entry.seq);
        return;
      }
      auto tail = receipt::SeqOf(leaf);
      tail_seqs[k] = tail.ok() ? static_cast<int64_t>(*tail) : -1;
      if (receipt::LooksRedacted(leaf)) {
        // An erased entry (CONTRACT section 8): the entry its line states,
        // with the leaf hash it states; its redaction is checked later.
        auto redacted = receipt::ParseRedacted(leaf);
        if (!redacted.ok()) {
          errors[k] = redacted.status();
          return;
        }
        hashes[k] = redacted->leaf_hash;
        entry = std::move(redacted->skeleton);
        redacted_by.emplace_back(k, redacted->by);
        return;
      }
      auto parsed = receipt::ParseLeafByTree(leaf);
      if (parsed.ok()) {
        entry = *std::move(parsed);
      } else {
        errors[k] = parsed.status();
      }
    });
  }
};

// Projection on a thread of its own. It is the one stage that must see the
// entries in order after their checks; the checking thread hands it each
// chunk's checked entries and goes on, and takes the chunks back once
// projected (Projected) to decode into again. A projection failure is kept
// with its line: checking stops when it learns of it, and since nothing
// after that line can come first, the report is the same as if the two had
// run in one thread.
class Projection {
 public:
  explicit Projection(pack::Outcomes* outcomes) : outcomes_(outcomes), thread_([this] { Run(); }) {}
  ~Projection() { Finish(); }
  Projection(const Projection&) = delete;
  Projection& operator=(const Projection&) = delete;

  // Waits while kQueued chunks wait.
  void Add(std::unique_ptr<Decoded> chunk) { queue_.Push(std::move(chunk)); }
  // A chunk projected, if one is: to decode into again.
  std::unique_ptr<Decoded> Projected() {
    std::optional<std::unique_ptr<Decoded>> done = done_.TryPop();
    return done ? *std::move(done) : nullptr;
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  // Waits for every chunk.
  std::optional<Failure> Finish() {
    if (thread_.joinable()) {
      queue_.Close();
      thread_.join();
    }
    return failure_;
  }

 private:
  static constexpr size_t kQueued = 16;

  void Run() {
    while (auto chunk = queue_.Pop()) {
      if (!failure_) Project(**chunk);
      done_.Push(*std::move(chunk));
    }
  }

  // Outcomes fail only when their spilled records cannot be read back: the
  // chunk is named by its first line.
  void Project(const Decoded& chunk) {
    if (chunk.checked == 0) return;
    absl::Status st = outcomes_->Project(absl::MakeConstSpan(chunk.entries.data(), chunk.checked));
    if (st.ok()) return;
    failure_ = Failure{chunk.first_line, Failure::kProject, pack::kEntries,
                       static_cast<int64_t>(chunk.entries.front().seq), std::string(st.message())};
    failed_.store(true, std::memory_order_relaxed);
  }

  pack::Outcomes* const outcomes_;
  tasks::Channel<std::unique_ptr<Decoded>> queue_{kQueued};
  tasks::Channel<std::unique_ptr<Decoded>> done_;  // projected, for the checking thread to reuse
  std::atomic<bool> failed_{false};
  std::optional<Failure> failure_;  // the projection thread's until joined
  std::thread thread_;
};

// The first entry pass: decodes each line (on worker threads), then, in
// order, checks seq order, the tree size and prev links, projects the
// entry into outcomes and records what the proof pass needs.
class StreamCheck::EntryPass : public LinePass {
 public:
  EntryPass(uint64_t tree_size, pack::Outcomes* outcomes, std::ofstream* records)
      : tree_size_(tree_size), records_(records), projection_(outcomes) {}

  void AddChunk(std::string chunk, size_t lines) override {
    uint64_t first = next_line_;
    next_line_ += lines;
    if (stopped()) return;
    std::unique_ptr<Decoded> into = Reusable();
    inflight_.push_back(
        tasks::Pool::Shared().Run([chunk = std::move(chunk), into = std::move(into), first, lines]() mutable {
          into->Decode(chunk, first, lines);
          return std::move(into);
        }));
    while (inflight_.size() > MaxInflight()) TakeOldest();
  }
  // Waits for every chunk and the projection.
  void Finish() override {
    while (!inflight_.empty()) TakeOldest();
    KeepFirst(&failure_, projection_.Finish());
  }
  // A line too long to be an entry.
  void Overlong() override {
    Finish();
    KeepFirst(&failure_, Failure{next_line_, Failure::kDecode, pack::kEntries, -1,
                                 absl::StrCat("a line longer than ", kMaxLineBytes, " bytes")});
  }
  void Unterminated() override { KeepFirst(&failure_, UnterminatedLine(pack::kEntries, next_line_ - 1)); }

  const std::optional<Failure>& failure() const { return failure_; }
  uint64_t entries() const { return entries_; }
  std::optional<uint64_t> last_seq() const { return last_seq_; }
  const hash::Hash& last_hash() const { return last_hash_; }
  const std::string& first_team() const { return first_team_; }
  const std::string& first_run() const { return first_run_; }
  const TeamChainFacts& team_chain() const { return team_chain_; }
  const std::optional<StreamCheck::Logged>& latest_logged() const { return latest_logged_; }
  std::optional<uint64_t> first_version2_seq() const { return first_version2_seq_; }
  const std::vector<StreamCheck::Epoch>& epochs() const { return epochs_; }
  const std::vector<StreamCheck::Rotation>& rotations() const { return rotations_; }
  const std::vector<StreamCheck::Erased>& erased() const { return erased_; }

 private:
  // A chunk to decode into: one the projection is done with, or a new one.
  std::unique_ptr<Decoded> Reusable() {
    while (auto done = projection_.Projected()) free_.push_back(std::move(done));
    if (free_.empty()) return std::make_unique<Decoded>();
    std::unique_ptr<Decoded> d = std::move(free_.back());
    free_.pop_back();
    return d;
  }

  bool stopped() const { return failure_.has_value() || projection_.failed(); }

  // The previous entry of `entry`'s run in the pack, plus one (0: none);
  // `entry` becomes its run's last.
  uint64_t RunBefore(const receipt::Entry& entry) {
    run_key_.assign(entry.receipt.team());
    run_key_ += '\0';
    run_key_ += entry.receipt.run_id();
    auto it = last_of_run_.try_emplace(run_key_, 0).first;
    uint64_t before = it->second;
    it->second = entry.seq + 1;
    return before;
  }

  void TakeOldest() {
    std::unique_ptr<Decoded> d = inflight_.front().get();
    inflight_.pop_front();
    if (stopped()) return;
    for (size_t k = 0; k < d->lines && !failure_; ++k) Check(d->first_line + k, *d, k);
    projection_.Add(std::move(d));
  }

  void Check(uint64_t line, Decoded& d, size_t k) {
    Record rec{d.tail_seqs[k], d.hashes[k], 0, 0, 0, 0, 0};
    auto fail = [&](int stage, int64_t seq, std::string message) {
      failure_ = Failure{line, stage, pack::kEntries, seq, std::move(message)};
    };
    const receipt::Entry* entry = &d.entries[k];
    if (!d.errors[k].ok()) {
      fail(Failure::kDecode, last_seq_ ? static_cast<int64_t>(*last_seq_ + 1) : -1, std::string(d.errors[k].message()));
    } else {
      int64_t seq = static_cast<int64_t>(entry->seq);
      if (last_seq_.has_value() && entry->seq <= *last_seq_) {
        fail(Failure::kOrder, seq, absl::StrCat("seq after ", *last_seq_, " is not ascending"));
      } else if (entry->seq >= tree_size_) {
        fail(Failure::kTreeSize, seq, absl::StrCat("not in the checkpoint's tree of size ", tree_size_));
      } else if (last_seq_.has_value() && entry->seq == *last_seq_ + 1 && entry->prev != last_hash_) {
        fail(Failure::kLinks, seq,
             absl::StrCat("prev expected ", hash::Hex(last_hash_), ", found ", hash::Hex(entry->prev)));
      } else if (entry->receipt.has_leader_epoch()) {
        const auto& le = entry->receipt.leader_epoch();
        if (entry->emitter != receipt::kLedgerEmitter) {
          fail(Failure::kLinks, seq, absl::StrCat("leader_epoch: emitter '", entry->emitter, "': the ledger's only"));
        } else if (le.previous_size() != seq) {
          fail(Failure::kLinks, seq,
               absl::StrCat("leader_epoch: previous_size ", le.previous_size(),
                            " is not its seq: an epoch begins with its leader_epoch entry"));
        } else if (!epochs_.empty() && le.epoch() <= epochs_.back().epoch) {
          fail(Failure::kLinks, seq,
               absl::StrCat("leader_epoch: epoch ", le.epoch(), " after epoch ", epochs_.back().epoch, " at seq ",
                            epochs_.back().seq, ": epochs only rise"));
        } else {
          epochs_.push_back({entry->seq, le.epoch(), le.node(), le.previous_root()});
        }
      } else if (entry->receipt.has_key_rotation()) {
        const auto& k = entry->receipt.key_rotation();
        if (entry->emitter != receipt::kLedgerEmitter) {
          fail(Failure::kLinks, seq, absl::StrCat("key_rotation: emitter '", entry->emitter, "': the ledger's only"));
        } else {
          rotations_.push_back({entry->seq, k.old_key(), k.new_key(), k.note()});
        }
      }
      if (entries_ == 0) {
        first_team_ = entry->receipt.team();
        first_run_ = entry->receipt.run_id();
      }
      rec.seq = entry->seq;
      rec.logged_at_us = entry->logged_at_us;
      rec.run_prev_plus_one = entry->run_prev ? *entry->run_prev + 1 : 0;
      if (!failure_) rec.run_before_plus_one = RunBefore(*entry);
      rec.flags = Record::kParsed | (entry->receipt.team() == first_team_ ? Record::kSameTeam : 0) |
                  (entry->receipt.run_id() == first_run_ ? Record::kSameRun : 0);
    }
    // The failing line's record too: its proof is checked, and a proof
    // failure comes before a link failure on the same line.
    records_->write(reinterpret_cast<const char*>(&rec), sizeof rec);
    if (failure_) return;
    NoteTeamLink(*entry);
    // The ledger's own declarations (step_unknown) are logged while it
    // signs, after the time it signs: only what emitters appended counts.
    if (entry->emitter != receipt::kLedgerEmitter &&
        (!latest_logged_ || entry->logged_at_us > latest_logged_->logged_at_us)) {
      latest_logged_ = StreamCheck::Logged{entry->seq, entry->logged_at_us};
    }
    if (entry->version >= 2 && !first_version2_seq_) first_version2_seq_ = entry->seq;
    if (entry->erased) {
      for (const auto& [at, by] : d.redacted_by) {
        if (at != k) continue;
        receipt::Redacted r{by, d.hashes[k], *entry};
        erased_.push_back({line, entry->seq, by, receipt::EncodeRedacted(r),
                           std::string(receipt::KindName(entry->receipt)), entry->receipt.team(),
                           entry->receipt.run_id()});
      }
    }
    last_seq_ = entry->seq;
    last_hash_ = d.hashes[k];
    d.checked = k + 1;
    ++entries_;
  }

  // `entry`, the pack's next, in the team chain facts.
  void NoteTeamLink(const receipt::Entry& entry) {
    TeamChainFacts& t = team_chain_;
    if (entries_ == 0) {
      t.first_seq = entry.seq;
      t.first_version = entry.version;
      t.first_team_prev = entry.team_prev;
    } else if (entry.version == 1) {
      t.top_v1 = entry.seq;
      t.top_break.reset();  // the walk stops above it
    } else if (entry.team_prev != last_seq_) {
      t.top_break = TeamChainFacts::Break{entry.seq, entry.team_prev, *last_seq_};
    }
    if (entries_ == 0 && entry.version == 1) t.top_v1 = entry.seq;
    t.last_seq = entry.seq;
    t.last_version = entry.version;
    t.last_team_prev = entry.team_prev;
  }

  const uint64_t tree_size_;
  std::ofstream* records_;
  TeamChainFacts team_chain_;
  std::optional<StreamCheck::Logged> latest_logged_;
  std::vector<StreamCheck::Epoch> epochs_;
  std::vector<StreamCheck::Rotation> rotations_;
  std::vector<StreamCheck::Erased> erased_;
  std::optional<uint64_t> first_version2_seq_;
  std::deque<std::future<std::unique_ptr<Decoded>>> inflight_;
  std::vector<std::unique_ptr<Decoded>> free_;  // projected, to decode into again
  uint64_t next_line_ = 0, entries_ = 0;
  std::optional<uint64_t> last_seq_;
  hash::Hash last_hash_{};
  std::string first_team_, first_run_;
  // Each run's last entry so far, plus one, by team "\0" run_id.
  absl::flat_hash_map<std::string, uint64_t> last_of_run_;
  std::string run_key_;
  std::optional<Failure> failure_;
  // Last: its thread stops before the rest goes.
  Projection projection_;
};

// The second pass: each proof line against its entry's record, its
// inclusion proof against the checkpoint, and the scope checks, chunks on
// worker threads.
class StreamCheck::ProofPass : public LinePass {
 public:
  ProofPass(const note::Checkpoint& cp, const Scope& scope, const EntryPass& entries, const std::string& records_path)
      : cp_(cp), scope_(scope, entries.first_team(), entries.first_run()), records_(records_path, std::ios::binary) {}

  void AddChunk(std::string chunk, size_t lines) override {
    uint64_t first = next_line_;
    next_line_ += lines;
    if (failure_ || exhausted_) {
      if (exhausted_) more_proofs_ = true;
      return;
    }
    std::vector<Record> recs(lines);
    records_.read(reinterpret_cast<char*>(recs.data()), static_cast<std::streamsize>(lines * sizeof(Record)));
    size_t got = static_cast<size_t>(records_.gcount()) / sizeof(Record);
    if (got < lines) {
      exhausted_ = true;
      more_proofs_ = true;
      recs.resize(got);
    }
    std::optional<Record> before = previous_;
    if (!recs.empty()) previous_ = recs.back();
    inflight_.push_back(tasks::Pool::Shared().Run([this, chunk = std::move(chunk), first, recs = std::move(recs),
                                                   before] { return Check(chunk, first, recs, before); }));
    while (inflight_.size() > MaxInflight()) TakeOldest();
  }
  // Waits for every chunk; then, if entries remain, the first without a
  // proof fails.
  void Finish() override {
    while (!inflight_.empty()) TakeOldest();
    Record rec;
    if (!failure_ && !exhausted_ && records_.read(reinterpret_cast<char*>(&rec), sizeof rec).gcount() == sizeof rec) {
      failure_ = Failure{next_line_, Failure::kMissingProof, pack::kProofs, rec.tail_seq, "fewer proofs than entries"};
    }
  }
  void Overlong() override {
    Finish();
    KeepFirst(&failure_, Failure{next_line_, Failure::kProof, pack::kProofs, -1,
                                 absl::StrCat("a line longer than ", kMaxLineBytes, " bytes")});
  }
  void Unterminated() override { KeepFirst(&failure_, UnterminatedLine(pack::kProofs, next_line_ - 1)); }

  const std::optional<Failure>& failure() const { return failure_; }
  bool more_proofs() const { return more_proofs_; }

 private:
  void TakeOldest() {
    KeepFirst(&failure_, inflight_.front().get());
    inflight_.pop_front();
  }

  std::optional<Failure> Check(const std::string& chunk, uint64_t first_line, const std::vector<Record>& recs,
                               std::optional<Record> before) const {
    merkle::InclusionVerifier inclusion(cp_.size, cp_.root);
    ProofLineParser parser;
    std::optional<Failure> failure;
    size_t k = 0;
    ForEachLine(chunk, [&](std::string_view line) {
      if (failure || k >= recs.size()) return;
      const Record& rec = recs[k];
      const Record* prev = k > 0 ? &recs[k - 1] : before ? &*before : nullptr;
      uint64_t at = first_line + k++;
      auto fail = [&](int stage, std::string message) {
        bool scope = stage == Failure::kScope;
        failure = Failure{at, stage, scope ? pack::kEntries : pack::kProofs,
                          scope ? static_cast<int64_t>(rec.seq) : rec.tail_seq, std::move(message)};
      };
      int64_t proof_seq = -1;
      std::string_view proof_leaf_hash;
      if (rec.tail_seq < 0 || !parser.Parse(line, &proof_seq, &proof_leaf_hash) || proof_seq != rec.tail_seq) {
        if (auto twice = DuplicateKey(line)) {
          return fail(Failure::kProof, absl::StrCat("line ", at + 1, ": key ", *twice, " twice"));
        }
        return fail(Failure::kProof, "not the proof line of this entry");
      }
      hash::Hash proof_leaf;
      if (!hash::ParseHexTo(proof_leaf_hash, &proof_leaf) || proof_leaf != rec.leaf_hash) {
        return fail(Failure::kProof, absl::StrCat("leaf_hash expected ", hash::Hex(rec.leaf_hash), ", found ",
                                                  std::string(proof_leaf_hash)));
      }
      if (static_cast<uint64_t>(rec.tail_seq) < cp_.size) {
        if (auto st = inclusion.Verify(static_cast<uint64_t>(rec.tail_seq), rec.leaf_hash, parser.path()); !st.ok()) {
          return fail(Failure::kProof, std::string(st.message()));
        }
      }
      if (!(rec.flags & Record::kParsed)) return;
      std::optional<uint64_t> last_seq;
      if (prev != nullptr) last_seq = prev->seq;
      std::string scope_failure = scope_.Why(rec, last_seq);
      if (!scope_failure.empty()) fail(Failure::kScope, std::move(scope_failure));
    });
    return failure;
  }

  const note::Checkpoint cp_;
  const ScopeCheck scope_;
  std::ifstream records_;
  std::deque<std::future<std::optional<Failure>>> inflight_;
  std::optional<Record> previous_;
  uint64_t next_line_ = 0;
  bool exhausted_ = false, more_proofs_ = false;
  std::optional<Failure> failure_;
};

// The second pass of a pack of format 6: multiproof.txt's hashes, as they
// stream, with the entries' records in order, walk the multiproof (CONTRACT
// section 6, "Multiproofs") to the checkpoint's root; the scope checks are
// made on the way. An entry is walked only once kAhead hashes wait (one
// entry asks at most one a level of the tree), or the file has ended.
class StreamCheck::MultiproofPass : public LinePass {
 public:
  MultiproofPass(const note::Checkpoint& cp, const Scope& scope, const EntryPass& entries,
                 const std::string& records_path, const std::vector<StreamCheck::Redaction>& redactions)
      : cp_(cp),
        scope_(scope, entries.first_team(), entries.first_run()),
        records_(records_path, std::ios::binary),
        walk_(cp.size),
        redactions_(redactions.begin(), redactions.end()) {}

  void AddChunk(std::string chunk, size_t lines) override {
    uint64_t first = next_line_;
    next_line_ += lines;
    if (failure_) return;
    uint64_t at = first;
    ForEachLine(chunk, [&](std::string_view line) {
      if (failure_) return;
      hash::Hash h;
      if (line.size() != 64 || !IsLowerHex(line) || !hash::ParseHexTo(line, &h)) {
        failure_ = Failure{walked_, Failure::kProof, pack::kMultiproof, -1,
                           absl::StrCat("line ", at + 1, ": want 64 lower-case hex digits")};
        return;
      }
      ++at;
      hashes_.push_back(h);
    });
    Walk(false);
  }
  void Finish() override {
    if (failure_) return;
    Walk(true);
    if (failure_ || done_) return;
    // Entries missing at the end of a range are named as such, before the
    // walk they cut short.
    if (std::string why = scope_.WhyEnded(last_seq_); !why.empty()) {
      failure_ = Failure{walked_, Failure::kScope, pack::kEntries, -1, std::move(why)};
      return;
    }
    if (!WalkRedactions(UINT64_MAX)) return;
    auto root = walk_.Finish([this](uint64_t, uint64_t) { return Next(); });
    done_ = true;
    if (!root.ok()) {
      failure_ = Failure{walked_, Failure::kProof, pack::kMultiproof, -1, std::string(root.status().message())};
    } else if (*root != cp_.root) {  // CONTRACT section 6: the root before hashes left over
      failure_ = Failure{walked_, Failure::kProof, pack::kMultiproof, -1,
                         absl::StrCat("the entries and the multiproof lead to root ", hash::Hex(*root),
                                      ", the checkpoint's is ", hash::Hex(cp_.root))};
    } else if (used_ != next_line_) {
      failure_ =
          Failure{walked_, Failure::kProof, pack::kMultiproof, -1,
                  absl::StrCat("the multiproof holds ", next_line_, " hashes; the entries' inclusion uses ", used_)};
    }
  }
  void Overlong() override {
    KeepFirst(&failure_, Failure{walked_, Failure::kProof, pack::kMultiproof, -1,
                                 absl::StrCat("line ", next_line_ + 1, ": want 64 lower-case hex digits")});
  }
  void Unterminated() override {
    KeepFirst(&failure_, Failure{walked_, Failure::kDecode, pack::kMultiproof, -1,
                                 absl::StrCat("line ", next_line_, ": no newline at its end")});
  }

  const std::optional<Failure>& failure() const { return failure_; }

 private:
  static constexpr size_t kAhead = 64;
  static constexpr size_t kRecordsRead = 4096;

  static bool IsLowerHex(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
  }

  // The multiproof's next hash.
  absl::StatusOr<hash::Hash> Next() {
    if (hashes_.empty()) {
      return absl::OutOfRangeError(
          absl::StrCat("the multiproof ends after ", used_, " hashes; the entries' inclusion needs more"));
    }
    hash::Hash h = hashes_.front();
    hashes_.pop_front();
    ++used_;
    return h;
  }

  // The next entry's record, or nullopt after the last.
  std::optional<Record> NextRecord() {
    if (at_ == recs_.size()) {
      recs_.resize(kRecordsRead);
      records_.read(reinterpret_cast<char*>(recs_.data()), static_cast<std::streamsize>(recs_.size() * sizeof(Record)));
      recs_.resize(static_cast<size_t>(records_.gcount()) / sizeof(Record));
      at_ = 0;
      if (recs_.empty()) return std::nullopt;
    }
    return recs_[at_++];
  }

  // Walks the entries while enough hashes wait (all of them at the end).
  void Walk(bool end) {
    while (!failure_ && !done_ && (end || hashes_.size() >= kAhead)) {
      std::optional<Record> rec = NextRecord();
      if (!rec) return;
      uint64_t line = walked_++;
      // A line the entry pass could not read has failed there, first.
      if (!(rec->flags & Record::kParsed) || rec->seq >= cp_.size) {
        done_ = true;
        return;
      }
      // An entry out of scope is named before the walk that it breaks.
      std::string why = scope_.Why(*rec, last_seq_);
      if (!why.empty()) {
        failure_ = Failure{line, Failure::kScope, pack::kEntries, static_cast<int64_t>(rec->seq), std::move(why)};
        return;
      }
      if (!WalkRedactions(rec->seq)) return;
      if (!redactions_.empty() && redactions_.front().seq == rec->seq) {
        // A redaction in the pack's scope: walked once, as the entry.
        if (redactions_.front().leaf_hash != rec->leaf_hash) {
          failure_ = Failure{line, Failure::kProof, redactions_.front().file, -1,
                             absl::StrCat("line ", redactions_.front().line, ": seq ", rec->seq,
                                          ": not the leaf of entries.jsonl line ", line + 1, ", which holds that seq")};
          return;
        }
        redactions_.pop_front();
      }
      auto added = walk_.Add(rec->seq, rec->leaf_hash, [this](uint64_t, uint64_t) { return Next(); });
      if (!added.ok()) {
        failure_ = Failure{line, Failure::kProof, pack::kMultiproof, -1, std::string(added.message())};
        return;
      }
      last_seq_ = rec->seq;
    }
  }

  // Format 8: walks the redactions below `below`; false on a failure.
  bool WalkRedactions(uint64_t below) {
    while (!redactions_.empty() && redactions_.front().seq < below) {
      const StreamCheck::Redaction r = redactions_.front();
      redactions_.pop_front();
      if (r.seq >= cp_.size) {
        failure_ = Failure{
            walked_, Failure::kProof, r.file, -1,
            absl::StrCat("line ", r.line, ": seq ", r.seq, " is not in the checkpoint's tree of size ", cp_.size)};
        return false;
      }
      auto added = walk_.Add(r.seq, r.leaf_hash, [this](uint64_t, uint64_t) { return Next(); });
      if (!added.ok()) {
        failure_ = Failure{walked_, Failure::kProof, pack::kMultiproof, -1, std::string(added.message())};
        return false;
      }
    }
    return true;
  }

  const note::Checkpoint cp_;
  const ScopeCheck scope_;
  std::ifstream records_;
  std::vector<Record> recs_;
  size_t at_ = 0;
  merkle::MultiproofWalk walk_;
  std::deque<hash::Hash> hashes_;
  std::deque<StreamCheck::Redaction> redactions_;  // not walked yet, ascending
  uint64_t next_line_ = 0, used_ = 0, walked_ = 0;
  std::optional<uint64_t> last_seq_;
  bool done_ = false;
  std::optional<Failure> failure_;
};

StreamCheck::StreamCheck(const std::string& scratch_dir, pack::Outcomes* outcomes)
    : records_path_(scratch_dir + "/records"), outcomes_(outcomes) {}

StreamCheck::~StreamCheck() = default;

absl::Status StreamCheck::Entries(uint64_t tree_size, NextPiece next) {
  std::ofstream records(records_path_, std::ios::binary | std::ios::trunc);
  entry_pass_ = std::make_unique<EntryPass>(tree_size, outcomes_, &records);
  if (auto s = Feed(*entry_pass_, next); !s.ok()) return s;
  records.close();
  if (!records) return absl::UnavailableError("verify: cannot write a temporary file");
  return absl::OkStatus();
}

bool StreamCheck::entries_checked() const { return entry_pass_ != nullptr; }

absl::Status StreamCheck::Proofs(const note::Checkpoint& cp, const Scope& scope, NextPiece next) {
  proof_pass_ = std::make_unique<ProofPass>(cp, scope, *entry_pass_, records_path_);
  return Feed(*proof_pass_, next);
}

absl::Status StreamCheck::Multiproof(const note::Checkpoint& cp, const Scope& scope, NextPiece next) {
  multiproof_pass_ = std::make_unique<MultiproofPass>(cp, scope, *entry_pass_, records_path_, redactions_);
  return Feed(*multiproof_pass_, next);
}

bool StreamCheck::proofs_checked() const { return proof_pass_ != nullptr || multiproof_pass_ != nullptr; }

std::optional<Failure> StreamCheck::first_failure() const {
  std::optional<Failure> first = entry_pass_->failure();
  if (proof_pass_) KeepFirst(&first, proof_pass_->failure());
  if (multiproof_pass_) KeepFirst(&first, multiproof_pass_->failure());
  return first;
}

bool StreamCheck::more_proofs_than_entries() const { return proof_pass_ && proof_pass_->more_proofs(); }
uint64_t StreamCheck::entries() const { return entry_pass_->entries(); }
std::optional<uint64_t> StreamCheck::last_seq() const { return entry_pass_->last_seq(); }
hash::Hash StreamCheck::last_leaf_hash() const { return entry_pass_->last_hash(); }
const TeamChainFacts& StreamCheck::team_chain() const { return entry_pass_->team_chain(); }
std::optional<StreamCheck::Logged> StreamCheck::latest_logged() const { return entry_pass_->latest_logged(); }
const std::vector<StreamCheck::Epoch>& StreamCheck::epochs() const { return entry_pass_->epochs(); }
const std::vector<StreamCheck::Rotation>& StreamCheck::rotations() const { return entry_pass_->rotations(); }
std::optional<uint64_t> StreamCheck::first_version2_seq() const { return entry_pass_->first_version2_seq(); }
const std::vector<StreamCheck::Erased>& StreamCheck::erased() const { return entry_pass_->erased(); }
void StreamCheck::SetRedactions(std::vector<Redaction> redactions) { redactions_ = std::move(redactions); }

}  // namespace ledger::verify
