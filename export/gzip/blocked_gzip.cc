#include "export/gzip/blocked_gzip.h"

#include <libdeflate.h>

#include <algorithm>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "util/tasks/tasks.h"

namespace ledger::gzip {
namespace {

constexpr int kLevel = 1;
// The longest member a reader accepts: a block that did not compress.
constexpr size_t kMaxMemberBytes = kHeaderBytes + kBlockBytes + kBlockBytes / 64 + 1024 + kTrailerBytes;

size_t Workers() { return std::max(2u, std::thread::hardware_concurrency()) + 1; }

uint32_t GetU32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} | uint32_t{u[1]} << 8 | uint32_t{u[2]} << 16 | uint32_t{u[3]} << 24;
}

void PutU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

// Each thread's compressor and decompressor, made once: a compressor's
// tables are hundreds of kilobytes, and libdeflate resets them per call.
libdeflate_compressor* Compressor() {
  thread_local std::unique_ptr<libdeflate_compressor, void (*)(libdeflate_compressor*)> c(
      libdeflate_alloc_compressor(kLevel), libdeflate_free_compressor);
  return c.get();
}

libdeflate_decompressor* Decompressor() {
  thread_local std::unique_ptr<libdeflate_decompressor, void (*)(libdeflate_decompressor*)> d(
      libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
  return d.get();
}

std::string Compress(std::string_view in) {
  libdeflate_compressor* c = Compressor();
  size_t bound = libdeflate_deflate_compress_bound(c, in.size());
  std::string member(kHeaderBytes + bound + kTrailerBytes, '\0');
  size_t n = libdeflate_deflate_compress(c, in.data(), in.size(), member.data() + kHeaderBytes, bound);
  member.resize(kHeaderBytes + n + kTrailerBytes);
  static constexpr unsigned char kHead[kHeaderBytes - 4] = {0x1f, 0x8b, 8, 4, 0,   0,   0, 0,
                                                            0,    0xff, 8, 0, 'E', 'L', 4, 0};
  std::copy(kHead, kHead + sizeof kHead, member.begin());
  PutU32(member.data() + kHeaderBytes - 4, static_cast<uint32_t>(member.size()));
  char* trailer = member.data() + member.size() - kTrailerBytes;
  PutU32(trailer, libdeflate_crc32(0, in.data(), in.size()));
  PutU32(trailer + 4, static_cast<uint32_t>(in.size()));
  return member;
}

absl::Status MemberError(uint64_t offset, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("gzip member at byte ", offset, ": ", std::string(what)));
}

absl::StatusOr<std::string> Inflate(const std::string& member, uint64_t offset) {
  const char* trailer = member.data() + member.size() - kTrailerBytes;
  uint32_t crc = GetU32(trailer), size = GetU32(trailer + 4);
  if (size > kBlockBytes) {
    return MemberError(offset, absl::StrCat("says it holds ", size, " bytes, more than a block (", kBlockBytes, ")"));
  }
  std::string out(size, '\0');
  size_t in_bytes = member.size() - kHeaderBytes - kTrailerBytes, used = 0;
  libdeflate_result r = libdeflate_deflate_decompress_ex(Decompressor(), member.data() + kHeaderBytes, in_bytes,
                                                         out.data(), out.size(), &used, nullptr);
  if (r != LIBDEFLATE_SUCCESS) {
    return MemberError(offset, r == LIBDEFLATE_SHORT_OUTPUT || r == LIBDEFLATE_INSUFFICIENT_SPACE
                                   ? "inflates to a size other than its trailer says"
                                   : "bad DEFLATE data");
  }
  if (used != in_bytes) return MemberError(offset, "bytes between its DEFLATE data and its trailer");
  if (libdeflate_crc32(0, out.data(), out.size()) != crc) return MemberError(offset, "CRC-32 mismatch");
  return out;
}

}  // namespace

Writer::Writer(const std::string& path, hash::Sha256Stream* sha256)
    : path_(path), out_(path, std::ios::binary | std::ios::trunc), sha256_(sha256), to_hash_(Workers() + 1) {
  ok_ = static_cast<bool>(out_);
  if (sha256_ != nullptr) {
    hasher_ = std::thread([this] {
      while (auto block = to_hash_.Pop()) sha256_->Update(**block);
    });
  }
}

Writer::~Writer() {
  // The workers use their own copies only; wait for them.
  for (auto& f : inflight_) f.wait();
  StopHashing();
}

void Writer::StopHashing() {
  if (!hasher_.joinable()) return;
  to_hash_.Close();
  hasher_.join();
}

void Writer::Write(std::string_view data) {
  pending_.append(data);
  Spill();
}

void Writer::Spill() {
  while (pending_.size() >= kBlockBytes) {
    if (pending_.size() == kBlockBytes) {
      Submit();
    } else {
      std::string rest = pending_.substr(kBlockBytes);
      pending_.resize(kBlockBytes);
      Submit();
      pending_ = std::move(rest);
    }
  }
}

void Writer::EndBlock() {
  Spill();
  if (!pending_.empty()) Submit();
}

