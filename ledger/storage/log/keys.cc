// The log's keys over its sizes (CONTRACT section 5d): the rotations read
// at Open, the notes opened with the key of their size, checkpoints signed
// with the current key (and the old one's line in a transition), and the
// rotation itself.
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/store/store.h"

namespace ledger::log {

absl::Status Log::LoadKeys() {
  std::vector<uint64_t> seqs;
  absl::Status scanned = store_->ScanRunSeqs(receipt::kLedgerTeam, receipt::kKeysRun, UINT64_MAX, [&](uint64_t seq) {
    seqs.push_back(seq);
    return absl::OkStatus();
  });
  if (!scanned.ok()) return scanned;
  auto head = store_->GetRunHead(receipt::kLedgerTeam, receipt::kKeysRun);
  if (!head.ok()) return head.status();
  const uint64_t count = head->has_value() ? (*head)->count : 0;
  if (count != seqs.size()) {
    return absl::DataLossError(absl::StrCat("keys: the run (ledger, ledger.keys) counts ", count,
                                            " key_rotation entries, the run index holds ", seqs.size()));
  }
  std::vector<Rotation> rotations;
  for (uint64_t seq : seqs) {
    auto leaf = store_->GetLeaf(seq);
    if (!leaf.ok()) return leaf.status();
    auto entry = receipt::ParseLeaf(*leaf);
    if (!entry.ok() || !entry->receipt.has_key_rotation()) {
      return absl::DataLossError(absl::StrCat("keys: entry ", seq, " of the run ledger.keys is not a key_rotation"));
    }
    const auto& k = entry->receipt.key_rotation();
    rotations.push_back({seq, k.old_key(), k.new_key(), k.note()});
  }
  sync::MutexLock lock(&keys_mu_);
  auto keys = note::KeySet::Of(rotations.empty() ? signer_.VerifierKey() : rotations.front().old_key);
  if (!keys.ok()) return keys.status();
  for (const Rotation& r : rotations) {
    if (auto s = keys->Follow(r.seq, r.old_key, r.new_key, r.note); !s.ok()) {
      return absl::DataLossError(absl::StrCat("keys: ", s.message()));
    }
  }
  const std::string current = keys->ranges().back().vkey;
  if (signer_.VerifierKey() != current) {
    if (options_.next_key.has_value() && options_.next_key->VerifierKey() == current) {
      // The rotation was committed; the key file was not replaced yet.
      if (options_.took_next_key) {
        if (auto s = options_.took_next_key(); !s.ok()) return s;
      }
      signer_ = *options_.next_key;
    } else {
      const note::KeySet::Range* mine = nullptr;
      for (const auto& r : keys->ranges()) {
        if (r.vkey == signer_.VerifierKey()) mine = &r;
      }
      if (mine != nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat("signing key: the log rotated from this key (", signer_.VerifierKey(), ") at seq ",
                         *mine->until, "; its key now is ", current, " (from size ", keys->ranges().back().from,
                         "), which signs every checkpoint: start with --signing-key naming that key"));
      }
      return absl::FailedPreconditionError(
          absl::StrCat("signing key: the log's latest checkpoint was not signed by this key (", signer_.VerifierKey(),
                       "): the log's key is ", current, " (from size ", keys->ranges().back().from,
                       "); start with the key and origin that signed it"));
    }
  }
  keys_ = *std::move(keys);
  rotations_ = std::move(rotations);
  return absl::OkStatus();
}

absl::StatusOr<std::string> Log::OpenNote(std::string_view note_text, uint64_t size) const {
  sync::MutexLock lock(&keys_mu_);
  return keys_.Open(note_text, size);
}

absl::StatusOr<std::string> Log::SignFor(uint64_t size, std::string_view text) const {
  sync::MutexLock lock(&keys_mu_);
  auto signed_note = signer_.Sign(text);
  if (!signed_note.ok() || !old_signer_.has_value() || size > transition_until_) return signed_note;
  return note::AddSignature(*signed_note, *old_signer_);
}

absl::StatusOr<std::string> Log::SignNoteAt(uint64_t size, std::string_view text) const {
  sync::MutexLock lock(&keys_mu_);
  const note::KeySet::Range* at = keys_.At(size);
  if (at == nullptr || at->vkey != signer_.VerifierKey()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the tree of size ", size, " is signed by ", at ? at->vkey : "no key",
                     ", a key the log rotated away from: export at a checkpoint the current key signed"));
  }
  return signer_.Sign(text);
}

std::string Log::verifier_key() const {
  sync::MutexLock lock(&keys_mu_);
  return signer_.VerifierKey();
}

