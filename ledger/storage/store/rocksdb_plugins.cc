#include "ledger/storage/store/internal/rocksdb_plugins.h"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <utility>

#include "ledger/format/projection/keys.h"
#include "ledger/storage/store/testing.h"
#include "util/jsonlog/jsonlog.h"

namespace ledger::store {
namespace {

class StderrLogger final : public rocksdb::Logger {
 public:
  StderrLogger() : rocksdb::Logger(rocksdb::InfoLogLevel::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    char line[1024];
    std::vsnprintf(line, sizeof line, format, ap);
    jsonlog::Warn("rocksdb").Msg(line).Emit();
  }
};

// A file whose writes and syncs fail while the store's Faults say so.
rocksdb::IOStatus Injected(const Faults* faults, const char* what) {
  rocksdb::IOStatus s = rocksdb::IOStatus::IOError(what);
  s.SetRetryable(faults->retryable);
  return s;
}

class StoreFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  StoreFile(std::unique_ptr<rocksdb::FSWritableFile> file, const Faults* faults, stats::Histogram* sync_us)
      : FSWritableFileOwnerWrapper(std::move(file)), faults_(faults ? faults : &kNoFaults), sync_us_(sync_us) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    if (faults_->fail_writes) return Injected(faults_, "injected write failure");
    return FSWritableFileOwnerWrapper::Append(data, options, dbg);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info, rocksdb::IODebugContext* dbg) override {
    if (faults_->fail_writes) return Injected(faults_, "injected write failure");
    return FSWritableFileOwnerWrapper::Append(data, options, info, dbg);
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    if (faults_->fail_syncs) return Injected(faults_, "injected sync failure");
    return Timed([&] { return FSWritableFileOwnerWrapper::Sync(options, dbg); });
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    if (faults_->fail_syncs) return Injected(faults_, "injected sync failure");
    return Timed([&] { return FSWritableFileOwnerWrapper::Fsync(options, dbg); });
  }

 private:
  static inline const Faults kNoFaults{};

  template <typename F>
  rocksdb::IOStatus Timed(F sync) {
    if (sync_us_ == nullptr) return sync();
    auto started = std::chrono::steady_clock::now();
    rocksdb::IOStatus s = sync();
    sync_us_->Observe(static_cast<double>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count()));
    return s;
  }

  const Faults* faults_;
  stats::Histogram* const sync_us_;
};

class StoreFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  StoreFileSystem(const std::shared_ptr<rocksdb::FileSystem>& target, const Faults* faults, stats::Histogram* sync_us)
      : FileSystemWrapper(target), faults_(faults), sync_us_(sync_us) {}
  const char* Name() const override { return "ledger-store"; }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    std::unique_ptr<rocksdb::FSWritableFile> file;
    rocksdb::IOStatus s = target()->NewWritableFile(name, options, &file, dbg);
    if (s.ok()) *result = std::make_unique<StoreFile>(std::move(file), faults_, sync_us_);
    return s;
  }

 private:
  const Faults* faults_;
  stats::Histogram* const sync_us_;
};

class KeyPrefix : public rocksdb::SliceTransform {
 public:
  KeyPrefix(bool family_byte, int parts, const char* name) : family_byte_(family_byte), parts_(parts), name_(name) {}
  const char* Name() const override { return name_; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override { return rocksdb::Slice(key.data(), Length(key)); }
  bool InDomain(const rocksdb::Slice& key) const override { return Length(key) > 0; }

 private:
  size_t Length(const rocksdb::Slice& key) const {
    return projection::KeyPrefixLength(std::string_view(key.data(), key.size()), family_byte_, parts_);
  }
  const bool family_byte_;
  const int parts_;
  const char* const name_;
};

}  // namespace

std::shared_ptr<rocksdb::Logger> NewStderrLogger() { return std::make_shared<StderrLogger>(); }

std::shared_ptr<rocksdb::FileSystem> NewStoreFileSystem(const std::shared_ptr<rocksdb::FileSystem>& target,
                                                        const Faults* faults, stats::Histogram* sync_us) {
  return std::make_shared<StoreFileSystem>(target, faults, sync_us);
}

const rocksdb::SliceTransform* NewKeyPrefix(bool family_byte, int parts, const char* name) {
  return new KeyPrefix(family_byte, parts, name);
}

}  // namespace ledger::store
