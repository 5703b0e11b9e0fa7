#include "export/pack/pack.h"

#include <archive.h>
#include <malloc.h>
#include <archive_entry.h>

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
#include "ledger/hash/hash.h"
#include "ledger/receipt/entry.h"
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
  return absl::InvalidArgumentError(
      absl::StrCat("pack: ", std::string(what), ": ", msg ? msg : "unknown error"));
}

std::string Dollars(int64_t micros) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "$%.6f", static_cast<double>(micros) / 1e6);
  return buf;
}

int64_t StepStart(const query::pb::Step& s) { return s.has_start() ? s.started_at_us() : s.first_at_us(); }

// The step's end on the timeline: its unknown declaration, its completion,
// or (pending) none.
int64_t StepEnd(const query::pb::Step& s) {
  if (s.has_unknown()) return s.unknown_at_us();
  if (s.has_completion()) return s.completed_at_us();
  return -1;
}

// Each step as a bar from its start to its completion or its unknown
// declaration, in ledger time, t0..t1 across. Inline SVG: no script, no
// external asset.
constexpr int kLabel = 220, kWidth = 700, kRow = 18;

void TimelineHead(int64_t steps, std::string* svg) {
  absl::StrAppend(svg, "<h2>Timeline</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"",
                  kLabel + kWidth + 90, "\" height=\"", steps * kRow + 24,
                  "\" role=\"img\" aria-label=\"step timeline\">\n");
}

void TimelineRow(const query::pb::Step& s, int64_t t0, int64_t t1, int row, std::string* svg) {
  double span = std::max<int64_t>(1, t1 - t0);
  auto x = [&](int64_t t) { return kLabel + static_cast<int>((t - t0) * kWidth / span); };
  std::string state = query::StateName(s.state());
  int64_t start = StepStart(s), end = StepEnd(s);
  bool open = end < 0;
  if (open) end = t1;
  const char* fill = state == "succeeded" ? "#4c9a2a"
                     : state == "failed"  ? "#d98b00"
                     : state == "unknown" ? "#c00000"
                     : state == "denied"  ? "#777777"
                                          : "#6a8fd0";
  int y = 8 + row * kRow;
  int x0 = x(start), w = std::max(3, x(end) - x0);
  absl::StrAppend(svg, "<text x=\"4\" y=\"", y + 12, "\" font-size=\"12\">",
                  HtmlEscape(s.run_id()), " / ", HtmlEscape(s.step_id()),
                  "</text><rect class=\"step ", HtmlEscape(state), "\" x=\"", x0, "\" y=\"", y + 2,
                  "\" width=\"", w, "\" height=\"12\" fill=\"", fill, "\"", open ? " fill-opacity=\"0.4\"" : "",
                  "><title>", HtmlEscape(s.step_id()), ": ",
                  state == "unknown" ? "UNKNOWN (no completion by the deadline)" : HtmlEscape(state),
                  "</title></rect>");
  if (state == "unknown") {
    absl::StrAppend(svg, "<text x=\"", x0 + w + 4, "\" y=\"", y + 12,
                    "\" font-size=\"12\" fill=\"#c00000\" font-weight=\"bold\">UNKNOWN</text>");
  }
  *svg += "\n";
}

