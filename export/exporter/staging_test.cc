#include "export/exporter/staging.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "gtest/gtest.h"
#include "tests/util/temp_dir.h"

namespace ledger::exporter {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(StagingTest, RemoveStaleTakesOnlyWhatExportsLeft) {
  testing::TempDir dir;
  fs::create_directories(dir.Sub("tmp/ledger-export-a1B2c3/inner"));
  std::ofstream(dir.Sub("tmp/ledger-export-a1B2c3/inner/entries.jsonl.gz")) << "x";
  std::ofstream(dir.Sub("tmp/ledger-pack-42-140234.tar.gz")) << "x";
  // Not an export's: other names, a file where a directory is made, a
  // directory where a file is, and links (never followed).
  fs::create_directories(dir.Sub("outside"));
  std::ofstream(dir.Sub("outside/keep")) << "keep";
  fs::create_directories(dir.Sub("tmp/ledger-export-abc"));
  fs::create_directories(dir.Sub("tmp/ledger-export-abcdefg"));
  fs::create_directories(dir.Sub("tmp/ledger-pack-1-2.tar.gz.d"));
  fs::create_directories(dir.Sub("tmp/ledger-pack-3-4.tar.gz"));
  std::ofstream(dir.Sub("tmp/ledger-export-FILE01")) << "x";
  std::ofstream(dir.Sub("tmp/ledger-pack-x-1.tar.gz")) << "x";
  std::ofstream(dir.Sub("tmp/ledger-outcomes-abcdef")) << "x";
  fs::create_directory_symlink(dir.Sub("outside"), dir.Sub("tmp/ledger-export-LiNk01"));
  fs::create_symlink(dir.Sub("outside/keep"), dir.Sub("tmp/ledger-pack-5-6.tar.gz"));
  fs::create_directories(dir.Sub("tmp/ledger-export-InSide"));
  fs::create_directory_symlink(dir.Sub("outside"), dir.Sub("tmp/ledger-export-InSide/out"));

  Staging staging(dir.Sub("tmp"), 1 << 20);
  auto removed = staging.RemoveStale();
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 3);
  EXPECT_EQ(Names(dir.Sub("tmp")),
            (std::vector<std::string>{"ledger-export-FILE01", "ledger-export-LiNk01", "ledger-export-abc",
                                      "ledger-export-abcdefg", "ledger-outcomes-abcdef", "ledger-pack-1-2.tar.gz.d",
                                      "ledger-pack-3-4.tar.gz", "ledger-pack-5-6.tar.gz", "ledger-pack-x-1.tar.gz"}));
  EXPECT_EQ(Names(dir.Sub("outside")), std::vector<std::string>{"keep"});
  EXPECT_EQ(Staging(dir.Sub("missing"), 1).RemoveStale().status().code(), absl::StatusCode::kUnavailable);
}

TEST(StagingTest, LeasesShareTheQuota) {
  testing::TempDir dir;
  Staging staging(dir.path(), 1000);
  {
    Staging::Lease a(&staging), b(&staging);
    EXPECT_TRUE(a.Set(600).ok());
    EXPECT_EQ(b.Set(401).message(),
              "export: the staging quota is used up (--export-staging-bytes 1000): exports in progress would "
              "stage more; retry later");
    EXPECT_EQ(b.Set(401).code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(staging.used(), 600u);
    EXPECT_TRUE(b.Set(400).ok());
    EXPECT_EQ(staging.used(), 1000u);
    EXPECT_TRUE(a.Set(100).ok());  // shrinking is always allowed
    EXPECT_TRUE(b.Set(900).ok());
    EXPECT_EQ(staging.used(), 1000u);
  }
  EXPECT_EQ(staging.used(), 0u);
}

TEST(StagingTest, DiskUsageCountsBlocksWithoutFollowingLinks) {
  testing::TempDir dir;
  fs::create_directories(dir.Sub("a/b"));
  std::ofstream(dir.Sub("a/b/f"), std::ios::binary) << std::string(100000, 'x');
  fs::create_directories(dir.Sub("big"));
  std::ofstream(dir.Sub("big/g"), std::ios::binary) << std::string(1000000, 'x');
  fs::create_directory_symlink(dir.Sub("big"), dir.Sub("a/link"));
  uint64_t bytes = DiskUsage(dir.Sub("a"));
  EXPECT_GE(bytes, 100000u);
  EXPECT_LT(bytes, 1000000u);
  EXPECT_EQ(DiskUsage(dir.Sub("missing")), 0u);
}

}  // namespace
}  // namespace ledger::exporter
