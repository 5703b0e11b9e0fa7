// Projections beside the log: catching them up, upgrading their records'
// format, rebuilding them.
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ledger/format/receipt/entry.h"
#include "ledger/format/receipt/redaction.h"
#include "ledger/storage/log/log.h"
#include "ledger/storage/store/store.h"

namespace ledger::log {
namespace {

constexpr uint64_t kChunk = 20'000;

std::string U64(uint64_t v) {
  std::string out;
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

// The big-endian u64 a projection record under `key` holds (kFormatKey,
// kProjectedSizeKey), nullopt when absent; DATA_LOSS naming `what` when it
// is not 8 bytes.
absl::StatusOr<std::optional<uint64_t>> ReadU64(store::Store& store, std::string_view key, std::string_view what) {
  auto stored = store.GetProjection(projection::Table::kIndex, key);
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return std::nullopt;
  if ((*stored)->size() != 8)
    return absl::DataLossError(absl::StrCat("projections: ", std::string(what), " is not 8 bytes"));
  uint64_t v = 0;
  for (char c : **stored) v = v << 8 | static_cast<uint8_t>(c);
  return v;
}

// Entries [from, to) of the log, parsed, a chunk of at most kChunk at a
// time: `chunk` gets each, with the end of its range (`last`) and a Txn over
// the stored projections whose writes are stored when it returns OK; then
// `stored`, if set, gets `last`.
using ChunkFn = absl::FunctionRef<absl::Status(absl::Span<const projection::Entry>, uint64_t last, projection::Txn&)>;
absl::Status ForEachChunk(store::Store& store, uint64_t from, uint64_t to, ChunkFn chunk,
                          const std::function<void(uint64_t last)>& stored = nullptr) {
  for (uint64_t first = from; first < to; first += kChunk) {
    uint64_t last = std::min(to, first + kChunk);
    projection::OverlayTxn txn(nullptr,
                               [&](projection::Table t, std::string_view key) { return store.GetProjection(t, key); });
    std::vector<receipt::Entry> parsed;
    parsed.reserve(last - first);
    absl::Status read = store.ScanLeaves(first, last, [&](uint64_t seq, std::string_view leaf) {
      // An erased entry is replayed as its skeleton (CONTRACT section 8).
      auto entry = receipt::ParseStored(leaf);
      if (!entry.ok()) {
        return absl::DataLossError(absl::StrCat("entry ", seq, ": ", entry.status().message()));
      }
      if (entry->seq != seq) {
        return absl::DataLossError(absl::StrCat("entry ", seq, " says it is seq ", entry->seq));
      }
      parsed.push_back(*std::move(entry));
      return absl::OkStatus();
    });
    if (!read.ok()) return read;
    std::vector<projection::Entry> entries;
    entries.reserve(parsed.size());
    for (const receipt::Entry& e : parsed) {
      entries.push_back({e.seq, e.logged_at_us, e.emitter, &e.receipt, e.erased});
    }
    if (auto s = chunk(entries, last, txn); !s.ok()) return s;
    store::Batch batch = store.NewBatch();
    batch.PutProjections(txn.writes());
    if (auto s = store.Commit(batch); !s.ok()) return s;
    if (stored) stored(last);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ProjectionUpgrade> UpgradeProjections(store::Store& store, projection::Projector& projector) {
  const uint64_t to = projector.Format();
  auto stored = ReadU64(store, projection::kFormatKey, "the format record");
  if (!stored.ok()) return stored.status();
  auto projected = ReadU64(store, projection::kProjectedSizeKey, "the projected size");
  if (!projected.ok()) return projected.status();
  // Without a format record: format 1, or never projected (today's format).
  const uint64_t from = stored->has_value() ? **stored : projected->has_value() ? 1 : to;
  if (from > to) {
    return absl::FailedPreconditionError(absl::StrCat("projections are of format ", from,
                                                      ", newer than this ledger's (", to,
                                                      "): run the newer ledger, or ledgerctl rebuild with this one"));
  }
  ProjectionUpgrade upgrade{from, to, 0};
  projection::OverlayTxn txn(nullptr,
                             [&](projection::Table t, std::string_view key) { return store.GetProjection(t, key); });
  if (from < to) {
    auto scan = [&](projection::Table t, std::string_view prefix,
                    absl::FunctionRef<bool(std::string_view, std::string_view)> row) {
      return store.ScanProjection(t, prefix, "", false, [&](std::string_view key, std::string_view value) {
        return key.substr(0, prefix.size()) == prefix && row(key, value);
      });
    };
    // The entries the stored records cover; those after them are applied
    // in the new format once the upgrade is done (Log::Open).
    const uint64_t covered = projected->value_or(0);
    auto replay = [&](projection::Projector::Chunk chunk) {
      return ForEachChunk(store, 0, covered,
                          [&](absl::Span<const projection::Entry> entries, uint64_t, projection::Txn& chunk_txn) {
                            return chunk(entries, chunk_txn);
                          });
    };
    auto rows = projector.Upgrade(from, txn, scan, replay);
    if (!rows.ok()) return rows.status();
    upgrade.rows = *rows;
  } else if (stored->has_value()) {
    return upgrade;
  }
  txn.Put(projection::Table::kIndex, projection::kFormatKey, U64(to));
  store::Batch batch = store.NewBatch();
  batch.PutProjections(txn.writes());
  if (auto s = store.Commit(batch); !s.ok()) return s;
  return upgrade;
}

absl::Status ReplayProjections(store::Store& store, projection::Projector& projector, uint64_t from, uint64_t to,
                               const std::function<void(uint64_t done, uint64_t total)>& progress) {
  return ForEachChunk(
      store, from, to,
      [&](absl::Span<const projection::Entry> entries, uint64_t last, projection::Txn& txn) {
        if (auto s = projector.Apply(entries, txn); !s.ok()) return s;
        txn.Put(projection::Table::kIndex, projection::kProjectedSizeKey, U64(last));
        return absl::OkStatus();
      },
      [&](uint64_t last) {
        if (progress) progress(last, to);
      });
}

absl::Status RebuildProjections(const std::string& data_dir, projection::Projector& projector,
                                const std::function<void(uint64_t done, uint64_t total)>& progress) {
  auto opened = store::Store::Open(data_dir + "/db");
  if (!opened.ok()) return opened.status();
  store::Store& store = **opened;
  auto state = store.ReadState();
  if (!state.ok()) return state.status();
  if (auto s = store.DropProjections(); !s.ok()) return s;
  {
    // The projections start empty, in the projector's format, covering an
    // empty log.
    store::Batch batch = store.NewBatch();
    batch.PutProjection(projection::Table::kIndex, projection::kFormatKey, U64(projector.Format()));
    batch.PutProjection(projection::Table::kIndex, projection::kProjectedSizeKey, U64(0));
    if (auto s = store.Commit(batch); !s.ok()) return s;
  }
  if (state->size == 0) {
    if (progress) progress(0, 0);
    return absl::OkStatus();
  }
  return ReplayProjections(store, projector, 0, state->size, progress);
}

}  // namespace ledger::log
