// Keys in a real SoftHSM2 token (Debian's softhsm2), made for each test in
// a directory of its own.
#include "ledger/keys/pkcs11.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/note/note.h"
#include "tests/util/temp_dir.h"

#define CRYPTOKI_COMPAT 1
#include <p11-kit/pkcs11.h>

// SoftHSM2 2.6.1 leaks a few OpenSSL objects of each EdDSA key it makes or
// uses; they are its own, not the ledger's. LeakSanitizer reads these two
// hooks: the suppression, and the slow unwinder that walks allocations'
// stacks through libraries built without frame pointers, up to SoftHSM's.
extern "C" const char* __lsan_default_suppressions() { return "leak:libsofthsm2.so\n"; }
extern "C" const char* __asan_default_options() { return "fast_unwind_on_malloc=0"; }

namespace ledger::keys {
namespace {

constexpr char kModule[] = "/usr/lib/softhsm/libsofthsm2.so";

class Pkcs11Test : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::access(kModule, R_OK), 0)
        << kModule << " is missing: install Debian's softhsm2 (scripts/setup.sh test)";
    std::filesystem::create_directories(dir_.Sub("tokens"));
    std::ofstream(dir_.Sub("softhsm2.conf"))
        << "directories.tokendir = " << dir_.Sub("tokens") << "\nobjectstore.backend = file\nlog.level = ERROR\n";
    ::setenv("SOFTHSM2_CONF", dir_.Sub("softhsm2.conf").c_str(), 1);
    std::string init = absl::StrCat("softhsm2-util --init-token --free --label ledger --pin 1234 --so-pin 5678", " > ",
                                    dir_.Sub("init.log"), " 2>&1");
    ASSERT_EQ(std::system(init.c_str()), 0) << "softhsm2-util --init-token failed";
    std::ofstream(dir_.Sub("pin")) << "1234\n";
    std::ofstream(dir_.Sub("wrong-pin")) << "4321\n";
  }

  std::string Uri(const std::string& object, const std::string& pin_file = "pin", const std::string& token = "ledger") {
    return absl::StrCat("pkcs11:token=", token, ";object=", object, "?module-path=", kModule,
                        "&pin-source=file:", dir_.Sub(pin_file));
  }

  std::shared_ptr<const Pkcs11Key> Generate(const std::string& object) {
    auto uri = ParsePkcs11Uri(Uri(object));
    EXPECT_TRUE(uri.ok()) << uri.status();
    auto key = Pkcs11Key::Generate(*uri);
    EXPECT_TRUE(key.ok()) << key.status();
    return key.ok() ? *key : nullptr;
  }

  testing::TempDir dir_;
};

// The module as the keys loaded it, reached again by the test (dlopen
// gives the same library, already initialized): a logged-in session on
// the token named "ledger".
class RawSession {
 public:
  RawSession() {
    handle_ = ::dlopen(kModule, RTLD_NOW | RTLD_LOCAL);
    auto get = reinterpret_cast<CK_C_GetFunctionList>(::dlsym(handle_, "C_GetFunctionList"));
    get(&f_);
    CK_SLOT_ID slots[8];
    CK_ULONG n = 8;
    f_->C_GetSlotList(CK_TRUE, slots, &n);
    for (CK_ULONG i = 0; i < n; ++i) {
      CK_TOKEN_INFO ti;
      f_->C_GetTokenInfo(slots[i], &ti);
      if (std::string(reinterpret_cast<char*>(ti.label), 6) == "ledger") slot_ = slots[i];
    }
    f_->C_OpenSession(slot_, CKF_SERIAL_SESSION | CKF_RW_SESSION, nullptr, nullptr, &session_);
    f_->C_Login(session_, CKU_USER, reinterpret_cast<CK_UTF8CHAR_PTR>(const_cast<char*>("1234")), 4);
  }
  ~RawSession() {
    f_->C_CloseSession(session_);
    ::dlclose(handle_);
  }

  CK_OBJECT_HANDLE Find(CK_OBJECT_CLASS cls, const std::string& label) {
    CK_ATTRIBUTE t[] = {{CKA_CLASS, &cls, sizeof cls}, {CKA_LABEL, const_cast<char*>(label.data()), label.size()}};
    f_->C_FindObjectsInit(session_, t, 2);
    CK_OBJECT_HANDLE h = CK_INVALID_HANDLE;
    CK_ULONG n = 0;
    f_->C_FindObjects(session_, &h, 1, &n);
    f_->C_FindObjectsFinal(session_);
    return n == 1 ? h : CK_INVALID_HANDLE;
  }

