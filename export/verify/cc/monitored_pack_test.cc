// Packs whose checkpoint-time note carries monitors' map cosignatures
// (CONTRACT section 5c), checked under a policy that names monitors.
#include <string>

#include "absl/strings/str_cat.h"
#include "export/exporter/exporter.h"
#include "export/pack/pack.h"
#include "export/verify/cc/pack_test_fixture.h"
#include "export/verify/cc/verify.h"
#include "gtest/gtest.h"
#include "ledger/format/cosign/mapcosign.h"
#include "ledger/format/tlogpolicy/tlogpolicy.h"

namespace ledger {
namespace {

using cosign::MapCosigner;

class MonitoredPackTest : public PackTest {
 protected:
  // A run pack whose checkpoint-time file holds the lines `lines` makes of
  // its note's text (the exporter's hook ledgerd fills from its monitors).
  std::string ExportMonitored(const std::string& name, const std::function<std::string(const std::string&)>& lines) {
    std::string path = dir_.Sub(name);
    auto map_cosign = [&](const std::string& note) -> absl::StatusOr<std::string> {
      return note + lines(note.substr(0, note.find("\n\n") + 1));
    };
    absl::Status s = exporter::ExportPack(*log_, {"team-a", "run-1"}, path, {.map_cosign = map_cosign});
    EXPECT_TRUE(s.ok()) << s;
    return path;
  }
  verify::Result Under(const std::string& pack, const std::string& monitor_lines) {
    verify::Options o;
    o.vkey = log_->verifier_key();
    auto policy = tlogpolicy::Policy::Parse(absl::StrCat("log ", log_->verifier_key(), "\nmonitor m1 ",
                                                         m1_.VerifierKey(), "\nmonitor m2 ", m2_.VerifierKey(), "\n",
                                                         monitor_lines, "quorum none\n"));
    EXPECT_TRUE(policy.ok()) << policy.status();
    o.policy = *policy;
    auto r = verify::VerifyPack(pack, o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : verify::Result{};
  }
  static constexpr uint64_t kT = 4102444800;  // 2100-01-01, after any note this test signs
  MapCosigner m1_ = *MapCosigner::FromKey("m1.example/monitor", *note::SeedKey(std::string(32, '\x21')));
  MapCosigner m2_ = *MapCosigner::FromKey("m2.example/monitor", *note::SeedKey(std::string(32, '\x22')));
};

TEST_F(MonitoredPackTest, APolicyNamingMonitorsNeedsTheirMapCosignaturesOnTheTimeNote) {
  std::string both = ExportMonitored(
      "both.tar.gz", [&](const std::string& text) { return *m1_.Cosign(text, kT) + *m2_.Cosign(text, kT + 1); });
  // Without a policy, the lines change nothing.
  EXPECT_TRUE(Verify(both).ok) << Verify(both).message;
  verify::Result r = Under(both, "");
  ASSERT_TRUE(r.ok) << r.message;
  EXPECT_NE(r.Summary().find("\nmonitored: monitor-quorum 2 of 2 met; map cosigned by m1 at 2100-01-01T00:00:00Z "
                             "(4102444800), m2 at 2100-01-01T00:00:01Z (4102444801)\n"),
            std::string::npos)
      << r.Summary();
  EXPECT_EQ(r.Json()["monitored"]["cosigned"].size(), 2u);

  std::string only_m1 = ExportMonitored("m1.tar.gz", [&](const std::string& text) { return *m1_.Cosign(text, kT); });
  ExpectFailure(Under(only_m1, ""), pack::kCheckpointTime, -1,
                "the policy's monitor-quorum 2 of 2 is not met: no map cosignature from m2; cosigned by m1");
  EXPECT_TRUE(Under(only_m1, "monitor-quorum any\n").ok);

  // A note the ledger signs alone, as a key-holding operator's forged
  // maps would be: no monitor cosigned it.
  std::string alone = ExportMonitored("alone.tar.gz", [](const std::string&) { return std::string(); });
  ExpectFailure(Under(alone, "monitor-quorum 1\n"), pack::kCheckpointTime, -1,
                "the policy's monitor-quorum 1 of 2 is not met: no map cosignature from m1, m2");
}

TEST_F(MonitoredPackTest, AForgedOrDoubledMapCosignatureIsRefusedNamingTheMonitor) {
  // m2's line made over another note's text (its runs root changed).
  std::string forged = ExportMonitored("forged.tar.gz", [&](const std::string& text) {
    std::string other = text;
    other.replace(other.find("\nruns ") + 6, 1, other[other.find("\nruns ") + 6] == 'A' ? "B" : "A");
    return *m1_.Cosign(text, kT) + *m2_.Cosign(other, kT);
  });
  ExpectFailure(Under(forged, "monitor-quorum any\n"), pack::kCheckpointTime, -1,
                "monitor m2: map cosignature: signature by m2.example/monitor+");
  std::string doubled = ExportMonitored(
      "doubled.tar.gz", [&](const std::string& text) { return *m1_.Cosign(text, kT) + *m1_.Cosign(text, kT + 5); });
  ExpectFailure(Under(doubled, "monitor-quorum any\n"), pack::kCheckpointTime, -1,
                "monitor m1: map cosignature: two lines by m1.example/monitor+");
}

}  // namespace
}  // namespace ledger
