#include "ledger/storage/log/audit.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/note/key_set.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/receipt.h"
#include "ledger/format/receipt/redaction.h"
#include "ledger/format/replay/replay.h"
#include "ledger/format/retention/pruned.h"
#include "ledger/format/runmap/runmap.h"
#include "ledger/storage/log/retention_pass.h"
#include "ledger/storage/store/store.h"
#include "util/text/progress.h"

namespace ledger::log {
namespace {

using replay::Finding;

// Stops a scan once a finding is recorded.
absl::Status Stop() { return absl::CancelledError("audit: finding"); }

bool SameHead(const runmap::Head& replayed, const store::RunHead& row) {
  return replayed.count == row.count && replayed.last_seq == row.last_seq &&
         replayed.last_leaf_hash == row.last_leaf_hash;
}

std::string RunName(std::string_view team, std::string_view run_id) {
  return absl::StrCat(std::string(team), "/", std::string(run_id));
}

class Auditor {
 public:
  Auditor(const store::Store& store, const note::Verifier& key, text::ProgressMeter* progress)
      : store_(store), key_(key), progress_(progress), keys_(*note::KeySet::Of(key.VerifierKey())) {}

  absl::StatusOr<AuditReport> Run(std::string* replay_state) {
    auto state = store_.ReadState();
    if (!state.ok()) return state.status();
    state_ = *state;
    if (absl::Status s = SeedKeys(); !s.ok()) return s;
    if (absl::Status s = SeedPruning(); !s.ok()) return s;
    absl::Status s = store_.ScanCheckpoints([&](uint64_t size, std::string_view note) {
      checkpoints_.emplace(size, std::string(note));
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    s = CheckCheckpointAt(0);
    if (progress_ != nullptr) progress_->SetTotal(state_.size);
    if (s.ok()) {
      s = store_.ScanLeaves(0, state_.size, [&](uint64_t seq, std::string_view leaf) {
        if (progress_ != nullptr) progress_->Add(1);
        return Entry(seq, leaf);
      });
    }
    if (absl::IsDataLoss(s) && !finding_) {
      // ScanLeaves: a seq below the tree size has no entry.
      Find("entry", -1, "entry", "an entry for every seq below the tree size", std::string(s.message()))
          .IgnoreError();  // the finding is what counts
    }
    if (s.ok()) s = After();
    if (s.ok() && !must_reach_.empty() &&
        std::none_of(keys_.ranges().begin(), keys_.ranges().end(),
                     [&](const note::KeySet::Range& r) { return r.vkey == must_reach_; })) {
      s = Find("key_rotation", -1, "the key given", absl::StrCat("a key the log's rotations lead to: ", must_reach_),
               keys_.ranges().back().vkey);
    }
    if (!s.ok() && !finding_) return s;
    AuditReport r;
    r.entries = entries_;
    r.pruned = pruned_;
    r.nodes = nodes_;
    r.checkpoints = verified_;
    r.runs = replay_.runs();
    r.map_roots = map_roots_;
    if (finding_) {
      r.ok = false;
      r.check = finding_->check;
      r.seq = finding_->seq;
      r.what = finding_->what;
      r.expected = finding_->expected;
      r.found = finding_->found;
    } else if (replay_state != nullptr) {
      *replay_state = replay_.Encode();
    }
    return r;
  }

 private:
  absl::Status Find(replay::Finding finding) {
    finding_ = std::move(finding);
    return Stop();
  }
  absl::Status Find(std::string check, int64_t seq, std::string what, std::string expected, std::string found) {
    finding_ = Finding{std::move(check), seq, std::move(what), std::move(expected), std::move(found)};
    return Stop();
  }

  absl::Status Entry(uint64_t seq, std::string_view leaf) {
    int64_t at = static_cast<int64_t>(seq);
    // The entry, its chains, the tree and both maps (ledger/format/replay);
    // the nodes the leaf completes are compared with the stored ones after
    // its index row.
    receipt::Entry entry;
    completed_.clear();
    auto completes = [&](int level, uint64_t index, const hash::Hash& h) { completed_.push_back({level, index, h}); };
    const bool below = seq < pruning_.below;
    std::optional<replay::Finding> finding =
        below ? replay_.AppendBelowPruning(leaf, &entry, completes) : replay_.Append(leaf, &entry, completes);
    if (finding.has_value()) return Find(*std::move(finding));
    if (below && retention::LooksPruned(leaf)) {
      // CONTRACT section 9: only the leaf hash is kept, as the level-0 node.
      for (const auto& [level, index, h] : completed_) {
        if (absl::Status s = Node(at, level, index, h); !s.ok()) return s;
      }
      ++pruned_;
      return AfterEntry(seq);
    }
    if (below) {
      const receipt::RetentionRule* rule = CoveringRule(finished_rules_, entry.receipt.team());
      if (rule != nullptr && seq < rule->below_seq) {
        return Find("retention", at, "entry body",
                    absl::StrCat("none: pruned by retention pass ", pruning_.finished_pass, " (entries of team ",
                                 entry.receipt.team(), " below seq ", rule->below_seq, ")"),
                    "its body, still stored");
      }
    }
    const receipt::Receipt& r = entry.receipt;
    const hash::Hash leaf_hash = replay_.prev();
    if (r.has_key_rotation()) {
      // CONTRACT section 5d: the ledger's, numbered in order, its statement
      // signed by the key of its seq and the new key.
      const std::string id = absl::StrCat(std::string(receipt::kKeyRotationIdPrefix), ++rotations_);
      absl::Status followed =
          entry.emitter != receipt::kLedgerEmitter || r.receipt_id() != id
              ? absl::InvalidArgumentError(absl::StrCat("want the ledger's ", id))
              : keys_.Follow(seq, r.key_rotation().old_key(), r.key_rotation().new_key(), r.key_rotation().note());
      if (!followed.ok()) {
        return Find("key_rotation", at, "key rotation", "a statement of the key of its seq and the new key",
                    std::string(followed.message()));
      }
    }
    if (r.has_redaction()) {
      // CONTRACT section 8: the ledger's, and the entry it names holds its
      // redacted line, not its body (an erasure stopped midway is finished
      // by the next start, never clean before).
      const uint64_t erased = static_cast<uint64_t>(r.redaction().entry_seq());
      if (entry.emitter != receipt::kLedgerEmitter || erased >= seq) {
        return Find("redaction", at, "redaction entry", "the ledger's, naming an earlier seq",
                    absl::StrCat("emitter ", entry.emitter, ", seq ", erased));
      }
      auto body = store_.GetLeaf(erased);
      if (!body.ok()) return body.status();
      const std::string line = receipt::RedactedLine(seq, r);
      if (*body != line) {
        return Find("redaction", at, absl::StrCat("entry ", erased, " erased by this redaction"), "its redacted line",
                    receipt::LooksRedacted(*body) ? "another redacted line" : "its body (the erasure did not finish)");
      }
    }
    if (!v1_done_ && !below) {
      absl::Status set =
          map_v1_.Set(runmap::RunKeyOf(r.team(), r.run_id(), runmap::KeyVersion::kV1), replay_.last_run_head());
      if (!set.ok()) {
        return Find("run_map", at, absl::StrCat("run-head map entry of ", RunName(r.team(), r.run_id())),
                    "a valid head", std::string(set.message()));
      }
    }

    // The row of format 2, or in a store not yet migrated, of format 1.
    store::IdSpace space =
        entry.emitter == receipt::kLedgerEmitter ? store::IdSpace::kLedger : store::IdSpace::kEmitter;
    auto ref = store_.FindReceipt({space, r.team(), r.receipt_id()});
    if (ref.ok() && !ref->has_value()) ref = store_.FindReceipt({store::IdSpace::kLegacy, {}, r.receipt_id()});
    if (!ref.ok()) return ref.status();
    std::string row = absl::StrCat("receipt index row of '", r.receipt_id(), "'");
    if (!ref->has_value()) return Find("receipt_index", at, row, absl::StrCat("seq ", seq), "no row");
    if ((*ref)->seq != seq) {
      return Find("receipt_index", at, row, absl::StrCat("seq ", seq), absl::StrCat("seq ", (*ref)->seq));
    }
    if ((*ref)->leaf_hash != leaf_hash) {
      return Find("receipt_index", at, absl::StrCat(row, ": leaf hash"), hash::Hex(leaf_hash),
                  hash::Hex((*ref)->leaf_hash));
    }
    // An erased entry's digest is the index row's alone to keep (its
    // receipt is gone); its leaf hash was compared above.
    hash::Hash digest = hash::Sha256(receipt::Encode(r));
    if (!receipt::LooksRedacted(leaf) && (*ref)->digest != digest) {
      return Find("receipt_index", at, absl::StrCat(row, ": receipt digest"), hash::Hex(digest),
                  hash::Hex((*ref)->digest));
    }

    for (const auto& [level, index, h] : completed_) {
      if (absl::Status s = Node(at, level, index, h); !s.ok()) return s;
    }
    ++entries_;
    return AfterEntry(seq);
  }

  // At the pruning floor the replay takes up the state the pass kept
  // (store.h's "retention_replay"): its tree and chain head must be the
  // ones replayed from the leaf hashes, and the checkpoint of that size
  // checks its map roots.
  absl::Status AfterEntry(uint64_t seq) {
    if (seq + 1 == pruning_.below) {
      const int64_t at = static_cast<int64_t>(seq);
      if (kept_.size() != pruning_.below || kept_.root() != replay_.root() || kept_.prev() != replay_.prev()) {
        return Find("retention", at, absl::StrCat("replay state kept at the pruning floor, size ", pruning_.below),
                    absl::StrCat("size ", pruning_.below, ", root ", hash::Hex(replay_.root())),
                    absl::StrCat("size ", kept_.size(), ", root ", hash::Hex(kept_.root())));
      }
      replay_ = kept_;
      v1_done_ = true;  // the notes of a pruned store's maps are of version 4
      map_v1_ = runmap::RunMap();
    }
    return CheckCheckpointAt(seq + 1);
  }

  // A pruned store (CONTRACT section 9): its floor, the state kept there,
  // and the lines of the last pass that finished.
  absl::Status SeedPruning() {
    pruning_ = store_.ReadPruning();
    if (pruning_.below == 0) return absl::OkStatus();
    auto kept = store_.PrunedReplay();
    if (!kept.ok()) return kept.status();
    auto decoded = replay::Replay::Decode(*kept);
    if (!decoded.ok()) return decoded.status();
    kept_ = *std::move(decoded);
    if (pruning_.finished_pass > 0) {
      auto pass = ReadRetentionPass(store_, pruning_.finished_pass);
      if (!pass.ok()) return pass.status();
      finished_rules_ = pass->rules;
    }
    return absl::OkStatus();
  }

  absl::Status Node(int64_t at, int level, uint64_t index, const hash::Hash& h) {
    uint64_t group = index / store::kNodesPerGroup;
    auto& cached = groups_[level];
    if (!cached.has_value() || cached->first != group) {
      auto g = store_.GetNodeGroup(level, group);
      if (absl::IsNotFound(g.status())) {
        g = std::vector<hash::Hash>();
      } else if (!g.ok()) {
        return g.status();
      }
      cached = std::make_pair(group, *std::move(g));
    }
    std::string what = absl::StrCat("node (level ", level, ", index ", index, ")");
    size_t i = index % store::kNodesPerGroup;
    if (i >= cached->second.size()) return Find("node", at, what, hash::Hex(h), "missing");
    if (cached->second[i] != h) return Find("node", at, what, hash::Hex(h), hash::Hex(cached->second[i]));
    ++nodes_;
    return absl::OkStatus();
  }

  // The stored checkpoint of `size`, if any, against the tree of that size.
  absl::Status CheckCheckpointAt(uint64_t size) {
    auto it = checkpoints_.find(size);
    if (it == checkpoints_.end()) return absl::OkStatus();
    int64_t at = static_cast<int64_t>(size) - 1;
    std::string what = absl::StrCat("checkpoint of size ", size);
    auto text = keys_.Open(it->second, size);
    if (!text.ok()) {
      return Find("checkpoint", at, absl::StrCat(what, ": signature"),
                  absl::StrCat("a valid signature by ", key_.name()), std::string(text.status().message()));
    }
    auto cp = note::ParseCheckpoint(*text);
    if (!cp.ok()) {
      return Find("checkpoint", at, what, "a checkpoint body", std::string(cp.status().message()));
    }
    if (cp->origin != key_.name() || cp->size != size) {
      return Find("checkpoint", at, absl::StrCat(what, ": origin and size"), absl::StrCat(key_.name(), " ", size),
                  absl::StrCat(cp->origin, " ", cp->size));
    }
    hash::Hash root = replay_.root();
    if (cp->root != root)
      return Find("checkpoint", at, absl::StrCat(what, ": root"), hash::Hex(root), hash::Hex(cp->root));
    ++verified_;
    return CheckTimeAt(size, at, *cp);
  }

  // The checkpoint's time note, if it has one: signed by the key, naming
  // the checkpoint, and never earlier than the time of the one before.
  absl::Status CheckTimeAt(uint64_t size, int64_t at, const note::Checkpoint& cp) {
    auto note_text = store_.GetCheckpointTime(size);
    if (absl::IsNotFound(note_text.status())) return absl::OkStatus();
    if (!note_text.ok()) return note_text.status();
    std::string what = absl::StrCat("time note of the checkpoint of size ", size);
    auto text = keys_.Open(*note_text, size);
    if (!text.ok()) {
      return Find("checkpoint_time", at, absl::StrCat(what, ": signature"),
                  absl::StrCat("a valid signature by ", key_.name()), std::string(text.status().message()));
    }
    auto t = note::ParseCheckpointTime(*text);
    if (!t.ok()) return Find("checkpoint_time", at, what, "a checkpoint-time body", std::string(t.status().message()));
    if (t->checkpoint.origin != cp.origin || t->checkpoint.size != cp.size || t->checkpoint.root != cp.root) {
      return Find("checkpoint_time", at, absl::StrCat(what, ": checkpoint"),
                  absl::StrCat(cp.origin, " ", cp.size, " ", hash::Hex(cp.root)),
                  absl::StrCat(t->checkpoint.origin, " ", t->checkpoint.size, " ", hash::Hex(t->checkpoint.root)));
    }
    if (t->time_us < last_time_us_) {
      return Find("checkpoint_time", at, absl::StrCat(what, ": time"),
                  absl::StrCat("at least ", last_time_us_, " (the time of an earlier checkpoint)"),
                  absl::StrCat(t->time_us));
    }
    if (size < pruning_.below) {
      // Below the pruning floor the maps are not replayed: the runs and
      // teams of pruned entries are gone. The tree's root was checked.
      last_time_us_ = t->time_us;
      ++times_;
      return absl::OkStatus();
    }
    if (t->version() == 4) {
      // From here on every note keys runs by team: the map under v1 keys is
      // not needed again.
      v1_done_ = true;
      map_v1_ = runmap::RunMap();
    } else if (v1_done_ && t->run_map_root.has_value()) {
      return Find("checkpoint_time", at, absl::StrCat(what, ": version"),
                  "4 (a ledger that keys runs by team does so with every later checkpoint)",
                  absl::StrCat(t->version()));
    }
    // The team map's root, and under run keys v2 the run map's.
    if (std::optional<replay::Finding> f = replay_.Check(*t); f.has_value()) return Find(*std::move(f));
    if (t->run_map_root.has_value()) {
      hash::Hash root = t->version() == 4 ? replay_.runs_root() : map_v1_.Root();
      if (root != *t->run_map_root) {
        return Find("run_map", at, absl::StrCat(what, ": run-head map root (signed)"), hash::Hex(root),
                    hash::Hex(*t->run_map_root));
      }
      ++map_roots_;
    }
    last_time_us_ = t->time_us;
    ++times_;
    return absl::OkStatus();
  }

  // The team rows, each its team's head (none at all in a store a version
  // without them wrote and no ledger of this version opened yet).
  absl::Status CheckTeamRows() {
    uint64_t rows = 0;
    absl::Status s = store_.ScanTeamHeads([&](std::string_view team, const store::RunHead& row) {
      ++rows;
      std::optional<runmap::Head> head = replay_.TeamHead(team);
      auto text = [](const auto& h) {
        return absl::StrCat(h.last_seq, " (entry ", h.count, " of the team, leaf hash ", hash::Hex(h.last_leaf_hash),
                            ")");
      };
      if (!head.has_value() || !SameHead(*head, row)) {
        return Find("team_head", !head.has_value() ? -1 : static_cast<int64_t>(head->last_seq),
                    absl::StrCat("team head of ", std::string(team)), !head.has_value() ? "no team" : text(*head),
                    text(row));
      }
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    if (rows != 0 && rows != replay_.teams()) {
      return Find("team_head", -1, "team heads", absl::StrCat(replay_.teams()), absl::StrCat(rows));
    }
    return absl::OkStatus();
  }

  // What is only known once every entry was read.
  absl::Status After() {
    if (auto s = Rest(); !s.ok()) return s;
    // Every time note belongs to a checkpoint that was checked.
    uint64_t times = 0;
    absl::Status orphan = store_.ScanCheckpointTimes([&](uint64_t size, std::string_view) {
      ++times;
      if (!checkpoints_.contains(size)) {
        return Find("checkpoint_time", -1, absl::StrCat("time note of size ", size), "a checkpoint of that size",
                    "none");
      }
      return absl::OkStatus();
    });
    if (!orphan.ok()) return orphan;
    if (times != times_) {
      return Find("checkpoint_time", -1, "time notes", absl::StrCat(times_, " (of checkpoints within the tree)"),
                  absl::StrCat(times));
    }
    return absl::OkStatus();
  }

  absl::Status Rest() {
    auto last = store_.LastLeafSeq();
    if (!last.ok()) return last.status();
    uint64_t stored = last->has_value() ? **last + 1 : 0;
    if (stored != state_.size) {
      return Find("state", -1, "tree size", absl::StrCat(stored, ", the number of entries stored"),
                  absl::StrCat(state_.size));
    }
    if (state_.head != replay_.prev()) {
      return Find("state", -1, "chain head", hash::Hex(replay_.prev()), hash::Hex(state_.head));
    }
    for (const auto& [size, note] : checkpoints_) {
      if (size > state_.size) {
        return Find("checkpoint", -1, absl::StrCat("checkpoint of size ", size),
                    absl::StrCat("a size of at most the tree size ", state_.size), absl::StrCat(size));
      }
    }
    uint64_t rows = 0;
    absl::Status s = store_.ScanReceipts([&](const store::ReceiptKey& key, const store::ReceiptRef& ref) {
      ++rows;
      if (ref.seq >= state_.size) {
        return Find("receipt_index", static_cast<int64_t>(ref.seq),
                    absl::StrCat("receipt index row of '", std::string(key.receipt_id), "'"),
                    absl::StrCat("a seq below the tree size ", state_.size), absl::StrCat("seq ", ref.seq));
      }
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    if (rows != entries_) {
      return Find("receipt_index", -1, "receipt index rows", absl::StrCat(entries_), absl::StrCat(rows));
    }
    uint64_t heads = 0;
    s = store_.ScanRunHeads([&](std::string_view team, std::string_view run_id, const store::RunHead& row) {
      ++heads;
      std::string run = RunName(team, run_id);
      std::optional<runmap::Head> head = replay_.RunHead(team, run_id);
      auto text = [](const auto& h) {
        if (h.count == 0) return absl::StrCat(h.last_seq, " (a row of format 1: count and leaf hash not kept)");
        return absl::StrCat(h.last_seq, " (entry ", h.count, " of the run, leaf hash ", hash::Hex(h.last_leaf_hash),
                            ")");
      };
      std::string want = !head.has_value() ? "no run" : text(*head);
      if (!head.has_value() || head->last_seq != row.last_seq || (row.count != 0 && !SameHead(*head, row))) {
        return Find("run_head", !head.has_value() ? -1 : static_cast<int64_t>(head->last_seq),
                    absl::StrCat("run head of ", run), want, text(row));
      }
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    if (heads != replay_.runs()) {
      return Find("run_head", -1, "run heads", absl::StrCat(replay_.runs()), absl::StrCat(heads));
    }
    if (auto s = CheckRunIndex(); !s.ok()) return s;
    return CheckTeamRows();
  }

  // The run index: a run's rows are the last entries of its chain, in order,
  // up to its head (a store written before the index holds rows only for
  // the entries appended since; a run with none is read by its chain).
  absl::Status CheckRunIndex() {
    std::string team, run_id;
    std::optional<uint64_t> last;  // the run's row read last
    auto ends_at_head = [&]() -> absl::Status {
      if (!last.has_value()) return absl::OkStatus();
      std::optional<runmap::Head> head = replay_.RunHead(team, run_id);
      if (head.has_value() && head->last_seq == *last) return absl::OkStatus();
      return Find("run_index", static_cast<int64_t>(*last), absl::StrCat("run index of ", RunName(team, run_id)),
                  head.has_value() ? absl::StrCat("rows up to the run's head, seq ", head->last_seq) : "no run",
                  absl::StrCat("rows up to seq ", *last));
    };
    absl::Status s = store_.ScanRunIndex([&](std::string_view row_team, std::string_view row_run, uint64_t seq) {
      std::string row = absl::StrCat("run index row of ", RunName(row_team, row_run), " at seq ", seq);
      if (row_team != team || row_run != run_id) {
        if (auto s = ends_at_head(); !s.ok()) return s;
        team = row_team;
        run_id = row_run;
        last.reset();
      }
      if (seq >= state_.size) {
        return Find("run_index", static_cast<int64_t>(seq), row,
                    absl::StrCat("a seq below the tree size ", state_.size), absl::StrCat("seq ", seq));
      }
      auto leaf = store_.GetLeaf(seq);
      if (!leaf.ok()) return leaf.status();
      auto entry = receipt::ParseStored(*leaf);
      if (!entry.ok()) return entry.status();  // the entries were read: not reached
      if (entry->receipt.team() != team || entry->receipt.run_id() != run_id) {
        return Find("run_index", static_cast<int64_t>(seq), row, absl::StrCat("an entry of ", RunName(team, run_id)),
                    absl::StrCat("an entry of ", RunName(entry->receipt.team(), entry->receipt.run_id())));
      }
      if (last.has_value() && entry->run_prev != last) {
        auto text = [](std::optional<uint64_t> s) { return s ? absl::StrCat("seq ", *s) : std::string("none"); };
        return Find("run_index", static_cast<int64_t>(seq), absl::StrCat(row, ": the run's entry before it"),
                    absl::StrCat(text(entry->run_prev), " (its run_prev)"),
                    absl::StrCat(text(last), " (the row before it)"));
      }
      last = seq;
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    return ends_at_head();
  }

  // The keys start from the first key of the log's rotations when the key
  // given is a later one: each rotation is then followed as it is read, so
  // every statement on the way to the key given is checked, signed by the
  // key before and the key after it.
  absl::Status SeedKeys() {
    std::optional<std::string> first_old;
    bool given_is_later = false;
    absl::Status s = store_.ScanRunSeqs(receipt::kLedgerTeam, receipt::kKeysRun, UINT64_MAX, [&](uint64_t seq) {
      auto leaf = store_.GetLeaf(seq);
      if (!leaf.ok()) return leaf.status();
      auto entry = receipt::ParseLeaf(*leaf);
      if (!entry.ok() || !entry->receipt.has_key_rotation()) return absl::OkStatus();  // the replay finds it
      if (!first_old) first_old = entry->receipt.key_rotation().old_key();
      given_is_later |= entry->receipt.key_rotation().new_key() == key_.VerifierKey();
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    if (given_is_later) {
      auto seeded = note::KeySet::Of(*first_old);
      if (!seeded.ok()) return seeded.status();
      keys_ = *std::move(seeded);
      must_reach_ = key_.VerifierKey();
    }
    return absl::OkStatus();
  }

  const store::Store& store_;
  const note::Verifier& key_;
  text::ProgressMeter* const progress_;
  note::KeySet keys_;       // the log's keys by size, as the rotations read so far say
  uint64_t rotations_ = 0;  // key_rotation entries read
  std::string must_reach_;  // the key given, when a later key than the log's first
  store::State state_;
  std::map<uint64_t, std::string> checkpoints_;
  replay::Replay replay_;                                         // of the entries read so far
  store::Pruning pruning_;                                        // the store's retention row
  replay::Replay kept_;                                           // the state kept at its floor
  std::vector<receipt::RetentionRule> finished_rules_;            // the last finished pass's lines
  uint64_t pruned_ = 0;                                           // entries read as pruned lines
  std::vector<std::tuple<int, uint64_t, hash::Hash>> completed_;  // by the entry read last
  // Under run keys v1, for notes of versions 2 and 3, until a note of version 4.
  runmap::RunMap map_v1_;
  bool v1_done_ = false;
  std::optional<std::pair<uint64_t, std::vector<hash::Hash>>> groups_[64];
  uint64_t entries_ = 0, nodes_ = 0, verified_ = 0, times_ = 0, map_roots_ = 0;
  int64_t last_time_us_ = 0;
  std::optional<Finding> finding_;
};

}  // namespace

nlohmann::json AuditReport::Json() const {
  nlohmann::json j = {{"ok", ok},     {"entries", entries},        {"nodes", nodes}, {"checkpoints", checkpoints},
                      {"runs", runs}, {"run_map_roots", map_roots}};
  if (pruned > 0) j["pruned"] = pruned;
  if (!ok) {
    j["finding"] = {{"check", check}, {"what", what}, {"expected", expected}, {"found", found}};
    if (seq >= 0) j["finding"]["seq"] = seq;
  }
  return j;
}

std::string AuditReport::Summary() const {
  if (ok) {
    return absl::StrCat("OK: ", entries, " entries, ", nodes, " tree nodes, ", checkpoints, " checkpoints and ", runs,
                        " runs are consistent; ", map_roots, " signed run-head map roots recomputed.\n",
                        pruned > 0 ? absl::StrCat(pruned,
                                                  " entries pruned under the retention policy: their leaf hashes "
                                                  "checked, their bodies gone (CONTRACT section 9).\n")
                                   : "");
  }
  return absl::StrCat("INCONSISTENT: ", check, seq >= 0 ? absl::StrCat(" at seq ", seq) : "", ": ", what, ": expected ",
                      expected, ", found ", found, "\n");
}

absl::StatusOr<AuditReport> Audit(const store::Store& store, const note::Verifier& key, text::ProgressMeter* progress,
                                  std::string* replay_state) {
  return Auditor(store, key, progress).Run(replay_state);
}

}  // namespace ledger::log
