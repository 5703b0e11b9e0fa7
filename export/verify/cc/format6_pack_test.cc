// Packs of format 6 (CONTRACT section 7, "Shared inclusion proofs"): a
// multiproof that does not fit its entries, and the page of the newest
// format rebuilt whatever is asked.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "export/exporter/exporter.h"
#include "export/pack/pack.h"
#include "export/verify/cc/pack_test_fixture.h"
#include "export/verify/cc/verify.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ledger {
namespace {

// Format 6: the fourth entry left out and the multiproof left as it was:
// the walk runs short; a hash more than the walk uses, or one swapped with
// its neighbour, is refused too.
TEST_F(PackTest, AMultiproofThatDoesNotFitItsEntriesIsRefused) {
  std::string p = Export({"", "", 3, 9}, "seqs.tar.gz");
  std::string dir = dir_.Sub("m");
  std::filesystem::create_directories(dir);
  auto files = *pack::ExtractArchive(p, dir, pack::Limits());
  std::string nodes = Read(files[pack::kMultiproof]);
  ASSERT_GE(nodes.size(), 2 * 65u) << "a seq range inside the tree has hashes on both sides";
  auto edited = [&](const std::function<void(std::string & text)>& edit) {
    return Verify(Tamper(
        p,
        [&](const std::string& d) {
          std::string text = Read(d + "/multiproof.txt");
          edit(text);
          Write(d + "/multiproof.txt", text);
        },
        /*resign=*/true));
  };
  ExpectFailure(edited([](std::string& t) { t.resize(t.size() - 65); }), pack::kMultiproof, -1,
                "the multiproof ends after ");
  ExpectFailure(edited([](std::string& t) { t += t.substr(0, 65); }), pack::kMultiproof, -1, "the multiproof holds ");
  ExpectFailure(edited([](std::string& t) { std::swap_ranges(t.begin(), t.begin() + 64, t.begin() + 65); }),
                pack::kMultiproof, -1, "the entries and the multiproof lead to root ");
  ExpectFailure(edited([](std::string& t) { t[70] = t[70] == 'A' ? 'B' : 'A'; }), pack::kMultiproof, -1,
                "line 2: want 64 lower-case hex digits");
  ExpectFailure(edited([](std::string& t) { t.pop_back(); }), pack::kMultiproof, -1,
                absl::StrCat("line ", nodes.size() / 65, ": no newline at its end"));
}

// --report-by-digest checks an older format's page by its digest alone
// (the words of a page written by an earlier version may differ); the
// newest format's page is rebuilt whatever is asked.
TEST_F(PackTest, ReportByDigestIsForOlderFormatsOnly) {
  auto forged = [&](int format) {
    std::string p = Export({"team-a", "run-1"}, absl::StrCat("r", format, ".tar.gz"), format);
    return Tamper(
        p,
        [](const std::string& d) {
          std::string page = Read(d + "/" + pack::kReport);
          page.replace(page.find("pending</td>"), 7, "succeeded");
          Write(d + "/" + pack::kReport, page);
        },
        /*resign=*/true);
  };
  verify::Options o;
  o.vkey = log_->verifier_key();
  o.report_by_digest = true;
  auto five = verify::VerifyPack(forged(5), o);
  ASSERT_TRUE(five.ok());
  EXPECT_TRUE(five->ok) << five->Summary();
  EXPECT_TRUE(five->report_by_digest);
  EXPECT_THAT(five->Summary(), ::testing::HasSubstr("report.html: checked by its digest only (--report-by-digest)"));
  auto six = verify::VerifyPack(forged(6), o);
  ASSERT_TRUE(six.ok());
  ExpectFailure(*six, pack::kReport, -1, "differs from the report rebuilt");
  verify::Result strict = Verify(forged(5));
  ExpectFailure(strict, pack::kReport, -1, "differs from the report rebuilt");
  EXPECT_THAT(strict.message, ::testing::HasSubstr("--report-by-digest checks the page by its digest only"));
}

}  // namespace
}  // namespace ledger