  CK_FUNCTION_LIST_PTR f() { return f_; }
  CK_SESSION_HANDLE session() { return session_; }
  CK_SLOT_ID slot() { return slot_; }

 private:
  void* handle_ = nullptr;
  CK_FUNCTION_LIST_PTR f_ = nullptr;
  CK_SLOT_ID slot_ = 0;
  CK_SESSION_HANDLE session_ = CK_INVALID_HANDLE;
};

TEST_F(Pkcs11Test, ATokensKeySignsNotesAndCosignaturesThatVerify) {
  auto key = Generate("ledger-key");
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(key->info().token_label, "ledger");
  EXPECT_EQ(key->seed(), nullptr);
  auto signer = note::Signer::FromKey("ledger.example/log", key);
  ASSERT_TRUE(signer.ok()) << signer.status();
  auto signed_note = signer->Sign(note::FormatCheckpoint({"ledger.example/log", 3, hash::Sha256("r")}));
  ASSERT_TRUE(signed_note.ok()) << signed_note.status();
  auto verifier = note::Verifier::Parse(signer->VerifierKey());
  ASSERT_TRUE(verifier.ok());
  EXPECT_TRUE(verifier->Open(*signed_note).ok());
  // No key file can be written for it.
  EXPECT_EQ(signer->KeyFileText().status().code(), absl::StatusCode::kFailedPrecondition);

  auto cosigner = cosign::Cosigner::FromKey("witness.example", key);
  ASSERT_TRUE(cosigner.ok());
  auto line = cosigner->Cosign(note::FormatCheckpoint({"ledger.example/log", 3, hash::Sha256("r")}), 1700000000);
  ASSERT_TRUE(line.ok()) << line.status();
  auto cv = cosign::CosignatureVerifier::Parse(cosigner->VerifierKey());
  ASSERT_TRUE(cv.ok());
  EXPECT_EQ(*cv->Verify(*signed_note + *line), 1700000000u);

  // Opened again by its URI, it is the same key.
  auto reopened = OpenPkcs11Key(Uri("ledger-key"));
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->public_key(), key->public_key());
}

TEST_F(Pkcs11Test, TheTokenNeverShowsTheKey) {
  auto key = Generate("ledger-key");
  ASSERT_NE(key, nullptr);
  EXPECT_FALSE(key->info().extractable);
  EXPECT_TRUE(key->info().sensitive);
  RawSession raw;
  CK_OBJECT_HANDLE priv = raw.Find(CKO_PRIVATE_KEY, "ledger-key");
  ASSERT_NE(priv, CK_INVALID_HANDLE);
  std::vector<unsigned char> value(256);
  CK_ATTRIBUTE a{CKA_VALUE, value.data(), value.size()};
  EXPECT_EQ(raw.f()->C_GetAttributeValue(raw.session(), priv, &a, 1), CKR_ATTRIBUTE_SENSITIVE);
  CK_BBOOL extractable = CK_TRUE;
  CK_ATTRIBUTE e{CKA_EXTRACTABLE, &extractable, sizeof extractable};
  ASSERT_EQ(raw.f()->C_GetAttributeValue(raw.session(), priv, &e, 1), CKR_OK);
  EXPECT_EQ(extractable, CK_FALSE);
}

TEST_F(Pkcs11Test, AKeyIsNeverReplaced) {
  auto key = Generate("ledger-key");
  ASSERT_NE(key, nullptr);
  auto again = Pkcs11Key::Generate(*ParsePkcs11Uri(Uri("ledger-key")));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  auto still = OpenPkcs11Key(Uri("ledger-key"));
  ASSERT_TRUE(still.ok()) << still.status();
  EXPECT_EQ((*still)->public_key(), key->public_key());
}

