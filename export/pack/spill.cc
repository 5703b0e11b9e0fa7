#include "export/pack/spill.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <queue>

#include "absl/strings/str_cat.h"

namespace ledger::pack {
namespace {

constexpr size_t kIndexEvery = 32;
constexpr int kProbes = 7;
constexpr size_t kReadBytes = size_t{1} << 16;

// (table, key) as one string that sorts as the pair does.
std::string Composite(projection::Table table, std::string_view key) {
  std::string c(1, static_cast<char>(table));
  c.append(key);
  return c;
}

uint64_t KeyHash(std::string_view composite) { return std::hash<std::string_view>()(composite); }

// The probes of a key: double hashing.
template <typename Fn>
void Probes(std::string_view composite, uint64_t bits, Fn fn) {
  uint64_t h1 = KeyHash(composite), h2 = (h1 * 0x9e3779b97f4a7c15ULL) | 1;
  for (int i = 0; i < kProbes; ++i) fn((h1 + static_cast<uint64_t>(i) * h2) % bits);
}

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

uint32_t GetU32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} | uint32_t{u[1]} << 8 | uint32_t{u[2]} << 16 | uint32_t{u[3]} << 24;
}

absl::Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrCat("outcomes: cannot write ", path));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status ReadAt(int fd, uint64_t offset, size_t n, std::string* out) {
  out->resize(n);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, out->data() + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return absl::DataLossError("outcomes: a spilled run is shorter than written");
    got += static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

// One record parsed out of a buffer: false if the buffer does not hold a
// whole one at `at`.
struct Parsed {
  std::string_view value;
  bool present = false;
  size_t size = 0;
};

bool ParseRecord(std::string_view buf, size_t at, Parsed* p) {
  if (buf.size() - at < 5) return false;
  uint32_t klen = GetU32(buf.data() + at + 1);
  size_t vat = at + 5 + klen;
  if (buf.size() < vat + 5) return false;
  uint32_t vlen = GetU32(buf.data() + vat + 1);
  if (buf.size() < vat + 5 + vlen) return false;
  p->value = std::string_view(buf.data() + vat + 5, vlen);
  p->present = buf[vat] != 0;
  p->size = vat + 5 + vlen - at;
  return true;
}

std::string CompositeOf(std::string_view buf, size_t at) {
  uint32_t klen = GetU32(buf.data() + at + 1);
  std::string c(1, buf[at]);
  c.append(buf.data() + at + 5, klen);
  return c;
}

// Reads a run's records of one table in order.
class Cursor {
 public:
  Cursor(int fd, uint64_t begin, uint64_t end) : fd_(fd), next_(begin), end_(end) {}

  // Moves to the next record; false at the end of the table.
  absl::StatusOr<bool> Next() {
    if (at_ < buf_.size()) at_ += last_size_;
    Parsed p;
    if (!ParseRecord(buf_, at_, &p)) {
      // Refill: what is left of the buffer and the next piece of the file.
      buf_.erase(0, at_);
      at_ = 0;
      if (next_ >= end_ && buf_.empty()) return false;
      size_t n = static_cast<size_t>(std::min<uint64_t>(end_ - next_, kReadBytes));
      std::string more;
      if (n > 0) {
        if (auto s = ReadAt(fd_, next_, n, &more); !s.ok()) return s;
        next_ += n;
        buf_ += more;
      }
      while (!ParseRecord(buf_, at_, &p)) {
        if (next_ >= end_) return absl::DataLossError("outcomes: a spilled run ends inside a record");
        size_t m = static_cast<size_t>(std::min<uint64_t>(end_ - next_, kReadBytes));
        if (auto s = ReadAt(fd_, next_, m, &more); !s.ok()) return s;
        next_ += m;
        buf_ += more;
      }
    }
    last_size_ = p.size;
    composite_ = CompositeOf(buf_, at_);
    value_ = p.value;
    present_ = p.present;
    return true;
  }
  const std::string& composite() const { return composite_; }
  std::string_view value() const { return value_; }
  bool present() const { return present_; }

 private:
  int fd_;
  uint64_t next_, end_;
  std::string buf_;
  size_t at_ = 0, last_size_ = 0;
  std::string composite_;
  std::string_view value_;
  bool present_ = false;
};

}  // namespace

SpillRuns::~SpillRuns() {
  for (const Run& r : runs_) {
    if (r.fd >= 0) ::close(r.fd);
    ::unlink(r.path.c_str());
  }
}

