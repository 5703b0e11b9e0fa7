#include "ledger/keys/key_file.h"

#include <sys/stat.h>

#include <string>

#include "gtest/gtest.h"
#include "ledger/keys/signing_key.h"
#include "tests/util/temp_dir.h"

namespace ledger::keys {
namespace {

TEST(KeyFileTest, CreatedWithMode0600AndNeverOverwritten) {
  testing::TempDir dir;
  std::string path = dir.Sub("k");
  auto created = CreateKeyFile(path, "o.example/x");
  ASSERT_TRUE(created.ok());
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(CreateKeyFile(path, "o.example/x").status().code(), absl::StatusCode::kAlreadyExists);
  auto read = ReadKeyFile(path, "o.example/x");
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->VerifierKey(), created->VerifierKey());
  EXPECT_EQ(ReadKeyFile(path, "o.example/y").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(KeyFileTest, LoadOrCreateReusesTheDataDirectoryKey) {
  testing::TempDir dir;
  auto first = LoadOrCreateKey(dir.path(), "", "o.example/x");
  auto second = LoadOrCreateKey(dir.path(), "", "o.example/x");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->VerifierKey(), second->VerifierKey());
}

TEST(SigningKeyTest, AFileOrTheDataDirectoryKeyUnlessAPkcs11Uri) {
  testing::TempDir dir;
  auto made = OpenLogSigner(dir.path(), "", "o.example/x");
  ASSERT_TRUE(made.ok()) << made.status();
  auto again = OpenLogSigner(dir.path(), dir.Sub("signing.key"), "o.example/x");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(made->VerifierKey(), again->VerifierKey());
  // A token's key needs the origin named: its label is not the log's name.
  auto no_origin = OpenLogSigner(dir.path(), "pkcs11:object=k?module-path=/nonexistent.so", "");
  EXPECT_EQ(no_origin.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(no_origin.status().message()).find("--origin"), std::string::npos) << no_origin.status();
  auto no_module = OpenLogSigner(dir.path(), "pkcs11:object=k?module-path=/nonexistent.so", "o.example/x");
  EXPECT_EQ(no_module.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(std::string(no_module.status().message()).find("module-path: cannot load /nonexistent.so"),
            std::string::npos)
      << no_module.status();
}

}  // namespace
}  // namespace ledger::keys
