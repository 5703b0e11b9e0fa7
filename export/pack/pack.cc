#include "export/pack/pack.h"

#include <archive.h>
#include <archive_entry.h>
#include <malloc.h>
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "export/gzip/blocked_gzip.h"
#include "export/pack/internal/report_html.h"
#include "export/pack/internal/step_notes.h"
#include "export/pack/team_window.h"
#include "ledger/format/hash/hash.h"
#include "ledger/format/receipt/entry.h"
#include "query/projector/keys.h"
#include "query/projector/projector.h"

namespace ledger::pack {
namespace {

struct ArchiveCloser {
  void operator()(archive* a) const { archive_write_free(a); }
};
struct ReaderCloser {
  void operator()(archive* a) const { archive_read_free(a); }
};

absl::Status ArchiveError(archive* a, std::string_view what) {
  const char* msg = archive_error_string(a);
  return absl::InvalidArgumentError(absl::StrCat("pack: ", std::string(what), ": ", msg ? msg : "unknown error"));
}

// The gzip around the tar (export/gzip). libarchive writes the tar: each
// header, and the padding after each file's content; plain content goes
// through it, while content already compressed is spliced in as its members
// and libarchive is given as many zero bytes, which are swallowed here.
struct ArchiveSink {
  gzip::Writer* gzip;
  uint64_t swallow = 0;
};

la_ssize_t SinkWrite(archive*, void* data, const void* bytes, size_t n) {
  auto* sink = static_cast<ArchiveSink*>(data);
  std::string_view in(static_cast<const char*>(bytes), n);
  size_t skipped = static_cast<size_t>(std::min<uint64_t>(sink->swallow, n));
  sink->swallow -= skipped;
  in.remove_prefix(skipped);
  if (!in.empty()) sink->gzip->Write(in);
  return static_cast<la_ssize_t>(n);
}

}  // namespace

absl::Status WriteArchive(const std::map<std::string, std::string>& files, const std::string& out_path) {
  std::map<std::string, ArchiveFile> plain;
  for (const auto& [name, path] : files) plain[name] = ArchiveFile{path};
  return WriteArchive(plain, out_path);
}

absl::Status WriteArchive(const std::map<std::string, ArchiveFile>& files, const std::string& out_path) {
  gzip::Writer gz(out_path);
  ArchiveSink sink{&gz};
  std::unique_ptr<archive, ArchiveCloser> a(archive_write_new());
  if (archive_write_set_format_ustar(a.get()) != ARCHIVE_OK ||
      archive_write_set_bytes_per_block(a.get(), 0) != ARCHIVE_OK ||
      archive_write_open(a.get(), &sink, nullptr, SinkWrite, nullptr) != ARCHIVE_OK) {
    return ArchiveError(a.get(), "create " + out_path);
  }
  std::vector<char> buf(1 << 16);
  for (const auto& [name, file] : files) {  // std::map: sorted names
    int64_t size = static_cast<int64_t>(file.compressed_size);
    std::ifstream in;
    if (!file.compressed) {
      in.open(file.path, std::ios::binary | std::ios::ate);
      if (!in) return absl::UnavailableError(absl::StrCat("pack: cannot read ", file.path));
      size = in.tellg();
      in.seekg(0);
    }
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(e.get(), absl::StrCat(kTopFolder, "/", name).c_str());
    archive_entry_set_filetype(e.get(), AE_IFREG);
    archive_entry_set_perm(e.get(), 0644);
    archive_entry_set_size(e.get(), size);
    archive_entry_set_mtime(e.get(), 0, 0);
    archive_entry_set_uid(e.get(), 0);
    archive_entry_set_gid(e.get(), 0);
    if (archive_write_header(a.get(), e.get()) != ARCHIVE_OK) {
      return ArchiveError(a.get(), "write header of " + name);
    }
    if (file.compressed) {
      if (auto s = gz.Splice(file.path); !s.ok()) return s;
      sink.swallow = file.compressed_size;
      std::fill(buf.begin(), buf.end(), 0);
      for (uint64_t left = file.compressed_size; left > 0;) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
        if (archive_write_data(a.get(), buf.data(), n) != static_cast<la_ssize_t>(n)) {
          return ArchiveError(a.get(), "write " + name);
        }
        left -= n;
      }
      if (sink.swallow != 0) return absl::InternalError("pack: libarchive did not write the content it was given");
      continue;
    }
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      std::streamsize n = in.gcount();
      if (n > 0 && archive_write_data(a.get(), buf.data(), static_cast<size_t>(n)) != n) {
        return ArchiveError(a.get(), "write " + name);
      }
    }
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) return ArchiveError(a.get(), "close");
  return gz.Finish();
}

