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
  auto k = std::make_pair(t, std::string(key));
  for (const OverlayTxn* o = this; o != nullptr; o = o->base_) {
    if (auto it = o->writes_.find(k); it != o->writes_.end()) return it->second;
  }
  if (!fallback_) return std::nullopt;
  return fallback_(t, key);
}

void OverlayTxn::Put(Table t, std::string_view key, std::string_view value) {
  writes_[std::make_pair(t, std::string(key))] = std::string(value);
}

void OverlayTxn::Delete(Table t, std::string_view key) {
  writes_[std::make_pair(t, std::string(key))] = std::nullopt;
}

}  // namespace ledger::projection