void Writer::Submit() {
  auto block = std::make_shared<const std::string>(std::move(pending_));
  pending_ = std::string();
  pending_.reserve(kBlockBytes);
  input_bytes_ += block->size();
  // Compressed on the pool's threads, hashed in order on this writer's.
  inflight_.push_back(tasks::Pool::Shared().Run([block] { return Compress(*block); }));
  if (sha256_ != nullptr) to_hash_.Push(block);
  while (inflight_.size() > Workers()) Drain();
}

void Writer::Drain() {
  std::string member = inflight_.front().get();
  inflight_.pop_front();
  out_.write(member.data(), static_cast<std::streamsize>(member.size()));
}

absl::Status Writer::Splice(const std::string& path) {
  EndBlock();
  while (!inflight_.empty()) Drain();
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::UnavailableError(absl::StrCat("gzip: cannot read ", path));
  std::string buf(1 << 20, '\0');
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    out_.write(buf.data(), in.gcount());
  }
  if (!in.eof()) return absl::UnavailableError(absl::StrCat("gzip: cannot read ", path));
  return absl::OkStatus();
}

absl::Status Writer::Finish() {
  if (finished_) return ok_ ? absl::OkStatus() : absl::UnavailableError("gzip: write failed");
  finished_ = true;
  EndBlock();
  while (!inflight_.empty()) Drain();
  StopHashing();
  out_.close();
  ok_ = ok_ && static_cast<bool>(out_);
  if (!ok_) return absl::UnavailableError(absl::StrCat("gzip: cannot write ", path_));
  return absl::OkStatus();
}

bool IsBlocked(std::string_view head) {
  static constexpr unsigned char kHead[] = {0x1f, 0x8b, 8, 4};
  static constexpr unsigned char kExtra[] = {8, 0, 'E', 'L', 4, 0};
  return head.size() >= kHeaderBytes &&
         std::equal(kHead, kHead + 4, head.begin(),
                    [](unsigned char a, char b) { return a == static_cast<unsigned char>(b); }) &&
         std::equal(kExtra, kExtra + 6, head.begin() + 10,
                    [](unsigned char a, char b) { return a == static_cast<unsigned char>(b); });
}

absl::StatusOr<std::unique_ptr<Reader>> Reader::Open(const std::string& path) {
  std::unique_ptr<Reader> r(new Reader(path));
  if (!r->in_) return absl::UnavailableError(absl::StrCat("gzip: cannot open ", path));
  std::string head(kHeaderBytes, '\0');
  r->in_.read(head.data(), static_cast<std::streamsize>(head.size()));
  if (r->in_.gcount() != static_cast<std::streamsize>(kHeaderBytes) || !IsBlocked(head)) {
    return absl::InvalidArgumentError("gzip: not a blocked gzip file");
  }
  r->in_.clear();
  r->in_.seekg(0);
  return r;
}

Reader::~Reader() {
  for (auto& f : inflight_) f.wait();
}

absl::StatusOr<bool> Reader::Queue() {
  std::string member(kHeaderBytes, '\0');
  in_.read(member.data(), static_cast<std::streamsize>(kHeaderBytes));
  std::streamsize got = in_.gcount();
  if (got == 0) {
    at_end_ = true;
    return false;
  }
  if (got < static_cast<std::streamsize>(kHeaderBytes)) return MemberError(offset_, "truncated header");
  if (!IsBlocked(member)) {
    return MemberError(offset_, "not a member this ledger writes (no EL length field)");
  }
  uint32_t length = GetU32(member.data() + kHeaderBytes - 4);
  if (length < kHeaderBytes + kTrailerBytes + 1 || length > kMaxMemberBytes) {
    return MemberError(offset_, absl::StrCat("length ", length, " is out of range"));
  }
  member.resize(length);
  in_.read(member.data() + kHeaderBytes, static_cast<std::streamsize>(length - kHeaderBytes));
  if (in_.gcount() != static_cast<std::streamsize>(length - kHeaderBytes)) {
    return MemberError(offset_, "truncated");
  }
  inflight_.push_back(
      tasks::Pool::Shared().Run([member = std::move(member), offset = offset_] { return Inflate(member, offset); }));
  offset_ += length;
  return true;
}

absl::StatusOr<std::string_view> Reader::Next() {
  while (true) {
    while (!at_end_ && inflight_.size() < Workers()) {
      auto queued = Queue();
      if (!queued.ok()) {
        // Reported in order, after the members before it.
        std::promise<absl::StatusOr<std::string>> failed;
        failed.set_value(queued.status());
        inflight_.push_back(failed.get_future());
        at_end_ = true;
      }
    }
    if (inflight_.empty()) return std::string_view();
    auto piece = inflight_.front().get();
    inflight_.pop_front();
    if (!piece.ok()) {
      for (auto& f : inflight_) f.wait();
      inflight_.clear();
      return piece.status();
    }
    // An empty member is legal and says nothing: an empty piece means the end.
    if (piece->empty()) continue;
    current_ = *std::move(piece);
    return std::string_view(current_);
  }
}

}  // namespace ledger::gzip