namespace {

// libarchive's read callback over blocked gzip: the next inflated piece.
la_ssize_t InflatedRead(archive* a, void* gzip, const void** buffer) {
  auto piece = static_cast<gzip::Reader*>(gzip)->Next();
  if (!piece.ok()) {
    archive_set_error(a, EINVAL, "%s", std::string(piece.status().message()).c_str());
    return -1;
  }
  *buffer = piece->data();
  return static_cast<la_ssize_t>(piece->size());
}

}  // namespace

absl::StatusOr<std::unique_ptr<PackReader>> PackReader::Open(const std::string& pack_path, const Limits& limits) {
  std::unique_ptr<PackReader> r(new PackReader(pack_path, limits));
  std::string head(gzip::kHeaderBytes, '\0');
  {
    std::ifstream in(pack_path, std::ios::binary);
    if (!in) return absl::InvalidArgumentError(absl::StrCat("pack: open ", pack_path, ": cannot read it"));
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
    in.seekg(0, std::ios::end);
    r->pack_file_bytes_ = in ? static_cast<uint64_t>(in.tellg()) : 0;
  }
  r->archive_ = archive_read_new();
  archive_read_support_format_tar(r->archive_);
  int rc;
  if (gzip::IsBlocked(head)) {
    auto gz = gzip::Reader::Open(pack_path);
    if (!gz.ok())
      return absl::InvalidArgumentError(absl::StrCat("pack: open ", pack_path, ": ", gz.status().message()));
    r->gzip_ = *std::move(gz);
    rc = archive_read_open(r->archive_, r->gzip_.get(), nullptr, InflatedRead, nullptr);
  } else {
    archive_read_support_filter_gzip(r->archive_);
    rc = archive_read_open_filename(r->archive_, pack_path.c_str(), 1 << 16);
  }
  if (rc != ARCHIVE_OK) return ArchiveError(r->archive_, "open " + pack_path);
  return r;
}

uint64_t PackReader::bytes_read() const {
  if (gzip_ != nullptr) return gzip_->offset();
  const la_int64_t n = archive_filter_bytes(archive_, -1);
  return n > 0 ? static_cast<uint64_t>(n) : 0;
}

PackReader::~PackReader() {
  if (archive_ != nullptr) archive_read_free(archive_);
}

absl::StatusOr<std::optional<std::string>> PackReader::Next() {
  while (true) {
    archive_entry* e = nullptr;
    int rc = archive_read_next_header(archive_, &e);
    if (rc == ARCHIVE_EOF) {
      if (auto s = CheckEnd(); !s.ok()) return s;
      return std::nullopt;
    }
    if (rc != ARCHIVE_OK) return ArchiveError(archive_, "read");
    auto name = Member(e);
    if (!name.ok() || name->has_value()) return name;
  }
}