// Writes one run from records given in (table, key) order.
class SpillRuns::Writer {
 public:
  // `records` bounds how many will be appended (the Bloom filter's size).
  Writer(std::string path, uint64_t records) {
    run_.path = std::move(path);
    run_.fd = ::open(run_.path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    run_.bloom_bits = std::max<uint64_t>(64, (records * 10 + 63) / 64 * 64);
    run_.bloom.assign(run_.bloom_bits / 64, 0);
    run_.table_start.fill(UINT64_MAX);
  }

  absl::Status Append(std::string_view composite, const std::optional<std::string_view>& value) {
    if (run_.fd < 0) return absl::UnavailableError(absl::StrCat("outcomes: cannot create ", run_.path));
    int table = static_cast<unsigned char>(composite[0]);
    if (run_.table_start[table] == UINT64_MAX) run_.table_start[table] = run_.bytes;
    if (run_.records % kIndexEvery == 0) run_.index.emplace_back(std::string(composite), run_.bytes);
    ++run_.records;
    Probes(composite, run_.bloom_bits, [&](uint64_t bit) { run_.bloom[bit / 64] |= uint64_t{1} << (bit % 64); });
    size_t before = buf_.size();
    buf_.push_back(composite[0]);
    PutU32(&buf_, static_cast<uint32_t>(composite.size() - 1));
    buf_.append(composite.substr(1));
    buf_.push_back(value.has_value() ? 1 : 0);
    PutU32(&buf_, value.has_value() ? static_cast<uint32_t>(value->size()) : 0);
    if (value.has_value()) buf_.append(*value);
    run_.bytes += buf_.size() - before;
    if (buf_.size() >= kReadBytes) {
      if (auto s = WriteAll(run_.fd, buf_, run_.path); !s.ok()) return s;
      buf_.clear();
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Run> Finish() {
    if (run_.fd < 0) return absl::UnavailableError(absl::StrCat("outcomes: cannot create ", run_.path));
    if (auto s = WriteAll(run_.fd, buf_, run_.path); !s.ok()) return s;
    run_.table_start[projection::kTableCount] = run_.bytes;
    for (int t = projection::kTableCount - 1; t >= 0; --t) {
      if (run_.table_start[t] == UINT64_MAX) run_.table_start[t] = run_.table_start[t + 1];
    }
    Run done = std::move(run_);
    run_.fd = -1;
    return done;
  }

  ~Writer() {
    if (run_.fd >= 0) {
      ::close(run_.fd);
      ::unlink(run_.path.c_str());
    }
  }

 private:
  Run run_;
  std::string buf_;
};

absl::Status SpillRuns::Add(const projection::OverlayTxn::Writes& writes) {
  auto run = Write(writes, NextRunPath());
  if (!run.ok()) return run.status();
  return Insert(*std::move(run));
}

std::string SpillRuns::NextRunPath() { return absl::StrCat(dir_, "/run-", next_run_++); }

absl::StatusOr<SpillRuns::Run> SpillRuns::Write(const projection::OverlayTxn::Writes& writes, std::string path) {
  std::vector<std::pair<std::string, const std::optional<std::string>*>> rows;
  for (int t = 0; t < projection::kTableCount; ++t) {
    for (const auto& [key, value] : writes[t])
      rows.emplace_back(Composite(static_cast<projection::Table>(t), key), &value);
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Writer writer(std::move(path), rows.size());
  for (const auto& [composite, value] : rows) {
    std::optional<std::string_view> v;
    if (value->has_value()) v = **value;
    if (auto s = writer.Append(composite, v); !s.ok()) return s;
  }
  return writer.Finish();
}

absl::Status SpillRuns::Insert(Run run) {
  runs_.push_back(std::move(run));
  if (runs_.size() > kMaxRuns) return Compact();
  return absl::OkStatus();
}

absl::Status SpillRuns::Compact() {
  // The newer half of the runs merged into one: each record is rewritten
  // a logarithmic number of times, not once per merge. Deletions are kept
  // unless the oldest run is among those merged (nothing older to hide).
  const size_t first = runs_.size() / 2;
  uint64_t records = 0;
  for (size_t i = first; i < runs_.size(); ++i) records += runs_[i].records;
  Writer writer(absl::StrCat(dir_, "/run-", next_run_++), records);
  const projection::OverlayTxn::TableWrites none;
  for (int t = 0; t < projection::kTableCount; ++t) {
    auto table = static_cast<projection::Table>(t);
    absl::Status merged = Merge(table, first, none, [&](std::string_view key, std::optional<std::string_view> value) {
      if (!value && first == 0) return absl::OkStatus();
      return writer.Append(Composite(table, key), value);
    });
    if (!merged.ok()) return merged;
  }
  auto run = writer.Finish();
  if (!run.ok()) return run.status();
  for (size_t i = first; i < runs_.size(); ++i) {
    ::close(runs_[i].fd);
    ::unlink(runs_[i].path.c_str());
  }
  runs_.resize(first);
  runs_.push_back(*std::move(run));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> SpillRuns::Get(projection::Table table, std::string_view key) const {
  std::string composite = Composite(table, key);
  std::string block;
  for (auto run = runs_.rbegin(); run != runs_.rend(); ++run) {
    bool maybe = true;
    Probes(composite, run->bloom_bits,
           [&](uint64_t bit) { maybe = maybe && (run->bloom[bit / 64] >> (bit % 64) & 1); });
    if (!maybe) continue;
    auto it = std::upper_bound(run->index.begin(), run->index.end(), composite,
                               [](const std::string& c, const auto& e) { return c < e.first; });
    if (it == run->index.begin()) continue;
    --it;
    uint64_t begin = it->second, end = it + 1 != run->index.end() ? (it + 1)->second : run->bytes;
    if (auto s = ReadAt(run->fd, begin, static_cast<size_t>(end - begin), &block); !s.ok()) return s;
    Parsed p;
    for (size_t at = 0; ParseRecord(block, at, &p); at += p.size) {
      std::string c = CompositeOf(block, at);
      if (c == composite) {
        if (!p.present) return std::nullopt;
        return std::string(p.value);
      }
      if (c > composite) break;
    }
  }
  return std::nullopt;
}

absl::Status SpillRuns::ForEach(projection::Table table, const projection::OverlayTxn::TableWrites& latest,
                                absl::FunctionRef<absl::Status(std::string_view, std::string_view)> fn) const {
  return Merge(table, 0, latest, [&](std::string_view key, std::optional<std::string_view> value) {
    return value ? fn(key, *value) : absl::OkStatus();
  });
}

absl::Status SpillRuns::Merge(
    projection::Table table, size_t first_run, const projection::OverlayTxn::TableWrites& latest,
    absl::FunctionRef<absl::Status(std::string_view, std::optional<std::string_view>)> fn) const {
  // Sources: runs_[first_run..] (priority = age order) and the records in
  // memory (the newest). Merged by key; of equal keys the newest wins.
  std::vector<const std::pair<const std::string, std::optional<std::string>>*> memory;
  for (const auto& row : latest) memory.push_back(&row);
  std::sort(memory.begin(), memory.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  std::vector<Cursor> cursors;
  int t = static_cast<int>(table);
  for (size_t i = first_run; i < runs_.size(); ++i) {
    cursors.emplace_back(runs_[i].fd, runs_[i].table_start[t], runs_[i].table_start[t + 1]);
  }
  const int memory_source = static_cast<int>(cursors.size());
  size_t memory_at = 0;
  auto key_of = [&](int source) -> std::string_view {
    if (source == memory_source) return memory[memory_at]->first;
    return std::string_view(cursors[source].composite()).substr(1);
  };
  auto cmp = [&](int a, int b) {  // priority_queue: true if a comes after b
    int c = key_of(a).compare(key_of(b));
    return c != 0 ? c > 0 : a < b;
  };
  std::priority_queue<int, std::vector<int>, decltype(cmp)> heap(cmp);
  auto advance = [&](int source) -> absl::Status {
    if (source == memory_source) {
      if (++memory_at < memory.size()) heap.push(source);
      return absl::OkStatus();
    }
    auto more = cursors[source].Next();
    if (!more.ok()) return more.status();
    if (*more) heap.push(source);
    return absl::OkStatus();
  };
  for (int s = 0; s < memory_source; ++s) {
    if (auto st = advance(s); !st.ok()) return st;
  }
  if (!memory.empty()) heap.push(memory_source);
  while (!heap.empty()) {
    int top = heap.top();
    heap.pop();
    std::string key(key_of(top));
    bool present;
    std::string_view value;
    if (top == memory_source) {
      present = memory[memory_at]->second.has_value();
      if (present) value = *memory[memory_at]->second;
    } else {
      present = cursors[top].present();
      value = cursors[top].value();
    }
    std::optional<std::string_view> newest;
    if (present) newest = value;
    if (auto s = fn(key, newest); !s.ok()) return s;
    if (auto s = advance(top); !s.ok()) return s;
    // Older values of the same key.
    while (!heap.empty() && key_of(heap.top()) == key) {
      int older = heap.top();
      heap.pop();
      if (auto s = advance(older); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace ledger::pack