void TimelineFoot(std::string* svg) {
  *svg += "</svg>\n<p>Green: succeeded; orange: failed; red: unknown; grey: denied; blue: pending "
          "(still open at the checkpoint). Time runs left to right in the ledger's clock.</p>\n";
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

absl::Status WriteArchive(const std::map<std::string, std::string>& files,
                          const std::string& out_path) {
  std::map<std::string, ArchiveFile> plain;
  for (const auto& [name, path] : files) plain[name] = ArchiveFile{path};
  return WriteArchive(plain, out_path);
}

absl::Status WriteArchive(const std::map<std::string, ArchiveFile>& files,
                          const std::string& out_path) {
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
    std::unique_ptr<archive_entry, void (*)(archive_entry*)> e(archive_entry_new(),
                                                              archive_entry_free);
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

absl::StatusOr<std::unique_ptr<PackReader>> PackReader::Open(const std::string& pack_path,
                                                             const Limits& limits) {
  std::unique_ptr<PackReader> r(new PackReader(limits));
  std::string head(gzip::kHeaderBytes, '\0');
  {
    std::ifstream in(pack_path, std::ios::binary);
    if (!in) return absl::InvalidArgumentError(absl::StrCat("pack: open ", pack_path, ": cannot read it"));
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
  }
  r->archive_ = archive_read_new();
  archive_read_support_format_tar(r->archive_);
  int rc;
  if (gzip::IsBlocked(head)) {
    auto gz = gzip::Reader::Open(pack_path);
    if (!gz.ok()) return absl::InvalidArgumentError(absl::StrCat("pack: open ", pack_path, ": ", gz.status().message()));
    r->gzip_ = *std::move(gz);
    rc = archive_read_open(r->archive_, r->gzip_.get(), nullptr, InflatedRead, nullptr);
  } else {
    archive_read_support_filter_gzip(r->archive_);
    rc = archive_read_open_filename(r->archive_, pack_path.c_str(), 1 << 16);
  }
  if (rc != ARCHIVE_OK) return ArchiveError(r->archive_, "open " + pack_path);
  return r;
}

PackReader::~PackReader() {
  if (archive_ != nullptr) archive_read_free(archive_);
}

absl::StatusOr<std::optional<std::string>> PackReader::Next() {
  static const std::set<std::string> kKnown = {kCheckpoint, kCheckpointTime, kConsistency, kEntries, kVkey,
                                               kManifest,   kManifestSig,    kOutcomes,    kProofs,  kReport,
                                               kRunHead};
  archive_entry* e = nullptr;
  int rc = archive_read_next_header(archive_, &e);
  if (rc == ARCHIVE_EOF) return std::nullopt;
  if (rc != ARCHIVE_OK) return ArchiveError(archive_, "read");
  const char* raw = archive_entry_pathname(e);
  std::string path = raw ? raw : "";
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("pack: entry '", path, "': ", std::string(why)));
  };
  if (archive_entry_filetype(e) != AE_IFREG) return bad("not a regular file");
  if (path.empty() || path[0] == '/') return bad("absolute or empty name");
  size_t slash = path.find('/');
  if (slash == std::string::npos || path.find('/', slash + 1) != std::string::npos) {
    return bad("not a file directly in the top folder");
  }
  std::string folder = path.substr(0, slash), name = path.substr(slash + 1);
  if (folder == ".." || folder == "." || name == ".." || name == ".") return bad("'..' or '.'");
  if (top_.empty()) top_ = folder;
  if (folder != top_) return bad("a second top folder");
  if (!kKnown.count(name)) return bad("not a file of an evidence pack");
  if (seen_.count(name)) return bad("duplicate name");
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

absl::StatusOr<std::map<std::string, std::string>> ExtractArchive(
    const std::string& pack_path, const std::string& dir, const Limits& limits,
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
    : spill_bytes_(spill_bytes), spill_parent_(std::move(spill_parent)), txn_(std::make_unique<projection::OverlayTxn>(nullptr, nullptr, &discard_)) {}

Outcomes::~Outcomes() = default;

size_t Outcomes::spilled_runs() const { return runs_ ? runs_->runs() : 0; }

absl::Status Outcomes::Add(receipt::Entry entry) {
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
  std::vector<projection::Entry> views;
  views.reserve(entries.size());
  for (const auto& e : entries) views.push_back({e.seq, e.logged_at_us, e.emitter, &e.receipt});
  query::StepProjector projector;
  if (auto s = projector.Apply(views, *txn_); !s.ok()) return s;
  return MaybeSpill();
}

absl::Status Outcomes::MaybeSpill() {
  if (txn_->bytes() < spill_bytes_) return absl::OkStatus();
  if (!runs_) {
    spill_dir_ = spill_parent_.empty() ? std::make_unique<ScratchDir>("ledger-outcomes")
                                       : std::make_unique<ScratchDir>(spill_parent_, "ledger-outcomes");
    if (spill_dir_->path().empty()) return absl::UnavailableError("outcomes: cannot create a temporary directory");
    runs_ = std::make_unique<SpillRuns>(spill_dir_->path());
  }
  if (auto s = runs_->Add(txn_->writes()); !s.ok()) return s;
  SpillRuns* runs = runs_.get();
  txn_ = std::make_unique<projection::OverlayTxn>(
      nullptr, [runs](projection::Table t, std::string_view key) { return runs->Get(t, key); }, &discard_);
  // glibc keeps freed memory in its heaps; the records just freed are many
  // and small, scattered among buffers other threads hold. Hand the pages
  // back, or the process grows with the pack although its data does not.
  ::malloc_trim(0);
  return absl::OkStatus();
}

namespace {

// The records of one projection table, sorted by key.
std::vector<const std::pair<const std::string, std::optional<std::string>>*> Sorted(
    const projection::OverlayTxn& txn, projection::Table table) {
  std::vector<const std::pair<const std::string, std::optional<std::string>>*> rows;
  for (const auto& row : txn.writes()[static_cast<int>(table)]) rows.push_back(&row);
  std::sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  return rows;
}

}  // namespace

template <typename Record>
absl::Status Outcomes::ForEachRecord(projection::Table table, absl::FunctionRef<void(const Record&)> fn) {
  if (auto s = Flush(); !s.ok()) return s;
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

absl::StatusOr<std::optional<OverdueStep>> FirstOverdueStep(Outcomes& outcomes, int64_t grace_us,
                                                            int64_t signed_at_us) {
  std::optional<OverdueStep> first;
  absl::Status scanned = outcomes.ForEachStepRecord([&](const query::pb::Step& s) {
    if (first || s.state() != query::pb::STEP_STATE_PENDING || !s.has_start()) return;
    int64_t deadline = s.timeout_at_us() + grace_us;
    if (deadline < signed_at_us) first = OverdueStep{s.team(), s.run_id(), s.step_id(), s.attempt(), deadline};
  });
  if (!scanned.ok()) return scanned;
  return first;
}

absl::StatusOr<std::vector<std::string>> UnsettledSteps(Outcomes& outcomes) {
  std::vector<std::string> steps;
  absl::Status scanned = outcomes.ForEachStepRecord([&](const query::pb::Step& s) {
    const bool pending = s.state() == query::pb::STEP_STATE_PENDING;
    if (!pending && s.state() != query::pb::STEP_STATE_UNKNOWN) return;
    steps.push_back(absl::StrCat(s.team(), "/", s.run_id(), "/", s.step_id(), " attempt ", s.attempt(),
                                 pending ? " (pending)" : " (unknown)"));
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
  buf = "{\"runs\":[";
  absl::Status runs = list([&](auto fn) { return ForEachRunRecord(fn); }, query::AppendRunJson);
  if (!runs.ok()) return runs;
  buf += "],\"steps\":[";
  absl::Status steps = list([&](auto fn) { return ForEachStepRecord(fn); }, query::AppendStepJson);
  if (!steps.ok()) return steps;
  buf += "]}\n";
  out(buf);
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

absl::Status WriteReport(const manifest::Manifest& manifest, Outcomes& outcomes,
                         const std::string& checkpoint_note,
                         absl::FunctionRef<void(std::string_view)> out) {
  std::string h;
  // Written out whenever a megabyte has gathered.
  auto spill = [&](size_t at_least) {
    if (h.size() < at_least) return;
    out(h);
    h.clear();
  };
  h += "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
       "<title>Evidence pack</title><style>"
       "body{font:14px system-ui,sans-serif;margin:2em;color:#111}"
       "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;"
       "text-align:left}th{background:#f3f3f3}tr.unknown{background:#ffd7d7;font-weight:bold}"
       "tr.failed{background:#fff1d6}pre{background:#f6f6f6;padding:1em;overflow:auto}"
       ".flag{color:#a00}</style></head><body>\n";
  h += "<h1>Evidence pack</h1>\n<p>Origin <code>" + HtmlEscape(manifest.origin) + "</code>, tree size " +
       std::to_string(manifest.tree_size) + ", root <code>" + HtmlEscape(manifest.root) + "</code>, scope <code>" +
       HtmlEscape(manifest::ScopeJson(manifest.scope)) + "</code>, " + std::to_string(manifest.entries) +
       " entries.</p>\n";
  int unknown = 0;
  int64_t t0 = INT64_MAX, t1 = INT64_MIN, steps = 0;
  absl::Status scanned = outcomes.ForEachStepRecord([&](const query::pb::Step& s) {
    unknown += s.state() == query::pb::STEP_STATE_UNKNOWN;
    t0 = std::min(t0, StepStart(s));
    t1 = std::max({t1, StepStart(s), StepEnd(s)});
    ++steps;
  });
  if (!scanned.ok()) return scanned;
  if (unknown > 0) {
    h += "<p class=\"flag\"><strong>" + std::to_string(unknown) +
         " step(s) never reported a completion and were declared UNKNOWN.</strong></p>\n";
  }
  if (steps > 0) {
    TimelineHead(steps, &h);
    int row = 0;
    absl::Status drawn = outcomes.ForEachStepRecord([&](const query::pb::Step& s) {
      TimelineRow(s, t0, t1, row++, &h);
      spill(1 << 20);
    });
    if (!drawn.ok()) return drawn;
    TimelineFoot(&h);
  }
  h += "<h2>Steps</h2>\n<table><tr><th>run</th><th>step</th><th>attempt</th><th>state</th>"
       "<th>anomalies</th><th>model calls allowed/denied</th><th>tool calls allowed/denied</th>"
       "<th>tokens in/out</th><th>charged</th><th>entries (seq)</th></tr>\n";
  absl::Status listed = outcomes.ForEachStepRecord([&](const query::pb::Step& s) {
    std::string state = query::StateName(s.state());
    std::string cls = state == "unknown" ? "unknown" : state == "failed" ? "failed" : "";
    std::string anomalies;
    for (int a : s.anomalies()) {
      absl::StrAppend(&anomalies, anomalies.empty() ? "" : ", ",
                      query::AnomalyName(static_cast<query::pb::Anomaly>(a)));
    }
    std::string seqs;
    for (uint64_t q : s.seqs()) absl::StrAppend(&seqs, seqs.empty() ? "" : " ", q);
    const auto& c = s.calls();
    absl::StrAppend(&h, "<tr class=\"", cls, "\"><td>", HtmlEscape(s.run_id()), "</td><td>", HtmlEscape(s.step_id()),
                    "</td><td>", s.attempt(), "</td><td>", state == "unknown" ? "UNKNOWN" : HtmlEscape(state),
                    "</td><td>", HtmlEscape(anomalies), "</td><td>", c.model_calls_allowed(), "/",
                    c.model_calls_denied(), "</td><td>", c.tool_calls_allowed(), "/", c.tool_calls_denied(),
                    "</td><td>", c.input_tokens(), "/", c.output_tokens(), "</td><td>",
                    Dollars(s.charged_cost_micros()), "</td><td>", seqs, "</td></tr>\n");
    spill(1 << 20);
  });
  if (!listed.ok()) return listed;
  h += "</table>\n<h2>Runs</h2>\n<table><tr><th>team</th><th>run</th><th>entries</th>"
       "<th>steps ok/failed/denied/pending/unknown</th><th>actual</th><th>charged</th></tr>\n";
  absl::Status runs = outcomes.ForEachRunRecord([&](const query::pb::Run& r) {
    absl::StrAppend(&h, "<tr><td>", HtmlEscape(r.team()), "</td><td>", HtmlEscape(r.run_id()), "</td><td>",
                    r.entries(), "</td><td>", r.steps_succeeded(), "/", r.steps_failed(), "/",
                    r.steps_denied(), "/", r.steps_pending(), "/", r.steps_unknown(), "</td><td>",
                    Dollars(r.actual_cost_micros()), "</td><td>", Dollars(r.charged_cost_micros()),
                    "</td></tr>\n");
    spill(1 << 20);
  });
  if (!runs.ok()) return runs;
  h += "</table>\n<h2>Checkpoint</h2>\n<pre>" + HtmlEscape(checkpoint_note) + "</pre>\n";
  const bool proves_run = manifest.format >= 3 && manifest.scope.is_run();
  if (proves_run) {
    const std::string last = manifest.tree_size > 0 ? std::to_string(manifest.tree_size - 1) : "-1";
    h += "<h2>Completeness</h2>\n<p>This pack states that it holds <strong>every</strong> entry of run <code>" +
         HtmlEscape(manifest.scope.run_id) + "</code> of team <code>" + HtmlEscape(manifest.scope.team) +
         "</code> logged up to seq " + last +
         ", not only entries that are in the log. <code>run-head.json</code> proves the run's number of entries "
         "and its last entry against the run-head map root that the ledger signed with this checkpoint "
         "(<code>checkpoint-time</code>, CONTRACT section 6a). When a verifier says OK, a step shown above as "
         "pending or unknown has <strong>no completion in the log up to seq " +
         last +
         " (proven)</strong>, and no entry of the run was left out. It cannot show a receipt that an emitter "
         "never sent, and a verifier holding only this pack relies on the signed root: anyone who replays "
         "the log (<code>ledgerctl audit</code>) checks it.</p>\n";
  }
  h += "<h2>How to verify this pack by hand</h2>\n<ol>"
       "<li>Check that <code>manifest.sig</code> is a signed note by the key in "
       "<code>ledger.vkey</code> (obtained from the ledger's operator, not from this pack) whose "
       "text is the SHA-256 of <code>manifest.json</code>, and that every file's SHA-256 matches "
       "the manifest.</li>"
       "<li>Check the signature of <code>checkpoint</code> (C2SP signed note, Ed25519).</li>"
       "<li>For each line of <code>entries.jsonl</code>: its leaf hash is SHA-256(0x00 || line); "
       "the matching line of <code>proofs.jsonl</code> is an RFC 9162 inclusion proof of that "
       "hash in the checkpoint's tree (Go: <code>tlog.CheckRecord</code>).</li>"
       "<li>Each entry's <code>prev</code> is the leaf hash of the entry before it; in a run "
       "pack, each <code>run_prev</code> names the run's previous entry.</li>"
       "<li>Recompute the step outcomes from the entries (CONTRACT section 4) and compare "
       "with <code>outcomes.json</code>.</li>";
  if (proves_run) {
    h += "<li>Check <code>run-head.json</code> against the <code>runs</code> root of "
         "<code>checkpoint-time</code> (CONTRACT section 6a), then that the pack holds exactly its "
         "<code>count</code> entries and ends with its <code>last_seq</code> and "
         "<code>last_leaf_hash</code>.</li>";
  }
  h += "</ol>\n<p><code>ledgerctl verify PACK --vkey FILE</code> (or <code>ledger-verify</code>) does all of "
       "this. This report is only as good as the verifier's OK.</p>\n</body></html>\n";
  spill(0);
  return absl::OkStatus();
}

}  // namespace ledger::pack