absl::StatusOr<std::optional<std::string>> PackReader::Member(archive_entry* e) {
  static const std::set<std::string> kKnown = {kCheckpoint, kCheckpointTime, kConsistency, kEntries,
                                               kVkey,       kManifest,       kManifestSig, kOutcomes,
                                               kProofs,     kReport,         kRunHead,     kTeamWindow,
                                               kMultiproof, kRedactions,     kRetention,   kRetentionPolicy};
  const char* raw = archive_entry_pathname(e);
  std::string path = raw ? raw : "";
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("pack: entry '", path, "': ", std::string(why)));
  };
  // The top folder's own entry, "evidence" or "evidence/", first.
  const size_t slash = path.find('/');
  const bool top_dir = archive_entry_filetype(e) == AE_IFDIR && last_path_.empty() && !path.empty() &&
                       (slash == std::string::npos || slash == path.size() - 1);
  if (archive_entry_filetype(e) != AE_IFREG && !top_dir) return bad("not a regular file");
  if (path.empty() || path[0] == '/') return bad("absolute or empty name");
  if (!top_dir && (slash == std::string::npos || path.find('/', slash + 1) != std::string::npos)) {
    return bad("not a file directly in the top folder");
  }
  std::string folder = path.substr(0, slash), name = top_dir ? "" : path.substr(slash + 1);
  if (folder == ".." || folder == "." || name == ".." || name == ".") return bad("'..' or '.'");
  if (top_.empty()) top_ = folder;
  if (folder != top_) return bad("a second top folder");
  if (!top_dir && !kKnown.count(name)) return bad("not a file of an evidence pack");
  if (seen_.count(name)) return bad("duplicate name");
  if (path <= last_path_) return bad(absl::StrCat("not in sorted name order: it follows '", last_path_, "'"));
  const unsigned mode = archive_entry_perm(e), want = top_dir ? 0755 : 0644;
  if (mode != want) {
    char octal[16];
    std::snprintf(octal, sizeof octal, "%04o", mode);
    return bad(absl::StrCat("mode ", octal, ", want ", top_dir ? "0755" : "0644"));
  }
  if (archive_entry_mtime(e) != 0 || archive_entry_mtime_nsec(e) != 0) {
    return bad(absl::StrCat("mtime ", archive_entry_mtime(e), ", want 0"));
  }
  last_path_ = path;
  if (top_dir) return std::nullopt;
  if (static_cast<int>(seen_.size()) >= limits_.max_files) return bad("too many files");
  int64_t declared = archive_entry_size(e);
  if (declared < 0 || static_cast<uint64_t>(declared) > limits_.max_file_bytes) {
    return bad("larger than the limit");
  }
  seen_.insert(name);
  name_ = path;
  file_bytes_ = 0;
  return name;
}

namespace {

// A plain gzip file (not blocked, read by libarchive, which stops at the
// tar's end and skips what follows the last member): its members inflated
// again, each CRC checked, and nothing after the last.
absl::Status PlainGzipEndsWithItsLastMember(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("pack: open ", path, ": cannot read it"));
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return absl::InternalError("pack: zlib: cannot start inflating");
  std::vector<unsigned char> input(1 << 16), output(1 << 16);
  absl::Status status;
  uint64_t offset = 0;  // of the byte at z.next_in in the file
  auto refill = [&] {
    in.read(reinterpret_cast<char*>(input.data()), static_cast<std::streamsize>(input.size()));
    z.next_in = input.data();
    z.avail_in = static_cast<uInt>(in.gcount());
    return z.avail_in > 0;
  };
  if (!refill()) return absl::InvalidArgumentError("pack: gzip: empty");
  while (true) {
    z.next_out = output.data();
    z.avail_out = static_cast<uInt>(output.size());
    const uInt before = z.avail_in;
    int rc = inflate(&z, Z_NO_FLUSH);
    offset += before - z.avail_in;
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0 && !refill()) break;
      // Another member may follow (RFC 1952 section 2.2); nothing else may.
      if (z.next_in[0] != 0x1f || (z.avail_in > 1 && z.next_in[1] != 0x8b)) {
        status = absl::InvalidArgumentError(absl::StrCat("pack: bytes after the gzip stream, at byte ", offset));
        break;
      }
      inflateReset(&z);
      continue;
    }
    if (rc != Z_OK && !(rc == Z_BUF_ERROR && z.avail_in == 0)) {
      status = absl::InvalidArgumentError(absl::StrCat("pack: gzip: bad data at byte ", offset));
      break;
    }
    if (z.avail_in == 0 && !refill()) {
      status = absl::InvalidArgumentError("pack: gzip: the last member is cut short");
      break;
    }
  }
  inflateEnd(&z);
  return status;
}

}  // namespace

