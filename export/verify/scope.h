// The scope of an evidence pack: a run, a team's time window, or a seq
// range, as the manifest states it (CONTRACT.md section 7).
#ifndef EXPORT_VERIFY_SCOPE_H_
#define EXPORT_VERIFY_SCOPE_H_

#include <cstdint>
#include <string>

namespace ledger::verify {

// The scope of a pack as its manifest says. A team window names its seqs
// [from_seq, to_seq) too.
struct Scope {
  std::string kind, team, run_id;
  int64_t from_us = 0, to_us = 0;
  uint64_t from_seq = 0, to_seq = 0;
};

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_SCOPE_H_
