#include "ledger/projection/projection.h"

namespace ledger::projection {

const char* TableName(Table t) {
  switch (t) {
    case Table::kSteps: return "p_steps";
    case Table::kRuns: return "p_runs";
    case Table::kIndex: return "p_index";
    case Table::kChanges: return "p_changes";
  }
  return "p_unknown";
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

void OverlayTxn::Put(Table t, std::string_view key, std::string_view value) {
  writes_[static_cast<int>(t)].insert_or_assign(std::string(key), std::string(value));
}

void OverlayTxn::Delete(Table t, std::string_view key) {
  writes_[static_cast<int>(t)].insert_or_assign(std::string(key), std::nullopt);
}

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
