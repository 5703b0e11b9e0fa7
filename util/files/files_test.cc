#include "util/files/files.h"

#include <sys/stat.h>

#include <filesystem>

#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace ledger::files {
namespace {

TEST(Files, AFileWrittenAtomicallyReadsBackAndLeavesNoTemporary) {
  testing::TempDir dir;
  std::string path = dir.Sub("record");
  ASSERT_TRUE(WriteFileAtomically(path, "one\n").ok());
  ASSERT_TRUE(WriteFileAtomically(path, std::string("two\0bytes", 9)).ok());
  EXPECT_EQ(*ReadFile(path), std::string("two\0bytes", 9));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(Files, ErrorsNameTheOperationAndThePath) {
  testing::TempDir dir;
  auto missing = ReadFile(dir.Sub("none"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "read " + dir.Sub("none") + ": No such file or directory");
  auto nowhere = WriteFileAtomically(dir.Sub("no-dir/x"), "x");
  EXPECT_EQ(nowhere.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(nowhere.message(), "create " + dir.Sub("no-dir/x.tmp") + ": No such file or directory");
}

TEST(Files, CreateNeverReplaces) {
  testing::TempDir dir;
  std::string path = dir.Sub("key");
  ASSERT_TRUE(CreateFileDurably(path, "first\n", 0600).ok());
  absl::Status again = CreateFileDurably(path, "second\n", 0600);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(*ReadFile(path), "first\n");
}

}  // namespace
}  // namespace ledger::files
