#include "ledger/format/projection/projection.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace ledger::projection {

const char* TableName(Table t) {
  switch (t) {
    case Table::kSteps:
      return "p_steps";
    case Table::kRuns:
      return "p_runs";
    case Table::kIndex:
      return "p_index";
    case Table::kChanges:
      return "p_changes";
  }
  return "p_unknown";
}

absl::StatusOr<uint64_t> Projector::Upgrade(uint64_t from, Txn&, const Scan&, const Replay&) {
  return absl::FailedPreconditionError(absl::StrCat("projections: records of format ", from,
                                                    " cannot be upgraded to format ", Format(),
                                                    "; stop the server and run ledgerctl rebuild"));
}

absl::StatusOr<std::optional<std::string>> OverlayTxn::Get(Table t, std::string_view key) {
  for (const OverlayTxn* o = this; o != nullptr; o = o->base_) {
    const TableWrites& w = o->writes_[static_cast<int>(t)];
    if (auto it = w.find(absl::string_view(key.data(), key.size())); it != w.end()) {
      return it->second;
    }
  }
  if (!fallback_) return std::nullopt;
  return fallback_(t, key);
}

void OverlayTxn::Write(Table t, std::string_view key, std::optional<std::string_view> value) {
  // The key is copied only when new, and a value written over is written
  // into the same string: a run's record, and a step's, is written again
  // by each batch of entries that changes it.
  auto [it, added] = writes_[static_cast<int>(t)].try_emplace(absl::string_view(key.data(), key.size()));
  if (added) {
    bytes_ += key.size() + kRowOverhead;
  } else if (it->second.has_value()) {
    bytes_ -= it->second->size();
  }
  if (value.has_value()) {
    if (it->second.has_value()) {
      it->second->assign(*value);
    } else {
      it->second.emplace(*value);
    }
    bytes_ += value->size();
  } else {
    it->second.reset();
  }
}

void OverlayTxn::Put(Table t, std::string_view key, std::string_view value) { Write(t, key, value); }

void OverlayTxn::Delete(Table t, std::string_view key) { Write(t, key, std::nullopt); }

void OverlayTxn::PutUnread(Table t, std::string_view key, std::string_view value) {
  if (sink_ != nullptr) {
    sink_->PutProjection(t, key, value);
  } else {
    Put(t, key, value);
  }
}

void OverlayTxn::DeleteUnread(Table t, std::string_view key) {
  if (sink_ != nullptr) {
    sink_->DeleteProjection(t, key);
  } else {
    Delete(t, key);
  }
}

}  // namespace ledger::projection
