#include "ledger/storage/store/testing.h"

#include <cstdlib>

#include "ledger/storage/store/internal/rows.h"
#include "ledger/storage/store/internal/store_rep.h"

namespace ledger::store {

void Testing::PutRunHeadOfFormat1(Batch& batch, std::string_view team, std::string_view run_id, uint64_t last_seq) {
  batch.rep_->Put(kRuns, RunKey(team, run_id), U64Key(last_seq));
}

void Testing::DeleteRunSeq(Batch& batch, std::string_view team, std::string_view run_id, uint64_t seq) {
  std::string key = RunSeqPrefix(team, run_id);
  PutU64(&key, seq);
  if (!batch.rep_->wb.Delete((*batch.rep_->cfs)[kRunSeqs], AsSlice(key)).ok()) std::abort();
}

void Testing::DeleteTeamHead(Batch& batch, std::string_view team) {
  if (!batch.rep_->wb.Delete((*batch.rep_->cfs)[kTeams], AsSlice(team)).ok()) std::abort();
}

void Testing::DeleteRetentionPolicy(Batch& batch, const hash::Hash& sha256) {
  std::string key(kPolicyKeyPrefix);
  key.append(reinterpret_cast<const char*>(sha256.data()), sha256.size());
  if (!batch.rep_->wb.Delete((*batch.rep_->cfs)[kDefault], AsSlice(key)).ok()) std::abort();
}

void Testing::SetResumeWindow(Store& store, std::chrono::milliseconds window) { store.rep_->resume_window = window; }

}  // namespace ledger::store