absl::Status PackReader::CheckEnd() {
  if (gzip_ == nullptr) return PlainGzipEndsWithItsLastMember(pack_path_);
  // Blocked members to the end: what libarchive left unread is read here,
  // and a byte that does not start a member is refused.
  while (true) {
    auto piece = gzip_->Next();
    if (!piece.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pack: bytes after the gzip stream (", piece.status().message(), ")"));
    }
    if (piece->empty()) return absl::OkStatus();
  }
}

absl::StatusOr<std::string_view> PackReader::Read() {
  // libarchive's own buffer, not a copy: the verifier reads 2 GB a million
  // entries.
  const void* data = nullptr;
  size_t n = 0;
  la_int64_t offset = 0;
  do {
    int r = archive_read_data_block(archive_, &data, &n, &offset);
    if (r == ARCHIVE_EOF) return std::string_view();
    if (r != ARCHIVE_OK) return ArchiveError(archive_, "read " + name_);
  } while (n == 0);
  if (offset < 0 || static_cast<uint64_t>(offset) != file_bytes_) {
    return absl::InvalidArgumentError(absl::StrCat("pack: entry '", name_, "': a sparse file"));
  }
  file_bytes_ += n;
  total_bytes_ += n;
  if (file_bytes_ > limits_.max_file_bytes || total_bytes_ > limits_.max_total_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("pack: entry '", name_, "': larger than the limit"));
  }
  return std::string_view(static_cast<const char*>(data), n);
}

absl::StatusOr<std::map<std::string, std::string>> ExtractArchive(const std::string& pack_path, const std::string& dir,
                                                                  const Limits& limits,
                                                                  std::map<std::string, std::string>* digests) {
  auto reader = PackReader::Open(pack_path, limits);
  if (!reader.ok()) return reader.status();
  std::map<std::string, std::string> out;
  while (true) {
    auto name = (*reader)->Next();
    if (!name.ok()) return name.status();
    if (!name->has_value()) return out;
    std::string dest = dir + "/" + **name;
    std::ofstream f(dest, std::ios::binary | std::ios::trunc);
    if (!f) return absl::UnavailableError(absl::StrCat("pack: cannot write ", dest));
    hash::Sha256Stream sha;
    while (true) {
      auto piece = (*reader)->Read();
      if (!piece.ok()) return piece.status();
      if (piece->empty()) break;
      f.write(piece->data(), static_cast<std::streamsize>(piece->size()));
      if (digests != nullptr) sha.Update(*piece);
    }
    f.close();
    if (!f) return absl::UnavailableError(absl::StrCat("pack: cannot write ", dest));
    if (digests != nullptr) (*digests)[**name] = hash::Hex(sha.Final());
    out[**name] = dest;
  }
}

Outcomes::Outcomes(size_t spill_bytes, std::string spill_parent)
    : spill_bytes_(spill_bytes),
      spill_parent_(std::move(spill_parent)),
      txn_(std::make_unique<projection::OverlayTxn>(nullptr, nullptr, &discard_)) {}

Outcomes::~Outcomes() {
  // The run being written reads spilling_ and writes into spill_dir_.
  FinishSpill().IgnoreError();
}

size_t Outcomes::spilled_runs() const { return (runs_ ? runs_->runs() : 0) + (spilling_ ? 1 : 0); }

