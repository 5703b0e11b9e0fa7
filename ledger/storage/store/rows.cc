#include "ledger/storage/store/internal/rows.h"

#include "absl/strings/str_cat.h"

namespace ledger::store {
namespace {

const char* const kLogCfNames[kLogCfCount] = {"default", "entries",          "receipts",         "nodes",
                                              "runs",    "checkpoints",      "checkpoint_times", "teams",
                                              "maps",    "map_cosignatures", "run_seqs",         "time_stamps"};

}  // namespace

const char* CfName(int cf) {
  return cf < kLogCfCount ? kLogCfNames[cf] : projection::TableName(static_cast<projection::Table>(cf - kLogCfCount));
}

absl::Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = absl::StrCat("storage: ", std::string(what), ": ", s.ToString());
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  if (s.IsCorruption()) return absl::DataLossError(msg);
  return absl::UnavailableError(msg);
}

absl::Status Malformed(std::string_view what) {
  return absl::DataLossError(absl::StrCat("storage: malformed ", std::string(what)));
}

absl::StatusOr<ReceiptKey> DecodeReceiptKey(std::string_view k) {
  if (k.empty()) return Malformed("receipt index key");
  if (k[0] != kReceiptKeyV2) return ReceiptKey{IdSpace::kLegacy, {}, k};
  if (k.size() < 4) return Malformed("receipt index key");
  auto space = static_cast<IdSpace>(k[1]);
  if (space != IdSpace::kEmitter && space != IdSpace::kLedger) return Malformed("receipt index key");
  size_t team = static_cast<uint8_t>(k[2]);
  if (k.size() <= 3 + team) return Malformed("receipt index key");
  return ReceiptKey{space, k.substr(3, team), k.substr(3 + team)};
}

absl::StatusOr<ReceiptRef> DecodeReceiptRef(std::string_view v) {
  if (v.size() != kReceiptRefSize || v[0] != kFormatV1) return Malformed("receipt index row");
  ReceiptRef ref;
  ref.seq = GetU64(v.data() + 1);
  ref.leaf_hash = ReadHash(v.data() + 9);
  ref.digest = ReadHash(v.data() + 41);
  return ref;
}

absl::StatusOr<RunHead> DecodeRunHead(std::string_view v) {
  RunHead head;
  if (v.size() == 8) {  // format 1: the last seq alone
    head.last_seq = GetU64(v.data());
    return head;
  }
  if (v.size() != kRunHeadBytes || v[0] != kRunHeadFormat2) return Malformed("run head");
  head.count = GetU64(v.data() + 1);
  head.last_seq = GetU64(v.data() + 9);
  head.last_leaf_hash = ReadHash(v.data() + 17);
  if (head.count == 0 || head.count > head.last_seq + 1) return Malformed("run head");
  return head;
}

std::string EncodeHead(const RunHead& head) {
  std::string v;
  v.reserve(kRunHeadBytes);
  v.push_back(kRunHeadFormat2);
  v.append(U64Key(head.count));
  v.append(U64Key(head.last_seq));
  v.append(reinterpret_cast<const char*>(head.last_leaf_hash.data()), head.last_leaf_hash.size());
  return v;
}

std::string EncodeReceiptKey(const ReceiptKey& key) {
  if (key.space == IdSpace::kLegacy) return std::string(key.receipt_id);
  std::string k;
  k.reserve(3 + key.team.size() + key.receipt_id.size());
  k.push_back(kReceiptKeyV2);
  k.push_back(static_cast<char>(key.space));
  k.push_back(static_cast<char>(key.team.size()));
  k.append(key.team);
  k.append(key.receipt_id);
  return k;
}

rocksdb::ReadOptions BulkRead() {
  rocksdb::ReadOptions options;
  options.fill_cache = false;
  return options;
}

}  // namespace ledger::store
