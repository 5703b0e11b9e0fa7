#include "ledger/keys/pkcs11_uri.h"

#include <string>

#include "gtest/gtest.h"

namespace ledger::keys {
namespace {

TEST(Pkcs11UriTest, TakesTheTokenTheKeyTheModuleAndThePinFile) {
  auto uri = ParsePkcs11Uri(
      "pkcs11:token=Ledger%20HSM;manufacturer=SoftHSM%20project;serial=abc;slot-id=7;object=ledger-key;id=%01%ff;"
      "type=private?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/secrets/pin");
  ASSERT_TRUE(uri.ok()) << uri.status();
  EXPECT_EQ(uri->token, "Ledger HSM");
  EXPECT_EQ(uri->manufacturer, "SoftHSM project");
  EXPECT_EQ(uri->serial, "abc");
  EXPECT_EQ(uri->slot_id, 7u);
  EXPECT_EQ(uri->object, "ledger-key");
  EXPECT_EQ(uri->id, std::string("\x01\xff", 2));
  EXPECT_EQ(uri->module_path, "/usr/lib/softhsm/libsofthsm2.so");
  EXPECT_EQ(uri->pin_file, "/run/secrets/pin");
  EXPECT_EQ(Describe(*uri),
            "pkcs11:token=Ledger%20HSM;manufacturer=SoftHSM%20project;serial=abc;slot-id=7;object=ledger-key;"
            "id=%01%FF?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=file:/run/secrets/pin");
  // A described URI reads back as the same.
  auto again = ParsePkcs11Uri(Describe(*uri));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Describe(*again), Describe(*uri));
}

TEST(Pkcs11UriTest, APlainPathIsAPinFileToo) {
  auto uri = ParsePkcs11Uri("pkcs11:object=k?module-path=/m.so&pin-source=/etc/ledger/pin");
  ASSERT_TRUE(uri.ok()) << uri.status();
  EXPECT_EQ(uri->pin_file, "/etc/ledger/pin");
  EXPECT_FALSE(uri->token.has_value());
}

TEST(Pkcs11UriTest, RefusalsNameTheAttributeAndTheRule) {
  struct Case {
    const char* uri;
    const char* says;
  } cases[] = {
      {"file:/k", "must start with 'pkcs11:'"},
      {"pkcs11:object=k?module-path=/m.so&pin-value=1234", "pin-value: a PIN on a command line"},
      {"pkcs11:object=k?module-name=softhsm2", "module-name: give the PKCS#11 library's path"},
      {"pkcs11:object=k", "module-path: required"},
      {"pkcs11:token=t?module-path=/m.so", "object or id: required"},
      {"pkcs11:object=k;object=j?module-path=/m.so", "object: given twice"},
      {"pkcs11:object=k%2?module-path=/m.so", "object: '%' must be followed by two hex digits"},
      {"pkcs11:object=k;slot-id=x1?module-path=/m.so", "slot-id: 'x1' is not a decimal number"},
      {"pkcs11:object=k;type=public?module-path=/m.so", "type: 'public' cannot sign"},
      {"pkcs11:object=k;x-vendor=1?module-path=/m.so", "x-vendor: not an attribute this ledger reads"},
      {"pkcs11:object=k?module-path=/m.so&pin-source=relative/pin", "pin-source: 'relative/pin' must be an absolute"},
      {"pkcs11:object?module-path=/m.so", "'object' in the path is not name=value"},
  };
  for (const Case& c : cases) {
    auto uri = ParsePkcs11Uri(c.uri);
    ASSERT_FALSE(uri.ok()) << c.uri;
    EXPECT_EQ(uri.status().code(), absl::StatusCode::kInvalidArgument) << c.uri;
    EXPECT_NE(std::string(uri.status().message()).find(c.says), std::string::npos)
        << c.uri << ": " << uri.status().message();
  }
}

TEST(Pkcs11UriTest, TheSchemeMakesAUri) {
  EXPECT_TRUE(IsPkcs11Uri("pkcs11:object=k"));
  EXPECT_FALSE(IsPkcs11Uri("/var/lib/ledger/signing.key"));
  EXPECT_TRUE(IsPkcs11Uri("PKCS11:object=k"));  // RFC 3986: schemes are case-insensitive
  EXPECT_FALSE(IsPkcs11Uri("pkcs11"));
}

}  // namespace
}  // namespace ledger::keys
