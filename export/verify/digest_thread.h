// SHA-256 of a stream on a thread of its own: the verifier hashes every
// file of a pack (2 GB at a million entries) while it checks the largest
// two, and hashing them on the thread that checks would make the checks
// wait for it.
//
// Update copies each piece into blocks of kBlockBytes and queues them; at
// most kQueuedBlocks wait for the thread (Update blocks beyond) and as many
// are kept for reuse, so memory is bounded (8 MiB). Final waits for the queue, returns the digest and starts the
// next stream.
//
// Thread-compatible: one thread calls; the hashing thread is its own.
#ifndef EXPORT_VERIFY_DIGEST_THREAD_H_
#define EXPORT_VERIFY_DIGEST_THREAD_H_

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ledger/hash/hash.h"

namespace ledger::verify {

class DigestThread {
 public:
  static constexpr size_t kBlockBytes = size_t{256} << 10;
  static constexpr size_t kQueuedBlocks = 16;

  DigestThread();
  ~DigestThread();
  DigestThread(const DigestThread&) = delete;
  DigestThread& operator=(const DigestThread&) = delete;

  void Update(std::string_view piece);
  // The digest of everything given since the last Final.
  hash::Hash Final();

 private:
  // A block of the stream, or (final) its end.
  struct Block {
    std::string bytes;
    bool final = false;
  };
  void Push(Block block);
  void Run();

  std::string filling_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Block> queue_;
  std::vector<std::string> free_;  // hashed blocks, for reuse
  bool stop_ = false;
  bool digest_ready_ = false;
  hash::Hash digest_{};
  std::thread thread_;
};

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_DIGEST_THREAD_H_