TEST_F(Pkcs11Test, RefusalsSayWhatDidNotMatch) {
  ASSERT_NE(Generate("ledger-key"), nullptr);
  auto wrong_pin = OpenPkcs11Key(Uri("ledger-key", "wrong-pin"));
  EXPECT_EQ(wrong_pin.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(std::string(wrong_pin.status().message()).find("refused the PIN in " + dir_.Sub("wrong-pin")),
            std::string::npos)
      << wrong_pin.status();
  auto no_pin_file = OpenPkcs11Key(Uri("ledger-key", "missing-pin"));
  EXPECT_EQ(no_pin_file.status().code(), absl::StatusCode::kNotFound) << no_pin_file.status();
  EXPECT_NE(std::string(no_pin_file.status().message()).find("pin-source: cannot read"), std::string::npos);
  auto no_token = OpenPkcs11Key(Uri("ledger-key", "pin", "other"));
  EXPECT_EQ(no_token.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(no_token.status().message()).find("no token of the"), std::string::npos) << no_token.status();
  auto no_key = OpenPkcs11Key(Uri("other-key"));
  EXPECT_EQ(no_key.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(no_key.status().message()).find("holds no private key matching"), std::string::npos)
      << no_key.status();
  auto no_pin = OpenPkcs11Key(absl::StrCat("pkcs11:token=ledger;object=ledger-key?module-path=", kModule));
  EXPECT_EQ(no_pin.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(no_pin.status().message()).find("needs a PIN"), std::string::npos) << no_pin.status();
}

TEST_F(Pkcs11Test, AKeyThatIsNotEd25519IsRefused) {
  ASSERT_NE(Generate("ledger-key"), nullptr);  // loads the module for the raw session
  auto holder = OpenPkcs11Key(Uri("ledger-key"));
  ASSERT_TRUE(holder.ok());
  RawSession raw;
  // A P-256 key pair labelled "p256".
  static const unsigned char kP256[] = {0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07};
  CK_MECHANISM mech{CKM_EC_KEY_PAIR_GEN, nullptr, 0};
  CK_BBOOL yes = CK_TRUE;
  std::string label = "p256";
  CK_ATTRIBUTE pub[] = {{CKA_TOKEN, &yes, sizeof yes},
                        {CKA_EC_PARAMS, const_cast<unsigned char*>(kP256), sizeof kP256},
                        {CKA_LABEL, label.data(), label.size()}};
  CK_ATTRIBUTE priv[] = {
      {CKA_TOKEN, &yes, sizeof yes}, {CKA_SIGN, &yes, sizeof yes}, {CKA_LABEL, label.data(), label.size()}};
  CK_OBJECT_HANDLE ph, kh;
  ASSERT_EQ(raw.f()->C_GenerateKeyPair(raw.session(), &mech, pub, 3, priv, 3, &ph, &kh), CKR_OK);
  auto p256 = OpenPkcs11Key(Uri("p256"));
  EXPECT_EQ(p256.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(p256.status().message()).find("is not an Ed25519 key"), std::string::npos) << p256.status();
}

TEST_F(Pkcs11Test, ALostSessionIsOpenedAgainForTheSameKey) {
  auto key = Generate("ledger-key");
  ASSERT_NE(key, nullptr);
  auto signer = note::Signer::FromKey("ledger.example/log", key);
  ASSERT_TRUE(signer.ok());
  {
    RawSession raw;
    // Every session on the token closed, as a restarted HSM would.
    ASSERT_EQ(raw.f()->C_CloseAllSessions(raw.slot()), CKR_OK);
  }
  auto signed_note = signer->Sign(note::FormatCheckpoint({"ledger.example/log", 1, hash::Sha256("r")}));
  ASSERT_TRUE(signed_note.ok()) << signed_note.status();
  EXPECT_TRUE(note::Verifier::Parse(signer->VerifierKey())->Open(*signed_note).ok());
}

TEST_F(Pkcs11Test, ManyThreadsSignAtOnce) {
  auto key = Generate("ledger-key");
  ASSERT_NE(key, nullptr);
  auto signer = note::Signer::FromKey("ledger.example/log", key);
  ASSERT_TRUE(signer.ok());
  auto verifier = note::Verifier::Parse(signer->VerifierKey());
  std::atomic<int> good{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto n = signer->Sign(note::FormatCheckpoint({"ledger.example/log", uint64_t(t * 100 + i), hash::Sha256("r")}));
        if (n.ok() && verifier->Open(*n).ok()) ++good;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 200);
}

}  // namespace
}  // namespace ledger::keys
