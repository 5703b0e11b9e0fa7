#include "witness/client/log_source.h"

namespace ledger::witnesses {

Source LogSource(const log::Log* log) {
  return {[log](uint64_t size) -> absl::StatusOr<std::string> {
            auto cp = log->Checkpoint(size);
            if (!cp.ok()) return cp.status();
            return cp->note;
          },
          [log](uint64_t from, uint64_t to) -> absl::StatusOr<std::vector<hash::Hash>> {
            auto proof = log->ProveConsistency(from, to);
            if (!proof.ok()) return proof.status();
            return std::move(proof->hashes);
          },
          [log] {
            std::vector<Rotation> out;
            for (const log::Log::Rotation& r : log->Rotations()) out.push_back({r.seq, r.note});
            return out;
          }};
}

}  // namespace ledger::witnesses
