// A directory under $TMPDIR (or /tmp) that lives as long as the object, so
// every test has its own data directory and leaves nothing behind.
#ifndef TESTS_UTIL_TEMP_DIR_H_
#define TESTS_UTIL_TEMP_DIR_H_

#include <cstdlib>
#include <filesystem>
#include <string>

namespace ledger::testing {

class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/ledger-test-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace ledger::testing

#endif  // TESTS_UTIL_TEMP_DIR_H_
