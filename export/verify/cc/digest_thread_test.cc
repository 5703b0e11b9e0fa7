#include "export/verify/cc/internal/digest_thread.h"

#include <random>
#include <string>

#include "gtest/gtest.h"

namespace ledger::verify {
namespace {

// Streams of every size around the block and queue bounds, in pieces of
// random sizes, one after another on one thread: each digest is its own
// stream's.
TEST(DigestThreadTest, EachStreamHashesToItsOwnDigest) {
  std::mt19937 rng(3);
  DigestThread digest;
  const size_t block = DigestThread::kBlockBytes;
  for (size_t size : {size_t{0}, size_t{1}, block - 1, block, block + 1, (DigestThread::kQueuedBlocks + 3) * block + 17,
                      size_t{5'000'000}}) {
    std::string data(size, '\0');
    for (char& c : data) c = static_cast<char>(rng());
    size_t at = 0;
    while (at < data.size()) {
      size_t n = std::min(data.size() - at, std::uniform_int_distribution<size_t>(0, 3 * block)(rng));
      digest.Update(std::string_view(data).substr(at, n));
      at += n;
    }
    EXPECT_EQ(hash::Hex(digest.Final()), hash::Hex(hash::Sha256(data))) << size;
  }
}

}  // namespace
}  // namespace ledger::verify
