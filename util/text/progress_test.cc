#include "util/text/progress.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ledger::text {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(Progress, Thousands) {
  EXPECT_EQ(Thousands(0), "0");
  EXPECT_EQ(Thousands(999), "999");
  EXPECT_EQ(Thousands(1000), "1,000");
  EXPECT_EQ(Thousands(1234567), "1,234,567");
  EXPECT_EQ(Thousands(100000), "100,000");
}

// An empty piece (a view with no data at all, as a file's end gives) has
// none; under UBSan, memchr given its null pointer is refused.
TEST(Progress, NewlinesOfAPiece) {
  EXPECT_EQ(Newlines(std::string_view()), 0u);
  EXPECT_EQ(Newlines(""), 0u);
  EXPECT_EQ(Newlines("no end"), 0u);
  EXPECT_EQ(Newlines("a\nb\n\nc"), 3u);
  EXPECT_EQ(Newlines(std::string(1000, '\n')), 1000u);
}

TEST(Progress, DurationByItsSize) {
  EXPECT_EQ(Duration(0), "0 s");
  EXPECT_EQ(Duration(59), "59 s");
  EXPECT_EQ(Duration(60), "1 min 0 s");
  EXPECT_EQ(Duration(125), "2 min 5 s");
  EXPECT_EQ(Duration(3599), "59 min 59 s");
  EXPECT_EQ(Duration(3600), "1 h 0 min");
  EXPECT_EQ(Duration(3 * 3600 + 7 * 60 + 9), "3 h 7 min");
}

TEST(Progress, TheLineWithATotal) {
  EXPECT_EQ(ProgressText("verifying", "entries", 120000, 1000000, 120000.0 / 135000),
            "verifying: 120,000 of 1,000,000 entries (12%), 135,000/s, 7 s left");
  // Time left rounds up: 880,000 at 135,000/s is 6.5 s.
  EXPECT_EQ(ProgressText("exporting", "entries", 5, 10, 1.0), "exporting: 5 of 10 entries (50%), 5/s, 1 s left");
  EXPECT_EQ(ProgressText("verifying", "entries", 0, 1000000, 0.3), "verifying: 0 of 1,000,000 entries (0%)");
  EXPECT_EQ(ProgressText("auditing", "entries", 10, 10, 2.0), "auditing: 10 of 10 entries (100%), 5/s, 0 s left");
  EXPECT_EQ(ProgressText("verifying", "entries", 0, 0, 1.0), "verifying: 0 of 0 entries (100%)");
  EXPECT_EQ(ProgressText("verifying", "entries", 1, 100000, 0.5),
            "verifying: 1 of 100,000 entries (0%), 2/s, 13 h 53 min left");
}

TEST(Progress, TheLineWithTheWorksOwnMeasure) {
  // 12% of the pack's bytes read after 0.5 s: 3.67 s left, rounded up.
  EXPECT_EQ(ProgressText("verifying", "entries", 60000, std::nullopt, 0.5, 0.12),
            "verifying: 60,000 entries (12%), 120,000/s, 4 s left");
  EXPECT_EQ(ProgressText("verifying", "entries", 0, std::nullopt, 0.5, 0.12), "verifying: 0 entries (12%)");
  EXPECT_EQ(ProgressText("verifying", "entries", 10, std::nullopt, 1.0, 0.0), "verifying: 10 entries (0%), 10/s");
  // A total wins over the measure.
  EXPECT_EQ(ProgressText("verifying", "entries", 5, 10, 1.0, 0.9), "verifying: 5 of 10 entries (50%), 5/s, 1 s left");
}

TEST(Progress, TheLineWithoutATotal) {
  EXPECT_EQ(ProgressText("exporting", "entries", 120000, std::nullopt, 120000.0 / 135000),
            "exporting: 120,000 entries, 135,000/s");
  EXPECT_EQ(ProgressText("exporting", "entries", 0, std::nullopt, 1.0), "exporting: 0 entries");
}

// Everything a pty's master side has to read, without waiting.
std::string Drain(int master) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(master, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

TEST(ProgressMeter, OnATerminalDrawsInPlaceAndErasesTheLineAtTheEnd) {
  ::setenv("LEDGER_PROGRESS_INTERVAL_MS", "5", 1);
  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  int terminal = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  ASSERT_GE(terminal, 0);
  {
    ProgressMeter meter("verifying", "entries", true, terminal);
    EXPECT_TRUE(meter.shown());
    meter.SetTotal(10);
    meter.Add(3);
    ::usleep(100 * 1000);
    meter.Finish();
    meter.Finish();  // once is enough
  }
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  std::string out = Drain(master);
  EXPECT_THAT(out, StartsWith("\rverifying: 3 of 10 entries (30%), "));
  EXPECT_THAT(out, HasSubstr(" left\x1b[K"));
  EXPECT_THAT(out, EndsWith("\x1b[K\r\x1b[K"));
  ::close(terminal);
  ::close(master);
}

TEST(ProgressMeter, ElsewhereOrTurnedOffWritesNothing) {
  ::setenv("LEDGER_PROGRESS_INTERVAL_MS", "5", 1);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    ProgressMeter piped("verifying", "entries", true, fds[1]);
    EXPECT_FALSE(piped.shown());
    piped.SetTotal(10);
    piped.Add(5);
    ::usleep(30 * 1000);
  }
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  EXPECT_EQ(Drain(fds[0]), "");
  ::close(fds[0]);
  ::close(fds[1]);

  int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  int terminal = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
  {
    ProgressMeter off("verifying", "entries", false, terminal);
    EXPECT_FALSE(off.shown());
    off.Add(5);
    ::usleep(30 * 1000);
  }
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  EXPECT_EQ(Drain(master), "");
  ::close(terminal);
  ::close(master);
}

}  // namespace
}  // namespace ledger::text
