#include "export/verify/digest_thread.h"

#include <memory>

namespace ledger::verify {

DigestThread::DigestThread() : thread_([this] { Run(); }) {}

DigestThread::~DigestThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void DigestThread::Update(std::string_view piece) {
  while (!piece.empty()) {
    if (filling_.capacity() < kBlockBytes) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        filling_ = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (filling_.capacity() < kBlockBytes) filling_.reserve(kBlockBytes);
    size_t n = std::min(piece.size(), kBlockBytes - filling_.size());
    filling_.append(piece.data(), n);
    piece.remove_prefix(n);
    if (filling_.size() == kBlockBytes) Push(Block{std::move(filling_), false});
  }
}

hash::Hash DigestThread::Final() {
  if (!filling_.empty()) Push(Block{std::move(filling_), false});
  filling_.clear();
  Push(Block{std::string(), true});
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return digest_ready_; });
  digest_ready_ = false;
  return digest_;
}

void DigestThread::Push(Block block) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [this] { return queue_.size() < kQueuedBlocks; });
    queue_.push_back(std::move(block));
  }
  changed_.notify_all();
  filling_ = std::string();
}

void DigestThread::Run() {
  auto sha = std::make_unique<hash::Sha256Stream>();
  while (true) {
    Block block;
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      block = std::move(queue_.front());
      queue_.pop_front();
    }
    changed_.notify_all();
    if (!block.final) {
      sha->Update(block.bytes);
      block.bytes.clear();
      std::lock_guard<std::mutex> lock(mu_);
      if (free_.size() < kQueuedBlocks) free_.push_back(std::move(block.bytes));
      continue;
    }
    hash::Hash digest = sha->Final();
    sha = std::make_unique<hash::Sha256Stream>();
    {
      std::lock_guard<std::mutex> lock(mu_);
      digest_ = digest;
      digest_ready_ = true;
    }
    changed_.notify_all();
  }
}

}  // namespace ledger::verify