absl::Status Outcomes::Add(receipt::Entry entry) {
  notes_.reset();
  pending_.push_back(std::move(entry));
  if (pending_.size() >= 10'000) return Flush();
  return absl::OkStatus();
}

absl::Status Outcomes::Flush() {
  absl::Status s = Project(pending_);
  pending_.clear();
  return s;
}

absl::Status Outcomes::Project(absl::Span<const receipt::Entry> entries) {
  if (!pending_.empty() && entries.data() != pending_.data()) {
    if (auto s = Flush(); !s.ok()) return s;
  }
  if (entries.empty()) return absl::OkStatus();
  notes_.reset();
  for (const auto& e : entries) report_entries_.Add(e);
  std::vector<projection::Entry> views;
  views.reserve(entries.size());
  for (const auto& e : entries) views.push_back({e.seq, e.logged_at_us, e.emitter, &e.receipt, e.erased});
  query::StepProjector projector;
  if (auto s = projector.Apply(views, *txn_); !s.ok()) return s;
  return MaybeSpill();
}

absl::Status Outcomes::MaybeSpill() {
  if (txn_->bytes() < spill_bytes_) return absl::OkStatus();
  if (auto s = FinishSpill(); !s.ok()) return s;
  if (!runs_) {
    spill_dir_ = spill_parent_.empty() ? std::make_unique<ScratchDir>("ledger-outcomes")
                                       : std::make_unique<ScratchDir>(spill_parent_, "ledger-outcomes");
    if (spill_dir_->path().empty()) return absl::UnavailableError("outcomes: cannot create a temporary directory");
    runs_ = std::make_unique<SpillRuns>(spill_dir_->path());
  }
  // Sorting and writing the run took the projecting thread tens of
  // milliseconds a run, while the entries after it waited: it is written
  // on a thread of its own, and its records are read from memory (the new
  // overlay's base) until FinishSpill adds it. Nothing changes them
  // meanwhile: both threads only read them.
  spilling_ = std::move(txn_);
  spilled_ = std::async(std::launch::async, [writes = &spilling_->writes(), path = runs_->NextRunPath()] {
    return SpillRuns::Write(*writes, path);
  });
  SpillRuns* runs = runs_.get();
  txn_ = std::make_unique<projection::OverlayTxn>(
      spilling_.get(), [runs](projection::Table t, std::string_view key) { return runs->Get(t, key); }, &discard_);
  return absl::OkStatus();
}

absl::Status Outcomes::FinishSpill() {
  if (!spilling_) return absl::OkStatus();
  absl::StatusOr<SpillRuns::Run> run = spilled_.get();
  absl::Status added = run.ok() ? runs_->Insert(*std::move(run)) : run.status();
  txn_->DetachBase();
  spilling_.reset();
  // glibc keeps freed memory in its heaps; the records just freed are many
  // and small, scattered among buffers other threads hold. Hand the pages
  // back, or the process grows with the pack although its data does not.
  ::malloc_trim(0);
  return added;
}

namespace {

// The records of one projection table, sorted by key.
std::vector<const std::pair<const std::string, std::optional<std::string>>*> Sorted(const projection::OverlayTxn& txn,
                                                                                    projection::Table table) {
  std::vector<const std::pair<const std::string, std::optional<std::string>>*> rows;
  for (const auto& row : txn.writes()[static_cast<int>(table)]) rows.push_back(&row);
  std::sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  return rows;
}

}  // namespace

template <typename Record>
absl::Status Outcomes::ForEachRecord(projection::Table table, absl::FunctionRef<void(const Record&)> fn) {
  if (auto s = Flush(); !s.ok()) return s;
  if (auto s = FinishSpill(); !s.ok()) return s;
  Record record;
  auto each = [&](std::string_view, std::string_view value) -> absl::Status {
    if (!record.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      return absl::InternalError(absl::StrCat("outcomes: malformed ", projection::TableName(table), " record"));
    }
    fn(record);
    return absl::OkStatus();
  };
  if (runs_) return runs_->ForEach(table, txn_->writes()[static_cast<int>(table)], each);
  for (const auto* row : Sorted(*txn_, table)) {
    if (!row->second.has_value()) continue;
    if (auto s = each(row->first, *row->second); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Outcomes::ForEachStepRecord(absl::FunctionRef<void(const query::pb::Step&)> fn) {
  return ForEachRecord<query::pb::Step>(projection::Table::kSteps, fn);
}

absl::Status Outcomes::ForEachRunRecord(absl::FunctionRef<void(const query::pb::Run&)> fn) {
  return ForEachRecord<query::pb::Run>(projection::Table::kRuns, fn);
}

namespace {

bool PendingWithStart(const query::pb::Step& s) { return s.state() == query::pb::STEP_STATE_PENDING && s.has_start(); }

// UnsettledSteps' line for `s`, or nullopt when it is settled.
std::optional<std::string> UnsettledLine(const query::pb::Step& s) {
  const bool pending = s.state() == query::pb::STEP_STATE_PENDING;
  if (!pending && s.state() != query::pb::STEP_STATE_UNKNOWN) return std::nullopt;
  // A step whose start or completion was erased is not "without a
  // completion": the erasure lines say what happened (CONTRACT section 8).
  if (std::find(s.anomalies().begin(), s.anomalies().end(), query::pb::ANOMALY_REDACTED) != s.anomalies().end()) {
    return std::nullopt;
  }
  return absl::StrCat(s.team(), "/", s.run_id(), "/", s.step_id(), " attempt ", s.attempt(),
                      pending ? " (pending)" : " (unknown)");
}

// StepNotes filled one step record at a time, in outcomes.json's order.
class NoteTaker {
 public:
  explicit NoteTaker(const ReportEntries& entries) : chooser_(entries) {
    notes_.pending.emplace();
    notes_.unsettled.emplace();
  }

  void Add(const query::pb::Step& s) {
    chooser_.Add(s);
    if (notes_.pending && PendingWithStart(s)) {
      int64_t t = s.timeout_at_us();
      if (!seen_pending_ || t < notes_.least_timeout_at_us) {
        if (notes_.pending->size() == StepNotes::kMaxPending) {
          notes_.pending.reset();
        } else {
          notes_.pending->push_back({s.team(), s.run_id(), s.step_id(), s.attempt(), t});
        }
      }
      seen_pending_ = true;
      notes_.least_timeout_at_us = std::min(notes_.least_timeout_at_us, t);
      notes_.greatest_timeout_at_us = std::max(notes_.greatest_timeout_at_us, t);
    }
    if (notes_.unsettled) {
      if (std::optional<std::string> line = UnsettledLine(s)) {
        if (notes_.unsettled->size() == StepNotes::kMaxUnsettled) {
          notes_.unsettled.reset();
        } else {
          notes_.unsettled->push_back(*std::move(line));
        }
      }
    }
  }

  std::unique_ptr<StepNotes> Finish() && {
    notes_.shown = std::move(chooser_).Finish();
    return std::make_unique<StepNotes>(std::move(notes_));
  }

 private:
  html::StepChooser chooser_;
  StepNotes notes_;
  bool seen_pending_ = false;
};

}  // namespace

absl::StatusOr<std::optional<OverdueStep>> FirstOverdueStep(Outcomes& outcomes, int64_t grace_us,
                                                            int64_t signed_at_us) {
  std::optional<OverdueStep> first;
  auto check = [&](std::string_view team, std::string_view run_id, std::string_view step_id, int64_t attempt,
                   int64_t timeout_at_us) {
    if (first) return;
    // A deadline past the range of int64 is past every signed time (and
    // one before it before every one): saturated, never overflowed.
    int64_t deadline;
    if (__builtin_add_overflow(timeout_at_us, grace_us, &deadline)) deadline = grace_us > 0 ? INT64_MAX : INT64_MIN;
    if (deadline < signed_at_us) {
      first = OverdueStep{std::string(team), std::string(run_id), std::string(step_id), attempt, deadline};
    }
  };
  // The noted steps hold the first overdue one while deadlines keep the
  // order of timeouts: while no timeout_at_us + grace_us overflows.
  const StepNotes* notes = outcomes.step_notes();
  if (notes != nullptr && notes->pending &&
      (grace_us >= 0 ? notes->greatest_timeout_at_us <= INT64_MAX - grace_us
                     : notes->least_timeout_at_us >= INT64_MIN - grace_us)) {
    for (const StepNotes::Pending& p : *notes->pending) check(p.team, p.run_id, p.step_id, p.attempt, p.timeout_at_us);
    return first;
  }
  absl::Status scanned = outcomes.ForEachStepRecord([&](const query::pb::Step& s) {
    if (PendingWithStart(s)) check(s.team(), s.run_id(), s.step_id(), s.attempt(), s.timeout_at_us());
  });
  if (!scanned.ok()) return scanned;
  return first;
}

absl::StatusOr<std::vector<std::string>> UnsettledSteps(Outcomes& outcomes) {
  if (const StepNotes* notes = outcomes.step_notes(); notes != nullptr && notes->unsettled) return *notes->unsettled;
  std::vector<std::string> steps;
  absl::Status scanned = outcomes.ForEachStepRecord([&](const query::pb::Step& s) {
    if (std::optional<std::string> line = UnsettledLine(s)) steps.push_back(*std::move(line));
  });
  if (!scanned.ok()) return scanned;
  return steps;
}

absl::Status Outcomes::Write(absl::FunctionRef<void(std::string_view)> out) {
  // Written straight from the records (query::AppendStepJson), handed on
  // a quarter megabyte at a time.
  std::string buf;
  // Each record's JSON, comma-separated, handed on every quarter megabyte.
  auto list = [&](auto for_each, auto append) -> absl::Status {
    bool first = true;
    return for_each([&](const auto& record) {
      if (!first) buf.push_back(',');
      first = false;
      append(record, &buf);
      if (buf.size() >= (1 << 18)) {
        out(buf);
        buf.clear();
      }
    });
  };
  notes_.reset();
  buf = "{\"runs\":[";
  absl::Status runs = list([&](auto fn) { return ForEachRunRecord(fn); }, query::AppendRunJson);
  if (!runs.ok()) return runs;
  buf += "],\"steps\":[";
  NoteTaker notes(report_entries_);
  absl::Status steps = list([&](auto fn) { return ForEachStepRecord(fn); },
                            [&](const query::pb::Step& s, std::string* json) {
                              query::AppendStepJson(s, json);
                              notes.Add(s);
                            });
  if (!steps.ok()) return steps;
  buf += "]}\n";
  out(buf);
  notes_ = std::move(notes).Finish();
  return absl::OkStatus();
}

namespace {

// The system's temporary directory, or "" when there is none (TMPDIR unset
// and no /tmp, as in a scratch image).
std::string TemporaryDirectory() {
  std::error_code ec;
  std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  return ec ? std::string() : tmp.string();
}

}  // namespace

ScratchDir::ScratchDir(const std::string& prefix) : ScratchDir(TemporaryDirectory(), prefix) {}

ScratchDir::ScratchDir(const std::string& parent, const std::string& prefix) {
  if (parent.empty()) return;
  std::string tmpl = parent + "/" + prefix + "-XXXXXX";
  if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

absl::StatusOr<std::string> FileSha256(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  hash::Sha256Stream sha;
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) sha.Update(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
  }
  return hash::Hex(sha.Final());
}

}  // namespace ledger::pack