std::string Log::VerifierKeyAt(uint64_t size) const {
  sync::MutexLock lock(&keys_mu_);
  const note::KeySet::Range* at = keys_.At(size);
  return at != nullptr ? at->vkey : signer_.VerifierKey();
}

std::vector<Log::Rotation> Log::Rotations() const {
  sync::MutexLock lock(&keys_mu_);
  return rotations_;
}

note::KeySet Log::Keys() const {
  sync::MutexLock lock(&keys_mu_);
  return keys_;
}

absl::StatusOr<Log::Rotation> Log::RotateKey(note::Signer next, RotateOptions options) {
  if (options_.replicated.has_value()) {
    return absl::FailedPreconditionError(
        "rotate-key: a replicated shard does not rotate its key in this version (CONTRACT section 5d)");
  }
  if (sequencer_ == nullptr || !integrity_.ok())
    return integrity_.ok() ? absl::UnavailableError("log closed") : integrity_;
  if (next.name() != options_.origin) {
    return absl::FailedPreconditionError(
        absl::StrCat("new key: named '", next.name(), "' but the origin is '", options_.origin, "'"));
  }
  {
    sync::MutexLock lock(&keys_mu_);
    for (const auto& r : keys_.ranges()) {
      if (r.verifier.key_id() == next.key_id()) {
        return absl::FailedPreconditionError(
            absl::StrCat("new key: ", next.VerifierKey(), " is a key this log has had; a rotation names a new one"));
      }
    }
  }
  // No checkpoint is signed meanwhile: the one of the rotation's tree must
  // be the new key's.
  sync::MutexLock signing(&sign_mu_);
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  {
    sync::MutexLock gate(&gate_mu_);
    gate_closed_ = true;
    while (in_flight_ > 0) {
      if (!gate_cv_.WaitUntil(&gate_mu_, deadline) && in_flight_ > 0) {
        gate_closed_ = false;
        gate_cv_.SignalAll();
        return absl::UnavailableError(absl::StrCat("rotate-key: ", in_flight_, " appends still under way after ",
                                                   options.timeout.count(), " ms; nothing changed, retry"));
      }
    }
  }
  auto reopen = [this] {
    sync::MutexLock gate(&gate_mu_);
    gate_closed_ = false;
    gate_cv_.SignalAll();
  };
  const uint64_t seq = sequencer_->committed().size;
  note::Signer current = [&] {
    sync::MutexLock lock(&keys_mu_);
    return signer_;
  }();
  auto statement = note::SignKeyRotation(options_.origin, seq, current, next);
  if (!statement.ok()) {
    reopen();
    return statement.status();
  }
  const uint64_t number = Rotations().size() + 1;
  auto entry =
      receipt::KeyRotation(number, current.VerifierKey(), next.VerifierKey(), *statement,
                           options_.sequencer.clock ? options_.sequencer.clock() : sequencer::SystemClockMicros());
  std::promise<sequencer::Outcome> result;
  auto outcome = result.get_future();
  absl::Status queued = Submit(
      std::string(receipt::kLedgerEmitter), receipt::Author::kLedger, {&entry},
      [&result](std::vector<sequencer::Outcome> out) {
        result.set_value(out.empty() ? sequencer::Outcome{absl::InternalError("no outcome")} : std::move(out[0]));
      });
  if (!queued.ok()) {
    reopen();
    return queued;
  }
  sequencer::Outcome got = outcome.get();  // the sequencer answers every submission
  if (!got.status.ok()) {
    reopen();
    return got.status;
  }
  if (got.duplicate || got.seq != seq) {
    reopen();
    return absl::DataLossError(absl::StrCat("rotate-key: the key_rotation entry got seq ", got.seq,
                                            got.duplicate ? " (a duplicate)" : "", ", not ", seq));
  }
  Rotation done{seq, current.VerifierKey(), next.VerifierKey(), *statement};
  {
    sync::MutexLock lock(&keys_mu_);
    if (auto s = keys_.Follow(seq, done.old_key, done.new_key, done.note); !s.ok()) {
      // The entry is in the log: the next Open reads it and finds this
      // same failure.
      reopen();
      return absl::InternalError(absl::StrCat("rotate-key: ", s.message()));
    }
    rotations_.push_back(done);
    old_signer_ = current;
    transition_until_ = seq + options.transition_sizes;
    if (options.transition_sizes == 0) old_signer_.reset();
    signer_ = std::move(next);
  }
  reopen();
  return done;
}

}  // namespace ledger::log
