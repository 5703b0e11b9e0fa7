#include "ledger/format/receipt/internal/schema.h"

namespace ledger::receipt::schema {

const Schema& GetSchema() {
  static const Schema* schema = [] {
    auto* s = new Schema();
    s->Names(evidence::ledger::v1::Decision_descriptor());
    s->Names(evidence::ledger::v1::ExecStatus_descriptor());
    return s;
  }();
  return *schema;
}

}  // namespace ledger::receipt::schema
