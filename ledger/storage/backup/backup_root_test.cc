#include "ledger/storage/backup/backup_root.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace ledger::backup {
namespace {

namespace fs = std::filesystem;

class BackupRootTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.Sub("root/data"));
    fs::create_directories(dir_.Sub("outside"));
    auto root = BackupRoot::Open(dir_.Sub("root/"), dir_.Sub("root/data"));
    ASSERT_TRUE(root.ok()) << root.status();
    root_ = *std::move(root);
  }
  std::string Refusal(const std::string& dir) {
    auto made = root_->Create(dir);
    return made.ok() ? "" : absl::StrCat(absl::StatusCodeToString(made.status().code()), ": ", made.status().message());
  }
  // Every path under the test's directory, to show that nothing was made.
  std::vector<std::string> Tree() {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path())) out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  testing::TempDir dir_;
  std::unique_ptr<BackupRoot> root_;
};

TEST_F(BackupRootTest, NewDirectoriesRelativeOrAbsoluteUnderTheRoot) {
  auto a = root_->Create("a/b");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->path(), dir_.Sub("root/a/b"));
  std::ofstream(a->handle() + "/f") << "x";
  EXPECT_TRUE(fs::exists(dir_.Sub("root/a/b/f")));
  EXPECT_EQ(fs::status(dir_.Sub("root/a/b")).permissions() & fs::perms::all, fs::perms::owner_all);
  auto b = root_->Create(dir_.Sub("root/./a//c/"));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->path(), dir_.Sub("root/a/c"));
}

TEST_F(BackupRootTest, NoBackupRootIsRefused) {
  EXPECT_EQ(BackupRoot::Open("", dir_.Sub("root/data")).status().message(), "--backup-root: a directory is required");
  EXPECT_EQ(
      BackupRoot::Open(dir_.Sub("root/data"), dir_.Sub("root/data")).status().message(),
      "--backup-root: " + dir_.Sub("root/data") + " is inside the data directory; backups go apart from the store");
  fs::create_directories(dir_.Sub("root/data/tmp/b"));
  EXPECT_EQ(BackupRoot::Open(dir_.Sub("root/data/tmp/b"), dir_.Sub("root/data")).status().message(),
            "--backup-root: " + dir_.Sub("root/data/tmp/b") +
                " is inside the data directory; backups go apart from the store");
  fs::create_directory_symlink(dir_.Sub("root/data/tmp"), dir_.Sub("sneaky"));
  EXPECT_EQ(BackupRoot::Open(dir_.Sub("sneaky"), dir_.Sub("root/data")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BackupRoot::Open(dir_.Sub("missing"), dir_.Sub("root/data")).status().message(),
            "--backup-root: " + dir_.Sub("missing") + ": No such file or directory");
}

TEST_F(BackupRootTest, PathsOutOfTheRootAreRefusedAndMakeNothing) {
  fs::create_directory_symlink(dir_.Sub("outside"), dir_.Sub("root/out"));
  fs::create_directory_symlink(dir_.Sub("root/data"), dir_.Sub("root/data-link"));
  std::ofstream(dir_.Sub("root/file")) << "x";
  auto before = Tree();
  const std::string root = dir_.Sub("root");
  EXPECT_EQ(Refusal(""), "INVALID_ARGUMENT: dir: required");
  EXPECT_EQ(Refusal(std::string("a\0b", 3)), "INVALID_ARGUMENT: dir: must not contain NUL");
  EXPECT_EQ(Refusal(dir_.Sub("outside/b")),
            "INVALID_ARGUMENT: dir: must be inside the backup root " + root + " (a path under it, or relative to it)");
  EXPECT_EQ(Refusal(root + "-sibling/b"),
            "INVALID_ARGUMENT: dir: must be inside the backup root " + root + " (a path under it, or relative to it)");
  EXPECT_EQ(Refusal("new/../../outside/b"), "INVALID_ARGUMENT: dir: must not contain '..'");
  EXPECT_EQ(Refusal(root + "/.."), "INVALID_ARGUMENT: dir: must not contain '..'");
  EXPECT_EQ(Refusal("out/b"),
            "INVALID_ARGUMENT: dir: " + root + "/out is a symbolic link; a backup path must not go through links");
  EXPECT_EQ(Refusal("out"),
            "INVALID_ARGUMENT: dir: " + root + "/out is a symbolic link; a backup path must not go through links");
  EXPECT_EQ(Refusal("data-link/b"), "INVALID_ARGUMENT: dir: " + root +
                                        "/data-link is a symbolic link; a backup path must not go through links");
  EXPECT_EQ(Refusal("data/db/b"),
            "INVALID_ARGUMENT: dir: " + root + "/data is the data directory; backups go apart from the store");
  EXPECT_EQ(Refusal("data"),
            "INVALID_ARGUMENT: dir: " + root + "/data is the data directory; backups go apart from the store");
  EXPECT_EQ(Refusal("file/b"), "INVALID_ARGUMENT: dir: " + root + "/file is not a directory");
  EXPECT_EQ(Refusal("file"), "INVALID_ARGUMENT: dir: " + root + "/file is not a directory");
  EXPECT_EQ(Refusal(root), "ALREADY_EXISTS: dir: " + root + " exists; a backup goes to a new directory");
  EXPECT_EQ(Tree(), before);
  ASSERT_TRUE(root_->Create("b").ok());
  EXPECT_EQ(Refusal("b"), "ALREADY_EXISTS: dir: " + root + "/b exists; a backup goes to a new directory");
  EXPECT_TRUE(fs::is_empty(dir_.Sub("outside")));
}

TEST_F(BackupRootTest, ARootHoldingTheDataDirectoryKeepsBackupsOutOfIt) {
  auto other = BackupRoot::Open(dir_.path(), dir_.Sub("root/data"));
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*other)->Create("root/data/x").status().message(),
            "dir: " + dir_.Sub("root/data") + " is the data directory; backups go apart from the store");
  EXPECT_FALSE(fs::exists(dir_.Sub("root/data/x")));
}

}  // namespace
}  // namespace ledger::backup
