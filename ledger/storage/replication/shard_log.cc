#include "ledger/storage/replication/shard_log.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace ledger::replication {
namespace {

constexpr const char* kSchema[] = {
    "CREATE TABLE IF NOT EXISTS ledger_shard (origin text PRIMARY KEY, epoch bigint NOT NULL, holder text NOT NULL, "
    "address text NOT NULL, lease_expires timestamptz NOT NULL, size bigint NOT NULL, root bytea NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ledger_batches (origin text NOT NULL, first_seq bigint NOT NULL, epoch bigint NOT "
    "NULL, size bigint NOT NULL, root bytea NOT NULL, format smallint NOT NULL, leaves bytea NOT NULL, PRIMARY KEY "
    "(origin, first_seq))",
    "CREATE TABLE IF NOT EXISTS ledger_checkpoints (origin text NOT NULL, size bigint NOT NULL, epoch bigint NOT NULL, "
    "note text NOT NULL, time_note text NOT NULL, PRIMARY KEY (origin, size))",
    "CREATE TABLE IF NOT EXISTS ledger_nodes (origin text NOT NULL, node text NOT NULL, address text NOT NULL, "
    "applied bigint NOT NULL, reported_at timestamptz NOT NULL, PRIMARY KEY (origin, node))",
    "CREATE TABLE IF NOT EXISTS ledger_cosignatures (origin text NOT NULL, witness text NOT NULL, size bigint NOT "
    "NULL, line text NOT NULL, PRIMARY KEY (origin, witness))",
};

constexpr char kFenceColumns[] =
    "epoch, holder, address, lease_expires > clock_timestamp(), "
    "floor(extract(epoch from lease_expires - clock_timestamp()) * 1000)::bigint, size, encode(root, 'hex')";

absl::StatusOr<uint64_t> Unsigned(const std::optional<std::string>& v, const char* what) {
  uint64_t n = 0;
  if (!v.has_value() || !absl::SimpleAtoi(*v, &n)) {
    return absl::DataLossError(absl::StrCat("replication database: ", what, " is not a count"));
  }
  return n;
}

}  // namespace

