// The entries and proofs of an evidence pack, checked as they stream out
// of the archive (export/verify/cc/verify.h says what is checked):
//
//   pass 1, entries.jsonl: each line decoded on worker threads (canonical
//     form, leaf hash), then in order its seq, the tree size and its prev
//     link checked and the entry projected into outcomes; what pass 2 needs
//     of each line (seq, leaf hash, logged_at_us, run_prev, the previous
//     entry of its run in the pack, team and run alike the first's) goes to
//     a temporary file, 80 bytes a line: memory grows with the runs in the
//     pack, not with its entries;
//   pass 2, proofs.jsonl: each line against its entry's record, its
//     inclusion proof against the checkpoint, and the scope (run chain,
//     team window, seq range; within a window or range, each run's chain
//     from the window's first seq), chunks on worker threads; or, in a
//     pack of format 6, multiproof.txt: its hashes and the records walk
//     the multiproof to the checkpoint's root, the scope checked on the
//     way, on the calling thread.
//
// Failures are kept, not returned: the one reported is the first in line
// order and, within a line, in the order a single pass would meet them.
//
// Thread-compatible: one thread calls; workers are its own.
#ifndef EXPORT_VERIFY_CC_INTERNAL_STREAM_CHECK_H_
#define EXPORT_VERIFY_CC_INTERNAL_STREAM_CHECK_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "export/pack/pack.h"
#include "export/verify/cc/scope.h"
#include "ledger/format/note/note.h"

namespace ledger::verify {

// A failure found while checking entries and proofs. The one reported is
// the first in line order and, within a line, in the order a single pass
// would meet them (the stage).
struct Failure {
  enum Stage { kDecode = 0, kMissingProof, kOrder, kTreeSize, kProof, kLinks, kScope, kProject };
  uint64_t line;
  int stage;
  std::string file;
  int64_t seq;
  std::string message;
  bool operator<(const Failure& o) const { return std::tie(line, stage) < std::tie(o.line, o.stage); }
};

void KeepFirst(std::optional<Failure>* first, std::optional<Failure> f);

// The team chain (team_prev, CONTRACT section 1) among a pack's entries, for
// the walk of a closed team window (CONTRACT section 7): the walk from the
// top goes down through the links checked here, and stops at the highest
// version 1 entry.
struct TeamChainFacts {
  // The pack's first and last entries: seq, version and team_prev.
  uint64_t first_seq = 0, last_seq = 0;
  int first_version = 0, last_version = 0;
  std::optional<uint64_t> first_team_prev, last_team_prev;
  // The highest version 1 entry, if any.
  std::optional<uint64_t> top_v1;
  // The highest entry above top_v1 whose team_prev is not the seq of the
  // entry below it in the pack.
  struct Break {
    uint64_t seq = 0;
    std::optional<uint64_t> team_prev;
    uint64_t below = 0;  // the seq of the pack's entry below it
  };
  std::optional<Break> top_break;
};

// The next piece of a file; empty at its end.
using NextPiece = absl::FunctionRef<absl::StatusOr<std::string_view>()>;

class StreamCheck {
 public:
  // Pass 1 projects into `outcomes`; its records go to a file in
  // `scratch_dir`. Both MUST outlive this object.
  StreamCheck(const std::string& scratch_dir, pack::Outcomes* outcomes);
  ~StreamCheck();
  StreamCheck(const StreamCheck&) = delete;
  StreamCheck& operator=(const StreamCheck&) = delete;

  // Pass 1, against a tree of `tree_size`. An error only when the file
  // cannot be read.
  absl::Status Entries(uint64_t tree_size, NextPiece next);
  bool entries_checked() const;
  // Pass 2; MUST follow Entries.
  absl::Status Proofs(const note::Checkpoint& cp, const Scope& scope, NextPiece next);
  // Pass 2 of a pack of format 6, multiproof.txt; MUST follow Entries.
  absl::Status Multiproof(const note::Checkpoint& cp, const Scope& scope, NextPiece next);
  // Whether Proofs or Multiproof ran.
  bool proofs_checked() const;

  // After both passes.
  std::optional<Failure> first_failure() const;
  bool more_proofs_than_entries() const;
  uint64_t entries() const;
  std::optional<uint64_t> last_seq() const;
  // The leaf hash of the entry of last_seq() (meaningless without one).
  hash::Hash last_leaf_hash() const;
  const TeamChainFacts& team_chain() const;
  // The entry an emitter logged last (the largest logged_at_us, the first
  // of equal ones; not the ledger's own declarations, logged as it signs),
  // and the first version 2 leaf: nullopt when there is none.
  struct Logged {
    uint64_t seq = 0;
    int64_t logged_at_us = 0;
  };
  std::optional<Logged> latest_logged() const;
  std::optional<uint64_t> first_version2_seq() const;
  // The leader_epoch entries of the pack (CONTRACT §3, "Leader epochs"), in
  // seq order, each checked to begin its epoch.
  struct Epoch {
    uint64_t seq = 0;
    int64_t epoch = 0;
    std::string node;
    std::string previous_root;  // hex
  };
  const std::vector<Epoch>& epochs() const;
  // The key_rotation entries of the pack (CONTRACT section 5d), in seq
  // order, each the ledger's; their statements are checked by the caller,
  // who knows the origin.
  struct Rotation {
    uint64_t seq = 0;
    std::string old_key, new_key, note;
  };
  const std::vector<Rotation>& rotations() const;
  // The erased entries of the pack (CONTRACT section 8): each redacted
  // line of entries.jsonl, read as the entry it stands for (its leaf hash
  // walked, its chains and scope checked) and kept here for the check
  // against its redaction.
  struct Erased {
    uint64_t line = 0;  // of entries.jsonl, from 0
    uint64_t seq = 0, by = 0;
    std::string encoded;  // the line's bytes
    std::string kind, team, run_id;
  };
  const std::vector<Erased>& erased() const;
  // Format 8: redactions.jsonl's lines (their seqs, leaf hashes and line
  // numbers from 1), and format 9's retention.jsonl's, walked with the
  // entries by Multiproof (each seq once); MUST precede it.
  struct Redaction {
    uint64_t seq = 0;
    hash::Hash leaf_hash{};
    uint64_t line = 0;
    const char* file = pack::kRedactions;
  };
  void SetRedactions(std::vector<Redaction> redactions);

 private:
  class EntryPass;
  class ProofPass;
  class MultiproofPass;
  std::string records_path_;
  pack::Outcomes* outcomes_;
  std::vector<Redaction> redactions_;
  std::unique_ptr<EntryPass> entry_pass_;
  std::unique_ptr<ProofPass> proof_pass_;
  std::unique_ptr<MultiproofPass> multiproof_pass_;
};

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_CC_INTERNAL_STREAM_CHECK_H_
