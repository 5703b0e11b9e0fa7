#include "export/verify/cc/internal/digest_thread.h"

#include <algorithm>
#include <optional>

namespace ledger::verify {

DigestThread::DigestThread() : thread_([this] { Run(); }) {}

DigestThread::~DigestThread() {
  queue_.Close();
  thread_.join();
}

void DigestThread::Update(std::string_view piece) {
  while (!piece.empty()) {
    if (filling_.capacity() < kBlockBytes) {
      if (auto reused = free_.TryPop()) filling_ = *std::move(reused);
      filling_.reserve(kBlockBytes);
    }
    size_t n = std::min(piece.size(), kBlockBytes - filling_.size());
    filling_.append(piece.data(), n);
    piece.remove_prefix(n);
    if (filling_.size() == kBlockBytes) {
      queue_.Push(Block{std::move(filling_)});
      filling_ = std::string();
    }
  }
}

hash::Hash DigestThread::Final() {
  if (!filling_.empty()) queue_.Push(Block{std::move(filling_)});
  filling_ = std::string();
  std::promise<hash::Hash> digest;
  queue_.Push(Block{std::string(), &digest});
  return digest.get_future().get();
}

void DigestThread::Run() {
  std::optional<hash::Sha256Stream> sha;
  sha.emplace();
  while (auto block = queue_.Pop()) {
    if (block->digest == nullptr) {
      sha->Update(block->bytes);
      block->bytes.clear();
      free_.TryPush(std::move(block->bytes));
      continue;
    }
    block->digest->set_value(sha->Final());
    sha.emplace();  // the next stream
  }
}

}  // namespace ledger::verify