std::string EncodeLeaves(const std::vector<std::string>& leaves) {
  size_t total = 0;
  for (const std::string& l : leaves) total += 4 + l.size();
  std::string out;
  out.reserve(total);
  for (const std::string& l : leaves) {
    const auto n = static_cast<uint32_t>(l.size());
    for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>(n >> (8 * i)));
    out.append(l);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> DecodeLeaves(std::string_view bytes) {
  std::vector<std::string> leaves;
  while (!bytes.empty()) {
    if (bytes.size() < 4) return absl::DataLossError("batch leaves: a length is cut short");
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
    bytes.remove_prefix(4);
    if (bytes.size() < n) return absl::DataLossError("batch leaves: a leaf is cut short");
    leaves.emplace_back(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
  return leaves;
}

absl::StatusOr<std::unique_ptr<ShardLog>> ShardLog::Open(Options options) {
  auto conn = pg::Connection::Open(options.uri, options.password, options.timeout);
  if (!conn.ok()) return conn.status();
  auto log = std::unique_ptr<ShardLog>(new ShardLog(std::move(options), *std::move(conn)));
  if (auto s = log->CreateSchema(); !s.ok()) return s;
  return log;
}

// CREATE TABLE IF NOT EXISTS is not safe against a concurrent CREATE of the
// same table (PostgreSQL fails one of them on the catalog: "type ... already
// exists"), so nodes starting together take turns: one transaction, under a
// transaction-scoped advisory lock, creates what is missing.
absl::Status ShardLog::CreateSchema() {
  if (auto r = Exec("BEGIN", {}); !r.ok()) return r.status();
  absl::Status status = Exec("SELECT pg_advisory_xact_lock(hashtext('evidence-ledger schema'))", {}).status();
  for (const char* sql : kSchema) {
    if (!status.ok()) break;
    status = Exec(sql, {}).status();
  }
  if (status.ok()) status = Exec("COMMIT", {}).status();
  if (!status.ok()) (void)Exec("ROLLBACK", {});
  return status;
}

absl::Status ShardLog::EnsureConnected() {
  if (conn_->ok()) return absl::OkStatus();
  if (auto s = conn_->Reconnect(options_.timeout); !s.ok()) return s;
  if (listening_) {
    listening_ = false;
    return Listen();
  }
  return absl::OkStatus();
}

absl::StatusOr<pg::Result> ShardLog::Exec(std::string_view sql, const std::vector<pg::Param>& params, bool binary) {
  if (auto s = EnsureConnected(); !s.ok()) return s;
  return conn_->Exec(sql, params, options_.timeout, binary);
}

absl::StatusOr<Fence> ShardLog::FenceOf(const pg::Result& r) {
  if (r.rows.size() != 1 || r.rows[0].size() != 7) {
    return absl::FailedPreconditionError(
        absl::StrCat("replication database: no fence for origin '", options_.origin, "'"));
  }
  const auto& row = r.rows[0];
  Fence f;
  if (!row[0] || !absl::SimpleAtoi(*row[0], &f.epoch) || !row[4] || !absl::SimpleAtoi(*row[4], &f.lease_left_ms)) {
    return absl::DataLossError("replication database: the fence's epoch or lease is not a number");
  }
  f.holder = row[1].value_or("");
  f.address = row[2].value_or("");
  f.lease_live = row[3].value_or("f") == "t";
  auto size = Unsigned(row[5], "the fence's size");
  if (!size.ok()) return size.status();
  f.size = *size;
  auto root = hash::ParseHex(row[6].value_or(""));
  if (!root.ok()) return absl::DataLossError("replication database: the fence's root is not a hash");
  f.root = *root;
  return f;
}

absl::StatusOr<Fence> ShardLog::Init(uint64_t size, const hash::Hash& root) {
  auto r = Exec(
      "INSERT INTO ledger_shard (origin, epoch, holder, address, lease_expires, size, root) "
      "VALUES ($1, 0, '', '', to_timestamp(0), $2, decode($3, 'hex')) ON CONFLICT (origin) DO NOTHING",
      {pg::Param::Text(options_.origin), pg::Param::Int(static_cast<int64_t>(size)), pg::Param::Text(hash::Hex(root))});
  if (!r.ok()) return r.status();
  return Read();
}

absl::StatusOr<Fence> ShardLog::Read() {
  auto r = Exec(absl::StrCat("SELECT ", kFenceColumns, " FROM ledger_shard WHERE origin = $1"),
                {pg::Param::Text(options_.origin)});
  if (!r.ok()) return r.status();
  return FenceOf(*r);
}

absl::StatusOr<std::optional<Fence>> ShardLog::TakeOver(const std::string& node, const std::string& address,
                                                        std::chrono::milliseconds lease) {
  auto r = Exec(absl::StrCat("UPDATE ledger_shard SET epoch = epoch + 1, holder = $2, address = $3, "
                             "lease_expires = clock_timestamp() + $4 * interval '1 millisecond' "
                             "WHERE origin = $1 AND (holder = '' OR holder = $2 OR lease_expires < clock_timestamp()) "
                             "RETURNING ",
                             kFenceColumns),
                {pg::Param::Text(options_.origin), pg::Param::Text(node), pg::Param::Text(address),
                 pg::Param::Int(lease.count())});
  if (!r.ok()) return r.status();
  if (r->rows.empty()) return std::nullopt;
  if (!r->warnings.empty()) {
    return absl::UnavailableError(absl::StrCat("take-over: the database answered with a warning: ", r->warnings[0]));
  }
  return FenceOf(*r);
}

absl::Status ShardLog::Renew(int64_t epoch, const std::string& node, std::chrono::milliseconds lease) {
  auto r = Exec(
      "UPDATE ledger_shard SET lease_expires = clock_timestamp() + $3 * interval '1 millisecond' "
      "WHERE origin = $1 AND epoch = $2 AND holder = $4",
      {pg::Param::Text(options_.origin), pg::Param::Int(epoch), pg::Param::Int(lease.count()), pg::Param::Text(node)});
  if (!r.ok()) return r.status();
  if (r->affected != 1) {
    return absl::FailedPreconditionError(absl::StrCat("lease: epoch ", epoch, " is over; another node leads"));
  }
  return absl::OkStatus();
}

absl::Status ShardLog::Release(int64_t epoch, const std::string& node) {
  auto r =
      Exec("UPDATE ledger_shard SET lease_expires = to_timestamp(0) WHERE origin = $1 AND epoch = $2 AND holder = $3",
           {pg::Param::Text(options_.origin), pg::Param::Int(epoch), pg::Param::Text(node)});
  return r.status();
}

absl::Status ShardLog::Commit(int64_t epoch, const sequencer::ReplicatedBatch& batch) {
  auto r = Exec(
      "WITH fence AS (UPDATE ledger_shard SET size = $3, root = $4 WHERE origin = $1 AND epoch = $2 AND size = $5 "
      "RETURNING 1), ins AS (INSERT INTO ledger_batches (origin, first_seq, epoch, size, root, format, leaves) "
      "SELECT $1, $5, $2, $3, $4, 1, $6 FROM fence RETURNING first_seq) "
      "SELECT pg_notify('ledger_batches', $1) FROM ins",
      {pg::Param::Text(options_.origin), pg::Param::Int(epoch), pg::Param::Int(static_cast<int64_t>(batch.size)),
       pg::Param::Bytes(std::string(batch.root.begin(), batch.root.end())),
       pg::Param::Int(static_cast<int64_t>(batch.first_seq)), pg::Param::Bytes(EncodeLeaves(*batch.leaves))});
  const std::string range = absl::StrCat("batch [", batch.first_seq, ", ", batch.size, ")");
  if (!r.ok()) return absl::Status(r.status().code(), absl::StrCat(range, ": ", r.status().message()));
  if (!r->warnings.empty()) {
    // A commit whose wait for the standby ended early: committed on this
    // server only, and possibly never on the one that takes its place.
    return absl::UnavailableError(absl::StrCat(range,
                                               ": the commit came back with a warning, so it may not be on the "
                                               "synchronous standby: ",
                                               r->warnings[0]));
  }
  if (r->rows.size() == 1) return absl::OkStatus();
  auto fence = Read();
  if (!fence.ok()) return absl::FailedPreconditionError(absl::StrCat(range, ": the fence moved"));
  return absl::FailedPreconditionError(absl::StrCat(range, " of epoch ", epoch, ": the fence is at epoch ",
                                                    fence->epoch, " (", fence->holder, "), size ", fence->size));
}

absl::StatusOr<std::vector<StoredBatch>> ShardLog::Batches(uint64_t from, size_t max_bytes) {
  auto r = Exec(
      "SELECT first_seq, epoch, size, root, format, leaves FROM ledger_batches "
      "WHERE origin = $1 AND first_seq >= $2 ORDER BY first_seq LIMIT 64",
      {pg::Param::Text(options_.origin), pg::Param::Int(static_cast<int64_t>(from))}, /*binary=*/true);
  if (!r.ok()) return r.status();
  std::vector<StoredBatch> out;
  size_t bytes = 0;
  for (const auto& row : r->rows) {
    StoredBatch b;
    auto first = pg::BinaryInt64(row[0]);
    auto epoch = pg::BinaryInt64(row[1]);
    auto size = pg::BinaryInt64(row[2]);
    if (!first.ok() || !epoch.ok() || !size.ok()) return absl::DataLossError("replication database: a batch's seqs");
    if (!row[3] || row[3]->size() != 32) return absl::DataLossError("replication database: a batch's root");
    if (!row[4] || row[4]->size() != 2 || (*row[4])[0] != 0 || (*row[4])[1] != kBatchFormat) {
      return absl::FailedPreconditionError(absl::StrCat("replication database: batch at ", *first,
                                                        " is of a format this version does not read (it reads 1)"));
    }
    b.first_seq = static_cast<uint64_t>(*first);
    b.epoch = *epoch;
    b.size = static_cast<uint64_t>(*size);
    std::copy(row[3]->begin(), row[3]->end(), b.root.begin());
    auto leaves = DecodeLeaves(row[5].value_or(""));
    if (!leaves.ok()) return leaves.status();
    if (leaves->size() != b.size - b.first_seq) {
      return absl::DataLossError(absl::StrCat("replication database: batch at ", b.first_seq, " holds ", leaves->size(),
                                              " leaves for ", b.size - b.first_seq, " entries"));
    }
    b.leaves = *std::move(leaves);
    bytes += row[5]->size();
    out.push_back(std::move(b));
    if (bytes >= max_bytes) break;
  }
  return out;
}

absl::StatusOr<std::optional<uint64_t>> ShardLog::FirstKept() {
  auto r = Exec("SELECT min(first_seq) FROM ledger_batches WHERE origin = $1", {pg::Param::Text(options_.origin)});
  if (!r.ok()) return r.status();
  if (r->rows.empty() || !r->rows[0][0].has_value()) return std::nullopt;
  auto n = Unsigned(r->rows[0][0], "the first kept seq");
  if (!n.ok()) return n.status();
  return *n;
}

absl::Status ShardLog::PutCheckpoint(int64_t epoch, uint64_t size, const std::string& note,
                                     const std::string& time_note) {
  auto r = Exec(
      "INSERT INTO ledger_checkpoints (origin, size, epoch, note, time_note) "
      "SELECT $1, $2, $3, $4, $5 FROM ledger_shard WHERE origin = $1 AND epoch = $3 AND size >= $2 "
      "ON CONFLICT (origin, size) DO UPDATE SET time_note = EXCLUDED.time_note, epoch = EXCLUDED.epoch "
      "WHERE ledger_checkpoints.note = EXCLUDED.note",
      {pg::Param::Text(options_.origin), pg::Param::Int(static_cast<int64_t>(size)), pg::Param::Int(epoch),
       pg::Param::Text(note), pg::Param::Text(time_note)});
  if (!r.ok()) return r.status();
  if (!r->warnings.empty()) {
    return absl::UnavailableError(
        absl::StrCat("checkpoint of size ", size, ": the commit came back with a warning: ", r->warnings[0]));
  }
  if (r->affected != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint of size ", size, ": epoch ", epoch, " is over, or the shard holds another note"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StoredCheckpoint>> ShardLog::Checkpoints(uint64_t after, uint64_t upto) {
  auto r = Exec(
      "SELECT size, epoch, note, time_note FROM ledger_checkpoints WHERE origin = $1 AND size > $2 AND size <= $3 "
      "ORDER BY size",
      {pg::Param::Text(options_.origin), pg::Param::Int(static_cast<int64_t>(after)),
       pg::Param::Int(static_cast<int64_t>(upto))});
  if (!r.ok()) return r.status();
  std::vector<StoredCheckpoint> out;
  for (const auto& row : r->rows) {
    StoredCheckpoint c;
    auto size = Unsigned(row[0], "a checkpoint's size");
    if (!size.ok()) return size.status();
    c.size = *size;
    if (!row[1] || !absl::SimpleAtoi(*row[1], &c.epoch)) return absl::DataLossError("a checkpoint's epoch");
    c.note = row[2].value_or("");
    c.time_note = row[3].value_or("");
    out.push_back(std::move(c));
  }
  return out;
}

absl::Status ShardLog::PutCosignature(const StoredCosignature& c) {
  auto r = Exec(
      "INSERT INTO ledger_cosignatures (origin, witness, size, line) VALUES ($1, $2, $3, $4) "
      "ON CONFLICT (origin, witness) DO UPDATE SET size = EXCLUDED.size, line = EXCLUDED.line "
      "WHERE ledger_cosignatures.size <= EXCLUDED.size",
      {pg::Param::Text(options_.origin), pg::Param::Text(c.witness), pg::Param::Int(static_cast<int64_t>(c.size)),
       pg::Param::Text(c.line)});
  return r.status();
}

absl::StatusOr<std::vector<StoredCosignature>> ShardLog::Cosignatures() {
  auto r = Exec("SELECT witness, size, line FROM ledger_cosignatures WHERE origin = $1 ORDER BY witness",
                {pg::Param::Text(options_.origin)});
  if (!r.ok()) return r.status();
  std::vector<StoredCosignature> out;
  for (const auto& row : r->rows) {
    StoredCosignature c;
    c.witness = row[0].value_or("");
    auto size = Unsigned(row[1], "a cosignature's size");
    if (!size.ok()) return size.status();
    c.size = *size;
    c.line = row[2].value_or("");
    out.push_back(std::move(c));
  }
  return out;
}

absl::Status ShardLog::Report(const std::string& node, const std::string& address, uint64_t applied) {
  auto r = Exec(
      "INSERT INTO ledger_nodes (origin, node, address, applied, reported_at) VALUES ($1, $2, $3, $4, "
      "clock_timestamp()) ON CONFLICT (origin, node) DO UPDATE SET address = EXCLUDED.address, applied = "
      "EXCLUDED.applied, reported_at = EXCLUDED.reported_at",
      {pg::Param::Text(options_.origin), pg::Param::Text(node), pg::Param::Text(address),
       pg::Param::Int(static_cast<int64_t>(applied))});
  return r.status();
}

absl::StatusOr<std::vector<NodeReport>> ShardLog::Nodes() {
  auto r = Exec(
      "SELECT node, address, applied, extract(epoch from clock_timestamp() - reported_at)::float8 FROM ledger_nodes "
      "WHERE origin = $1 ORDER BY node",
      {pg::Param::Text(options_.origin)});
  if (!r.ok()) return r.status();
  std::vector<NodeReport> out;
  for (const auto& row : r->rows) {
    NodeReport n;
    n.node = row[0].value_or("");
    n.address = row[1].value_or("");
    auto applied = Unsigned(row[2], "a node's applied size");
    if (!applied.ok()) return applied.status();
    n.applied = *applied;
    if (row[3]) (void)absl::SimpleAtod(*row[3], &n.seconds_ago);
    out.push_back(std::move(n));
  }
  return out;
}

absl::StatusOr<uint64_t> ShardLog::Trim(std::chrono::seconds grace) {
  const std::string bound =
      "LEAST((SELECT coalesce(min(applied), 0) FROM ledger_nodes WHERE origin = $1 AND reported_at > "
      "clock_timestamp() - $2 * interval '1 second'), (SELECT coalesce(max(size), 0) FROM ledger_checkpoints WHERE "
      "origin = $1))";
  const std::vector<pg::Param> params{pg::Param::Text(options_.origin), pg::Param::Int(grace.count())};
  auto batches = Exec(absl::StrCat("DELETE FROM ledger_batches WHERE origin = $1 AND size <= ", bound), params);
  if (!batches.ok()) return batches.status();
  auto checkpoints = Exec(absl::StrCat("DELETE FROM ledger_checkpoints WHERE origin = $1 AND size < ", bound), params);
  if (!checkpoints.ok()) return checkpoints.status();
  return batches->affected;
}

absl::StatusOr<ShardLog::TailSize> ShardLog::Tail() {
  auto r = Exec("SELECT count(*), pg_total_relation_size('ledger_batches') FROM ledger_batches WHERE origin = $1",
                {pg::Param::Text(options_.origin)});
  if (!r.ok()) return r.status();
  TailSize t;
  auto n = Unsigned(r->rows[0][0], "the batch count");
  auto b = Unsigned(r->rows[0][1], "the batches' size");
  if (!n.ok() || !b.ok()) return absl::DataLossError("replication database: the tail's size");
  t.batches = *n;
  t.bytes = *b;
  return t;
}

absl::Status ShardLog::Listen() {
  auto r = Exec("LISTEN ledger_batches", {});
  if (r.ok()) listening_ = true;
  return r.status();
}

absl::StatusOr<bool> ShardLog::WaitNotify(std::chrono::milliseconds timeout) {
  if (auto s = EnsureConnected(); !s.ok()) return s;
  return conn_->WaitNotify(timeout);
}

}  // namespace ledger::replication
