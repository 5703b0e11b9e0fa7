// SHA-256 of a stream on a thread of its own: the verifier hashes every
// file of a pack (2 GB at a million entries) while it checks the largest
// two, and hashing them on the thread that checks would make the checks
// wait for it.
//
// Update copies each piece into blocks of kBlockBytes and queues them; at
// most kQueuedBlocks wait for the thread (Update blocks beyond) and as many
// are kept for reuse, so memory is bounded (8 MiB). Final waits for the
// queue, returns the digest and starts the next stream.
//
// Thread-compatible: one thread calls; the hashing thread is its own.
#ifndef EXPORT_VERIFY_CC_INTERNAL_DIGEST_THREAD_H_
#define EXPORT_VERIFY_CC_INTERNAL_DIGEST_THREAD_H_

#include <future>
#include <string>
#include <string_view>
#include <thread>

#include "ledger/format/hash/hash.h"
#include "util/tasks/channel.h"

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
  // A block of the stream, or (with `digest`) its end, where the thread
  // gives the digest.
  struct Block {
    std::string bytes;
    std::promise<hash::Hash>* digest = nullptr;
  };
  void Run();

  std::string filling_;
  tasks::Channel<Block> queue_{kQueuedBlocks};
  tasks::Channel<std::string> free_{kQueuedBlocks};  // hashed blocks, for reuse
  std::thread thread_;
};

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_CC_INTERNAL_DIGEST_THREAD_H_
