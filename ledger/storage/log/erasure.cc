// Erasure of one entry's body (CONTRACT section 8): the redaction entry,
// the checkpoint that holds it, then the body replaced by its redacted
// line, the projections re-derived without it, and the store purged.
#include <future>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/redaction.h"
#include "ledger/format/retention/pruned.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/store/store.h"

namespace ledger::log {
namespace {

// The writes the projector makes for `entries` (seq order) on an empty
// overlay: what the run they belong to contributes to the projections.
absl::StatusOr<projection::OverlayTxn::Writes> Derive(projection::Projector& projector,
                                                      const std::vector<projection::Entry>& entries) {
  projection::OverlayTxn txn(nullptr, [](projection::Table, std::string_view) {
    return absl::StatusOr<std::optional<std::string>>(std::nullopt);
  });
  if (auto s = projector.Apply(entries, txn); !s.ok()) return s;
  return txn.writes();
}

}  // namespace

absl::StatusOr<Log::Erased> Log::Erase(const Erasure& erasure) {
  if (options_.replicated.has_value()) {
    return absl::FailedPreconditionError(
        "erase: a replicated shard does not erase in this version: its followers would keep the body (CONTRACT "
        "section 8)");
  }
  if (sequencer_ == nullptr || !integrity_.ok()) {
    return integrity_.ok() ? absl::UnavailableError("log closed") : integrity_;
  }
  if (auto s = receipt::CheckErasureReason(erasure.reason); !s.ok()) return s;
  if (erasure.requested_by.empty() || erasure.approved_by.empty()) {
    return absl::InvalidArgumentError("erase: two admins' identities are required");
  }
  if (erasure.requested_by == erasure.approved_by) {
    return absl::InvalidArgumentError(
        absl::StrCat("erase: the second approver must be another admin than ", erasure.requested_by, ", who asked"));
  }
  sync::MutexLock one(&erase_mu_);
  const uint64_t size = sequencer_->committed().size;
  if (erasure.seq >= size) {
    return absl::OutOfRangeError(absl::StrCat("erase: seq ", erasure.seq, " is not in the log of ", size, " entries"));
  }
  auto leaf = store_->GetLeaf(erasure.seq);
  if (!leaf.ok()) return leaf.status();
  if (retention::LooksPruned(*leaf)) {
    return absl::FailedPreconditionError(
        absl::StrCat("erase: entry ", erasure.seq, " was pruned under the retention policy: its body is gone"));
  }
  if (receipt::LooksRedacted(*leaf)) {
    auto redacted = receipt::ParseRedacted(*leaf);
    if (!redacted.ok())
      return absl::DataLossError(absl::StrCat("entry ", erasure.seq, ": ", redacted.status().message()));
    return absl::AlreadyExistsError(
        absl::StrCat("erase: entry ", erasure.seq, " was erased by redaction entry ", redacted->by));
  }
  auto entry = receipt::ParseLeaf(*leaf);
  if (!entry.ok()) return absl::DataLossError(absl::StrCat("entry ", erasure.seq, ": ", entry.status().message()));
  if (entry->emitter == receipt::kLedgerEmitter) {
    return absl::FailedPreconditionError(absl::StrCat("erase: entry ", erasure.seq, " is the ledger's own (",
                                                      std::string(receipt::KindName(entry->receipt)),
                                                      "): entries the ledger wrote are never erased"));
  }
  receipt::Receipt redaction =
      receipt::Redaction(*entry, hash::LeafHash(*leaf), erasure.reason, erasure.requested_by, erasure.approved_by,
                         options_.sequencer.clock ? options_.sequencer.clock() : sequencer::SystemClockMicros());
  std::promise<sequencer::Outcome> result;
  auto outcome = result.get_future();
  absl::Status queued = AppendAsLedger({&redaction}, [&result](std::vector<sequencer::Outcome> out) {
    result.set_value(out.empty() ? sequencer::Outcome{absl::InternalError("no outcome")} : std::move(out[0]));
  });
  if (!queued.ok()) return queued;
  sequencer::Outcome got = outcome.get();
  uint64_t by = got.seq;
  if (absl::IsAlreadyExists(got.status)) {
    // A redaction of this seq is logged (with other words or approvers: an
    // earlier erasure stopped before its body was gone); that one stands.
    auto found = SeqOf(receipt::kLedgerTeam, absl::StrCat(std::string(receipt::kRedactionIdPrefix), erasure.seq));
    if (!found.ok()) return found.status();
    by = *found;
    auto stored = store_->GetLeaf(by);
    if (!stored.ok()) return stored.status();
    auto logged = receipt::ParseLeaf(*stored);
    if (!logged.ok()) return absl::DataLossError(absl::StrCat("entry ", by, ": ", logged.status().message()));
    redaction = logged->receipt;
  } else if (!got.status.ok()) {
    return got.status;
  }
  // A checkpoint holds the redaction before the body goes: no signed tree
  // lacks the entry that says why.
  if (auto s = SignCheckpoint(); !s.ok()) return s;
  if (auto s = FinishErasure(erasure.seq, by, redaction); !s.ok()) return s;
  return Erased{erasure.seq, by};
}

void Log::CloseGate() {
  sync::MutexLock gate(&gate_mu_);
  while (gate_closed_) gate_cv_.Wait(&gate_mu_);
  gate_closed_ = true;
  while (in_flight_ > 0) gate_cv_.Wait(&gate_mu_);
}

void Log::OpenGate() {
  sync::MutexLock gate(&gate_mu_);
  gate_closed_ = false;
  gate_cv_.SignalAll();
}

absl::Status Log::FinishErasure(uint64_t seq, uint64_t by, const receipt::Receipt& redaction) {
  // Appends wait meanwhile, so that no projection record of the run
  // changes under the re-derivation.
  CloseGate();
  auto reopen = [this] { OpenGate(); };
  absl::Status done = [&]() -> absl::Status {
    auto leaf = store_->GetLeaf(seq);
    if (!leaf.ok()) return leaf.status();
    const std::string line = receipt::RedactedLine(by, redaction);
    std::vector<std::pair<projection::Table, std::string>> purged;
    if (*leaf != line) {
      if (receipt::LooksRedacted(*leaf)) {
        return absl::DataLossError(
            absl::StrCat("entry ", seq, " holds a redacted line other than redaction ", by, "'s"));
      }
      if (hash::LeafHash(*leaf) != receipt::ErasedLeafHash(redaction)) {
        return absl::DataLossError(
            absl::StrCat("entry ", seq, ": its leaf hash is not the one redaction ", by, " states"));
      }
      auto entry = receipt::ParseLeaf(*leaf);
      if (!entry.ok()) return absl::DataLossError(absl::StrCat("entry ", seq, ": ", entry.status().message()));
      store::Batch batch = store_->NewBatch();
      batch.PutEntry(seq, line);
      if (projection::Projector* projector = options_.sequencer.projector; projector != nullptr) {
        // The run's entries, by its chain: derived once with the body and
        // once with the skeleton, and the records that differ rewritten.
        const receipt::Receipt& r = entry->receipt;
        auto head = store_->GetRunHead(r.team(), r.run_id());
        if (!head.ok()) return head.status();
        std::vector<std::string> leaves;
        if (head->has_value()) {
          absl::Status walked = store_->WalkLeavesBack(
              (*head)->last_seq, [&](uint64_t, std::string_view l) -> absl::StatusOr<std::optional<uint64_t>> {
                leaves.emplace_back(l);
                return receipt::RunPrevOf(l);
              });
          if (!walked.ok()) return walked;
        }
        std::vector<receipt::Entry> parsed;
        parsed.reserve(leaves.size() + 1);
        std::vector<projection::Entry> with, without;
        size_t at = leaves.size();
        for (size_t i = leaves.size(); i-- > 0;) {
          auto e = receipt::ParseStored(leaves[i]);
          if (!e.ok()) return absl::DataLossError(absl::StrCat("erase: an entry of the run: ", e.status().message()));
          parsed.push_back(*std::move(e));
          const receipt::Entry& p = parsed.back();
          if (p.seq == seq) at = with.size();
          with.push_back({p.seq, p.logged_at_us, p.emitter, &p.receipt, p.erased});
        }
        if (at == with.size()) {
          return absl::DataLossError(absl::StrCat("erase: entry ", seq, " is not on its run's chain"));
        }
        parsed.push_back(receipt::SkeletonOf(redaction));
        without = with;
        without[at] = {seq, parsed.back().logged_at_us, "", &parsed.back().receipt, true};
        auto before = Derive(*projector, with);
        if (!before.ok()) return before.status();
        auto after = Derive(*projector, without);
        if (!after.ok()) return after.status();
        projection::OverlayTxn::Writes changes;
        for (int t = 0; t < projection::kTableCount; ++t) {
          for (const auto& [key, value] : (*after)[t]) {
            auto old = (*before)[t].find(key);
            if (old == (*before)[t].end() || old->second != value) changes[t].emplace(key, value);
          }
          for (const auto& [key, value] : (*before)[t]) {
            if (value.has_value() && !(*after)[t].contains(key)) changes[t].emplace(key, std::nullopt);
          }
          for (const auto& [key, value] : changes[t]) purged.emplace_back(static_cast<projection::Table>(t), key);
        }
        batch.PutProjectionsWithLog(changes);
      }
      if (auto s = store_->Commit(batch); !s.ok()) return s;
    }
    return store_->Purge(seq, purged);
  }();
  reopen();
  return done;
}

absl::Status Log::FinishErasures() {
  std::vector<uint64_t> redactions;
  absl::Status scanned =
      store_->ScanRunSeqs(receipt::kLedgerTeam, receipt::kRedactionsRun, UINT64_MAX, [&](uint64_t seq) {
        redactions.push_back(seq);
        return absl::OkStatus();
      });
  if (!scanned.ok()) return scanned;
  sync::MutexLock one(&erase_mu_);
  for (uint64_t by : redactions) {
    auto leaf = store_->GetLeaf(by);
    if (!leaf.ok()) return leaf.status();
    auto entry = receipt::ParseLeaf(*leaf);
    if (!entry.ok() || !entry->receipt.has_redaction()) {
      return absl::DataLossError(absl::StrCat("entry ", by, " of the run ledger.redactions is not a redaction"));
    }
    const uint64_t seq = static_cast<uint64_t>(entry->receipt.redaction().entry_seq());
    auto body = store_->GetLeaf(seq);
    if (!body.ok()) return body.status();
    if (retention::LooksPruned(*body)) continue;  // pruned since: nothing left to erase
    // A body still there, or the last erasure (whose purge may not have
    // finished): carried out again.
    if (!receipt::LooksRedacted(*body) || by == redactions.back()) {
      if (auto s = FinishErasure(seq, by, entry->receipt); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace ledger::log
