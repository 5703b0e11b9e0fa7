// Blocked gzip: how evidence packs are compressed.
//
// A pack's .tar.gz is a series of gzip members (RFC 1952 §2.2, "a gzip file
// consists of a series of members"); gzip, tar, Python's gzip and Go's
// compress/gzip read it as one stream. Each member compresses at most
// kBlockBytes of the stream and says how long it is, in an extra field, so
// that a reader finds the next member without inflating this one and can
// inflate several at once:
//
//   member  = 1f 8b 08 04 00 00 00 00 00 ff  ; FEXTRA; mtime 0; OS unknown
//             08 00                          ; XLEN = 8
//             45 4c 04 00 <u32>              ; subfield "EL": the member's
//                                            ; length in bytes, header to trailer
//             <raw DEFLATE of the input>     ; libdeflate, level 1
//             <u32 CRC-32> <u32 input size>  ; little-endian
//
// Every integer is little-endian. A member depends only on its input, so
// the same bytes with the same block boundaries give the same file, whatever
// the number of threads. Blocks end every kBlockBytes and wherever the
// writer is told to end one (EndBlock), so already-compressed members of a
// file can be spliced in (Splice) at a block boundary.
//
// Thread-compatible: one thread uses a writer or a reader. Members are
// compressed and inflated on the process's task pool (util/tasks), waited
// for before Finish returns or the object goes; a writer that hashes its
// input does so on a thread of its own, in order.
#ifndef EXPORT_GZIP_BLOCKED_GZIP_H_
#define EXPORT_GZIP_BLOCKED_GZIP_H_

#include <cstdint>
#include <deque>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"
#include "ledger/format/hash/hash.h"
#include "util/tasks/channel.h"

namespace ledger::gzip {

inline constexpr size_t kBlockBytes = size_t{1} << 20;
inline constexpr size_t kHeaderBytes = 20;  // 10 fixed, XLEN, the EL subfield
inline constexpr size_t kTrailerBytes = 8;

// Writes blocked members to a file, compressing on worker threads.
class Writer {
 public:
  // `path` is created or truncated. With `sha256`, the input is also hashed,
  // in order, off the caller's thread; read it after Finish.
  explicit Writer(const std::string& path, hash::Sha256Stream* sha256 = nullptr);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Appends input; whole blocks are handed to the workers.
  void Write(std::string_view data);
  // A buffer to append input to directly, then Spill(): saves a copy.
  std::string* buffer() { return &pending_; }
  void Spill();
  // The input so far becomes a member even if shorter than a block.
  void EndBlock();
  // Ends the block, then copies the members of `path` (another Writer's
  // finished file) as they are. Their input is not hashed here.
  absl::Status Splice(const std::string& path);
  // Ends the block, waits for every member, closes the file.
  absl::Status Finish();

  // Input bytes written, spliced members not included.
  uint64_t input_bytes() const { return input_bytes_; }

 private:
  void Submit();
  void Drain();
  // Waits for the blocks submitted to be hashed.
  void StopHashing();

  std::string path_;
  std::ofstream out_;
  hash::Sha256Stream* sha256_;
  std::string pending_;
  std::deque<std::future<std::string>> inflight_;
  // With sha256_: the blocks submitted, hashed in order by hasher_.
  tasks::Channel<std::shared_ptr<const std::string>> to_hash_;
  std::thread hasher_;
  uint64_t input_bytes_ = 0;
  bool ok_ = true;
  bool finished_ = false;
};

// True when `head` (a file's first bytes, at least kHeaderBytes of them)
// starts a blocked member.
bool IsBlocked(std::string_view head);

// Reads a file of blocked members in order, inflating several at once.
class Reader {
 public:
  // Fails if the file cannot be opened or does not start a blocked member.
  static absl::StatusOr<std::unique_ptr<Reader>> Open(const std::string& path);
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // The next piece of the inflated stream, valid until the next call; empty
  // at the end of the file. An error names the member's offset and what is
  // wrong with it: a member without its length, a bad header, a length or
  // size beyond a block, bad DEFLATE data, a CRC or size mismatch, or a
  // truncated file.
  absl::StatusOr<std::string_view> Next();

  // The bytes of the file read so far (members being inflated count).
  uint64_t offset() const { return offset_; }

 private:
  explicit Reader(const std::string& path) : in_(path, std::ios::binary) {}
  // Reads the next member and starts inflating it; false at the end.
  absl::StatusOr<bool> Queue();

  std::ifstream in_;
  uint64_t offset_ = 0;
  bool at_end_ = false;
  std::deque<std::future<absl::StatusOr<std::string>>> inflight_;
  std::string current_;
};

}  // namespace ledger::gzip

#endif  // EXPORT_GZIP_BLOCKED_GZIP_H_
